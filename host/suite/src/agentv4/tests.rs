//! The AgentV 4.42 reader's unit tests.

use super::suite::suite_name_from_file;
use super::*;
use crate::load::load_with;
use serde_json::json;

fn load_str(text: &str) -> (Option<Suite>, Diagnostics) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("EVAL.yaml");
    std::fs::write(&path, text).unwrap();
    let roots = Roots::for_eval(&path);
    let (suite, diags) = load_with(Path::new(&path), roots, Env::default(), false);
    // Show diagnostics relative to the file name only.
    let diags = Diagnostics(
        diags
            .0
            .into_iter()
            .map(|mut d| {
                d.file = PathBuf::from(d.file.file_name().unwrap());
                d
            })
            .collect(),
    );
    (suite, diags)
}

#[test]
fn suite_assertions_follow_the_tests_own_unless_skip_defaults() {
    let (suite, diags) = load_str(
        "assertions:\n  - type: is_json\ntests:\n  - id: a\n    input: hi\n    assertions:\n      - type: contains\n        value: x\n  - id: b\n    input: hi\n    execution:\n      skip_defaults: true\n    assertions:\n      - type: not-contains\n        value: y\n",
    );
    assert!(!diags.has_errors(), "{diags:?}");
    let suite = suite.unwrap();
    let kinds: Vec<_> = suite.tests[0]
        .assertions
        .iter()
        .map(|a| (a.kind.as_ref(), a.negate))
        .collect();
    assert_eq!(kinds, [("contains", false), ("is-json", false)]);
    let b = &suite.tests[1].assertions;
    assert_eq!(b.len(), 1);
    assert_eq!(
        (b[0].kind.as_ref(), b[0].negate, b[0].name.as_ref()),
        ("contains", true, "not-contains-y")
    );
}

#[test]
fn names_weights_and_strings_follow_agentv() {
    let (suite, diags) = load_str(
        "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: regex\n        value: \"0123456789012345678901234567890123\"\n        weight: 2\n      - Be polite\n      - type: contains_any\n        value: [a, b]\n      - Be brief\n",
    );
    assert!(!diags.has_errors(), "{diags:?}");
    let a = &suite.unwrap().tests[0].assertions;
    assert_eq!(&*a[0].name, "regex-012345678901234567890123456789");
    assert_eq!(a[0].weight, 2.0);
    assert_eq!((a[1].kind.as_ref(), a[1].weight), ("rubrics", 2.0));
    assert_eq!(&*a[2].name, "contains-any-2");
}

#[test]
fn mistakes_are_all_reported_with_lines() {
    let (_, diags) = load_str(
        "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: contains\n        weight: -1\n  - id: a\n    input: hi\n    asertions: []\n  - input: x\n",
    );
    let all = diags
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        all.contains("EVAL.yaml:6:9: error: `weight` must be a number ≥ 0, got number -1"),
        "{all}"
    );
    assert!(all.contains("duplicate test id `a`: also used at"), "{all}");
    assert!(all.contains("warning: unknown key `asertions`"), "{all}");
    assert!(all.contains("did you mean `assertions`?"), "{all}");
    assert!(all.contains("the test case has no `id`"), "{all}");
}

#[test]
fn double_negation_is_an_error() {
    let (_, diags) = load_str(
        "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: not-contains\n        negate: true\n        value: x\n",
    );
    assert!(
        diags.iter().any(|d| d.message.contains("negate it twice")),
        "{diags:?}"
    );
}

#[test]
fn merge_keys_apply() {
    let (suite, diags) = load_str(
        "x-defaults: &d\n  input: shared\n  assertions: [{type: is-json}]\ntests:\n  - <<: *d\n    id: one\n",
    );
    assert!(!diags.has_errors(), "{diags:?}");
    assert_eq!(suite.unwrap().tests[0].input[0].content, "shared");
}

#[test]
fn suite_names_come_from_the_file() {
    assert_eq!(suite_name_from_file(Path::new("a/EVAL.yaml")), "EVAL");
    assert_eq!(suite_name_from_file(Path::new("foo.eval.yaml")), "foo");
}

#[test]
fn vars_substitute_whole_values_and_leave_missing_ones() {
    let vars = json!({"q": "capital", "n": {"k": 1}, "deep": {"a": {"b": "x"}}});
    let vars = vars.as_object().unwrap();
    assert_eq!(
        substitute_vars(&json!("What is the {{ q }}?"), vars),
        json!("What is the capital?")
    );
    assert_eq!(substitute_vars(&json!("{{n}}"), vars), json!({"k": 1}));
    assert_eq!(
        substitute_vars(&json!("n={{ n }}"), vars),
        json!("n={\"k\":1}")
    );
    assert_eq!(substitute_vars(&json!("{{ deep.a.b }}"), vars), json!("x"));
    assert_eq!(
        substitute_vars(&json!("{{ missing }} ${{ ENV }}"), vars),
        json!("{{ missing }} ${{ ENV }}")
    );
}

#[test]
fn a_discovered_case_gets_its_workspace_directory_unless_it_sets_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("EVAL.yaml"),
        "assertions: [{type: is-json}]\ntests: ./cases/\n",
    )
    .unwrap();
    for (name, case) in [
        ("with-dir", "input: q\n"),
        ("explicit", "input: q\nworkspace: {template: ./elsewhere}\n"),
    ] {
        std::fs::create_dir_all(root.join("cases").join(name).join("workspace")).unwrap();
        std::fs::write(root.join("cases").join(name).join("case.yaml"), case).unwrap();
    }
    std::fs::create_dir_all(root.join("cases/plain")).unwrap();
    std::fs::create_dir_all(root.join("elsewhere")).unwrap();
    std::fs::write(root.join("cases/plain/case.yaml"), "input: q\n").unwrap();
    let eval = root.join("EVAL.yaml");
    let (suite, diags) = load_with(&eval, Roots::for_eval(&eval), Env::default(), false);
    assert!(!diags.has_errors(), "{diags:?}");
    let suite = suite.unwrap();
    let ids: Vec<&str> = suite.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["explicit", "plain", "with-dir"]);
    let template = |i: usize| {
        suite.tests[i]
            .workspace
            .as_ref()
            .and_then(|w| w.template.clone())
    };
    assert!(
        template(0).is_some_and(|t| t.ends_with("elsewhere")),
        "{:?}",
        template(0)
    );
    assert_eq!(suite.tests[1].workspace, None);
    let template = template(2).unwrap().display().to_string();
    assert!(template.ends_with("cases/with-dir/workspace"), "{template}");
}

#[test]
fn metadata_merges_as_agentv_does() {
    let mut test = json!({"tags": ["b", "c"], "level": "hard", "nested": {"x": 1}})
        .as_object()
        .unwrap()
        .clone();
    let suite = json!({"tags": ["a", "b"], "level": "easy", "nested": {"y": 2}, "team": "core"});
    merge_metadata(&mut test, suite.as_object().unwrap());
    assert_eq!(
        Value::Object(test),
        json!({"tags": ["a", "b", "c"], "level": "hard", "nested": {"x": 1, "y": 2}, "team": "core"})
    );
}

#[test]
fn a_dollar_written_as_an_escape_still_interpolates() {
    // The loader skips the `${{ VAR }}` walk for a file without a `$`; a
    // `$` spelled `\x24` or `\u0024` in a double-quoted string counts.
    for spelled in ["$", "\\x24", "\\u0024", "\\U00000024"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("EVAL.yaml");
        std::fs::write(
            &path,
            format!("tests:\n  - id: a\n    input: \"{spelled}{{{{ WHO }}}}\"\n    criteria: x\n"),
        )
        .unwrap();
        let env = Env::from_pairs([("WHO", "world")]);
        let (suite, diags) = load_with(&path, Roots::for_eval(&path), env, false);
        assert!(!diags.has_errors(), "{spelled}: {diags:?}");
        let input = &suite.unwrap().tests[0].input;
        assert_eq!(input[0].content, "world", "{spelled}");
    }
}

#[test]
fn a_key_that_only_holds_anchors_the_file_uses_is_not_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let suite = "defaults:\n  prompt: &p \"Classify the incident into P0, P1, P2 or P3.\"\ntests:\n  - id: t\n    input: [{role: system, content: *p}, {role: user, content: hi}]\n    assertions: [{type: contains, value: P0}]\n";
    std::fs::write(dir.path().join("EVAL.yaml"), suite).unwrap();
    let (_, diags) = crate::load(&dir.path().join("EVAL.yaml"));
    assert!(diags.0.is_empty(), "{:?}", diags.0);
    // Unused, it is an unknown key like any other.
    let unused = suite.replace("content: *p}", "content: other}");
    std::fs::write(dir.path().join("EVAL.yaml"), unused).unwrap();
    let (_, diags) = crate::load(&dir.path().join("EVAL.yaml"));
    assert!(
        diags
            .0
            .iter()
            .any(|d| d.message.contains("unknown key `defaults`")),
        "{:?}",
        diags.0
    );
}
