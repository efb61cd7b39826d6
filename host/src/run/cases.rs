//! The fourth step of a run: the cases. The suite's and each target's
//! `before_all` hooks, every planned trial on the workers (rows appended as
//! they finish), the comparisons across outputs, then the `after_all`
//! hooks and the workspaces' end.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::execute::{self, Ctx, execute};
use super::open::Opened;
use super::setup::Setup;
use super::{INTERRUPTED, RunOptions, compare, install_interrupt_handler};
use crate::lifecycle::{HookRow, Lifecycle};
use crate::outcome::{Graded as _, RowBrief};
use crate::report;
use crate::results::ResultRow;
use crate::semaphore::Semaphore;

/// What the cases left for the report.
pub(super) struct Ran {
    /// The rows this run made (the resumed ones stay in `Opened::done`).
    pub new_rows: Vec<RowBrief>,
    /// Every hook that ran, by name (`before_all`, `<target>.after_all`, …).
    pub hooks: BTreeMap<String, HookRow>,
    /// The workspaces kept.
    pub kept: Vec<PathBuf>,
    /// Ctrl-C stopped the run.
    pub interrupted: bool,
    /// From the first hook.
    pub started: Instant,
    /// The cases alone.
    pub run_time: Duration,
}

/// Runs every planned case not already done.
pub(super) fn run_cases(
    options: &RunOptions,
    setup: &mut Setup,
    opened: &mut Opened,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Ran> {
    let response_cache = setup.response_cache.take();
    let Setup {
        suite,
        registry,
        targets,
        run_targets,
        grader_workers,
        judge,
        cache_scope,
        plan,
        workers,
        request,
        sandbox,
        ..
    } = &*setup;
    let threshold = request.threshold;
    let grader_workers = *grader_workers;
    let workers = *workers;
    let cache_scope = cache_scope.clone();
    let Opened {
        run_dir,
        done,
        writer,
        ..
    } = opened;
    let run_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    let run_id = format!("{run_id}-{}", std::process::id());
    let lifecycle = Lifecycle::prepare(suite, &run_id, options.keep_workspaces, sandbox.clone());
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

    // A target's own before_all/after_all hooks: outside any case, in a
    // sandbox of their own under --isolate.
    let outside = sandbox.as_ref().map(crate::isolate::RunSandbox::outside);
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
                sandbox: outside.as_ref(),
            },
            timeout,
        ))
    };
    let mut hooks = std::collections::BTreeMap::new();
    for rt in run_targets {
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
        sandbox: sandbox.clone(),
        suite,
        registry,
        targets,
        run_targets,
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
            container: setup.container.as_ref().map(|(_, run)| run.clone()),
            ..crate::grants::Policy::default()
        },
        lifecycle,
        run_id: run_id.clone(),
        cache: response_cache,
        cache_scope,
        dependencies: execute::Dependencies::new(suite, plan),
        spent: std::sync::Mutex::new(0.0),
        transcripts: run_dir.join("transcripts"),
    };
    let multi_target = plan.iter().any(|p| p.target != plan[0].target);
    let mut progress = report::terminal::Progress::new(
        plan.len(),
        options.quiet,
        options.full_output,
        multi_target,
    );
    let run_started = Instant::now();
    let new_rows = execute(&ctx, plan, done, workers, |row| {
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
    for rt in run_targets {
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
    Ok(Ran {
        new_rows,
        hooks,
        kept,
        interrupted,
        started,
        run_time: {
            super::note_peak("run");
            run_started.elapsed()
        },
    })
}
