//! `--isolate` (issue 38): every process evalhost starts for a case runs in
//! a bubblewrap sandbox. A `cli` target, a hook and a command code grader
//! each try to read a file from the operator's home, write outside the
//! workspace, connect to a loopback port, and read a variable the operator
//! set: under `--isolate` every attempt fails while the answer written in
//! the workspace is graded; without it they all succeed, as before. Where
//! bubblewrap cannot start, the tests say so and stop, unless
//! `EVALHOST_REQUIRE_BWRAP` is set (`.ci/run` sets it where it installed it).

use std::io::Read as _;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::support::{Project, evalhost};

/// True when bubblewrap can make a sandbox here.
fn bwrap_works() -> bool {
    let ok = std::process::Command::new("bwrap")
        .args([
            "--unshare-all",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--",
            "/usr/bin/true",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("EVALHOST_REQUIRE_BWRAP").is_none(),
            "EVALHOST_REQUIRE_BWRAP is set but bubblewrap cannot make a sandbox here"
        );
        eprintln!("isolation: bubblewrap cannot make a sandbox here; --isolate is not tested");
    }
    ok
}

/// A probe in Python: tries each escape and prints what happened, then
/// writes its answer into the current directory (the workspace) and prints
/// it. `who` names the process in its lines.
fn probe(who: &str, secret: &str, outside: &str, port: u16) -> String {
    format!(
        r#"import os, socket, sys
out = []
try:
    out.append("{who} home: read " + open({secret:?}).read().strip())
except Exception as e:
    out.append("{who} home: denied")
try:
    open(os.path.join({outside:?}, "{who}-escape.txt"), "w").write("x")
    out.append("{who} outside: wrote")
except Exception as e:
    out.append("{who} outside: denied")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    out.append("{who} network: connected")
except Exception as e:
    out.append("{who} network: denied")
out.append("{who} env: " + os.environ.get("OPERATOR_TOKEN", "missing"))
try:
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "{who}-project.txt"), "w").write("x")
    out.append("{who} project: wrote")
except Exception as e:
    out.append("{who} project: denied")
"#
    )
}

struct Fixture {
    project: Project,
    home: tempfile::TempDir,
    outside: tempfile::TempDir,
    connections: Arc<AtomicUsize>,
}

fn fixture() -> Fixture {
    let project = Project::with_mock("unused");
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    let secret = home.path().join(".ssh/id_ed25519");
    std::fs::write(&secret, "SECRET-KEY-MATERIAL\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let mut s = stream;
            let _ = s.read(&mut [0u8; 16]);
        }
    });
    let (secret, out) = (
        secret.display().to_string(),
        outside.path().display().to_string(),
    );
    // The target: its probe, then its answer in the workspace, printed.
    project.write(
        "probe_target.py",
        &format!(
            "{}open('answer.txt', 'w').write('ANSWER 42')\nout.append(open('answer.txt').read())\nprint('\\n'.join(out))\n",
            probe("target", &secret, &out, port)
        ),
    );
    // A hook: its probe into a file in the workspace the grader reads.
    project.write(
        "probe_hook.py",
        &format!(
            "{}open(os.path.join(os.environ['EVALHOST_WORKSPACE_PATH'], 'hook-report.txt'), 'w').write('\\n'.join(out))\n",
            probe("hook", &secret, &out, port)
        ),
    );
    // A command code grader: its own probe, and the hook's report, as its
    // evidence; it passes when the answer is there.
    project.write(
        "probe_grader.py",
        &format!(
            "import json\npayload = json.load(sys.stdin)\n{}ws = payload.get('workspace_path') or '.'\ntry:\n    out.append(open(os.path.join(ws, 'hook-report.txt')).read())\nexcept Exception as e:\n    out.append('no hook report: ' + str(e))\nok = 'ANSWER 42' in (payload.get('output') or '')\nprint(json.dumps({{'score': 1 if ok else 0, 'assertions': [{{'text': 'answer present', 'passed': ok, 'evidence': '\\n'.join(out)}}]}}))\n",
            probe("grader", &secret, &out, port).replacen("import os, socket, sys\n", "", 1)
        ).replacen("import json\n", "import json, os, socket, sys\n", 1),
    );
    std::fs::create_dir_all(project.path().join("template")).unwrap();
    std::fs::write(project.path().join("template/README"), "seed\n").unwrap();
    let root = project.path().display().to_string();
    project.write(
        ".evalhost/targets.yaml",
        &format!(
            "targets:\n  - name: default\n    provider: cli\n    command: \"python3 {root}/probe_target.py > {{OUTPUT_FILE}}\"\n"
        ),
    );
    project.write(
        "EVAL.yaml",
        &format!(
            "workspace:\n  template: ./template\n  hooks:\n    before_each: {{command: [python3, {root}/probe_hook.py]}}\ntests:\n  - id: escape\n    input: Try everything, then answer.\n    assertions:\n      - {{type: contains, value: ANSWER 42}}\n      - {{type: code-grader, command: [python3, {root}/probe_grader.py]}}\n"
        ),
    );
    Fixture {
        project,
        home,
        outside,
        connections,
    }
}

fn run(f: &Fixture, extra: &[&str]) -> (crate::support::Run, Value) {
    let mut args = vec!["run", "EVAL.yaml", "-o", "out"];
    args.extend_from_slice(extra);
    let _ = std::fs::remove_dir_all(f.project.path().join("out"));
    let r: crate::support::Run = evalhost()
        .current_dir(f.project.path())
        .env("HOME", f.home.path())
        .env("OPERATOR_TOKEN", "tok-operator-123")
        .args(&args)
        .output()
        .unwrap()
        .into();
    let row = if f.project.path().join("out/results.jsonl").is_file() {
        f.project.rows().into_iter().next().unwrap_or_default()
    } else {
        Value::Null
    };
    (r, row)
}

/// The lines each process printed about its attempts: the target's output,
/// the grader's evidence (its own and the hook's).
fn attempts(row: &Value) -> String {
    let grader = crate::support::score(row, "code-grader");
    format!(
        "{}\n{}",
        row["output"].as_str().unwrap_or_default(),
        grader["assertions"][0]["evidence"]
            .as_str()
            .unwrap_or_default()
    )
}

#[test]
fn isolate_confines_the_target_the_hook_and_the_grader_while_the_answer_is_graded() {
    if !bwrap_works() {
        return;
    }
    let f = fixture();

    // As before: everything reachable.
    let (r, row) = run(&f, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let seen = attempts(&row);
    for who in ["target", "hook", "grader"] {
        for line in [
            format!("{who} home: read SECRET-KEY-MATERIAL"),
            format!("{who} outside: wrote"),
            format!("{who} network: connected"),
            format!("{who} env: tok-operator-123"),
            format!("{who} project: wrote"),
        ] {
            assert!(
                seen.contains(&line),
                "without --isolate, `{line}` expected:\n{seen}"
            );
        }
    }
    assert_eq!(f.connections.load(Ordering::SeqCst), 3);
    for who in ["target", "hook", "grader"] {
        let escape = f.outside.path().join(format!("{who}-escape.txt"));
        assert!(escape.is_file());
        std::fs::remove_file(escape).unwrap();
        std::fs::remove_file(f.project.path().join(format!("{who}-project.txt"))).unwrap();
    }

    // Isolated: every attempt refused, the answer still graded.
    let (r, row) = run(&f, &["--isolate"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("isolated: each command in its own sandbox"),
        "{}",
        r.stdout
    );
    let seen = attempts(&row);
    for who in ["target", "hook", "grader"] {
        for line in [
            format!("{who} home: denied"),
            format!("{who} outside: denied"),
            format!("{who} network: denied"),
            format!("{who} env: missing"),
            format!("{who} project: denied"),
        ] {
            assert!(
                seen.contains(&line),
                "under --isolate, `{line}` expected:\n{seen}"
            );
        }
    }
    assert!(seen.contains("ANSWER 42"), "{seen}");
    assert_eq!(row["status"], "passed", "{row}");
    assert_eq!(f.connections.load(Ordering::SeqCst), 3, "no new connection");
    for who in ["target", "hook", "grader"] {
        assert!(!f.outside.path().join(format!("{who}-escape.txt")).exists());
    }
    // The project (and the run directory in it) is evalhost's to write:
    // the sandboxed processes could not.
    for who in ["target", "hook", "grader"] {
        assert!(!f.project.path().join(format!("{who}-project.txt")).exists());
    }
}

/// `--isolate` where bubblewrap is not on PATH refuses to start rather than
/// run anything unconfined; `--isolate-root` must be a root filesystem.
#[test]
fn isolate_without_bubblewrap_refuses_to_run() {
    let f = fixture();
    let empty = tempfile::tempdir().unwrap();
    let r: crate::support::Run = evalhost()
        .current_dir(f.project.path())
        .env("PATH", empty.path())
        .args(["run", "EVAL.yaml", "-o", "out", "--isolate"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("needs bubblewrap (`bwrap`)"),
        "{}",
        r.stderr
    );
    assert!(!f.project.path().join("out/results.jsonl").exists());
    if bwrap_works() {
        let r = crate::support::run_in(
            f.project.path(),
            &[
                "run",
                "EVAL.yaml",
                "-o",
                "out",
                "--isolate",
                "--isolate-root",
                "template",
            ],
        );
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains("not a directory with usr/ in it"),
            "{}",
            r.stderr
        );
    }
}

/// What the operator grants a target in the targets file reaches it inside
/// the sandbox, and only that: `isolate.env` (its key), `isolate.read` (an
/// agent's configuration directory, `~/…`), `isolate.network`; and the
/// file's `execution.isolate: true` isolates every run that uses it, with
/// no flag. A setting that is not one is an error at its key.
#[test]
fn a_targets_file_grants_its_target_what_it_needs_and_can_make_isolation_the_default() {
    if !bwrap_works() {
        return;
    }
    let f = fixture();
    let root = f.project.path().display().to_string();
    f.project.write(
        ".evalhost/targets.yaml",
        &format!(
            "execution: {{isolate: true}}\ntargets:\n  - name: default\n    provider: cli\n    command: \"python3 {root}/probe_target.py > {{OUTPUT_FILE}}\"\n    isolate: {{env: [OPERATOR_TOKEN], read: ['~/.ssh'], network: true}}\n"
        ),
    );
    let (r, row) = run(&f, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("isolated:"),
        "the file's default, with no flag: {}",
        r.stdout
    );
    let seen = attempts(&row);
    for line in [
        "target home: read SECRET-KEY-MATERIAL",
        "target network: connected",
        "target env: tok-operator-123",
        // Not granted: still refused.
        "target outside: denied",
        "target project: denied",
        // The hook and the grader get none of the target's grants.
        "hook home: denied",
        "hook env: missing",
        "grader network: denied",
    ] {
        assert!(seen.contains(line), "`{line}` expected:\n{seen}");
    }

    f.project.write(
        ".evalhost/targets.yaml",
        "execution: {isolate: yes please}\ntargets:\n  - name: default\n    provider: cli\n    command: \"true\"\n    isolate: {enviroment: [X]}\n",
    );
    let (r, _) = run(&f, &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("`execution.isolate` must be true or false")
            && r.stderr.contains("`isolate.enviroment` is not a setting")
            && r.stderr.contains("did you mean `env`?"),
        "{}",
        r.stderr
    );
}

/// Several suites from different projects in one isolated run: each
/// suite's processes read their own project (and not the other's).
#[test]
fn each_suite_of_an_isolated_multi_suite_run_reads_its_own_project() {
    if !bwrap_works() {
        return;
    }
    let top = tempfile::tempdir().unwrap();
    for name in ["alpha", "beta"] {
        let dir = top.path().join(name);
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::create_dir_all(dir.join(".evalhost")).unwrap();
        std::fs::write(dir.join("fact.txt"), format!("{name} fact\n")).unwrap();
        let other = if name == "alpha" { "beta" } else { "alpha" };
        std::fs::write(
            dir.join(".evalhost/targets.yaml"),
            format!(
                "targets:\n  - name: default\n    provider: cli\n    command: \"(cat {root}/fact.txt; cat {top}/{other}/fact.txt 2>/dev/null || echo other-denied) > {{OUTPUT_FILE}}\"\n",
                root = dir.display(),
                top = top.path().display()
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("EVAL.yaml"),
            format!("name: {name}\ntests:\n  - {{id: t, input: q, assertions: [{{type: contains, value: '{name} fact'}}, {{type: contains, value: other-denied}}]}}\n"),
        )
        .unwrap();
    }
    let r = crate::support::run_in(
        top.path(),
        &[
            "run",
            "alpha/EVAL.yaml",
            "beta/EVAL.yaml",
            "-o",
            "out",
            "--isolate",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("2 of 2 suites passed"), "{}", r.stdout);
}
