//! From result rows to test outcomes: the trials of a test combined by its
//! strategy, expected failures applied, and the run's tally. Reporters,
//! `merge` and the exit code all read outcomes, so a run, a resumed run and
//! merged shards are judged the same way.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::failure::FailureClass;
use crate::results::{ExecutionStatus, ResultRow, Status, Strategy};

/// One test's combined result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestOutcome {
    /// Suite name.
    pub suite: String,
    /// Test id.
    pub test_id: String,
    /// Target name.
    pub target: String,
    /// Position in the suite.
    pub test_index: usize,
    /// Combined score.
    pub score: f64,
    /// Threshold it was held to.
    pub threshold: f64,
    /// Combined status.
    pub status: Status,
    /// Why it did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<FailureClass>,
    /// Trials run (1 for a single run).
    pub trials: usize,
    /// Strategy, when there were trials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// Wall time of all its trials, in milliseconds.
    pub wall_ms: u64,
}

/// Student's t critical values for a two-sided 95% interval, by degrees of
/// freedom 1..=30; above 30 the normal 1.96.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The lower bound of the 95% t-interval of `scores`, clamped to [0, 1]
/// (the mean for one score).
pub fn confidence_lower_bound(scores: &[f64]) -> f64 {
    let n = scores.len();
    if n == 0 {
        return 0.0;
    }
    let mean = scores.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return mean;
    }
    let variance = scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = T95.get(n - 2).copied().unwrap_or(1.96);
    (mean - t * variance.sqrt() / (n as f64).sqrt()).clamp(0.0, 1.0)
}

/// Combines the rows of one (test, target) — one row, or one per trial.
pub fn combine(rows: &[&ResultRow]) -> TestOutcome {
    let first = rows[0];
    let expected_fail = first.expected_fail;
    let threshold = first.threshold;
    let wall_ms = rows.iter().map(|r| r.wall_ms).sum();
    let base = |score: f64, status: Status, failure_class: Option<FailureClass>| TestOutcome {
        suite: first.suite.clone(),
        test_id: first.test_id.clone(),
        target: first.target.clone(),
        test_index: first.test_index,
        score,
        threshold,
        status,
        failure_class,
        trials: rows.len(),
        strategy: first.strategy,
        wall_ms,
    };
    if rows.len() == 1 && first.trials.is_none() {
        return base(first.score, first.status, first.failure_class);
    }
    let scores: Vec<f64> = rows.iter().map(|r| r.score).collect();
    let graded: Vec<&&ResultRow> = rows
        .iter()
        .filter(|r| r.execution_status != ExecutionStatus::ExecutionError)
        .collect();
    let first_error = rows
        .iter()
        .find(|r| r.execution_status == ExecutionStatus::ExecutionError)
        .and_then(|r| r.failure_class);
    let strategy = first.strategy.unwrap_or(Strategy::PassAtK);
    let (score, passed) = match strategy {
        Strategy::PassAtK => {
            let best = scores.iter().copied().fold(0.0, f64::max);
            (
                best,
                rows.iter()
                    .any(|r| r.execution_status == ExecutionStatus::Ok),
            )
        }
        Strategy::Mean => {
            let mean = scores.iter().sum::<f64>() / scores.len() as f64;
            (mean, first_error.is_none() && mean >= threshold)
        }
        Strategy::ConfidenceInterval => {
            let lower = confidence_lower_bound(&scores);
            (lower, first_error.is_none() && lower >= threshold)
        }
    };
    let execution_status = if passed {
        ExecutionStatus::Ok
    } else if graded.is_empty() || (first_error.is_some() && strategy != Strategy::PassAtK) {
        ExecutionStatus::ExecutionError
    } else {
        ExecutionStatus::QualityFailure
    };
    let status = Status::of(execution_status, expected_fail);
    let class = match status {
        Status::Passed | Status::ExpectedFailed => None,
        Status::UnexpectedPassed => Some(FailureClass::UnexpectedPass),
        Status::Error => first_error.or(Some(FailureClass::Target)),
        Status::Failed => rows
            .iter()
            .filter_map(|r| r.failure_class)
            .min()
            .or(Some(FailureClass::Assertion)),
    };
    base(score, status, class)
}

/// Every test's outcome, in suite order (then target).
pub fn outcomes(rows: &[ResultRow]) -> Vec<TestOutcome> {
    let mut groups: BTreeMap<(String, usize, String, String), Vec<&ResultRow>> = BTreeMap::new();
    for row in rows {
        groups
            .entry((
                row.suite.clone(),
                row.test_index,
                row.test_id.clone(),
                row.target.clone(),
            ))
            .or_default()
            .push(row);
    }
    groups
        .into_values()
        .map(|mut group| {
            group.sort_by_key(|r| r.trial.unwrap_or(1));
            combine(&group)
        })
        .collect()
}

/// Counts over outcomes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Tests with an outcome.
    pub total: usize,
    /// Passed.
    pub passed: usize,
    /// Failed on quality.
    pub failed: usize,
    /// Execution errors.
    pub errors: usize,
    /// Failed as expected (counted as passing).
    pub expected_failed: usize,
    /// Passed although expected to fail.
    pub unexpected_passed: usize,
    /// Planned but not run (interrupted, fail-fast).
    pub not_run: usize,
    /// Mean score over outcomes.
    pub mean_score: f64,
    /// (passed + expected_failed) / total.
    pub pass_rate: f64,
    /// Unsuccessful tests per failure class.
    pub failures_by_class: BTreeMap<FailureClass, usize>,
}

impl Tally {
    /// Counts `outcomes`; `planned` is how many tests the run meant to run.
    pub fn new(outcomes: &[TestOutcome], planned: usize) -> Self {
        let mut tally = Self {
            total: outcomes.len(),
            not_run: planned.saturating_sub(outcomes.len()),
            ..Self::default()
        };
        for o in outcomes {
            match o.status {
                Status::Passed => tally.passed += 1,
                Status::Failed => tally.failed += 1,
                Status::Error => tally.errors += 1,
                Status::ExpectedFailed => tally.expected_failed += 1,
                Status::UnexpectedPassed => tally.unexpected_passed += 1,
            }
            if !o.status.is_success() {
                *tally
                    .failures_by_class
                    .entry(o.failure_class.unwrap_or(FailureClass::Assertion))
                    .or_insert(0) += 1;
            }
        }
        if !outcomes.is_empty() {
            tally.mean_score =
                outcomes.iter().map(|o| o.score).sum::<f64>() / outcomes.len() as f64;
            tally.pass_rate = (tally.passed + tally.expected_failed) as f64 / outcomes.len() as f64;
        }
        tally
    }

    /// True when every planned test ran and succeeded.
    pub fn all_passed(&self) -> bool {
        self.not_run == 0 && self.passed + self.expected_failed == self.total
    }

    /// The exit code this tally calls for.
    pub fn exit_code(&self) -> u8 {
        if self.all_passed() {
            crate::exit_codes::SUCCESS
        } else if self.total > 0 && self.errors == self.total {
            crate::exit_codes::EXECUTION_ERROR
        } else {
            crate::exit_codes::TEST_FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_bound_of_known_samples() {
        // mean 0.8, sd 0.1, n 4: 0.8 - 3.182 * 0.1 / 2 = 0.6409
        let lb = confidence_lower_bound(&[0.7, 0.8, 0.9, 0.8 + 0.0]);
        let sd = ((0.01 + 0.0 + 0.01 + 0.0) / 3.0_f64).sqrt();
        assert!((lb - (0.8 - 3.182 * sd / 2.0)).abs() < 1e-9, "{lb}");
        assert_eq!(confidence_lower_bound(&[0.9]), 0.9);
        assert_eq!(confidence_lower_bound(&[0.0, 1.0]), 0.0, "clamped at 0");
    }
}
