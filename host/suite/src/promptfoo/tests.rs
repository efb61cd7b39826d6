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
        "prompts: [file://p.py]\nproviders: [file://p.go]\ntests:\n  - vars: {a: 1}\n    assert: [{type: moderation}, {type: ruby, value: 'output.length > 2'}, {type: javascript, value: file://check.ts}]\n",
    )]);
    let text: Vec<String> = diags.0.iter().map(|d| d.message.clone()).collect();
    let all = text.join("\n");
    assert!(all.contains("prompt function"), "{all}");
    assert!(
        all.contains("the provider `file://p.go` is not run"),
        "{all}"
    );
    assert!(
        all.contains("assertion type `moderation`: it needs a moderation model"),
        "{all}"
    );
    assert!(all.contains("`ruby`: evalhost runs no Ruby"), "{all}");
    // A TypeScript file is bundled for the sandbox before the run; one that
    // is not there is said at its place.
    assert!(all.contains("`file://check.ts`: not found"), "{all}");
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

#[test]
fn assertion_values_from_files_are_read_as_promptfoo_reads_them() {
    let (suite, diags) = load(&[
        (
            "promptfooconfig.yaml",
            "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: a}\n    assert:\n      - {type: is-json, value: file://schema.json}\n      - {type: contains-any, value: file://words.yaml}\n      - {type: equals, value: 'file://answer.txt'}\n      - {type: contains-all, value: ['{{q}}', file://words.yaml]}\n      - {type: is-json, value: 'type: object'}\n      - {type: contains-json, value: '{{q}}: ['}\n",
        ),
        (
            "schema.json",
            r#"{"type": "object", "required": ["{{q}}"]}"#,
        ),
        ("words.yaml", "- one\n- '{{q}}'\n"),
        ("answer.txt", "\u{feff}  the answer\n\n"),
    ]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let t = &suite.unwrap().tests[0];
    let value = |i: usize| t.assertions[i].config["value"].clone();
    // Read as they are: never rendered.
    assert_eq!(value(0), json!({"type": "object", "required": ["{{q}}"]}));
    assert_eq!(value(1), json!(["one", "{{q}}"]));
    assert_eq!(value(2), json!("the answer"));
    assert_eq!(value(3), json!(["a", ["one", "{{q}}"]]));
    // A string schema goes through YAML, as promptfoo's loadYaml reads it.
    assert_eq!(
        t.assertions[4].config["__parsed_value"],
        json!({"type": "object"})
    );
    assert!(
        t.assertions[5].config["__parse_error"]
            .as_str()
            .unwrap()
            .starts_with("the schema is not YAML")
    );
}

#[test]
fn assertion_files_promptfoo_runs_or_cannot_read_are_refused() {
    let (_, diags) = load(&[
        (
            "promptfooconfig.yaml",
            "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: a}\n    assert:\n      - {type: equals, value: 'file://check.py:get_assert'}\n      - {type: equals, value: file://check.TS}\n      - {type: equals, value: file://notes.md}\n      - {type: equals, value: file://missing.json}\n      - {type: contains-any, value: [file://check.js]}\n",
        ),
        ("check.py", "def get_assert(o, c): return 'x'\n"),
        ("notes.md", "x"),
    ]);
    let all: Vec<String> = diags.0.iter().map(|d| d.message.clone()).collect();
    let all = all.join("\n");
    assert!(
        all.contains("promptfoo runs this Python file for the expected value, which needs the sandboxed Python runner"),
        "{all}"
    );
    assert!(
        all.contains("`file://check.TS`: promptfoo runs this JavaScript file"),
        "{all}"
    );
    assert!(
        all.contains("`file://notes.md`: promptfoo reads only .json, .yaml, .yml and .txt"),
        "{all}"
    );
    assert!(all.contains("missing.json"), "{all}");
    // A list's items are read, not run: a code file there is unsupported.
    assert!(
        all.contains("`file://check.js`: promptfoo reads only"),
        "{all}"
    );
    let keys: Vec<String> = diags
        .0
        .iter()
        .filter_map(|d| d.key.as_ref().map(ToString::to_string))
        .collect();
    assert!(
        keys.iter().any(|k| k.contains("assert[0].value")),
        "{keys:?}"
    );
}

#[test]
fn tool_call_types_get_the_provider_they_run_on() {
    let tools = "[{type: function, function: {name: get_weather, parameters: {type: object, required: ['{{field}}']}}}]";
    let config = format!(
        "prompts: ['{{{{q}}}}']\nproviders:\n  - echo\n  - id: 'exec:cat'\n    config: {{tools: file://tools.yaml}}\n  - id: 'file://p.py'\n    label: script\n    config:\n      tools: {tools}\n      functions: [{{name: f}}]\ntests:\n  - vars: {{q: a, field: city}}\n    assert:\n      - type: not-is-valid-openai-tools-call\n      - type: contains\n        value: a\n"
    );
    let (suite, diags) = load(&[
        ("promptfooconfig.yaml", &config),
        ("tools.yaml", "- {type: function, function: {name: t}}\n"),
        ("p.py", "def call_api(p, o, c): return {'output': p}\n"),
    ]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    assert!(
        diags
            .0
            .iter()
            .any(|d| d.message.contains("promptfoo ignores `not-`")),
        "{:?}",
        diags.0
    );
    let suite = suite.unwrap();
    // The providers differ: one test for each, run on it alone.
    assert_eq!(suite.tests.len(), 3);
    let on = |name: &str| {
        suite
            .tests
            .iter()
            .find(|t| t.targets.as_deref() == Some(&[name.to_owned()][..]))
            .unwrap()
    };
    assert_eq!(
        on("echo").assertions[0].config["__provider"],
        json!({"kind": "echo"})
    );
    assert_eq!(
        on("exec:cat").assertions[0].config["__provider"],
        json!({"kind": "exec", "tools": [{"type": "function", "function": {"name": "t"}}]})
    );
    let script = &on("script").assertions[0];
    assert_eq!(
        script.config["__provider"]["tools"][0]["function"]["parameters"]["required"],
        json!(["city"])
    );
    assert_eq!(script.config["__provider"]["kind"], "script");
    assert_eq!(
        script.config["__provider"]["functions"],
        json!([{"name": "f"}])
    );
    assert!(script.config_json.contains("__provider"));
    // Only the tool-call type gets it.
    assert!(on("echo").assertions[1].config.get("__provider").is_none());
    assert!(suite.tests.iter().all(|t| t.id == "test-1"));

    // The same provider for all: the test is not split.
    let (suite, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: a}\n    assert: [{type: is-valid-openai-function-call}]\n",
    )]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let suite = suite.unwrap();
    assert_eq!(suite.tests.len(), 1);
    assert!(suite.tests[0].targets.is_none());
    assert_eq!(
        suite.tests[0].assertions[0].config["__provider"],
        json!({"kind": "echo"})
    );
}

/// `$ref`s into the config (promptfoo's `assertionTemplates`) are the
/// values they point to; one that points nowhere is an error at its place.
#[test]
fn refs_to_assertion_templates_are_followed() {
    let (suite, d) = load(&[(
        "promptfooconfig.yaml",
        "assertionTemplates:\n  short: {type: javascript, value: 'output.length < 20'}\nprompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert:\n      - $ref: '#/assertionTemplates/short'\n      - {type: contains, value: hi}\n",
    )]);
    assert!(!d.has_errors(), "{:?}", d.0);
    let t = &suite.unwrap().tests[0];
    assert_eq!(t.assertions.len(), 2);
    assert!(
        t.assertions[0].config["value"] == "output.length < 20",
        "{:?}",
        t.assertions[0].config
    );
    let (_, d) = load(&[(
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert:\n      - $ref: '#/assertionTemplates/missing'\n",
    )]);
    let e =
        d.0.iter()
            .find(|x| x.message.contains("points to nothing"))
            .expect("an error");
    assert_eq!(e.pos.map(|p| p.line), Some(6), "{e:?}");
}

/// `$ref`s that refer to each other many times over (a "billion laughs"
/// of references) are refused, not expanded until memory runs out.
#[test]
fn refs_that_expand_exponentially_are_refused() {
    let mut yaml = String::from("l0: [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        yaml.push_str(&format!(
            "l{i}: [{}]\n",
            vec![format!("{{$ref: '#/l{}'}}", i - 1); 10].join(", ")
        ));
    }
    yaml.push_str("prompts: ['hi']\nproviders: [echo]\ntests:\n  - vars: {v: {$ref: '#/l9'}}\n");
    let (suite, d) = load(&[("promptfooconfig.yaml", &yaml)]);
    assert!(suite.is_none());
    assert!(
        d.0.iter()
            .any(|x| x.message.contains("expand it past 1000000 values")),
        "{:?}",
        d.0
    );
}

#[test]
fn nunjucks_for_loops_over_a_mapping_walk_its_pairs() {
    let (suite, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts:\n  - '{% for m in turns %}{% for role, text in m %}[{{role}}={{text}}]{% endfor %}{% endfor %}|{%- for a, b in pairs -%}{{a}}{{b}}{%- endfor -%}'\nproviders: [echo]\ntests:\n  - vars:\n      turns: [{user: hi}, {assistant: yo}]\n      pairs: [[1, 2], [3, 4]]\n",
    )]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let t = &suite.unwrap().tests[0];
    assert_eq!(
        t.prompt.as_ref().unwrap().raw,
        "[user=hi][assistant=yo]|1234",
        "a mapping's keys and values, as Nunjucks walks them; a list of pairs unpacked as before"
    );
}

#[test]
fn a_prompt_that_does_not_render_or_a_missing_var_file_errors_its_rows_only() {
    let (suite, diags) = load(&[
        (
            "promptfooconfig.yaml",
            "prompts:\n  - 'Broken {% if %}'\n  - 'Fine {{doc}}'\nproviders: [echo, echo]\ntests:\n  - vars: {doc: file://missing.txt}\n  - vars: {doc: file://here.txt}\n",
        ),
        ("here.txt", "present"),
    ]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let warnings: Vec<&str> = diags.0.iter().map(|d| d.message.as_str()).collect();
    // Said once each, not once per row; the duplicate provider once too.
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings.iter().any(|w| w.contains("does not render")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("missing.txt")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("listed twice")),
        "{warnings:?}"
    );
    let suite = suite.unwrap();
    let errors: Vec<(&str, Option<&str>)> = suite
        .tests
        .iter()
        .map(|t| (t.id.as_str(), t.input_error.as_deref()))
        .collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(
        errors[0].1.unwrap().starts_with("Template render error"),
        "{errors:?}"
    );
    assert!(errors[1].1.unwrap().contains("missing.txt"), "{errors:?}");
    assert!(
        errors[2].1.unwrap().starts_with("Template render error"),
        "{errors:?}"
    );
    assert_eq!(errors[3].1, None, "{errors:?}");
    assert_eq!(suite.tests[3].prompt.as_ref().unwrap().raw, "Fine present");
}

#[test]
fn test_options_and_prompt_config_change_the_providers_request() {
    let (suite, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts:\n  - raw: 'Hi {{x}}'\n    config: {temperature: 0.2, seed: 7}\nproviders:\n  - openai:gpt-4o-mini\n  - echo\ntests:\n  - vars: {x: a}\n  - vars: {x: b}\n    options: {temperature: 0.9}\n  - vars: {x: c}\n    options: {bogus_setting: 1}\n",
    )]);
    let text: Vec<&str> = diags.0.iter().map(|d| d.message.as_str()).collect();
    // The echo provider is told once that it takes no such settings; an
    // option no provider request takes is ignored, as promptfoo's provider
    // ignores it, and said at its line.
    assert_eq!(
        text.iter()
            .filter(|m| m.contains("takes no such settings"))
            .count(),
        2,
        "{text:?}"
    );
    let bogus: Vec<_> = diags
        .0
        .iter()
        .filter(|d| d.message.contains("bogus_setting"))
        .collect();
    assert!(
        bogus
            .iter()
            .any(|d| d.severity == crate::diag::Severity::Warning
                && d.key
                    .as_ref()
                    .is_some_and(|k| k.to_string().contains("tests[2].options"))),
        "{text:?}"
    );
    let _ = suite;
    let (suite, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts:\n  - raw: 'Hi {{x}}'\n    config: {temperature: 0.2, seed: 7}\nproviders: [openai:gpt-4o-mini]\ntests:\n  - vars: {x: a}\n  - vars: {x: b}\n    options: {temperature: 0.9}\n",
    )]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let suite = suite.unwrap();
    let entry =
        |i: usize| suite.tests[i].target_params.as_ref().unwrap()["openai:gpt-4o-mini"].clone();
    assert_eq!(entry(0)["temperature"], 0.2);
    assert_eq!(entry(0)["request_params"]["seed"], 7);
    // The test's option wins over the prompt's config.
    assert_eq!(entry(1)["temperature"], 0.9);
    assert_eq!(entry(1)["request_params"]["seed"], 7);
}

#[test]
fn csv_config_columns_set_the_threshold_of_their_assertion() {
    let (suite, diags) = load(&[
        (
            "promptfooconfig.yaml",
            "prompts: ['{{topic}}']\nproviders: [echo]\ntests: file://t.csv\n",
        ),
        (
            "t.csv",
            "topic,__expected1,__expected2,__config:__expected:threshold,__config:__expected2:threshold\nml,contains: ml,similar: ml,0.9,0.75\n",
        ),
    ]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let t = &suite.unwrap().tests[0];
    // `__expected` (unnumbered) is the first assertion made; the metadata
    // holds the last threshold written, as promptfoo's does.
    assert_eq!(t.assertions[0].config["threshold"], 0.9);
    assert_eq!(t.assertions[1].config["threshold"], 0.75);
    assert_eq!(t.metadata["threshold"], 0.75);
    let (_, diags) = load(&[
        (
            "promptfooconfig.yaml",
            "prompts: ['{{topic}}']\nproviders: [echo]\ntests: file://t.csv\n",
        ),
        (
            "t.csv",
            "topic,__expected,__config:__expected:weight\nml,contains: ml,2\n",
        ),
    ]);
    assert!(
        diags
            .0
            .iter()
            .any(|d| d.message.contains("Invalid config key \"weight\"")),
        "{:?}",
        diags.0
    );
}

#[test]
fn hosted_providers_are_targets_with_promptfoos_addresses() {
    let (suite, diags) = load(&[(
        "promptfooconfig.yaml",
        "env: {VERTEX_API_KEY: vk, AZURE_API_HOST: 'my.openai.azure.com/', AZURE_API_KEY: ak}\nprompts: ['{{q}}']\nproviders:\n  - vertex:gemini-2.0-flash\n  - id: vertex:gemini-2.5-pro\n    config: {region: global, temperature: 0.2, stopSequences: [X]}\n  - azure:chat:dep\n  - id: ollama:chat:llama3\n    config: {temperature: 0.1, format: json}\ntests:\n  - vars: {q: a}\n",
    )]);
    assert!(!diags.has_errors(), "{:?}", diags.0);
    let suite = suite.unwrap();
    let entry = |i: usize| &suite.inline_targets[i].entry;
    assert_eq!(
        entry(0)["base_url"],
        "https://us-central1-aiplatform.googleapis.com/v1/publishers/google"
    );
    assert_eq!(entry(0)["system_key"], "systemInstruction");
    assert_eq!(entry(0)["api_key"], "vk");
    assert_eq!(
        entry(1)["base_url"],
        "https://aiplatform.googleapis.com/v1/publishers/google"
    );
    assert_eq!(
        entry(1)["request_params"]["generationConfig"],
        json!({"stopSequences": ["X"], "temperature": 0.2})
    );
    assert_eq!(
        entry(2)["base_url"],
        "https://my.openai.azure.com/openai/deployments/dep"
    );
    assert_eq!(entry(2)["api_key_header"], "api-key");
    assert_eq!(entry(2)["name"], "azure:dep");
    // A key that is not an Ollama option is not sent, and said.
    assert_eq!(
        entry(3)["request_params"]["options"],
        json!({"temperature": 0.1})
    );
    assert!(
        diags.0.iter().any(|d| d
            .message
            .contains("`config.format` is not an Ollama option")),
        "{:?}",
        diags.0
    );
}

#[test]
fn hosted_providers_without_their_sign_in_are_refused_by_name() {
    let (_, diags) = load(&[(
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders:\n  - id: vertex:gemini-2.0-flash\n    config: {apiKey: k, credentials: file://sa.json}\n  - id: azure:chat:dep\n    config: {apiHost: h.example}\n  - azure:assistant:a1\n  - google:gemini-2.0-flash:embedding\ntests:\n  - vars: {q: a}\n",
    )]);
    let all = format!("{:?}", diags.0);
    assert!(all.contains("Google Cloud sign-in"), "{all}");
    assert!(all.contains("Entra ID"), "{all}");
    assert!(all.contains("`azure:assistant:a1` is not run"), "{all}");
    assert!(all.contains("google:<model>"), "{all}");
}

#[test]
fn an_openrouter_passthrough_that_is_no_object_is_refused() {
    let (_, diags) = load(&[(
        "promptfooconfig.yaml",
        "env: {OPENROUTER_API_KEY: k}\nprompts: ['{{q}}']\nproviders:\n  - id: openrouter:a/b\n    config: {transforms: [middle-out], passthrough: yes}\ntests:\n  - vars: {q: a}\n",
    )]);
    assert!(
        diags
            .0
            .iter()
            .any(|d| d.message.contains("`config.passthrough` must be an object")),
        "{:?}",
        diags.0
    );
}
