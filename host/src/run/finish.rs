//! The last step of a run: `results.jsonl` put in suite order, the
//! summary, the reporters, the project's history, and what to tell the
//! user (kept workspaces, how to resume).

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::cases::Ran;
use super::open::Opened;
use super::setup::Setup;
use super::{History, RunOptions, RunReport};
use crate::outcome::RowBrief;
use crate::plugin;
use crate::report::{self, Summary};

/// Writes the reports and records the run.
pub(super) fn finish(
    options: &RunOptions,
    history: &dyn History,
    setup: Setup,
    opened: Opened,
    ran: Ran,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<RunReport> {
    let Setup {
        suite,
        registry,
        target_names,
        plan,
        load_time,
        plugins_time,
        sandbox,
        ..
    } = setup;
    let Opened {
        run_dir,
        runs_root,
        done,
        mut writer,
    } = opened;
    let Ran {
        new_rows,
        hooks,
        kept,
        interrupted,
        started,
        run_time,
    } = ran;
    let write_started = Instant::now();
    let rows: Vec<RowBrief> = done.into_values().chain(new_rows).collect();
    writer
        .sort_in_place()
        .with_context(|| format!("cannot write {}", writer.path().display()))?;
    let write_time = write_started.elapsed();
    super::note_peak("write");
    let summary_started = Instant::now();
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
    summary.viewer = history.viewer_url(&runs_root, &run_dir);
    drop(rows);
    let summary_time = summary_started.elapsed();
    let reports_started = Instant::now();
    // promptfoo's `outputPath`: its JSON results, unless the command line
    // names the file (`--export promptfoo-json`, as promptfoo's `-o` wins).
    let mut reporters = options.reporters.clone();
    if reporters.promptfoo_json.is_none() {
        reporters.promptfoo_json = suite.output_path.clone();
    }
    report::write_summary(&summary)?;
    // The results index (it reads run.json, summary.json and
    // results.jsonl) on a second thread while the page is written; the run
    // ends only once it is recorded, or has said why not. A run the index
    // cannot take is still on disk, and `evalhost runs reindex` adds it
    // later; never a failed run.
    let (pages, (indexed, index_time)) = std::thread::scope(|scope| {
        let index = scope.spawn(|| {
            let started = Instant::now();
            (history.record(&runs_root, &run_dir), started.elapsed())
        });
        let pages = report::write_pages(&summary, writer.path(), &reporters, out);
        let indexed = index.join().unwrap_or_else(|_| {
            (
                Some("the run was not indexed: the index writer panicked".to_owned()),
                Duration::ZERO,
            )
        });
        (pages, indexed)
    });
    pages?;
    if let Some(line) = indexed {
        writeln!(err, "{line}")?;
    }
    // Where the time went, for `scripts/bench.py` (not a user-facing line).
    if std::env::var_os("EVALHOST_TIMINGS").is_some() {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(
            err,
            "timings: load {:.1} ms · plugins {:.1} ms · run {:.1} ms · write {:.1} ms · reports {:.1} ms (of which the index {:.1} ms, beside the page)",
            ms(load_time),
            ms(plugins_time),
            ms(run_time),
            ms(write_time),
            ms(summary_time + reports_started.elapsed()),
            ms(index_time),
        )?;
        super::note_peak("reports");
        writeln!(err, "peak memory after: {}", super::peaks_line())?;
    }
    if !kept.is_empty() {
        writeln!(out, "kept workspaces ({}):", kept.len())?;
        for path in &kept {
            writeln!(out, "  {}", path.display())?;
        }
        if sandbox.is_some() {
            // Written by a confined target: what it planted in a
            // repository's configuration runs with the next plain git
            // command there.
            writeln!(
                out,
                "  written by confined processes: their repositories' git configuration is theirs too (fsmonitor, filters, hooks run on your next `git` there); inspect with `git -c core.fsmonitor=false -c core.hooksPath=/dev/null --no-pager diff --no-ext-diff --no-textconv`, or in a sandbox"
            )?;
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
    Ok(RunReport {
        tally: summary.tally.clone(),
        interrupted,
        run_dir,
    })
}
