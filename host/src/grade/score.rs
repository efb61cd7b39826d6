//! A test's score from its assertions' scores: the weighted mean with
//! `required` gates, or promptfoo's every-assertion-passes rule.

use super::*;

/// promptfoo's rule without a threshold: score = Σ score·w / Σ w (0 when
/// Σ w = 0; 1 with no assertion), pass = no assertion failed, where an
/// assertion of weight 0 never fails.
pub(super) fn all_pass(scores: &[ScoreRow]) -> TestScore {
    let infra = scores
        .iter()
        .filter_map(|s| s.failure_class)
        .find(|c| c.is_infrastructure());
    if let Some(class) = infra {
        return TestScore {
            score: 0.0,
            status: ExecutionStatus::ExecutionError,
            failure_class: Some(class),
            gated: None,
        };
    }
    let (sum, total) = scores.iter().fold((0.0, 0.0), |(s, t), r| {
        (s + r.score * r.weight, t + r.weight)
    });
    let score = match (scores.is_empty(), total > 0.0) {
        (true, _) => 1.0,
        (false, true) => sum / total,
        (false, false) => 0.0,
    };
    let failed = scores
        .iter()
        .filter(|s| s.weight != 0.0 && s.verdict == Verdict::Fail)
        .map(|s| s.failure_class.unwrap_or(FailureClass::Assertion))
        .min();
    TestScore {
        score,
        status: if failed.is_some() {
            ExecutionStatus::QualityFailure
        } else {
            ExecutionStatus::Ok
        },
        failure_class: failed,
        gated: None,
    }
}

/// What a test's assertion scores add up to.
#[derive(Debug, Clone, PartialEq)]
pub struct TestScore {
    /// The test's score.
    pub score: f64,
    /// Ok, quality failure or execution error.
    pub status: ExecutionStatus,
    /// Why it did not pass.
    pub failure_class: Option<FailureClass>,
    /// The first `required` assertion below its gate, which zeroed the score.
    pub gated: Option<crate::results::Gate>,
}

/// promptfoo keeps the score an assertion reports, above 1 or below 0 (a
/// JavaScript assertion's `26`, a custom rubric's `3` of 5); plugins stay
/// within [0, 1] and report such a number as `details.raw_score`: for a
/// promptfoo config it is the assertion's score (not for a negated one,
/// whose score promptfoo also derives from a bounded one), and so the
/// test's weighted mean is promptfoo's.
pub fn keep_raw_scores(scores: &mut [ScoreRow]) {
    for s in scores {
        // A grader's nested results (`componentResults`), not an
        // assert-set's members (whose mean the set's score is).
        if s.kind != "assert-set" {
            keep_raw_scores(&mut s.scores);
        }
        if s.negate {
            continue;
        }
        if let Some(raw) = s
            .details
            .as_ref()
            .and_then(|d| d.get("raw_score"))
            .and_then(serde_json::Value::as_f64)
            .filter(|r| r.is_finite())
        {
            s.score = raw;
        }
    }
}

/// The test's score, status and failure class from its assertion scores.
///
/// Score: the weighted mean over non-skipped scores (0 when the total weight
/// is 0), forced to 0 when a `required` assertion scores below its gate
/// (`min_score`, else a numeric `required`, else the test threshold). A test
/// passes when its score reaches the threshold and no plugin failed.
pub fn score_test(
    assertions: &[Assertion],
    scores: &[ScoreRow],
    threshold: f64,
    rule: crate::suite::PassRule,
) -> TestScore {
    if rule == crate::suite::PassRule::AllPass {
        return all_pass(scores);
    }
    let mut score = crate::results::weighted_mean(scores);
    let mut gated = None;
    for (assertion, s) in assertions.iter().zip(scores) {
        let gate = match assertion.required {
            Required::No => continue,
            Required::Yes => assertion.min_score.unwrap_or(threshold),
            Required::AtLeast(x) => assertion.min_score.unwrap_or(x),
        };
        if !reaches(s.score, gate) {
            score = 0.0;
            gated.get_or_insert_with(|| crate::results::Gate {
                assertion: s.name.clone(),
                score: s.score,
                min_score: gate,
            });
        }
    }
    let infra = scores
        .iter()
        .filter_map(|s| s.failure_class)
        .find(|c| c.is_infrastructure());
    let (score, status, failure_class) = if let Some(class) = infra {
        // As AgentV: an execution error scores 0, whatever graded.
        (0.0, ExecutionStatus::ExecutionError, Some(class))
    } else if reaches(score, threshold) {
        (score, ExecutionStatus::Ok, None)
    } else {
        let class = scores
            .iter()
            .filter_map(|s| s.failure_class)
            .min()
            .unwrap_or(FailureClass::Assertion);
        (score, ExecutionStatus::QualityFailure, Some(class))
    };
    TestScore {
        score,
        status,
        failure_class,
        gated,
    }
}
