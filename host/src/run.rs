//! `evalhost run`: load and check the suite, start the plugins, plan, then
//! for every planned test and trial get the target's output and grade every
//! assertion in its plugin. Rows are appended to `results.jsonl` and flushed
//! as they complete; at the end the file is rewritten in suite order and the
//! reporters run.
//!
//! Crash safety: a run directory holds `run.json` (what was asked) and
//! `results.jsonl`. `--resume DIR` repairs a torn last line, skips every
//! (test, target, trial) already there, and runs the rest. Ctrl-C stops
//! scheduling, lets running cases finish, and writes the summary of what
//! finished; a second Ctrl-C exits at once.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::diag::{Diagnostic, Diagnostics};
use crate::failure::FailureClass;
use crate::grade::{self, DEFAULT_THRESHOLD};
use crate::lifecycle::Lifecycle;
use crate::outcome::{self, Graded as _, RowBrief, Tally};
use crate::plan::{self, PlanOptions, PlannedTest, Shard};
use crate::plugin::{self, EngineOptions, LoadedPlugin, PluginEngine, Registry};
use crate::report::{self, Reporters, Summary};
use crate::results::{
    self, ExecutionStatus, MessageRow, ResultRow, ResultsWriter, SourceRef, Status,
};
use crate::suite::{self, Suite, TestCase};
use crate::target::{self, Target, Targets};

/// What `evalhost run` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The eval file (optional with `--resume` / `--rerun-failed`).
    pub eval: Option<PathBuf>,
    /// `--target`.
    pub target: Option<String>,
    /// `--targets`.
    pub targets_file: Option<PathBuf>,
    /// `-o/--output`.
    pub output: Option<PathBuf>,
    /// `-j/--workers`.
    pub workers: Option<usize>,
    /// `--grader-workers`.
    pub grader_workers: Option<usize>,
    /// `--threshold`.
    pub threshold: Option<f64>,
    /// `--no-compile-cache`.
    pub no_compile_cache: bool,
    /// `--quiet`: no per-test lines.
    pub quiet: bool,
    /// `--test-id`, `--tag`, `--repeat`, `--shard`.
    pub plan: PlanOptions,
    /// `--fail-fast`.
    pub fail_fast: bool,
    /// `--resume DIR`.
    pub resume: Option<PathBuf>,
    /// `--rerun-failed DIR`.
    pub rerun_failed: Option<PathBuf>,
    /// `--junit FILE`, `--reporter`.
    pub reporters: Reporters,
    /// `--sandbox strict`: refuse `exec` to every plugin.
    pub sandbox_strict: bool,
    /// `--keep-workspaces`: keep every case's workspace, not only failed ones.
    pub keep_workspaces: bool,
    /// `--cache` (true), `--no-cache` (false), else the suite's
    /// `execution.cache`.
    pub cache: Option<bool>,
    /// `--cache-sampled`: cache sampled models too.
    pub cache_sampled: bool,
    /// `regrade RUN_DIR`: grade that run's outputs instead of calling targets.
    pub regrade: Option<PathBuf>,
    /// `--grader-target`: the judge for LLM graders.
    pub grader_target: Option<String>,
    /// `--judge-workers`: judge calls at once (default 4).
    pub judge_workers: Option<usize>,
    /// `--no-judge-cache`: always call the judge.
    pub no_judge_cache: bool,
}

/// `run.json`: what a run was asked to do, so that `--resume` and
/// `--rerun-failed` can repeat it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// evalhost's version.
    pub evalhost_version: String,
    /// The eval file, absolute.
    pub eval: PathBuf,
    /// The target name (the first, with a matrix).
    pub target: String,
    /// Every target of the run (a matrix has several).
    #[serde(default)]
    pub targets: Vec<String>,
    /// The targets file, when given.
    #[serde(default)]
    pub targets_file: Option<PathBuf>,
    /// `--test-id` globs.
    #[serde(default)]
    pub test_ids: Vec<String>,
    /// `--tag` values.
    #[serde(default)]
    pub tags: Vec<String>,
    /// `--repeat`.
    #[serde(default)]
    pub repeat: Option<u32>,
    /// `--shard`, as `K/N`.
    #[serde(default)]
    pub shard: Option<String>,
    /// `--threshold`.
    #[serde(default)]
    pub threshold: Option<f64>,
    /// Only these tests (`--rerun-failed`).
    #[serde(default)]
    pub only: Option<Vec<String>>,
    /// The whole plan before sharding, so that `merge` can tell which rows
    /// belong to which shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<RecordedPlan>,
    /// When the run started.
    pub started_at: String,
}

/// The plan of a run before `--shard` sliced it: every (test, target) in
/// order, and the trials of each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedPlan {
    /// Trials per test.
    pub trials: u32,
    /// Every planned (test, target), in plan order.
    pub tests: Vec<PlannedEntry>,
}

/// One planned (test, target).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedEntry {
    /// The test's index in the suite.
    pub index: usize,
    /// The test's id.
    pub id: String,
    /// The target's name.
    pub target: String,
}

/// Why a run did not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The suite, the targets or a plugin is wrong; nothing ran.
    #[error("{} error(s) in the suite", .0.error_count())]
    Invalid(Diagnostics),
    /// The command line is wrong.
    #[error("{0}")]
    Usage(String),
}

/// A finished (or interrupted) run.
#[derive(Debug)]
pub struct RunReport {
    /// The counts.
    pub tally: Tally,
    /// True when Ctrl-C stopped it.
    pub interrupted: bool,
    /// The run directory.
    pub run_dir: PathBuf,
}

impl RunReport {
    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            crate::exit_codes::INTERRUPTED
        } else {
            self.tally.exit_code()
        }
    }
}

/// A loaded suite with its plugins, ready to run or already validated.
pub struct Prepared {
    /// The suite.
    pub suite: Suite,
    /// Plugins for its assertion types.
    pub registry: Registry,
    /// Warnings found while loading.
    pub warnings: Diagnostics,
}

/// The largest plugin file read (a componentize-py component is ~20 MiB).
const MAX_PLUGIN_BYTES: u64 = 256 << 20;

/// A plugin's bytes: only a regular file (not a FIFO or a device, which
/// could block or never end), no larger than [`MAX_PLUGIN_BYTES`].
fn read_plugin_file(path: &Path) -> Result<Vec<u8>, String> {
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
) -> Result<Prepared, RunError> {
    let (suite, mut diags) = if strict {
        suite::load::load_untrusted(eval)
    } else {
        suite::load(eval)
    };
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
            .flat_map(|t| &t.assertions)
            .flat_map(suite::Assertion::walk)
            .filter_map(|a| a.wasm.as_deref().map(|(p, _)| (p.clone(), a.loc.clone())));
        let plugin_paths = suite
            .plugins
            .iter()
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
    let Some(suite) = suite else {
        return Err(RunError::Invalid(diags));
    };
    let mut registry = Registry::with_builtins(engine).map_err(|e| {
        RunError::Invalid(Diagnostics(vec![Diagnostic::error(
            eval,
            format!("built-in plugin failed to load: {e}"),
        )]))
    })?;
    for plugin_ref in &suite.plugins {
        let at = |message: String| {
            Diagnostic::error(&plugin_ref.loc.file, message)
                .at(plugin_ref.loc.pos)
                .key(plugin_ref.loc.key.clone())
        };
        if refused_paths.contains(&plugin_ref.path) {
            continue;
        }
        let bytes = match read_plugin_file(&plugin_ref.path) {
            Ok(b) => b,
            Err(message) => {
                diags.push(at(message));
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
            continue;
        }
        match LoadedPlugin::load(engine, &plugin_ref.path.display().to_string(), &bytes) {
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
            Err(err) => diags.push(at(err.to_string())),
        }
    }
    // Plugins named by single assertions (`wasm:`), each loaded once.
    for assertion in suite
        .tests
        .iter()
        .flat_map(|t| &t.assertions)
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
            continue;
        }
        match LoadedPlugin::load(engine, &path.display().to_string(), &bytes) {
            Ok(loaded) => registry.add_for_path(path.clone(), loaded),
            Err(err) => diags.push(at(err.to_string())),
        }
    }
    let checked = suite::check_assertions(&suite, &registry);
    diags.0.extend(checked.0);
    if diags.has_errors() {
        return Err(RunError::Invalid(diags));
    }
    Ok(Prepared {
        suite,
        registry,
        warnings: diags,
    })
}

/// Builds the process's plugin engine.
pub fn engine(no_compile_cache: bool, workers: usize) -> anyhow::Result<Arc<PluginEngine>> {
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

fn default_run_dir() -> PathBuf {
    let stamp = jiff::Zoned::now()
        .strftime("%Y-%m-%dT%H-%M-%S%.3f")
        .to_string();
    PathBuf::from(".evalhost").join("runs").join(stamp)
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C handler once: the first Ctrl-C stops scheduling, the
/// second exits at once.
fn install_interrupt_handler() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                std::process::exit(i32::from(crate::exit_codes::INTERRUPTED));
            }
        });
    });
}

/// The largest `run.json` read.
const MAX_RUN_RECORD: u64 = 64 << 20;

/// Reads and checks `DIR/run.json`.
pub fn read_record(dir: &Path) -> Result<RunRecord, RunError> {
    let path = dir.join("run.json");
    let text = crate::safe_fs::read_text_capped(&path, MAX_RUN_RECORD).map_err(|e| {
        RunError::Usage(format!(
            "{} is not a run directory ({}: {e}); a run stopped before it recorded itself has nothing to resume: start it again with `evalhost run EVAL.yaml -o {}`",
            dir.display(),
            path.display(),
            dir.display()
        ))
    })?;
    let record: RunRecord = serde_json::from_str(&text)
        .map_err(|e| RunError::Usage(format!("{} is damaged: {e}", path.display())))?;
    record
        .check()
        .map_err(|e| RunError::Usage(format!("{}: {e}", path.display())))?;
    Ok(record)
}

impl RunRecord {
    /// Checks every field as the command line would check it: `run.json`
    /// is read back from a directory anyone may have written.
    pub fn check(&self) -> Result<(), String> {
        if let Some(t) = self.threshold
            && !(0.0..=1.0).contains(&t)
        {
            return Err(format!("`threshold` must be between 0 and 1, got {t}"));
        }
        if let Some(n) = self.repeat
            && !(1..=MAX_REPEAT).contains(&n)
        {
            return Err(format!(
                "`repeat` must be between 1 and {MAX_REPEAT}, got {n}"
            ));
        }
        if let Some(shard) = &self.shard {
            shard
                .parse::<Shard>()
                .map_err(|e| format!("`shard`: {e}"))?;
        }
        for glob in &self.test_ids {
            globset::Glob::new(glob)
                .map_err(|e| format!("`test_ids`: `{glob}` is not a valid glob: {e}"))?;
        }
        let names = std::iter::once(&self.target).chain(&self.targets);
        for name in names {
            if name.is_empty() || name.chars().any(char::is_control) {
                return Err(format!("`targets`: {name:?} is not a target name"));
            }
        }
        if !self.eval.is_absolute() {
            return Err(format!(
                "`eval` must be an absolute path, got {}",
                self.eval.display()
            ));
        }
        if let Some(file) = &self.targets_file
            && !file.is_absolute()
        {
            return Err(format!(
                "`targets_file` must be an absolute path, got {}",
                file.display()
            ));
        }
        Ok(())
    }
}

/// The run's whole plan, before `--shard` slices it.
fn recorded_plan(suite: &Suite, targets: &[String], options: &PlanOptions) -> RecordedPlan {
    let whole = plan::plan(
        suite,
        targets,
        &PlanOptions {
            shard: None,
            ..options.clone()
        },
    )
    .unwrap_or_default();
    RecordedPlan {
        trials: whole.first().map_or(1, |p| p.trials),
        tests: whole
            .iter()
            .map(|p| PlannedEntry {
                index: p.index,
                id: suite.tests[p.index].id.clone(),
                target: targets[p.target].clone(),
            })
            .collect(),
    }
}

/// The most trials `--repeat` (and a resumed run's `repeat`) may ask for.
pub const MAX_REPEAT: u32 = 1000;

/// Runs a suite. Returns the report; the caller maps it to an exit code.
pub fn run(
    options: &RunOptions,
    err: &mut dyn Write,
) -> anyhow::Result<Result<RunReport, RunError>> {
    if let Some(t) = options.threshold
        && !(0.0..=1.0).contains(&t)
    {
        return Ok(Err(RunError::Usage(format!(
            "--threshold must be between 0 and 1, got {t}"
        ))));
    }
    if options.resume.is_some() && options.rerun_failed.is_some() {
        return Ok(Err(RunError::Usage(
            "--resume and --rerun-failed cannot be combined".into(),
        )));
    }
    // What to run: from the command line, or from the run being resumed or
    // re-run.
    let previous = match options
        .resume
        .as_ref()
        .or(options.rerun_failed.as_ref())
        .or(options.regrade.as_ref())
    {
        Some(dir) => match read_record(dir) {
            Ok(r) => Some(r),
            Err(e) => return Ok(Err(e)),
        },
        None => None,
    };
    let eval = match (&options.eval, &previous) {
        (Some(e), _) => e.clone(),
        // Shown as the user would type it: relative when under the cwd.
        (None, Some(p)) => std::env::current_dir()
            .ok()
            .and_then(|cwd| p.eval.strip_prefix(&cwd).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| p.eval.clone()),
        (None, None) => {
            return Ok(Err(RunError::Usage(
                "an eval file is required (or --resume DIR)".into(),
            )));
        }
    };
    let mut plan_options = options.plan.clone();
    let mut threshold = options.threshold;
    let mut target_override = options.target.clone();
    let mut resumed_targets: Vec<String> = Vec::new();
    let mut targets_file = options.targets_file.clone();
    if let (Some(dir), Some(p)) = (&options.resume, &previous) {
        // The eval file named on the command line must be the one the run
        // was started with.
        if let Some(given) = &options.eval
            && std::path::absolute(given).ok().as_ref() != Some(&p.eval)
        {
            return Ok(Err(RunError::Usage(format!(
                "{} was started with {}, not {}: resume it without naming the eval file, or start a new run",
                dir.display(),
                p.eval.display(),
                given.display()
            ))));
        }
        // Under --sandbox strict the run directory is as untrusted as the
        // suite: what to run and with which targets come from the operator.
        if options.sandbox_strict {
            if options.eval.is_none() {
                return Ok(Err(RunError::Usage(format!(
                    "--sandbox strict takes the eval file from the command line, not from {}: run `evalhost run {} --resume {} --sandbox strict`",
                    dir.join("run.json").display(),
                    p.eval.display(),
                    dir.display()
                ))));
            }
            if let Some(file) = &p.targets_file
                && options.targets_file.is_none()
            {
                return Ok(Err(RunError::Usage(format!(
                    "{} names the targets file {}; --sandbox strict takes a targets file only from the command line: pass --targets again",
                    dir.join("run.json").display(),
                    file.display()
                ))));
            }
        }
        // A resumed run repeats exactly what was asked the first time.
        plan_options = PlanOptions {
            test_ids: p.test_ids.clone(),
            tags: p.tags.clone(),
            repeat: p.repeat,
            shard: p.shard.as_deref().and_then(|s| s.parse::<Shard>().ok()),
            only: p.only.clone(),
        };
        threshold = p.threshold;
        resumed_targets = if p.targets.is_empty() {
            vec![p.target.clone()]
        } else {
            p.targets.clone()
        };
        if options.targets_file.is_none() {
            targets_file = p.targets_file.clone();
        }
    }
    if let Some(dir) = &options.rerun_failed {
        let rows = match results::read_rows(&dir.join("results.jsonl")) {
            Ok((rows, _)) => rows,
            Err(e) => {
                return Ok(Err(RunError::Usage(format!(
                    "cannot read {}: {e}",
                    dir.join("results.jsonl").display()
                ))));
            }
        };
        let failed: Vec<String> = outcome::outcomes(&rows)
            .into_iter()
            .filter(|o| !o.status.is_success())
            .map(|o| o.test_id)
            .collect();
        if failed.is_empty() {
            writeln!(
                err,
                "nothing to re-run: every test in {} passed",
                dir.display()
            )?;
            return Ok(Ok(RunReport {
                tally: Tally::default(),
                interrupted: false,
                run_dir: dir.clone(),
            }));
        }
        if target_override.is_none() {
            target_override = previous.as_ref().map(|p| p.target.clone());
        }
        plan_options.only = Some(failed);
    }

    let workers = options
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let grader_workers = options
        .grader_workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let engine = engine(options.no_compile_cache, workers.max(grader_workers))?;
    let prepared = match prepare(&eval, &engine, options.sandbox_strict) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    for warning in prepared.warnings.iter() {
        writeln!(err, "{warning}")?;
    }
    let Prepared {
        suite, registry, ..
    } = prepared;

    let roots = suite::roots::Roots::for_eval(&eval);
    let env = suite::env::Env::load(&roots.eval_dir, &roots.project_root, &roots.cwd);
    let targets = match &targets_file {
        Some(path) => target::load_targets(path, &env),
        None => match target::find_targets_file(&suite.dir) {
            // Under --sandbox strict a targets file inside the suite's project
            // is the suite's own: it must really be inside (not a link out),
            // and `${{ VAR }}` in it sees only the suite's `.env` files, so a
            // target cannot carry the operator's keys to the suite's server.
            Some(path) if options.sandbox_strict && suites_own(&path, &roots) => {
                match roots.contain(&path) {
                    Ok(real) => target::load_targets(
                        &real,
                        &suite::env::Env::load_files_only(
                            &roots.eval_dir,
                            &roots.project_root,
                            &roots.cwd,
                        ),
                    ),
                    Err(err) => Err(Diagnostics(vec![
                        Diagnostic::error(&path, format!("the targets file: {err}"))
                            .hint("name the targets file you trust with --targets FILE"),
                    ])),
                }
            }
            Some(path) => target::load_targets(&path, &env),
            None => Ok(Targets::default()),
        },
    };
    let targets = match targets {
        Ok(t) => t,
        Err(diags) => return Ok(Err(RunError::Invalid(diags))),
    };
    // Under --sandbox strict a `cli` target runs only from a targets file the
    // operator named: one found beside an untrusted suite could be its own.
    if options.sandbox_strict && targets_file.is_none() {
        let refused: Vec<Diagnostic> = targets
            .targets
            .iter()
            .filter(|t| matches!(t.provider, target::Provider::Cli(_)))
            .map(|t| {
                Diagnostic::error(
                    targets.file.as_deref().unwrap_or(&eval),
                    format!(
                        "`--sandbox strict` refuses the `cli` target `{}` of a targets file found beside the suite: it could be the suite's own command",
                        t.name
                    ),
                )
                .hint("name the targets file you trust with --targets FILE")
            })
            .collect();
        if !refused.is_empty() {
            return Ok(Err(RunError::Invalid(Diagnostics(refused))));
        }
    }
    // Which targets: --target (or the resumed run's), else the suite's
    // matrix, else `execution.target`, else `default`.
    let single = |name: String| suite::MatrixTarget {
        name: name.clone(),
        use_target: name,
        hooks: Default::default(),
    };
    let matrix: Vec<suite::MatrixTarget> = if !resumed_targets.is_empty() {
        resumed_targets
            .iter()
            .map(|n| {
                suite
                    .matrix
                    .iter()
                    .find(|m| &m.name == n)
                    .cloned()
                    .unwrap_or_else(|| single(n.clone()))
            })
            .collect()
    } else if let Some(name) = target_override.clone() {
        vec![single(name)]
    } else if !suite.matrix.is_empty() {
        suite.matrix.clone()
    } else {
        vec![single(
            suite.target.clone().unwrap_or_else(|| "default".to_owned()),
        )]
    };
    let mut run_targets: Vec<RunTarget> = Vec::new();
    if let Some(dir) = &options.regrade {
        // Grade the earlier run's outputs: one recorded target per target it
        // ran, answering by (test id, trial).
        let rows = match results::read_rows(&dir.join("results.jsonl")) {
            Ok((rows, _)) => rows,
            Err(e) => {
                return Ok(Err(RunError::Usage(format!(
                    "cannot read {}: {e}",
                    dir.join("results.jsonl").display()
                ))));
            }
        };
        let mut by_target: std::collections::BTreeMap<
            String,
            std::collections::HashMap<(String, u32), target::TargetOutput>,
        > = std::collections::BTreeMap::new();
        for row in rows.iter().filter(|r| {
            r.execution_status != ExecutionStatus::ExecutionError || !r.output.is_empty()
        }) {
            let messages = if row.output_messages.is_empty() {
                target::TargetOutput::text(row.output.clone()).messages
            } else {
                row.output_messages.clone()
            };
            let output = target::TargetOutput {
                text: row.output.clone(),
                messages,
                duration_ms: row.duration_ms,
                token_usage: row.token_usage,
                cost_usd: row.cost_usd,
                llm_calls: row
                    .llm_calls
                    .map_or(target::LlmCalls::Unknown, target::LlmCalls::Known),
                target_used: row.target_used.clone(),
            };
            by_target
                .entry(row.target.clone())
                .or_default()
                .insert((row.test_id.clone(), row.trial.unwrap_or(1)), output);
        }
        for (name, outputs) in by_target {
            run_targets.push(RunTarget {
                target: Target {
                    name,
                    provider: target::Provider::Recorded(Arc::new(outputs)),
                    grader_target: None,
                    fallback_targets: Vec::new(),
                    retry: target::Retry {
                        max_retries: 0,
                        ..target::Retry::default()
                    },
                    base_dir: suite.dir.clone(),
                },
                hooks: Default::default(),
                judge: Err(String::new()),
            });
        }
        if let Some(max) = rows.iter().filter_map(|r| r.trials).max() {
            plan_options.repeat.get_or_insert(max);
        }
    }
    for entry in matrix.iter().filter(|_| options.regrade.is_none()) {
        match targets.select(&entry.use_target) {
            Ok(t) => {
                let mut target = t.clone();
                target.name.clone_from(&entry.name);
                run_targets.push(RunTarget {
                    target,
                    hooks: entry.hooks.clone(),
                    judge: Err(String::new()),
                });
            }
            Err(message) => return Ok(Err(RunError::Usage(message))),
        }
    }
    let target_names: Vec<String> = run_targets.iter().map(|t| t.target.name.clone()).collect();
    // The judge: one per run, answering for every target's LLM graders.
    let judge = std::sync::Arc::new(
        crate::judge::Judge::new(
            targets.clone(),
            if options.no_judge_cache {
                None
            } else {
                crate::judge::Judge::default_cache_dir().and_then(|dir| {
                    match crate::plugin::cache::check_owner(&dir, "") {
                        Ok(()) => Some(dir),
                        Err(e) => {
                            let _ = writeln!(
                                err,
                                "  warning: the judge cache {} {e}; it is not used",
                                dir.display()
                            );
                            None
                        }
                    }
                })
            },
            options.judge_workers.unwrap_or(4),
        )
        .with_scope(crate::response_cache::scope(
            &eval,
            &suite.name,
            options.sandbox_strict,
        )),
    );
    if let Some(name) = &options.grader_target
        && let Err(message) = targets.select(name)
    {
        return Ok(Err(RunError::Usage(format!("--grader-target: {message}"))));
    }
    for rt in &mut run_targets {
        rt.judge = match &options.regrade {
            // A regrade judges as the original target would have.
            Some(_) => match targets.select(&rt.target.name) {
                Ok(original) => judge.resolve_default(options.grader_target.as_deref(), original),
                Err(_) => options.grader_target.as_deref().map_or_else(
                    || Err("no judge: pass --grader-target".to_owned()),
                    |n| targets.select(n).cloned(),
                ),
            },
            None => judge.resolve_default(options.grader_target.as_deref(), &rt.target),
        };
    }
    let plan = match plan::plan(&suite, &target_names, &plan_options) {
        Ok(p) => p,
        Err(message) => return Ok(Err(RunError::Usage(message))),
    };

    // Under --sandbox strict the suite neither turns the response cache on
    // nor says where it lives: entries it ships could forge outputs.
    let enabled = options
        .cache
        .unwrap_or(suite.cache && !options.sandbox_strict);
    let response_cache = if enabled {
        suite
            .cache_path
            .clone()
            .filter(|_| !options.sandbox_strict)
            .or_else(crate::response_cache::ResponseCache::default_dir)
            .and_then(|dir| {
                match crate::response_cache::ResponseCache::open(dir, options.cache_sampled) {
                    Ok(cache) => Some(cache),
                    Err(warning) => {
                        let _ = writeln!(err, "  warning: {warning}");
                        None
                    }
                }
            })
    } else {
        None
    };
    let cache_scope = crate::response_cache::scope(&eval, &suite.name, options.sandbox_strict);
    let run_dir = match (&options.resume, &options.output) {
        (Some(dir), _) => dir.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => default_run_dir(),
    };
    if let Err(e) = crate::safe_fs::check_dir(&run_dir, &[&roots.project_root, &roots.cwd]) {
        return Ok(Err(RunError::Usage(format!("the run directory: {e}"))));
    }
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create the run directory {}", run_dir.display()))?;
    let results_path = run_dir.join("results.jsonl");
    let mut done: HashMap<(String, String, u32), RowBrief> = HashMap::new();
    if options.resume.is_some() && std::fs::symlink_metadata(&results_path).is_ok() {
        let repaired = match results::repair_torn_tail(&results_path) {
            Ok(r) => r,
            Err(e) => return Ok(Err(RunError::Usage(format!("cannot resume: {e}")))),
        };
        if repaired {
            writeln!(
                err,
                "  dropped a torn last line of {} (a crash cut it)",
                results_path.display()
            )?;
        }
        let suite_name: Arc<str> = suite.name.as_str().into();
        let mut rows = Vec::new();
        // Rows already there are kept only when an honest run could have
        // written them: a test and target of this plan, a trial it planned,
        // scores in range and a status that follows from them.
        let planned: std::collections::HashSet<(usize, &str, &str)> = plan
            .iter()
            .map(|p| {
                (
                    p.index,
                    suite.tests[p.index].id.as_str(),
                    target_names[p.target].as_str(),
                )
            })
            .collect();
        let trials = plan.first().map_or(1, |p| p.trials);
        let mut refused = 0usize;
        let mut dropped = 0usize;
        let read = results::for_each_line(&results_path, |parsed| match parsed {
            Ok(row)
                if planned.contains(&(
                    row.test_index,
                    row.test_id.as_str(),
                    row.target.as_str(),
                )) && row.trial.unwrap_or(1) <= trials
                    && row.check().is_ok() =>
            {
                rows.push(RowBrief::of(&row, &suite_name, &suite_name));
            }
            Ok(_) => refused += 1,
            Err(_) => dropped += 1,
        });
        if let Err(e) = read {
            return Ok(Err(RunError::Usage(format!("cannot resume: {e}"))));
        }
        if refused > 0 {
            return Ok(Err(RunError::Usage(format!(
                "{} holds {refused} row(s) this run could not have written (a test or trial it did not plan, a score outside [0, 1], or a status its score does not allow); it is not resumable: start a new run",
                results_path.display()
            ))));
        }
        if dropped > 0 {
            writeln!(
                err,
                "  {dropped} damaged line(s) of {} will be graded again",
                results_path.display()
            )?;
        }
        for row in rows {
            done.insert(row.key(), row);
        }
    } else if options.resume.is_none() {
        let record = RunRecord {
            evalhost_version: env!("CARGO_PKG_VERSION").into(),
            eval: std::path::absolute(&eval).unwrap_or(eval.clone()),
            target: target_names[0].clone(),
            targets: target_names.clone(),
            targets_file: targets_file.clone(),
            test_ids: plan_options.test_ids.clone(),
            tags: plan_options.tags.clone(),
            repeat: plan_options.repeat,
            shard: plan_options.shard.map(|s| s.to_string()),
            threshold,
            only: plan_options.only.clone(),
            plan: Some(recorded_plan(&suite, &target_names, &plan_options)),
            started_at: jiff::Timestamp::now().to_string(),
        };
        // Atomically: a kill leaves either no run.json (nothing to resume)
        // or a whole one, never a torn one.
        crate::safe_fs::write_atomic(
            &run_dir.join("run.json"),
            (serde_json::to_string_pretty(&record)? + "\n").as_bytes(),
        )?;
        // A link left there is removed, not followed.
        if std::fs::symlink_metadata(&results_path).is_ok() {
            std::fs::remove_file(&results_path)?;
        }
    }
    let mut writer = ResultsWriter::create(&run_dir)
        .with_context(|| format!("cannot write {}", results_path.display()))?;

    writeln!(
        err,
        "evalhost {} · suite `{}` · {} run(s){} · target {}{}",
        env!("CARGO_PKG_VERSION"),
        crate::text::shown(&suite.name),
        plan.len(),
        plan_options
            .shard
            .map_or(String::new(), |s| format!(" (shard {s})")),
        target_names
            .iter()
            .map(|n| format!("`{}`", crate::text::shown(n)))
            .collect::<Vec<_>>()
            .join(", "),
        if done.is_empty() {
            String::new()
        } else {
            format!(" · resuming: {} row(s) already done", done.len())
        }
    )?;
    for p in registry.plugins() {
        let (source, took) = p.compiled;
        let how = match source {
            plugin::CompileSource::Cache => "cached".to_owned(),
            plugin::CompileSource::Compiled => format!("compiled in {} ms", took.as_millis()),
        };
        writeln!(
            err,
            "  plugin {} {} ({how})",
            crate::text::shown(&p.name),
            crate::text::shown(&p.version)
        )?;
    }
    for warning in engine.take_warnings() {
        writeln!(err, "  warning: {warning}")?;
    }

    let run_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    let run_id = format!("{run_id}-{}", std::process::id());
    let lifecycle = Lifecycle::prepare(&suite, &run_id, options.keep_workspaces);
    let mut workers = workers;
    if lifecycle.as_ref().is_some_and(Lifecycle::is_shared) && workers > 1 {
        writeln!(
            err,
            "  the suite's workspace is shared (isolation: shared): running one case at a time"
        )?;
        workers = 1;
    }
    if let Some(error) = lifecycle.as_ref().and_then(|l| l.setup_error.clone()) {
        writeln!(
            err,
            "  error: {error}; every case fails with failure_class workspace"
        )?;
    }

    let target_hook = |hook: &crate::workspace::Hook, id: &str, timeout| {
        crate::lifecycle::HookRow::from(crate::workspace::run_hook(
            hook,
            &crate::workspace::HookContext {
                workspace: None,
                test_id: id,
                run_id: &run_id,
                case_input: None,
                case_metadata: None,
                base_dir: &suite.dir,
            },
            timeout,
        ))
    };
    let mut hooks = std::collections::BTreeMap::new();
    for rt in &run_targets {
        if let Some(hook) = &rt.hooks.before_all {
            let run = target_hook(
                hook,
                "__target_before_all__",
                crate::workspace::BEFORE_TIMEOUT,
            );
            if let Some(error) = &run.error {
                writeln!(
                    err,
                    "  warning: target `{}` before_all hook: {error}",
                    rt.target.name
                )?;
            }
            hooks.insert(format!("{}.before_all", rt.target.name), run);
        }
    }

    install_interrupt_handler();
    INTERRUPTED.store(false, Ordering::SeqCst);
    let started = Instant::now();
    let ctx = Ctx {
        suite: &suite,
        registry: &registry,
        targets: &targets,
        run_targets: &run_targets,
        cli_threshold: threshold,
        graders: Semaphore::new(grader_workers),
        stop: AtomicBool::new(false),
        fail_fast: options.fail_fast,
        policy: crate::grants::Policy {
            strict: options.sandbox_strict,
            exec_allow: suite.exec_allow.clone(),
            base_dir: suite.dir.clone(),
            judge: Some(judge.clone()),
            ..crate::grants::Policy::default()
        },
        lifecycle,
        run_id: run_id.clone(),
        cache: response_cache,
        cache_scope,
    };
    let mut progress = report::terminal::Progress::new(plan.len(), options.quiet);
    let new_rows = execute(&ctx, &plan, &done, workers, |row| {
        writer
            .append(row)
            .with_context(|| format!("cannot write {}", writer.path().display()))?;
        progress.row(err, row)?;
        Ok(())
    })?;
    progress.finish();
    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
    let Ctx { lifecycle, .. } = ctx;
    for rt in &run_targets {
        if let Some(hook) = &rt.hooks.after_all {
            let run = target_hook(
                hook,
                "__target_after_all__",
                crate::workspace::AFTER_TIMEOUT,
            );
            hooks.insert(format!("{}.after_all", rt.target.name), run);
        }
    }
    let mut kept = Vec::new();
    if let Some(lifecycle) = lifecycle {
        if let Some(before) = lifecycle.before_all.clone() {
            hooks.insert("before_all".to_owned(), before);
        }
        let (after, kept_paths) = lifecycle.finish();
        if let Some(after) = after {
            if let Some(error) = &after.error {
                writeln!(
                    err,
                    "  warning: after_all hook: {}",
                    crate::text::shown(error)
                )?;
            }
            hooks.insert("after_all".to_owned(), after);
        }
        kept = kept_paths;
    }

    let rows: Vec<RowBrief> = done.into_values().chain(new_rows).collect();
    writer
        .sort_in_place()
        .with_context(|| format!("cannot write {}", writer.path().display()))?;
    let summary = Summary::new(
        &suite.name,
        &target_names.join(", "),
        &run_dir,
        &rows,
        plan.len(),
        Some(&registry),
        started.elapsed(),
        interrupted,
    );
    let mut summary = summary;
    summary.hooks = hooks;
    drop(rows);
    report::write_all(&summary, writer.path(), &options.reporters, err)?;
    if !kept.is_empty() {
        writeln!(err, "kept workspaces ({}):", kept.len())?;
        for path in &kept {
            writeln!(err, "  {}", path.display())?;
        }
    }
    if interrupted {
        writeln!(
            err,
            "interrupted: {} of {} test(s) finished; continue with `evalhost run --resume {}`",
            summary.tally.total,
            plan.len(),
            run_dir.display()
        )?;
    }
    Ok(Ok(RunReport {
        tally: summary.tally.clone(),
        interrupted,
        run_dir,
    }))
}

/// A counting semaphore: the limit on concurrent plugin calls, separate from
/// the limit on concurrent cases.
struct Semaphore {
    free: Mutex<usize>,
    available: Condvar,
}

struct Permit<'a>(&'a Semaphore);

impl Semaphore {
    fn new(permits: usize) -> Self {
        Self {
            free: Mutex::new(permits),
            available: Condvar::new(),
        }
    }

    fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.available.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|e| e.into_inner());
        *free += 1;
        self.0.available.notify_one();
    }
}

struct Ctx<'a> {
    suite: &'a Suite,
    registry: &'a Registry,
    targets: &'a Targets,
    run_targets: &'a [RunTarget],
    cli_threshold: Option<f64>,
    graders: Semaphore,
    stop: AtomicBool,
    fail_fast: bool,
    policy: crate::grants::Policy,
    lifecycle: Option<Lifecycle>,
    run_id: String,
    cache: Option<crate::response_cache::ResponseCache>,
    /// The scope of cached answers (suite and sandbox mode).
    cache_scope: String,
}

/// A target of this run, with its matrix hooks and its judge.
struct RunTarget {
    target: Target,
    hooks: crate::workspace::Hooks,
    judge: Result<Target, String>,
}

impl Ctx<'_> {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || INTERRUPTED.load(Ordering::SeqCst)
    }
}

/// Runs `plan` on `workers` threads, skipping rows in `done`, and hands each
/// new row to `sink` as it completes (on the calling thread).
fn execute(
    ctx: &Ctx<'_>,
    plan: &[PlannedTest],
    done: &HashMap<(String, String, u32), RowBrief>,
    workers: usize,
    mut sink: impl FnMut(&ResultRow) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<RowBrief>> {
    let suite: Arc<str> = ctx.suite.name.as_str().into();
    let target: Arc<str> = ctx
        .run_targets
        .first()
        .map_or("", |t| t.target.name.as_str())
        .into();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<ResultRow>();
    let mut rows = Vec::new();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for _ in 0..workers.min(plan.len()).max(1) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                while !ctx.stopping() {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(planned) = plan.get(i) else { break };
                    if !run_planned(ctx, planned, done, &tx) {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for row in rx {
            sink(&row)?;
            rows.push(RowBrief::of(&row, &suite, &target));
        }
        Ok(())
    })?;
    Ok(rows)
}

/// Runs the trials of one planned test. False when the receiver is gone.
fn run_planned(
    ctx: &Ctx<'_>,
    planned: &PlannedTest,
    done: &HashMap<(String, String, u32), RowBrief>,
    tx: &mpsc::Sender<ResultRow>,
) -> bool {
    let test = &ctx.suite.tests[planned.index];
    let mut finished: Vec<RowBrief> = Vec::new();
    let suite: Arc<str> = ctx.suite.name.as_str().into();
    for trial in 1..=planned.trials {
        let key = (
            test.id.clone(),
            ctx.run_targets[planned.target].target.name.clone(),
            trial,
        );
        if let Some(row) = done.get(&key) {
            finished.push(row.clone());
        } else {
            if ctx.stopping() {
                return true;
            }
            let row = run_trial(ctx, test, planned, trial);
            finished.push(RowBrief::of(&row, &suite, &suite));
            if tx.send(row).is_err() {
                return false;
            }
        }
        if planned.stop_at_first_pass
            && finished
                .last()
                .is_some_and(|r| r.execution_status() == ExecutionStatus::Ok)
        {
            break;
        }
    }
    if ctx.fail_fast {
        let refs: Vec<&RowBrief> = finished.iter().collect();
        if !refs.is_empty() && !outcome::combine(&refs).status.is_success() {
            ctx.stop.store(true, Ordering::SeqCst);
        }
    }
    true
}

/// Threshold precedence: the test's `execution.threshold`, then
/// `--threshold`, then the suite's `execution.threshold`, then 0.8.
pub fn effective_threshold(test: Option<f64>, cli: Option<f64>, suite: Option<f64>) -> f64 {
    test.or(cli).or(suite).unwrap_or(DEFAULT_THRESHOLD)
}

fn run_trial(ctx: &Ctx<'_>, test: &TestCase, planned: &PlannedTest, trial: u32) -> ResultRow {
    let started = Instant::now();
    let run_target = &ctx.run_targets[planned.target];
    // A deadline past what the clock can hold is no deadline.
    let deadline = test
        .timeout_ms
        .and_then(|ms| started.checked_add(Duration::from_millis(ms)));
    let threshold = effective_threshold(test.threshold, ctx.cli_threshold, ctx.suite.threshold);
    let mut row = ResultRow {
        timestamp: String::new(),
        test_id: test.id.clone(),
        suite: ctx.suite.name.clone(),
        target: run_target.target.name.clone(),
        test_index: planned.index,
        trial: (planned.trials > 1).then_some(trial),
        trials: (planned.trials > 1).then_some(planned.trials),
        strategy: planned.strategy,
        status: Status::Error,
        expected_fail: test.expected_fail,
        tags: test.tags.clone(),
        conversation_id: test.conversation_id.clone(),
        source: Some(SourceRef {
            file: test.loc.file.display().to_string(),
            line: test.loc.pos.map(|p| p.line),
        }),
        score: 0.0,
        threshold,
        execution_status: ExecutionStatus::ExecutionError,
        failure_class: None,
        error: None,
        duration_ms: None,
        wall_ms: 0,
        token_usage: None,
        cost_usd: None,
        llm_calls: None,
        target_used: None,
        cached: false,
        output_messages: Vec::new(),
        file_changes: None,
        workspace_path: None,
        hooks: Default::default(),
        input: test
            .input
            .iter()
            .map(|m| MessageRow {
                role: m.role.clone(),
                content: m.content.clone(),
            })
            .collect(),
        expected_output: test.expected_text().map(str::to_owned),
        criteria: test.criteria.clone(),
        metadata: test.metadata.clone(),
        output: String::new(),
        scores: Vec::new(),
    };
    let finish = |mut row: ResultRow| {
        row.timestamp = jiff::Timestamp::now().to_string();
        row.wall_ms = started.elapsed().as_millis() as u64;
        row.status = Status::of(row.execution_status, row.expected_fail);
        if row.status == Status::UnexpectedPassed {
            row.failure_class = Some(FailureClass::UnexpectedPass);
        }
        row
    };
    let mut case_ws = None;
    if let Some(lifecycle) = &ctx.lifecycle {
        match lifecycle.for_case(test, trial) {
            Ok(case) => case_ws = Some(case),
            Err(failed) => {
                let (message, case) = *failed;
                row.failure_class = Some(FailureClass::Workspace);
                row.error = Some(message);
                row.hooks = case.hooks.clone();
                row.workspace_path = case.finish(false).map(|p| p.display().to_string());
                return finish(row);
            }
        }
    }
    let workspace_path = case_ws
        .as_ref()
        .and_then(|c| c.path())
        .map(Path::to_path_buf);
    let hook_context = crate::workspace::HookContext {
        workspace: workspace_path.as_deref(),
        test_id: &test.id,
        run_id: &ctx.run_id,
        case_input: test
            .input
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map(|m| m.content.as_str()),
        case_metadata: Some(&test.metadata),
        base_dir: &ctx.suite.dir,
    };
    let mut target_hooks = std::collections::BTreeMap::new();
    if let Some(hook) = &run_target.hooks.before_each {
        let run = crate::workspace::run_hook(hook, &hook_context, crate::workspace::BEFORE_TIMEOUT);
        let error = run.error.clone();
        target_hooks.insert(
            "target_before_each".to_owned(),
            crate::lifecycle::HookRow::from(run),
        );
        if let Some(error) = error {
            row.failure_class = Some(FailureClass::Workspace);
            row.error = Some(format!("target before_each hook: {error}"));
            row.hooks = target_hooks;
            if let Some(case) = case_ws {
                row.hooks.extend(case.hooks.clone());
                row.workspace_path = case.finish(false).map(|p| p.display().to_string());
            }
            return finish(row);
        }
    }
    let invocation = target::Invocation {
        workspace: workspace_path.as_deref(),
        eval_dir: Some(&ctx.suite.dir),
        deadline,
        attempt: 0,
        trial,
    };
    let cache_key = match (&ctx.cache, workspace_path.is_none() && planned.trials == 1) {
        (Some(cache), true) => run_target
            .target
            .cache_identity(cache.sampled, &ctx.suite.dir)
            .map(|identity| {
                crate::response_cache::ResponseCache::key(&identity, &ctx.cache_scope, test)
            }),
        _ => None,
    };
    let cached = cache_key
        .as_ref()
        .and_then(|key| ctx.cache.as_ref().and_then(|c| c.get(key)));
    row.cached = cached.is_some();
    let invoked = match cached {
        Some(output) => Ok(output),
        None => ctx.targets.invoke(&run_target.target, test, &invocation),
    };
    if let (Ok(output), Some(key), Some(cache), false) =
        (&invoked, &cache_key, &ctx.cache, row.cached)
    {
        cache.put(key, output);
    }
    let output = match invoked {
        Ok(output) => output,
        Err(failure) => {
            row.failure_class = Some(failure.class);
            row.error = Some(failure.message);
            // The hooks that ran before the target failed stay on record.
            row.hooks = std::mem::take(&mut target_hooks);
            if let Some(case) = case_ws {
                row.hooks.extend(case.hooks.clone());
                row.workspace_path = case.finish(false).map(|p| p.display().to_string());
            }
            return finish(row);
        }
    };
    if let Some(hook) = &run_target.hooks.after_each {
        let run = crate::workspace::run_hook(hook, &hook_context, crate::workspace::AFTER_TIMEOUT);
        target_hooks.insert(
            "target_after_each".to_owned(),
            crate::lifecycle::HookRow::from(run),
        );
    }
    let file_changes = case_ws.as_mut().and_then(|c| c.after_agent(test));
    let mut request = grade::base_request(test, &output);
    request.trace.file_changes = file_changes.clone();
    request.workspace_path = workspace_path.as_ref().map(|p| p.display().to_string());
    let leaf =
        |assertion: &crate::suite::Assertion,
         request: &mut crate::plugin::bindings::evalhost::grader::types::GradeRequest| {
            let mut limits = grade::call_limits(assertion, ctx.suite.limits);
            let mut capped_by_case = false;
            if let Some(deadline) = deadline {
                let remaining = deadline.saturating_duration_since(Instant::now());
                if remaining < limits.timeout {
                    limits.timeout = remaining;
                    capped_by_case = true;
                }
            }
            let mut score = if limits.timeout.is_zero() {
                grade::case_timeout_row(assertion, test.timeout_ms.unwrap_or_default())
            } else {
                let _permit = ctx.graders.acquire();
                grade::grade_assertion(
                    ctx.registry,
                    assertion,
                    request,
                    limits,
                    &ctx.policy,
                    &run_target.judge,
                )
            };
            if capped_by_case && score.failure_class == Some(FailureClass::PluginTimeout) {
                score.failure_class = Some(FailureClass::CaseTimeout);
                score.error = Some(format!(
                    "the case ran past its timeout_ms of {}",
                    test.timeout_ms.unwrap_or_default()
                ));
            }
            score
        };
    let scores: Vec<_> = test
        .assertions
        .iter()
        .map(|assertion| grade::grade_tree(assertion, &mut request, &leaf))
        .collect();
    let (score, status, failure_class) = grade::score_test(&test.assertions, &scores, threshold);
    row.error = (status == ExecutionStatus::ExecutionError)
        .then(|| {
            scores
                .iter()
                .find_map(|s| s.error.as_ref().map(|e| format!("{}: {e}", s.name)))
        })
        .flatten();
    row.score = score;
    row.execution_status = status;
    row.failure_class = failure_class;
    row.duration_ms = output.duration_ms;
    row.token_usage = output.token_usage;
    row.cost_usd = output.cost_usd;
    row.llm_calls = output.llm_call_count();
    row.target_used = output.target_used;
    let plain = output.messages.len() == 1
        && output.messages[0].role == "assistant"
        && output.messages[0].tool_calls.is_empty()
        && output.messages[0].content == output.text;
    if !plain {
        row.output_messages = output.messages.clone();
    }
    row.output = output.text;
    row.scores = scores;
    row.file_changes = file_changes;
    row.hooks = target_hooks;
    if let Some(case) = case_ws {
        row.hooks.extend(case.hooks.clone());
        let passed = Status::of(row.execution_status, row.expected_fail).is_success();
        row.workspace_path = case.finish(passed).map(|p| p.display().to_string());
    }
    finish(row)
}

/// Whether a targets file found for the suite (`<dir>/.evalhost/targets.yaml`)
/// is in the suite's project rather than above it (the operator's).
fn suites_own(path: &std::path::Path, roots: &suite::roots::Roots) -> bool {
    path.parent()
        .and_then(std::path::Path::parent)
        .and_then(|dir| dir.canonicalize().ok())
        .is_none_or(|dir| dir.starts_with(&roots.project_root))
}
