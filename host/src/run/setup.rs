//! The second step of a run: everything settled before the first case —
//! the suite read and its plugins started, the targets chosen and checked,
//! the judge, the plan and the response cache.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use super::ask::Request;
use super::execute::RunTarget;
use super::prepare::{self, Prepared, engine};
use super::{RunError, RunOptions, record, regrade, targets};
use crate::diag::{Diagnostic, Diagnostics};
use crate::plan::{self, PlannedTest};
use crate::plugin::{PluginEngine, Registry};
use crate::suite::{self, Suite};
use crate::target::{self, Targets};

/// What the run works with, once settled.
pub(super) struct Setup {
    /// What was asked (its plan options as the plan was made).
    pub request: Request,
    /// `--dialect` was given (else the dialect was told from the file).
    pub dialect_given: bool,
    /// Every command of the run is confined (`--isolate`, or strict where
    /// bubblewrap works): the run's sandbox.
    pub sandbox: Option<Arc<crate::isolate::RunSandbox>>,
    /// The suite's `workspace.docker` and the runtime that runs its code
    /// graders (`docker` or `podman`).
    pub container: Option<(String, crate::plugin::ContainerRun)>,
    pub engine: Arc<PluginEngine>,
    pub suite: Suite,
    pub registry: Registry,
    pub load_time: Duration,
    pub plugins_time: Duration,
    /// Tests at once.
    pub workers: usize,
    /// Plugin calls at once.
    pub grader_workers: usize,
    pub roots: suite::roots::Roots,
    pub targets: Targets,
    /// Each target of the matrix, with its hooks and judge.
    pub run_targets: Vec<RunTarget>,
    pub target_names: Vec<String>,
    pub judge: Arc<crate::judge::Judge>,
    /// The scope of every cached answer, target's and judge's alike.
    pub cache_scope: String,
    pub plan: Vec<PlannedTest>,
    pub response_cache: Option<crate::response_cache::ResponseCache>,
    /// The suite's git commit, asked while the suite was read.
    pub git: record::GitState,
}

/// Loads, chooses and checks; a mistake in the suite, its targets or the
/// command line is a [`RunError`] before anything ran.
pub(super) fn setup(
    options: &RunOptions,
    request: Request,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Setup, RunError>> {
    let Request {
        previous,
        eval,
        mut plan_options,
        threshold,
        target_override,
        resumed_targets,
        targets_file,
    } = request;
    // git (for a new run's run.json) answers while the suite is read.
    let git = if options.resume.is_some() {
        record::GitState::unasked()
    } else {
        record::GitState::start(super::suite_dir_of(&eval), options.sandbox_strict)
    };
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
    let targets = match targets::load(
        &suite,
        &eval,
        targets_file.as_ref(),
        options.sandbox_strict,
        targets::Check::Run,
    ) {
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
    // A suite whose code graders run in a container (`workspace.docker`)
    // runs them there, with the first of docker and podman that answers,
    // or not at all: never on the host instead. A regrade reads the
    // suite's file again and grades the same way.
    let requests: Vec<&evalhost_suite::workspace::Container> = suite
        .workspace
        .iter()
        .chain(suite.tests.iter().filter_map(|t| t.workspace.as_deref()))
        .filter_map(|w| w.container.as_ref())
        .collect();
    let container = match requests.first() {
        None => None,
        Some(first) => {
            if let Some(other) = requests.iter().find(|c| c.image != first.image) {
                return Ok(Err(RunError::Usage(format!(
                    "{}: this test's `docker` image differs from {}'s; evalhost runs one container image per suite",
                    other.place, first.place
                ))));
            }
            match crate::isolate::container::find(crate::process::which, runtime_info) {
                Ok((name, runtime)) => match &first.image {
                    Some(image) => Some((
                        name,
                        crate::plugin::ContainerRun {
                            runtime,
                            image: image.clone(),
                            memory: first.memory.clone(),
                            cpus: first.cpus.clone(),
                            timeout: Duration::from_secs(first.timeout_s.unwrap_or(1800)),
                        },
                    )),
                    None => {
                        return Ok(Err(RunError::Usage(format!(
                            "{}: `docker` names no `image`",
                            first.place
                        ))));
                    }
                },
                Err(runtimes) => {
                    return Ok(Err(RunError::Usage(format!(
                        "{}: the suite asks for its code graders to run in a container{}, and no container runtime works here — {}. It is not run on the host instead; remove `docker` to grade on this machine (with --isolate to confine the graders)",
                        first.place,
                        first
                            .image
                            .as_deref()
                            .map(|i| format!(" (image `{i}`)"))
                            .unwrap_or_default(),
                        runtimes.join("; ")
                    ))));
                }
            }
        }
    };
    // --isolate, and --sandbox strict wherever it can be had: every command
    // of the run confined. Strict without it runs no agent or command
    // target unconfined.
    // A targets file's `execution.isolate: true` is the operator's default
    // (one found beside the suite can only turn it on, never off).
    let want = options.isolate || targets.isolate;
    let sandbox = if want || options.sandbox_strict {
        let bwrap = crate::process::which("bwrap");
        match crate::isolate::Isolation::detect(bwrap, options.isolate_root.as_deref()) {
            Ok(isolation) => Some(Arc::new(crate::isolate::RunSandbox::new(
                isolation,
                &roots.project_root,
            ))),
            Err(why) if want => {
                return Ok(Err(RunError::Usage(if options.isolate {
                    why.to_string()
                } else {
                    format!(
                        "{} sets `execution.isolate: true`, and {why}",
                        targets
                            .file
                            .as_deref()
                            .map_or_else(String::new, |f| f.display().to_string())
                    )
                })));
            }
            Err(why) => {
                let commands: Vec<&str> = run_targets
                    .iter()
                    .filter(|t| {
                        matches!(
                            t.target.provider,
                            target::Provider::Cli(_) | target::Provider::Agent(_)
                        )
                    })
                    .map(|t| t.target.name.as_str())
                    .collect();
                if !commands.is_empty() {
                    return Ok(Err(RunError::Usage(format!(
                        "--sandbox strict runs agent and command targets ({}) only isolated, and isolation cannot be had here: {why}",
                        commands.join(", ")
                    ))));
                }
                None
            }
        }
    } else {
        None
    };
    if let Some(sandbox) = &sandbox {
        let cgroups = Some(sandbox.cgroups().err());
        for t in &run_targets {
            // Limits the operator wrote and the machine cannot hold: refused,
            // not run without them.
            if let (Some(Some(why)), Some(limits)) = (&cgroups, t.target.isolate.limits) {
                return Ok(Err(RunError::Usage(format!(
                    "target `{}` sets isolate limits ({}), and they cannot be applied here: {why}",
                    t.target.name,
                    limits.describe()
                ))));
            }
            let unset: Vec<&str> = t
                .target
                .isolate
                .env
                .iter()
                .filter(|name| std::env::var_os(name).is_none())
                .map(String::as_str)
                .collect();
            if !unset.is_empty() {
                writeln!(
                    err,
                    "warning: target `{}`'s isolate.env names {}, not set in evalhost's environment: its processes run without {}",
                    t.target.name,
                    unset.join(", "),
                    if unset.len() == 1 { "it" } else { "them" }
                )?;
            }
        }
        // A static workspace is the user's own directory, writable to the
        // case's processes: never one holding the project's git metadata,
        // evalhost's directory or its secrets.
        let statics = suite
            .workspace
            .iter()
            .chain(suite.tests.iter().filter_map(|t| t.workspace.as_deref()))
            .filter_map(|w| w.static_path.as_deref().map(|p| (p, &w.static_place)));
        for (path, place) in statics {
            if let Err(why) = sandbox.check_static_workspace(path) {
                return Ok(Err(RunError::Usage(format!(
                    "{place}: static workspace {}: {why}",
                    path.display()
                ))));
            }
        }
    }
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
    let judge = judge(options, &targets, &cache_scope, err);
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

    let response_cache = response_cache(options, &suite, err);
    Ok(Ok(Setup {
        request: Request {
            previous,
            eval,
            plan_options,
            threshold,
            target_override,
            resumed_targets,
            targets_file,
        },
        dialect_given: options.dialect.is_some(),
        sandbox,
        container,
        engine,
        suite,
        registry,
        load_time,
        plugins_time,
        workers,
        grader_workers,
        roots,
        targets,
        run_targets,
        target_names,
        judge,
        cache_scope,
        plan,
        response_cache,
        git,
    }))
}

/// The judge: one per run, answering for every target's LLM graders.
fn judge(
    options: &RunOptions,
    targets: &Targets,
    cache_scope: &str,
    err: &mut dyn Write,
) -> Arc<crate::judge::Judge> {
    std::sync::Arc::new(
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
        .with_scope(cache_scope.to_owned())
        .with_strict(options.sandbox_strict)
        .refreshing(options.no_judge_cache),
    )
}

/// The response cache, when on: `--cache`, else the suite's
/// `execution.cache` (never turned on by the suite under --sandbox strict).
fn response_cache(
    options: &RunOptions,
    suite: &Suite,
    err: &mut dyn Write,
) -> Option<crate::response_cache::ResponseCache> {
    // Under --sandbox strict the suite neither turns the response cache on
    // nor says where it lives: entries it ships could forge outputs.
    let enabled = options
        .cache
        .unwrap_or(suite.cache && !options.sandbox_strict);
    if enabled {
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
    }
}

/// `RUNTIME info` within 15 seconds: why it failed (its last line of
/// stderr), if it did.
fn runtime_info(runtime: &std::path::Path) -> Result<(), String> {
    let argv = [runtime.display().to_string(), "info".to_owned()];
    let out = crate::process::run(&crate::process::Spec {
        argv: &argv,
        timeout: Some(Duration::from_secs(15)),
        ..crate::process::Spec::default()
    })
    .map_err(|e| e.to_string())?;
    if out.success() {
        return Ok(());
    }
    if out.timed_out {
        return Err("no answer in 15 s".into());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last: String = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .chars()
        .take(200)
        .collect();
    Err(if last.is_empty() {
        format!("exit code {:?}", out.code)
    } else {
        last
    })
}
