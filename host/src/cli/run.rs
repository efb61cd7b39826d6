//! `evalhost run`, `merge` and `regrade`: their arguments and handlers.

use super::*;

/// `evalhost run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The suites: eval files (EVAL.yaml, an AgentV or promptfoo suite, a
    /// .jsonl file of cases), directories (every suite file under them:
    /// EVAL.yaml, eval.yaml, *.eval.yaml, promptfooconfig.yaml) or quoted
    /// globs ('evals/**/*.eval.yaml'). Several run one after another, each
    /// into its own run directory (`-o DIR`: DIR/<suite>), with a combined
    /// summary and one exit code. None with --resume or --rerun-failed.
    #[arg(value_name = "EVAL", required_unless_present_any = ["resume", "rerun_failed"])]
    pub eval: Vec<PathBuf>,
    /// Target to run (default: the suite's `execution.target`, else `default`).
    #[arg(long, add = clap_complete::ArgValueCandidates::new(target_names))]
    pub target: Option<String>,
    /// The suite's dialect: agentv4, agentv5 or promptfoo (default: told
    /// from the file's keys, name and `$schema` comment).
    #[arg(long, value_name = "DIALECT", value_parser = parse_dialect, add = clap_complete::ArgValueCandidates::new(dialects))]
    pub dialect: Option<evalhost_suite::dialect::Dialect>,
    /// Targets file (default: `.evalhost/targets.yaml` or `.agentv/targets.yaml`,
    /// searched upwards from the eval file).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// Run directory for results (default: `.evalhost/runs/<timestamp>`).
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Tests run in parallel (default: the number of CPUs).
    #[arg(short = 'j', long, value_name = "N")]
    pub workers: Option<usize>,
    /// Plugin calls run in parallel, across all tests (default: the number
    /// of CPUs).
    #[arg(long, value_name = "N")]
    pub grader_workers: Option<usize>,
    /// Pass threshold for tests without their own `execution.threshold`
    /// (overrides the suite's).
    #[arg(long, value_name = "0..1")]
    pub threshold: Option<f64>,
    /// Run only tests whose id matches this glob (repeatable: any matches).
    #[arg(long = "test-id", value_name = "GLOB", add = clap_complete::ArgValueCandidates::new(test_ids))]
    pub test_ids: Vec<String>,
    /// Run only tests with this tag, from the case or the suite (repeatable:
    /// any matches).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Run each test N times (overrides `execution.trials.count`; strategy
    /// from the suite, else `mean`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// Run the K-th of N stable slices of the planned tests (1-based).
    /// `auto` reads K and N from the scheduler running this process: a
    /// Slurm job array, a Kubernetes Indexed Job (`auto/N`: Kubernetes does
    /// not say N), GitLab, Buildkite or CircleCI parallel jobs.
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// Stop starting tests after the first one that fails.
    #[arg(long)]
    pub fail_fast: bool,
    /// Continue an interrupted run in DIR: finished rows are kept, the rest
    /// runs.
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    pub resume: Option<PathBuf>,
    /// Run again only the tests that did not pass in DIR (into a new run
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub rerun_failed: Option<PathBuf>,
    /// Write JUnit XML to FILE (several suites: one file, a `<testsuite>`
    /// per suite).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Extra reporter: `github` prints ::error annotations and writes a step
    /// summary.
    #[arg(long, value_enum)]
    pub reporter: Vec<ReporterKind>,
    /// Also write the run in another tool's format: `--export
    /// promptfoo-json FILE` (promptfoo's `-o out.json` shape; several
    /// suites: a file per suite, `out-<suite>.json`).
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"])]
    pub export: Vec<String>,
    /// Sandbox policy: `strict` refuses the `exec` capability to every
    /// plugin (for grading untrusted suites in CI).
    #[arg(long, value_enum, default_value = "default")]
    pub sandbox: SandboxKind,
    /// Registry plugins (`oci:`) only as `evalhost.lock` pins them: a
    /// reference the lock does not have is refused, never resolved.
    #[arg(long)]
    pub locked: bool,
    /// Keep every case's workspace (failed cases' are always kept).
    #[arg(long)]
    pub keep_workspaces: bool,
    /// Cache target answers and reuse them on later runs.
    #[arg(long, overrides_with = "no_cache")]
    pub cache: bool,
    /// Do not use the response cache, whatever the suite says.
    #[arg(long)]
    pub no_cache: bool,
    /// With --cache, cache sampled models (temperature > 0) too.
    #[arg(long)]
    pub cache_sampled: bool,
    /// The judge for LLM graders (default: the target's `grader_target`,
    /// else the target itself when it is a model).
    #[arg(long, value_name = "TARGET", add = clap_complete::ArgValueCandidates::new(target_names))]
    pub grader_target: Option<String>,
    /// Judge calls in flight at once (default 4).
    #[arg(long, value_name = "N")]
    pub judge_workers: Option<usize>,
    /// Always call the judge, never its cache.
    #[arg(long)]
    pub no_judge_cache: bool,
    /// Compile plugins without reading or writing the compile cache.
    #[arg(long)]
    pub no_compile_cache: bool,
    /// Print only what did not pass (FAIL and ERROR lines with why),
    /// warnings and the summary: no header, no plugin lines, no passes.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the whole output under each test that did not pass (default:
    /// its first 200 characters; `results.jsonl` always has all of it).
    #[arg(long)]
    pub full_output: bool,
    /// Refuse to run when a suite has warnings (for CI): every suite is
    /// checked first, its warnings printed, and nothing runs.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Run every command of the run (the agent or command target, hooks,
    /// command graders, scripts) in its own sandbox (bubblewrap): the
    /// case's workspace writable, the project read-only, an empty home,
    /// only PATH and the locale of the environment, no network (agents
    /// keep it for their API). `--sandbox strict` turns it on where it
    /// works. See docs/security.md.
    #[arg(long)]
    pub isolate: bool,
    /// With --isolate: the sandboxes' root filesystem instead of the
    /// host's `/usr` and `/etc` — a directory with usr/ and etc/, or a
    /// tarball of one (e.g. made by `mmdebstrap`; unpacked once into
    /// evalhost's cache, by its SHA-256).
    #[arg(long, value_name = "DIR|TARBALL", requires = "isolate")]
    pub isolate_root: Option<PathBuf>,
}

pub(super) fn run_command(args: &RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let shard = match args.shard.as_deref() {
        Some(spec) if spec.trim().starts_with("auto") => {
            match crate::plan::Shard::from_env(spec, &|name| std::env::var(name).ok()) {
                Ok((shard, from)) => {
                    let _ = writeln!(err, "{from}");
                    Some(shard)
                }
                Err(message) => return report_run_error(err, &RunError::Usage(message)),
            }
        }
        Some(spec) => match spec.parse::<crate::plan::Shard>() {
            Ok(shard) => Some(shard),
            Err(message) => return report_run_error(err, &RunError::Usage(message)),
        },
        None => None,
    };
    let files = match super::suites::expand(&args.eval) {
        Ok(files) => files,
        Err(problems) => {
            for p in &problems {
                let _ = writeln!(err, "error: {p}");
            }
            return exit_codes::USAGE;
        }
    };
    // A directory or a glob is several suites' way, even when it finds one.
    let one_file = args.eval.len() == 1 && args.eval[0].is_file();
    if files.is_empty() && args.deny_warnings {
        return report_run_error(
            err,
            &RunError::Usage(
                "--deny-warnings checks the suites before they run: name them (it does not apply to --resume or --rerun-failed)".into(),
            ),
        );
    }
    if files.len() > 1 || (files.len() == 1 && (!one_file || args.deny_warnings)) {
        return super::suites::run_many(
            args,
            &files,
            !one_file || files.len() > 1,
            shard,
            out,
            err,
        );
    }
    run_single(args, files.into_iter().next(), shard, out, err)
}

/// Runs one suite (or the run `--resume`/`--rerun-failed` names) with the
/// command line's reporters: its exit code.
pub(super) fn run_single(
    args: &RunArgs,
    eval: Option<PathBuf>,
    shard: Option<crate::plan::Shard>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let reporters = match exports(reporters(&args.junit, &args.reporter), &args.export) {
        Ok(r) => r,
        Err(message) => return report_run_error(err, &RunError::Usage(message)),
    };
    let options = run_options(args, eval, shard, reporters);
    run_one(&options, out, err).0
}

/// Runs one suite as `options` say: its exit code, and its report when it
/// ran.
pub(super) fn run_one(
    options: &RunOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> (u8, Option<crate::run::RunReport>) {
    let history = ProjectHistory {
        strict: options.sandbox_strict,
    };
    match crate::run::run(options, &history, out, err) {
        Ok(Ok(report)) => (report.exit_code(), Some(report)),
        Ok(Err(error)) => (report_run_error(err, &error), None),
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            (exit_codes::INTERNAL, None)
        }
    }
}

/// The options of a run of `eval` as the command line says.
pub(super) fn run_options(
    args: &RunArgs,
    eval: Option<PathBuf>,
    shard: Option<crate::plan::Shard>,
    reporters: crate::report::Reporters,
) -> RunOptions {
    RunOptions {
        eval,
        isolate: args.isolate,
        isolate_root: args.isolate_root.clone(),
        target: args.target.clone(),
        targets_file: args.targets.clone(),
        output: args.output.clone(),
        workers: args.workers,
        grader_workers: args.grader_workers,
        threshold: args.threshold,
        no_compile_cache: args.no_compile_cache,
        quiet: args.quiet,
        full_output: args.full_output,
        plan: crate::plan::PlanOptions {
            test_ids: args.test_ids.clone(),
            tags: args.tags.clone(),
            repeat: args.repeat,
            shard,
            only: None,
        },
        fail_fast: args.fail_fast,
        resume: args.resume.clone(),
        rerun_failed: args.rerun_failed.clone(),
        reporters,
        sandbox_strict: args.sandbox == SandboxKind::Strict,
        locked: args.locked,
        dialect: args.dialect,
        keep_workspaces: args.keep_workspaces,
        cache: if args.no_cache {
            Some(false)
        } else if args.cache {
            Some(true)
        } else {
            None
        },
        cache_sampled: args.cache_sampled,
        regrade: None,
        grader_target: args.grader_target.clone(),
        judge_workers: args.judge_workers,
        no_judge_cache: args.no_judge_cache,
    }
}

/// `evalhost merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Run directories to combine (the shards of one run).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The combined run directory.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Write JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Extra reporter (`github`).
    #[arg(long, value_enum)]
    pub reporter: Vec<ReporterKind>,
    /// Merge even when shards of the run are missing: their tests count as
    /// not run, and the summary names the missing shards.
    #[arg(long)]
    pub allow_partial: bool,
}

pub(super) fn merge_command(args: &MergeArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match crate::merge::merge(
        &args.dirs,
        &args.output,
        &crate::merge::MergeOptions {
            allow_partial: args.allow_partial,
        },
        &reporters(&args.junit, &args.reporter),
        &ProjectHistory { strict: false },
        out,
        err,
    ) {
        Ok(Ok(tally)) => tally.exit_code(),
        Ok(Err(message)) => report_run_error(err, &RunError::Usage(message)),
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            exit_codes::INTERNAL
        }
    }
}

/// `evalhost regrade`.
#[derive(Debug, clap::Args)]
pub struct RegradeArgs {
    /// The run directory whose outputs to grade.
    pub run_dir: PathBuf,
    /// The eval file (default: the one the run used).
    #[arg(long)]
    pub eval: Option<PathBuf>,
    /// Run directory for the new results (default: `.evalhost/runs/<timestamp>`).
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Write JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Extra reporter (`github`).
    #[arg(long, value_enum)]
    pub reporter: Vec<ReporterKind>,
    /// Sandbox policy (`strict` refuses `exec`).
    #[arg(long, value_enum, default_value = "default")]
    pub sandbox: SandboxKind,
    /// The judge for LLM graders.
    #[arg(long, value_name = "TARGET")]
    pub grader_target: Option<String>,
}

pub(super) fn regrade_command(args: &RegradeArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let options = RunOptions {
        eval: args.eval.clone(),
        isolate: false,
        isolate_root: None,
        output: args.output.clone(),
        reporters: reporters(&args.junit, &args.reporter),
        sandbox_strict: args.sandbox == SandboxKind::Strict,
        regrade: Some(args.run_dir.clone()),
        grader_target: args.grader_target.clone(),
        cache: Some(false),
        ..RunOptions::default()
    };
    let history = ProjectHistory {
        strict: options.sandbox_strict,
    };
    match crate::run::run(&options, &history, out, err) {
        Ok(Ok(report)) => report.exit_code(),
        Ok(Err(error)) => report_run_error(err, &error),
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            exit_codes::INTERNAL
        }
    }
}

pub(super) fn report_run_error(err: &mut dyn Write, error: &RunError) -> u8 {
    match error {
        RunError::Invalid(diags) => {
            for d in diags.iter() {
                let _ = writeln!(err, "{d}");
            }
            let _ = writeln!(err, "\nerror: {error}; nothing was run");
        }
        RunError::Usage(message) => {
            let _ = writeln!(err, "error: {message}");
        }
    }
    exit_codes::USAGE
}

pub(super) fn reporters(
    junit: &Option<PathBuf>,
    kinds: &[ReporterKind],
) -> crate::report::Reporters {
    crate::report::Reporters {
        junit: junit.clone(),
        github: kinds.contains(&ReporterKind::Github),
        promptfoo_json: None,
        junit_suites: None,
    }
}

/// `--export FORMAT FILE` pairs into the reporters.
pub(super) fn exports(
    mut reporters: crate::report::Reporters,
    export: &[String],
) -> Result<crate::report::Reporters, String> {
    for pair in export.chunks(2) {
        match pair {
            [format, file] if format == "promptfoo-json" => {
                reporters.promptfoo_json = Some(PathBuf::from(file));
            }
            [format, _] => {
                return Err(format!(
                    "`--export {format}`: the export formats are: promptfoo-json"
                ));
            }
            _ => {
                return Err(
                    "`--export` takes a format and a file: --export promptfoo-json out.json".into(),
                );
            }
        }
    }
    Ok(reporters)
}

/// The project's history as a run's sink: the results index
/// (`.evalhost/results.db`) and the viewer serving it.
struct ProjectHistory {
    /// `--sandbox strict`: the index and viewer of the project came with
    /// the suite.
    strict: bool,
}

impl crate::run::History for ProjectHistory {
    fn viewer_url(&self, runs_root: &std::path::Path, run_dir: &std::path::Path) -> Option<String> {
        crate::view::known_url(runs_root, self.strict).map(|base| {
            format!(
                "{base}#/run/{}",
                crate::history::run_id(run_dir, &runs_root.join(".evalhost").join("runs"))
            )
        })
    }

    fn record(&self, runs_root: &std::path::Path, run_dir: &std::path::Path) -> Option<String> {
        // Under --sandbox strict the project's index (and the run
        // directories it would be rebuilt from) came with the suite: not
        // opened.
        if self.strict {
            return Some(
                "note: under --sandbox strict the run is not added to the project's results index (.evalhost/results.db may have come with the suite); `evalhost runs reindex` adds it when you trust the project"
                    .to_owned(),
            );
        }
        crate::history::index::record_run(runs_root, run_dir)
            .map(|warning| format!("warning: {}", crate::text::shown(&warning)))
    }
}
