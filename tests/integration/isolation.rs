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
pub(crate) fn bwrap_works() -> bool {
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
        r#"import os, socket, subprocess, sys
out = []
# Root inside the sandbox would remount a read-only bind writable: it has
# no capability to.
project = os.path.dirname(os.path.abspath(__file__))
subprocess.run(["mount", "-o", "remount,rw,bind", project], capture_output=True)
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
# The sandbox's PID 1 (bubblewrap) must not hold evalhost's environment.
try:
    out.append("{who} pid1 env: " + ("leaked" if b"OPERATOR_TOKEN" in open("/proc/1/environ", "rb").read() else "clean"))
except Exception as e:
    out.append("{who} pid1 env: clean")
# A descriptor evalhost inherited (9, a file of the operator's).
try:
    out.append("{who} fd 9: read " + os.pread(9, 100, 0).decode().strip())
except Exception as e:
    out.append("{who} fd 9: none")
# The run directory (inside the project): no case reads the rows.
try:
    listing = os.listdir(os.path.join(project, "out"))
    out.append("{who} run dir: " + ("visible" if "run.json" in listing else "hidden"))
except Exception as e:
    out.append("{who} run dir: hidden")
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
            probe("grader", &secret, &out, port).replacen("import os, socket, subprocess, sys\n", "", 1)
        ).replacen("import json\n", "import json, os, socket, subprocess, sys\n", 1),
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
    // evalhost started with descriptor 9 open on a file of the operator's
    // (as a shell or a CI runner may leave one): it must not reach a case.
    let secret_fd = f.home.path().join("fd-secret");
    std::fs::write(&secret_fd, "FD-SECRET\n").unwrap();
    let base = evalhost();
    let mut command = std::process::Command::new("sh");
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            command.env(k, v);
        }
    }
    let r: crate::support::Run = command
        .arg("-c")
        .arg("exec 9<\"$0\"; exec \"$@\"")
        .arg(&secret_fd)
        .arg(base.get_program())
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

/// The first row of the run directory's `results.jsonl` at `path`.
fn first_row(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
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
            format!("{who} fd 9: read FD-SECRET"),
            format!("{who} run dir: visible"),
        ] {
            assert!(
                seen.contains(&line),
                "without --isolate, `{line}` expected:\n{seen}"
            );
        }
    }
    assert_eq!(f.connections.load(Ordering::SeqCst), 3);
    assert!(row.get("sandbox").is_none(), "{row}");
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
            format!("{who} pid1 env: clean"),
            format!("{who} fd 9: none"),
            format!("{who} run dir: hidden"),
        ] {
            assert!(
                seen.contains(&line),
                "under --isolate, `{line}` expected:\n{seen}"
            );
        }
    }
    assert!(seen.contains("ANSWER 42"), "{seen}");
    assert_eq!(row["status"], "passed", "{row}");
    // The row records each confined process of the case, in order, with
    // its network; a run without --isolate records none.
    let roles: Vec<(&str, &str)> = row["sandbox"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["role"].as_str().unwrap_or_default(),
                p["network"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("hook", "none"),
            ("target", "none"),
            ("code-grader", "none")
        ],
        "{row}"
    );
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

/// A loopback HTTP server answering `body` to every request; counts them.
fn http_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        use std::io::Write as _;
        for mut s in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = s.read(&mut [0u8; 4096]);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, count)
}

/// `isolate.network: [host:port]`: the target reaches its API through
/// evalhost's proxy and nothing else — another loopback server is refused
/// by the proxy, a direct connection finds no network — and the row
/// records each connection, allowed or refused. With `isolate.memory` and
/// `isolate.processes`, a fork past the limit is refused and an allocation
/// past it killed, both recorded in the row (where the machine's cgroups
/// cannot hold limits, a target that sets them is refused instead).
#[test]
fn egress_reaches_only_the_targets_hosts_and_limits_hold_and_the_row_records_what_was_refused() {
    if !bwrap_works() {
        return;
    }
    let (api, api_calls) = http_server("MODEL ANSWER 42");
    let (other, other_calls) = http_server("SHOULD NOT BE SEEN");
    let project = Project::with_mock("unused");
    project.write(
        "agent.py",
        &format!(
            r#"import socket, subprocess, urllib.request
out = []
for name, port in (("api", {api}), ("other", {other})):
    try:
        out.append(name + ": " + urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5).read().decode())
    except Exception as e:
        out.append(name + ": refused " + str(e))
try:
    socket.create_connection(("127.0.0.1", {api}), timeout=2).close()
    out.append("direct: connected")
except Exception as e:
    out.append("direct: denied")
procs = []
try:
    for _ in range(60):
        procs.append(subprocess.Popen(["sleep", "5"]))
    out.append("fork: 60 started")
except Exception as e:
    out.append("fork: refused")
for p in procs:
    p.kill()
    p.wait()
r = subprocess.run(["python3", "-c", "x = bytearray(400 << 20); print('allocated')"], capture_output=True, text=True)
out.append("memory: " + ("allocated" if r.returncode == 0 else "killed %d" % r.returncode))
print("\n".join(out))
"#
        ),
    );
    let root = project.path().display().to_string();
    let targets = |limits: &str| {
        format!(
            "targets:\n  - name: default\n    provider: cli\n    command: \"python3 {root}/agent.py > {{OUTPUT_FILE}}\"\n    isolate: {{network: ['127.0.0.1:{api}']{limits}}}\n"
        )
    };
    project.write(".evalhost/targets.yaml", &targets(""));
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: agent\n    input: go\n    assertions:\n      - {type: contains, value: 'api: MODEL ANSWER 42'}\n",
    );
    let r = crate::support::run_in(
        project.path(),
        &["run", "EVAL.yaml", "-o", "out", "--isolate"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row = project.rows().into_iter().next().unwrap();
    let output = row["output"].as_str().unwrap_or_default();
    assert!(output.contains("api: MODEL ANSWER 42"), "{output}");
    assert!(output.contains("other: refused HTTP Error 403"), "{output}");
    assert!(output.contains("direct: denied"), "{output}");
    assert_eq!(api_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        other_calls.load(Ordering::SeqCst),
        0,
        "the proxy never connected"
    );
    let process = &row["sandbox"]["processes"][0];
    assert_eq!(
        process["network"],
        format!("proxy: 127.0.0.1:{api}"),
        "{row}"
    );
    let connections = process["connections"].as_array().unwrap();
    assert_eq!(connections.len(), 2, "{process}");
    assert_eq!(connections[0]["port"], api);
    assert_eq!(connections[0]["allowed"], true);
    assert_eq!(connections[1]["port"], other);
    assert_eq!(connections[1]["allowed"], false);
    let refused = process["refused"].to_string();
    assert!(
        refused.contains(&format!("connection to 127.0.0.1:{other}")),
        "{refused}"
    );
    // The terminal says it under the case, though the case passed.
    assert!(
        r.stdout.contains(&format!(
            "sandbox refused target: connection to 127.0.0.1:{other}"
        )),
        "{}",
        r.stdout
    );

    // Limits of the target's own.
    project.write(
        ".evalhost/targets.yaml",
        &targets(", memory: 200MiB, processes: 32"),
    );
    let r = crate::support::run_in(
        project.path(),
        &["run", "EVAL.yaml", "-o", "out2", "--isolate"],
    );
    if r.code == 2 && r.stderr.contains("cannot be applied here") {
        eprintln!(
            "isolation: no writable cgroup here; limits are refused, as they must be: {}",
            r.stderr
        );
        return;
    }
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row: Value = first_row(&project.path().join("out2/results.jsonl"));
    let output = row["output"].as_str().unwrap_or_default();
    assert!(output.contains("fork: refused"), "{output}");
    assert!(output.contains("memory: killed -9"), "{output}");
    // One budget for the whole case: its target's.
    let sandbox = &row["sandbox"];
    assert_eq!(
        sandbox["limits"], "memory 200 MiB, 32 processes",
        "{sandbox}"
    );
    let refused = sandbox["refused"].to_string();
    assert!(
        refused.contains("fork(s) refused at the limit of 32"),
        "{refused}"
    );
    assert!(
        refused.contains("killed at the limit of 200 MiB"),
        "{refused}"
    );
    assert!(
        sandbox["peak_memory_bytes"].as_u64().unwrap_or(0) > 100 << 20,
        "{sandbox}"
    );
}

/// `--sandbox strict` isolates where bubblewrap works (the header says so,
/// and the row records the sandbox); where it cannot be had, strict
/// refuses a command target rather than run it unconfined.
#[test]
fn strict_isolates_where_bubblewrap_works_and_refuses_command_targets_where_it_cannot() {
    let project = Project::with_mock("unused");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - name: default\n    provider: cli\n    command: \"echo hi > {OUTPUT_FILE}\"\n",
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: t, input: q, assertions: [{type: contains, value: hi}]}\n",
    );
    // A PATH with the shell's tools but no bwrap.
    let bin = tempfile::tempdir().unwrap();
    for tool in ["sh", "echo", "git", "python3"] {
        if let Some(path) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
        {
            std::os::unix::fs::symlink(path, bin.path().join(tool)).unwrap();
        }
    }
    let r: crate::support::Run = evalhost()
        .current_dir(project.path())
        .env("PATH", bin.path())
        .args([
            "run",
            "EVAL.yaml",
            "-o",
            "out",
            "--sandbox",
            "strict",
            "--targets",
            ".evalhost/targets.yaml",
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("--sandbox strict runs agent and command targets (default) only isolated"),
        "{}",
        r.stderr
    );
    assert!(!project.path().join("out/results.jsonl").exists());
    if !bwrap_works() {
        return;
    }
    let r = crate::support::run_in(
        project.path(),
        &[
            "run",
            "EVAL.yaml",
            "-o",
            "out",
            "--sandbox",
            "strict",
            "--targets",
            ".evalhost/targets.yaml",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("isolated:"), "{}", r.stdout);
    let row = project.rows().into_iter().next().unwrap();
    assert_eq!(row["sandbox"]["processes"][0]["network"], "none", "{row}");
}

/// A directory of stand-in container runtimes, first on PATH: `docker`
/// and `podman` whose `info` fails (`working: false`), or a `docker` that
/// answers and runs what it is asked to `exec` on this machine, logging
/// every command line to `log`.
fn fake_runtimes(working: bool) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("log");
    let script = if working {
        format!(
            "#!/bin/sh\necho \"$*\" >> '{log}'\ncase \"$1\" in\n  info) exit 0 ;;\n  create) echo fake-container-1 ;;\n  exec) shift; [ \"$1\" = -i ] && shift; shift; exec \"$@\" ;;\nesac\n",
            log = log.display()
        )
    } else {
        "#!/bin/sh\necho 'Cannot connect to the container daemon' >&2\nexit 1\n".to_owned()
    };
    for name in ["docker", "podman"] {
        if working && name == "podman" {
            continue;
        }
        let path = bin.path().join(name);
        std::fs::write(&path, &script).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (bin, log, path)
}

/// A suite that asks for its code graders to run in a container (AgentV's
/// `workspace.docker`, AgentV 5's docker `environment`) where no runtime
/// works is refused with the reason — each runtime and what it said — and
/// never run on the host instead; `validate` says what a run needs.
#[test]
fn a_suite_that_asks_for_a_container_is_refused_with_the_reason_never_run_on_the_host() {
    let (_bin, _log, path) = fake_runtimes(false);
    let project = Project::with_mock("hi");
    project.write(
        "EVAL.yaml",
        "workspace:\n  docker:\n    image: python:3.11-slim\n    memory: 2g\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: hi}]}\n",
    );
    let run = |dir: &std::path::Path, args: &[&str]| -> crate::support::Run {
        evalhost()
            .current_dir(dir)
            .env("PATH", &path)
            .args(args)
            .output()
            .unwrap()
            .into()
    };
    let r = run(project.path(), &["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    for part in [
        "EVAL.yaml:2",
        "`workspace.docker`",
        "image `python:3.11-slim`",
        "docker: installed, but `docker info` fails (Cannot connect to the container daemon)",
        "podman: installed, but `podman info` fails",
        "It is not run on the host instead",
    ] {
        assert!(r.stderr.contains(part), "`{part}` expected:\n{}", r.stderr);
    }
    assert!(!project.path().join("out/results.jsonl").exists());
    let v = run(project.path(), &["validate", "EVAL.yaml"]);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    assert!(
        v.stderr.contains("needs a working docker or podman"),
        "{}",
        v.stderr
    );

    // AgentV 5: `environment: {type: docker}`, AgentV's own example.
    let example =
        crate::support::root().join("../shared/corpus/agentv-5-next/features/docker-workspace");
    if !example.is_dir() {
        eprintln!("isolation: the AgentV 5 corpus is missing; its docker example is not run");
        return;
    }
    let v5 = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(v5.path().join(".git")).unwrap();
    std::fs::create_dir_all(v5.path().join(".agentv")).unwrap();
    for file in ["evals/docker-example.EVAL.yaml", ".agentv/providers.yaml"] {
        std::fs::create_dir_all(v5.path().join(file).parent().unwrap()).unwrap();
        std::fs::copy(example.join(file), v5.path().join(file)).unwrap();
    }
    let r = run(
        v5.path(),
        &["run", "evals/docker-example.EVAL.yaml", "-o", "out"],
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("image `python:3.11-slim`") && r.stderr.contains("not run on the host"),
        "{}",
        r.stderr
    );
    assert!(!v5.path().join("out/results.jsonl").exists());
}

/// Where a runtime answers, each code grader of a `workspace.docker`
/// suite runs as AgentV runs it: `create --memory --cpus IMAGE sleep
/// infinity`, `start`, `exec -i` with the payload on stdin, `rm -f` —
/// here against a stand-in `docker` that logs its command lines and runs
/// the `exec` on this machine (no runtime can start a container where
/// this was built); the header says so, and the grader's verdict is the
/// one it printed.
#[test]
fn code_graders_of_a_docker_suite_run_in_a_container_where_a_runtime_answers() {
    let (_bin, log, path) = fake_runtimes(true);
    let project = Project::with_mock("hello world");
    project.write(
        "EVAL.yaml",
        "workspace:\n  docker:\n    image: python:3.11-slim\n    timeout: 300\n    memory: 2g\n    cpus: 1\ntests:\n  - id: t\n    input: q\n    assertions:\n      - type: code-grader\n        command: [python3, -c, \"import sys, json; d = json.load(sys.stdin); print(json.dumps({'score': 1.0 if 'hello' in d['output'] else 0.0, 'assertions': [{'text': 'grader ran in container', 'passed': True}]}))\"]\n",
    );
    let r: crate::support::Run = evalhost()
        .current_dir(project.path())
        .env("PATH", &path)
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "container: each code grader runs in a new docker container of `python:3.11-slim`, memory 2g, 1 CPUs"
        ),
        "{}",
        r.stdout
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines[0], "info", "{calls}");
    assert_eq!(
        lines[1], "create --memory=2g --cpus=1 python:3.11-slim sleep infinity",
        "{calls}"
    );
    assert_eq!(lines[2], "start fake-container-1", "{calls}");
    assert!(
        lines[3].starts_with("exec -i fake-container-1 python3 -c import sys, json;"),
        "{calls}"
    );
    assert_eq!(lines[4], "rm -f fake-container-1", "{calls}");
    let row = project.rows().into_iter().next().unwrap();
    let grader = crate::support::score(&row, "code-grader");
    assert_eq!(grader["score"], 1.0, "{row}");
    assert_eq!(
        grader["assertions"][0]["text"], "grader ran in container",
        "{row}"
    );
}

/// A coding agent (`provider: claude`, a stand-in printing Claude Code's
/// stream) under `--isolate`: an empty home, the operator's key only when
/// granted, its model API (the host of the `ANTHROPIC_BASE_URL` it is
/// given) reached through evalhost's proxy and another host refused, its
/// workspace writable — and the row records it.
#[test]
fn a_coding_agent_reaches_only_its_model_api_and_writes_only_its_workspace() {
    if !bwrap_works() {
        return;
    }
    let (api, api_calls) = http_server("pong");
    let (other, other_calls) = http_server("SHOULD NOT BE SEEN");
    let f = fixture();
    let secret = f.home.path().join(".ssh/id_ed25519");
    f.project.write(
        "bin/claude",
        &format!(
            r#"#!/bin/sh
exec python3 - "$@" <<'PY'
import json, os, sys, urllib.request
out = ["home=" + os.environ.get("HOME", "")]
try:
    open({secret:?}).read()
    out.append("secret: read")
except Exception:
    out.append("secret: denied")
out.append("token=" + os.environ.get("OPERATOR_TOKEN", "missing"))
base = os.environ.get("ANTHROPIC_BASE_URL", "")
try:
    out.append("api: " + urllib.request.urlopen(base + "/v1/ping", timeout=5).read().decode())
except Exception as e:
    out.append("api: failed " + str(e))
try:
    urllib.request.urlopen("http://127.0.0.1:{other}/", timeout=5)
    out.append("other: reached")
except Exception:
    out.append("other: refused")
open("agent-wrote.txt", "w").write("x")
out.append("wrote: " + os.path.abspath("agent-wrote.txt"))
text = "\n".join(out)
print(json.dumps({{"type": "system", "subtype": "init", "session_id": "s", "model": "fake"}}))
print(json.dumps({{"type": "assistant", "message": {{"role": "assistant", "content": [{{"type": "text", "text": text}}], "usage": {{"input_tokens": 1, "output_tokens": 1}}}}}}))
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": text, "num_turns": 1, "duration_ms": 1, "total_cost_usd": 0.001, "usage": {{"input_tokens": 1, "output_tokens": 1}}}}))
PY
"#,
            secret = secret.display().to_string(),
        ),
    );
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            f.project.path().join("bin/claude"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    let root = f.project.path().display().to_string();
    f.project.write(
        ".evalhost/targets.yaml",
        &format!(
            "targets:\n  - name: default\n    provider: claude\n    executable: {root}/bin/claude\n    isolate: {{env: [ANTHROPIC_BASE_URL, EVALHOST_TEST_UNSET_KEY]}}\n"
        ),
    );
    f.project.write(
        "EVAL.yaml",
        "workspace:\n  template: ./template\ntests:\n  - id: agent\n    input: Fix it.\n    assertions:\n      - {type: contains, value: 'api: pong'}\n",
    );
    let r: crate::support::Run = evalhost()
        .current_dir(f.project.path())
        .env("HOME", f.home.path())
        .env("OPERATOR_TOKEN", "tok-operator-123")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{api}"))
        .args([
            "run",
            "EVAL.yaml",
            "-o",
            "out",
            "--isolate",
            "--keep-workspaces",
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // A granted variable that is not set is said, not silently dropped.
    assert!(
        r.stderr.contains(
            "isolate.env names EVALHOST_TEST_UNSET_KEY, not set in evalhost's environment"
        ),
        "{}",
        r.stderr
    );
    let row = f.project.rows().into_iter().next().unwrap();
    let output = row["output"].as_str().unwrap_or_default();
    for line in [
        "home=/home/sandbox",
        "secret: denied",
        "token=missing",
        "api: pong",
        "other: refused",
    ] {
        assert!(output.contains(line), "`{line}` expected:\n{output}");
    }
    assert_eq!(api_calls.load(Ordering::SeqCst), 1);
    assert_eq!(other_calls.load(Ordering::SeqCst), 0);
    // It wrote into its workspace, which evalhost kept.
    let workspace = row["workspace_path"].as_str().unwrap();
    assert!(
        std::path::Path::new(workspace)
            .join("agent-wrote.txt")
            .is_file(),
        "{output}"
    );
    let process = &row["sandbox"]["processes"][0];
    assert_eq!(process["role"], "target", "{row}");
    let network = process["network"].as_str().unwrap();
    assert!(
        network.contains("api.anthropic.com") && network.contains(&format!("127.0.0.1:{api}")),
        "{network}"
    );
    let refused = process["refused"].to_string();
    assert!(refused.contains(&format!("127.0.0.1:{other}")), "{refused}");
}

/// The repository's own examples of agents at work pass under --isolate:
/// the coding-agent example with its recording (its hook and the
/// repository's tests each in a sandbox), and the SWE-style one (its
/// scripted agent, its hook and its graders).
#[test]
fn the_coding_agent_and_swe_style_examples_pass_isolated() {
    if !bwrap_works() {
        return;
    }
    let root = crate::support::root();
    for example in ["coding-agent", "swe-style"] {
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("run");
        let r = crate::support::run_in(
            &root,
            &[
                "run",
                &format!("examples/{example}/EVAL.yaml"),
                "-o",
                dir.to_str().unwrap(),
                "--isolate",
            ],
        );
        assert_eq!(r.code, 0, "{example}: {}{}", r.stdout, r.stderr);
        for line in std::fs::read_to_string(dir.join("results.jsonl"))
            .unwrap()
            .lines()
        {
            let row: Value = serde_json::from_str(line).unwrap();
            assert_eq!(row["status"], "passed", "{example}: {row}");
            let processes = row["sandbox"]["processes"].as_array().unwrap();
            assert!(
                processes.iter().any(|p| p["role"] == "hook")
                    && processes.iter().any(|p| p["role"] == "code-grader"),
                "{example}: {row}"
            );
        }
    }
}

/// `--isolate-root`: a root filesystem of the operator's — a directory, or
/// a tarball of one (unpacked once into the cache, by its digest) — is
/// what the sandboxed processes see as `/etc` and `/usr`; a file that is
/// not a tarball of one is refused with the reason.
#[test]
fn isolate_root_takes_a_directory_or_a_tarball_of_one() {
    if !bwrap_works() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    // A root whose /usr is the host's and whose /etc is its own, marked.
    let root = work.path().join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::os::unix::fs::symlink("/usr", root.join("usr")).unwrap();
    for (link, to) in [
        ("bin", "usr/bin"),
        ("lib", "usr/lib"),
        ("lib64", "usr/lib64"),
    ] {
        std::os::unix::fs::symlink(to, root.join(link)).unwrap();
    }
    std::fs::write(root.join("etc/evalhost-root"), "ROOT-MARKER-7\n").unwrap();
    // A file only its owner may read: evalhost running as root hides it
    // (its sandboxed processes are uid 0, the owner).
    std::fs::write(root.join("etc/shadow"), "root:SECRET-HASH:1::::::\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            root.join("etc/shadow"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
    let tarball = work.path().join("root.tar.gz");
    let tar = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&root)
        .arg(".")
        .status()
        .unwrap();
    assert!(tar.success());
    let project = Project::with_mock("unused");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - name: default\n    provider: cli\n    command: \"(cat /etc/evalhost-root; cat /etc/shadow) > {OUTPUT_FILE} 2>&1; true\"\n",
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: t, input: q, assertions: [{type: contains, value: ROOT-MARKER-7}]}\n",
    );
    let cache = work.path().join("cache");
    let run = |root: &std::path::Path, out: &str| -> crate::support::Run {
        evalhost()
            .current_dir(project.path())
            .env("EVALHOST_CACHE_DIR", &cache)
            .args(["run", "EVAL.yaml", "-o", out, "--isolate", "--isolate-root"])
            .arg(root)
            .output()
            .unwrap()
            .into()
    };
    // Without a root of its own, the host's /etc has no marker.
    let r = crate::support::run_in(
        project.path(),
        &["run", "EVAL.yaml", "-o", "host", "--isolate"],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let r = run(&root, "dir");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row: Value = first_row(&project.path().join("dir/results.jsonl"));
    // evalhost as root: the sandbox's uid 0 owns the file, which is hidden;
    // as anyone else the file is the operator's own, and readable as ever.
    let root_operator = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    assert_eq!(
        row["output"].as_str().unwrap().contains("SECRET-HASH"),
        !root_operator,
        "a file only its owner reads is hidden from a root operator's sandbox: {row}"
    );
    let r = run(&tarball, "tarball");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("root: "), "{}", r.stdout);
    let unpacked: Vec<_> = std::fs::read_dir(cache.join("roots"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(unpacked.len(), 1, "{unpacked:?}");
    assert_eq!(unpacked[0].len(), 64, "named by its SHA-256: {unpacked:?}");
    // Again: from the cache.
    let r = run(&tarball, "again");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(&project.path().join("EVAL.yaml"), "bad");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("cannot unpack it"), "{}", r.stderr);
}

/// evalhost's own git in a case's workspace (the baseline, the diff, the
/// reset) reads the workspace repositories' configuration, which the
/// target can write: a clean filter planted there runs on the host
/// without --isolate (the target runs as the operator anyway), and only in
/// a sandbox with it — the file it writes outside never appears.
#[test]
fn a_filter_planted_in_a_workspace_repository_does_not_run_on_the_host_under_isolate() {
    if !bwrap_works() {
        return;
    }
    let project = Project::with_mock("unused");
    let src = project.path().join("srcrepo");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a.txt"), "hi\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "x",
        ],
    ] {
        assert!(
            std::process::Command::new("git")
                .args(args)
                .current_dir(&src)
                .status()
                .unwrap()
                .success()
        );
    }
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("pwned");
    project.write(
        "plant.sh",
        &format!(
            "printf '[filter \"pwn\"]\\n\\tclean = \"touch {marker}; cat\"\\n' >> r/.git/config\necho '*.txt filter=pwn' > r/.gitattributes\necho changed > r/a.txt\necho ok > \"$1\"\n",
            marker = marker.display()
        ),
    );
    let root = project.path().display().to_string();
    project.write(
        ".evalhost/targets.yaml",
        &format!(
            "targets:\n  - name: default\n    provider: cli\n    command: \"sh {root}/plant.sh {{OUTPUT_FILE}}\"\n"
        ),
    );
    project.write(
        "EVAL.yaml",
        "workspace:\n  repos:\n    - {path: r, source: {type: local, path: ./srcrepo}}\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: ok}]}\n",
    );
    let r = crate::support::run_in(project.path(), &["run", "EVAL.yaml", "-o", "plain"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        marker.exists(),
        "without --isolate the planted filter runs on the host"
    );
    std::fs::remove_file(&marker).unwrap();
    let r = crate::support::run_in(
        project.path(),
        &["run", "EVAL.yaml", "-o", "isolated", "--isolate"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!marker.exists(), "under --isolate it ran only in a sandbox");
    // The change is still recorded (git ran, confined).
    let row: Value = first_row(&project.path().join("isolated/results.jsonl"));
    assert!(
        row["file_changes"]
            .as_str()
            .unwrap_or_default()
            .contains("+changed"),
        "{row}"
    );
}

/// A `docker` value a run could not use is an error at its key, never a
/// default: an image that is not a string, a timeout that is not whole
/// seconds, a limit that is neither a string nor a number.
#[test]
fn a_docker_setting_evalhost_cannot_use_is_an_error_at_its_key() {
    let project = Project::with_mock("hi");
    project.write(
        "EVAL.yaml",
        "workspace:\n  docker:\n    image: [x]\n    timeout: \"300\"\n    memory: {a: 1}\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: hi}]}\n",
    );
    let r = crate::support::run_in(project.path(), &["validate", "EVAL.yaml"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    for part in [
        "EVAL.yaml:3:5: error: `image` must be a string, got a list",
        "EVAL.yaml:4:5: error: `timeout` must be a whole number of seconds above 0",
        "EVAL.yaml:5:5: error: `memory` must be a string or a number, got a mapping",
    ] {
        assert!(r.stderr.contains(part), "`{part}` expected:\n{}", r.stderr);
    }
}
