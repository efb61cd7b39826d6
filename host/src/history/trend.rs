//! `evalhost trend`: a suite's last runs, each test's score series, the
//! tests that drift or flap, and the oldest and newest run compared with
//! the same statistics as `compare`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::Run;
use super::compare::{self, Comparison, Key};
use super::stats::{self, Options, Series};

/// One run in a trend.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The run.
    pub id: String,
    /// When it started.
    pub started_at: String,
    /// passed / total.
    pub pass_rate: Option<f64>,
    /// Mean score.
    pub mean_score: Option<f64>,
    /// Cost.
    pub cost_usd: Option<f64>,
    /// Why the run is not a whole run of the suite (empty when it is).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partial: Vec<String>,
}

/// A suite over time.
#[derive(Debug, Clone, Serialize)]
pub struct Trend {
    /// The suite.
    pub suite: String,
    /// Its runs, oldest first.
    pub runs: Vec<Point>,
    /// Each test's series.
    pub tests: Vec<Series>,
    /// The oldest run against the newest, when there are two.
    pub first_to_last: Option<Comparison>,
}

/// The trend of `runs` (oldest first).
pub fn trend(suite: &str, runs: &[Run], options: &Options) -> Trend {
    let mut keys: Vec<Key> = Vec::new();
    let mut per_run: Vec<BTreeMap<Key, (f64, bool)>> = Vec::new();
    for run in runs {
        let mut m = BTreeMap::new();
        for (k, side) in compare::sides(run, false) {
            if !keys.contains(&k) {
                keys.push(k.clone());
            }
            let n = side.scores.len().max(1) as f64;
            let mean = side.scores.iter().sum::<f64>() / n;
            let passed = side.passed.iter().filter(|p| **p).count() as f64 / n >= 0.5;
            m.insert(k, (mean, passed));
        }
        per_run.push(m);
    }
    let tests = keys
        .iter()
        .map(|k| {
            let scores = per_run.iter().map(|m| m.get(k).map(|v| v.0)).collect();
            let passed = per_run.iter().map(|m| m.get(k).map(|v| v.1)).collect();
            stats::series(&k.test_id, &k.target, scores, passed)
        })
        .collect();
    Trend {
        suite: suite.to_owned(),
        runs: runs
            .iter()
            .map(|r| Point {
                id: r.info.id.clone(),
                started_at: r.info.started_at.clone(),
                pass_rate: r.info.pass_rate,
                mean_score: r.info.mean_score,
                cost_usd: r.info.cost_usd,
                partial: r.info.partial.clone(),
            })
            .collect(),
        tests,
        first_to_last: match runs {
            [first, .., last] => Some(compare::compare(first, last, options)),
            _ => None,
        },
    }
}

/// A score series as block characters (` ` where the test did not run).
pub fn sparkline(scores: &[Option<f64>]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    scores
        .iter()
        .map(|s| match s {
            Some(v) => BARS[((v.clamp(0.0, 1.0) * 7.0).round()) as usize],
            None => '·',
        })
        .collect()
}

/// The trend for a terminal.
pub fn render_text(t: &Trend) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {} run(s), oldest first", t.suite, t.runs.len());
    for p in &t.runs {
        let _ = writeln!(
            out,
            "  {}  pass rate {}  mean {}  cost {}{}",
            p.id,
            p.pass_rate
                .map(|r| format!("{:>5.1}%", r * 100.0))
                .unwrap_or_else(|| "    —".into()),
            p.mean_score
                .map(|m| format!("{m:.3}"))
                .unwrap_or_else(|| "—".into()),
            p.cost_usd
                .map(|c| format!("${c:.4}"))
                .unwrap_or_else(|| "—".into()),
            if p.partial.is_empty() {
                String::new()
            } else {
                format!("  partial ({})", p.partial.join(", "))
            }
        );
    }
    let width = t
        .tests
        .iter()
        .map(|s| s.test_id.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "\n  {:<width$}  {:<w2$}  flaps  drift",
        "test",
        "scores",
        w2 = t.runs.len().max(6)
    );
    for s in &t.tests {
        let _ = writeln!(
            out,
            "  {:<width$}  {:<w2$}  {:>5}  {}{}",
            s.test_id,
            sparkline(&s.scores),
            s.flaps,
            s.drift.unwrap_or(""),
            if s.flaky { "  flaky" } else { "" },
            w2 = t.runs.len().max(6)
        );
    }
    let flaky: Vec<&str> = t
        .tests
        .iter()
        .filter(|s| s.flaky)
        .map(|s| s.test_id.as_str())
        .collect();
    let drifting: Vec<String> = t
        .tests
        .iter()
        .filter_map(|s| s.drift.map(|d| format!("{} ({d})", s.test_id)))
        .collect();
    let _ = writeln!(
        out,
        "\nflaky (2+ verdict changes): {}",
        if flaky.is_empty() {
            "none".into()
        } else {
            flaky.join(", ")
        }
    );
    let _ = writeln!(
        out,
        "drifting: {}",
        if drifting.is_empty() {
            "none".into()
        } else {
            drifting.join(", ")
        }
    );
    if let Some(c) = &t.first_to_last {
        let _ = writeln!(out, "oldest → newest: {}", compare::verdict_line(c));
    }
    out
}
