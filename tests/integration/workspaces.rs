//! Workspaces and hooks: templates copied per case or shared, repos from a
//! local git source, hooks with stdin and placeholders, failures of each
//! hook, kept workspaces, the diff of what the agent changed, and the
//! SWE-style example end to end.

use serde_json::Value;

use crate::support::{Project, root, run_in};

fn project(targets: &str, suite: &str) -> Project {
    let project = Project::with_mock("unused");
    std::fs::write(project.path().join(".evalhost/targets.yaml"), targets).unwrap();
    project.write("EVAL.yaml", suite);
    project.write("template/seed.txt", "seed\n");
    project
}

/// A cli target that appends the test id to `log.txt` in its workspace and
/// answers with the workspace's files.
const LOGGING_AGENT: &str = "targets:\n  - name: default\n    provider: cli\n    command: \"echo {EVAL_ID} >> log.txt; ls | tr '\\\\n' ' ' > {OUTPUT_FILE}; cat log.txt >> {OUTPUT_FILE}\"\n";

#[test]
fn per_test_workspaces_are_separate_and_shared_ones_are_not() {
    let per_test = "workspace: {template: ./template}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: seed}]}\n  - {id: b, input: q, assertions: [{type: contains, value: seed}]}\n";
    let p = project(LOGGING_AGENT, per_test);
    let r = p.run(&["-j", "1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        p.row("b")["output"],
        "log.txt seed.txt b\n",
        "b did not see a's log"
    );
    let changes = p.row("a")["file_changes"].as_str().unwrap().to_owned();
    assert!(
        changes.contains("+++ b/log.txt") && changes.contains("+a"),
        "{changes}"
    );
    assert!(
        p.row("a").get("workspace_path").is_none(),
        "a passing case's workspace is removed"
    );

    let shared = per_test.replace(
        "{template: ./template}",
        "{template: ./template, isolation: shared}",
    );
    let p = project(LOGGING_AGENT, &shared);
    let r = p.run(&["-j", "4"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("running one case at a time"),
        "{}",
        r.stderr
    );
    assert_eq!(
        p.row("b")["output"],
        "log.txt seed.txt a\nb\n",
        "b ran after a in the same workspace"
    );
}

#[test]
fn hooks_get_placeholders_and_stdin_and_their_output_is_recorded() {
    let suite = r#"workspace:
  template: ./template
  hooks:
    before_each:
      command: [sh, -c, "cat > '{{workspace_path}}/payload.json'; echo prepared {{test_id}}"]
    after_each:
      command: "echo cleaning up; exit 3"
tests:
  - id: hooked
    input: Fix it
    metadata: {ticket: T-1}
    assertions: [{type: contains, value: payload}]
"#;
    let targets = "targets:\n  - {name: default, provider: cli, command: \"cat payload.json > {OUTPUT_FILE}; echo ' payload' >> {OUTPUT_FILE}\"}\n";
    let p = project(targets, suite);
    let r = p.run(&[]);
    assert_eq!(
        r.code, 0,
        "an after_each failure is recorded, not fatal: {}",
        r.stderr
    );
    let row = p.row("hooked");
    let output = row["output"].as_str().unwrap();
    let payload: Value =
        serde_json::from_str(output.trim_end().trim_end_matches("payload")).unwrap();
    assert_eq!(payload["test_id"], "hooked");
    assert_eq!(payload["case_input"], "Fix it");
    assert_eq!(payload["case_metadata"]["ticket"], "T-1");
    assert!(
        payload["workspace_path"]
            .as_str()
            .unwrap()
            .contains("evalhost-workspaces")
    );
    assert!(payload["eval_run_id"].as_str().is_some());
    assert_eq!(row["hooks"]["before_each"]["output"], "prepared hooked\n");
    assert_eq!(
        row["hooks"]["after_each"]["error"],
        "Script failed: Process exited with code 3"
    );
}

#[test]
fn a_failing_before_each_fails_its_case_with_class_workspace_and_keeps_the_workspace() {
    let suite = "workspace:\n  template: ./template\n  hooks:\n    before_each:\n      command: \"test {{test_id}} != bad || (echo 'patch does not apply' >&2; exit 1)\"\ntests:\n  - {id: bad, input: q, assertions: [{type: contains, value: seed}]}\n  - {id: good, input: q, assertions: [{type: contains, value: seed}]}\n";
    let p = project(LOGGING_AGENT, suite);
    let r = p.run(&[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let bad = p.row("bad");
    assert_eq!(
        (bad["status"].as_str(), bad["failure_class"].as_str()),
        (Some("error"), Some("workspace"))
    );
    assert_eq!(
        bad["error"],
        "before_each hook: Script failed: patch does not apply"
    );
    let kept = bad["workspace_path"].as_str().unwrap();
    assert!(
        std::path::Path::new(kept).join("seed.txt").is_file(),
        "the failed case's workspace is kept"
    );
    assert!(r.stdout.contains("kept workspaces (1):"), "{}", r.stdout);
    assert_eq!(p.row("good")["status"], "passed");
    let _ = std::fs::remove_dir_all(kept);
}

#[test]
fn a_failing_before_all_fails_every_case() {
    let suite = "workspace:\n  template: ./template\n  hooks:\n    before_all: {command: [sh, -c, 'exit 7']}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: seed}]}\n  - {id: b, input: q, assertions: [{type: contains, value: seed}]}\n";
    let p = project(LOGGING_AGENT, suite);
    let r = p.run(&[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    for id in ["a", "b"] {
        let row = p.row(id);
        assert_eq!(row["failure_class"], "workspace");
        assert_eq!(
            row["error"],
            "before_all hook: Script failed: Process exited with code 7"
        );
    }
}

#[test]
fn a_repo_from_a_local_git_source_is_checked_out_at_its_ref() {
    let p = project(LOGGING_AGENT, "");
    let origin = p.path().join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    let sh = |cmd: &str| {
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(&origin)
            .status()
            .unwrap();
        assert!(ok.success(), "{cmd}");
    };
    sh(
        "git init -q -b main && git config user.email t@t && git config user.name t && echo v1 > VERSION && git add -A && git commit -qm one && git tag v1 && echo v2 > VERSION && git commit -qam two",
    );
    let targets = "targets:\n  - {name: default, provider: cli, command: \"cat repo/VERSION > {OUTPUT_FILE}\"}\n";
    std::fs::write(p.path().join(".evalhost/targets.yaml"), targets).unwrap();
    p.write(
        "EVAL.yaml",
        "workspace:\n  repos:\n    - path: ./repo\n      source: {type: local, path: ./origin}\n      checkout: {ref: v1}\n      clone: {depth: 1}\ntests:\n  - {id: pinned, input: q, assertions: [{type: equals, value: v1}]}\n",
    );
    let r = p.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(p.row("pinned")["output"], "v1\n");
}

#[test]
fn a_github_shorthand_repo_is_cloned_from_github_as_agentv_resolves_it() {
    // Offline: git's `url.<base>.insteadOf` sends https://github.com/ to a
    // directory holding a bundle named as GitHub's URL would be.
    let p = project(LOGGING_AGENT, "");
    let origin = p.path().join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    let sh = |cmd: &str, dir: &std::path::Path| {
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(ok.success(), "{cmd}");
    };
    sh(
        "git init -q -b main && git config user.email t@t && git config user.name t && echo 'widgets v3' > README && git add -A && git commit -qm one",
        &origin,
    );
    let mirror = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(mirror.path().join("acme")).unwrap();
    sh(
        &format!(
            "git bundle create -q {}/acme/widgets.git --all",
            mirror.path().display()
        ),
        &origin,
    );
    let gitconfig = mirror.path().join("gitconfig");
    std::fs::write(
        &gitconfig,
        format!(
            "[url \"{}/\"]\n\tinsteadOf = https://github.com/\n",
            mirror.path().display()
        ),
    )
    .unwrap();
    let targets = "targets:\n  - {name: default, provider: cli, command: \"cat widgets/README > {OUTPUT_FILE}\"}\n";
    std::fs::write(p.path().join(".evalhost/targets.yaml"), targets).unwrap();
    p.write(
        "EVAL.yaml",
        "workspace:\n  repos:\n    - {path: widgets, repo: acme/widgets}\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: widgets v3}]}\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(p.path())
        .env("GIT_CONFIG_GLOBAL", &gitconfig)
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(p.row("t")["output"], "widgets v3\n");

    // Without the mirror the URL is GitHub's, which names the repository.
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(p.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ALLOW_PROTOCOL", "file")
        .args(["run", "EVAL.yaml", "-o", "offline"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("https://github.com/acme/widgets.git")
            || r.stderr.contains("https://github.com/acme/widgets.git"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn a_static_workspace_is_one_directory_kept_across_cases_and_runs() {
    let suite = "workspace: {path: ./ws, template: ./template}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: seed}]}\n  - {id: b, input: q, assertions: [{type: contains, value: seed}]}\n";
    let p = project(LOGGING_AGENT, suite);
    let r = p.run(&["-j", "2"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let log = std::fs::read_to_string(p.path().join("ws/log.txt")).unwrap();
    assert_eq!(
        log, "a\nb\n",
        "both cases wrote to the one directory, one at a time"
    );
    assert!(
        p.path().join("ws/seed.txt").is_file(),
        "built from the template"
    );
    // Nothing is written beside it, and the next run reuses it as it is.
    let siblings: Vec<String> = std::fs::read_dir(p.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("baseline"))
        .collect();
    assert!(siblings.is_empty(), "{siblings:?}");
    std::fs::remove_file(p.path().join("ws/seed.txt")).unwrap();
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(p.path())
        .args(["run", "EVAL.yaml", "-o", "again"])
        .output()
        .unwrap()
        .into();
    assert_eq!(
        r.code, 1,
        "seed.txt is gone and the template is not copied again: {}",
        r.stderr
    );
    let log = std::fs::read_to_string(p.path().join("ws/log.txt")).unwrap();
    assert_eq!(log, "a\nb\na\nb\n");
}

#[test]
fn static_workspace_mistakes_are_errors_at_their_key() {
    let cases = [
        (
            "{path: ./ws, mode: temp}",
            "workspace.path requires workspace.mode=static",
        ),
        (
            "{path: ./ws, isolation: per_test}",
            "static workspace mode is incompatible with isolation: per_test",
        ),
        (
            "{mode: static, repos: [{path: r, repo: a/b}]}",
            "workspace.mode=static requires workspace.path",
        ),
        (
            "{path: ../../elsewhere}",
            "outside the suite's project root",
        ),
        (
            "{mode: fast}",
            "workspace `mode` must be pooled, temp or static",
        ),
    ];
    for (workspace, message) in cases {
        let p = project(
            LOGGING_AGENT,
            &format!(
                "workspace: {workspace}\ntests:\n  - {{id: a, input: q, assertions: [{{type: contains, value: x}}]}}\n"
            ),
        );
        std::fs::create_dir_all(p.path().join(".git")).unwrap();
        let r = p.run(&[]);
        assert_eq!(r.code, 2, "{workspace}: {}", r.stderr);
        assert!(r.stderr.contains(message), "{workspace}: {}", r.stderr);
    }
}

#[test]
fn the_swe_style_example_passes_end_to_end_and_its_control_fails() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("run");
    let r = run_in(
        &root(),
        &[
            "run",
            "examples/swe-style/EVAL.yaml",
            "-o",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: Vec<Value> = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row["status"], "passed", "{row}");
        let changes = row["file_changes"].as_str().unwrap();
        assert!(
            changes.contains("+    return a + b") && changes.contains("+    return a * b"),
            "{changes}"
        );
        assert!(
            row["hooks"]["before_each"]["output"]
                .as_str()
                .unwrap()
                .starts_with("applied test.patch")
        );
        let grader = crate::support::score(row, "repo-tests");
        assert_eq!(
            (grader["type"].as_str(), grader["score"].as_f64()),
            (Some("code-grader"), Some(1.0))
        );
    }
    // The control target leaves the bugs: the repository's tests fail.
    let control = out.path().join("control");
    let r = run_in(
        &root(),
        &[
            "run",
            "examples/swe-style/EVAL.yaml",
            "--target",
            "do-nothing",
            "-o",
            control.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let text = std::fs::read_to_string(control.join("results.jsonl")).unwrap();
    for line in text.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        assert_eq!(row["status"], "failed");
        if let Some(kept) = row["workspace_path"].as_str() {
            let _ = std::fs::remove_dir_all(kept);
        }
    }
}

#[test]
fn preflight_checks_fail_every_case_naming_what_is_missing() {
    let suite = "workspace:\n  env:\n    required_commands: [sh, evalhost-no-such-tool]\n    required_python_modules: [evalhost_no_such_module]\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: seed}]}\n  - {id: b, input: q, assertions: [{type: contains, value: seed}]}\n";
    let p = project(LOGGING_AGENT, suite);
    let r = p.run(&[]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    for id in ["a", "b"] {
        let row = p.row(id);
        assert_eq!(row["failure_class"], "workspace", "{row}");
        let error = row["error"].as_str().unwrap();
        assert!(
            error.starts_with("Preflight checks failed — missing dependencies:"),
            "{error}"
        );
        assert!(
            error.contains("• command: evalhost-no-such-tool"),
            "{error}"
        );
        assert!(
            error.contains("• python module: evalhost_no_such_module"),
            "{error}"
        );
        assert!(!error.contains("command: sh\n"), "{error}");
    }
    assert!(!p.path().join("log.txt").exists(), "the agent never ran");
    // What passes lets the run go on; a name that could be an option is an
    // error at its key.
    p.write(
        "EVAL.yaml",
        &suite
            .replace(", evalhost-no-such-tool", "")
            .replace("[evalhost_no_such_module]", "[]")
            .replace("value: seed", "value: log.txt"),
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(p.path())
        .args(["run", "EVAL.yaml", "-o", "ok"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    p.write(
        "EVAL.yaml",
        &suite.replace("[sh, evalhost-no-such-tool]", "[--version]"),
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(p.path())
        .args(["validate", "EVAL.yaml"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("each of `required_commands` must be a program name"),
        "{}",
        r.stderr
    );
}
