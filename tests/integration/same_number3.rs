//! Same file, same number, round three (issue 48): each finding of
//! `../shared/reference/trial-4.md` and `code-review-4.md` that changed a
//! number or a verdict silently, as a user meets it; each failed on
//! `a33e0c7`.

use crate::support::{Project, run_in};

fn run_config(project: &Project, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["run", "promptfooconfig.yaml", "-o", "out"];
    args.extend_from_slice(extra);
    run_in(project.path(), &args)
}

fn outputs(project: &Project) -> Vec<String> {
    project
        .rows()
        .iter()
        .map(|r| r["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Item 1: a boolean var prints `true`, a whole float `1` — a JSON prompt
/// built from vars is JSON, as in promptfoo (2/2 there; 0/2 before).
#[test]
fn template_values_print_as_nunjucks_prints_them() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        r#"prompts: ['Return this JSON exactly: {"sku": "{{ sku }}", "in_stock": {{ in_stock }}, "qty": {{ qty }}}']
providers: [echo]
tests:
  - {description: in stock, vars: {sku: W-1, in_stock: true, qty: 3}, assert: [{type: contains-json}]}
  - {description: floats, vars: {sku: W-2, in_stock: false, qty: 2.0}, assert: [{type: contains-json}, {type: contains, value: '"qty": 2}'}]}
"#,
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let out = outputs(&project);
    assert!(
        out.iter()
            .any(|o| o.contains(r#""in_stock": true, "qty": 3"#)),
        "{out:?}"
    );
    assert!(
        out.iter()
            .any(|o| o.contains(r#""in_stock": false, "qty": 2}"#)),
        "{out:?}"
    );

    project.write(
        "promptfooconfig.yaml",
        "prompts: ['Set temperature to {{ temperature }} and version {{ version }}; price {{ price }}']\nproviders: [echo]\ntests:\n  - vars: {temperature: 1.0, version: 2.0, price: 10.00}\n    assert: [{type: equals, value: 'Set temperature to 1 and version 2; price 10'}]\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
}

/// Item 1, AgentV: a whole float var inside a larger string prints `1`
/// (AgentV's JSON.stringify), not `1.0`.
#[test]
fn agentv_float_vars_print_as_javascript_prints_them() {
    let project = Project::with_mock("ratio=1");
    project.write(
        "evals/v/EVAL.yaml",
        "name: v\ntests:\n  - id: r\n    vars: {ratio: 1.0, nested: {weight: 2.0}}\n    input: 'ratio={{ ratio }} weights={{ nested }} '\n    assertions: [{type: contains, value: ratio=1}]\n",
    );
    let r = run_in(project.path(), &["run", "evals/v/EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let rows = project.rows();
    let input = rows[0]["input"].to_string();
    assert!(
        input.contains(r#"ratio=1 weights={\"weight\":2} "#),
        "{input}"
    );
}

/// Item 2: the everyday Nunjucks semantics the trial found different —
/// `dump` and object loops in the order written, `[]` and `{}` true, loose
/// `==`, a list printed `1,2`, an object `[object Object]`, a negative
/// index undefined, `escape` leaving `/` alone, Nunjucks' own filters.
#[test]
fn everyday_templates_render_as_nunjucks_renders_them() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        r#"prompts:
  - '{{ profile | dump }}|{% for k, v in obj %}{{ k }}={{ v }};{% endfor %}|{% if examples %}taken{% endif %}|{% if n == "10" %}ten{% endif %}|{{ items }}|{{ obj }}|{{ items[-1] }}|{{ html | escape }}|{{ s | truncate(9) }}|{{ s | wordcount }}'
providers: [echo]
tests:
  - vars:
      profile: {name: Ada, age: 36, city: London}
      obj: {z: 1, a: 2}
      examples: []
      n: 10
      items: [1, 2]
      html: '</b>'
      s: The quick brown fox
    assert:
      - type: equals
        value: '{"name":"Ada","age":36,"city":"London"}|z=1;a=2;|taken|ten|1,2|[object Object]||&lt;/b&gt;|The quick...|4'
"#,
    );
    let r = run_config(&project, &[]);
    assert_eq!(
        r.code,
        0,
        "{}\n{}\n{:?}",
        r.stdout,
        r.stderr,
        outputs(&project)
    );
}

/// Item 2: what evalhost cannot render as Nunjucks does is refused at
/// load, naming the file and the prompt — never rendered differently.
#[test]
fn a_template_evalhost_cannot_render_as_nunjucks_is_refused() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['{% set total = 0 %}{% for i in items %}{% set total = total + i %}{% endfor %}{{ total }}']\nproviders: [echo]\ntests:\n  - vars: {items: [1, 2, 3]}\n    assert: [{type: equals, value: '6'}]\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("promptfooconfig.yaml"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("inside a loop changes `total` outside the loop"),
        "{}",
        r.stderr
    );
    // Said once, at the prompt's own line and key.
    assert!(r.stderr.contains("at `prompts[0]`"), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("outside the loop").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(!project.path().join("out/results.jsonl").exists());

    project.write(
        "promptfooconfig.yaml",
        "prompts: ['{{ q }}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert: [{type: equals, value: '{{ q[1:] }}'}]\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("a slice"), "{}", r.stderr);
}

/// Item 8: `trials: {strategy: mean}` gives a different verdict from
/// AgentV 4.42 (which passes on any passing trial): a warning at load, and
/// `validate --agentv` lists it (it said ok before).
#[test]
fn agentv_trials_mean_is_said_where_verdicts_differ() {
    let project = Project::with_mock("x");
    project.write(
        "evals/t/EVAL.yaml",
        "name: t\nexecution:\n  trials: {count: 3, strategy: mean}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    let r = run_in(
        project.path(),
        &["validate", "--agentv", "evals/t/EVAL.yaml"],
    );
    assert_ne!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("strategy: mean"), "{all}");
    assert!(all.contains("EVAL.yaml:3"), "{all}");
    let r = run_in(project.path(), &["run", "evals/t/EVAL.yaml", "-o", "out"]);
    assert!(
        r.stderr
            .contains("AgentV 4.42 counts it passed when any trial passed"),
        "{}",
        r.stderr
    );
}

/// Item 6: `doctor` never prints "ready" for what it did not check: a
/// targets file beside the suite whose endpoint is not contacted gives
/// `?`, "not verified" and exit 1 (it printed "ready" and exited 0 with
/// the endpoint down).
#[test]
fn doctor_says_what_it_did_not_check_and_is_never_ready_for_it() {
    let project = Project::with_mock("x");
    // The usual setup: the targets in `.agentv/targets.yaml`, none of
    // evalhost's own.
    std::fs::remove_file(project.path().join(".evalhost/targets.yaml")).unwrap();
    project.write(
        ".agentv/targets.yaml",
        "targets:\n  - name: dead\n    provider: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: ${{ OPENAI_API_KEY }}\n    model: gpt-4o\n",
    );
    project.write(
        "evals/s/EVAL.yaml",
        "name: s\nexecution:\n  target: dead\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["doctor", "evals/s/EVAL.yaml", "--target", "dead"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("ready:"), "{}", r.stdout);
    assert!(r.stdout.contains("  ? dead (openai)"), "{}", r.stdout);
    assert!(
        r.stdout.contains("not verified: 1 check(s)"),
        "{}",
        r.stdout
    );
}

/// Item 10: in a run over several targets, the terminal line, the slowest
/// list, the GitHub annotation and the step summary name the target a
/// test failed on (two "FAIL capital-au" before).
#[test]
fn a_multi_target_run_names_the_target_of_each_line() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['{{ q }}']\nproviders:\n  - {id: echo, label: new}\n  - {id: echo, label: old}\ntests:\n  - description: capital-au\n    vars: {q: Sydney}\n    assert: [{type: contains, value: Canberra}]\n",
    );
    let step = project.path().join("step.md");
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("GITHUB_STEP_SUMMARY", &step)
        .args([
            "run",
            "promptfooconfig.yaml",
            "-o",
            "out",
            "--reporter",
            "github",
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("capital-au @ new"), "{all}");
    assert!(all.contains("capital-au @ old"), "{all}");
    assert!(all.contains("title=capital-au @ old failed"), "{all}");
    let md = std::fs::read_to_string(&step).unwrap();
    assert!(md.contains(r"| capital\-au | old | failed |"), "{md}");
}

/// Item 7: a merged shard run is a run — it has a `run.json`, `compare`
/// takes it, and the project's history holds it (shards → merge →
/// `compare --fail-on-regression` broke at the last step).
#[test]
fn a_merged_shard_run_can_be_compared_and_is_in_history() {
    let project = Project::with_mock("Paris");
    project.write(
        "EVAL.yaml",
        "name: s\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: b, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: c, input: q, assertions: [{type: contains, value: Paris}]}\n",
    );
    for k in ["1/2", "2/2"] {
        let dir = format!("shards/s{}", &k[..1]);
        let r = run_in(
            project.path(),
            &["run", "EVAL.yaml", "--shard", k, "-o", &dir],
        );
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    }
    let r = run_in(
        project.path(),
        &["merge", "shards/s1", "shards/s2", "-o", "shards/all"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(project.path().join("shards/all/run.json").is_file());
    let r = run_in(project.path(), &["run", "EVAL.yaml", "-o", "base"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run_in(
        project.path(),
        &["compare", "base", "shards/all", "--fail-on-regression"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run_in(project.path(), &["runs", "list", "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("shards/all"), "{}", r.stdout);
}

/// Item 4: an `assert-set`'s members add to the named metrics (and the
/// derived ones) as promptfoo adds them: accuracy 5, acc_per_row 2.5
/// (evalhost said 4 and 2).
#[test]
fn assert_set_members_count_in_named_and_derived_metrics() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['alpha beta']\nproviders: [echo]\nderivedMetrics:\n  - {name: acc_per_row, value: accuracy / __count}\ntests:\n  - description: a\n    assert:\n      - type: assert-set\n        assert:\n          - {type: contains, value: alpha, metric: accuracy}\n          - {type: contains, value: zzz, metric: accuracy}\n      - {type: contains, value: beta, metric: accuracy}\n  - description: b\n    assert:\n      - {type: contains, value: alpha, metric: accuracy, weight: 3}\n",
    );
    let _ = run_config(&project, &[]);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    let metrics = summary["metrics"].to_string();
    assert!(metrics.contains(r#"["accuracy",5.0]"#), "{metrics}");
    assert!(metrics.contains(r#"["acc_per_row",2.5]"#), "{metrics}");
}

/// Item 5: a promptfoo-style judge's unusable reply fails the assertion as
/// promptfoo fails it, but is never cached: once the judge is fixed, the
/// next run asks it again and passes (it replayed the failure before).
#[test]
fn an_unusable_promptfoo_judge_reply_is_never_cached() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let fixed = std::sync::Arc::new(AtomicBool::new(false));
    let flag = fixed.clone();
    let server = crate::support::FakeServer::start_fn(move |_| {
        if flag.load(Ordering::SeqCst) {
            crate::support::Reply::chat(r#"{"reason": "fine", "pass": true, "score": 1}"#)
        } else {
            crate::support::Reply::chat("I think it is fine.")
        }
    });
    let project = Project::with_mock("x");
    let nonce = format!("{:?}", std::time::SystemTime::now());
    project.write(
        "promptfooconfig.yaml",
        &format!(
            "prompts: ['Say hello']\nproviders: [echo]\ntests:\n  - assert:\n      - {{type: llm-rubric, value: 'Greets the user ({nonce})'}}\n"
        ),
    );
    let run = || -> crate::support::Run {
        crate::support::evalhost()
            .current_dir(project.path())
            .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
            .env("OPENAI_API_KEY", "sk-loopback")
            .args(["run", "promptfooconfig.yaml", "-o", "out"])
            .output()
            .unwrap()
            .into()
    };
    let r = run();
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        project.rows()[0]
            .to_string()
            .contains("Could not extract JSON"),
        "{}",
        project.rows()[0]
    );
    let asked = server.requests().len();
    fixed.store(true, Ordering::SeqCst);
    let r = run();
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        server.requests().len() > asked,
        "the judge was not asked again"
    );
}

/// Item 11: a failed check is printed as not met, with its evidence where
/// the grader gave one — AgentV's checks are written positively
/// ("unit tests pass") and read as a success alone.
#[test]
fn a_failed_check_is_printed_as_not_met() {
    let project = Project::with_mock("The capital is Sydney.");
    project.write(
        "EVAL.yaml",
        "name: s\ntests:\n  - {id: capital, input: q, assertions: [{type: contains, value: Canberra}]}\n",
    );
    let r = run_in(project.path(), &["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("          not met: "), "{}", r.stdout);
}

/// Item 11: the promptfoo-JSON export names each assertion by its type and
/// its metric apart, as promptfoo writes them (the metric name was in
/// `type`).
#[test]
fn the_promptfoo_export_keeps_types_and_metrics_apart() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['alpha beta']\nproviders: [echo]\ntests:\n  - assert:\n      - {type: contains, value: alpha, metric: accuracy}\n      - {type: not-icontains, value: GAMMA}\n",
    );
    let r = run_config(&project, &["--export", "promptfoo-json", "out/pf.json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let pf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(project.path().join("out/pf.json")).unwrap())
            .unwrap();
    let parts = &pf["results"]["results"][0]["gradingResult"]["componentResults"];
    assert_eq!(parts[0]["assertion"]["type"], "contains", "{parts}");
    assert_eq!(parts[0]["assertion"]["metric"], "accuracy", "{parts}");
    assert_eq!(parts[1]["assertion"]["type"], "not-icontains", "{parts}");
    assert!(parts[1]["assertion"].get("metric").is_none(), "{parts}");
}

/// Item 11: an error in a CSV row's assertion names the CSV's line, not the
/// config's line with the CSV's name (`tests.csv:16:1` of a 2-line file).
#[test]
fn a_csv_rows_error_points_at_its_csv_line() {
    let project = Project::with_mock("x");
    project.write("tests.csv", "q,__expected1\nhello,word-count(5)\n");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\n\n\n\n\n\n\n\n\n\n\n\n\ntests: file://tests.csv\n",
    );
    // `word-count(5)` is a word-count with a threshold and no value, as
    // promptfoo reads it: an error row there and here, warned at its line.
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("tests.csv:2:1: warning"), "{}", r.stderr);
    assert!(!r.stderr.contains("tests.csv:15"), "{}", r.stderr);
}

/// Round three's B9: under `--sandbox strict`, a `replay` target of the
/// suite's own targets file reads no recording outside the project.
#[test]
fn strict_replays_only_the_projects_own_recordings() {
    let project = Project::with_mock("x");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("rec.jsonl"),
        "{\"id\": \"a\", \"output\": \"secret\"}\n",
    )
    .unwrap();
    project.write(
        ".evalhost/targets.yaml",
        &format!(
            "targets:\n  - name: default\n    provider: replay\n    fixtures: {}\n",
            outside.path().join("rec.jsonl").display()
        ),
    );
    project.write(
        "EVAL.yaml",
        "name: s\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: secret}]}\n",
    );
    let r = run_in(
        project.path(),
        &["run", "EVAL.yaml", "-o", "out", "--sandbox", "strict"],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("its recordings"), "{}", r.stderr);
}

/// Round three's B15: `--since` compares instants, and a value that is no
/// date is refused at the flag (it compared raw strings).
#[test]
fn runs_since_compares_times_and_refuses_what_is_no_date() {
    let project = Project::with_mock("x");
    project.write(
        "EVAL.yaml",
        "name: s\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    let r = run_in(project.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run_in(
        project.path(),
        &["runs", "list", "--since", "yesterday-ish"],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--since"), "{}", r.stderr);
    // A time with an offset: the same instant written another way.
    let r = run_in(
        project.path(),
        &[
            "runs",
            "list",
            "--json",
            "--since",
            "2000-01-01T01:00:00+01:00",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("\"suite\""), "{}", r.stdout);
    let r = run_in(
        project.path(),
        &["runs", "list", "--json", "--since", "2999-01-01"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("\"suite\""), "{}", r.stdout);
}

/// Item 11: `--test-id` completes the ids of case directories and of
/// promptfoo configs too (only inline `tests:` ids before).
#[test]
fn test_id_completion_reads_the_suite_as_a_run_does() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - description: capital-au\n    vars: {q: x}\n    assert: [{type: contains, value: x}]\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("EVALHOST_COMPLETE", "bash")
        .env("_CLAP_IFS", "\u{b}")
        .env("_CLAP_COMPLETE_INDEX", "3")
        .args(["--", "evalhost", "run", "--test-id", ""])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("capital-au"), "{:?}", r.stdout);
}

/// The user-written set (tests/data/promptfoo-wild, `docextract`): a
/// prompt object whose `raw` is a `file://` path is that file, as
/// promptfoo's `normalizeInput` and `processPrompt` read it — evalhost sent
/// the path itself to the model.
#[test]
fn a_prompt_objects_raw_path_is_read_as_a_file() {
    let project = Project::with_mock("x");
    project.write("prompts/greet.txt", "Hello {{name}}");
    project.write(
        "promptfooconfig.yaml",
        "prompts:\n  - label: greet-v1\n    raw: 'file://prompts/greet.txt'\nproviders: [echo]\ntests:\n  - vars: {name: Ada}\n    assert: [{type: equals, value: Hello Ada}]\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(
        r.code,
        0,
        "{}\n{}\n{:?}",
        r.stdout,
        r.stderr,
        outputs(&project)
    );
}

/// The user-written set: a JSONL tests file's tests are `Row #N` as in
/// promptfoo (`calendar-split-lines`), and a prompt object's key promptfoo
/// does not read (`file:`, the `masques-*` configs) is a warning, not a
/// refusal.
#[test]
fn jsonl_rows_are_named_and_unread_prompt_keys_are_warned() {
    let project = Project::with_mock("x");
    project.write(
        "t.jsonl",
        "{\"vars\": {\"q\": \"hi\"}, \"assert\": [{\"type\": \"contains\", \"value\": \"hi\"}]}\n",
    );
    project.write(
        "promptfooconfig.yaml",
        "prompts:\n  - id: 'Say {{q}}'\n    label: say\n    file: prompts/say.txt\nproviders: [echo]\ntests: file://t.jsonl\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("`file` of a prompt is not read by promptfoo"),
        "{}",
        r.stderr
    );
    let rows = project.rows();
    assert!(
        rows[0]["test_id"].as_str().unwrap().starts_with("Row #1"),
        "{}",
        rows[0]
    );
}

/// The user-written set (`delivery-assistant-citations`): a bare
/// `openai:chat` runs `config.model` as promptfoo's loader does, and a key
/// promptfoo's OpenAI provider does not read (`baseUrl`) is warned and
/// ignored, not refused.
#[test]
fn a_bare_openai_chat_runs_config_model() {
    let server = crate::support::FakeServer::start(vec![crate::support::Reply::chat("hi")]);
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['Say {{q}}']\nproviders:\n  - id: openai:chat\n    config:\n      baseUrl: http://localhost:11434/v1\n      model: qwen3.5:9b\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: hi}]\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "sk-loopback")
        .args(["run", "promptfooconfig.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("`config.baseUrl` is not an OpenAI request field"),
        "{}",
        r.stderr
    );
    let body: serde_json::Value = serde_json::from_str(&server.requests()[0].body).unwrap();
    assert_eq!(body["model"], "qwen3.5:9b", "{body}");
}

/// promptfoo 0.123.1 (npm's latest) runs `anthropic:<model>` with a model
/// 0.121.20 does not list, through the Messages API; evalhost follows the
/// latest, with a warning (it refused as 0.121.20 does).
#[test]
fn an_unlisted_anthropic_model_runs_as_promptfoo_0_123_runs_it() {
    let server = crate::support::FakeServer::start(vec![crate::support::Reply::json(
        200,
        serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4.5",
            "content": [{"type": "text", "text": "hi there"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2}}),
    )]);
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['Say {{q}}']\nproviders: [anthropic:claude-sonnet-4.5]\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: hi}]\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("ANTHROPIC_BASE_URL", &server.url)
        .env("ANTHROPIC_API_KEY", "sk-loopback")
        .args(["run", "promptfooconfig.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("promptfoo 0.123 calls the Messages API"),
        "{}",
        r.stderr
    );
    let req = &server.requests()[0];
    let body: serde_json::Value = serde_json::from_str(&req.body).unwrap();
    assert_eq!(body["model"], "claude-sonnet-4.5", "{body}");
}

/// Review B5: an expected failure that failed is a success in history as
/// in the run's own summary (`runs list` showed 80 % for a run that
/// printed 100 %).
#[test]
fn history_counts_an_expected_failure_as_the_run_did() {
    let project = Project::with_mock("Paris");
    project.write(
        "EVAL.yaml",
        "name: s\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: b, input: q, expected_fail: true, assertions: [{type: contains, value: Berlin}]}\n",
    );
    let r = run_in(project.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r = run_in(project.path(), &["runs", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let run = &list["runs"].as_array().or_else(|| list.as_array()).unwrap()[0];
    assert_eq!(run["failed"], 0, "{run}");
    assert_eq!(run["passed"], 2, "{run}");
}

/// The user-written set (`agent-guidance-review`): an assertion written
/// without a `value` (under `defaultTest`) does not stop the config — in
/// promptfoo it throws while grading and the row is an error. evalhost
/// warns once at its line and makes those rows errors; a test's own
/// assertions are still graded in the rows that have none missing.
#[test]
fn an_assertion_without_a_value_errors_its_rows_as_promptfoo_does() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        r#"prompts: ["Say {{x}}"]
providers: [echo]
defaultTest:
  assert:
    - type: contains
tests:
  - vars: {x: hi}
    assert:
      - type: contains
        value: hi
"#,
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("promptfooconfig.yaml:5:7: warning")
            && r.stderr.contains("must have a string or number value")
            && r.stderr.contains("the rows that use it are errors"),
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stderr
            .matches("must have a string or number value")
            .count(),
        1,
        "{}",
        r.stderr
    );
    let rows = project.rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0]["execution_status"], "execution_error",
        "{}",
        rows[0]
    );
    assert_eq!(rows[0]["failure_class"], "plugin_error", "{}", rows[0]);
    assert_eq!(rows[0]["output"], "Say hi", "{}", rows[0]);
    // A value that is there but says nothing is still refused: evalhost
    // does not grade `contains: ""` as a pass every output meets.
    project.write(
        "promptfooconfig.yaml",
        "prompts: [\"Say {{x}}\"]\nproviders: [echo]\ntests:\n  - vars: {x: hi}\n    assert: [{type: contains-any, value: ','}]\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
}

/// The user-written set (`runwai-baseline`): a reply of promptfoo's
/// Anthropic provider is priced at promptfoo's own table (0.123.1's:
/// `claude-sonnet-5` $2/$10 per million tokens; cache reads a tenth, cache
/// writes 1.25 times), so a `cost` assertion grades as promptfoo grades it
/// — it was an error (no cost) for a model pi-ai does not list. A model
/// promptfoo's table does not list has no cost, as in promptfoo, whatever
/// `cost:` the config gives.
#[test]
fn an_anthropic_reply_costs_what_promptfoo_charges() {
    let reply = |model: &str| {
        crate::support::Reply::json(
            200,
            serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": "hi there"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1000, "output_tokens": 200,
                          "cache_read_input_tokens": 5000, "cache_creation_input_tokens": 100}}),
        )
    };
    let server = crate::support::FakeServer::start(vec![reply("claude-sonnet-5"), reply("x")]);
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['Say {{q}}']\nproviders:\n  - id: anthropic:messages:claude-sonnet-5\n  - id: anthropic:messages:claude-unlisted-9\n    config: {cost: 0.000001}\ntests:\n  - vars: {q: hi}\n    assert: [{type: cost, threshold: 0.01}]\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("ANTHROPIC_BASE_URL", &server.url)
        .env("ANTHROPIC_API_KEY", "sk-loopback")
        .args(["run", "promptfooconfig.yaml", "-o", "out", "--no-cache"])
        .output()
        .unwrap()
        .into();
    let rows = project.rows();
    assert_eq!(rows.len(), 2, "{}\n{}", r.stdout, r.stderr);
    let row = |t: &str| {
        rows.iter()
            .find(|r| r["target"].as_str().unwrap().contains(t))
            .unwrap_or_else(|| panic!("no row of {t}: {rows:?}"))
    };
    let listed = row("claude-sonnet-5");
    // 1000 × 2e-6 + 5000 × 2e-6 × 0.1 + 100 × 2e-6 × 1.25 + 200 × 1e-5
    let want = 1000.0 * 2e-6 + 5000.0 * 2e-6 * 0.1 + 100.0 * 2e-6 * 1.25 + 200.0 * 1e-5;
    assert_eq!(listed["cost_usd"].as_f64(), Some(want), "{listed}");
    assert_eq!(listed["status"], "passed", "{listed}");
    let unlisted = row("claude-unlisted-9");
    assert!(unlisted["cost_usd"].is_null(), "{unlisted}");
    assert_eq!(
        unlisted["execution_status"], "execution_error",
        "{unlisted}"
    );
}

/// The user-written set (`anteroom-regression`): an OpenAI provider's
/// `headers` are sent with each call, an `Authorization` there over the
/// key's (it was refused as a field evalhost does not send); a header
/// naming an unset variable is sent as written, as promptfoo sends it,
/// warned.
#[test]
fn an_openai_providers_headers_are_sent() {
    let server = crate::support::FakeServer::start(vec![crate::support::Reply::chat("hi")]);
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['Say {{q}}']\nproviders:\n  - id: openai:chat:gpt-4o\n    config:\n      headers:\n        Authorization: 'Bearer {{env.EVH_TEST_UNSET_TOKEN}}'\n        X-Team: evals\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: hi}]\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "sk-loopback")
        .env_remove("EVH_TEST_UNSET_TOKEN")
        .args(["run", "promptfooconfig.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            "`EVH_TEST_UNSET_TOKEN` is not set; promptfoo sends the template text as written"
        ),
        "{}",
        r.stderr
    );
    let req = &server.requests()[0];
    let auth: Vec<&String> = req
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(
        auth,
        ["Bearer {{env.EVH_TEST_UNSET_TOKEN}}"],
        "{:?}",
        req.headers
    );
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("x-team") && v == "evals"),
        "{:?}",
        req.headers
    );
}
