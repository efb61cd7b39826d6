//! Resuming a run: the rows already in `results.jsonl` that the run keeps.
//! A torn last line (a crash cut it) is dropped; a row this run could not
//! have written (a test or trial it did not plan, a score outside [0, 1], a
//! status its score does not allow) makes the directory unresumable, since
//! it came from somewhere other than an honest run.

use super::*;

/// Finished rows by (test, target, trial).
pub(super) type Done = HashMap<(String, String, u32), RowBrief>;

/// The finished rows of `results_path`.
pub(super) fn finished_rows(
    results_path: &Path,
    suite: &Suite,
    plan: &[PlannedTest],
    target_names: &[String],
    cli_threshold: Option<f64>,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Done, RunError>> {
    let repaired = match results::repair_torn_tail(results_path) {
        Ok(r) => r,
        Err(e) => return Ok(Err(RunError::Usage(format!("cannot resume: {e}")))),
    };
    if repaired {
        writeln!(
            err,
            "  dropped a torn last line of {} (a crash cut it)",
            results_path.display()
        )?;
    }
    let suite_name: Arc<str> = suite.name.as_str().into();
    let mut rows = Vec::new();
    // Rows already there are kept only when an honest run could have
    // written them: a test and target of this plan, a trial it planned,
    // scores in range and a status that follows from them.
    let planned: std::collections::HashSet<(usize, &str, &str)> = plan
        .iter()
        .map(|p| {
            (
                p.index,
                suite.tests[p.index].id.as_str(),
                target_names[p.target].as_str(),
            )
        })
        .collect();
    let trials = plan.first().map_or(1, |p| p.trials);
    let strategy = plan.first().and_then(|p| p.strategy);
    let mut refused = 0usize;
    let mut dropped = 0usize;
    let read = results::for_each_line(results_path, |parsed| match parsed {
        Ok(row)
            if planned.contains(&(row.test_index, row.test_id.as_str(), row.target.as_str()))
                && row.check_trials(trials, strategy).is_ok()
                && row.check().is_ok()
                && agrees_with_suite(&row, suite, cli_threshold) =>
        {
            rows.push(RowBrief::of(&row, &suite_name, &suite_name));
        }
        Ok(_) => refused += 1,
        Err(_) => dropped += 1,
    });
    if let Err(e) = read {
        return Ok(Err(RunError::Usage(format!("cannot resume: {e}"))));
    }
    if refused > 0 {
        return Ok(Err(RunError::Usage(format!(
            "{} holds {refused} row(s) this run could not have written (a test or trial it did not plan, a score outside [0, 1], or a status its score does not allow); it is not resumable: start a new run",
            results_path.display()
        ))));
    }
    if dropped > 0 {
        writeln!(
            err,
            "  {dropped} damaged line(s) of {} will be graded again",
            results_path.display()
        )?;
    }
    Ok(Ok(rows.into_iter().map(|row| (row.key(), row)).collect()))
}

/// A row agrees with the suite it claims to grade: the test's own
/// `expected_fail` and threshold, and one score per assertion of the test,
/// in order, with its name, type and weight (an error row before grading
/// has none).
fn agrees_with_suite(row: &ResultRow, suite: &Suite, cli_threshold: Option<f64>) -> bool {
    let Some(test) = suite.tests.get(row.test_index) else {
        return false;
    };
    let threshold = held_threshold(test, cli_threshold, suite.threshold);
    let same = match (row.threshold, threshold) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-12,
        (a, b) => a.is_none() && b.is_none(),
    };
    if row.expected_fail != test.expected_fail || !same {
        return false;
    }
    if let Some(conversation) = &test.conversation {
        // One score per turn, then `conversation` when the test has its own.
        let mut names: Vec<String> = (1..=conversation.turns.len())
            .map(|n| format!("turn-{n}"))
            .collect();
        if !test.assertions.is_empty() {
            names.push("conversation".into());
        }
        return row.execution_status == ExecutionStatus::ExecutionError && row.scores.is_empty()
            || row
                .scores
                .iter()
                .map(|s| s.name.as_str())
                .eq(names.iter().map(String::as_str));
    }
    if row.scores.is_empty() {
        return row.execution_status == ExecutionStatus::ExecutionError
            || test.assertions.is_empty();
    }
    row.scores.len() == test.assertions.len()
        && row
            .scores
            .iter()
            .zip(&test.assertions)
            .all(|(s, a)| *s.name == *a.name && (s.weight - a.weight).abs() < 1e-12)
}
