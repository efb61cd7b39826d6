//! `evalhost regrade DIR`: an earlier run's outputs as targets, so that its
//! answers are graded again without calling anything.

use super::*;

/// One recorded target per target the earlier run ran, answering by
/// (test id, trial); and the most trials any of its tests ran.
pub(super) fn recorded_targets(
    dir: &Path,
    suite: &Suite,
) -> Result<(Vec<RunTarget>, Option<u32>), RunError> {
    // Grade the earlier run's outputs: one recorded target per target it
    // ran, answering by (test id, trial).
    let rows = match results::read_rows(&dir.join("results.jsonl")) {
        Ok((rows, _)) => rows,
        Err(e) => {
            return Err(RunError::Usage(format!(
                "cannot read {}: {e}",
                dir.join("results.jsonl").display()
            )));
        }
    };
    let mut by_target: std::collections::BTreeMap<
        String,
        std::collections::HashMap<(String, u32), target::TargetOutput>,
    > = std::collections::BTreeMap::new();
    for row in rows
        .iter()
        .filter(|r| r.execution_status != ExecutionStatus::ExecutionError || !r.output.is_empty())
    {
        // What the target answered: a transform runs again on it.
        let answered = row.untransformed_output.as_ref().unwrap_or(&row.output);
        let messages = if row.output_messages.is_empty() {
            target::TargetOutput::text(answered.clone()).messages
        } else {
            row.output_messages.clone()
        };
        let output = target::TargetOutput {
            text: answered.clone(),
            messages,
            duration_ms: row.duration_ms,
            token_usage: row.token_usage,
            cost_usd: row.cost_usd,
            llm_calls: match row.llm_calls {
                Some(n) => target::LlmCalls::Known(n),
                // A bare answer: graded as it was the first time.
                None if row.output_messages.len() <= 1 => target::LlmCalls::AnswerOnly,
                None => target::LlmCalls::Unknown,
            },
            target_used: row.target_used.clone(),
            finish_reason: row.finish_reason.clone(),
            logprobs: row.logprobs.clone(),
            output_json: None,
            raw: None,
            file_changes: None,
        };
        by_target
            .entry(row.target.clone())
            .or_default()
            .insert((row.test_id.clone(), row.trial.unwrap_or(1)), output);
    }
    if by_target.is_empty() {
        // Nothing answered (every row a target error, or no row at all):
        // nothing to grade again — a usage error, never a panic.
        return Err(RunError::Usage(format!(
            "{} has no output to grade again: {}",
            dir.display(),
            if rows.is_empty() {
                "it has no result rows (was it interrupted before its first test?)".to_owned()
            } else {
                format!(
                    "each of its {} row(s) is a target error without output; run the suite again instead",
                    rows.len()
                )
            }
        )));
    }
    let mut run_targets = Vec::new();
    for (name, outputs) in by_target {
        run_targets.push(RunTarget {
            target: Target {
                name,
                provider: target::Provider::Recorded(Arc::new(outputs)),
                grader_target: None,
                fallback_targets: Vec::new(),
                retry: target::Retry {
                    max_retries: 0,
                    ..target::Retry::default()
                },
                base_dir: suite.dir.clone(),
                isolate: Default::default(),
            },
            hooks: Default::default(),
            judge: Err(String::new()),
        });
    }
    Ok((run_targets, rows.iter().filter_map(|r| r.trials).max()))
}
