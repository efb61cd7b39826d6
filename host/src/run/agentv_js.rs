//! AgentV's TypeScript custom assertions, sandboxed: a script
//! `.agentv/assertions/<type>.ts` that calls `defineAssertion` from
//! `@agentv/sdk` is bundled with a small adapter (esbuild; `@agentv/sdk`
//! replaced by a shim that registers the handler) and made a component of
//! the grader world with componentize-js, every WASI feature off — then it
//! grades like any plugin: no files, network, environment or clock. The
//! adapter gives the handler AgentV's code-grader input (built as AgentV's
//! host builds it, camelCased as `@agentv/sdk` camelCases it) and
//! normalizes its result as `@agentv/sdk` does (`score` clamped, else
//! `pass` as 1 or 0).
//!
//! The toolchain (esbuild, componentize-js; about 400 MB of npm packages)
//! is installed once with `npm` into the cache directory; each component is
//! cached by the digest of its bundle (the script and everything it
//! imports), so a script is compiled once per change.

use std::path::{Path, PathBuf};
use std::process::Command;

const BUILD: &str = include_str!("agentv_js/build.mjs");
const ADAPTER: &str = include_str!("agentv_js/adapter.mjs");
const SHIM: &str = include_str!("agentv_js/sdk-shim.mjs");
const PACKAGE: &str = include_str!("agentv_js/package.json");
const WIT: &str = include_str!("../../../plugin-sdk/wit/grader.wit");

/// True when `source` is an AgentV assertion this can compile: it imports
/// `@agentv/sdk` and calls `defineAssertion`.
pub fn is_define_assertion(source: &str) -> bool {
    source.contains("@agentv/sdk") && source.contains("defineAssertion")
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

fn digest(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().to_hex()[..32].to_owned()
}

fn base() -> Result<PathBuf, String> {
    crate::plugin::cache::default_cache_dir()
        .and_then(|d| d.parent().map(|p| p.join("agentv-js")))
        .ok_or_else(|| "no cache directory for the AgentV assertion toolchain".to_owned())
}

/// The toolchain directory, installed when missing (`npm install`, once).
pub fn toolchain() -> Result<PathBuf, String> {
    let node = on_path("node");
    let npm = on_path("npm");
    let (Some(_), Some(npm)) = (node, npm) else {
        return Err("it is compiled into a sandboxed component with Node.js (20 or later) and npm, which are not on PATH".into());
    };
    let dir = base()?.join(digest(&[
        BUILD.as_bytes(),
        ADAPTER.as_bytes(),
        SHIM.as_bytes(),
        PACKAGE.as_bytes(),
        WIT.as_bytes(),
    ]));
    if dir
        .join("node_modules/@bytecodealliance/componentize-js/package.json")
        .is_file()
        && dir.join("node_modules/esbuild/package.json").is_file()
    {
        return Ok(dir);
    }
    let parent = dir.parent().expect("a parent");
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let work = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(parent)
        .map_err(|e| format!("cannot create a directory in {}: {e}", parent.display()))?;
    let write = |name: &str, text: &str| {
        let path = work.path().join(name);
        std::fs::create_dir_all(path.parent().expect("a parent"))
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write("build.mjs", BUILD)?;
    write("adapter.mjs", ADAPTER)?;
    write("sdk-shim.mjs", SHIM)?;
    write("package.json", PACKAGE)?;
    write("wit/grader.wit", WIT)?;
    let out = Command::new(&npm)
        .current_dir(work.path())
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
        .output()
        .map_err(|e| format!("npm could not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`npm install` of the toolchain (esbuild, componentize-js) failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let installed = work.keep();
    match std::fs::rename(&installed, &dir) {
        Ok(()) => Ok(dir),
        // Another run installed it meanwhile.
        Err(_) if dir.join("node_modules").is_dir() => {
            let _ = std::fs::remove_dir_all(&installed);
            Ok(dir)
        }
        Err(e) => Err(format!(
            "cannot move the toolchain into {}: {e}",
            dir.display()
        )),
    }
}

/// The component of `script` (grading `kind`): from the cache, or built.
pub fn compile(script: &Path, kind: &str) -> Result<PathBuf, String> {
    let tools = toolchain()?;
    let work =
        tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let bundle = work.path().join("bundle.mjs");
    let out = Command::new("node")
        .current_dir(&tools)
        .arg("build.mjs")
        .arg("bundle")
        .arg(script)
        .arg(kind)
        .arg(&bundle)
        .output()
        .map_err(|e| format!("node could not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "bundling {} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let source = std::fs::read(&bundle).map_err(|e| format!("cannot read the bundle: {e}"))?;
    let components = base()?.join("components");
    std::fs::create_dir_all(&components)
        .map_err(|e| format!("cannot create {}: {e}", components.display()))?;
    let wasm = components.join(format!(
        "{}.wasm",
        digest(&[&source, WIT.as_bytes(), BUILD.as_bytes()])
    ));
    if wasm.is_file() {
        return Ok(wasm);
    }
    let partial = work.path().join("component.wasm");
    let out = Command::new("node")
        .current_dir(&tools)
        .arg("build.mjs")
        .arg("component")
        .arg(&bundle)
        .arg(tools.join("wit"))
        .arg(&partial)
        .output()
        .map_err(|e| format!("node could not start: {e}"))?;
    if !out.status.success() || !partial.is_file() {
        return Err(format!(
            "componentize-js failed on {}: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    crate::safe_fs::write_atomic(
        &wasm,
        &std::fs::read(&partial).map_err(|e| format!("cannot read the component: {e}"))?,
    )
    .map_err(|e| format!("cannot write {}: {e}", wasm.display()))?;
    Ok(wasm)
}
