//! From result rows to test outcomes: the trials of a test combined by its
//! strategy, expected failures applied, and the run's tally. Reporters,
//! `merge` and the exit code all read outcomes, so a run, a resumed run and
//! merged shards are judged the same way.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::failure::FailureClass;
use crate::results::usage::JudgeUsage;
use crate::results::{ExecutionStatus, ResultRow, Status, Strategy};

/// What outcomes and the summary read of a result row. A run keeps only
/// [`RowBrief`]s in memory (the rows themselves are in `results.jsonl`);
/// `merge` and `--rerun-failed` read whole rows.
pub trait Graded {
    /// Suite name.
    fn suite(&self) -> &str;
    /// Test id.
    fn test_id(&self) -> &str;
    /// Target name.
    fn target(&self) -> &str;
    /// Position in the suite.
    fn test_index(&self) -> usize;
    /// Trial number, when there are trials.
    fn trial(&self) -> Option<u32>;
    /// Number of trials planned, when there are trials.
    fn trials(&self) -> Option<u32>;
    /// Trial strategy.
    fn strategy(&self) -> Option<Strategy>;
    /// Score.
    fn score(&self) -> f64;
    /// Threshold, when the test is held to one.
    fn threshold(&self) -> Option<f64>;
    /// Status.
    fn status(&self) -> Status;
    /// Execution status.
    fn execution_status(&self) -> ExecutionStatus;
    /// Failure class.
    fn failure_class(&self) -> Option<FailureClass>;
    /// Marked `expected_fail`.
    fn expected_fail(&self) -> bool;
    /// Wall time in milliseconds.
    fn wall_ms(&self) -> u64;
    /// Judge calls of the row's assertions, summed.
    fn judge(&self) -> JudgeUsage;
}

impl Graded for ResultRow {
    fn suite(&self) -> &str {
        &self.suite
    }
    fn test_id(&self) -> &str {
        &self.test_id
    }
    fn target(&self) -> &str {
        &self.target
    }
    fn test_index(&self) -> usize {
        self.test_index
    }
    fn trial(&self) -> Option<u32> {
        self.trial
    }
    fn trials(&self) -> Option<u32> {
        self.trials
    }
    fn strategy(&self) -> Option<Strategy> {
        self.strategy
    }
    fn score(&self) -> f64 {
        self.score
    }
    fn threshold(&self) -> Option<f64> {
        self.threshold
    }
    fn status(&self) -> Status {
        self.status
    }
    fn execution_status(&self) -> ExecutionStatus {
        self.execution_status
    }
    fn failure_class(&self) -> Option<FailureClass> {
        self.failure_class
    }
    fn expected_fail(&self) -> bool {
        self.expected_fail
    }
    fn wall_ms(&self) -> u64 {
        self.wall_ms
    }
    fn judge(&self) -> JudgeUsage {
        fn sum(scores: &[crate::results::ScoreRow], total: &mut JudgeUsage) {
            for s in scores {
                if let Some(u) = s.judge {
                    *total += u;
                }
                sum(&s.scores, total);
            }
        }
        let mut total = JudgeUsage::default();
        sum(&self.scores, &mut total);
        total
    }
}

/// The part of a result row a run keeps in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct RowBrief {
    suite: Arc<str>,
    test_id: String,
    target: Arc<str>,
    test_index: usize,
    trial: Option<u32>,
    trials: Option<u32>,
    strategy: Option<Strategy>,
    score: f64,
    threshold: Option<f64>,
    status: Status,
    execution_status: ExecutionStatus,
    failure_class: Option<FailureClass>,
    expected_fail: bool,
    wall_ms: u64,
    judge: JudgeUsage,
}

impl RowBrief {
    /// The brief of `row`, sharing `suite` and `target` strings.
    pub fn of(row: &ResultRow, suite: &Arc<str>, target: &Arc<str>) -> Self {
        let share = |s: &Arc<str>, v: &str| if &**s == v { s.clone() } else { Arc::from(v) };
        Self {
            suite: share(suite, &row.suite),
            test_id: row.test_id.clone(),
            target: share(target, &row.target),
            test_index: row.test_index,
            trial: row.trial,
            trials: row.trials,
            strategy: row.strategy,
            score: row.score,
            threshold: row.threshold,
            status: row.status,
            execution_status: row.execution_status,
            failure_class: row.failure_class,
            expected_fail: row.expected_fail,
            wall_ms: row.wall_ms,
            judge: row.judge(),
        }
    }

    /// The identity of the row: (test, target, trial).
    pub fn key(&self) -> (String, String, u32) {
        (
            self.test_id.clone(),
            self.target.to_string(),
            self.trial.unwrap_or(1),
        )
    }
}

impl Graded for RowBrief {
    fn suite(&self) -> &str {
        &self.suite
    }
    fn test_id(&self) -> &str {
        &self.test_id
    }
    fn target(&self) -> &str {
        &self.target
    }
    fn test_index(&self) -> usize {
        self.test_index
    }
    fn trial(&self) -> Option<u32> {
        self.trial
    }
    fn trials(&self) -> Option<u32> {
        self.trials
    }
    fn strategy(&self) -> Option<Strategy> {
        self.strategy
    }
    fn score(&self) -> f64 {
        self.score
    }
    fn threshold(&self) -> Option<f64> {
        self.threshold
    }
    fn status(&self) -> Status {
        self.status
    }
    fn execution_status(&self) -> ExecutionStatus {
        self.execution_status
    }
    fn failure_class(&self) -> Option<FailureClass> {
        self.failure_class
    }
    fn expected_fail(&self) -> bool {
        self.expected_fail
    }
    fn wall_ms(&self) -> u64 {
        self.wall_ms
    }
    fn judge(&self) -> JudgeUsage {
        self.judge
    }
}

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
    /// Threshold it was held to; none when it passes by another rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
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

/// How a test's score was judged, for people: `threshold 0.80`, or
/// `every assertion must pass` for a test held to no threshold.
pub fn rule_text(threshold: Option<f64>) -> String {
    match threshold {
        Some(t) => format!("threshold {t:.2}"),
        None => "every assertion must pass".to_owned(),
    }
}

/// Combines the rows of one (test, target) — one row, or one per trial.
pub fn combine<R: Graded>(rows: &[&R]) -> TestOutcome {
    let first = rows[0];
    let expected_fail = first.expected_fail();
    let threshold = first.threshold();
    let wall_ms = rows.iter().map(|r| r.wall_ms()).sum();
    let base = |score: f64, status: Status, failure_class: Option<FailureClass>| TestOutcome {
        suite: first.suite().to_owned(),
        test_id: first.test_id().to_owned(),
        target: first.target().to_owned(),
        test_index: first.test_index(),
        score,
        threshold,
        status,
        failure_class,
        trials: rows.len(),
        strategy: first.strategy(),
        wall_ms,
    };
    if rows.len() == 1 && first.trials().is_none() {
        return base(first.score(), first.status(), first.failure_class());
    }
    let scores: Vec<f64> = rows.iter().map(|r| r.score()).collect();
    let graded = rows
        .iter()
        .filter(|r| r.execution_status() != ExecutionStatus::ExecutionError)
        .count();
    let first_error = rows
        .iter()
        .find(|r| r.execution_status() == ExecutionStatus::ExecutionError)
        .and_then(|r| r.failure_class());
    let strategy = first.strategy().unwrap_or(Strategy::PassAtK);
    let (score, passed) = match strategy {
        Strategy::PassAtK => {
            let best = scores.iter().copied().fold(0.0, f64::max);
            (
                best,
                rows.iter()
                    .any(|r| r.execution_status() == ExecutionStatus::Ok),
            )
        }
        Strategy::Mean => {
            let mean = scores.iter().sum::<f64>() / scores.len() as f64;
            (
                mean,
                first_error.is_none() && threshold.is_none_or(|t| crate::results::reaches(mean, t)),
            )
        }
        Strategy::ConfidenceInterval => {
            let lower = confidence_lower_bound(&scores);
            (
                lower,
                first_error.is_none()
                    && threshold.is_none_or(|t| crate::results::reaches(lower, t)),
            )
        }
        Strategy::AllPass => (
            scores.iter().sum::<f64>() / scores.len() as f64,
            rows.iter()
                .all(|r| r.execution_status() == ExecutionStatus::Ok),
        ),
    };
    let execution_status = if passed {
        ExecutionStatus::Ok
    } else if graded == 0 || (first_error.is_some() && strategy != Strategy::PassAtK) {
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
            .filter_map(|r| r.failure_class())
            .min()
            .or(Some(FailureClass::Assertion)),
    };
    base(score, status, class)
}

/// Every test's outcome, in suite order (then target).
pub fn outcomes<R: Graded>(rows: &[R]) -> Vec<TestOutcome> {
    let mut groups: BTreeMap<(&str, usize, &str, &str), Vec<&R>> = BTreeMap::new();
    for row in rows {
        groups
            .entry((row.suite(), row.test_index(), row.test_id(), row.target()))
            .or_default()
            .push(row);
    }
    groups
        .into_values()
        .map(|mut group| {
            group.sort_by_key(|r| r.trial().unwrap_or(1));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        trial: u32,
        score: f64,
        status: ExecutionStatus,
        strategy: Strategy,
        expected_fail: bool,
    ) -> ResultRow {
        ResultRow {
            timestamp: String::new(),
            test_id: "t".into(),
            suite: "s".into(),
            target: "default".into(),
            test_index: 0,
            trial: Some(trial),
            trials: Some(3),
            strategy: Some(strategy),
            status: Status::of(status, expected_fail),
            expected_fail,
            tags: Vec::new(),
            conversation_id: None,
            source: None,
            score,
            threshold: Some(0.8),
            execution_status: status,
            failure_class: match status {
                ExecutionStatus::Ok => None,
                ExecutionStatus::QualityFailure => Some(FailureClass::Assertion),
                ExecutionStatus::ExecutionError => Some(FailureClass::PluginTimeout),
            },
            gated: None,
            error: None,
            duration_ms: None,
            wall_ms: 10,
            token_usage: None,
            cost_usd: None,
            llm_calls: None,
            target_used: None,
            finish_reason: None,
            logprobs: None,
            transcript: None,
            untransformed_output: None,
            retries: Vec::new(),
            cached: false,
            output_messages: Vec::new(),
            file_changes: None,
            workspace_path: None,
            hooks: Default::default(),
            sandbox: None,
            input: Vec::new(),
            expected_output: None,
            criteria: None,
            metadata: serde_json::Map::new(),
            prompt: None,
            pass_rule: None,
            output: String::new(),
            scores: Vec::new(),
        }
    }

    fn combined(rows: &[ResultRow]) -> TestOutcome {
        combine(&rows.iter().collect::<Vec<_>>())
    }

    use ExecutionStatus::{ExecutionError as E, Ok as K, QualityFailure as Q};

    #[test]
    fn pass_at_k_passes_on_any_passing_trial_with_the_best_score() {
        // Scores 0.5, 0.9: the second trial passes → passed, score 0.9.
        let o = combined(&[
            row(1, 0.5, Q, Strategy::PassAtK, false),
            row(2, 0.9, K, Strategy::PassAtK, false),
        ]);
        assert_eq!(
            (o.status, o.score, o.trials, o.wall_ms),
            (Status::Passed, 0.9, 2, 20)
        );
        // An error trial does not block a later pass.
        let o = combined(&[
            row(1, 0.0, E, Strategy::PassAtK, false),
            row(2, 1.0, K, Strategy::PassAtK, false),
        ]);
        assert_eq!(o.status, Status::Passed);
        // Every trial an error → error with its class.
        let o = combined(&[
            row(1, 0.0, E, Strategy::PassAtK, false),
            row(2, 0.0, E, Strategy::PassAtK, false),
        ]);
        assert_eq!(
            (o.status, o.failure_class),
            (Status::Error, Some(FailureClass::PluginTimeout))
        );
    }

    #[test]
    fn mean_holds_the_average_to_the_threshold() {
        // 1.0, 1.0, 0.4 → mean 0.8 ≥ 0.8 passes although one trial failed.
        let o = combined(&[
            row(1, 1.0, K, Strategy::Mean, false),
            row(2, 1.0, K, Strategy::Mean, false),
            row(3, 0.4, Q, Strategy::Mean, false),
        ]);
        assert_eq!(o.status, Status::Passed);
        assert!((o.score - 0.8).abs() < 1e-12);
        // 1.0, 0.5, 0.5 → mean 0.667 < 0.8 fails although one trial passed.
        let o = combined(&[
            row(1, 1.0, K, Strategy::Mean, false),
            row(2, 0.5, Q, Strategy::Mean, false),
            row(3, 0.5, Q, Strategy::Mean, false),
        ]);
        assert_eq!(
            (o.status, o.failure_class),
            (Status::Failed, Some(FailureClass::Assertion))
        );
        // An infrastructure error in any trial is an error, not a low mean.
        let o = combined(&[
            row(1, 1.0, K, Strategy::Mean, false),
            row(2, 0.0, E, Strategy::Mean, false),
        ]);
        assert_eq!(o.status, Status::Error);
    }

    #[test]
    fn confidence_interval_needs_the_lower_bound_above_the_threshold() {
        // 0.9, 1.0, 0.8: mean 0.9, sd 0.1, lower bound 0.9 - 4.303*0.1/√3 = 0.652 < 0.8.
        let rows = [
            row(1, 0.9, K, Strategy::ConfidenceInterval, false),
            row(2, 1.0, K, Strategy::ConfidenceInterval, false),
            row(3, 0.8, K, Strategy::ConfidenceInterval, false),
        ];
        let o = combined(&rows);
        assert_eq!(o.status, Status::Failed);
        assert!(
            (o.score - (0.9 - 4.303 * 0.1 / 3f64.sqrt())).abs() < 1e-9,
            "{}",
            o.score
        );
        // Identical scores have no spread: the bound is the mean.
        let same = [
            row(1, 0.85, K, Strategy::ConfidenceInterval, false),
            row(2, 0.85, K, Strategy::ConfidenceInterval, false),
        ];
        assert_eq!(combined(&same).status, Status::Passed);
    }

    #[test]
    fn expected_fail_applies_to_the_combined_outcome() {
        let o = combined(&[
            row(1, 0.2, Q, Strategy::Mean, true),
            row(2, 0.3, Q, Strategy::Mean, true),
        ]);
        assert_eq!((o.status, o.failure_class), (Status::ExpectedFailed, None));
        let o = combined(&[row(1, 1.0, K, Strategy::PassAtK, true)]);
        assert_eq!(
            (o.status, o.failure_class),
            (Status::UnexpectedPassed, Some(FailureClass::UnexpectedPass))
        );
        let o = combined(&[row(1, 0.0, E, Strategy::PassAtK, true)]);
        assert_eq!(o.status, Status::Error, "errors are never masked");
    }

    #[test]
    fn tally_counts_and_exit_codes() {
        let passed = combined(&[row(1, 1.0, K, Strategy::PassAtK, false)]);
        let xfail = combined(&[row(1, 0.0, Q, Strategy::PassAtK, true)]);
        let error = combined(&[row(1, 0.0, E, Strategy::PassAtK, false)]);
        assert_eq!(
            Tally::new(&[passed.clone(), xfail.clone()], 2).exit_code(),
            crate::exit_codes::SUCCESS
        );
        assert_eq!(
            Tally::new(std::slice::from_ref(&passed), 2).exit_code(),
            crate::exit_codes::TEST_FAILED,
            "one not run"
        );
        assert_eq!(
            Tally::new(std::slice::from_ref(&error), 1).exit_code(),
            crate::exit_codes::EXECUTION_ERROR
        );
        let t = Tally::new(&[passed, xfail, error], 3);
        assert_eq!(
            (t.passed, t.expected_failed, t.errors, t.exit_code()),
            (1, 1, 1, crate::exit_codes::TEST_FAILED)
        );
        assert!((t.pass_rate - 2.0 / 3.0).abs() < 1e-12);
    }

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
