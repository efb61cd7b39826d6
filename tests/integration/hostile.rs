//! The hostile plugin corpus: one test per attack. Each runs the attack as
//! the only assertion of one case, followed by a healthy case, with an API
//! key in evalhost's environment; the attack must end in a typed failure of
//! its own assertion whose message names the limit or refusal, the run must
//! finish (the healthy case passes), and the key must appear nowhere in the
//! results.

use serde_json::Value;

use crate::support::{Project, hostile, root, run_in, test_plugin};

/// An API key the host has and no plugin may see.
const SECRET: &str = "sk-test-must-never-leak-0123456789";

/// Runs `assertion` (on the hostile plugin) in case `attack`, then a healthy
/// case, and returns the attack's first score.
fn attack(assertion: &str) -> Value {
    let project = Project::with_mock("healthy output");
    let secret = project.write("secret.txt", "TOP SECRET CONTENT");
    let assertion = assertion.replace("SECRET_FILE", &secret.display().to_string());
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins: ['{}']\ntests:\n  - id: attack\n    input: q\n    assertions:\n      - {assertion}\n  - id: healthy\n    input: q\n    assertions:\n      - {{type: contains, value: healthy}}\n",
            hostile().display()
        ),
    );
    let out = crate::support::evalhost()
        .current_dir(project.path())
        .args(["run", "EVAL.yaml", "-o", "out", "-j", "1"])
        .env("OPENAI_API_KEY", SECRET)
        .env("ANTHROPIC_API_KEY", SECRET)
        .output()
        .expect("evalhost runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "the run must finish: exit {:?}\n{stderr}",
        out.status.code()
    );
    assert_eq!(project.rows().len(), 2, "{stderr}");
    assert_eq!(project.row("healthy")["execution_status"], "ok");
    for file in ["out/results.jsonl", "out/summary.json", "out/report.html"] {
        let text = std::fs::read_to_string(project.path().join(file)).unwrap();
        assert!(!text.contains(SECRET), "{file} leaks the API key");
        assert!(!text.contains("TOP SECRET"), "{file} leaks a file");
    }
    project.row("attack")["scores"][0].clone()
}

fn expect(score: &Value, class: &str, message: &str) {
    assert_eq!(score["failure_class"], class, "{score}");
    assert_eq!(score["score"], 0.0, "{score}");
    let error = score["error"].as_str().unwrap_or_default();
    assert!(error.contains(message), "`{message}` not in `{error}`");
}

#[test]
fn an_infinite_loop_hits_its_deadline() {
    let s = attack("{type: loop-forever, limits: {timeout_ms: 300}}");
    expect(
        &s,
        "plugin_timeout",
        "plugin exceeded its deadline of 300 ms",
    );
}

#[test]
fn unbounded_allocation_hits_the_memory_cap() {
    let s = attack("{type: allocate-unbounded, limits: {memory_mb: 32}}");
    expect(&s, "plugin_memory", "memory cap of 32 MiB");
}

#[test]
fn deep_recursion_overflows_its_stack_only() {
    // Rust guests keep their stack in linear memory: deep recursion runs
    // off its bottom (wasmtime's own stack guard catches the rest).
    let s = attack("{type: stack-overflow}");
    expect(&s, "plugin_trap", "usually its stack overflowing");
}

#[test]
fn a_100_mb_result_is_refused() {
    let s = attack("{type: huge-result, mb: 100}");
    expect(&s, "plugin_bad_output", "more than the cap of 4096 KiB");
}

#[test]
fn a_nan_score_is_refused() {
    expect(
        &attack("{type: score}"),
        "plugin_bad_output",
        "score NaN, outside [0, 1]",
    );
}

#[test]
fn an_infinite_score_is_refused() {
    expect(
        &attack("{type: score, score: inf}"),
        "plugin_bad_output",
        "score inf, outside [0, 1]",
    );
}

#[test]
fn a_negative_score_is_refused() {
    expect(
        &attack("{type: score, score: -1}"),
        "plugin_bad_output",
        "score -1, outside [0, 1]",
    );
}

#[test]
fn a_score_of_seven_is_refused() {
    expect(
        &attack("{type: score, score: 7}"),
        "plugin_bad_output",
        "score 7, outside [0, 1]",
    );
}

#[test]
fn a_million_checks_are_refused() {
    let s = attack("{type: many-checks}");
    expect(
        &s,
        "plugin_bad_output",
        "1000000 checks, more than the cap of 10000",
    );
}

#[test]
fn a_panic_is_a_trap_with_its_message() {
    let s = attack("{type: panic}");
    expect(&s, "plugin_trap", "plugin panicked");
    assert!(
        s["plugin_output"]
            .as_str()
            .unwrap()
            .contains("hostile plugin panicked on purpose")
    );
}

#[test]
fn exit_is_a_trap() {
    expect(&attack("{type: exit}"), "plugin_trap", "plugin called exit");
}

#[test]
fn etc_passwd_cannot_be_opened() {
    let s = attack("{type: read-file, path: /etc/passwd}");
    expect(&s, "plugin_error", "could not read /etc/passwd");
}

#[test]
fn the_suite_and_its_files_cannot_be_opened() {
    let s = attack("{type: read-file, path: 'SECRET_FILE'}");
    expect(&s, "plugin_error", "could not read");
    let s = attack("{type: read-file, path: EVAL.yaml}");
    expect(&s, "plugin_error", "could not read EVAL.yaml");
}

#[test]
fn the_environment_and_arguments_are_empty() {
    // The plugin passes its own check only when it sees nothing.
    let s = attack("{type: read-env}");
    assert_eq!(s["score"], 1.0, "{s}");
    assert_eq!(s["assertions"][0]["text"], "env: []");
    assert_eq!(s["assertions"][1]["text"], "args: []");
}

#[test]
fn sockets_are_refused() {
    expect(
        &attack("{type: open-socket}"),
        "plugin_error",
        "socket refused",
    );
}

#[test]
fn the_clock_is_frozen() {
    // The plugin behaves differently unless the clock looks frozen: it sees
    // the epoch and no time passing.
    let s = attack("{type: read-clock}");
    assert_eq!(s["score"], 1.0, "{s}");
    assert_eq!(s["assertions"][0]["text"], "wall=0 elapsed_ns=0");
}

#[test]
fn an_undeclared_llm_call_is_refused() {
    let s = attack("{type: call-llm}");
    expect(
        &s,
        "plugin_error",
        "was not granted the `llm` capability: its assertion type does not declare it",
    );
}

#[test]
fn an_undeclared_embedding_call_is_refused() {
    // Embeddings go through the `llm` grant: a type that does not declare
    // it cannot reach a model through `embed` either.
    let s = attack("{type: call-embed}");
    expect(
        &s,
        "plugin_error",
        "was not granted the `llm` capability (embeddings go through it): its assertion type does not declare it",
    );
}

#[test]
fn an_undeclared_exec_call_is_refused() {
    let s = attack("{type: call-exec}");
    expect(
        &s,
        "plugin_error",
        "was not granted the `exec` capability: its assertion type does not declare it",
    );
}

#[test]
fn an_import_the_host_does_not_provide_is_refused_at_load() {
    let wasm = test_plugin("evalhost-test-plugin-bad-import");
    let r = run_in(&root(), &["plugin", "inspect", wasm.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("evalhost:grader/backdoor"),
        "{}",
        r.stderr
    );
    let project = Project::with_mock("x");
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins: ['{}']\ntests:\n  - {{id: t, input: q, assertions: [{{type: contains, value: x}}]}}\n",
            wasm.display()
        ),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot be linked"), "{}", r.stderr);
    assert!(
        r.stderr.contains("evalhost:grader/backdoor"),
        "{}",
        r.stderr
    );
    assert!(!project.path().join("out/results.jsonl").exists());
}
