//! A bad assertion config is rejected when the suite is loaded — before any
//! target runs — naming the file, line, test and assertion. AgentV drops such
//! assertions silently (or fails them at run time); evalhost refuses to start.

use crate::support::Project;

#[test]
fn invalid_regex_exits_2_naming_file_line_test_and_assertion() {
    let project = Project::with_mock("anything");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: fine\n    input: q\n    assertions:\n      - type: contains\n        value: a\n  - id: bad-regex\n    input: q\n    assertions:\n      - type: regex\n        value: \"([a-z\"\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("EVAL.yaml:11:9: error: test `bad-regex`, assertion `regex-([a-z` (regex): invalid regex /([a-z/"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("--> at `tests[1].assertions[0].value`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing was run"), "{}", run.stderr);
    assert!(
        !project.path().join("out/results.jsonl").exists(),
        "no result may be written"
    );
}

#[test]
fn every_config_mistake_is_reported_in_one_run() {
    let project = Project::with_mock("anything");
    project.write(
        "EVAL.yaml",
        r#"tests:
  - id: a
    input: q
    assertions:
      - type: contains
        value: 42
      - type: contains-any
        value: []
      - type: regex
        value: ok
        flags: q
      - type: contians
        value: x
      - type: equals
"#,
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let e = &run.stderr;
    assert!(e.contains("EVAL.yaml:6:9: error: test `a`, assertion `contains` (contains): `value` must be a string, got number 42 (quote it: \"42\")"), "{e}");
    assert!(e.contains("EVAL.yaml:8:9: error: test `a`, assertion `contains-any-0` (contains-any): `value` is an empty list"), "{e}");
    // The flag's line, not the pattern's (issue 16.13).
    assert!(e.contains("EVAL.yaml:11:9: error: test `a`, assertion `regex-ok` (regex): invalid regex flag `q` in `flags`"), "{e}");
    assert!(e.contains("EVAL.yaml:12:9: error: test `a`, assertion `contians`: unknown assertion type `contians`"), "{e}");
    assert!(e.contains("hint: did you mean `contains`?"), "{e}");
    assert!(
        e.contains("assertion `equals` (equals): missing `value` (a non-empty string)"),
        "{e}"
    );
    assert!(e.contains("5 error(s) in the suite"), "{e}");
}

#[test]
fn validate_reports_without_running() {
    let project = Project::with_mock("anything");
    project.write("EVAL.yaml", "tests:\n  - id: a\n    input: q\n    assertions:\n      - type: regex\n        value: '(unclosed'\n");
    let run = crate::support::run_in(project.path(), &["validate", "EVAL.yaml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("EVAL.yaml:6:9: error: test `a`"),
        "{}",
        run.stderr
    );
    project.write("EVAL.yaml", "tests:\n  - id: a\n    input: q\n    assertions:\n      - type: regex\n        value: '(closed)'\n");
    let run = crate::support::run_in(project.path(), &["validate", "EVAL.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn malformed_yaml_names_the_line() {
    let project = Project::with_mock("anything");
    project.write("EVAL.yaml", "tests:\n  - id: a\n    input: [unclosed\n");
    let run = project.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("EVAL.yaml:"), "{}", run.stderr);
    assert!(run.stderr.contains("invalid YAML"), "{}", run.stderr);
}

#[test]
fn a_plugin_config_schema_is_enforced_at_load_time() {
    let project = Project::with_mock("anything");
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins: [{}]\ntests:\n  - id: a\n    input: q\n    assertions:\n      - type: strict-config\n        level: 0\n      - type: strict-config\n",
            crate::support::hostile().display()
        ),
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    // Pointed at the key the schema error names, not only the assertion.
    assert!(run.stderr.contains("EVAL.yaml:7:9: error: test `a`, assertion `strict-config` (strict-config): config does not match the type's schema: at `/level`: 0 is less than the minimum of 1\n  --> at `tests[0].assertions[0].level`"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("config does not match the type's schema: \"level\" is a required property"),
        "{}",
        run.stderr
    );
}
