//! JUnit XML (`--junit FILE`): one `<testsuite>` per suite, one
//! `<testcase>` per test. Quality failures are `<failure>`, execution errors
//! are `<error>` (the machinery broke, not the output), expected failures
//! pass with a note, unexpected passes fail.

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::{Details, Summary};
use crate::results::{ResultRow, Status, Verdict};
use crate::text::{shown, shown_line};

/// The failed checks of `row`, one per line.
pub fn failed_checks(row: &ResultRow) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(error) = &row.error {
        lines.push(error.clone());
    }
    if let Some(gate) = &row.gated {
        lines.push(gate.explain());
    }
    for score in row.scores.iter().filter(|s| s.verdict != Verdict::Pass) {
        for check in score.assertions.iter().filter(|c| !c.passed) {
            lines.push(format!("{} ({}): {}", score.name, score.kind, check.text));
        }
    }
    lines
}

/// Renders the report.
pub fn render(summary: &Summary, details: &Details) -> anyhow::Result<String> {
    render_suites(
        test_suites(summary, details),
        Duration::from_millis(summary.duration_ms as u64),
    )
}

/// One report of `suites` (of one run, or of several suites' runs) taking
/// `time` in all.
pub fn render_suites(suites: Vec<TestSuite>, time: Duration) -> anyhow::Result<String> {
    let mut report = Report::new("evalhost");
    report.set_time(time);
    report.add_test_suites(suites);
    Ok(report.to_string()?)
}

/// A run's JUnit test suites: one per suite name, a test case per test.
pub fn test_suites(summary: &Summary, details: &Details) -> Vec<TestSuite> {
    let mut suites: BTreeMap<String, TestSuite> = BTreeMap::new();
    for outcome in &summary.tests {
        let checks = details
            .get(&(outcome.test_id.clone(), outcome.target.clone()))
            .map(|d| d.checks.clone())
            .unwrap_or_default();
        let first = checks
            .first()
            .cloned()
            .unwrap_or_else(|| match outcome.threshold {
                Some(t) => format!("score {:.2} below {t:.2}", outcome.score),
                None => format!("score {:.2}, not every assertion passed", outcome.score),
            });
        let class = outcome
            .failure_class
            .map_or_else(String::new, |c| c.to_string());
        let mut status = match outcome.status {
            Status::Passed | Status::ExpectedFailed => TestCaseStatus::success(),
            Status::Failed | Status::UnexpectedPassed => {
                TestCaseStatus::non_success(NonSuccessKind::Failure)
            }
            Status::Error => TestCaseStatus::non_success(NonSuccessKind::Error),
        };
        match outcome.status {
            Status::Failed | Status::Error => {
                status
                    .set_message(shown_line(&first).into_owned())
                    .set_type(class)
                    .set_description(
                        checks
                            .iter()
                            .map(|c| shown_line(c).into_owned())
                            .collect::<Vec<_>>()
                            .join("\n"),
                    );
            }
            Status::UnexpectedPassed => {
                status
                    .set_message("passed, but the case is marked expected_fail")
                    .set_type(class);
            }
            _ => {}
        }
        let mut case = TestCase::new(shown_line(&outcome.test_id).into_owned(), status);
        case.set_classname(
            shown_line(&format!("{}.{}", outcome.suite, outcome.target)).into_owned(),
        )
        .set_time(Duration::from_millis(outcome.wall_ms));
        if outcome.status == Status::ExpectedFailed {
            case.set_system_out(format!(
                "expected failure (score {:.2}): {}",
                outcome.score,
                shown(&checks.join("; "))
            ));
        }
        suites
            .entry(outcome.suite.clone())
            .or_insert_with(|| TestSuite::new(shown_line(&outcome.suite).into_owned()))
            .add_test_case(case);
    }
    suites.into_values().collect()
}
