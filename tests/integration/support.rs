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

/// A command for the `evalhost` binary with the shared compile cache.
pub fn evalhost() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_evalhost"));
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
