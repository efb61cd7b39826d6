//! `evalhost compare BASE CAND`: rows matched by (test id, target) — by
//! test id alone when each run has one target and they differ (old model
//! against new model) — each
//! test's delta and verdict flip, AgentV's win/loss and normalized gain,
//! and whether the difference is more than noise (`stats`): a paired
//! bootstrap interval of the mean delta and an exact McNemar test on the
//! flips, trial-aware. Tests in only one run are listed, never dropped.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::stats::{self, Options, Pair, Side, Summary, TestDelta};
use super::{Run, RunInfo};

/// A test by its key.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    /// The test.
    pub test_id: String,
    /// The target.
    pub target: String,
}

/// Two runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The base run.
    pub base: RunInfo,
    /// The candidate run.
    pub candidate: RunInfo,
    /// The statistics.
    pub summary: Summary,
    /// Every matched test, in the base run's order.
    pub tests: Vec<TestDelta>,
    /// Tests only the base run has.
    pub only_in_base: Vec<Key>,
    /// Tests only the candidate run has.
    pub only_in_candidate: Vec<Key>,
    /// How rows were matched: `test id and target`, or `test id` when each
    /// run has one target and they differ.
    pub matched_by: String,
}

/// The trials of each (test, target) of a run, in first-seen order. A row
/// succeeds when its status is `passed` or `expected-failed` (a failure
/// the suite expects is a success, as in the run's tally); a row with no
/// score (an error) scores 0. With `by_id`, rows are keyed by test id
/// alone (the target left empty).
pub fn sides(run: &Run, by_id: bool) -> Vec<(Key, Side)> {
    let mut order: Vec<Key> = Vec::new();
    let mut by: BTreeMap<Key, Side> = BTreeMap::new();
    for r in &run.rows {
        let key = Key {
            test_id: r.test_id.clone(),
            target: if by_id {
                String::new()
            } else {
                r.target.clone()
            },
        };
        let side = by.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            Side {
                scores: Vec::new(),
                passed: Vec::new(),
            }
        });
        side.scores.push(r.score.unwrap_or(0.0));
        side.passed
            .push(matches!(r.status.as_str(), "passed" | "expected-failed"));
    }
    order
        .into_iter()
        .map(|k| {
            let side = by.remove(&k).expect("seen");
            (k, side)
        })
        .collect()
}

/// Compares `cand` with `base`.
pub fn compare(base: &Run, cand: &Run, options: &Options) -> Comparison {
    fn targets(run: &Run) -> std::collections::BTreeSet<&str> {
        run.rows.iter().map(|r| r.target.as_str()).collect()
    }
    let (bt, ct) = (targets(base), targets(cand));
    // One target each, and not the same: the old model against the new.
    let across = (bt.len() == 1 && ct.len() == 1 && bt != ct).then(|| {
        (
            bt.first().unwrap().to_string(),
            ct.first().unwrap().to_string(),
        )
    });
    let by_id = across.is_some();
    let base_sides = sides(base, by_id);
    let cand_list = sides(cand, by_id);
    let cand_order: Vec<Key> = cand_list.iter().map(|(k, _)| k.clone()).collect();
    let mut cand_sides: BTreeMap<Key, Side> = cand_list.into_iter().collect();
    let mut pairs: Vec<Pair> = Vec::new();
    let mut only_in_base = Vec::new();
    for (key, side) in base_sides {
        match cand_sides.remove(&key) {
            Some(c) => pairs.push(Pair {
                test_id: key.test_id,
                target: match &across {
                    Some((b, c)) => format!("{b} → {c}"),
                    None => key.target,
                },
                base: side,
                cand: c,
            }),
            None => only_in_base.push(key),
        }
    }
    let only_in_candidate: Vec<Key> = cand_order
        .into_iter()
        .filter(|k| cand_sides.contains_key(k))
        .collect();
    let tests: Vec<TestDelta> = pairs
        .iter()
        .map(|p| {
            let mut t = stats::test_delta(p);
            // Each side's own target, for what looks a test up in one run
            // (the viewer's outputs side by side, its links).
            if let Some((b, c)) = &across {
                t.base_target = Some(b.clone());
                t.cand_target = Some(c.clone());
            }
            t
        })
        .collect();
    let summary = stats::summarize(&tests, &pairs, options);
    Comparison {
        base: base.info.clone(),
        candidate: cand.info.clone(),
        summary,
        tests,
        only_in_base,
        only_in_candidate,
        matched_by: match across {
            Some((b, c)) => format!("test id (each run has one target: {b} → {c})"),
            None => "test id and target".to_owned(),
        },
    }
}

/// A signed number with three decimals, the minus a real one.
pub fn signed(x: f64) -> String {
    let x = if x.abs() < 0.0005 { 0.0 } else { x };
    if x < 0.0 {
        format!("−{:.3}", -x)
    } else {
        format!("+{x:.3}")
    }
}

/// The one-line verdict: "regressed: 4 tests, mean −0.071 (95 % CI −0.120
/// … −0.020), significant".
pub fn verdict_line(c: &Comparison) -> String {
    let s = &c.summary;
    let ci = format!(
        "{:.0} % CI {} … {}",
        s.ci.level * 100.0,
        signed(s.ci.low),
        signed(s.ci.high)
    );
    match s.verdict {
        "regressed" => format!(
            "regressed: {} test{}, mean {} ({ci}), significant",
            s.losses,
            if s.losses == 1 { "" } else { "s" },
            signed(s.mean_delta)
        ),
        "improved" => format!(
            "improved: {} test{}, mean {} ({ci}), significant",
            s.wins,
            if s.wins == 1 { "" } else { "s" },
            signed(s.mean_delta)
        ),
        _ => format!(
            "no significant change: mean {} ({ci}); {} worse, {} better",
            signed(s.mean_delta),
            s.losses,
            s.wins
        ),
    }
}

fn run_line(label: &str, r: &RunInfo) -> String {
    format!(
        "{label}: {} · {} · {} · {} rows, {} passed{}",
        r.id,
        r.suite,
        r.targets.join(", "),
        r.total,
        r.passed,
        r.git_commit
            .as_deref()
            .map(|c| format!(
                " · {}{}",
                &c[..c.len().min(10)],
                if r.git_dirty == Some(true) {
                    " (dirty)"
                } else {
                    ""
                }
            ))
            .unwrap_or_default()
    )
}

/// The comparison for a terminal.
pub fn render_text(c: &Comparison) -> String {
    let s = &c.summary;
    let mut out = String::new();
    let _ = writeln!(out, "{}", run_line("base     ", &c.base));
    let _ = writeln!(out, "{}", run_line("candidate", &c.candidate));
    let _ = writeln!(out, "matched by {}", c.matched_by);
    let _ = writeln!(out);
    let mut changed: Vec<&TestDelta> = c
        .tests
        .iter()
        .filter(|t| t.flip.is_some() || t.delta.abs() > 1e-9)
        .collect();
    changed.sort_by(|a, b| a.delta.total_cmp(&b.delta).then(a.test_id.cmp(&b.test_id)));
    if changed.is_empty() {
        let _ = writeln!(out, "no test changed score or verdict");
    } else {
        let width = changed
            .iter()
            .map(|t| t.test_id.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            out,
            "  {:<width$}  {:>6}  {:>6}  {:>7}  {:<10}  outcome",
            "test", "base", "cand", "delta", "flip"
        );
        for t in changed {
            let _ = writeln!(
                out,
                "  {:<width$}  {:>6.3}  {:>6.3}  {:>7}  {:<10}  {}{}",
                t.test_id,
                t.base_score,
                t.cand_score,
                signed(t.delta),
                t.flip.unwrap_or(""),
                t.outcome,
                if t.target.is_empty() || c.base.targets.len() <= 1 {
                    String::new()
                } else {
                    format!("  [{}]", t.target)
                }
            );
        }
    }
    for (label, keys) in [
        ("only in base", &c.only_in_base),
        ("only in candidate", &c.only_in_candidate),
    ] {
        if !keys.is_empty() {
            let _ = writeln!(out, "\n{label} ({}):", keys.len());
            for k in keys {
                let _ = writeln!(out, "  {} [{}]", k.test_id, k.target);
            }
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} matched · {} win, {} loss, {} tie (AgentV's ±0.1) · flips: {} pass→fail, {} fail→pass (McNemar p = {:.4}) · sign test p = {:.4}{}",
        s.matched,
        s.wins,
        s.losses,
        s.ties,
        s.pass_to_fail,
        s.fail_to_pass,
        s.flip_p_value,
        s.delta_p_value,
        s.normalized_gain
            .map(|g| format!(" · normalized gain {}", signed(g)))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "mean score {:.3} → {:.3} · bootstrap {} resamples, seed {}",
        s.mean_base, s.mean_cand, s.ci.resamples, s.ci.seed
    );
    let _ = writeln!(out, "{}", verdict_line(c));
    out
}

fn md_escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The comparison as Markdown, for a pull-request comment.
pub fn render_markdown(c: &Comparison) -> String {
    let s = &c.summary;
    let mut out = String::new();
    let _ = writeln!(out, "### evalhost: {}\n", md_escape(&c.candidate.suite));
    let _ = writeln!(out, "**{}**\n", md_escape(&verdict_line(c)));
    let _ = writeln!(out, "| | base | candidate |");
    let _ = writeln!(out, "|---|---|---|");
    let _ = writeln!(
        out,
        "| run | `{}` | `{}` |",
        md_escape(&c.base.id),
        md_escape(&c.candidate.id)
    );
    let commit = |r: &RunInfo| {
        r.git_commit
            .as_deref()
            .map(|x| {
                format!(
                    "`{}`{}",
                    &x[..x.len().min(10)],
                    if r.git_dirty == Some(true) {
                        " (dirty)"
                    } else {
                        ""
                    }
                )
            })
            .unwrap_or_else(|| "—".into())
    };
    let _ = writeln!(
        out,
        "| commit | {} | {} |",
        commit(&c.base),
        commit(&c.candidate)
    );
    let _ = writeln!(
        out,
        "| mean score | {:.3} | {:.3} |",
        s.mean_base, s.mean_cand
    );
    let _ = writeln!(
        out,
        "| passed | {}/{} | {}/{} |",
        c.base.passed, c.base.total, c.candidate.passed, c.candidate.total
    );
    let _ = writeln!(
        out,
        "\n{} matched · {} win / {} loss / {} tie · flips {} pass→fail, {} fail→pass (McNemar p = {:.4})\n",
        s.matched, s.wins, s.losses, s.ties, s.pass_to_fail, s.fail_to_pass, s.flip_p_value
    );
    let mut changed: Vec<&TestDelta> = c
        .tests
        .iter()
        .filter(|t| t.flip.is_some() || t.delta.abs() > 1e-9)
        .collect();
    changed.sort_by(|a, b| a.delta.total_cmp(&b.delta));
    if !changed.is_empty() {
        let _ = writeln!(out, "| test | target | base | candidate | delta | flip |");
        let _ = writeln!(out, "|---|---|---:|---:|---:|---|");
        for t in changed {
            let _ = writeln!(
                out,
                "| `{}` | {} | {:.3} | {:.3} | {} | {} |",
                md_escape(&t.test_id),
                md_escape(&t.target),
                t.base_score,
                t.cand_score,
                signed(t.delta),
                t.flip.unwrap_or("")
            );
        }
    }
    for (label, keys) in [
        ("Only in base", &c.only_in_base),
        ("Only in candidate", &c.only_in_candidate),
    ] {
        if !keys.is_empty() {
            let _ = writeln!(
                out,
                "\n<details><summary>{label} ({})</summary>\n",
                keys.len()
            );
            for k in keys {
                let _ = writeln!(
                    out,
                    "- `{}` ({})",
                    md_escape(&k.test_id),
                    md_escape(&k.target)
                );
            }
            let _ = writeln!(out, "\n</details>");
        }
    }
    out
}
