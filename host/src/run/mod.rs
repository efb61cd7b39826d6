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
use std::sync::{Arc, OnceLock, mpsc};
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

mod agentv_js;
mod check;
mod compare;
mod conversation;
mod custom_types;
mod execute;
mod prepare;
mod python_runner;
mod record;
mod regrade;
mod resume;
mod run_dir;
pub mod targets;
mod trial;

use crate::semaphore::Semaphore;
use execute::{Ctx, RunTarget, execute};
pub use prepare::{Prepared, engine, prepare};
pub use python_runner::runner as python_runner;
use record::recorded_plan;
pub use record::{MAX_REPEAT, PlannedEntry, RecordedPlan, RunRecord, read_record};
use run_dir::claim_default_run_dir;
pub use run_dir::runs_base;
use trial::run_trial;
pub use trial::{effective_threshold, held_threshold};

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
    /// `--locked`: registry plugins only from `evalhost.lock`.
    pub locked: bool,
    /// `--dialect`: read the suite in this dialect.
    pub dialect: Option<evalhost_suite::dialect::Dialect>,
    /// `--keep-workspaces`: keep every case's workspace, not only failed ones.
    pub keep_workspaces: bool,
    /// `--cache` (true), `--no-cache` (false), else the suite's
    /// `execution.cache`.
    pub cache: Option<bool>,
    /// `--cache-sampled`: cache sampled models too.
    pub cache_sampled: bool,
    /// `--full-output`: print the whole output under each test that did not
    /// pass (else its first 200 characters).
    pub full_output: bool,
    /// `regrade RUN_DIR`: grade that run's outputs instead of calling targets.
    pub regrade: Option<PathBuf>,
    /// `--grader-target`: the judge for LLM graders.
    pub grader_target: Option<String>,
    /// `--judge-workers`: judge calls at once (default 4).
    pub judge_workers: Option<usize>,
    /// `--no-judge-cache`: always call the judge.
    pub no_judge_cache: bool,
}

/// Why a run did not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The suite, the targets or a plugin is wrong; nothing ran.
    #[error("{} error(s) in the suite or its targets", .0.error_count())]
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

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C handler once: the first Ctrl-C stops scheduling, the
/// second kills every command still running (each leads its own process
/// group, out of the terminal's reach) and exits at once.
fn install_interrupt_handler() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                crate::process::kill_live_groups();
                std::process::exit(i32::from(crate::exit_codes::INTERRUPTED));
            }
        });
    });
}

/// Runs a suite. Returns the report; the caller maps it to an exit code.
pub fn run(
    options: &RunOptions,
    out: &mut dyn Write,
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
    if let (Some(dir), Some(p)) = (
        options
            .resume
            .as_ref()
            .or(options.regrade.as_ref())
            .or(options.rerun_failed.as_ref()),
        &previous,
    ) && let Err(e) = record::check_sources(dir, p, options)
    {
        return Ok(Err(e));
    }
    let mut plan_options = options.plan.clone();
    let mut threshold = options.threshold;
    let target_override = options.target.clone();
    let mut resumed_targets: Vec<String> = Vec::new();
    let mut targets_file = options.targets_file.clone();
    if let (Some(dir), Some(p)) = (&options.resume, &previous) {
        // The eval file named on the command line must be the one the run
        // was started with.
        if let Some(given) = &options.eval
            && std::fs::canonicalize(given).ok().as_ref()
                != Some(&std::fs::canonicalize(&p.eval).unwrap_or_else(|_| p.eval.clone()))
        {
            return Ok(Err(RunError::Usage(format!(
                "{} was started with {}, not {}: resume it without naming the eval file, or start a new run",
                dir.display(),
                p.eval.display(),
                given.display()
            ))));
        }
        // Under --sandbox strict the run directory is as untrusted as the
        // suite: what to run, with which targets and threshold, comes from
        // the operator's command line, and run.json must agree with it.
        if options.sandbox_strict {
            if let Err(e) = record::check_strict_resume(dir, p, options) {
                return Ok(Err(e));
            }
        } else {
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
                out,
                "nothing to re-run: every test in {} passed",
                dir.display()
            )?;
            return Ok(Ok(RunReport {
                tally: Tally::default(),
                interrupted: false,
                run_dir: dir.clone(),
            }));
        }
        // The earlier run's targets, each as its matrix entry says (an alias
        // of another target, its hooks) — not its first target's name as a
        // --target: a test that failed on the second target runs there.
        if target_override.is_none()
            && let Some(p) = &previous
        {
            resumed_targets = if p.targets.is_empty() {
                vec![p.target.clone()]
            } else {
                p.targets.clone()
            };
        }
        plan_options.only = Some(failed);
    }

    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let grader_workers = options
        .grader_workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    // Plugin calls are bounded by the grader workers; the engine is sized
    // before the suite (and its `execution.workers`) is read.
    let engine = engine(
        options.no_compile_cache,
        options.workers.unwrap_or(cpus).max(grader_workers),
    )?;
    // A resumed run reads the suite in the dialect it was started with.
    let dialect = options.dialect.or_else(|| {
        previous
            .as_ref()
            .filter(|_| options.resume.is_some())
            .and_then(|p| p.dialect.as_deref())
            .and_then(evalhost_suite::dialect::Dialect::parse)
    });
    let prepared = match prepare::prepare_with(
        &eval,
        &engine,
        options.sandbox_strict,
        dialect,
        options.locked,
    ) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    for warning in prepared.warnings.iter() {
        writeln!(err, "{warning}")?;
    }
    let Prepared {
        suite,
        registry,
        load_time,
        plugins_time,
        ..
    } = prepared;
    // promptfoo has no run-wide threshold: its tests pass when every
    // assertion does, or by their own `threshold:`. Applying --threshold
    // would change promptfoo's verdicts; ignoring it would be silent.
    if options.threshold.is_some() && suite.dialect == evalhost_suite::dialect::Dialect::Promptfoo {
        return Ok(Err(RunError::Usage(
            "--threshold does not apply to a promptfoo config: promptfoo passes a test when every assertion passes, or when its weighted score reaches the test's own `threshold:`\n  hint: set `threshold:` on the tests, or on `defaultTest`, to hold their scores to a number"
                .into(),
        )));
    }
    // Tests at once: -j, else the suite's `execution.workers`, else the CPUs.
    let workers = options.workers.or(suite.workers).unwrap_or(cpus).max(1);

    let roots = suite::roots::Roots::for_eval(&eval);
    let targets = match targets::load(&suite, &eval, targets_file.as_ref(), options.sandbox_strict)
    {
        Ok(t) => t,
        Err(diags) => return Ok(Err(RunError::Invalid(diags))),
    };
    for warning in targets.warnings.iter() {
        writeln!(err, "{warning}")?;
    }
    // Under --sandbox strict a `cli` target runs only from a targets file the
    // operator named: one found beside an untrusted suite could be its own.
    if options.sandbox_strict && targets_file.is_none() {
        let refused: Vec<Diagnostic> = targets
            .targets
            .iter()
            .filter(|t| {
                matches!(
                    t.provider,
                    target::Provider::Cli(_) | target::Provider::Agent(_)
                )
            })
            .map(|t| {
                Diagnostic::error(
                    targets.file.as_deref().unwrap_or(&eval),
                    format!(
                        "`--sandbox strict` refuses the command target `{}` (a `cli` or agent target) of a targets file found beside the suite: it could be the suite's own command",
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
    let matrix: Vec<suite::MatrixTarget> = if !resumed_targets.is_empty() {
        resumed_targets
            .iter()
            .map(|n| {
                suite
                    .matrix
                    .iter()
                    .find(|m| &m.name == n)
                    .cloned()
                    .unwrap_or_else(|| targets::single(n, None))
            })
            .collect()
    } else {
        targets::chosen(&suite, target_override.as_deref())
    };
    if options.regrade.is_none() {
        let problems = targets::check_names(&suite, &targets, &matrix, targets::Check::Run);
        if problems.has_errors() {
            return Ok(Err(match target_override.as_deref() {
                // A name from the command line is a usage error.
                Some(_) if resumed_targets.is_empty() => RunError::Usage(format!(
                    "--target: {}",
                    problems.iter().next().map_or("", |d| d.message.as_str())
                )),
                _ => RunError::Invalid(problems),
            }));
        }
    }
    let mut run_targets: Vec<RunTarget> = Vec::new();
    if let Some(dir) = &options.regrade {
        match regrade::recorded_targets(dir, &suite) {
            Ok((recorded, trials)) => {
                run_targets.extend(recorded);
                if let Some(max) = trials {
                    plan_options.repeat.get_or_insert(max);
                }
            }
            Err(e) => return Ok(Err(e)),
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
    // A resumed run whose suite changed mixes two gradings: say so.
    if let (Some(dir), Some(p)) = (&options.resume, &previous)
        && let Some(before) = &p.suite_digest
        && *before != record::suite_digest(&suite)
    {
        writeln!(
            err,
            "warning: the suite changed since {} was started: the rows already there were graded by the old suite, the rest will be graded by the new one; start a new run (or `evalhost regrade {}`) to grade every row the same way",
            crate::text::shown(&dir.display().to_string()),
            crate::text::shown(&dir.display().to_string()),
        )?;
    }
    if let (true, Some(dir), Some(p)) = (options.sandbox_strict, &options.resume, &previous) {
        let recorded = if p.targets.is_empty() {
            vec![p.target.clone()]
        } else {
            p.targets.clone()
        };
        if recorded != target_names {
            return Ok(Err(RunError::Usage(format!(
                "{} has `targets` {recorded:?}, but this run selects {target_names:?}: under --sandbox strict, resume with the same options the run was started with",
                dir.join("run.json").display()
            ))));
        }
    }
    // The scope of every cached answer, target's and judge's alike.
    let cache_scope = crate::response_cache::scope(&eval, &suite.name, options.sandbox_strict);
    // The judge: one per run, answering for every target's LLM graders.
    let judge = std::sync::Arc::new(
        crate::judge::Judge::new(
            targets.clone(),
            crate::judge::Judge::default_cache_dir().and_then(|dir| {
                match crate::safe_fs::check_owned_dir(&dir) {
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
            }),
            options.judge_workers.unwrap_or(4),
        )
        .with_scope(cache_scope.clone())
        .with_strict(options.sandbox_strict)
        .refreshing(options.no_judge_cache),
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
    let run_dir = match (&options.resume, &options.output) {
        (Some(dir), _) => dir.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => {
            let dir = match claim_default_run_dir(&roots) {
                Ok(dir) => dir,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                    return Ok(Err(RunError::Usage(format!("the run directory: {e}"))));
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context("cannot create a run directory under .evalhost/runs"));
                }
            };
            // Shown relative to the current directory when inside it.
            dir.strip_prefix(&roots.cwd)
                .map_or(dir.clone(), Path::to_path_buf)
        }
    };
    let runs_root = runs_base(&roots);
    if let Err(e) =
        crate::safe_fs::check_dir(&run_dir, &[&roots.project_root, &roots.cwd, &runs_root])
    {
        return Ok(Err(RunError::Usage(format!("the run directory: {e}"))));
    }
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create the run directory {}", run_dir.display()))?;
    let results_path = run_dir.join("results.jsonl");
    let mut done: HashMap<(String, String, u32), RowBrief> = HashMap::new();
    if options.resume.is_some() && std::fs::symlink_metadata(&results_path).is_ok() {
        done = match resume::finished_rows(
            &results_path,
            &suite,
            &plan,
            &target_names,
            threshold,
            err,
        )? {
            Ok(done) => done,
            Err(e) => return Ok(Err(e)),
        };
    } else if options.resume.is_none() {
        // A run directory given again is replaced, and the user is told
        // which run was there.
        if let Ok(previous) = record::read_record(&run_dir) {
            writeln!(
                err,
                "warning: {} held the run started {}; it is replaced (use --resume {} to continue it instead)",
                crate::text::shown(&run_dir.display().to_string()),
                crate::text::shown(&previous.started_at),
                crate::text::shown(&run_dir.display().to_string()),
            )?;
        }
        let record = RunRecord {
            evalhost_version: env!("CARGO_PKG_VERSION").into(),
            eval: std::fs::canonicalize(&eval)
                .or_else(|_| std::path::absolute(&eval))
                .unwrap_or(eval.clone()),
            target: target_names.first().cloned().unwrap_or_default(),
            targets: target_names.clone(),
            targets_file: targets
                .file
                .as_ref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            targets_file_found: targets_file.is_none() && targets.file.is_some(),
            regrade_of: options
                .regrade
                .as_ref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            suite_digest: Some(record::suite_digest(&suite)),
            test_ids: plan_options.test_ids.clone(),
            tags: plan_options.tags.clone(),
            repeat: plan_options.repeat,
            shard: plan_options.shard.map(|s| s.to_string()),
            threshold,
            only: plan_options.only.clone(),
            plan: Some(recorded_plan(
                &suite,
                &target_names,
                &plan_options,
                threshold,
            )),
            started_at: jiff::Timestamp::now().to_string(),
            dialect: Some(suite.dialect.name().to_owned()),
            git_commit: None,
            git_dirty: None,
        };
        let (git_commit, git_dirty) =
            record::git_state(&suite_dir_of(&record.eval), options.sandbox_strict);
        let record = RunRecord {
            git_commit,
            git_dirty,
            ..record
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
    let mut writer = match ResultsWriter::create(&run_dir) {
        Ok(w) => w,
        Err(e) => {
            return Ok(Err(RunError::Usage(format!(
                "cannot write {}: {e}",
                results_path.display()
            ))));
        }
    };

    // `-q`: FAIL and ERROR lines, warnings and the summary; not this.
    let mut header: Box<dyn Write> = if options.quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(&mut *out)
    };
    writeln!(
        header,
        "evalhost {}{} · suite `{}` · {}{} · target {}{}",
        env!("CARGO_PKG_VERSION"),
        options
            .regrade
            .as_ref()
            .map_or(String::new(), |dir| format!(
                " · regrade of {}",
                crate::text::shown(&dir.display().to_string())
            )),
        crate::text::shown(&suite.name),
        {
            // Tests and trials: `--repeat 3` over 3 tests is 9 trials.
            let trials: u64 = plan.iter().map(|p| u64::from(p.trials)).sum();
            let tests = plan.len();
            if trials == tests as u64 {
                format!("{tests} test(s)")
            } else {
                format!("{tests} test(s), {trials} trial(s)")
            }
        },
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
    writeln!(
        header,
        "  dialect {} ({})",
        suite.dialect.title(),
        if dialect.is_some() {
            "as given with --dialect"
        } else {
            "told from the file"
        }
    )?;
    if let Some(file) = &targets.file {
        writeln!(
            header,
            "  targets from {}",
            crate::text::shown(&shown_path(file))
        )?;
    }
    for p in registry.plugins() {
        let (source, took) = p.compiled;
        let how = match source {
            plugin::CompileSource::Cache => "cached".to_owned(),
            plugin::CompileSource::Compiled => format!("compiled in {} ms", took.as_millis()),
        };
        writeln!(
            header,
            "  plugin {} {} ({how})",
            crate::text::shown(&p.name),
            crate::text::shown(&p.version)
        )?;
    }
    drop(header);
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
            scrub_env: targets.key_variables(),
            ..crate::grants::Policy::default()
        },
        lifecycle,
        run_id: run_id.clone(),
        cache: response_cache,
        cache_scope,
        dependencies: execute::Dependencies::new(&suite, &plan),
        spent: std::sync::Mutex::new(0.0),
        transcripts: run_dir.join("transcripts"),
    };
    let mut progress =
        report::terminal::Progress::new(plan.len(), options.quiet, options.full_output);
    let run_started = Instant::now();
    let new_rows = execute(&ctx, &plan, &done, workers, |row| {
        writer
            .append(row)
            .with_context(|| format!("cannot write {}", writer.path().display()))?;
        progress.row(out, row)?;
        Ok(())
    })?;
    progress.finish();
    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
    // Comparisons (promptfoo's `select-best`): graded across each group's
    // outputs now that all exist, and merged into their rows.
    writer
        .flush()
        .with_context(|| format!("cannot write {}", writer.path().display()))?;
    let compared = compare::grade(&ctx, writer.path(), interrupted, out)?;
    let mut new_rows = new_rows;
    if let Some(all) = &compared {
        writer
            .rewrite_in_order(all)
            .with_context(|| format!("cannot write {}", writer.path().display()))?;
        let fresh: HashMap<(&str, &str, Option<u32>), &ResultRow> = all
            .iter()
            .map(|r| ((r.test_id.as_str(), r.target.as_str(), r.trial), r))
            .collect();
        let suite_arc: Arc<str> = Arc::from(suite.name.as_str());
        for brief in new_rows.iter_mut().chain(done.values_mut()) {
            if let Some(row) = fresh.get(&(brief.test_id(), brief.target(), brief.trial())) {
                *brief = RowBrief::of(row, &suite_arc, &suite_arc);
            }
        }
    }
    drop(compared);
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

    let run_time = run_started.elapsed();
    let write_started = Instant::now();
    let rows: Vec<RowBrief> = done.into_values().chain(new_rows).collect();
    writer
        .sort_in_place()
        .with_context(|| format!("cannot write {}", writer.path().display()))?;
    let write_time = write_started.elapsed();
    let summary = Summary::new(
        &suite.name,
        &target_names.join(", "),
        &run_dir,
        &rows,
        plan.len(),
        registry
            .plugins()
            .iter()
            .map(|p| report::PluginSummary {
                name: p.name.clone(),
                version: p.version.clone(),
                digest: p.digest.clone(),
                from_cache: p.compiled.0 == plugin::CompileSource::Cache,
                load_ms: p.compiled.1.as_millis(),
            })
            .collect(),
        started.elapsed(),
        interrupted,
    );
    let mut summary = summary;
    summary.hooks = hooks;
    summary.metrics = crate::named_metrics::compute(&suite, writer.path());
    summary.viewer = crate::view::known_url(&runs_root, options.sandbox_strict).map(|base| {
        format!(
            "{base}#/run/{}",
            crate::history::run_id(&run_dir, &runs_root.join(".evalhost").join("runs"))
        )
    });
    drop(rows);
    let reports_started = Instant::now();
    // promptfoo's `outputPath`: its JSON results, unless the command line
    // names the file (`--export promptfoo-json`, as promptfoo's `-o` wins).
    let mut reporters = options.reporters.clone();
    if reporters.promptfoo_json.is_none() {
        reporters.promptfoo_json = suite.output_path.clone();
    }
    report::write_all(&summary, writer.path(), &reporters, out)?;
    // The results index: a run it cannot take is still on disk, and
    // `evalhost runs reindex` adds it later; never a failed run.
    // Under --sandbox strict the project's index (and the run directories
    // it would be rebuilt from) came with the suite: not opened.
    if options.sandbox_strict {
        writeln!(
            err,
            "note: under --sandbox strict the run is not added to the project's results index (.evalhost/results.db may have come with the suite); `evalhost runs reindex` adds it when you trust the project"
        )?;
    } else if let Some(warning) = crate::history::index::record_run(&runs_root, &run_dir) {
        writeln!(err, "warning: {}", crate::text::shown(&warning))?;
    }
    // Where the time went, for `scripts/bench.py` (not a user-facing line).
    if std::env::var_os("EVALHOST_TIMINGS").is_some() {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(
            err,
            "timings: load {:.1} ms · plugins {:.1} ms · run {:.1} ms · write {:.1} ms · reports {:.1} ms",
            ms(load_time),
            ms(plugins_time),
            ms(run_time),
            ms(write_time),
            ms(reports_started.elapsed())
        )?;
    }
    if !kept.is_empty() {
        writeln!(out, "kept workspaces ({}):", kept.len())?;
        for path in &kept {
            writeln!(out, "  {}", path.display())?;
        }
    }
    if interrupted {
        writeln!(
            out,
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

/// The directory of an eval file (itself when it is a directory).
fn suite_dir_of(eval: &Path) -> PathBuf {
    if eval.is_dir() {
        eval.to_path_buf()
    } else {
        eval.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

/// A path as shown: relative to the current directory when inside it.
fn shown_path(path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd)
        .unwrap_or(path)
        .display()
        .to_string()
}
