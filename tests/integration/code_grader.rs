//! The code-grader bridge: AgentV's stdin payload and stdout protocol, the
//! command started by the host through the `exec` capability, refused under
//! `--sandbox strict`, and the large-output `output_path` case.

use serde_json::Value;

use crate::support::{Project, run_in};

fn grader_project(response: &str) -> Project {
    let project = Project::with_mock(response);
    // Prints a JSON verdict from the payload it reads: the score is whether
    // the output contains the configured word; the payload keys are echoed
    // as evidence so the test can check them.
    project.write(
        "graders/check.py",
        r#"import json, sys
p = json.load(sys.stdin)
word = p["config"]["word"]
text = p["output"] if p["output"] is not None else json.load(open(p["output_path"]))
ok = word in text
print(json.dumps({"score": 1 if ok else 0, "assertions": [{"text": "contains " + word, "passed": ok, "evidence": ",".join(sorted(p.keys()))}]}))
"#,
    );
    project
}

#[test]
fn a_code_grader_reads_the_payload_and_scores() {
    let project = grader_project("the answer is Paris");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: yes\n    input: q\n    criteria: names Paris\n    assertions:\n      - {type: code-grader, command: [python3, graders/check.py], word: Paris}\n  - id: no\n    input: q\n    assertions:\n      - {type: code_grader, command: \"python3 graders/check.py\", config: {word: Rome}}\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let yes = project.row("yes");
    assert_eq!(yes["scores"][0]["score"], 1.0);
    let keys = yes["scores"][0]["assertions"][0]["evidence"]
        .as_str()
        .unwrap();
    for key in [
        "config",
        "criteria",
        "expected_output",
        "file_changes",
        "input",
        "input_files",
        "messages",
        "metadata",
        "output",
        "trace",
        "trace_summary",
        "workspace_path",
    ] {
        assert!(
            keys.split(',').any(|k| k == key),
            "payload lacks {key}: {keys}"
        );
    }
    assert_eq!(project.row("no")["scores"][0]["score"], 0.0);
}

#[test]
fn sandbox_strict_refuses_exec_naming_the_grant() {
    let project = grader_project("Paris");
    project.write("EVAL.yaml", "tests:\n  - id: t\n    input: q\n    assertions:\n      - {type: code-grader, command: [python3, graders/check.py], word: Paris}\n");
    let r = run_in(
        project.path(),
        &["run", "EVAL.yaml", "-o", "out", "--sandbox", "strict"],
    );
    // A refused grant is the grader's failure, not a verdict on the
    // output: an execution error.
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(project.row("t")["status"], "error");
    let s = &project.row("t")["scores"][0];
    assert_eq!(s["failure_class"], "plugin_error");
    let error = s["error"].as_str().unwrap();
    assert!(error.contains("was not granted the `exec` capability: `--sandbox strict` refuses it (assertion `code-grader`, type `code-grader`)"), "{error}");
}

#[test]
fn an_allow_list_limits_the_commands() {
    let project = grader_project("Paris");
    project.write("EVAL.yaml", "execution:\n  allow_commands: [bash]\ntests:\n  - id: t\n    input: q\n    assertions:\n      - {type: code-grader, command: [python3, graders/check.py], word: Paris}\n");
    assert_eq!(project.run(&[]).code, 3);
    let error: Value = project.row("t")["scores"][0]["error"].clone();
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("`python3` is not in the suite's allow-list"),
        "{error}"
    );
}

#[test]
fn an_allow_list_is_not_bypassed_through_a_shell_line() {
    // `python3` is allowed; a string command that chains another program
    // after it must not run that program.
    let project = grader_project("Paris");
    project.write("EVAL.yaml", "execution:\n  allow_commands: [python3]\ntests:\n  - id: chained\n    input: q\n    assertions:\n      - {type: code-grader, command: \"python3 graders/check.py; touch PWNED-ALLOW\", word: Paris}\n  - id: plain\n    input: q\n    assertions:\n      - {type: code-grader, command: \"python3 'graders/check.py'\", word: Paris}\n");
    assert_eq!(project.run(&[]).code, 1);
    assert!(!project.path().join("PWNED-ALLOW").exists());
    let error = project.row("chained")["scores"][0]["error"].clone();
    assert!(
        error.as_str().unwrap().contains("must be plain words"),
        "{error}"
    );
    // A plain command line still runs (without a shell).
    assert_eq!(project.row("plain")["scores"][0]["score"], 1.0);
}

#[test]
fn a_large_output_goes_through_output_path() {
    let big = format!("{}Paris", "x".repeat(60_000));
    let project = grader_project(&big);
    project.write("EVAL.yaml", "tests:\n  - id: big\n    input: q\n    assertions:\n      - {type: code-grader, command: [python3, graders/check.py], word: Paris}\n");
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let keys = project.row("big")["scores"][0]["assertions"][0]["evidence"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(keys.split(',').any(|k| k == "output_path"), "{keys}");
}

#[test]
fn a_custom_assertion_type_from_agentv_assertions_runs_as_agentv_runs_it() {
    // `.agentv/assertions/<type>.ts` defines `<type>`; AgentV runs it with
    // `bun run`. A stand-in `bun` on the PATH runs the script with sh.
    let project = crate::support::Project::with_mock("Hello there friend");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    let bin = project.path().join("bin");
    project.write(
        "bin/bun",
        "#!/bin/sh\n[ \"$1\" = run ] || exit 9\nshift\nexec sh \"$@\"\n",
    );
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("bun"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    project.write(
        ".agentv/assertions/min-words.ts",
        "payload=$(cat)\ncase \"$payload\" in\n  *'\"output\": \"Hello there friend\"'*) echo '{\"score\": 1, \"assertions\": [{\"text\": \"3 words\", \"passed\": true}]}';;\n  *) echo '{\"score\": 0.2}';;\nesac\n",
    );
    project.write(
        "evals/EVAL.yaml",
        "tests:\n  - id: greet\n    input: Say hello\n    assertions:\n      - type: min-words\n      - {type: min-words, name: with-config, minimum: 3}\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |out: &str, extra: &[&str]| -> crate::support::Run {
        let mut args = vec!["run", "evals/EVAL.yaml", "-o", out];
        args.extend_from_slice(extra);
        crate::support::evalhost()
            .current_dir(project.path())
            .env("PATH", &path)
            .args(&args)
            .output()
            .unwrap()
            .into()
    };
    let r = run("out", &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("`min-words` is a custom assertion type (.agentv/assertions/min-words.ts): it runs on the host as `bun run "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("is not given `minimum`"), "{}", r.stderr);
    let row = project.row("greet");
    assert_eq!(row["scores"][0]["type"], "min-words", "{row}");
    assert_eq!(row["scores"][0]["score"], 1.0, "{row}");
    assert_eq!(row["scores"][0]["assertions"][0]["text"], "3 words");

    // Under --sandbox strict it does not run.
    let targets = project.path().join(".evalhost/targets.yaml");
    let r = run(
        "strict",
        &[
            "--sandbox",
            "strict",
            "--targets",
            targets.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let rows = std::fs::read_to_string(project.path().join("strict/results.jsonl")).unwrap();
    assert!(rows.contains("--sandbox strict"), "{rows}");
}

/// AgentV's `sdk-custom-assertion` example, sandboxed: its
/// `.agentv/assertions/word-count.ts` (`defineAssertion`) is bundled and
/// compiled into a component (where Node.js and npm are here), runs under
/// `--sandbox strict` with no host command, and scores the outputs AgentV
/// recorded in its baseline as AgentV scored them; other outputs as the
/// script's own rule says.
#[test]
fn agentvs_typescript_assertion_example_runs_sandboxed_and_scores_as_agentv() {
    let has = |p: &str| {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(p).is_file()))
    };
    if !(has("node") && has("npm")) {
        assert!(
            std::env::var_os("EVALHOST_REQUIRE_NODE").is_none(),
            "EVALHOST_REQUIRE_NODE is set but node or npm is not on PATH"
        );
        eprintln!("code_grader: no node/npm; the sandboxed AgentV assertion is not built");
        return;
    }
    let data = crate::support::root().join("tests/data/agentv-assertions");
    let corpus =
        crate::support::root().join("../shared/corpus/agentv-4.42.4/features/sdk-custom-assertion");
    if corpus.is_dir() {
        assert_eq!(
            std::fs::read(corpus.join(".agentv/assertions/word-count.ts")).unwrap(),
            std::fs::read(data.join("word-count.ts")).unwrap()
        );
    }
    let project = crate::support::Project::with_mock("unused");
    std::fs::create_dir_all(project.path().join(".agentv/assertions")).unwrap();
    std::fs::copy(
        data.join("word-count.ts"),
        project.path().join(".agentv/assertions/word-count.ts"),
    )
    .unwrap();
    let answers = project.path().join("answers");
    std::fs::create_dir_all(&answers).unwrap();
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        format!(
            "targets:\n  - {{name: default, provider: cli, command: \"cat {}/{{EVAL_ID}}.txt > {{OUTPUT_FILE}}\"}}\n",
            answers.display()
        ),
    )
    .unwrap();
    // AgentV's recorded answers and its word-count scores, then short ones.
    let mut expected: Vec<(String, f64)> = Vec::new();
    for line in std::fs::read_to_string(data.join("word-count.baseline.jsonl"))
        .unwrap()
        .lines()
    {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = row["test_id"].as_str().unwrap().to_owned();
        std::fs::write(
            answers.join(format!("{id}.txt")),
            row["answer"].as_str().unwrap(),
        )
        .unwrap();
        let score = row["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["type"] == "word-count")
            .unwrap()["score"]
            .as_f64()
            .unwrap();
        expected.push((id, score));
    }
    for (id, text) in [("one-word", "Hi"), ("two-words", "Hi there"), ("empty", "")] {
        std::fs::write(answers.join(format!("{id}.txt")), text).unwrap();
        let words = text.split_whitespace().count() as f64;
        expected.push((
            id.to_owned(),
            if words >= 3.0 {
                1.0
            } else {
                (words / 3.0).min(0.9)
            },
        ));
    }
    let mut suite = String::from("tests:\n");
    for (id, _) in &expected {
        suite.push_str(&format!(
            "  - id: {id}\n    input: q\n    assertions: [{{type: word-count}}]\n"
        ));
    }
    project.write("EVAL.yaml", &suite);
    // The targets file is trusted by naming it; the assertion needs no trust.
    let targets = project.path().join(".evalhost/targets.yaml");
    let r = project.run(&[
        "--sandbox",
        "strict",
        "--targets",
        targets.to_str().unwrap(),
    ]);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("runs on the host"), "{}", r.stderr);
    assert!(
        format!("{}{}", r.stdout, r.stderr).contains("agentv-assertion-word-count"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    for (id, score) in &expected {
        let row = project.row(id);
        let got = row["scores"][0]["score"].as_f64().unwrap();
        assert!(
            (got - score).abs() < 1e-12,
            "{id}: {got} vs AgentV's {score}: {row}"
        );
        assert_eq!(
            row["scores"][0]["verdict"],
            if *score >= 0.8 { "pass" } else { "fail" },
            "{id}"
        );
    }
}
