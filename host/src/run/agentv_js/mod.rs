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
//!
//! What an untrusted suite cannot do through this (`docs/security.md`):
//! - **bundle a host file**: the bundler resolves every import itself
//!   (`build.mjs`'s `confine` plugin) and refuses an absolute or `file:`
//!   specifier, an import attribute other than `{ type: "json" }`, and any
//!   file that lies outside the project root after following links; the
//!   script itself must be inside the project;
//! - **see the operator's environment**: `node` runs with an empty one
//!   (`PATH=/usr/bin:/bin`, `HOME` a private temporary directory);
//! - **plant code in the cache**: the cache root, `agentv-js/` and the
//!   toolchain directory must belong to this user and be writable by
//!   nobody else; the toolchain's every file is tagged after `npm install`
//!   with the per-user key of the compile cache and checked before it is
//!   run (once per process), and so is each cached component; a tree or a
//!   component that fails its check is removed and built again.

use std::path::{Path, PathBuf};

const BUILD: &str = include_str!("build.mjs");
const ADAPTER: &str = include_str!("adapter.mjs");
const SHIM: &str = include_str!("sdk-shim.mjs");
const PACKAGE: &str = include_str!("package.json");
const WIT: &str = include_str!("../../../../plugin-sdk/wit/grader.wit");

/// The tag domain of the components this module caches.
const COMPONENT_TAG: &str = "evalhost-agentv-js-component-v1";

/// True when `source` is an AgentV assertion this can compile: it imports
/// `@agentv/sdk` and calls `defineAssertion`.
pub fn is_define_assertion(source: &str) -> bool {
    source.contains("@agentv/sdk") && source.contains("defineAssertion")
}

fn on_path(program: &str) -> Option<PathBuf> {
    crate::process::which(program)
}

fn digest(parts: &[&[u8]]) -> String {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().to_hex()[..32].to_owned()
}

/// `<cache>/agentv-js`, checked: it and the cache root belong to this user
/// and nobody else may write to them.
fn base() -> Result<PathBuf, String> {
    let root = crate::safe_fs::cache_root()
        .ok_or_else(|| "no cache directory for the AgentV assertion toolchain".to_owned())?;
    let base = root.join("agentv-js");
    for dir in [&root, &base] {
        crate::safe_fs::check_owned_dir(dir).map_err(|why| {
            format!(
                "the AgentV assertion toolchain is not run from {}: it {why}",
                dir.display()
            )
        })?;
    }
    Ok(base)
}

/// A keyed tag (the compile cache's per-user key) over `parts`.
fn mac(domain: &str, parts: &[&[u8]]) -> Result<[u8; 32], String> {
    crate::user_key::keyed_tag(domain, parts)
}

/// The digest of every entry under `dir` (relative path, kind, executable
/// bit, contents or link target), in a fixed order. Links stay links:
/// npm's `.bin` entries are links, and their targets are hashed as text.
fn tree_digest(dir: &Path) -> Result<[u8; 32], String> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut h = blake3::Hasher::new();
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
    {
        let entry = entry.map_err(|e| format!("cannot read the toolchain: {e}"))?;
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        let rel = rel.to_string_lossy();
        let meta = entry
            .path()
            .symlink_metadata()
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        h.update(&(rel.len() as u64).to_le_bytes());
        h.update(rel.as_bytes());
        // Nothing in it may be writable by others: the tag says what the
        // tree held when checked, the modes that nobody else changes it.
        if !meta.file_type().is_symlink() && meta.permissions().mode() & 0o022 != 0 {
            return Err(format!(
                "{} is writable by others (mode {:o}); the toolchain is not run",
                entry.path().display(),
                meta.permissions().mode() & 0o7777
            ));
        }
        if meta.file_type().is_symlink() {
            let to = std::fs::read_link(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            h.update(b"L");
            h.update(to.as_os_str().as_encoded_bytes());
        } else if meta.is_dir() {
            h.update(b"D");
        } else if meta.is_file() {
            h.update(if meta.permissions().mode() & 0o111 != 0 {
                b"X"
            } else {
                b"F"
            });
            h.update(&meta.len().to_le_bytes());
            let mut file = crate::safe_fs::open_read(entry.path()).map_err(|e| e.to_string())?;
            h.update_reader(&mut file)
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        } else {
            return Err(format!(
                "{} is neither a file, a directory nor a link",
                entry.path().display()
            ));
        }
    }
    Ok(*h.finalize().as_bytes())
}

/// The tag file of the toolchain in `dir` (beside it, not inside it).
fn tag_file(dir: &Path) -> PathBuf {
    dir.with_extension("tag")
}

/// Whether the toolchain in `dir` is the one this user's evalhost
/// installed (its tag checks out); said once per process per directory.
fn authentic(dir: &Path) -> Result<bool, String> {
    static CHECKED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    if CHECKED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&dir.to_path_buf())
    {
        return Ok(true);
    }
    crate::safe_fs::check_owned_dir(dir).map_err(|why| {
        format!(
            "the AgentV assertion toolchain is not run from {}: it {why}",
            dir.display()
        )
    })?;
    let Ok(tag) = crate::safe_fs::read_capped(&tag_file(dir), 64) else {
        return Ok(false);
    };
    let want = mac("evalhost-agentv-js-toolchain-v1", &[&tree_digest(dir)?])?;
    let ok = blake3::Hash::from(want)
        == blake3::Hash::from_slice(&tag).unwrap_or(blake3::Hash::from([0; 32]));
    if ok {
        CHECKED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.to_path_buf());
    }
    Ok(ok)
}

/// How long bundling may take (a FIFO or a huge file in the project must
/// not hang the run), and componentizing.
const BUNDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);
const COMPONENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Runs `node build.mjs ARGS` in the toolchain with nothing of evalhost's
/// environment (`PATH=/usr/bin:/bin`, `HOME` and `TMPDIR` the private
/// `home`), in its own process group, killed with its children at
/// `timeout`. `Ok(())` when it exited 0 in time, else what it said.
fn node_step(
    node: &Path,
    tools: &Path,
    home: &Path,
    args: &[&std::ffi::OsStr],
    timeout: std::time::Duration,
) -> Result<(), String> {
    let mut argv = vec![node.display().to_string(), "build.mjs".to_owned()];
    argv.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
    let env = [
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ("HOME".to_owned(), home.display().to_string()),
        ("TMPDIR".to_owned(), home.display().to_string()),
    ];
    let remove: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| !env.iter().any(|(e, _)| e == k))
        .collect();
    let outcome = crate::process::run(&crate::process::Spec {
        argv: &argv,
        cwd: Some(tools),
        timeout: Some(timeout),
        env: &env,
        env_remove: &remove,
        ..crate::process::Spec::default()
    })
    .map_err(|e| format!("node could not start: {e}"))?;
    if outcome.timed_out {
        return Err(format!(
            "it took longer than {} s and was stopped (does the script import a FIFO or a huge file?)",
            timeout.as_secs()
        ));
    }
    if outcome.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&outcome.stderr).trim().to_owned())
    }
}

/// The toolchain directory, installed when missing (`npm install`, once)
/// and checked before use.
pub fn toolchain() -> Result<PathBuf, String> {
    let node = on_path("node");
    let npm = on_path("npm");
    let (Some(_), Some(npm)) = (node, npm) else {
        return Err("it is compiled into a sandboxed component with Node.js (20 or later) and npm, which are not on PATH".into());
    };
    let base = base()?;
    let dir = base.join(digest(&[
        BUILD.as_bytes(),
        ADAPTER.as_bytes(),
        SHIM.as_bytes(),
        PACKAGE.as_bytes(),
        WIT.as_bytes(),
    ]));
    if std::fs::symlink_metadata(&dir).is_ok() {
        if authentic(&dir)? {
            return Ok(dir);
        }
        // Not what this user's evalhost installed (or changed since):
        // removed, never run, and said.
        eprintln!(
            "warning: the AgentV assertion toolchain {} failed its authentication check (not installed by this user's evalhost, or changed since); it is removed and installed again",
            dir.display()
        );
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&dir)
        } else {
            std::fs::remove_dir_all(&dir)
        }
        .map_err(|e| {
            format!(
                "cannot remove the unchecked toolchain {}: {e}",
                dir.display()
            )
        })?;
        let _ = std::fs::remove_file(tag_file(&dir));
    }
    let work = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(&base)
        .map_err(|e| format!("cannot create a directory in {}: {e}", base.display()))?;
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
    // npm runs no suite code (the packages are fixed by PACKAGE), but its
    // packages' install scripts run: it gets only what it needs to reach
    // the registry (PATH, HOME, npm's own settings and the proxy), none of
    // the operator's keys.
    let mut env = Vec::new();
    for (k, v) in std::env::vars() {
        let name = k.to_ascii_lowercase();
        if matches!(
            name.as_str(),
            "path" | "home" | "http_proxy" | "https_proxy" | "no_proxy"
        ) || name.starts_with("npm_config_")
        {
            env.push((k, v));
        }
    }
    let argv: Vec<String> = [
        npm.display().to_string(),
        "install".into(),
        "--no-audit".into(),
        "--no-fund".into(),
        "--loglevel=error".into(),
    ]
    .to_vec();
    let out = crate::process::run(&crate::process::Spec {
        argv: &argv,
        cwd: Some(work.path()),
        env: &env,
        clear_env: true,
        timeout: Some(std::time::Duration::from_secs(900)),
        ..crate::process::Spec::default()
    })
    .map_err(|e| format!("npm could not start: {e}"))?;
    if !out.success() {
        return Err(format!(
            "`npm install` of the toolchain (esbuild, componentize-js) failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    // Whatever the umask, nobody else may write to what will run.
    for entry in walkdir::WalkDir::new(work.path()).follow_links(false) {
        use std::os::unix::fs::PermissionsExt as _;
        let entry = entry.map_err(|e| format!("cannot read the toolchain: {e}"))?;
        if entry.file_type().is_symlink() {
            continue;
        }
        let mode = entry
            .metadata()
            .map_err(|e| format!("{}: {e}", entry.path().display()))?
            .permissions()
            .mode();
        if mode & 0o022 != 0 {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(mode & !0o022))
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        }
    }
    let tree = tree_digest(work.path())?;
    let installed = work.keep();
    match std::fs::rename(&installed, &dir) {
        Ok(()) => {
            let tag = mac("evalhost-agentv-js-toolchain-v1", &[&tree])?;
            crate::safe_fs::write_atomic(&tag_file(&dir), &tag)
                .map_err(|e| format!("cannot write {}: {e}", tag_file(&dir).display()))?;
            Ok(dir)
        }
        // Another run installed it meanwhile.
        Err(_) if authentic(&dir)? => {
            let _ = std::fs::remove_dir_all(&installed);
            Ok(dir)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&installed);
            Err(format!(
                "cannot move the toolchain into {}: {e}",
                dir.display()
            ))
        }
    }
}

/// What both builds start from: the toolchain, `node`, the script and the
/// project resolved (the script must lie inside it), a private work
/// directory and the bundle's path in it.
struct Prepared {
    tools: PathBuf,
    node: PathBuf,
    real: PathBuf,
    root: PathBuf,
    work: tempfile::TempDir,
    bundle: PathBuf,
}

fn prepare(script: &Path, root: &Path) -> Result<Prepared, String> {
    let tools = toolchain()?;
    let node = on_path("node").ok_or("node is not on PATH")?;
    let real = script
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", script.display()))?;
    let root = root
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", root.display()))?;
    if !real.starts_with(&root) {
        return Err(format!(
            "{} resolves to {}, outside the project {}; refused",
            script.display(),
            real.display(),
            root.display()
        ));
    }
    let work =
        tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let bundle = work.path().join("bundle.mjs");
    Ok(Prepared {
        tools,
        node,
        real,
        root,
        work,
        bundle,
    })
}

/// A promptfoo assertion file (TypeScript, or JavaScript that imports the
/// project's modules) as one ES module for the sandboxed JavaScript plugin:
/// bundled by esbuild from the toolchain, confined to the project as an
/// AgentV assertion is (`build.mjs script`), with the file's exports kept.
pub fn bundle_script(script: &Path, root: &Path) -> Result<String, String> {
    let Prepared {
        tools,
        node,
        real,
        root,
        work,
        bundle,
    } = prepare(script, root)?;
    node_step(
        &node,
        &tools,
        work.path(),
        &[
            "script".as_ref(),
            real.as_os_str(),
            root.as_os_str(),
            bundle.as_os_str(),
        ],
        BUNDLE_TIMEOUT,
    )
    .map_err(|why| format!("bundling {} failed: {why}", script.display()))?;
    crate::safe_fs::read_text_capped(&bundle, 64 << 20)
        .map_err(|e| format!("cannot read the bundle: {e}"))
}

/// The component of `script` (grading `kind`), which must lie inside
/// `root` (the suite's project): from the cache, or built; its bytes.
pub fn compile(script: &Path, kind: &str, root: &Path) -> Result<Vec<u8>, String> {
    let Prepared {
        tools,
        node,
        real,
        root,
        work,
        bundle,
    } = prepare(script, root)?;
    // The bundler's entry files live beside the toolchain, not in it.
    let entries = tools
        .parent()
        .expect("the toolchain has a parent")
        .join("entries");
    crate::safe_fs::check_owned_dir(&entries)
        .map_err(|why| format!("{}: {why}", entries.display()))?;
    node_step(
        &node,
        &tools,
        work.path(),
        &[
            "bundle".as_ref(),
            real.as_os_str(),
            kind.as_ref(),
            root.as_os_str(),
            entries.as_os_str(),
            bundle.as_os_str(),
        ],
        BUNDLE_TIMEOUT,
    )
    .map_err(|why| format!("bundling {} failed: {why}", script.display()))?;
    let source = crate::safe_fs::read_capped(&bundle, 64 << 20)
        .map_err(|e| format!("cannot read the bundle: {e}"))?;
    let components = tools
        .parent()
        .expect("the toolchain has a parent")
        .join("components");
    crate::safe_fs::check_owned_dir(&components)
        .map_err(|why| format!("{}: {why}", components.display()))?;
    let name = format!(
        "{}.wasm",
        digest(&[&source, WIT.as_bytes(), BUILD.as_bytes()])
    );
    let wasm = components.join(&name);
    // A component this user's evalhost built (its tag checks out), else
    // removed and built again.
    if let Some(code) = crate::plugin::cache::read_tagged(&wasm, COMPONENT_TAG, 256 << 20)? {
        return Ok(code);
    }
    let partial = work.path().join("component.wasm");
    let wit = tools.join("wit");
    node_step(
        &node,
        &tools,
        work.path(),
        &[
            "component".as_ref(),
            bundle.as_os_str(),
            wit.as_os_str(),
            partial.as_os_str(),
        ],
        COMPONENT_TIMEOUT,
    )
    .map_err(|why| format!("componentize-js failed on {}: {why}", script.display()))?;
    let code = crate::safe_fs::read_capped(&partial, 256 << 20)
        .map_err(|e| format!("cannot read the component: {e}"))?;
    crate::plugin::cache::write_tagged(&wasm, COMPONENT_TAG, &code)?;
    Ok(code)
}
