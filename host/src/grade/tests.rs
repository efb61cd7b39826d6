use super::*;
use crate::suite::PassRule;

fn row(score: f64, weight: f64, pass: bool) -> ScoreRow {
    ScoreRow {
        name: "a".into(),
        kind: "contains".into(),
        score,
        weight,
        verdict: if pass { Verdict::Pass } else { Verdict::Fail },
        assertions: Vec::new(),
        negate: false,
        required: false,
        failure_class: (!pass).then_some(FailureClass::Assertion),
        error: None,
        plugin: String::new(),
        plugin_digest: String::new(),
        plugin_output: None,
        details: None,
        expected: None,
        duration_us: 0,
        judge: None,
        scores: Vec::new(),
    }
}

#[test]
fn promptfoo_passes_when_every_assertion_passes() {
    let all = |rows: &[ScoreRow]| score_test(&[], rows, 0.8, PassRule::AllPass);
    // 0.9 mean, one failure: fails (AgentV's mean would pass it).
    let rows = [
        row(1.0, 1.0, true),
        row(1.0, 1.0, true),
        row(0.7, 1.0, false),
    ];
    let t = all(&rows);
    assert_eq!(t.status, ExecutionStatus::QualityFailure);
    assert!((t.score - 0.9).abs() < 1e-9);
    assert_eq!(
        score_test(&[], &rows, 0.8, PassRule::WeightedMean).status,
        ExecutionStatus::Ok
    );
    // A failing assertion of weight 0 never fails the test.
    let t = all(&[row(1.0, 1.0, true), row(0.0, 0.0, false)]);
    assert_eq!((t.status, t.score), (ExecutionStatus::Ok, 1.0));
    // No assertion: pass, score 1; only weight 0: score 0, pass.
    assert_eq!(all(&[]).score, 1.0);
    let t = all(&[row(1.0, 0.0, true)]);
    assert_eq!((t.status, t.score), (ExecutionStatus::Ok, 0.0));
}
