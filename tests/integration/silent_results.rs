//! No silent wrong result, round two (issue 32): each number evalhost
//! prints is the number the user's own tool would print, or a loud
//! refusal. One test per finding of `../shared/reference/trial-3.md` and
//! `code-review-3.md` (B1–B16); each failed on the code they were made
//! against.

use crate::support::{Project, run_in};

fn run_config(project: &Project, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["run", "promptfooconfig.yaml", "-o", "out"];
    args.extend_from_slice(extra);
    run_in(project.path(), &args)
}

/// Item 1 (B2): under `--repeat`, a promptfoo test passes only when every
/// trial passes by promptfoo's rule — never by AgentV's mean ≥ 0.8 — and a
/// test whose every trial passes below 0.8 is not failed.
#[test]
fn promptfoo_trials_keep_promptfoos_pass_rule() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['a b c d']\nproviders: [echo]\ntests:\n  - description: four of five\n    assert:\n      - {type: contains, value: a}\n      - {type: contains, value: b}\n      - {type: contains, value: c}\n      - {type: contains, value: d}\n      - {type: contains, value: zzz}\n  - description: rouge below 0.8\n    assert:\n      - {type: rouge-n, value: a b c d e f g h, threshold: 0.5}\n",
    );
    let r = run_config(&project, &["--repeat", "2"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["passed"], 1, "{summary}");
    assert_eq!(summary["failed"], 1, "{summary}");
    let rows = project.rows();
    for row in rows.iter().filter(|r| r["test_id"] == "four of five") {
        assert_eq!(row["status"], "failed", "{row}");
        assert_eq!(row["strategy"], "all_pass", "{row}");
    }
    assert!(r.stdout.contains("RESULT: FAIL"), "{}", r.stdout);

    // `evaluateOptions.repeat` is promptfoo's own way to ask for trials.
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['a b c d']\nproviders: [echo]\nevaluateOptions: {repeat: 3}\ntests:\n  - description: four of five\n    assert:\n      - {type: contains, value: a}\n      - {type: contains, value: zzz}\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(project.rows().len(), 3, "three trials");
}

/// Item 9: a promptfoo row records no threshold it did not use (the viewer
/// showed "0.80 / 0.80 failed"), and `--threshold` is refused for a
/// promptfoo config rather than silently ignored.
#[test]
fn promptfoo_rows_hold_no_unused_threshold_and_threshold_is_refused() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['a b c d']\nproviders: [echo]\ntests:\n  - description: all must pass\n    assert:\n      - {type: contains, value: a}\n      - {type: contains, value: zzz}\n  - description: own threshold\n    threshold: 0.5\n    assert:\n      - {type: contains, value: a}\n      - {type: contains, value: zzz}\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let row = project.row("all must pass");
    assert!(row.get("threshold").is_none(), "{row}");
    assert_eq!(row["pass_rule"], "all-pass", "{row}");
    assert_eq!(row["status"], "failed", "{row}");
    let own = project.row("own threshold");
    assert_eq!(own["threshold"], 0.5, "{own}");
    assert_eq!(own["status"], "passed", "{own}");

    let r = run_config(&project, &["--threshold", "0.4"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("--threshold does not apply to a promptfoo config"),
        "{}",
        r.stderr
    );
}
