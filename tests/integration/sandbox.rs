//! The sandbox: a plugin that traps, loops, allocates without bound, returns
//! garbage or reaches for files, the environment, the network, the clock or
//! capabilities it was not granted fails only its own assertion, with a
//! typed `failure_class`, and the run goes on to the next case.

use crate::support::{Project, hostile};

fn hostile_suite(tests: &[(&str, &str)]) -> String {
    let mut suite = format!("plugins:\n  - path: {}\ntests:\n", hostile().display());
    for (id, assertion) in tests {
        suite.push_str(&format!(
            "  - id: {id}\n    input: q\n    assertions:\n      - {assertion}\n"
        ));
    }
    suite
}

/// Runs hostile assertions one worker at a time, each followed by a healthy
/// test, and returns the project.
fn run_hostile(tests: &[(&str, &str)]) -> Project {
    let project = Project::with_mock("healthy output");
    let mut all = Vec::new();
    for (i, t) in tests.iter().enumerate() {
        all.push(*t);
        all.push(match i % 2 {
            0 => ("healthy-a", "{type: contains, value: healthy}"),
            _ => ("healthy-b", "{type: echo}"),
        });
    }
    // Ids must be unique: suffix the healthy ones.
    let mut numbered: Vec<(String, &str)> = Vec::new();
    for (i, (id, a)) in all.iter().enumerate() {
        let id = if id.starts_with("healthy") {
            format!("{id}-{i}")
        } else {
            (*id).to_owned()
        };
        numbered.push((id, a));
    }
    let refs: Vec<(&str, &str)> = numbered.iter().map(|(i, a)| (i.as_str(), *a)).collect();
    project.write("EVAL.yaml", &hostile_suite(&refs));
    let run = project.run(&["-j", "1"]);
    assert!(
        run.code == 1 || run.code == 0,
        "exit {}: {}",
        run.code,
        run.stderr
    );
    // Every test has a row: the run finished.
    assert_eq!(project.rows().len(), refs.len(), "{}", run.stderr);
    for (id, _) in &refs {
        if id.starts_with("healthy") {
            assert_eq!(
                project.row(id)["execution_status"],
                "ok",
                "{id} after a hostile case"
            );
        }
    }
    project
}

#[test]
fn a_negated_crash_is_still_a_failure() {
    let project = run_hostile(&[("not-panic", "{type: not-panic}")]);
    let row = project.row("not-panic");
    assert_eq!(row["scores"][0]["score"], 0.0);
    assert_eq!(row["scores"][0]["verdict"], "fail");
    assert_eq!(row["execution_status"], "execution_error");
}

#[test]
fn a_pinned_digest_must_match() {
    let project = Project::with_mock("x");
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins:\n  - path: {}\n    sha256: {}\ntests:\n  - id: a\n    input: q\n    assertions: [{{type: echo}}]\n",
            hostile().display(),
            "0".repeat(64)
        ),
    );
    let run = project.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("but the suite pins 0000"),
        "{}",
        run.stderr
    );
}

/// A stateless plugin's instance serves many calls (its own counter grows),
/// a trap retires it (the next call starts from a fresh instance), and a
/// failed call shows only its own output.
#[test]
fn stateless_instances_are_reused_until_they_trap() {
    let probe = crate::support::test_plugin("evalhost-test-plugin-stateless-probe");
    let project = Project::with_mock("anything");
    let mut suite = format!("plugins: ['{}']\ntests:\n", probe.display());
    for i in 1..=3 {
        suite.push_str(&format!(
            "  - {{id: t{i}, input: q, assertions: [{{type: count-calls}}]}}\n"
        ));
    }
    suite.push_str("  - {id: t4, input: q, assertions: [{type: panic-now}]}\n");
    suite.push_str("  - {id: t5, input: q, assertions: [{type: count-calls}]}\n");
    project.write("EVAL.yaml", &suite);
    let r = project.run(&["-j", "1", "--grader-workers", "1"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let text = |id: &str| project.row(id)["scores"][0]["assertions"][0]["text"].clone();
    // The instance loaded at check time may already have served calls, so
    // the counts are consecutive rather than 1, 2, 3.
    let first = text("t1")
        .as_str()
        .unwrap()
        .trim_start_matches("call ")
        .parse::<u32>()
        .unwrap();
    assert_eq!(text("t2"), format!("call {}", first + 1));
    assert_eq!(text("t3"), format!("call {}", first + 2));
    let trap = &project.row("t4")["scores"][0];
    assert_eq!(trap["failure_class"], "plugin_trap", "{trap}");
    let output = trap["plugin_output"].as_str().unwrap();
    assert!(
        output.contains(&format!("probe call {}", first + 3)),
        "{output}"
    );
    assert!(
        !output.contains(&format!("probe call {first}\n")),
        "earlier calls' output leaked: {output}"
    );
    // The trapped instance was dropped: a fresh one counts from 1.
    assert_eq!(text("t5"), "call 1");
}

/// Runs promptfoo `kind` assertions (one test each, on `echo` with output
/// `x`) one worker at a time, with a variable set in evalhost's
/// environment; the run and its rows.
fn run_snippets(
    kind: &str,
    snippets: &[(&str, &str)],
) -> (crate::support::Run, Vec<serde_json::Value>) {
    let work = tempfile::tempdir().unwrap();
    let mut config = String::from("prompts: ['{{q}}']\nproviders: [echo]\ntests:\n");
    for (description, code) in snippets {
        config.push_str(&format!(
            "  - description: {description}\n    vars: {{q: x}}\n    assert:\n      - type: {kind}\n        value: {}\n",
            serde_json::to_string(code).unwrap()
        ));
    }
    std::fs::write(work.path().join("promptfooconfig.yaml"), config).unwrap();
    let mut command = crate::support::evalhost();
    if kind == "python" {
        command.env(
            "EVALHOST_COMPONENTIZE_PY",
            crate::support::componentize_py(),
        );
    }
    let r: crate::support::Run = command
        .current_dir(work.path())
        .env("EVALHOST_SANDBOX_PROBE", "secret")
        .args(["run", "promptfooconfig.yaml", "-o", "out", "-j", "1"])
        .output()
        .unwrap()
        .into();
    assert!(r.code == 1, "{}{}", r.stdout, r.stderr);
    let rows = std::fs::read_to_string(work.path().join("out/results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (r, rows)
}

/// promptfoo's inline JavaScript runs in the `evalhost-javascript` plugin:
/// a snippet that loops or allocates without bound fails its own assertion
/// with a typed class, deep recursion fails it as a throw, and the files,
/// network, environment and modules of the machine are out of reach; the
/// wall clock is read-only.
#[test]
fn javascript_snippets_are_sandboxed() {
    let (r, rows) = run_snippets(
        "javascript",
        &[
            ("loops", "while (true) {}\nreturn true;"),
            ("allocates", "let s = 'x';\nwhile (true) { s = s + s; }"),
            ("recurses", "const f = n => f(n + 1); f(0)"),
            // The wall clock, read-only, as Node has it (frozen under
            // `--sandbox strict`: `hostile_code`, `promptfoo_as_written`).
            (
                "clock",
                "Date.now() > 1767225600000 && new Date().getUTCFullYear() >= 2026",
            ),
            ("environment", "Object.keys(process.env).length === 0"),
            (
                "network",
                "typeof fetch === 'undefined' && typeof XMLHttpRequest === 'undefined' && typeof WebSocket === 'undefined'",
            ),
            (
                "modules",
                "require('fs').readFileSync('/etc/passwd', 'utf8').length > 0",
            ),
            ("console", "console.log('seen', 42);\nreturn true;"),
            (
                "printed",
                "console.log('printed', 'before', 'failing');\nreturn false;",
            ),
            ("after", "output === 'x'"),
        ],
    );
    let row = |d: &str| {
        rows.iter()
            .find(|r| r["metadata"]["description"] == d)
            .unwrap_or_else(|| panic!("no row {d}"))
            .clone()
    };
    let score = |d: &str| row(d)["scores"][0].clone();
    assert_eq!(
        score("loops")["failure_class"],
        "plugin_timeout",
        "{}",
        score("loops")
    );
    assert_eq!(
        score("allocates")["failure_class"],
        "plugin_memory",
        "{}",
        score("allocates")
    );
    let recursion = score("recurses");
    assert_eq!(recursion["failure_class"], "assertion", "{recursion}");
    assert!(
        recursion["assertions"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Maximum call stack size exceeded"),
        "{recursion}"
    );
    for passes in ["clock", "environment", "network", "console", "after"] {
        assert_eq!(row(passes)["status"], "passed", "{passes}: {}", row(passes));
    }
    let modules = score("modules");
    assert!(
        modules["assertions"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Cannot find module 'fs'"),
        "{modules}"
    );
    assert_eq!(
        score("console")["assertions"][0]["evidence"],
        "console:\nseen 42"
    );
    // What a failing snippet printed is in the terminal too.
    assert!(
        r.stdout
            .contains("          console: printed before failing"),
        "{}",
        r.stdout
    );
}

/// promptfoo's inline Python runs in evalhost's CPython component: the
/// same bounds and the same absences as every plugin, a missing module
/// named, `print` kept with the result.
#[test]
fn python_snippets_are_sandboxed() {
    let (_, rows) = run_snippets(
        "python",
        &[
            ("loops", "while True:\n    pass\nreturn True"),
            (
                "allocates",
                "s = ['x']\nwhile True:\n    s = s + s\nreturn True",
            ),
            ("recurses", "def f(n):\n    return f(n + 1)\nreturn f(0)"),
            ("clock", "import time\nreturn time.time() > 1767225600"),
            (
                "environment",
                "import os\nreturn 'EVALHOST_SANDBOX_PROBE' not in os.environ",
            ),
            ("files", "open('/etc/passwd').read()\nreturn True"),
            (
                "network",
                "import socket\nsocket.create_connection(('127.0.0.1', 9))\nreturn True",
            ),
            ("modules", "import numpy\nreturn True"),
            ("print", "print('seen', 42)\nreturn True"),
            ("after", "output == 'x'"),
        ],
    );
    let row = |d: &str| {
        rows.iter()
            .find(|r| r["metadata"]["description"] == d)
            .unwrap_or_else(|| panic!("no row {d}"))
            .clone()
    };
    let score = |d: &str| row(d)["scores"][0].clone();
    let text = |d: &str| {
        score(d)["assertions"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        score("loops")["failure_class"],
        "plugin_timeout",
        "{}",
        score("loops")
    );
    assert_eq!(
        score("allocates")["failure_class"],
        "plugin_memory",
        "{}",
        score("allocates")
    );
    // Deep recursion fails the assertion, typed either way: CPython's
    // RecursionError, or the plugin's stack exhausted (a trap).
    let recursion = score("recurses");
    assert!(
        recursion["failure_class"] == "plugin_trap" || text("recurses").contains("RecursionError"),
        "{recursion}"
    );
    for passes in ["clock", "environment", "print", "after"] {
        assert_eq!(row(passes)["status"], "passed", "{passes}: {}", row(passes));
    }
    for denied in ["files", "network"] {
        assert_ne!(row(denied)["status"], "passed", "{denied}: {}", row(denied));
        assert!(
            text(denied).starts_with("Python code execution failed: "),
            "{denied}: {}",
            text(denied)
        );
    }
    assert!(
        text("modules").contains("No module named 'numpy'"),
        "{}",
        text("modules")
    );
    assert_eq!(
        score("print")["assertions"][0]["evidence"],
        "print:\nseen 42"
    );
}
