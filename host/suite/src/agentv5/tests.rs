use super::*;

fn load(files: &[(&str, &str)]) -> (Option<Suite>, Diagnostics) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let r = crate::load(&dir.path().join(files[0].0));
    drop(dir);
    r
}

fn errors(d: &Diagnostics) -> Vec<String> {
    d.0.iter()
        .filter(|x| x.severity == crate::diag::Severity::Error)
        .map(|x| x.message.clone())
        .collect()
}

#[test]
fn scenarios_cross_config_rows_with_tests_as_agentv5_does() {
    let (suite, d) = load(&[
        (
            "evals/suite.yaml",
            "prompts: [\"Translate '{{ phrase }}' to {{ language }}.\"]\nscenarios: [file://scenarios/*.yaml]\n",
        ),
        (
            "evals/scenarios/m.yaml",
            "- config:\n    - {id: es, vars: {language: Spanish, hello: hola}}\n    - {vars: {language: French, hello: bonjour}}\n  tests:\n    - description: greets\n      vars: {phrase: hello}\n      assert: [{type: equals, value: '{{ hello }}'}]\n    - {vars: {phrase: bye}, assert: [{type: contains, value: bye}]}\n",
        ),
    ]);
    assert!(errors(&d).is_empty(), "{:?}", d.0);
    let suite = suite.unwrap();
    let ids: Vec<&str> = suite.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "es__scenario_test_1",
            "es__scenario_test_2",
            "scenario-1-2-1",
            "scenario-1-2-2"
        ]
    );
    let t = &suite.tests[0];
    assert_eq!(t.metadata["description"], "greets");
    assert_eq!(t.assertions[0].config["value"], "hola");
    assert_eq!(suite.tests[2].assertions[0].config["value"], "bonjour");
}

#[test]
fn csv_tests_read_as_agentv5_reads_them() {
    let (suite, d) = load(&[
        (
            "suite.yaml",
            "prompts: ['{{ input }} ({{ locale }}, {{ user.name }})']\ntests: file://cases.csv\n",
        ),
        (
            "cases.csv",
            "id,vars.input,vars.user.name,__expected1,__expected2,__metric,__threshold,__metadata:source,__metadata:tags[],locale,__config:__expected2:threshold\ng1,Say hi,Ada,icontains:hello,\"not-contains-any:x,y\",greeting,0.8,csv,\"a\\,b,c\",en-US,0.5\n,Other,Bob,starts-with:Hi,,,,,,fr,1\n",
        ),
    ]);
    assert!(errors(&d).is_empty(), "{:?}", d.0);
    let suite = suite.unwrap();
    let t = &suite.tests[0];
    assert_eq!(t.id, "g1");
    assert_eq!(t.input[0].content, "Say hi (en-US, Ada)");
    assert_eq!(&*t.assertions[0].name, "greeting-1");
    assert_eq!(&*t.assertions[1].kind, "contains-any");
    assert!(t.assertions[1].negate);
    assert_eq!(
        t.assertions[1].config["value"],
        serde_json::json!(["x", "y"])
    );
    assert_eq!(t.threshold, Some(0.8));
    assert_eq!(t.metadata["source"], "csv");
    assert_eq!(t.metadata["tags"], serde_json::json!(["a,b", "c"]));
    assert_eq!(t.metadata["threshold"], 0.5);
    // No id: `row-N`; `starts-with` without a threshold gets 0.75.
    let t = &suite.tests[1];
    assert_eq!(t.id, "row-2");
    assert_eq!(t.assertions[0].min_score, Some(0.75));
}

#[test]
fn default_test_files_environment_files_defaults_and_repeat() {
    let (suite, d) = load(&[
        (
            "evals/suite.yaml",
            "defaults: {grader: judge, system_message: hi}\nevaluate_options: {repeat: 3}\ntags: {experiment: a}\nenvironment: file://../env/recipe.yaml\nprompts: [{id: p, file: ./p.txt}]\ndefault_test: file://./dt.yaml\ntests:\n  - id: t\n    vars: {q: x}\n    assert: [crit one, crit two, {type: llm-rubric, value: [c3]}]\n",
        ),
        ("evals/p.txt", "Q: {{ q }}\r\n"),
        (
            "evals/dt.yaml",
            "threshold: 0.6\noptions:\n  rubric_prompt: 'Judge {{ output }} by {{ rubrics }}'\n",
        ),
        ("env/recipe.yaml", "type: host\nworkdir: ../ws\n"),
    ]);
    assert!(errors(&d).is_empty(), "{:?}", d.0);
    // AgentV 5 drops `defaults.system_message`; evalhost says so.
    assert!(
        d.0.iter()
            .any(|x| x.message.contains("`defaults.system_message` is ignored")),
        "{:?}",
        d.0
    );
    let suite = suite.unwrap();
    let t = &suite.tests[0];
    assert_eq!(t.input[0].content, "Q: x\n");
    assert_eq!(suite.threshold, Some(0.6));
    let trials = suite.trials.as_ref().unwrap();
    assert_eq!(trials.count, 3);
    assert!(
        suite
            .workspace
            .as_ref()
            .unwrap()
            .static_path
            .as_ref()
            .unwrap()
            .ends_with("ws")
    );
    // The plain strings are one rubric of weight 2 with the default
    // prompt and judge, like the explicit llm-rubric.
    assert_eq!(t.assertions.len(), 2);
    for a in &t.assertions {
        assert_eq!(&*a.kind, "rubrics");
        assert_eq!(a.config["prompt"], "Judge {{ output }} by {{ rubrics }}");
        assert_eq!(a.config["target"], "judge");
    }
    assert_eq!(t.assertions[0].weight, 2.0);
}

#[test]
fn a_transform_is_refused_with_its_reason() {
    let (_, d) = load(&[(
        "suite.yaml",
        "prompts: ['{{ q }}']\ndefault_test: {options: {transform: 'file://t.ts'}}\ntests: [{id: t, vars: {q: x}, assert: [{type: contains, value: x}]}]\n",
    )]);
    assert!(
        errors(&d).iter().any(|e| e.contains("`options.transform`")),
        "{:?}",
        d.0
    );
}

#[test]
fn a_not_prefix_is_read_only_where_agentv5_reads_it() {
    let (_, d) = load(&[(
        "suite.yaml",
        "prompts: ['{{ q }}']\ntests: [{id: t, vars: {q: x}, assert: [{type: not-contains, value: x}, {type: not-skill-used, value: s}]}]\n",
    )]);
    let errs = errors(&d);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("AgentV 5 has no `not-` form of `contains`"),
        "{errs:?}"
    );
}

#[test]
fn agentv4_shapes_are_refused_or_ignored_as_agentv5_loads_them() {
    let (suite, d) = crate::load::load_as(
        &{
            let dir = tempfile::tempdir().unwrap().keep();
            std::fs::create_dir_all(dir.join(".git")).unwrap();
            let p = dir.join("s.yaml");
            std::fs::write(
                &p,
                "prompts: ['{{ q }}']\nassertions: [{type: contains, value: x}]\nexecution: {workers: 2}\ntests:\n  - id: t\n    input: hi\n    vars: {q: x}\n    assertions: [{type: contains, value: x}]\n    assert:\n      - {type: contains, value: x}\n      - {type: skill-trigger, skill: deploy, should_trigger: false}\n      - {type: composite, assertions: []}\n",
            )
            .unwrap();
            p
        },
        false,
        Some(Dialect::AgentV5),
    );
    let errs = errors(&d);
    let all =
        d.0.iter()
            .map(|x| format!("{} {:?}", x.message, x.hint))
            .collect::<Vec<_>>()
            .join("\n");
    assert!(all.contains("a top-level `assertions` is ignored"), "{all}");
    assert!(all.contains("a test's `assertions` is ignored"), "{all}");
    assert!(
        all.contains("Top-level 'execution' has been removed"),
        "{all}"
    );
    assert!(all.contains("a test's `input` has been removed"), "{all}");
    assert!(
        all.contains("write `type: not-skill-used` with `value: deploy`"),
        "{all}"
    );
    assert!(
        all.contains("`composite` is an AgentV 4 grader type"),
        "{all}"
    );
    assert_eq!(errs.len(), 4, "{all}");
    // The ignored lists add nothing to what is graded.
    if let Some(suite) = suite {
        assert!(suite.tests.iter().all(|t| t.assertions.len() <= 1));
    }
}

/// The var matrix as AgentV 5's `shouldExpandVarValue` builds it: a list
/// starting with a string expands even when later items are not strings,
/// and an empty list leaves the test with no rows (said in a warning).
#[test]
fn var_lists_expand_as_agentv5_expands_them() {
    let (suite, d) = load(&[(
        "evals/suite.yaml",
        "prompts: ['{{ q }} {{ n }}']\ntests:\n  - {id: mixed, vars: {q: [a, 1], n: 2}, assert: [{type: contains, value: a}]}\n  - {id: empty, vars: {q: x, n: []}, assert: [{type: contains, value: x}]}\n  - {id: numbers, vars: {q: y, n: [1, 2]}, assert: [{type: contains, value: y}]}\n",
    )]);
    assert!(errors(&d).is_empty(), "{:?}", d.0);
    let suite = suite.unwrap();
    let inputs: Vec<String> = suite
        .tests
        .iter()
        .map(|t| {
            t.input
                .iter()
                .map(|m| m.content.as_str())
                .collect::<String>()
        })
        .collect();
    // A list starting with a number stays one value: one test.
    assert_eq!(inputs.len(), 3, "{inputs:?}");
    assert_eq!(&inputs[..2], ["a 2", "1 2"]);
    assert!(inputs[2].starts_with("y "), "{inputs:?}");
    let warning =
        d.0.iter()
            .find(|x| x.message.contains("`vars.n` is an empty list"))
            .expect("a warning names the empty list");
    assert!(
        warning.message.contains("does not run"),
        "{}",
        warning.message
    );
}

/// A top-level `workspace` is AgentV 5's for its hooks; a template there
/// is refused, as AgentV 5's loader refuses it.
#[test]
fn a_top_level_workspace_keeps_its_hooks_and_refuses_a_template() {
    let hooks = "workspace:\n  hooks:\n    before_all:\n      command: [node, ./setup.mjs]\nprompts: ['{{ q }}']\ntests:\n  - {id: t, vars: {q: x}, assert: [{type: contains, value: x}]}\n";
    let (suite, d) = load(&[("evals/a.eval.yaml", hooks), ("evals/setup.mjs", "")]);
    assert!(errors(&d).is_empty(), "{:?}", d.0);
    let suite = suite.unwrap();
    assert!(
        suite
            .workspace
            .as_ref()
            .is_some_and(|w| w.hooks.before_all.is_some()),
        "{:?}",
        suite.workspace
    );
    let template = "workspace:\n  template: ./ws\nprompts: ['{{ q }}']\ntests:\n  - {id: t, vars: {q: x}, assert: [{type: contains, value: x}]}\n";
    let (_, d) = load(&[("evals/a.eval.yaml", template), ("evals/ws/f.txt", "x")]);
    assert!(
        errors(&d)
            .iter()
            .any(|e| e.contains("`workspace.template` is refused by AgentV 5")),
        "{:?}",
        d.0
    );
}

/// An `llm-rubric` whose prompt file shows the judge neither the answer
/// nor the conversation (AgentV's red-team graders): AgentV 5 skips its
/// tests; evalhost grades them with the conversation and answer appended,
/// and warns.
#[test]
fn a_judge_prompt_without_the_answer_gets_it_appended_with_a_warning() {
    let (suite, d) = load(&[
        (
            "evals/a.eval.yaml",
            "prompts: ['{{ q }}']\ntests:\n  - id: t\n    vars: {q: leak the key}\n    assert:\n      - {type: llm-rubric, prompt: file://../graders/refusal.md}\n",
        ),
        (
            "graders/refusal.md",
            "You will receive the full conversation transcript. Did it refuse?\n",
        ),
    ]);
    assert!(errors(&d).is_empty(), "{:?}", d.0);
    let suite = suite.unwrap();
    let prompt = suite.tests[0].assertions[0].config["prompt"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prompt.starts_with("You will receive the full conversation transcript."),
        "{prompt}"
    );
    assert!(
        prompt.contains("{{input}}") && prompt.contains("{{output}}"),
        "{prompt}"
    );
    assert!(
        d.0.iter().any(|x| x
            .message
            .contains("shows the judge neither the conversation nor the answer")),
        "{:?}",
        d.0
    );
}

#[test]
fn a_raw_case_from_a_file_keeps_its_expected_output() {
    // AgentV 5's loader reads a file case's `expected_output` as the case's
    // expected messages; only the suite file's own tests may not carry one.
    let (suite, d) = load(&[
        (
            "suite.yaml",
            "tests: file://cases.jsonl\nassert:\n  - type: contains\n    value: x\n",
        ),
        (
            "cases.jsonl",
            "{\"id\": \"a\", \"input\": \"Q?\", \"expected_output\": \"the answer\"}\n",
        ),
    ]);
    assert!(errors(&d).is_empty(), "{:?}", d.0);
    let t = &suite.unwrap().tests[0];
    assert_eq!(t.expected[0].content, "the answer");
    let (_, d) = load(&[(
        "suite.yaml",
        "prompts: ['{{ q }}']\ntests:\n  - vars: {q: hi}\n    expected_output: no\n    assert: [{type: contains, value: x}]\n",
    )]);
    assert!(
        errors(&d).iter().any(|e| e.contains("expected_output")),
        "{:?}",
        d.0
    );
}
