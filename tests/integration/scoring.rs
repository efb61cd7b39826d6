//! Test scores, verdicts and exit codes.

use crate::support::Project;

#[test]
fn weighted_mean_threshold_and_exit_code_1() {
    // Weights 3/1/1 with scores 1/1/0 give 0.8: passes at the default 0.8.
    let project = Project::with_mock("alpha beta");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: exactly-080\n    input: q\n    assertions:\n      - {type: contains, value: alpha, weight: 3}\n      - {type: contains, value: beta}\n      - {type: contains, value: gamma}\n  - id: below\n    input: q\n    assertions:\n      - {type: contains, value: alpha}\n      - {type: contains, value: gamma}\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let ok = project.row("exactly-080");
    assert_eq!((ok["score"].as_f64().unwrap() * 100.0).round(), 80.0);
    assert_eq!(ok["execution_status"], "ok");
    let below = project.row("below");
    assert_eq!(below["score"], 0.5);
    assert_eq!(below["execution_status"], "quality_failure");
    assert_eq!(below["failure_class"], "assertion");
    assert!(
        run.stdout.contains("RESULT: FAIL  1/2 passed"),
        "{}",
        run.stdout
    );
    // --threshold 0.5 lets the second pass too.
    let run = crate::support::run_in(
        project.path(),
        &["run", "EVAL.yaml", "-o", "out2", "--threshold", "0.5"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_failed_required_gate_zeroes_the_test() {
    // 3 of 4 pass (0.75 ≥ threshold 0.7), but the failed one is required.
    let project = Project::with_mock("a b c");
    project.write(
        "EVAL.yaml",
        "execution:\n  threshold: 0.7\ntests:\n  - id: gated\n    input: q\n    assertions:\n      - {type: contains, value: a}\n      - {type: contains, value: b}\n      - {type: contains, value: c}\n      - {type: contains, value: d, required: true}\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(project.row("gated")["score"], 0.0);
}

#[test]
fn missing_target_and_bad_flags_are_usage_errors() {
    let project = Project::with_mock("x");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: a\n    input: q\n    assertions: [{type: is-json}]\n",
    );
    let run = project.run(&["--target", "nope"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("target `nope` is not in"),
        "{}",
        run.stderr
    );
    let run = project.run(&["--threshold", "2"]);
    assert_eq!(run.code, 2);
    let run = crate::support::run_in(project.path(), &["run"]);
    assert_eq!(run.code, 2);
    let run = crate::support::run_in(project.path(), &["run", "missing.yaml"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("missing.yaml: error: cannot read missing.yaml: No such file"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_required_gate_explains_itself_in_every_view() {
    let project = Project::with_mock("The capital of France is Paris.");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: capital\n    input: q\n    assertions:\n      - {type: contains, value: Lyon, required: true}\n      - {type: contains, value: Paris, weight: 3}\n",
    );
    let run = project.run(&["--junit", "junit.xml", "--reporter", "github"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let sentence = "required assertion `contains-Lyon` scored 0.00 &lt; 0.80: test score set to 0";
    let plain = sentence.replace("&lt;", "<");
    // Terminal.
    assert!(
        run.stdout.lines().any(|l| l.trim() == plain),
        "{}",
        run.stdout
    );
    // results.jsonl.
    let row = project.row("capital");
    assert_eq!(row["gated"]["assertion"], "contains-Lyon");
    assert_eq!(row["gated"]["min_score"], 0.8);
    // JUnit (XML-escaped) and the GitHub annotation.
    let junit = std::fs::read_to_string(project.path().join("junit.xml")).unwrap();
    assert!(junit.contains(sentence), "{junit}");
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::error") && l.contains(&plain)),
        "{}",
        run.stdout
    );
    // report.html carries the row's `gated` for the page to show, and
    // the page says "required".
    let html = std::fs::read_to_string(project.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("\"gated\":{\"assertion\":\"contains-Lyon\""),
        "gate data"
    );
    assert!(
        html.contains("test score set to 0"),
        "gate sentence in the page script"
    );
    assert!(html.contains("'required'"), "required badge");
}

#[test]
fn every_view_counts_the_statuses_the_same_way() {
    // One run with each status: passed, failed, error, expected failure,
    // unexpected pass.
    let project = Project::with_mock("The capital of France is Paris.");
    project.write(
        "EVAL.yaml",
        "tests:\n  \
         - {id: passes, input: q, assertions: [{type: contains, value: Paris}]}\n  \
         - {id: fails, input: q, assertions: [{type: contains, value: Lyon}]}\n  \
         - {id: errors, input: q, assertions: [{type: code-grader, command: [sh, -c, 'exit 4']}]}\n  \
         - {id: xfail, input: q, expected_fail: true, assertions: [{type: contains, value: Lyon}]}\n  \
         - {id: xpass, input: q, expected_fail: true, assertions: [{type: contains, value: Paris}]}\n",
    );
    let run = project.run(&["--junit", "junit.xml", "--reporter", "github"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let statuses: Vec<String> = project
        .rows()
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        statuses,
        [
            "passed",
            "failed",
            "error",
            "expected-failed",
            "unexpected-passed"
        ]
    );
    // Terminal.
    assert!(
        run.stdout.contains("RESULT: FAIL  1/5 passed"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "1 failed · 1 execution error(s) · 1 expected failure(s) · 1 unexpected pass(es)"
        ),
        "{}",
        run.stdout
    );
    // summary.json.
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    for (key, n) in [
        ("passed", 1),
        ("failed", 1),
        ("errors", 1),
        ("expected_failed", 1),
        ("unexpected_passed", 1),
    ] {
        assert_eq!(summary[key], n, "summary.json {key}: {summary}");
    }
    // The GitHub step summary's table row.
    let markdown = std::fs::read_to_string(project.path().join("out/summary.md")).unwrap();
    assert!(markdown.contains("| 1 | 1 | 1 | 1 | 1 | 0 |"), "{markdown}");
    // report.html embeds the same summary the page counts from.
    let html = std::fs::read_to_string(project.path().join("out/report.html")).unwrap();
    assert!(
        html.contains(
            "\"passed\":1,\"failed\":1,\"errors\":1,\"expected_failed\":1,\"unexpected_passed\":1"
        ),
        "report.html summary"
    );
    // JUnit: 5 cases; a failed test and an unexpected pass are failures,
    // the execution error an error; passes and expected failures neither.
    let junit = std::fs::read_to_string(project.path().join("junit.xml")).unwrap();
    assert!(junit.contains("tests=\"5\""), "{junit}");
    assert!(junit.contains("failures=\"2\""), "{junit}");
    assert!(junit.contains("errors=\"1\""), "{junit}");
}
