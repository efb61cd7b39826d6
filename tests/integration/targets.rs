//! Targets: the `cli` contract (placeholders, output files, failures), an
//! OpenAI-compatible endpoint on loopback (success, 429 with Retry-After,
//! 500 then success, timeout, malformed JSON), replay, fallbacks, secrets.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{FakeServer, Project, Reply, run_in};

fn project_with_targets(targets_yaml: &str, suite: &str) -> Project {
    let project = Project::with_mock("unused");
    std::fs::write(project.path().join(".evalhost/targets.yaml"), targets_yaml).unwrap();
    project.write("EVAL.yaml", suite);
    project
}

fn row(project: &Project, id: &str) -> Value {
    project.row(id)
}

const ONE_TEST: &str =
    "tests:\n  - id: t1\n    input: Say hi\n    assertions: [{type: contains, value: hi}]\n";

#[test]
fn cli_placeholders_are_filled_and_quoted() {
    let targets = r#"targets:
  - name: default
    provider: cli
    command: "printf '%s|%s|%s|%s|' {PROMPT} {EVAL_ID} {ATTEMPT} {FILES} > {OUTPUT_FILE}; cat {PROMPT_FILE} >> {OUTPUT_FILE}; printf '|%s' \"$(pwd)\" >> {OUTPUT_FILE}"
"#;
    let suite = "tests:\n  - id: \"it's quoted\"\n    input:\n      - role: user\n        content:\n          - {type: file, value: notes.txt}\n          - \"Say hi; $(rm -rf /)\"\n    assertions: [{type: contains, value: hi}]\n";
    let project = project_with_targets(targets, suite);
    project.write("notes.txt", "n");
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = row(&project, "it's quoted")["output"]
        .as_str()
        .unwrap()
        .to_owned();
    let parts: Vec<&str> = out.split('|').collect();
    let notes = std::fs::canonicalize(project.path().join("notes.txt")).unwrap();
    let prompt = format!(
        "<file: path=\"{}\">\n\nSay hi; $(rm -rf /)",
        notes.display()
    );
    assert_eq!(
        parts[0], prompt,
        "{{PROMPT}} is the agent-style prompt, passed literally"
    );
    assert_eq!(parts[1], "it's quoted", "{{EVAL_ID}}");
    assert_eq!(parts[2], "0", "{{ATTEMPT}}");
    assert_eq!(parts[3], notes.display().to_string(), "{{FILES}}");
    assert_eq!(parts[4], prompt, "{{PROMPT_FILE}} holds the prompt");
    let cwd = std::fs::canonicalize(project.path()).unwrap();
    assert_eq!(
        parts[5],
        cwd.display().to_string(),
        "cwd defaults to the eval file's directory"
    );
}

#[test]
fn host_made_paths_inside_a_nested_shell_work_as_in_agentv_and_values_do_not() {
    // AgentV's own targets write `bash -c '… > {OUTPUT_FILE}'`: the paths
    // evalhost makes (plain characters) are spliced in as AgentV does.
    let targets = "targets:\n  - name: default\n    provider: cli\n    command: >-\n      bash -c '\n      cat {PROMPT_FILE} > got.txt &&\n      printf \"hi from attempt %s\" {ATTEMPT} > {OUTPUT_FILE}\n      '\n";
    let project = project_with_targets(targets, ONE_TEST);
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(row(&project, "t1")["output"], "hi from attempt 0");
    assert_eq!(
        std::fs::read_to_string(project.path().join("got.txt")).unwrap(),
        "Say hi"
    );
    // A value from the suite would become code there: still refused.
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: cli, command: \"bash -c 'echo {EVAL_ID} > {OUTPUT_FILE}'\"}\n",
    )
    .unwrap();
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("the placeholder {EVAL_ID} is inside '…'"),
        "{}",
        r.stderr
    );
}

#[test]
fn cli_output_files_carry_messages_tool_calls_tokens_and_cost() {
    let targets = r#"targets:
  - name: default
    provider: cli
    command: "cat > {OUTPUT_FILE} <<'EOF'\n{\"output\": [{\"role\": \"assistant\", \"content\": \"looking\", \"tool_calls\": [{\"tool\": \"Read\", \"input\": {\"path\": \"a.rs\"}}]}, {\"role\": \"assistant\", \"content\": \"hi there\"}], \"token_usage\": {\"input\": 100, \"output\": 20}, \"cost_usd\": 0.02, \"duration_ms\": 1234}\nEOF"
"#;
    let project = project_with_targets(targets, ONE_TEST);
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = row(&project, "t1");
    assert_eq!(row["output"], "hi there");
    assert_eq!(
        row["token_usage"],
        json!({"input": 100, "output": 20, "cached": 0, "reasoning": 0})
    );
    assert_eq!(
        (row["cost_usd"].as_f64(), row["duration_ms"].as_u64()),
        (Some(0.02), Some(1234))
    );
}

#[test]
fn cli_failures_are_target_errors_with_the_reason() {
    let targets = r#"targets:
  - {name: exits, provider: cli, command: "echo 'agent crashed' >&2; exit 3", max_retries: 1, retry_initial_delay_ms: 10}
  - {name: slow, provider: cli, command: "sleep 5; echo late > {OUTPUT_FILE}", timeout_seconds: 0.3, max_retries: 0}
  - {name: silent, provider: cli, command: "true", max_retries: 0}
"#;
    let project = project_with_targets(targets, ONE_TEST);
    for (target, expected) in [
        ("exits", "agent crashed (exit code 3) (after 2 attempts)"),
        ("slow", "CLI provider timed out after 0.3s"),
        ("silent", "Failed to read output file"),
    ] {
        let out = format!("out-{target}");
        let r = run_in(
            project.path(),
            &["run", "EVAL.yaml", "-o", &out, "--target", target],
        );
        assert_eq!(r.code, 3, "{target}: nothing could be graded: {}", r.stderr);
        let rows: Vec<Value> =
            std::fs::read_to_string(project.path().join(&out).join("results.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        assert_eq!(rows[0]["failure_class"], "target", "{target}");
        let error = rows[0]["error"].as_str().unwrap();
        assert!(error.contains(expected), "{target}: {error}");
    }
}

#[test]
fn a_fallback_target_answers_when_the_primary_fails() {
    let targets = r#"targets:
  - {name: default, provider: cli, command: "exit 1", max_retries: 0, fallback_targets: [backup]}
  - {name: backup, provider: mock, response: "hi from backup"}
"#;
    let project = project_with_targets(targets, ONE_TEST);
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = row(&project, "t1");
    assert_eq!(
        (row["output"].as_str(), row["target_used"].as_str()),
        (Some("hi from backup"), Some("backup"))
    );
}

fn openai_targets(url: &str, extra: &str) -> String {
    format!(
        "targets:\n  - {{name: default, provider: openai, base_url: '{url}/v1', model: test-model, api_key: '${{{{ EVALHOST_TEST_KEY }}}}', temperature: 0, max_output_tokens: 64, retry_initial_delay_ms: 20{extra}}}\n"
    )
}

fn run_openai(project: &Project) -> crate::support::Run {
    crate::support::evalhost()
        .current_dir(project.path())
        .env("EVALHOST_TEST_KEY", "sk-loopback")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into()
}

#[test]
fn openai_success_sends_the_chat_and_records_usage_and_cost() {
    let server = FakeServer::start(vec![Reply::chat("hi, the answer")]);
    let suite = "input: [{role: system, content: Be brief.}]\ntests:\n  - id: t1\n    input: Say hi\n    assertions: [{type: contains, value: hi}]\n";
    let project = project_with_targets(&openai_targets(&server.url, ""), suite);
    let r = run_openai(&project);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = row(&project, "t1");
    assert_eq!(row["output"], "hi, the answer");
    assert_eq!(row["token_usage"]["input"], 11);
    assert_eq!(row["cost_usd"], 0.0042);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert!(
        requests[0]
            .headers
            .contains(&("authorization".into(), "Bearer sk-loopback".into()))
    );
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(
        (body["temperature"].as_f64(), body["max_tokens"].as_u64()),
        (Some(0.0), Some(64))
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}])
    );
    // The key is never written into results.
    let results = std::fs::read_to_string(project.path().join("out/results.jsonl")).unwrap();
    assert!(!results.contains("sk-loopback"));
}

#[test]
fn openai_429_honours_retry_after_and_500_is_retried() {
    let mut busy = Reply::json(429, json!({"error": {"message": "slow down"}}));
    busy.headers.push(("Retry-After".into(), "1".into()));
    let server = FakeServer::start(vec![
        busy,
        Reply::json(500, json!({"error": "boom"})),
        Reply::chat("hi"),
    ]);
    let project = project_with_targets(&openai_targets(&server.url, ", max_retries: 3"), ONE_TEST);
    let start = Instant::now();
    let r = run_openai(&project);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(server.requests().len(), 3, "429, then 500, then success");
    assert!(
        start.elapsed() >= Duration::from_millis(1000),
        "waited for Retry-After: {:?}",
        start.elapsed()
    );
}

#[test]
fn openai_4xx_is_not_retried_and_timeouts_and_bad_json_are_errors() {
    let server = FakeServer::start(vec![Reply::json(401, json!({"error": "bad key"}))]);
    let project = project_with_targets(&openai_targets(&server.url, ", max_retries: 3"), ONE_TEST);
    assert_eq!(run_openai(&project).code, 3);
    assert_eq!(server.requests().len(), 1, "a 401 is not retried");
    assert!(
        row(&project, "t1")["error"]
            .as_str()
            .unwrap()
            .contains("HTTP 401")
    );

    let mut slow = Reply::chat("hi");
    slow.delay = Duration::from_secs(3);
    let server = FakeServer::start(vec![slow]);
    let project = project_with_targets(
        &openai_targets(&server.url, ", max_retries: 0, timeout_seconds: 0.5"),
        ONE_TEST,
    );
    assert_eq!(run_openai(&project).code, 3);
    let error = row(&project, "t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("did not answer within 0.5s"), "{error}");

    let mut garbage = Reply::json(200, json!(null));
    garbage.body = "{\"choices\": [".into();
    let server = FakeServer::start(vec![garbage]);
    let project = project_with_targets(&openai_targets(&server.url, ", max_retries: 0"), ONE_TEST);
    assert_eq!(run_openai(&project).code, 3);
    let error = row(&project, "t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("invalid JSON"), "{error}");
}

#[test]
fn literal_api_keys_are_refused() {
    let targets =
        "targets:\n  - {name: default, provider: openai, model: m, api_key: sk-live-123}\n";
    let project = project_with_targets(targets, ONE_TEST);
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("`api_key` is written literally"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("sk-live-123"),
        "the secret is not echoed"
    );
}

#[test]
fn replay_grades_recorded_outputs() {
    let targets = "targets:\n  - {name: default, provider: replay, fixtures: recorded.jsonl}\n";
    let suite = "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: hi}]}\n  - {id: b, input: q, assertions: [{type: contains, value: hi}]}\n  - {id: c, input: q, assertions: [{type: contains, value: hi}]}\n";
    let project = project_with_targets(targets, suite);
    std::fs::write(
        project.path().join(".evalhost/recorded.jsonl"),
        "{\"id\": \"a\", \"text\": \"hi a\"}\n{\"id\": \"b\", \"output\": [{\"role\": \"assistant\", \"content\": \"bye\"}]}\n",
    )
    .unwrap();
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(row(&project, "a")["status"], "passed");
    assert_eq!(row(&project, "b")["status"], "failed");
    let c = row(&project, "c");
    assert_eq!(c["status"], "error");
    assert!(
        c["error"]
            .as_str()
            .unwrap()
            .contains("no recording for test `c`")
    );
}

#[test]
fn a_target_matrix_runs_every_case_on_each_target_with_its_hooks() {
    let targets = "targets:\n  - {name: alpha, provider: mock, response: hi from alpha}\n  - {name: beta, provider: mock, response: bye from beta}\n";
    let suite = r#"execution:
  targets:
    - alpha
    - name: beta-variant
      use_target: beta
      hooks:
        before_each: {command: [sh, -c, "echo variant setup for {{test_id}}"]}
tests:
  - {id: everywhere, input: q, assertions: [{type: contains, value: hi}]}
  - id: alpha-only
    input: q
    execution: {targets: [alpha]}
    assertions: [{type: contains, value: hi}]
"#;
    let project = project_with_targets(targets, suite);
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "beta says bye: {}", r.stderr);
    let rows = project.rows();
    let pairs: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["test_id"].as_str().unwrap().to_owned(),
                r["target"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            ("everywhere".into(), "alpha".into(), "passed".into()),
            ("everywhere".into(), "beta-variant".into(), "failed".into()),
            ("alpha-only".into(), "alpha".into(), "passed".into()),
        ]
    );
    assert_eq!(
        rows[1]["hooks"]["target_before_each"]["output"],
        "variant setup for everywhere\n"
    );
    // --target overrides the matrix.
    let r = run_in(
        project.path(),
        &["run", "EVAL.yaml", "-o", "only-alpha", "--target", "alpha"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn cli_attempt_counts_retries() {
    let targets = "targets:\n  - {name: default, provider: cli, command: \"test {ATTEMPT} -ge 1 || exit 9; echo hi on attempt {ATTEMPT} > {OUTPUT_FILE}\", max_retries: 2, retry_initial_delay_ms: 10}\n";
    let project = project_with_targets(targets, ONE_TEST);
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(row(&project, "t1")["output"], "hi on attempt 1\n");
}

#[test]
fn a_cli_healthcheck_gates_the_target() {
    let targets = "targets:\n  - {name: default, provider: cli, command: \"echo hi > {OUTPUT_FILE}\", max_retries: 0, healthcheck: {command: \"exit 1\"}}\n";
    let project = project_with_targets(targets, ONE_TEST);
    assert_eq!(project.run(&[]).code, 3);
    let error = row(&project, "t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("healthcheck `exit 1` failed"), "{error}");
}

#[test]
fn the_response_cache_answers_a_second_run_without_calling_the_target() {
    let server = FakeServer::start(vec![Reply::chat("hi, cached")]);
    let project = project_with_targets(&openai_targets(&server.url, ""), ONE_TEST);
    let cache = tempfile::tempdir().unwrap();
    let run = |out: &str, extra: &[&str]| -> crate::support::Run {
        let mut args = vec!["run", "EVAL.yaml", "-o", out];
        args.extend_from_slice(extra);
        crate::support::evalhost()
            .current_dir(project.path())
            .env("EVALHOST_TEST_KEY", "sk-loopback")
            .env("EVALHOST_CACHE_DIR", cache.path())
            .env(
                "EVALHOST_COMPILE_CACHE_DIR",
                crate::support::shared_compile_cache(),
            )
            .args(&args)
            .output()
            .unwrap()
            .into()
    };
    assert_eq!(run("a", &["--cache"]).code, 0);
    assert_eq!(run("b", &["--cache"]).code, 0);
    assert_eq!(
        server.requests().len(),
        1,
        "the second run was answered from the cache"
    );
    let b: Value = serde_json::from_str(
        std::fs::read_to_string(project.path().join("b/results.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(
        (b["cached"].as_bool(), b["output"].as_str()),
        (Some(true), Some("hi, cached"))
    );
    assert_eq!(run("c", &["--cache", "--no-cache"]).code, 0);
    assert_eq!(server.requests().len(), 2, "--no-cache calls the target");
    // A sampled model is not cached unless asked.
    let server = FakeServer::start(vec![Reply::chat("hi")]);
    let sampled = openai_targets(&server.url, "").replace("temperature: 0", "temperature: 0.7");
    std::fs::write(project.path().join(".evalhost/targets.yaml"), sampled).unwrap();
    assert_eq!(run("d", &["--cache"]).code, 0);
    assert_eq!(run("e", &["--cache"]).code, 0);
    assert_eq!(server.requests().len(), 2, "temperature 0.7: not cached");
    assert_eq!(run("f", &["--cache", "--cache-sampled"]).code, 0);
    assert_eq!(run("g", &["--cache", "--cache-sampled"]).code, 0);
    assert_eq!(server.requests().len(), 3, "--cache-sampled caches it");
    let r = run_in(project.path(), &["cache", "clear", "--responses"]);
    assert_eq!(r.code, 0);
}

#[test]
fn regrade_grades_recorded_outputs_with_the_current_suite() {
    // The target counts its calls in calls.txt.
    let targets = "targets:\n  - {name: default, provider: cli, command: \"echo x >> calls.txt; echo 'hi there' > {OUTPUT_FILE}\"}\n";
    let project = project_with_targets(targets, ONE_TEST);
    assert_eq!(project.run(&[]).code, 0);
    assert_eq!(
        std::fs::read_to_string(project.path().join("calls.txt"))
            .unwrap()
            .lines()
            .count(),
        1
    );
    // The suite changes: the same output now fails.
    project.write("EVAL.yaml", &ONE_TEST.replace("value: hi", "value: bye"));
    let r = run_in(project.path(), &["regrade", "out", "-o", "regraded"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(project.path().join("calls.txt"))
            .unwrap()
            .lines()
            .count(),
        1,
        "no target call"
    );
    let row: Value = serde_json::from_str(
        std::fs::read_to_string(project.path().join("regraded/results.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(
        (row["output"].as_str(), row["status"].as_str()),
        (Some("hi there\n"), Some("failed"))
    );
    assert_eq!(row["scores"][0]["name"], "contains-bye");
}

/// Issue 16.7: `validate` checks the targets a run would use: the file it
/// found, the names the suite picks (with "did you mean", at the suite's
/// line), and the keys of each entry (a misspelled key is an error at its
/// line, a setting no tool knows a warning).
#[test]
fn validate_checks_the_targets_a_run_would_use() {
    let targets = "targets:\n  - name: support-bot\n    provider: mock\n    response: Saturday\n  - name: agent\n    provider: cli\n    command: \"echo hi > {OUTPUT_FILE}\"\n    timout_seconds: 30\n    colour: blue\n";
    let suite = format!("execution:\n  target: suport-bot\n{ONE_TEST}");
    let project = project_with_targets(targets, &suite);
    let validate = |extra: &[&str]| {
        let mut args = vec!["validate", "EVAL.yaml"];
        args.extend_from_slice(extra);
        run_in(project.path(), &args)
    };
    let r = validate(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("targets.yaml:8:5: error: unknown key `timout_seconds` on the `cli` target `agent`; did you mean `timeout_seconds`?"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("targets.yaml:9:5: warning: unknown setting `colour`"),
        "{}",
        r.stderr
    );
    // The run refuses the same file for the same reason.
    let run = project.run(&[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("did you mean `timeout_seconds`"),
        "{}",
        run.stderr
    );

    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        targets.replace("timout_seconds", "timeout_seconds"),
    )
    .unwrap();
    let r = validate(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("EVAL.yaml:2:3: error: target `suport-bot` is not in")
            && r.stderr.contains("did you mean `support-bot`?"),
        "{}",
        r.stderr
    );
    let r = validate(&["--target", "agnt"]);
    assert!(r.stderr.contains("did you mean `agent`?"), "{}", r.stderr);

    project.write("EVAL.yaml", &suite.replace("suport-bot", "support-bot"));
    let r = validate(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("EVAL.yaml: ok (1 tests; targets from .evalhost/targets.yaml)"),
        "{}",
        r.stderr
    );
    // A matrix name is checked at its own line.
    project.write(
        "EVAL.yaml",
        &format!("execution:\n  targets:\n    - support-bot\n    - agnet\n{ONE_TEST}"),
    );
    let r = validate(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("EVAL.yaml:4:7: error: target `agnet` is not in"),
        "{}",
        r.stderr
    );
    // No targets file: validate warns (a run may be given --targets); the
    // run refuses, and says how a run picks its target.
    std::fs::remove_file(project.path().join(".evalhost/targets.yaml")).unwrap();
    project.write("EVAL.yaml", ONE_TEST);
    let r = validate(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "warning: no targets file found above the suite; a run needs one defining `default`"
        ),
        "{}",
        r.stderr
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("no targets file found for target `default`")
            && run.stderr.contains("the suite names no target"),
        "{}",
        run.stderr
    );
}

/// An entry whose `${{ VAR }}` is not set stops only the runs that select
/// it (AgentV resolves only the targets it runs); the warning names the
/// variable, and selecting the entry says why it cannot run.
#[test]
fn an_entry_missing_its_variable_stops_only_the_runs_that_use_it() {
    let targets = "targets:\n  - name: azure-llm\n    provider: azure\n    endpoint: ${{ EVALHOST_TEST_UNSET_ENDPOINT }}\n    model: ${{ EVALHOST_TEST_UNSET_DEPLOYMENT }}\n  - name: default\n    provider: mock\n    response: hi\n";
    let project = project_with_targets(targets, ONE_TEST);
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("environment variable `EVALHOST_TEST_UNSET_DEPLOYMENT` is not set"),
        "{}",
        r.stderr
    );
    let r = project.run(&["--target", "azure-llm"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("target `azure-llm`: an `azure` target needs an `endpoint` (https://<resource>.openai.azure.com, or the resource name): `endpoint` is `${{ EVALHOST_TEST_UNSET_ENDPOINT }}` and EVALHOST_TEST_UNSET_ENDPOINT is not set"),
        "{}",
        r.stderr
    );
}

/// Issue 16.13: a row claims model calls only when the target reported them
/// or its transcript shows them; a mock or a plain-text command leaves
/// `llm_calls` empty. Graders still count the one answer as AgentV does
/// (`max_llm_calls: 1` passes on a mock and fails on two calls), before and
/// after a regrade.
#[test]
fn rows_claim_model_calls_only_when_someone_reported_them() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: hi\n  - name: agent\n    provider: cli\n    command: \"printf '%s' '{\\\"output\\\": [{\\\"role\\\": \\\"assistant\\\", \\\"content\\\": \\\"thinking\\\"}, {\\\"role\\\": \\\"assistant\\\", \\\"content\\\": \\\"hi\\\"}]}' > {OUTPUT_FILE}\"\n  - name: plain\n    provider: cli\n    command: \"echo hi > {OUTPUT_FILE}\"\n";
    let suite = "tests:\n  - id: t1\n    input: Say hi\n    assertions:\n      - {type: contains, value: hi}\n      - {type: execution-metrics, max_llm_calls: 1}\n";
    let project = project_with_targets(targets, suite);
    for (target, recorded, metric) in [
        ("default", Value::Null, 1.0),
        ("plain", Value::Null, 1.0),
        ("agent", json!(2), 0.0),
    ] {
        let r = project.run(&["--target", target]);
        let row = row(&project, "t1");
        assert_eq!(row["llm_calls"], recorded, "{target}: {row}");
        assert_eq!(
            row["scores"][1]["score"], metric,
            "{target}: {row}\n{}",
            r.stderr
        );
    }
    let r = project.run(&["--target", "default"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let again = run_in(project.path(), &["regrade", "out", "-o", "again"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let text = std::fs::read_to_string(project.path().join("again/results.jsonl")).unwrap();
    let row: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(row["llm_calls"], Value::Null, "{row}");
    assert_eq!(row["scores"][1]["score"], 1.0, "{row}");
}

/// Issue 16.8: every retry is said as it happens (stderr), counted on the
/// test's line, and recorded in the row with why and how long evalhost
/// waited; a fallback is recorded the same way.
#[test]
fn retries_are_shown_as_they_happen_and_recorded_in_the_row() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command: \"n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; if [ $n -lt 3 ]; then echo boom $n >&2; exit 4; fi; echo hi > {OUTPUT_FILE}\"\n    retry_initial_delay_ms: 10\n  - name: flaky\n    provider: cli\n    command: \"exit 5\"\n    max_retries: 0\n    fallback_targets: [default]\n";
    let project = project_with_targets(targets, ONE_TEST);
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            "retry  t1 on `default`: attempt 1 failed (boom 1 (exit code 4)); trying again in 0.0 s"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("attempt 2 failed (boom 2"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("PASS  t1  1.00"), "{}", r.stdout);
    assert!(r.stdout.contains("(2 retries)"), "{}", r.stdout);
    let first = row(&project, "t1");
    let retries = first["retries"].as_array().expect("recorded");
    assert_eq!(retries.len(), 2, "{first}");
    assert_eq!(retries[0]["attempt"], 1);
    assert_eq!(retries[0]["target"], "default");
    assert_eq!(retries[0]["error"], "boom 1 (exit code 4)");
    assert_eq!(retries[0]["wait_ms"], 10);
    assert_eq!(retries[1]["wait_ms"], 20);

    std::fs::remove_file(project.path().join("count")).unwrap();
    let r = project.run(&["--target", "flaky"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let second = row(&project, "t1");
    let retries = second["retries"].as_array().expect("recorded");
    assert_eq!(retries[0]["target"], "flaky", "{second}");
    assert!(
        retries[0]["error"]
            .as_str()
            .unwrap()
            .contains("(trying fallback `default`)"),
        "{second}"
    );
    assert_eq!(
        retries.len(),
        3,
        "the fallback's own two retries follow: {second}"
    );
    assert_eq!(second["target_used"], "default");
}

/// Issue 17.1: `mode: conversation` calls the target once per turn with the
/// history so far (a scripted cli target counts the user messages it was
/// given), grades each turn (`turn-<n>`), the test's own assertions grade
/// the transcript (`conversation`), scores combine by `aggregation`;
/// `on_turn_failure: stop` scores later turns 0 without calling the
/// target; `window_size` trims what the target sees.
#[test]
fn a_conversation_calls_the_target_per_turn_with_its_history() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command: \"echo call >> calls.txt; n=$(printf '%s' {PROMPT} | grep -c '^@\\\\[User\\\\]:'); printf 'turn %s: %s' \\\"$n\\\" \\\"$(printf '%s' {PROMPT} | tail -1)\\\" > {OUTPUT_FILE}\"\n";
    let suite = r#"tests:
  - id: math
    mode: conversation
    input:
      - {role: system, content: You are a tutor.}
    turns:
      - input: What is 15% of 200?
        assertions: [{type: contains, value: "turn 1: What is 15% of 200?"}]
      - input: Now double that.
        assertions:
          - {type: contains, value: "turn 2"}
          - {type: contains, value: "nope"}
      - input: Thanks
  - id: weakest
    mode: conversation
    aggregation: min
    input: hi
    turns:
      - input: a
        assertions: [{type: contains, value: "turn 2"}]
      - input: b
        assertions: [{type: contains, value: "turn 1"}]
  - id: stops
    mode: conversation
    on_turn_failure: stop
    input: hi
    turns:
      - input: first
        assertions: [{type: contains, value: zzz}]
      - input: second
        assertions: [{type: contains, value: turn}]
    assertions:
      - {type: contains, value: "user: first"}
  - id: windowed
    mode: conversation
    window_size: 1
    input:
      - {role: system, content: Be brief.}
    turns:
      - input: one
      - input: two
      - input: three
        assertions: [{type: contains, value: "turn 1: three"}]
"#;
    let project = project_with_targets(targets, suite);
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let names = |row: &Value| -> Vec<(String, f64)> {
        row["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().to_owned(),
                    s["score"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let math = row(&project, "math");
    assert_eq!(
        names(&math),
        [
            ("turn-1".into(), 1.0),
            ("turn-2".into(), 0.5),
            ("turn-3".into(), 1.0)
        ]
    );
    assert!(
        (math["score"].as_f64().unwrap() - 2.5 / 3.0).abs() < 1e-9,
        "mean: {math}"
    );
    assert_eq!(math["status"], "passed");
    assert_eq!(math["output"], "turn 3: Thanks");
    // The history: the system message, then each user message and reply.
    let messages = math["output_messages"].as_array().unwrap();
    assert_eq!(messages.len(), 7, "{math}");
    assert_eq!(messages[2]["content"], "turn 1: What is 15% of 200?");
    let weakest = row(&project, "weakest");
    assert_eq!(weakest["score"], 0.0, "min of 0 and 1... {weakest}");
    let stops = row(&project, "stops");
    assert_eq!(
        names(&stops),
        [
            ("turn-1".into(), 0.0),
            ("turn-2".into(), 0.0),
            ("conversation".into(), 1.0)
        ]
    );
    assert_eq!(
        stops["scores"][1]["assertions"][0]["text"],
        "Skipped due to previous turn failure"
    );
    let windowed = row(&project, "windowed");
    assert_eq!(
        windowed["score"], 1.0,
        "the third call saw one user message: {windowed}"
    );
    // 3 + 2 + 1 (stopped) + 3 target calls.
    let calls = std::fs::read_to_string(project.path().join("calls.txt")).unwrap();
    assert_eq!(calls.lines().count(), 3 + 2 + 1 + 3);

    // `turns` without `mode: conversation` is refused, not ignored.
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t\n    input: q\n    turns: [{input: a}]\n    assertions: [{type: contains, value: a}]\n",
    );
    let r = run_in(project.path(), &["validate", "EVAL.yaml"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("EVAL.yaml:4:5: error: test `t` has `turns` but no `mode: conversation`"),
        "{}",
        r.stderr
    );
}
