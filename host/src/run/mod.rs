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
use crate::report::Reporters;
use crate::results::{self, ExecutionStatus, MessageRow, ResultRow, SourceRef, Status};
use crate::suite::{self, Suite, TestCase};
use crate::target::{self, Target, Targets};

mod agentv_js;
mod ask;
mod cases;
mod check;
mod code_runner;
mod compare;
mod conversation;
mod custom_types;
mod execute;
mod finish;
mod header;
mod open;
mod prepare;
mod python_runner;
mod record;
mod regrade;
mod resume;
mod run_dir;
mod script_bundles;
mod setup;
pub mod targets;
mod trial;

use crate::semaphore::Semaphore;

/// The process's peak resident memory (`VmHWM`) at the end of each phase,
/// for `EVALHOST_TIMINGS=1` (`scripts/bench.py`): where a run's memory
/// grows. Empty unless that variable is set.
static PEAKS: std::sync::Mutex<Vec<(&'static str, u64)>> = std::sync::Mutex::new(Vec::new());

/// Notes the peak resident memory at the end of `phase`.
pub(crate) fn note_peak(phase: &'static str) {
    if std::env::var_os("EVALHOST_TIMINGS").is_none() {
        return;
    }
    let kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    PEAKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((phase, kib));
}

/// The peaks noted, as `phase N MiB · …`.
pub(crate) fn peaks_line() -> String {
    PEAKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(phase, kib)| format!("{phase} {:.0} MiB", *kib as f64 / 1024.0))
        .collect::<Vec<_>>()
        .join(" · ")
}
use execute::{Ctx, RunTarget};
pub use prepare::{Prepared, engine, prepare, prepare_with};
pub use python_runner::runner as python_runner;
use record::recorded_plan;
pub use record::{MAX_REPEAT, PlannedEntry, RecordedPlan, RunRecord, read_record};
pub use run_dir::runs_base;
use trial::run_trial;
pub use trial::{effective_threshold, held_threshold};

/// What `evalhost run` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The eval file (optional with `--resume` / `--rerun-failed`).
    pub eval: Option<PathBuf>,
    /// `--isolate`: every command of the run in a sandbox.
    pub isolate: bool,
    /// `--isolate-root DIR`: the sandboxes' root filesystem.
    pub isolate_root: Option<PathBuf>,
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
/// Where a finished run is kept beyond its directory: the project's results
/// index and its viewer. The command wires them (`cli::run`), as it wires
/// the reporters; a run knows only this.
pub trait History: Sync {
    /// The address of the run in `run_dir` in a viewer already serving the
    /// project, if any (shown in the reports).
    fn viewer_url(&self, runs_root: &Path, run_dir: &Path) -> Option<String>;
    /// Adds the finished run to the project's history. A line to print (a
    /// warning, or why it was not added) when there is one.
    fn record(&self, runs_root: &Path, run_dir: &Path) -> Option<String>;
}

/// No history: runs are not indexed and no viewer is known.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoHistory;

impl History for NoHistory {
    fn viewer_url(&self, _: &Path, _: &Path) -> Option<String> {
        None
    }
    fn record(&self, _: &Path, _: &Path) -> Option<String> {
        None
    }
}

/// A step's result: the outer error is the machine's (I/O), the inner one
/// the user's ([`RunError`]: nothing ran).
type Step<T> = anyhow::Result<Result<T, RunError>>;

/// The value of a step, or the user's error returned from `run`.
macro_rules! step {
    ($step:expr) => {
        match $step? {
            Ok(value) => value,
            Err(e) => return Ok(Err(e)),
        }
    };
}

/// Runs a suite: what was asked ([`ask`]), the suite, targets and plan
/// ([`setup`]), the run directory ([`open`]), the header, the cases
/// ([`cases`]), then the reports and the history ([`finish`]). Returns the
/// report; the caller maps it to an exit code.
pub fn run(
    options: &RunOptions,
    history: &dyn History,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Step<RunReport> {
    let request = match step!(ask::ask(options, out)) {
        ask::Asked::Run(request) => request,
        ask::Asked::Nothing(report) => return Ok(Ok(report)),
    };
    let mut setup = step!(setup::setup(options, *request, err));
    let mut opened = step!(open::open(options, &mut setup, err));
    header::print(options, &setup, &opened, out, err)?;
    let ran = cases::run_cases(options, &mut setup, &mut opened, out, err)?;
    finish::finish(options, history, setup, opened, ran, out, err).map(Ok)
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
