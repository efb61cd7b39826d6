//! Comparisons: assertions graded across the outputs of a group of tests
//! once every one of them exists (promptfoo's `select-best`), after the
//! rows are graded alone.
//!
//! As promptfoo merges a comparison into its rows: the comparison's result
//! is added to each row's scores; a row whose output is not chosen fails,
//! with the comparison's score (0) as its own; a chosen row keeps the score
//! it had. When the comparison cannot choose (the grader failed or answered
//! no usable index, fewer than two outputs), every row of the group fails —
//! a comparison that was not made never counts as a pass.

use super::*;

use crate::results::{CheckRow, ScoreRow, Verdict};

/// A group of rows one comparison sees: (group, trial).
type GroupKey = (String, Option<u32>);

/// Grades every comparison of the run in `path` whose rows lack its score,
/// and rewrites those rows; returns the rows, when any changed.
pub(super) fn grade(
    ctx: &Ctx<'_>,
    path: &Path,
    interrupted: bool,
    out: &mut dyn Write,
) -> anyhow::Result<Option<Vec<ResultRow>>> {
    if !ctx.suite.tests.iter().any(|t| !t.comparisons.is_empty()) {
        return Ok(None);
    }
    let tests: HashMap<&str, &TestCase> =
        ctx.suite.tests.iter().map(|t| (t.id.as_str(), t)).collect();
    let (mut rows, _) =
        results::read_rows(path).with_context(|| format!("cannot read {}", path.display()))?;
    // The rows of each group, in promptfoo's order: it reads them back from
    // its SQLite store by (eval, test) with no ORDER BY, through its index
    // on (eval_id, test_idx, success) — the rows that failed so far first,
    // then those that passed — each part in the order they were written:
    // provider by provider, each provider's prompts in order.
    let target_order: HashMap<&str, usize> = ctx
        .run_targets
        .iter()
        .enumerate()
        .map(|(i, t)| (t.target.name.as_str(), i))
        .collect();
    let mut groups: std::collections::BTreeMap<GroupKey, Vec<usize>> = Default::default();
    // Under trials each trial's outputs are compared among themselves, as
    // promptfoo compares each repetition's (its rows of one `testIdx`).
    for (i, row) in rows.iter().enumerate() {
        let Some(test) = tests.get(row.test_id.as_str()) else {
            continue;
        };
        if let (Some(group), false) = (&test.compare_group, test.comparisons.is_empty()) {
            groups
                .entry((group.clone(), row.trial))
                .or_default()
                .push(i);
        }
    }
    let mut changed = false;
    if !groups.is_empty() {
        writeln!(out, "comparing outputs (select-best):")?;
    }
    for (_, mut members) in groups {
        members.sort_by_key(|&i| {
            (
                rows[i].status.is_success(),
                target_order
                    .get(rows[i].target.as_str())
                    .copied()
                    .unwrap_or(usize::MAX),
                rows[i].test_index,
            )
        });
        let first = tests[rows[members[0]].test_id.as_str()];
        for comparison in &first.comparisons {
            // A row is pending when it has no score for the comparison, or
            // only the mark of one that could not be made yet (it gets its
            // own score back first).
            let mut pending = false;
            for &i in &members {
                let row = &mut rows[i];
                match row.scores.iter().position(|s| s.name == *comparison.name) {
                    None => pending = true,
                    Some(p) if is_mark(&row.scores[p]) => {
                        let mark = row.scores.remove(p);
                        restore(row, &mark);
                        pending = true;
                    }
                    Some(_) => {}
                }
            }
            if !pending {
                continue;
            }
            let results = if interrupted {
                // Not every output may exist: the comparison waits for
                // `--resume`, and until then fails its rows.
                members
                    .iter()
                    .map(|&i| mark(comparison, &rows[i]))
                    .collect()
            } else {
                compare(ctx, first, comparison, &members, &rows)
            };
            for (&i, score) in members.iter().zip(results) {
                // promptfoo: a test whose only assertions are comparisons
                // scores 0 (nothing else was graded), passing or not.
                let alone = tests
                    .get(rows[i].test_id.as_str())
                    .is_some_and(|t| t.assertions.is_empty());
                if alone {
                    rows[i].score = 0.0;
                }
                merge(&mut rows[i], score);
                let said = rows[i]
                    .scores
                    .last()
                    .and_then(|s| s.assertions.first())
                    .map(|c| c.text.clone())
                    .unwrap_or_default();
                writeln!(
                    out,
                    "  {}  {} · {}: {said}",
                    if rows[i].status.is_success() {
                        "PASS"
                    } else {
                        "FAIL"
                    },
                    rows[i].test_id,
                    rows[i].target
                )?;
            }
            changed = true;
        }
    }
    Ok(changed.then_some(rows))
}

/// One comparison over the group's rows: a score row for each.
fn compare(
    ctx: &Ctx<'_>,
    test: &TestCase,
    comparison: &suite::Assertion,
    members: &[usize],
    rows: &[ResultRow],
) -> Vec<ScoreRow> {
    let usable = members.iter().all(|&i| {
        rows[i].execution_status != ExecutionStatus::ExecutionError || !rows[i].output.is_empty()
    });
    let outputs: Vec<serde_json::Value> = members
        .iter()
        .map(|&i| serde_json::Value::String(rows[i].output.clone()))
        .collect();
    let mut config = (*comparison.config).clone();
    config.insert("__outputs".into(), serde_json::Value::Array(outputs));
    let mut own = comparison.clone();
    own.config_json = serde_json::Value::Object(config.clone()).to_string().into();
    own.config = Arc::new(config);
    let judge = ctx
        .run_targets
        .iter()
        .find(|t| t.target.name == rows[members[0]].target)
        .or(ctx.run_targets.first())
        .map_or_else(|| Err("no target".to_owned()), |t| t.judge.clone());
    let group_row = if usable {
        let mut request = grade::base_request(
            test,
            &target::TargetOutput::text(rows[members[0]].output.clone()),
        );
        let _permit = ctx.graders.acquire();
        grade::grade_assertion(
            ctx.registry,
            &own,
            &mut request,
            grade::call_limits(&own, ctx.suite.limits),
            &ctx.policy,
            &judge,
        )
    } else {
        grade::refused_row(
            comparison,
            "an output of the group is missing (its target failed), so the outputs cannot be compared".into(),
        )
    };
    let best = group_row
        .details
        .as_ref()
        .and_then(|d| d.get("best"))
        .and_then(serde_json::Value::as_u64)
        .filter(|_| group_row.error.is_none());
    let criteria = comparison
        .config
        .get("value")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    members
        .iter()
        .enumerate()
        .map(|(k, _)| {
            let mut row = group_row.clone();
            row.scores.clear();
            // The one call is counted once, on the first row.
            if k > 0 {
                row.judge = None;
            }
            match best {
                Some(b) => {
                    let chosen = b == k as u64;
                    row.score = if chosen { 1.0 } else { 0.0 };
                    row.verdict = if chosen { Verdict::Pass } else { Verdict::Fail };
                    row.failure_class = (!chosen).then_some(FailureClass::Assertion);
                    row.assertions = vec![CheckRow {
                        text: if chosen {
                            format!("Output selected as the best: {criteria}")
                        } else {
                            format!("Output not selected: {criteria}")
                        },
                        passed: chosen,
                        evidence: Some(format!("the grader chose output {b} of {}", members.len())),
                    }];
                }
                // Nothing chosen: every output fails, with the reason.
                None => {
                    row.score = 0.0;
                    row.verdict = Verdict::Fail;
                    row.failure_class.get_or_insert(FailureClass::Assertion);
                }
            }
            row
        })
        .collect()
}

/// The score of a comparison that could not be made yet (the run was
/// interrupted): a failure that keeps what the row had before it.
fn mark(comparison: &suite::Assertion, row: &ResultRow) -> ScoreRow {
    let mut score = grade::refused_row(
        comparison,
        "not compared: the run was interrupted before every output of the group existed; `evalhost run --resume` compares them".into(),
    );
    score.details = Some(serde_json::json!({
        "pending": true,
        "score_before": row.score,
        "execution_status_before": row.execution_status,
        "failure_class_before": row.failure_class,
    }));
    score
}

fn is_mark(score: &ScoreRow) -> bool {
    score
        .details
        .as_ref()
        .and_then(|d| d.get("pending"))
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// The row as it was before a mark was merged into it.
fn restore(row: &mut ResultRow, mark: &ScoreRow) {
    let Some(d) = &mark.details else {
        return;
    };
    if let Some(score) = d.get("score_before").and_then(serde_json::Value::as_f64) {
        row.score = score;
    }
    if let Ok(status) = serde_json::from_value(d["execution_status_before"].clone()) {
        row.execution_status = status;
    }
    row.failure_class = serde_json::from_value(d["failure_class_before"].clone()).unwrap_or(None);
    row.status = Status::of(row.execution_status, row.expected_fail);
}

/// promptfoo's `mergeSelectBestGradingResult`: the row passes only if it
/// passed and was chosen; a row not chosen takes the comparison's score.
fn merge(row: &mut ResultRow, score: ScoreRow) {
    if score.verdict != Verdict::Pass {
        row.score = score.score;
        if row.execution_status == ExecutionStatus::Ok {
            row.execution_status = ExecutionStatus::QualityFailure;
            row.failure_class = score.failure_class.or(Some(FailureClass::Assertion));
        }
        row.status = Status::of(row.execution_status, row.expected_fail);
    }
    row.scores.push(score);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> ResultRow {
        serde_json::from_str(r#"{"timestamp":"t","test_id":"t","suite":"s","target":"a","test_index":0,"status":"passed","score":0.75,"threshold":0.5,"execution_status":"ok","wall_ms":1,"output":"x","scores":[]}"#).unwrap()
    }

    fn assertion() -> suite::Assertion {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("promptfooconfig.yaml");
        std::fs::write(
            &path,
            "prompts: [a, b]\nproviders: [echo]\ntests:\n  - assert: [{type: select-best, value: best}]\n",
        )
        .unwrap();
        let (suite, diags) = crate::suite::load(&path);
        let suite = suite.unwrap_or_else(|| panic!("{diags:?}"));
        suite.tests[0].comparisons[0].clone()
    }

    #[test]
    fn an_uncompared_row_fails_until_it_is_compared_and_then_gets_its_score_back() {
        let comparison = assertion();
        let mut r = row();
        // Interrupted: the row fails, keeping what it had in the mark.
        let m = mark(&comparison, &r);
        merge(&mut r, m);
        assert_eq!((r.score, r.status.is_success()), (0.0, false));
        assert!(is_mark(r.scores.last().unwrap()));
        // On resume the mark comes off and the row is as it was.
        let m = r.scores.pop().unwrap();
        restore(&mut r, &m);
        assert_eq!(r, row());
        // Chosen: it keeps its score and passes; not chosen: it fails with 0.
        let mut chosen = row();
        let mut pass = m.clone();
        pass.verdict = Verdict::Pass;
        pass.score = 1.0;
        pass.details = None;
        merge(&mut chosen, pass);
        assert_eq!((chosen.score, chosen.status.is_success()), (0.75, true));
        let mut other = row();
        let mut fail = m;
        fail.details = None;
        merge(&mut other, fail);
        assert_eq!((other.score, other.status.is_success()), (0.0, false));
    }
}
