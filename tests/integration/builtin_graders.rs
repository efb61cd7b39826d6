//! Every built-in grader through the real path: suite → host → wasm plugin →
//! result row. The graders' own unit tests cover the logic natively; these
//! prove the compiled components grade the same way inside the sandbox.

use crate::support::{Project, score};

/// (test id, assertion in YAML flow style, expected score, expected check text)
type Case<'a> = (&'a str, &'a str, f64, &'a str);

fn check(response: &str, cases: &[Case<'_>]) {
    let project = Project::with_mock(response);
    let mut suite = String::from("tests:\n");
    for (id, assertion, _, _) in cases {
        suite.push_str(&format!(
            "  - id: {id}\n    input: q\n    assertions:\n      - {assertion}\n"
        ));
    }
    project.write("EVAL.yaml", &suite);
    let run = project.run(&[]);
    assert!(
        run.code == 0 || run.code == 1,
        "exit {}:\n{}",
        run.code,
        run.stderr
    );
    for (id, _, expected_score, expected_text) in cases {
        let row = project.row(id);
        let s = &row["scores"][0];
        assert_eq!(s["score"], *expected_score, "{id}: {s}");
        assert_eq!(s["assertions"][0]["text"], *expected_text, "{id}: {s}");
        let verdict = if *expected_score >= 0.8 {
            "pass"
        } else {
            "fail"
        };
        assert_eq!(s["verdict"], verdict, "{id}");
    }
}

#[test]
fn contains_family() {
    check(
        "  The capital of France is Paris. Grüße aus Köln ✓  ",
        &[
            (
                "contains-pass",
                "{type: contains, value: Paris}",
                1.0,
                "Output contains \"Paris\"",
            ),
            (
                "contains-fail",
                "{type: contains, value: paris}",
                0.0,
                "Output does not contain \"paris\"",
            ),
            (
                "icontains-unicode",
                "{type: icontains, value: KÖLN}",
                1.0,
                "Output contains \"KÖLN\" (case-insensitive)",
            ),
            (
                "any-first-match",
                "{type: contains-any, value: [Lyon, Köln, Paris]}",
                1.0,
                "Output contains \"Köln\"",
            ),
            (
                "any-none",
                "{type: contains-any, value: [Lyon, Nice]}",
                0.0,
                "Output does not contain any of: \"Lyon\", \"Nice\"",
            ),
            (
                "all-pass",
                "{type: contains-all, value: [Paris, ✓]}",
                1.0,
                "Output contains all 2 expected strings",
            ),
            (
                "all-missing",
                "{type: contains_all, value: [Paris, Lyon, Nice]}",
                0.0,
                "Output missing: \"Lyon\", \"Nice\"",
            ),
            (
                "iany",
                "{type: icontains-any, value: [PARIS]}",
                1.0,
                "Output contains \"PARIS\" (case-insensitive)",
            ),
            (
                "iall",
                "{type: icontains-all, value: [paris, lyon]}",
                0.0,
                "Output missing (case-insensitive): \"lyon\"",
            ),
            (
                "starts",
                "{type: starts-with, value: The capital}",
                1.0,
                "Output starts with \"The capital\"",
            ),
            (
                "ends",
                "{type: ends_with, value: Köln ✓}",
                1.0,
                "Output ends with \"Köln ✓\"",
            ),
            (
                "ends-fail",
                "{type: ends-with, value: Paris.}",
                0.0,
                "Output does not end with \"Paris.\"",
            ),
            (
                "equals-fail",
                "{type: equals, value: Paris}",
                0.0,
                "Output does not equal \"Paris\"",
            ),
            (
                "not-contains",
                "{type: not-contains, value: Berlin}",
                1.0,
                "Output does not contain \"Berlin\"",
            ),
            (
                "negate-true",
                "{type: contains, value: Paris, negate: true}",
                0.0,
                "Output contains \"Paris\"",
            ),
        ],
    );
}

#[test]
fn equals_regex_and_json() {
    check(
        "\n  {\"answer\": 42, \"unit\": \"m\"}  \n",
        &[
            (
                "equals-trimmed",
                "{type: equals, value: '{\"answer\": 42, \"unit\": \"m\"}'}",
                1.0,
                "Output equals \"{\"answer\": 42, \"unit\": \"m\"}\"",
            ),
            ("is-json", "{type: is-json}", 1.0, "Output is valid JSON"),
            (
                "not-is-json",
                "{type: not-is_json}",
                0.0,
                "Output is valid JSON",
            ),
            (
                "regex",
                "{type: regex, value: '\"answer\":\\s*\\d+'}",
                1.0,
                "Output matches pattern /\"answer\":\\s*\\d+/",
            ),
            (
                "regex-flags",
                "{type: regex, value: '\"UNIT\"', flags: i}",
                1.0,
                "Output matches pattern /\"UNIT\"/i (flags: i)",
            ),
            (
                "regex-lookbehind",
                "{type: regex, value: '(?<=answer\": )4\\d'}",
                1.0,
                "Output matches pattern /(?<=answer\": )4\\d/",
            ),
            (
                "regex-miss",
                "{type: regex, value: '^\\d+$'}",
                0.0,
                "Output does not match pattern /^\\d+$/",
            ),
        ],
    );
}

#[test]
fn empty_output() {
    check(
        "",
        &[
            (
                "contains",
                "{type: contains, value: x}",
                0.0,
                "Output does not contain \"x\"",
            ),
            (
                "is-json",
                "{type: is-json}",
                0.0,
                "Output is not valid JSON",
            ),
            (
                "regex-empty",
                "{type: regex, value: '^$'}",
                1.0,
                "Output matches pattern /^$/",
            ),
            (
                "not-contains",
                "{type: not-contains, value: x}",
                1.0,
                "Output does not contain \"x\"",
            ),
        ],
    );
}

#[test]
fn huge_output_is_graded_in_the_sandbox() {
    let response = format!("{}NEEDLE", "lorem ipsum ".repeat(400_000));
    let project = Project::with_mock(&response);
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: big\n    input: q\n    assertions:\n      - {type: contains, value: NEEDLE}\n      - {type: regex, value: 'NEEDLE$'}\n      - {type: icontains, value: needle}\n",
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let row = project.row("big");
    for name in ["contains-NEEDLE", "regex-NEEDLE$", "icontains-needle"] {
        assert_eq!(score(&row, name)["score"], 1.0, "{name}");
    }
}
