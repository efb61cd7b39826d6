//! What a row read back from disk may claim: the checks `merge`,
//! `--resume` and the history make before they believe a row.

use super::*;

/// The score a plugin reported outside [0, 1] (`details.raw_score`), which
/// a promptfoo config keeps as the assertion's score.
pub fn raw_score(s: &ScoreRow) -> Option<f64> {
    s.details
        .as_ref()?
        .get("raw_score")?
        .as_f64()
        .filter(|r| r.is_finite())
}

impl ResultRow {
    /// Checks what a row read back from disk claims: scores and the
    /// threshold in [0, 1], and a status that its execution status, score
    /// and threshold allow. A row that fails came from somewhere other than
    /// an honest run.
    pub fn check(&self) -> Result<(), String> {
        fn unit(what: &str, x: f64) -> Result<(), String> {
            if x.is_finite() && (0.0..=1.0).contains(&x) {
                Ok(())
            } else {
                Err(format!("{what} {x} is outside [0, 1]"))
            }
        }
        fn scores(list: &[ScoreRow], depth: usize) -> Result<(), String> {
            if depth > 16 {
                return Err("scores nest too deep".into());
            }
            for s in list {
                // A promptfoo score outside [0, 1] is the plugin's own
                // number (`details.raw_score`), never anything else.
                if raw_score(s) != Some(s.score) {
                    unit(&format!("score of `{}`", s.name), s.score)?;
                }
                if !(s.weight.is_finite() && s.weight >= 0.0) {
                    return Err(format!("weight of `{}` is {}", s.name, s.weight));
                }
                scores(&s.scores, depth + 1)?;
            }
            Ok(())
        }
        if self.score.is_finite() && self.scores.iter().any(|s| raw_score(s).is_some()) {
            // Checked below: the weighted mean of those scores.
        } else {
            unit("score", self.score)?;
        }
        if let Some(t) = self.threshold {
            unit("threshold", t)?;
        }
        scores(&self.scores, 0)?;
        // The test score is the weighted mean of its graded scores, or 0
        // (a gate, an execution error); never anything else.
        let mean = weighted_mean(&self.scores);
        if self.score != 0.0 && (self.score - mean).abs() > 1e-9 {
            return Err(format!(
                "score {} is not the weighted mean of its assertion scores ({mean})",
                self.score
            ));
        }
        // A test without a threshold passes by its rule (every assertion
        // passing), which the score alone cannot show.
        let reached = self.threshold.is_none_or(|t| self.score + 1e-9 >= t);
        let consistent = match self.status {
            Status::Passed => {
                self.execution_status == ExecutionStatus::Ok && !self.expected_fail && reached
            }
            Status::UnexpectedPassed => {
                self.execution_status == ExecutionStatus::Ok && self.expected_fail && reached
            }
            Status::Failed => {
                self.execution_status == ExecutionStatus::QualityFailure && !self.expected_fail
            }
            Status::ExpectedFailed => {
                self.execution_status == ExecutionStatus::QualityFailure && self.expected_fail
            }
            Status::Error => self.execution_status == ExecutionStatus::ExecutionError,
        };
        if !consistent {
            return Err(format!(
                "status `{}` does not follow from execution_status `{}`, score {} and threshold {}{}",
                self.status.as_str(),
                serde_json::to_value(self.execution_status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                self.score,
                self.threshold.map_or("none".to_owned(), |t| t.to_string()),
                if self.expected_fail {
                    " (expected to fail)"
                } else {
                    ""
                }
            ));
        }
        Ok(())
    }

    /// Checks the row's trial fields against a plan of `trials` trials
    /// combined by `strategy`: its trial is one of them, and it claims that
    /// count and that strategy.
    pub fn check_trials(&self, trials: u32, strategy: Option<Strategy>) -> Result<(), String> {
        let trial = self.trial.unwrap_or(1);
        if trial == 0 || trial > trials {
            return Err(format!(
                "has trial {trial}, but the run planned {trials} trial(s)"
            ));
        }
        if self.trials.unwrap_or(1) != trials {
            return Err(format!(
                "says it ran {} trial(s), but the run planned {trials}",
                self.trials.unwrap_or(1)
            ));
        }
        if self.strategy != strategy {
            return Err(format!(
                "says its trials combine by {:?}, but the run planned {strategy:?}",
                self.strategy
            ));
        }
        Ok(())
    }
}
