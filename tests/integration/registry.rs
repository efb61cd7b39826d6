//! Plugins by digest through a real OCI registry on loopback (Debian's
//! `docker-registry`, the CNCF distribution registry): push, add, run;
//! a moved tag (the lock keeps the old digest); the registry down (the
//! cache serves a locked run); a digest that does not match (refused);
//! `--locked` refusing what the lock does not have. Without
//! `docker-registry` the tests say so and stop, unless
//! `EVALHOST_REQUIRE_REGISTRY` is set (as `.ci/run` sets it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Project, Run, evalhost, root};

pub(crate) struct Registry {
    child: Child,
    pub(crate) addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn registry_binary() -> Option<PathBuf> {
    let found = ["/usr/bin/docker-registry", "/usr/local/bin/registry"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("EVALHOST_REQUIRE_REGISTRY").is_none(),
            "EVALHOST_REQUIRE_REGISTRY is set but docker-registry is not installed"
        );
        eprintln!(
            "registry: no docker-registry; the OCI tests do not run (apt-get install docker-registry)"
        );
    }
    found
}

pub(crate) fn start(binary: &Path) -> Registry {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let config = dir.path().join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let child = Command::new(binary)
        .arg("serve")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the registry did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Registry {
        child,
        addr,
        _dir: dir,
    }
}

/// evalhost with its own cache (so what is cached is this test's doing).
fn eh(cache: &Path, cwd: &Path, args: &[&str]) -> Run {
    evalhost()
        .current_dir(cwd)
        .env("EVALHOST_CACHE_DIR", cache)
        .args(args)
        .output()
        .unwrap()
        .into()
}

fn frozen() -> Vec<u8> {
    std::fs::read(root().join("tests/data/plugins/wit-0.2.0/frozen_grader.wasm")).unwrap()
}

/// The same grader with a custom section appended: another sha256, the
/// same behaviour.
fn variant(wasm: &[u8], note: &str) -> Vec<u8> {
    let name = b"evalhost-test";
    let mut payload = vec![name.len() as u8];
    payload.extend_from_slice(name);
    payload.extend_from_slice(note.as_bytes());
    let mut out = wasm.to_vec();
    out.push(0);
    out.push(payload.len() as u8);
    out.extend(payload);
    out
}

fn sha(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[test]
fn plugins_are_pushed_added_locked_and_run_by_digest() {
    let Some(binary) = registry_binary() else {
        return;
    };
    let mut reg = start(&binary);
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let v1 = frozen();
    let v2 = variant(&v1, "v2");
    std::fs::write(work.path().join("v1.wasm"), &v1).unwrap();
    std::fs::write(work.path().join("v2.wasm"), &v2).unwrap();
    let reference = format!("oci://{}/graders/frozen:1.0", reg.addr);

    // Push, then add: the lock pins the manifest digest and the sha256.
    let r = eh(
        cache.path(),
        work.path(),
        &["plugin", "push", "v1.wasm", &reference],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(&format!("sha256:{}", sha(&v1))),
        "{}",
        r.stderr
    );
    let project = Project::with_mock("Hello, World");
    let lock_path = project.path().join("evalhost.lock");
    let r = eh(cache.path(), project.path(), &["plugin", "add", &reference]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let lock: Value = serde_json::from_str(&std::fs::read_to_string(&lock_path).unwrap()).unwrap();
    let entry = &lock["plugins"][0];
    assert_eq!(entry["reference"], reference.as_str());
    assert_eq!(entry["sha256"], sha(&v1));
    assert!(
        entry["manifest_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let locked_manifest = entry["manifest_digest"].clone();

    // A suite names it by reference; a run grades with it.
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins:\n  - oci: {reference}\ntests:\n  - id: hit\n    input: hi\n    assertions: [{{type: frozen-grader, value: world}}]\n"
        ),
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "EVAL.yaml", "-o", "out"];
        args.extend_from_slice(extra);
        eh(cache.path(), project.path(), &args)
    };
    let r = run(&["--locked"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("hit")["scores"][0]["plugin_digest"], sha(&v1));

    // The tag moves: the lock keeps the old digest.
    let r = eh(
        cache.path(),
        work.path(),
        &["plugin", "push", "v2.wasm", &reference],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run(&["--locked"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("hit")["scores"][0]["plugin_digest"], sha(&v1));
    // Until `plugin add` again.
    let r = eh(cache.path(), project.path(), &["plugin", "add", &reference]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lock: Value = serde_json::from_str(&std::fs::read_to_string(&lock_path).unwrap()).unwrap();
    assert_eq!(lock["plugins"][0]["sha256"], sha(&v2));
    assert_ne!(lock["plugins"][0]["manifest_digest"], locked_manifest);
    let r = run(&["--locked"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("hit")["scores"][0]["plugin_digest"], sha(&v2));

    // The registry down: the cache serves the locked run.
    drop(reg);
    let r = run(&["--locked"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("hit")["scores"][0]["plugin_digest"], sha(&v2));
    // Down and not cached: said, not guessed.
    std::fs::remove_dir_all(cache.path().join("oci")).unwrap();
    let r = run(&["--locked"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("cannot go on offline"), "{}", r.stderr);

    // Back up: a lock whose sha256 the registry does not serve is refused.
    reg = start(&binary);
    let reference2 = format!("oci://{}/graders/frozen:1.0", reg.addr);
    let r = eh(
        cache.path(),
        work.path(),
        &["plugin", "push", "v1.wasm", &reference2],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = eh(
        cache.path(),
        project.path(),
        &["plugin", "add", &reference2],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(&lock_path)
        .unwrap()
        .replace(&sha(&v1), &sha(b"something else"));
    std::fs::write(&lock_path, text).unwrap();
    std::fs::remove_dir_all(cache.path().join("oci")).unwrap();
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins:\n  - oci: {reference2}\ntests:\n  - id: hit\n    input: hi\n    assertions: [{{type: frozen-grader, value: world}}]\n"
        ),
    );
    let r = run(&["--locked"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("refused"), "{}", r.stderr);

    // --locked refuses a reference the lock does not have; without it, the
    // reference is resolved and locked.
    let other = format!("oci://{}/graders/frozen:1.0", reg.addr).replace("frozen", "frozen-other");
    let r = eh(
        cache.path(),
        work.path(),
        &["plugin", "push", "v1.wasm", &other],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins:\n  - oci: {other}\ntests:\n  - id: hit\n    input: hi\n    assertions: [{{type: frozen-grader, value: world}}]\n"
        ),
    );
    let r = run(&["--locked"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--locked refuses"), "{}", r.stderr);
    let r = run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let lock: Value = serde_json::from_str(&std::fs::read_to_string(&lock_path).unwrap()).unwrap();
    assert!(
        lock["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["reference"] == other.as_str())
    );
    drop(reg);
}

#[test]
fn a_registry_reference_is_checked_where_it_is_written() {
    let project = Project::with_mock("x");
    project.write(
        "EVAL.yaml",
        "plugins:\n  - oci: oci://no-repository\ntests:\n  - id: t\n    input: hi\n    assertions: [{type: contains, value: x}]\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("EVAL.yaml:2"), "{}", r.stderr);
    assert!(
        r.stderr.contains("not a registry reference"),
        "{}",
        r.stderr
    );
    // Plain HTTP is for loopback only: a remote registry is asked over HTTPS.
    let r = crate::support::run_in(
        project.path(),
        &["plugin", "add", "oci://registry.invalid/x:1"],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("https://registry.invalid") || r.stderr.contains("registry.invalid"),
        "{}",
        r.stderr
    );
}
