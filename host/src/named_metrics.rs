//! promptfoo's named metrics per prompt and target: each assertion that
//! declares a `metric` adds its score × weight to that metric's total over
//! the prompt's rows, and `derivedMetrics` are computed from the totals,
//! the row count (`__count`) and the derived metrics before them — the
//! numbers promptfoo shows per prompt column. Read back from
//! `results.jsonl`, the run's source of truth, so a resumed or merged run
//! counts every row.

use std::collections::HashMap;
use std::io::BufRead as _;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::suite::Suite;

/// The metrics of one prompt on one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMetrics {
    /// The target.
    pub target: String,
    /// The prompt's label, when the suite has prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Rows of this prompt and target.
    pub count: usize,
    /// Each named metric's total, in the order the suite declares them.
    pub named: Vec<(String, f64)>,
    /// Each derived metric; `None` when a metric it reads has no score (no
    /// row of this prompt scored it), where promptfoo shows 0.
    pub derived: Vec<(String, Option<f64>)>,
}

/// A prompt and target: (target, prompt label).
type Key = (String, Option<String>);

/// The metrics of the rows in `results`, when the suite declares any.
pub fn compute(suite: &Suite, results: &Path) -> Vec<PromptMetrics> {
    if suite.named_metrics.is_empty() && suite.derived_metrics.is_empty() {
        return Vec::new();
    }
    let Ok(file) = std::fs::File::open(results) else {
        return Vec::new();
    };
    // (target, prompt) → (count, totals), in first-seen order.
    let mut order: Vec<(String, Option<String>)> = Vec::new();
    let mut groups: HashMap<Key, (usize, HashMap<String, f64>)> = HashMap::new();
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        let Ok(row) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let target = row["target"].as_str().unwrap_or_default().to_owned();
        let prompt = row["prompt"]["label"].as_str().map(str::to_owned);
        let key = (target, prompt);
        let group = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            (0, HashMap::new())
        });
        group.0 += 1;
        add_scores(suite, &row["scores"], &mut group.1);
    }
    order
        .into_iter()
        .map(|key| {
            let (count, totals) = groups.remove(&key).unwrap_or_default();
            let named: Vec<(String, f64)> = suite
                .named_metrics
                .iter()
                .filter_map(|m| totals.get(m).map(|v| (m.clone(), *v)))
                .collect();
            let mut vars: HashMap<String, f64> = named.iter().cloned().collect();
            vars.insert("__count".into(), count as f64);
            let mut derived = Vec::new();
            for d in &suite.derived_metrics {
                let v = d.expr.eval(&vars);
                if let Some(x) = v {
                    vars.insert(d.name.clone(), x);
                }
                derived.push((d.name.clone(), v));
            }
            PromptMetrics {
                target: key.0,
                prompt: key.1,
                count,
                named,
                derived,
            }
        })
        .collect()
}

/// Each scored assertion's score × weight to its metric's total — the
/// members of an `assert-set` (or `composite`) too, as promptfoo's
/// `AssertionsResult` adds a set's members' named scores to the test's.
fn add_scores(suite: &Suite, scores: &Value, totals: &mut HashMap<String, f64>) {
    for s in scores.as_array().into_iter().flatten() {
        add_scores(suite, &s["scores"], totals);
        let Some(name) = s["name"].as_str() else {
            continue;
        };
        if !suite.named_metrics.iter().any(|m| m == name) {
            continue;
        }
        let score = s["score"].as_f64().unwrap_or(0.0);
        let weight = s["weight"].as_f64().unwrap_or(1.0);
        *totals.entry(name.to_owned()).or_insert(0.0) += score * weight;
    }
}

/// A number as promptfoo's table shows it (up to 4 decimals).
pub fn show(x: f64) -> String {
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_owned() }
}
