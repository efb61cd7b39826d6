//! The third step of a run: its directory — claimed new, or the resumed
//! one with the rows it already holds — with `run.json` written before the
//! first row.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::run_dir::{claim_default_run_dir, runs_base};
use super::setup::Setup;
use super::{RunError, RunOptions, RunRecord, record, recorded_plan, resume};
use crate::outcome::RowBrief;
use crate::results::ResultsWriter;

/// The run directory, open for rows.
pub(super) struct Opened {
    pub run_dir: PathBuf,
    /// The directory whose `.evalhost/runs` holds the project's runs.
    pub runs_root: PathBuf,
    /// The rows a resumed run already has, by (test, target, trial).
    pub done: HashMap<(String, String, u32), RowBrief>,
    pub writer: ResultsWriter,
}

/// Opens the run directory.
pub(super) fn open(
    options: &RunOptions,
    setup: &mut Setup,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Opened, RunError>> {
    let Setup {
        git,
        roots,
        suite,
        plan,
        target_names,
        targets,
        request,
        sandbox,
        ..
    } = setup;
    let threshold = request.threshold;
    let eval = &request.eval;
    let targets_file = &request.targets_file;
    let plan_options = &request.plan_options;
    let run_dir = match (&options.resume, &options.output) {
        (Some(dir), _) => dir.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => {
            let dir = match claim_default_run_dir(roots) {
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
    let runs_root = runs_base(roots);
    if let Err(e) =
        crate::safe_fs::check_dir(&run_dir, &[&roots.project_root, &roots.cwd, &runs_root])
    {
        return Ok(Err(RunError::Usage(format!("the run directory: {e}"))));
    }
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create the run directory {}", run_dir.display()))?;
    // Under --isolate the run directory (inside the project, which the
    // sandboxes read) is hidden from the case's processes: no case reads
    // another's rows, nor an earlier run's.
    if let Some(sandbox) = sandbox {
        sandbox.hide(&run_dir);
    }
    let results_path = run_dir.join("results.jsonl");
    let mut done: HashMap<(String, String, u32), RowBrief> = HashMap::new();
    if options.resume.is_some() && std::fs::symlink_metadata(&results_path).is_ok() {
        done = match resume::finished_rows(
            &results_path,
            suite,
            plan,
            target_names,
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
            eval: std::fs::canonicalize(eval)
                .or_else(|_| std::path::absolute(eval))
                .unwrap_or(eval.clone()),
            target: target_names.first().cloned().unwrap_or_default(),
            targets: target_names.clone(),
            targets_file: targets
                .file
                .as_ref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            targets_file_found: targets_file.is_none() && targets.file.is_some(),
            merged_from: Vec::new(),
            regrade_of: options
                .regrade
                .as_ref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            suite_digest: Some(record::suite_digest(suite)),
            test_ids: plan_options.test_ids.clone(),
            tags: plan_options.tags.clone(),
            repeat: plan_options.repeat,
            shard: plan_options.shard.map(|s| s.to_string()),
            threshold,
            only: plan_options.only.clone(),
            plan: Some(recorded_plan(suite, target_names, plan_options, threshold)),
            started_at: jiff::Timestamp::now().to_string(),
            dialect: Some(suite.dialect.name().to_owned()),
            git_commit: None,
            git_dirty: None,
        };
        let (git_commit, git_dirty) = git.wait();
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
    let writer = match ResultsWriter::create(&run_dir) {
        Ok(w) => w,
        Err(e) => {
            return Ok(Err(RunError::Usage(format!(
                "cannot write {}: {e}",
                results_path.display()
            ))));
        }
    };
    Ok(Ok(Opened {
        run_dir,
        runs_root,
        done,
        writer,
    }))
}
