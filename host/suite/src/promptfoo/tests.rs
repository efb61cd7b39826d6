use super::*;

fn load(files: &[(&str, &str)]) -> (Option<Suite>, Diagnostics) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let path = dir.path().join(files[0].0);
    let r = crate::load(&path);
    drop(dir);
    r
}

#[test]
fn prompts_times_vars_times_providers() {
    let (suite, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts:\n  - 'Say {{word}}'\n  - 'Shout {{word | upper}}'\nproviders: [echo]\ndefaultTest:\n  assert: [{type: contains, value: '{{word}}'}]\ntests:\n  - vars: {word: [hi, yo]}\n    assert: [{type: icontains, value: SAY, weight: 2}]\n  - description: solo\n    vars: {word: ok}\n    threshold: 0.5\n",
    )]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let suite = suite.unwrap();
    assert_eq!(suite.dialect, Dialect::Promptfoo);
    let ids: Vec<&str> = suite.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "test-1 #1 @prompt-1",
            "test-1 #1 @prompt-2",
            "test-1 #2 @prompt-1",
            "test-1 #2 @prompt-2",
            "solo @prompt-1",
            "solo @prompt-2"
        ]
    );
    let t = &suite.tests[1];
    assert_eq!(t.prompt.as_ref().unwrap().raw, "Shout HI");
    // defaultTest's assertion first, rendered with the vars.
    assert_eq!(t.assertions[0].config["value"], "hi");
    assert_eq!(t.assertions[1].weight, 2.0);
    assert_eq!(
        t.assertions[1].plugin_type.as_deref(),
        Some("promptfoo-icontains")
    );
    assert_eq!(t.pass_rule, PassRule::AllPass);
    assert_eq!(suite.tests[4].pass_rule, PassRule::WeightedMean);
    assert_eq!(suite.tests[4].threshold, Some(0.5));
    assert_eq!(suite.matrix[0].name, "echo");
}

#[test]
fn what_is_not_run_yet_is_an_error_at_its_place() {
    let (_, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts: [file://p.py]\nproviders: [file://p.go]\ntests:\n  - vars: {a: 1}\n    assert: [{type: llm-rubric, value: good}, {type: javascript, value: 'output.length > 2'}]\n",
    )]);
    let text: Vec<String> = diags.0.iter().map(|d| d.message.clone()).collect();
    let all = text.join("\n");
    assert!(all.contains("prompt function"), "{all}");
    assert!(
        all.contains("the provider `file://p.go` is not run"),
        "{all}"
    );
    assert!(all.contains("`llm-rubric`: model-graded"), "{all}");
    assert!(all.contains("`javascript`: code assertions"), "{all}");
}

#[test]
fn csv_tests_read_expected_columns() {
    let (suite, diags) = load(&[
        (
            "promptfooconfig.yaml",
            "prompts: ['{{q}}']\nproviders: [echo]\ntests: file://cases.csv\n",
        ),
        (
            "cases.csv",
            "q,__expected,__description\nhello world,contains:hello,greets\n\"a, b\",not-icontains:Z,\n",
        ),
    ]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let suite = suite.unwrap();
    assert_eq!(suite.tests[0].id, "greets");
    assert_eq!(suite.tests[1].id, "Row #2");
    assert_eq!(suite.tests[1].prompt.as_ref().unwrap().raw, "a, b");
    let a = &suite.tests[1].assertions[0];
    assert_eq!(
        (&*a.kind, &*a.name, a.negate),
        ("icontains", "not-icontains", false)
    );
    assert_eq!(a.config["inverse"], true);
}

#[test]
fn prompt_files_split_on_separator_lines() {
    let (suite, diags) = load(&[
        (
            "promptfooconfig.yaml",
            "prompts: [file://prompts.txt]\nproviders: [echo]\ntests:\n  - vars: {x: 1}\n",
        ),
        ("prompts.txt", "First {{x}}\n---\nSecond {{x}}\n"),
    ]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let raws: Vec<String> = suite
        .unwrap()
        .tests
        .iter()
        .map(|t| t.prompt.as_ref().unwrap().raw.clone())
        .collect();
    assert_eq!(raws, ["First 1", "Second 1"]);
}

#[test]
fn derived_metrics_read_only_known_names_and_arithmetic() {
    let (suite, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\nderivedMetrics:\n  - {name: rate, value: 'hits / __count'}\n  - {name: twice, value: 'rate * 2'}\ntests:\n  - vars: {q: a}\n    assert: [{type: contains, value: a, metric: hits}]\n",
    )]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let suite = suite.unwrap();
    assert_eq!(suite.named_metrics, ["hits"]);
    let names: Vec<&str> = suite
        .derived_metrics
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(names, ["rate", "twice"]);
    let (_, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\nderivedMetrics:\n  - {name: rate, value: 'hitz / __count'}\n  - {name: odd, value: 'hits ? 1 : 0'}\n  - {name: fn, value: 42}\ntests:\n  - vars: {q: a}\n    assert: [{type: contains, value: a, metric: hits}]\n",
    )]);
    let all: Vec<String> = diags
        .0
        .iter()
        .map(|d| format!("{} {:?}", d.message, d.hint))
        .collect();
    let all = all.join("\n");
    assert!(
        all.contains("`hitz` is not a metric of this config"),
        "{all}"
    );
    assert!(all.contains("did you mean `hits`?"), "{all}");
    assert!(all.contains("`?` is not part of the arithmetic"), "{all}");
    assert!(all.contains("a JavaScript function is not run"), "{all}");
}
