//! Bugs the code review of the layout found (B1–B14 in
//! `../shared/reference/code-review.md`) that need a whole run to show.
//! The loader's are fixtures: `tests/fixtures/{loader-keys-valid,
//! loader-keys-typos, errors-do-not-hide-errors, conversation-id,
//! include-suite-level-checked}`; B11 is in `code_grader.rs`.

use crate::support::{Project, run_in};

/// B10: a `{type: text, text: …}` block reaches the target as the loader
/// reads it (it was sent empty while results showed its text).
#[test]
fn a_text_block_written_with_text_reaches_the_target() {
    let project = Project::with_mock("x");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - name: default\n    provider: cli\n    command: \"cat {PROMPT_FILE} > {OUTPUT_FILE}\"\n",
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t\n    input:\n      - role: user\n        content:\n          - {type: text, text: from the text key}\n    assertions: [{type: contains, value: from the text key}]\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(project.row("t")["output"], "from the text key");
}

/// B12: when the target fails, the hooks that ran before it stay in the row.
#[test]
fn hook_rows_survive_a_target_failure() {
    let project = Project::with_mock("x");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - name: broken\n    provider: cli\n    command: \"exit 1\"\n    max_retries: 0\n",
    );
    project.write(
        "EVAL.yaml",
        "execution:\n  targets:\n    - name: broken\n      hooks:\n        before_each: {command: [echo, ran-before]}\ntests:\n  - id: t\n    input: q\n    assertions: [{type: contains, value: x}]\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let row = project.row("t");
    assert_eq!(row["failure_class"], "target", "{row}");
    assert!(
        row["hooks"]["target_before_each"]["output"]
            .as_str()
            .is_some_and(|o| o.contains("ran-before")),
        "{row}"
    );
}

/// B13: replaying a results.jsonl of several targets and trials picks the
/// named target and each trial's own row.
#[test]
fn replay_of_several_targets_and_trials_picks_the_right_rows() {
    let project = Project::with_mock("x");
    let row = |target: &str, trial: u32, output: &str| {
        serde_json::json!({"test_id": "t", "target": target, "trial": trial, "trials": 2, "output": output})
            .to_string()
    };
    project.write(
        "recorded.jsonl",
        &[
            row("a", 1, "a-one"),
            row("a", 2, "a-two"),
            row("b", 1, "b-one"),
            row("b", 2, "b-two"),
        ]
        .join("\n"),
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t\n    input: q\n    assertions: [{type: contains, value: one}]\n",
    );
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - {name: default, provider: replay, fixtures: ../recorded.jsonl}\n  - {name: only-b, provider: replay, fixtures: ../recorded.jsonl, target: b}\n",
    );
    let r = project.run(&["--repeat", "2"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        project.rows()[0]["error"]
            .as_str()
            .unwrap()
            .contains("several targets (a, b): set `target:`"),
        "{}",
        r.stderr
    );
    let r = project.run(&["--repeat", "2", "--target", "only-b"]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let outputs: Vec<String> = project
        .rows()
        .iter()
        .map(|r| r["output"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outputs, ["b-one", "b-two"]);
}

/// B14: merging a matrix run reports every target, as the run does.
#[test]
fn merge_reports_every_target_of_a_matrix_run() {
    let project = Project::with_mock("x");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - {name: a, provider: mock, response: x}\n  - {name: b, provider: mock, response: x}\n",
    );
    project.write(
        "EVAL.yaml",
        "execution:\n  targets: [a, b]\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    assert_eq!(project.run(&[]).code, 0);
    let r = run_in(project.path(), &["merge", "out", "-o", "merged"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let summary = |dir: &str| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(project.path().join(dir).join("summary.json")).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(summary("out")["target"], "a, b");
    assert_eq!(summary("merged")["target"], "a, b");
}

/// Issue 32.14 (trial-3): on a colour terminal the RESULT line printed its
/// opening colour codes as text (`\u{1b}[32m…PASS`); they are real escape
/// sequences, and nothing is escaped as text.
#[test]
fn the_result_line_is_coloured_not_escaped() {
    let project = crate::support::Project::with_mock("hello");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hello}]\n  - id: t2\n    input: hi\n    assertions: [{type: contains, value: bye}]\n",
    );
    let out = crate::support::evalhost()
        .current_dir(project.path())
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("RESULT:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("\u{1b}[31m"), "{line:?}");
    assert!(line.contains("FAIL"), "{line:?}");
    assert!(
        !line.contains("\\u{1b}"),
        "escape codes printed as text: {line:?}"
    );
}
