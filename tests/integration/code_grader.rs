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
