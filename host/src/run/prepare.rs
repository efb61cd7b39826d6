//! Loading a suite and its plugins: the suite through `evalhost-suite`, then
//! every plugin (built-in, `plugins:`, `wasm:`) compiled or taken from the
//! compile cache, and each assertion's config checked in its plugin.

use super::*;

/// A loaded suite with its plugins, ready to run or already validated.
pub struct Prepared {
    /// The suite.
    pub suite: Suite,
    /// Plugins for its assertion types.
    pub registry: Registry,
    /// Warnings found while loading.
    pub warnings: Diagnostics,
    /// Time spent reading the suite.
    pub load_time: Duration,
    /// Time spent loading the plugins and checking each assertion's config.
    pub plugins_time: Duration,
}

/// The largest plugin file read (a componentize-py component is ~20 MiB).
const MAX_PLUGIN_BYTES: u64 = 256 << 20;

/// A plugin's bytes: only a regular file (not a FIFO or a device, which
/// could block or never end), no larger than [`MAX_PLUGIN_BYTES`].
pub(super) fn read_plugin_file(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path)
        .map_err(|err| format!("cannot read plugin {}: {err}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("plugin {} is not a regular file", path.display()));
    }
    if meta.len() > MAX_PLUGIN_BYTES {
        return Err(format!(
            "plugin {} is {} MiB, more than the {} MiB a plugin may be",
            path.display(),
            meta.len() >> 20,
            MAX_PLUGIN_BYTES >> 20
        ));
    }
    std::fs::read(path).map_err(|err| format!("cannot read plugin {}: {err}", path.display()))
}

/// Loads the suite, the built-in and suite plugins, and checks every
/// assertion's config in its plugin; every problem is reported at once.
pub fn prepare(
    eval: &Path,
    engine: &Arc<PluginEngine>,
    strict: bool,
    dialect: Option<suite::dialect::Dialect>,
) -> Result<Prepared, RunError> {
    prepare_with(eval, engine, strict, dialect, false)
}

/// [`prepare`], with `locked`: registry plugins only from `evalhost.lock`.
pub fn prepare_with(
    eval: &Path,
    engine: &Arc<PluginEngine>,
    strict: bool,
    dialect: Option<suite::dialect::Dialect>,
    locked: bool,
) -> Result<Prepared, RunError> {
    let started = Instant::now();
    // When the compile cache knows every built-in plugin's types, only the
    // plugins the suite uses are loaded, after it is read (reading and
    // checking a cached plugin is a BLAKE3 pass over megabytes of code;
    // most suites use two of the seven). Otherwise all of them load (from
    // the cache, or compiled) on another thread while the suite is read.
    let known = crate::builtin::plugins()
        .iter()
        .all(|(_, _, digest)| engine.remembered_types(digest).is_some());
    let builtins = (!known).then(|| {
        let engine = Arc::clone(engine);
        std::thread::Builder::new()
            .name("evalhost-plugins".into())
            .spawn(move || Registry::with_builtins(&engine))
            .expect("a thread to load the built-in plugins")
    });
    // The code a config computes values with while it is read runs in
    // the plugin sandbox.
    let (code, code_ran) = super::code_runner::SandboxCode::runner(engine, !strict);
    let (suite, mut diags) = suite::load::load_as_with(eval, strict, dialect, Some(code));
    let load_time = started.elapsed();
    super::note_peak("load");
    // Plugin paths refused under strict are never read.
    let mut refused_paths: std::collections::HashSet<std::path::PathBuf> = Default::default();
    if let Some(suite) = &suite
        && strict
    {
        // Plugins must come from inside the project: a path elsewhere
        // would let an untrusted suite probe the machine's files.
        let root = suite::roots::Roots::for_eval(eval).project_root;
        let root = root.canonicalize().unwrap_or(root);
        let wasm_paths = suite
            .tests
            .iter()
            .flat_map(|t| t.every_assertion())
            .flat_map(suite::Assertion::walk)
            .filter_map(|a| a.wasm.as_deref().map(|(p, _)| (p.clone(), a.loc.clone())));
        // Registry plugins are pinned by the lock, not by where they are.
        let plugin_paths = suite
            .plugins
            .iter()
            .filter(|p| p.oci.is_none())
            .map(|p| (p.path.clone(), p.loc.clone()));
        for (path, loc) in plugin_paths.chain(wasm_paths) {
            let inside = path.canonicalize().is_ok_and(|p| p.starts_with(&root));
            if !inside {
                refused_paths.insert(path.clone());
                diags.push(
                    Diagnostic::error(&loc.file, format!("`--sandbox strict` refuses the plugin {}: it is outside the suite's project root {}", path.display(), root.display()))
                        .at(loc.pos)
                        .key(loc.key.clone())
                        .hint("copy the .wasm into the project, pinned by sha256"),
                );
            }
        }
    }
    // Joined on every path: a compile-cache write is never cut short.
    let builtins = builtins.map(|thread| {
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    let Some(mut suite) = suite else {
        return Err(RunError::Invalid(diags));
    };
    let builtins = match builtins {
        Some(all) => all,
        None => Registry::with_builtins_for(engine, Some(&needed_types(&suite))),
    };
    let mut registry = builtins.map_err(|e| {
        RunError::Invalid(Diagnostics(vec![Diagnostic::error(
            eval,
            format!("built-in plugin failed to load: {e}"),
        )]))
    })?;
    // Plugins that did not load, so that their assertions are not also
    // reported as of an unknown type.
    let mut unloaded: std::collections::HashSet<std::path::PathBuf> =
        refused_paths.iter().cloned().collect();
    for plugin_ref in &suite.plugins {
        let at = |message: String| {
            Diagnostic::error(&plugin_ref.loc.file, message)
                .at(plugin_ref.loc.pos)
                .key(plugin_ref.loc.key.clone())
        };
        if refused_paths.contains(&plugin_ref.path) {
            continue;
        }
        // A registry reference: the locked component, from the cache or the
        // registry, verified (`oci`).
        let mut plugin_ref = std::borrow::Cow::Borrowed(plugin_ref);
        if let Some(reference) = &plugin_ref.oci {
            let roots = suite::roots::Roots::for_eval(eval);
            let lock = crate::oci::lock_for(&suite.dir, &roots.project_root);
            // Under strict, nothing the lock does not pin is fetched.
            match crate::oci::component(reference, &lock, locked || strict) {
                Ok((path, sha)) => {
                    if let Some(pinned) = &plugin_ref.sha256
                        && *pinned != sha
                    {
                        diags.push(at(format!(
                            "{reference} is locked at sha256 {sha}, but the suite pins {pinned}"
                        )));
                        unloaded.insert(plugin_ref.path.clone());
                        continue;
                    }
                    let mut owned = plugin_ref.into_owned();
                    owned.path = path;
                    owned.sha256 = Some(sha);
                    plugin_ref = std::borrow::Cow::Owned(owned);
                }
                Err(message) => {
                    diags.push(at(message).hint(format!(
                        "the lock file is {}; `evalhost plugin add {reference}` records a reference",
                        lock.display()
                    )));
                    unloaded.insert(plugin_ref.path.clone());
                    continue;
                }
            }
        }
        let plugin_ref = plugin_ref.as_ref();
        let bytes = match read_plugin_file(&plugin_ref.path) {
            Ok(b) => b,
            Err(message) => {
                diags.push(at(message));
                unloaded.insert(plugin_ref.path.clone());
                continue;
            }
        };
        let digest = plugin::sha256_hex(&bytes);
        if let Some(expected) = &plugin_ref.sha256
            && *expected != digest
        {
            diags.push(
                at(format!(
                    "plugin {} has sha256 {digest}, but the suite pins {expected}",
                    plugin_ref.path.display()
                ))
                .hint("the file changed since it was pinned; check where it came from, then update `sha256`"),
            );
            unloaded.insert(plugin_ref.path.clone());
            continue;
        }
        match LoadedPlugin::load_with_digest(
            engine,
            &plugin_ref.path.display().to_string(),
            &bytes,
            &digest,
        ) {
            Ok(loaded) => {
                let added = match &plugin_ref.type_name {
                    Some(alias) => registry.add_as(loaded, alias),
                    None => registry
                        .add(loaded)
                        .map(drop)
                        .map_err(|dup| dup.to_string()),
                };
                if let Err(message) = added {
                    diags.push(at(message));
                }
            }
            Err(err) => {
                diags.push(at(err.to_string()));
                unloaded.insert(plugin_ref.path.clone());
            }
        }
    }
    // Plugins named by single assertions (`wasm:`), each loaded once.
    for assertion in suite
        .tests
        .iter()
        .flat_map(|t| t.every_assertion())
        .flat_map(crate::suite::Assertion::walk)
    {
        let Some((path, pinned)) = assertion.wasm.as_deref() else {
            continue;
        };
        if registry.for_path(path).is_some() {
            continue;
        }
        let at = |message: String| {
            Diagnostic::error(&assertion.loc.file, message)
                .at(assertion.loc.pos)
                .key(assertion.loc.key.key("wasm"))
        };
        if refused_paths.contains(path) {
            continue;
        }
        let bytes = match read_plugin_file(path) {
            Ok(b) => b,
            Err(message) => {
                diags.push(at(message));
                unloaded.insert(path.clone());
                continue;
            }
        };
        let digest = plugin::sha256_hex(&bytes);
        if let Some(expected) = pinned
            && *expected != digest
        {
            diags.push(at(format!(
                "plugin {} has sha256 {digest}, but the suite pins {expected}",
                path.display()
            )));
            unloaded.insert(path.clone());
            continue;
        }
        match LoadedPlugin::load_with_digest(engine, &path.display().to_string(), &bytes, &digest) {
            Ok(loaded) => registry.add_for_path(path.clone(), loaded),
            Err(err) => {
                diags.push(at(err.to_string()));
                unloaded.insert(path.clone());
            }
        }
    }
    super::python_runner::provide(&suite, engine, &mut registry, &mut diags);
    super::custom_types::discover(&mut suite, engine, &mut registry, &mut diags);
    super::script_bundles::bundle(&mut suite, &mut diags);
    let checked = super::check::check_assertions(&suite, &mut registry, &unloaded);
    diags.0.extend(checked.0);
    if strict {
        warn_frozen_clock(&suite, &registry, &code_ran, &mut diags);
    }
    diags.dedup();
    if diags.has_errors() {
        return Err(RunError::Invalid(diags));
    }
    Ok(Prepared {
        suite,
        registry,
        warnings: diags,
        load_time,
        plugins_time: {
            super::note_peak("plugins");
            started.elapsed().saturating_sub(load_time)
        },
    })
}

/// Under `--sandbox strict` the suite's code sees a frozen clock (its
/// JavaScript and Python get the wall clock otherwise, as Node's and
/// CPython's has one): said once at load when it has any — assertions
/// graded by those engines, or code that ran while the suite was read —
/// and in each such row (`grade::FROZEN_CLOCK`).
fn warn_frozen_clock(
    suite: &suite::Suite,
    registry: &Registry,
    code_ran: &std::sync::atomic::AtomicBool,
    diags: &mut Diagnostics,
) {
    let clocked = suite
        .tests
        .iter()
        .flat_map(|t| t.every_assertion())
        .flat_map(suite::Assertion::walk)
        .any(|a| {
            registry
                .resolve_for(a)
                .is_some_and(|(p, _)| crate::grade::CLOCKED.contains(&p.label.as_str()))
        });
    if clocked || code_ran.load(std::sync::atomic::Ordering::Relaxed) {
        diags.push(
            crate::diag::Diagnostic::warning(
                &suite.file,
                "under --sandbox strict the suite's JavaScript and Python see a frozen clock (`new Date()` is 1970-01-01T00:00:00Z), where promptfoo's and AgentV's see the time: a result that reads the clock can differ, and each such row says so (`details.clock`)",
            )
            .hint("without --sandbox strict the code reads the wall clock (read-only; no files, network or environment)"),
        );
    }
}

/// Every assertion type a suite has graded by a registered plugin (as
/// `Registry::resolve_for` finds it: the reader's `plugin_type`, else the
/// type's name; a `wasm:` plugin's are its own): its assertions', their
/// members', their transforms', and the tests' output transforms.
fn needed_types(suite: &suite::Suite) -> std::collections::HashSet<&str> {
    fn add<'a>(a: &'a suite::Assertion, out: &mut std::collections::HashSet<&'a str>) {
        for w in a.walk() {
            if w.wasm.is_none() {
                out.insert(w.plugin_type.as_deref().unwrap_or(&*w.kind));
            }
            if let Some(t) = &w.transform {
                add(t, out);
            }
        }
    }
    let mut out = std::collections::HashSet::new();
    for test in &suite.tests {
        for a in test
            .every_assertion()
            .chain(test.output_transform.as_deref())
        {
            add(a, &mut out);
        }
    }
    out
}

/// Workers from which the process gives up transparent huge pages.
const MANY_WORKERS: usize = 16;

/// No transparent huge pages for a process with many workers. mimalloc
/// asks for them, and each thread's heap then faults in (and the kernel
/// zeroes) 2 MiB at a time: with 64 workers on a slow model, half of the
/// run's CPU went to zeroing pages and its peak RSS was 300 MiB; with
/// 4 KiB pages, 0.17 s of system time instead of 0.56 s and 118 MiB
/// (`scripts/bench.py --only latency`). With few workers huge pages are
/// kept: they save a small run's page faults (about 5 % of a 1,000-case
/// deterministic run). The flag is read at each fault, so memory set up
/// before is covered too.
fn fewer_huge_pages(workers: usize) {
    #[cfg(target_os = "linux")]
    if workers >= MANY_WORKERS {
        // SAFETY: prctl with integer arguments only; a failure leaves the
        // kernel's default.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = workers;
}

/// Builds the process's plugin engine.
pub fn engine(no_compile_cache: bool, workers: usize) -> anyhow::Result<Arc<PluginEngine>> {
    fewer_huge_pages(workers);
    PluginEngine::new(&EngineOptions {
        cache_dir: if no_compile_cache {
            None
        } else {
            plugin::cache::default_cache_dir()
        },
        // Fresh instances for the calls running at once, plus the warm
        // instances stateless plugins keep (one per worker, for up to 12
        // such plugins).
        max_instances: (workers as u32 * 14 + 8).min(1024),
        max_idle: workers.max(1),
    })
}

/// Whether a targets file found for the suite (`<dir>/.evalhost/targets.yaml`)
/// is in the suite's project rather than above it (the operator's).
pub(super) fn suites_own(path: &std::path::Path, roots: &suite::roots::Roots) -> bool {
    path.parent()
        .and_then(std::path::Path::parent)
        .and_then(|dir| dir.canonicalize().ok())
        .is_none_or(|dir| dir.starts_with(&roots.project_root))
}
