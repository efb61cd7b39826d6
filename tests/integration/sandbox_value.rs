//! The sandbox as a value (issue 47): the holes the fourth red-team pass
//! (`shared/reference/redteam-4.md`) and the fourth code review
//! (`code-review-4.md`) found in `--isolate`, each reproduced and shown
//! closed. Each test names its finding.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::isolation::bwrap_works;
use crate::support::{Project, evalhost};

/// A targets file of the operator's (outside the project) with one `cli`
/// target running `command`.
fn operator_targets(dir: &Path, command: &str) -> String {
    let path = dir.join("op-targets.yaml");
    let targets = serde_json::json!({
        "targets": [{"name": "default", "provider": "cli", "command": command}]
    });
    std::fs::write(&path, targets.to_string()).unwrap();
    path.display().to_string()
}

/// Runs `evalhost` with `args` in `cwd`, killed after `limit` (a hang is a
/// failure, not a stuck test run).
fn run_bounded(cwd: &Path, args: &[&str], limit: Duration) -> crate::support::Run {
    let mut child = evalhost()
        .current_dir(cwd)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("evalhost {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap().into()
}

fn git_init(dir: &Path) {
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// Finding 1 (high) and 14: a static workspace at the project root made the
/// project, `.git/` included, writable to the confined target (a clean
/// filter it planted ran on the host later); with the project's history in
/// it, the baseline failed on the hidden file. Now such a workspace is
/// refused under `--isolate`, naming the file and the reason, and nothing
/// is written.
#[test]
fn a_static_workspace_holding_the_project_is_refused_under_isolate() {
    if !bwrap_works() {
        return;
    }
    let project = Project::with_mock("hi");
    git_init(project.path());
    let config = std::fs::read_to_string(project.path().join(".git/config")).unwrap();
    project.write("f", "data\n");
    project.write(
        "EVAL.yaml",
        "workspace:\n  mode: static\n  path: .\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: wrote}]\n",
    );
    let scratch = tempfile::tempdir().unwrap();
    let targets = operator_targets(
        scratch.path(),
        "printf '[filter \"x\"]\\n\\tclean = touch PWNED && cat\\n' >> .git/config; echo '* filter=x' > .gitattributes; echo wrote > {OUTPUT_FILE}",
    );
    for flags in [
        &["--isolate"][..],
        &["--sandbox", "strict", "--isolate"][..],
    ] {
        let mut args = vec!["run", "EVAL.yaml", "-o", "out", "--targets", &targets];
        args.extend_from_slice(flags);
        let r = crate::support::run_in(project.path(), &args);
        assert_eq!(r.code, 2, "{flags:?}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("static workspace") && r.stderr.contains("EVAL.yaml"),
            "{}",
            r.stderr
        );
        assert_eq!(
            std::fs::read_to_string(project.path().join(".git/config")).unwrap(),
            config
        );
        assert!(!project.path().join(".gitattributes").exists());
    }
    // Finding 14: after an ordinary run the project holds its history; a
    // static workspace over it is refused as clearly (it failed its
    // baseline on the hidden results.db before).
    let r = project.run(&["--targets", &targets]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let r = project.run(&["--isolate", "--targets", &targets]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("static workspace"), "{}", r.stderr);
    assert!(!r.stderr.contains("baseline failed"), "{}", r.stderr);
}

/// Finding 2 (high): a session agent in a suite without a workspace got
/// the directory evalhost was started from, read-write. Now it runs in a
/// private empty directory of the case.
#[test]
fn a_session_agent_without_a_workspace_never_gets_evalhosts_directory() {
    if !bwrap_works() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let claude = scratch.path().join("claude");
    std::fs::write(
        &claude,
        r#"#!/usr/bin/python3
import sys, json, os
try:
    open("AGENT-WROTE-HERE.txt", "w").write("x"); msg = "wrote " + os.getcwd()
except Exception as e:
    msg = "denied " + str(e)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "control_request":
        print(json.dumps({"type": "control_response", "response": {"subtype": "success", "request_id": m["request_id"], "response": {}}}), flush=True)
    if m.get("type") == "user":
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": msg, "total_cost_usd": 0, "usage": {}}), flush=True); break
"#,
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let suite = scratch.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(
        suite.join("EVAL.yaml"),
        "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: wrote}]\n",
    )
    .unwrap();
    let targets = scratch.path().join("sdk.yaml");
    std::fs::write(
        &targets,
        format!(
            "targets:\n  - {{name: default, provider: claude-sdk, executable: {}}}\n",
            claude.display()
        ),
    )
    .unwrap();
    let opcwd = scratch.path().join("opcwd");
    std::fs::create_dir_all(&opcwd).unwrap();
    let out = scratch.path().join("out");
    let r = crate::support::run_in(
        &opcwd,
        &[
            "run",
            &suite.join("EVAL.yaml").display().to_string(),
            "--isolate",
            "--targets",
            &targets.display().to_string(),
            "-o",
            &out.display().to_string(),
        ],
    );
    assert!(
        !opcwd.join("AGENT-WROTE-HERE.txt").exists(),
        "the agent wrote evalhost's directory: {}",
        r.stderr
    );
    let row: Value = serde_json::from_str(
        std::fs::read_to_string(out.join("results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let output = row["output"].as_str().unwrap_or_default();
    assert!(
        output.starts_with("wrote ") && !output.contains(&opcwd.display().to_string()),
        "{row}"
    );
}

/// Finding 3 (high): a hook's or code grader's `cwd: /` bound the host's
/// whole root into the sandbox. Now a `cwd` outside the case workspace and
/// the project is refused before anything starts, the grader's assertion
/// failing with the reason, the hook's case with its error.
#[test]
fn a_cwd_outside_the_workspace_and_the_project_is_refused() {
    if !bwrap_works() {
        return;
    }
    let project = Project::with_mock("hi");
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("secret"), "SECRET-IN-HOME\n").unwrap();
    let secret = home.path().join("secret").display().to_string();
    project.write(
        "probe.sh",
        &format!(
            "s=$(cat {secret} 2>/dev/null)\nprintf '{{\"score\": 1, \"assertions\": [{{\"text\": \"cwd=%s secret=%s\", \"passed\": true}}]}}\\n' \"$(pwd)\" \"$s\"\n"
        ),
    );
    let probe = project.path().join("probe.sh").display().to_string();
    project.write(
        "EVAL.yaml",
        &format!(
            "tests:\n  - id: grader\n    input: hi\n    assertions:\n      - {{type: code-grader, cwd: /, command: [/bin/sh, {probe}]}}\n  - id: inside\n    input: hi\n    assertions:\n      - {{type: code-grader, command: [/bin/sh, {probe}]}}\n"
        ),
    );
    let r = project.run(&["--isolate"]);
    // The grader's assertion fails with the reason.
    assert_eq!(r.code, 1, "{}", r.stderr);
    let grader = project.row("grader");
    let text = grader.to_string();
    assert!(!text.contains("SECRET-IN-HOME"), "{text}");
    assert!(text.contains("outside the case workspace"), "{text}");
    assert_eq!(grader["score"], 0.0, "{grader}");
    // The same grader in the project still runs, and sees no secret.
    let inside = project.row("inside");
    assert_eq!(inside["score"], 1.0, "{inside}");
    assert!(!inside.to_string().contains("SECRET-IN-HOME"), "{inside}");
    // A hook's `cwd: /`.
    project.write(
        "EVAL.yaml",
        &format!(
            "workspace:\n  hooks:\n    before_each: {{command: [/bin/sh, -c, 'cat {secret} > $EVALHOST_WORKSPACE_PATH/leak'], cwd: /}}\ntests:\n  - id: hook\n    input: hi\n    assertions: [{{type: contains, value: hi}}]\n"
        ),
    );
    let r = project.run(&["--isolate", "--keep-workspaces"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let row = project.row("hook");
    assert!(
        row["error"]
            .as_str()
            .unwrap_or_default()
            .contains("outside the case workspace"),
        "{row}"
    );
    assert!(!row.to_string().contains("SECRET-IN-HOME"), "{row}");
}

/// Finding 4: a FIFO in a workspace template hung evalhost for good while
/// it copied the template (strict included). Now it is refused by name.
#[test]
fn a_fifo_in_a_template_is_refused_not_waited_on() {
    let project = Project::with_mock("hi");
    std::fs::create_dir_all(project.path().join("template")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(project.path().join("template/fifo"))
        .status()
        .unwrap()
        .success();
    assert!(made);
    project.write(
        "EVAL.yaml",
        "workspace:\n  template: ./template\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let r = run_bounded(
        project.path(),
        &["run", "EVAL.yaml", "-o", "out", "--sandbox", "strict"],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    let row = project.row("t1");
    assert!(
        row["error"].as_str().unwrap_or_default().contains("FIFO"),
        "{row}"
    );
}

/// Finding 7: the project's `.env` and `.git/config` (where a CI checkout
/// keeps its token) were readable in the sandbox. Now they are hidden, as
/// `.evalhost/` is, while the rest of the project stays readable.
#[test]
fn the_projects_secrets_are_hidden_from_the_sandbox() {
    if !bwrap_works() {
        return;
    }
    let project = Project::with_mock("hi");
    git_init(project.path());
    let ok = std::process::Command::new("git")
        .args([
            "config",
            "http.https://github.com/.extraheader",
            "AUTHORIZATION: basic eC1hY2Nlc3M=",
        ])
        .current_dir(project.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    project.write(".env", "OPENAI_API_KEY=sk-from-dotenv\n");
    project.write(".env.local", "OTHER_KEY=sk-local\n");
    project.write("notes.txt", "readable notes\n");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: readable notes}]\n",
    );
    let scratch = tempfile::tempdir().unwrap();
    let dir = project.path().display().to_string();
    let targets = operator_targets(
        scratch.path(),
        &format!(
            "cat {dir}/.env {dir}/.env.local {dir}/.git/config {dir}/.evalhost/targets.yaml {dir}/notes.txt > {{OUTPUT_FILE}} 2>&1; true"
        ),
    );
    let r = project.run(&["--isolate", "--targets", &targets]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let output = project.row("t1")["output"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for secret in ["sk-from-dotenv", "sk-local", "extraheader", "mock"] {
        assert!(!output.contains(secret), "{secret} leaked: {output}");
    }
    assert!(output.contains("readable notes"), "{output}");
}

/// Finding 11: the run's workspaces lived in `$TMPDIR/evalhost-workspaces`
/// whoever owned it, under a predictable name. Now in a directory of this
/// user's only, named unpredictably.
#[test]
fn the_runs_workspaces_live_in_a_private_directory() {
    use std::os::unix::fs::PermissionsExt as _;
    let project = Project::with_mock("hi");
    project.write("template/a.txt", "a\n");
    project.write(
        "EVAL.yaml",
        "workspace:\n  template: ./template\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let r = project.run(&["--keep-workspaces"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ws = project.row("t1")["workspace_path"]
        .as_str()
        .unwrap()
        .to_owned();
    let root = Path::new(&ws).parent().unwrap();
    let mode = std::fs::metadata(root).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", root.display());
    assert_ne!(
        root.parent().unwrap(),
        std::env::temp_dir().join("evalhost-workspaces")
    );
    let _ = std::fs::remove_dir_all(root);
}

/// B1: graders inside `composite` ran on threads that did not know the
/// case: under `--isolate` they vanished from the row's sandbox record and
/// got a budget of their own. Now every member is recorded.
#[test]
fn graders_inside_a_group_run_in_the_cases_sandbox() {
    if !bwrap_works() {
        return;
    }
    let project = Project::with_mock("hi");
    project.write(
        "ok.sh",
        "cat > /dev/null\necho '{\"score\": 1, \"assertions\": [{\"text\": \"ok\", \"passed\": true}]}'\n",
    );
    let ok = project.path().join("ok.sh").display().to_string();
    project.write(
        "EVAL.yaml",
        &format!(
            "tests:\n  - id: t1\n    input: hi\n    assertions:\n      - type: composite\n        aggregator: {{type: weighted_average}}\n        assertions:\n          - {{name: a, type: code-grader, command: [/bin/sh, {ok}]}}\n          - {{name: b, type: code-grader, command: [/bin/sh, {ok}]}}\n"
        ),
    );
    let r = project.run(&["--isolate"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = project.row("t1");
    let graders = row["sandbox"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["role"] == "code-grader")
        .count();
    assert_eq!(graders, 2, "{}", row["sandbox"]);
}

/// B2 (a): an answer over 50 KB reaches a code grader as a file
/// (`output_path`), which the grader's sandbox could not see.
#[test]
fn a_large_answer_reaches_an_isolated_code_grader() {
    if !bwrap_works() {
        return;
    }
    let big = format!("{}Paris", "x".repeat(60_000));
    let project = Project::with_mock(&big);
    project.write(
        "check.py",
        "import json, sys\np = json.load(sys.stdin)\ntext = p['output'] if p['output'] is not None else json.load(open(p['output_path']))\nok = 'Paris' in text\nprint(json.dumps({'score': 1 if ok else 0, 'assertions': [{'text': 'read', 'passed': ok}]}))\n",
    );
    let check = project.path().join("check.py").display().to_string();
    project.write(
        "EVAL.yaml",
        &format!(
            "tests:\n  - id: big\n    input: q\n    assertions:\n      - {{type: code-grader, command: [python3, {check}]}}\n"
        ),
    );
    let r = project.run(&["--isolate"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(project.row("big")["score"], 1.0);
}

/// B8: a command that leaves a background child holding its output (a
/// hook starting a server with `&`) held its caller for ever, past every
/// deadline. Now the rest of its group is stopped shortly after it exits.
#[test]
fn a_background_child_holding_the_output_does_not_hang_the_run() {
    let project = Project::with_mock("hi");
    project.write(
        "EVAL.yaml",
        "workspace:\n  hooks:\n    before_all: {command: [/bin/sh, -c, 'sleep 600 & echo started']}\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let r = run_bounded(
        project.path(),
        &["run", "EVAL.yaml", "-o", "out"],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Finding 1, second half: evalhost's own `git status` (the run's git
/// metadata, in an ordinary run of your own repository) ran a clean filter
/// planted in `.git/config`. Now every filter is emptied for that call.
#[test]
fn a_planted_git_filter_does_not_run_when_evalhost_reads_the_projects_state() {
    let project = Project::with_mock("hi");
    git_init(project.path());
    project.write("f", "data\n");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(project.path())
            .output()
            .unwrap()
    };
    git(&["add", "f"]);
    git(&["commit", "-qm", "init"]);
    let pwned = project.path().join("PWNED");
    let mut config = std::fs::read_to_string(project.path().join(".git/config")).unwrap();
    config.push_str(&format!(
        "[filter \"x\"]\n\tclean = touch {0} && cat\n\tprocess = touch {0}\n\trequired = true\n",
        pwned.display()
    ));
    std::fs::write(project.path().join(".git/config"), config).unwrap();
    project.write(".gitattributes", "* filter=x\n");
    // The file's stat changes, so git must hash it again.
    std::fs::remove_file(project.path().join("f")).unwrap();
    project.write("f", "data\n");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !pwned.exists(),
        "evalhost's git status ran the planted filter"
    );
}

/// Finding 10: an `--isolate-root` tarball unpacked the device nodes it
/// held outside `dev/` into evalhost's cache, and a roots cache of another
/// user's was used as it was. Now every device node, FIFO and socket is
/// removed after unpacking, and the cache must be the operator's.
#[test]
fn a_root_tarball_leaves_no_device_node_and_a_foreign_cache_is_refused() {
    if !bwrap_works() {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: tar cannot make device nodes here; not tested");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let tarball = work.path().join("dev-root.tar");
    let made = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            r#"import tarfile, sys, io
t = tarfile.open(sys.argv[1], "w")
for d in ["usr", "usr/bin", "etc"]:
    i = tarfile.TarInfo(d); i.type = tarfile.DIRTYPE; i.mode = 0o755; t.addfile(i)
for name, minor in [("etc/memdev", 1), ("usr/nulldev", 3)]:
    i = tarfile.TarInfo(name); i.type = tarfile.CHRTYPE; i.devmajor = 1; i.devminor = minor; i.mode = 0o644; t.addfile(i)
i = tarfile.TarInfo("usr/fifo"); i.type = tarfile.FIFOTYPE; i.mode = 0o644; t.addfile(i)
data = b"x\n"; i = tarfile.TarInfo("etc/plain"); i.size = len(data); t.addfile(i, io.BytesIO(data))
t.close()
"#,
        )
        .arg(&tarball)
        .status()
        .unwrap()
        .success();
    assert!(made);
    let project = Project::with_mock("hi");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let cache = work.path().join("cache");
    let run = |cache: &Path| -> crate::support::Run {
        evalhost()
            .current_dir(project.path())
            .env("EVALHOST_CACHE_DIR", cache)
            .args([
                "run",
                "EVAL.yaml",
                "-o",
                "out",
                "--isolate",
                "--isolate-root",
            ])
            .arg(&tarball)
            .output()
            .unwrap()
            .into()
    };
    // The root has no programs, so the run itself may refuse: what is
    // checked is what was unpacked.
    let _ = run(&cache);
    let roots = cache.join("roots");
    let unpacked: Vec<_> = std::fs::read_dir(&roots)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("etc").is_dir())
        .collect();
    assert_eq!(unpacked.len(), 1, "{unpacked:?}");
    let root = &unpacked[0];
    assert!(root.join("etc/plain").is_file());
    for special in ["etc/memdev", "usr/nulldev", "usr/fifo"] {
        assert!(
            std::fs::symlink_metadata(root.join(special)).is_err(),
            "{special} was unpacked"
        );
    }
    // A roots cache another user owns is refused, not used.
    let foreign = work.path().join("foreign");
    std::fs::create_dir_all(foreign.join("roots")).unwrap();
    std::os::unix::fs::chown(foreign.join("roots"), Some(65534), Some(65534)).unwrap();
    let r = run(&foreign);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("roots cache"), "{}", r.stderr);
}

/// Second red-team pass, finding 1 (high): a suite's input file block
/// naming `.git/config` (or `.env`, or `.evalhost/targets.yaml`) was read
/// on the host and sent to the model, under strict and isolated too. Now a
/// suite may not name the project's secrets at all.
#[test]
fn a_suite_cannot_read_the_projects_secrets_as_input_files() {
    let project = Project::with_mock("hi");
    git_init(project.path());
    project.write(".env", "DOTENVSECRET=de456\n");
    project.write("sub/.env.local", "NESTED=1\n");
    for (file, what) in [
        (".git/config", ".git"),
        (".env", ".env"),
        (".evalhost/targets.yaml", ".evalhost"),
        ("sub/.env.local", ".env.local"),
    ] {
        project.write(
            "EVAL.yaml",
            &format!(
                "tests:\n  - id: t1\n    input:\n      - role: user\n        content: [{{type: text, text: summarize}}, {{type: file, value: {file}}}]\n    assertions: [{{type: contains, value: hi}}]\n"
            ),
        );
        let r = project.run(&["--sandbox", "strict"]);
        assert_eq!(r.code, 2, "{file}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("secrets") && r.stderr.contains(what),
            "{file}: {}",
            r.stderr
        );
    }
}

/// Second red-team pass, findings 2 and 3: secrets below the project's root
/// (a subdirectory's `.env`, git's modules' configuration, a nested
/// repository's, credentials) and a suite's own `.evalhost` history in a
/// subdirectory were readable in the sandbox.
#[test]
fn secrets_anywhere_in_the_project_and_earlier_runs_are_hidden() {
    if !bwrap_works() {
        return;
    }
    let project = Project::with_mock("hi");
    git_init(project.path());
    let root = project.path().display().to_string();
    project.write("sub/.env", "SUBSECRET=1\n");
    project.write("sub/deep/.env.production", "DEEPSECRET=1\n");
    project.write("sub/.netrc", "machine x login u password NETRCSECRET\n");
    project.write(".git/modules/m/config", "url=https://user:MODPASS@x\n");
    project.write("sub/deep/.git/config", "url=https://u:NESTEDPASS@x\n");
    project.write("sub/.evalhost/runs/old/results.jsonl", "OLDROW\n");
    project.write(
        "sub/.evalhost/targets.yaml",
        "targets: [{name: default, provider: mock, response: hi}]\n",
    );
    project.write(
        "sub/dump.sh",
        &format!(
            "cat > /dev/null\nall=$(cat {root}/sub/.env {root}/sub/deep/.env.production {root}/sub/.netrc {root}/.git/modules/m/config {root}/sub/deep/.git/config {root}/sub/.evalhost/runs/old/results.jsonl 2>/dev/null | tr -d '\\n\"')\nprintf '{{\"score\": 1, \"assertions\": [{{\"text\": \"saw %s\", \"passed\": true}}]}}\\n' \"$all\"\n"
        ),
    );
    project.write(
        "sub/EVAL.yaml",
        &format!(
            "tests:\n  - id: t1\n    input: hi\n    assertions:\n      - {{type: code-grader, command: [/bin/sh, {root}/sub/dump.sh]}}\n"
        ),
    );
    let r = crate::support::run_in(
        project.path(),
        &["run", "sub/EVAL.yaml", "-o", "out", "--isolate"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = project.row("t1").to_string();
    for secret in [
        "SUBSECRET",
        "DEEPSECRET",
        "NETRCSECRET",
        "MODPASS",
        "NESTEDPASS",
        "OLDROW",
    ] {
        assert!(!row.contains(secret), "{secret} was read: {row}");
    }
    assert!(row.contains("saw"), "{row}");
}

/// Second red-team pass, finding 4: a repository `path` through a link the
/// template brought made directories on the host, outside the workspace,
/// before it was refused.
#[test]
fn a_repo_path_through_a_template_link_makes_nothing_outside() {
    let project = Project::with_mock("hi");
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join("tpl")).unwrap();
    std::os::unix::fs::symlink(outside.path(), project.path().join("tpl/up")).unwrap();
    project.write("src/a.txt", "a\n");
    git_init(&project.path().join("src"));
    let ok = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "i",
            "--allow-empty",
        ])
        .current_dir(project.path().join("src"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    project.write(
        "EVAL.yaml",
        "workspace:\n  template: ./tpl\n  repos: [{path: ./up/PROOF/a/b, source: {type: local, path: ./src}}]\ntests:\n  - id: t1\n    input: a\n    assertions: [{type: contains, value: hi}]\n",
    );
    let r = project.run(&["--sandbox", "strict"]);
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(
        !outside.path().join("PROOF").exists(),
        "a directory was made through the link: {}",
        r.stderr
    );
    let said =
        std::fs::read_to_string(project.path().join("out/results.jsonl")).unwrap_or_default();
    assert!(
        r.stderr.contains("is a link") || said.contains("is a link"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}
