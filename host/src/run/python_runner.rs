//! promptfoo's `python` assertions run in evalhost's Python runner: CPython
//! compiled into a grader component by `componentize-py` from
//! `plugins/python-runner/app.py` and the `evalhost:grader` WIT package.
//!
//! The component is large (about 18 MB) and its build needs
//! `componentize-py`, so it is not built into the binary: the first suite
//! that uses `python` builds it once, into the cache directory, named by
//! the digest of the runner's source, the WIT package and
//! `componentize-py`'s version; later runs load it from there (and its
//! compiled form from the compile cache). Without `componentize-py` such a
//! suite is refused with the command that installs it.

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Diagnostics};
use crate::plugin::{LoadedPlugin, PluginEngine, Registry};
use crate::suite::Suite;

/// The plugin type of promptfoo's `python` assertions.
pub const TYPE: &str = "promptfoo-python";
/// The plugin type of a Python output transform.
pub const TRANSFORM: &str = "promptfoo-python-transform";

/// The runner's source.
const APP: &str = include_str!("../../../plugins/python-runner/app.py");
/// The contract it is built against.
const WIT: &str = include_str!("../../../plugin-sdk/wit/grader.wit");

/// The componentize-py the runner is known to build with.
pub const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

/// Loads the runner when the suite has `python` assertions and nothing
/// provides them yet: from the cache, or built now.
pub fn provide(
    suite: &Suite,
    engine: &std::sync::Arc<PluginEngine>,
    registry: &mut Registry,
    diags: &mut Diagnostics,
) {
    if registry.resolve(TYPE).is_some() {
        return;
    }
    // A `python` assertion, or a Python transform (of an assertion, or of
    // the test's output).
    let python =
        |a: &&crate::suite::Assertion| matches!(a.plugin_type.as_deref(), Some(TYPE | TRANSFORM));
    let Some(first) = suite
        .tests
        .iter()
        .flat_map(|t| t.every_assertion().chain(t.output_transform.as_deref()))
        .flat_map(crate::suite::Assertion::walk)
        .flat_map(|a| std::iter::once(a).chain(a.transform.as_deref()))
        .find(python)
    else {
        return;
    };
    let at = |message: String| {
        Diagnostic::error(&first.loc.file, message)
            .at(first.loc.pos)
            .key(first.loc.key.clone())
    };
    let loaded = runner().and_then(|bytes| {
        let digest = crate::plugin::sha256_hex(&bytes);
        LoadedPlugin::load_with_digest(engine, "builtin:python-runner", &bytes, &digest)
            .map_err(|e| e.to_string())
    });
    match loaded {
        Ok(plugin) => {
            if let Err(e) = registry.add(plugin) {
                diags.push(at(e.to_string()));
            }
        }
        Err(message) => diags.push(at(format!("`python` assertions: {message}"))),
    }
}

/// The tag domain of the cached runner.
const RUNNER_TAG: &str = "evalhost-python-runner-v1";

/// The runner component's bytes: cached (a component this user's evalhost
/// built: the cache directory is this user's alone and the file carries a
/// tag under the per-user key — a planted runner could forge every
/// `python` verdict), or built now.
pub fn runner() -> Result<Vec<u8>, String> {
    let tool = std::env::var_os("EVALHOST_COMPONENTIZE_PY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("componentize-py"));
    let version = crate::process::run(&crate::process::Spec {
        argv: &[tool.display().to_string(), "--version".to_owned()],
        timeout: Some(std::time::Duration::from_secs(60)),
        ..crate::process::Spec::default()
    })
    .ok()
    .filter(crate::process::Outcome::success)
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .ok_or_else(|| {
            format!(
                "they run in evalhost's sandboxed Python runner, which is built once with componentize-py, and `{}` was not found; install it with `pip install {COMPONENTIZE_PY}` (or set EVALHOST_COMPONENTIZE_PY)",
                tool.display()
            )
        })?;
    let digest = crate::digest::sha256_hex(format!("{APP}\0{WIT}\0{version}").as_bytes());
    let dir = crate::safe_fs::cache_root()
        .map(|d| d.join("python-runner"))
        .ok_or(
            "there is no cache directory to keep the Python runner in (set EVALHOST_CACHE_DIR)",
        )?;
    let path = dir.join(format!("{}.wasm", &digest[..32]));
    if let Some(code) = crate::plugin::cache::read_tagged(&path, RUNNER_TAG, 256 << 20)? {
        return Ok(code);
    }
    build(&tool, &path)
}

/// `componentize-py -d wit -w plugin componentize app -o runner.wasm`, in a
/// scratch directory, then stored in the cache with its tag.
fn build(tool: &Path, path: &Path) -> Result<Vec<u8>, String> {
    let scratch = tempfile::tempdir().map_err(|e| format!("a scratch directory: {e}"))?;
    let wit = scratch.path().join("wit");
    std::fs::create_dir_all(&wit)
        .and_then(|()| std::fs::write(wit.join("grader.wit"), WIT))
        .and_then(|()| std::fs::write(scratch.path().join("app.py"), APP))
        .map_err(|e| format!("writing the runner's sources: {e}"))?;
    let out = scratch.path().join("runner.wasm");
    eprintln!("  building the sandboxed Python runner with componentize-py (once)…");
    let argv: Vec<String> = [tool.display().to_string()]
        .into_iter()
        .chain(
            ["-d", "wit", "-w", "plugin", "componentize", "app", "-o"]
                .iter()
                .map(|s| (*s).to_owned()),
        )
        .chain([out.display().to_string()])
        .collect();
    let run = crate::process::run(&crate::process::Spec {
        argv: &argv,
        cwd: Some(scratch.path()),
        timeout: Some(std::time::Duration::from_secs(900)),
        ..crate::process::Spec::default()
    })
    .map_err(|e| format!("running {}: {e}", tool.display()))?;
    if !run.success() {
        let text = String::from_utf8_lossy(&run.stderr);
        let last: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("  "))
            .take(6)
            .collect();
        return Err(format!(
            "componentize-py could not build the Python runner: {}",
            last.join(" | ")
        ));
    }
    let code = crate::safe_fs::read_capped(&out, 256 << 20)
        .map_err(|e| format!("reading the built runner: {e}"))?;
    // Written beside, then renamed: a parallel run never reads half a file.
    crate::plugin::cache::write_tagged(path, RUNNER_TAG, &code)?;
    Ok(code)
}
