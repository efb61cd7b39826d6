//! The first step of a run: what was asked — the command line, or the run
//! being resumed, re-run or regraded (its `run.json`), checked before
//! anything is loaded.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{RunError, RunOptions, RunRecord, RunReport, read_record, record};
use crate::outcome::{self, Tally};
use crate::plan::{PlanOptions, Shard};
use crate::results;

/// What to run, settled from the command line and the earlier run.
pub(super) struct Request {
    /// The earlier run's record (`--resume`, `--rerun-failed`, `regrade`).
    pub previous: Option<RunRecord>,
    /// The eval file, as the user would type it.
    pub eval: PathBuf,
    /// Selection, trials and shard: the command line's, or the resumed run's.
    pub plan_options: PlanOptions,
    /// `--threshold`, or the resumed run's.
    pub threshold: Option<f64>,
    /// `--target`.
    pub target_override: Option<String>,
    /// The earlier run's targets, when it is resumed or re-run.
    pub resumed_targets: Vec<String>,
    /// `--targets`, or the resumed run's targets file.
    pub targets_file: Option<PathBuf>,
}

/// A run to go on with, or one that has nothing to do.
pub(super) enum Asked {
    Run(Box<Request>),
    /// `--rerun-failed` of a run where every test passed.
    Nothing(RunReport),
}

/// Reads what was asked; a wrong combination is a usage error.
pub(super) fn ask(
    options: &RunOptions,
    out: &mut dyn Write,
) -> anyhow::Result<Result<Asked, RunError>> {
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
            return Ok(Ok(Asked::Nothing(RunReport {
                tally: Tally::default(),
                interrupted: false,
                run_dir: dir.clone(),
            })));
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
    Ok(Ok(Asked::Run(Box::new(Request {
        previous,
        eval,
        plan_options,
        threshold,
        target_override,
        resumed_targets,
        targets_file,
    }))))
}
