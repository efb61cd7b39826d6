//! Helpers: running the `evalhost` binary, writing suites into temporary
//! directories, building test-only plugins, reading results.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A compile cache shared by the tests, so each plugin compiles once per
/// test run (tests about the cache itself use their own).
pub fn shared_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-cache")
}

/// The compiled plugins of [`shared_cache`], for tests that give evalhost
/// a cache of their own for judge verdicts or target responses
/// (`EVALHOST_CACHE_DIR`) but are not about compiling: without it, each
/// such test compiled every plugin it loads again (seconds each).
pub fn shared_compile_cache() -> PathBuf {
    shared_cache().join("components")
}

/// The outcome of one `evalhost` invocation.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Self {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// A command for the `evalhost` binary with the shared compile cache
/// (`EVALHOST_TEST_BIN` names another build to run the tests against: an
/// older binary, to see a new test fail on it).
pub fn evalhost() -> Command {
    let bin = std::env::var_os("EVALHOST_TEST_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_evalhost").into());
    let mut command = Command::new(bin);
    command.env("EVALHOST_CACHE_DIR", shared_cache());
    command
}

/// Runs `evalhost` with `args` in `cwd`.
pub fn run_in(cwd: &Path, args: &[&str]) -> Run {
    evalhost()
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("evalhost runs")
        .into()
}

/// A temporary project: a directory with a mock targets file.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// A project whose `default` target is a mock answering `response`.
    pub fn with_mock(response: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".evalhost")).unwrap();
        let targets = serde_json::json!({
            "targets": [{"name": "default", "provider": "mock", "response": response}]
        });
        std::fs::write(
            dir.path().join(".evalhost/targets.yaml"),
            targets.to_string(),
        )
        .unwrap();
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file relative to the project.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs `evalhost run EVAL.yaml -o out` (plus `extra` arguments).
    pub fn run(&self, extra: &[&str]) -> Run {
        let mut args = vec!["run", "EVAL.yaml", "-o", "out"];
        args.extend_from_slice(extra);
        run_in(self.path(), &args)
    }

    /// The rows of `out/results.jsonl`, in file order.
    pub fn rows(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path().join("out/results.jsonl"))
            .expect("results.jsonl exists");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect()
    }

    /// The row of `test_id`.
    pub fn row(&self, test_id: &str) -> Value {
        self.rows()
            .into_iter()
            .find(|r| r["test_id"] == test_id)
            .unwrap_or_else(|| panic!("no row for {test_id}"))
    }
}

/// Builds a test-only plugin crate (by package name) to a component once per
/// test run, and returns the `.wasm` path.
pub fn test_plugin(package: &str) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<std::collections::HashMap<String, PathBuf>>> =
        OnceLock::new();
    let map = BUILT.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = map.get(package) {
        return path.clone();
    }
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-plugins");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--profile=plugin",
            "--target=wasm32-wasip2",
            "-p",
            package,
        ])
        .arg("--manifest-path")
        .arg(root().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "building {package} for wasm32-wasip2 failed"
    );
    let wasm = target_dir
        .join("wasm32-wasip2/plugin")
        .join(format!("{}.wasm", package.replace('-', "_")));
    assert!(wasm.is_file(), "{} missing", wasm.display());
    map.insert(package.to_owned(), wasm.clone());
    wasm
}

/// The hostile test plugin.
pub fn hostile() -> PathBuf {
    test_plugin("evalhost-test-plugin-hostile")
}

/// The score entry named `name` in `row`.
pub fn score<'a>(row: &'a Value, name: &str) -> &'a Value {
    row["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no score {name} in {row}"))
}

/// One scripted HTTP answer of a [`FakeServer`].
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay: std::time::Duration,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: std::time::Duration::ZERO,
        }
    }

    /// An OpenAI chat-completions answer with `content`.
    pub fn chat(content: &str) -> Self {
        Self::json(
            200,
            serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "cost": 0.0042},
            }),
        )
    }
}

/// A request a [`FakeServer`] received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// An HTTP server on loopback answering from a script (the last reply
/// repeats), recording every request. It stops when dropped.
pub struct FakeServer {
    pub url: String,
    pub received: std::sync::Arc<std::sync::Mutex<Vec<Received>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl FakeServer {
    /// Answers from `script` in order (the last reply repeats).
    pub fn start(script: Vec<Reply>) -> Self {
        let served = std::sync::atomic::AtomicUsize::new(0);
        Self::start_fn(move |_| {
            let n = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            script[n.min(script.len() - 1)].clone()
        })
    }

    /// Answers each request with `respond(request)`.
    pub fn start_fn(respond: impl Fn(&Received) -> Reply + Send + 'static) -> Self {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (rec, halt) = (received.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut served = 0usize;
            // Bounded: at most 1000 requests or until dropped.
            while !halt.load(std::sync::atomic::Ordering::SeqCst) && served < 1000 {
                let (stream, _) = match listener.accept() {
                    Ok(s) => s,
                    Err(_) => {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        continue;
                    }
                };
                stream.set_nonblocking(false).unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let mut headers = Vec::new();
                let mut length = 0usize;
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = h.trim_end().split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        headers.push((k.to_ascii_lowercase(), v.trim().to_owned()));
                    }
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                let received = Received {
                    path,
                    headers,
                    body: String::from_utf8_lossy(&body).into_owned(),
                };
                let reply = respond(&received);
                rec.lock().unwrap().push(received);
                served += 1;
                std::thread::sleep(reply.delay);
                let mut stream = stream;
                // JSON unless the reply says otherwise (one Content-Type, as
                // a real server sends).
                let own_type = reply
                    .headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
                let mut head = format!(
                    "HTTP/1.1 {} X\r\n{}Content-Length: {}\r\nConnection: close\r\n",
                    reply.status,
                    if own_type {
                        ""
                    } else {
                        "Content-Type: application/json\r\n"
                    },
                    reply.body.len()
                );
                for (k, v) in &reply.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(reply.body.as_bytes());
            }
        });
        Self {
            url,
            received,
            stop,
        }
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The Python packages some tests run, pinned: `componentize-py` builds the
/// Python test grader, `xmlschema` validates JUnit XML against
/// `tests/data/junit.xsd`.
pub const PYTHON_TOOLS: &[&str] = &["componentize-py==0.25.1", "xmlschema==4.3.2"];

/// A directory holding [`PYTHON_TOOLS`], installed on first use with
/// `python3 -m pip install --target` into the test target directory, so that
/// `cargo test` needs nothing on the machine but Rust, `python3` with pip and
/// the package index. Use it with [`python`].
pub fn python_tools() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-tools");
        let stamp = dir.join(".installed");
        let wanted = PYTHON_TOOLS.join(" ");
        if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
            return dir;
        }
        let _ = std::fs::remove_dir_all(&dir);
        let status = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg("--target")
            .arg(&dir)
            .args(PYTHON_TOOLS)
            .env("PIP_ROOT_USER_ACTION", "ignore")
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!(
                "installing {wanted} with pip failed ({s}); the tests that build the Python grader and validate JUnit need them"
            ),
            Err(e) => panic!(
                "python3 could not run ({e}): the tests that build the Python grader and validate JUnit need python3 with pip"
            ),
        }
        std::fs::write(&stamp, &wanted).unwrap();
        dir
    })
    .clone()
}

/// `python3` with [`python_tools`] importable.
pub fn python() -> Command {
    let mut command = Command::new("python3");
    command
        .env("PYTHONPATH", python_tools())
        .env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

/// An executable `componentize-py` from [`python_tools`] (a small shell
/// script), for `EVALHOST_COMPONENTIZE_PY`: evalhost builds its Python
/// runner with it.
pub fn componentize_py() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let tools = python_tools();
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("componentize-py");
        let script = format!(
            "#!/bin/sh\nPYTHONPATH='{}' PYTHONDONTWRITEBYTECODE=1 exec python3 -c \"import sys; from componentize_py import script; sys.argv[0] = 'componentize-py'; sys.exit(script())\" \"$@\"\n",
            tools.display()
        );
        let partial = path.with_extension(format!("{}", std::process::id()));
        std::fs::write(&partial, script).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&partial, &path).unwrap();
        path
    })
    .clone()
}
