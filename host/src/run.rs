//! `evalhost run`: load and check the suite, start the plugins, then for
//! every test get the target's output and grade every assertion in its
//! plugin, streaming each result to `results.jsonl` as it completes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

use anyhow::Context as _;

use crate::diag::{Diagnostic, Diagnostics};
use crate::failure::FailureClass;
use crate::grade::{self, DEFAULT_THRESHOLD};
use crate::plugin::{self, EngineOptions, LoadedPlugin, PluginEngine, Registry};
use crate::report::{self, Summary};
use crate::results::{ExecutionStatus, MessageRow, ResultRow, ResultsWriter};
use crate::suite::{self, Suite};
use crate::target::{self, Target, Targets};

/// What `evalhost run` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The eval file.
    pub eval: PathBuf,
    /// `--target`.
    pub target: Option<String>,
    /// `--targets`.
    pub targets_file: Option<PathBuf>,
    /// `-o/--output`.
    pub output: Option<PathBuf>,
    /// `-j/--workers`.
    pub workers: Option<usize>,
    /// `--threshold`.
    pub threshold: Option<f64>,
    /// `--no-compile-cache`.
    pub no_compile_cache: bool,
    /// `--quiet`: no per-test lines.
    pub quiet: bool,
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

/// A loaded suite with its plugins, ready to run or already validated.
pub struct Prepared {
    /// The suite.
    pub suite: Suite,
    /// Plugins for its assertion types.
    pub registry: Registry,
    /// Warnings found while loading.
    pub warnings: Diagnostics,
}

/// Loads the suite, the built-in and suite plugins, and checks every
/// assertion's config in its plugin.
pub fn prepare(eval: &Path, engine: &Arc<PluginEngine>) -> Result<Prepared, RunError> {
    // Load errors do not stop here: the plugin checks below still run on
    // what could be read, so one run reports every mistake.
    let (suite, mut diags) = suite::load(eval);
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
        let bytes = match std::fs::read(&plugin_ref.path) {
            Ok(b) => b,
            Err(err) => {
                diags.push(at(format!(
                    "cannot read plugin {}: {err}",
                    plugin_ref.path.display()
                )));
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
                if let Err(dup) = registry.add(loaded) {
                    diags.push(at(dup.to_string()));
                }
            }
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
        max_instances: (workers as u32 * 2).max(8),
    })
}

fn default_run_dir() -> PathBuf {
    let stamp = jiff::Zoned::now().strftime("%Y-%m-%dT%H-%M-%S").to_string();
    PathBuf::from(".evalhost").join("runs").join(stamp)
}

/// Runs a suite. Returns the summary; the caller maps it to an exit code.
pub fn run(options: &RunOptions, err: &mut dyn Write) -> anyhow::Result<Result<Summary, RunError>> {
    if let Some(t) = options.threshold
        && !(0.0..=1.0).contains(&t)
    {
        return Ok(Err(RunError::Usage(format!(
            "--threshold must be between 0 and 1, got {t}"
        ))));
    }
    let workers = options
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let engine = engine(options.no_compile_cache, workers)?;
    let prepared = match prepare(&options.eval, &engine) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    for warning in prepared.warnings.iter() {
        writeln!(err, "{warning}")?;
    }
    let Prepared {
        suite, registry, ..
    } = prepared;

    let targets = match &options.targets_file {
        Some(path) => target::load_targets(path),
        None => match target::find_targets_file(&suite.dir) {
            Some(path) => target::load_targets(&path),
            None => Ok(Targets::default()),
        },
    };
    let targets = match targets {
        Ok(t) => t,
        Err(diags) => return Ok(Err(RunError::Invalid(diags))),
    };
    let target_name = options
        .target
        .clone()
        .or_else(|| suite.target.clone())
        .unwrap_or_else(|| "default".to_owned());
    let target = match targets.select(&target_name) {
        Ok(t) => t.clone(),
        Err(message) => return Ok(Err(RunError::Usage(message))),
    };

    let run_dir = options.output.clone().unwrap_or_else(default_run_dir);
    let mut writer = ResultsWriter::create(&run_dir)
        .with_context(|| format!("cannot create the run directory {}", run_dir.display()))?;

    writeln!(
        err,
        "evalhost {} · suite `{}` · {} test(s) · target `{}`",
        env!("CARGO_PKG_VERSION"),
        suite.name,
        suite.tests.len(),
        target.name
    )?;
    for p in registry.plugins() {
        let (source, took) = p.compiled;
        let how = match source {
            plugin::CompileSource::Cache => "cached".to_owned(),
            plugin::CompileSource::Compiled => format!("compiled in {} ms", took.as_millis()),
        };
        writeln!(err, "  plugin {} {} ({how})", p.name, p.version)?;
    }

    let started = std::time::Instant::now();
    let rows = execute(
        &suite,
        &registry,
        &target,
        options.threshold,
        workers,
        |row| {
            writer
                .append(row)
                .with_context(|| format!("cannot write {}", writer.path().display()))?;
            if !options.quiet {
                report::print_progress(err, row)?;
            }
            Ok(())
        },
    )?;
    writer
        .rewrite_in_order(&rows)
        .with_context(|| format!("cannot write {}", writer.path().display()))?;
    let summary = Summary::new(
        &suite,
        &target.name,
        &run_dir,
        writer.path(),
        &rows,
        &registry,
        started.elapsed(),
    );
    summary.write_json(&run_dir.join("summary.json"))?;
    report::print_summary(err, &summary, &rows)?;
    Ok(Ok(summary))
}

/// Runs every test on `workers` threads and hands each row to `sink` as it
/// completes (on the calling thread). Returns the rows in suite order.
pub fn execute(
    suite: &Suite,
    registry: &Registry,
    target: &Target,
    cli_threshold: Option<f64>,
    workers: usize,
    mut sink: impl FnMut(&ResultRow) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<ResultRow>> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, ResultRow)>();
    let mut rows: Vec<Option<ResultRow>> = vec![None; suite.tests.len()];
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for _ in 0..workers.min(suite.tests.len()).max(1) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(test) = suite.tests.get(i) else {
                        break;
                    };
                    let row = run_test(suite, registry, target, test, cli_threshold);
                    if tx.send((i, row)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, row) in rx {
            sink(&row)?;
            rows[i] = Some(row);
        }
        Ok(())
    })?;
    Ok(rows.into_iter().flatten().collect())
}

/// Threshold precedence: the test's `execution.threshold`, then
/// `--threshold`, then the suite's `execution.threshold`, then 0.8.
pub fn effective_threshold(test: Option<f64>, cli: Option<f64>, suite: Option<f64>) -> f64 {
    test.or(cli).or(suite).unwrap_or(DEFAULT_THRESHOLD)
}

fn run_test(
    suite: &Suite,
    registry: &Registry,
    target: &Target,
    test: &suite::TestCase,
    cli: Option<f64>,
) -> ResultRow {
    let threshold = effective_threshold(test.threshold, cli, suite.threshold);
    let timestamp = || jiff::Timestamp::now().to_string();
    let output = match target.invoke(test) {
        Ok(output) => output,
        Err(message) => {
            return ResultRow {
                timestamp: timestamp(),
                test_id: test.id.clone(),
                suite: suite.name.clone(),
                target: target.name.clone(),
                score: 0.0,
                threshold,
                execution_status: ExecutionStatus::ExecutionError,
                failure_class: Some(FailureClass::Target),
                error: Some(message),
                duration_ms: None,
                input: input_rows(test),
                expected_output: test.expected_text().map(str::to_owned),
                criteria: test.criteria.clone(),
                metadata: test.metadata.clone(),
                output: String::new(),
                scores: Vec::new(),
            };
        }
    };
    let mut request = grade::base_request(test, &output);
    let scores: Vec<_> = test
        .assertions
        .iter()
        .map(|a| {
            grade::grade_assertion(
                registry,
                a,
                &mut request,
                grade::call_limits(a, suite.limits),
            )
        })
        .collect();
    let (score, status, failure_class) = grade::score_test(&test.assertions, &scores, threshold);
    let error = (status == ExecutionStatus::ExecutionError)
        .then(|| {
            scores
                .iter()
                .find_map(|s| s.error.as_ref().map(|e| format!("{}: {e}", s.name)))
        })
        .flatten();
    ResultRow {
        timestamp: timestamp(),
        test_id: test.id.clone(),
        suite: suite.name.clone(),
        target: target.name.clone(),
        score,
        threshold,
        execution_status: status,
        failure_class,
        error,
        duration_ms: output.duration_ms,
        input: input_rows(test),
        expected_output: test.expected_text().map(str::to_owned),
        criteria: test.criteria.clone(),
        metadata: test.metadata.clone(),
        output: output.text,
        scores,
    }
}

fn input_rows(test: &suite::TestCase) -> Vec<MessageRow> {
    test.input
        .iter()
        .map(|m| MessageRow {
            role: m.role.clone(),
            content: m.content.clone(),
        })
        .collect()
}
