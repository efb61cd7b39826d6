//! promptfoo's n-gram overlap scores: `bleu` and `gleu`.

use evalhost_plugin_sdk::{Config, Grade, GradeError, Value};

use crate::{js_num, scored};

/// JavaScript's `text.toLowerCase().trim().split(/\s+/)` (an empty text is
/// one empty word).
fn js_words(text: &str) -> Vec<String> {
    let t = text.to_lowercase();
    let t = t.trim();
    if t.is_empty() {
        return vec![String::new()];
    }
    t.split_whitespace().map(str::to_owned).collect()
}

fn ngrams(words: &[String], n: usize) -> Vec<String> {
    if n == 0 || n > words.len() {
        return Vec::new();
    }
    (0..=words.len() - n)
        .map(|i| words[i..i + n].join(" "))
        .collect()
}

fn counts(grams: &[String]) -> std::collections::HashMap<&str, usize> {
    let mut m = std::collections::HashMap::new();
    for g in grams {
        *m.entry(g.as_str()).or_insert(0) += 1;
    }
    m
}

/// promptfoo's `calculateBleuScore`: BLEU-4, uniform weights over the
/// orders the candidate has, clipped counts (the best reference per
/// order), brevity penalty against the closest reference length, a zero
/// precision smoothed to 1e-7.
pub fn bleu(candidate: &str, references: &[String]) -> f64 {
    if candidate.trim().is_empty() {
        return 0.0;
    }
    let cand = js_words(candidate);
    let refs: Vec<Vec<String>> = references.iter().map(|r| js_words(r)).collect();
    let closest = refs
        .iter()
        .map(Vec::len)
        .reduce(|prev, cur| {
            let (dc, dp) = (cur.abs_diff(cand.len()), prev.abs_diff(cand.len()));
            if dc < dp || (dc == dp && cur < prev) {
                cur
            } else {
                prev
            }
        })
        .unwrap_or(0);
    let mut orders = Vec::new();
    for n in 1..=4 {
        let grams = ngrams(&cand, n);
        if grams.is_empty() {
            continue;
        }
        let cc = counts(&grams);
        let mut best = 0;
        for r in &refs {
            let rgrams = ngrams(r, n);
            let rc = counts(&rgrams);
            let clipped: usize = cc
                .iter()
                .map(|(g, c)| (*c).min(rc.get(g).copied().unwrap_or(0)))
                .sum();
            best = best.max(clipped);
        }
        orders.push(best as f64 / grams.len() as f64);
    }
    let bp = if cand.len() > closest {
        1.0
    } else {
        (1.0 - closest as f64 / cand.len() as f64).exp()
    };
    if orders.is_empty() {
        return 0.0;
    }
    let w = 0.25 / (0.25 * orders.len() as f64);
    let sum: f64 = orders
        .iter()
        .map(|p| w * if *p == 0.0 { 1e-7f64 } else { *p }.ln())
        .sum();
    bp * sum.exp()
}

/// promptfoo's `calculateGleuScore`: n = 1..4, min(precision, recall) of
/// the matched n-grams, trailing dots dropped from words, the best
/// reference.
pub fn gleu(candidate: &str, references: &[String]) -> f64 {
    let strip = |w: String| w.trim_end_matches('.').to_owned();
    let cand: Vec<String> = js_words(candidate).into_iter().map(strip).collect();
    references
        .iter()
        .map(|r| {
            let refw: Vec<String> = js_words(r).into_iter().map(strip).collect();
            if cand == refw {
                return 1.0;
            }
            let (mut matched, mut ct, mut rt) = (0usize, 0usize, 0usize);
            for n in 1..=4 {
                let cg = ngrams(&cand, n);
                let rg = ngrams(&refw, n);
                let (cc, rc) = (counts(&cg), counts(&rg));
                matched += cc
                    .iter()
                    .map(|(g, c)| (*c).min(rc.get(g).copied().unwrap_or(0)))
                    .sum::<usize>();
                ct += cg.len();
                rt += rg.len();
            }
            if ct == 0 || rt == 0 {
                0.0
            } else {
                (matched as f64 / ct as f64).min(matched as f64 / rt as f64)
            }
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

pub(crate) fn references(value: &Value) -> Result<Vec<String>, String> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) if items.iter().all(Value::is_string) && !items.is_empty() => Ok(items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()),
        _ => Err("must have a string or array of strings value".into()),
    }
}

/// promptfoo's `bleu` and `gleu`: the score against the reference(s)
/// reaches the threshold (default 0.5).
pub(crate) fn grade(
    t: &str,
    output: &str,
    config: &Config,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let refs = references(value)?;
    if t == "gleu" && output.is_empty() {
        return Err(GradeError::Failed("Invalid inputs".into()));
    }
    let threshold = config.optional_f64("threshold")?.unwrap_or(0.5);
    let s = if t == "bleu" {
        bleu(output, &refs)
    } else {
        gleu(output, &refs)
    };
    let pass = (s >= threshold) != inverse;
    Ok(scored(
        pass,
        if inverse { 1.0 - s } else { s },
        format!(
            "{} score {s:.4} is {} than threshold {}",
            t.to_uppercase(),
            if inverse { "greater" } else { "less" },
            js_num(threshold)
        ),
    ))
}
