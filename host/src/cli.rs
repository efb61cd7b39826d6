//! The command line: what was typed ([`Cli`]), and the mapping of outcomes
//! to exit codes ([`run_cli`]), in one place.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

pub use crate::plugin_cli::PluginCommand;
pub use crate::schema::SchemaKind;
use clap::{Parser, Subcommand};

use crate::exit_codes;
use crate::run::{self, RunError, RunOptions};

/// Run evaluation suites and grade every assertion in a sandboxed
/// WebAssembly plugin.
#[derive(Debug, Parser)]
#[command(name = "evalhost", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite against a target and grade the outputs.
    Run(Box<RunArgs>),
    /// Check suites without running anything: every problem, with file, line
    /// and key.
    Validate(ValidateArgs),
    /// Print the JSON Schema of the suite format (EVAL.yaml) or of a
    /// case.yaml, for editors.
    Schema(SchemaArgs),
    /// Combine run directories (shards) into one: results, summary, report.
    Merge(MergeArgs),
    /// Grade a finished run's outputs again with the current suite and
    /// plugins, without calling any target.
    Regrade(RegradeArgs),
    /// Manage the caches (compiled plugins, target answers).
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Inspect and create grader plugins.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Check, before a run, that the targets a suite would use can run
    /// here: agent CLIs on PATH with the flags evalhost passes, API keys
    /// set (named, never shown), endpoints answering, commands found.
    Doctor(DoctorArgs),
    /// List, show, delete and reindex the project's runs (the results
    /// index, `.evalhost/results.db`).
    #[command(subcommand)]
    Runs(crate::history_cli::RunsCommand),
    /// Compare two runs: per-test deltas and flips, and whether the
    /// difference is more than noise.
    Compare(crate::history_cli::CompareArgs),
    /// A suite's last runs: each test's scores, the tests that drift or
    /// flap.
    Trend(crate::history_cli::TrendArgs),
    /// Browse the project's runs in a browser: runs, tests, comparisons,
    /// trends (read-only; loopback unless told otherwise).
    View(crate::view::ViewArgs),
    /// Read an agent CLI's output (Claude Code stream-json, Codex JSONL,
    /// AgentV's output file) and print the trace graders see, as AgentV's
    /// output-file JSON.
    Trace(TraceArgs),
}

/// `evalhost doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The eval file whose targets to check.
    pub eval: PathBuf,
    /// The targets file a run would be given (default: the one found
    /// walking up from the suite).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// The target a run would be given (default: the suite's).
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// The suite's dialect: agentv4, agentv5 or promptfoo.
    #[arg(long, value_name = "DIALECT", value_parser = parse_dialect)]
    pub dialect: Option<evalhost_suite::dialect::Dialect>,
    /// Trust the targets the suite brings (a targets file found beside it,
    /// targets it defines itself): run their programs' `--version` and
    /// `--help`, and send keys to the URLs they name. Without it (and
    /// without `--targets`), doctor only looks programs up and checks that
    /// keys are set.
    #[arg(long)]
    pub trust: bool,
}

/// `evalhost trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The file an agent wrote (`-` for standard input).
    pub file: PathBuf,
    /// Its format: auto, agentv, claude-code, codex, pi, copilot-log, text.
    #[arg(long, default_value = "auto")]
    pub format: String,
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

/// `evalhost cache`.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Remove cached target answers, judge answers and compiled plugins
    /// (all three unless one is named).
    Clear {
        /// The target answers.
        #[arg(long)]
        responses: bool,
        /// The judge answers (LLM graders).
        #[arg(long)]
        judge: bool,
        /// The compiled plugins.
        #[arg(long)]
        components: bool,
    },
    /// Print where the caches are.
    Dir,
}

/// `evalhost schema`.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// Which file's schema.
    #[arg(value_enum, default_value = "suite")]
    pub which: SchemaKind,
}

/// `evalhost run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The eval file (EVAL.yaml, any AgentV-style .yaml suite, or a .jsonl
    /// file of cases). Optional with --resume or --rerun-failed.
    #[arg(required_unless_present_any = ["resume", "rerun_failed"])]
    pub eval: Option<PathBuf>,
    /// Target to run (default: the suite's `execution.target`, else `default`).
    #[arg(long)]
    pub target: Option<String>,
    /// The suite's dialect: agentv4, agentv5 or promptfoo (default: told
    /// from the file's keys, name and `$schema` comment).
    #[arg(long, value_name = "DIALECT", value_parser = parse_dialect)]
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
    #[arg(long = "test-id", value_name = "GLOB")]
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
    #[arg(long, value_name = "K/N")]
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
    /// Write JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Extra reporter: `github` prints ::error annotations and writes a step
    /// summary.
    #[arg(long, value_enum)]
    pub reporter: Vec<ReporterKind>,
    /// Also write the run in another tool's format: `--export
    /// promptfoo-json FILE` (promptfoo's `-o out.json` shape).
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
    #[arg(long, value_name = "TARGET")]
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
}

/// Sandbox policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SandboxKind {
    /// Plugins get the capabilities their types declare (`exec` included).
    Default,
    /// No plugin may run commands.
    Strict,
}

/// Extra reporters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReporterKind {
    /// GitHub Actions annotations and step summary.
    Github,
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

/// `evalhost validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Eval files to check, or directories to search for `EVAL.yaml`,
    /// `eval.yaml` and `*.eval.yaml`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The suite's dialect: agentv4, agentv5 or promptfoo (default: told
    /// from the file's keys, name and `$schema` comment).
    #[arg(long, value_name = "DIALECT", value_parser = parse_dialect)]
    pub dialect: Option<evalhost_suite::dialect::Dialect>,
    /// The targets file a run would be given (default: the one found
    /// walking up from each suite).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// The target a run would be given (default: the suite's).
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// Also list every evalhost-only feature the suite uses (`not-` types,
    /// `expected_fail`, plugin types, ...), each a reason AgentV 4.42 would
    /// score it differently; any makes the exit code non-zero.
    #[arg(long)]
    pub agentv: bool,
}

/// Runs the parsed command line; returns the process exit code.
pub fn run_cli(cli: Cli) -> ExitCode {
    // Everything evalhost prints for people goes through one filter: no
    // value from a suite, a target or a plugin can drive the terminal or
    // start a CI workflow command (see `text`).
    let mut stderr = crate::text::Terminal::new(std::io::stderr());
    // Results and the summary go to stdout, so that `| tee log` and
    // `> out.txt` keep them; diagnostics, warnings and progress to stderr.
    let mut stdout = crate::text::Terminal::new(std::io::stdout());
    let code = match cli.command {
        Command::Run(args) => run_command(&args, &mut stdout, &mut stderr),
        Command::Validate(args) => validate_command(&args, &mut stderr),
        Command::Schema(args) => schema_command(&args, &mut stderr),
        Command::Merge(args) => merge_command(&args, &mut stdout, &mut stderr),
        Command::Regrade(args) => regrade_command(&args, &mut stdout, &mut stderr),
        Command::Cache(command) => cache_command(&command, &mut stderr),
        Command::Plugin(command) => crate::plugin_cli::run(&command, &mut stderr),
        Command::Trace(args) => trace_command(&args, &mut stderr),
        Command::Doctor(args) => doctor_command(&args, &mut stdout, &mut stderr),
        Command::Runs(command) => crate::history_cli::runs(&command, &mut stdout, &mut stderr),
        Command::Compare(args) => crate::history_cli::compare(&args, &mut stdout, &mut stderr),
        Command::Trend(args) => crate::history_cli::trend(&args, &mut stdout, &mut stderr),
        Command::View(args) => crate::view::command(&args, &mut stdout, &mut stderr),
    };
    ExitCode::from(code)
}

fn reporters(junit: &Option<PathBuf>, kinds: &[ReporterKind]) -> crate::report::Reporters {
    crate::report::Reporters {
        junit: junit.clone(),
        github: kinds.contains(&ReporterKind::Github),
        promptfoo_json: None,
    }
}

/// `--export FORMAT FILE` pairs into the reporters.
fn exports(
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

fn run_command(args: &RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let shard = match args.shard.as_deref().map(str::parse::<crate::plan::Shard>) {
        Some(Ok(shard)) => Some(shard),
        Some(Err(message)) => return report_run_error(err, &RunError::Usage(message)),
        None => None,
    };
    let options = RunOptions {
        eval: args.eval.clone(),
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
        reporters: match exports(reporters(&args.junit, &args.reporter), &args.export) {
            Ok(r) => r,
            Err(message) => return report_run_error(err, &RunError::Usage(message)),
        },
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
    };
    match run::run(&options, out, err) {
        Ok(Ok(report)) => report.exit_code(),
        Ok(Err(error)) => report_run_error(err, &error),
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            exit_codes::INTERNAL
        }
    }
}

fn merge_command(args: &MergeArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match crate::merge::merge(
        &args.dirs,
        &args.output,
        &crate::merge::MergeOptions {
            allow_partial: args.allow_partial,
        },
        &reporters(&args.junit, &args.reporter),
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

fn report_run_error(err: &mut dyn Write, error: &RunError) -> u8 {
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

fn doctor_command(args: &DoctorArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let engine = match run::engine(false, 2) {
        Ok(e) => e,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            return exit_codes::INTERNAL;
        }
    };
    let prepared = match run::prepare(&args.eval, &engine, false, args.dialect) {
        Ok(p) => p,
        Err(error) => return report_run_error(err, &error),
    };
    let suite = &prepared.suite;
    // A targets file found beside the suite (and targets the suite
    // defines) may be a stranger's: nothing of it is run or contacted
    // unless the operator named the file or said `--trust`. (Reading it
    // with the environment is harmless then: doctor only says whether a
    // variable is set, never its value, and sends nothing.)
    let file_trusted = args.trust || args.targets.is_some();
    let inline: Vec<String> = suite
        .inline_targets
        .iter()
        .filter_map(|t| t.entry.get("name").and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .collect();
    let trusted = |name: &str| args.trust || (file_trusted && !inline.iter().any(|n| n == name));
    let targets = match run::targets::load(suite, &args.eval, args.targets.as_ref(), false) {
        Ok(t) => t,
        Err(diags) => {
            for d in diags.iter() {
                let _ = writeln!(err, "{d}");
            }
            return exit_codes::USAGE;
        }
    };
    let names: Vec<String> = run::targets::chosen(suite, args.target.as_deref())
        .into_iter()
        .map(|m| m.use_target)
        .collect();
    let _ = writeln!(
        out,
        "evalhost doctor · suite `{}` · targets from {}",
        suite.name,
        targets
            .file
            .as_deref()
            .map_or_else(|| "the suite".to_owned(), |f| f.display().to_string())
    );
    // A variable the targets file names and the environment lacks: named,
    // never a value.
    let unset: Vec<String> = targets
        .warnings
        .iter()
        .map(ToString::to_string)
        .filter(|w| w.contains("environment variable") && w.contains("is not set"))
        .collect();
    for w in &unset {
        let _ = writeln!(out, "  ✗ {}", w.rsplit("warning: ").next().unwrap_or(w));
    }
    if !args.trust && (!file_trusted || !inline.is_empty()) {
        let _ = writeln!(
            out,
            "  note: {} may come with the suite: programs are looked up, not run, and URLs are not contacted (name the targets file with --targets, or pass --trust, to check them fully)",
            if file_trusted {
                "the targets the suite defines itself"
            } else {
                "the targets file found beside the suite"
            }
        );
    }
    match crate::doctor::run(&targets, &names, &trusted, out).map(|n| n + unset.len()) {
        Ok(0) => {
            let _ = writeln!(out, "ready: every target a run would use can run here");
            exit_codes::SUCCESS
        }
        Ok(n) => {
            let _ = writeln!(out, "{n} problem(s): a run would fail on them");
            exit_codes::TEST_FAILED
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            exit_codes::INTERNAL
        }
    }
}

fn validate_command(args: &ValidateArgs, err: &mut dyn Write) -> u8 {
    let engine = match run::engine(false, 2) {
        Ok(e) => e,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            return exit_codes::INTERNAL;
        }
    };
    let mut invalid = 0;
    let mut files = Vec::new();
    for path in &args.paths {
        if path.is_dir() {
            let found = crate::suite::discover_eval_files(path);
            if found.is_empty() {
                let _ = writeln!(
                    err,
                    "{}: no eval files (EVAL.yaml, eval.yaml, *.eval.yaml) found",
                    path.display()
                );
                invalid += 1;
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let (mut tests, mut ok) = (0usize, 0usize);
    for path in &files {
        match run::prepare(path, &engine, false, args.dialect) {
            Ok(prepared) => {
                for d in prepared.warnings.iter() {
                    let _ = writeln!(err, "{d}");
                }
                let suite = &prepared.suite;
                // The targets a run would use: the file, the names, their keys.
                let targets = run::targets::load(suite, path, args.targets.as_ref(), false)
                    .and_then(|t| {
                        let chosen = run::targets::chosen(suite, args.target.as_deref());
                        let problems = run::targets::check_names(
                            suite,
                            &t,
                            &chosen,
                            run::targets::Check::Validate,
                        );
                        let mut all = t.warnings.clone();
                        all.0.extend(problems.0);
                        if all.has_errors() {
                            Err(all)
                        } else {
                            Ok((t.file, all))
                        }
                    });
                let extensions = if args.agentv {
                    agentv_differences(&prepared)
                } else {
                    Vec::new()
                };
                for d in &extensions {
                    let _ = writeln!(err, "{d}");
                }
                if !extensions.is_empty() {
                    let _ = writeln!(
                        err,
                        "{}: {} evalhost-only feature(s): AgentV 4.42 would score this suite differently",
                        path.display(),
                        extensions.len()
                    );
                    invalid += 1;
                }
                match targets {
                    Ok(_) if !extensions.is_empty() => {}
                    Ok((file, warnings)) => {
                        for d in warnings.iter() {
                            let _ = writeln!(err, "{d}");
                        }
                        let from = file.as_ref().map_or_else(
                            || "no targets file found".to_owned(),
                            |f| format!("targets from {}", shown_path(f)),
                        );
                        let _ = writeln!(
                            err,
                            "{}: ok ({} tests; {from})",
                            path.display(),
                            suite.tests.len()
                        );
                        ok += 1;
                        tests += suite.tests.len();
                    }
                    Err(diags) => {
                        invalid += 1;
                        report_run_error(err, &RunError::Invalid(diags));
                    }
                }
                // The last suite is not taken apart: the process ends
                // next, and freeing a large suite value by value costs
                // milliseconds.
                if std::ptr::eq(path, files.last().expect("this is one")) {
                    std::mem::forget(prepared);
                }
            }
            Err(error) => {
                invalid += 1;
                report_run_error(err, &error);
            }
        }
        for warning in engine.take_warnings() {
            let _ = writeln!(err, "warning: {warning}");
        }
    }
    if files.len() > 1 || args.paths.iter().any(|p| p.is_dir()) {
        let _ = writeln!(
            err,
            "\n{ok} of {} eval file(s) valid ({tests} tests){}",
            files.len(),
            if invalid > 0 {
                format!("; {invalid} invalid")
            } else {
                String::new()
            }
        );
    }
    if invalid > 0 {
        exit_codes::USAGE
    } else {
        exit_codes::SUCCESS
    }
}

/// The evalhost-only features a suite uses (`validate --agentv`): what the
/// loader noted, and each assertion type a third-party plugin provides.
fn agentv_differences(prepared: &run::Prepared) -> Vec<crate::diag::Diagnostic> {
    let suite = &prepared.suite;
    let mut out: Vec<crate::diag::Diagnostic> = suite
        .extensions
        .iter()
        .map(|e| {
            crate::diag::Diagnostic::warning(&e.loc.file, format!("evalhost-only: {}", e.what))
                .at(e.loc.pos)
                .key(e.loc.key.clone())
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    for assertion in suite
        .tests
        .iter()
        .flat_map(|t| t.every_assertion())
        .flat_map(crate::suite::Assertion::walk)
        .filter(|a| a.wasm.is_none() && a.group.is_none())
    {
        let Some((plugin, _)) = prepared.registry.resolve_for(assertion) else {
            continue;
        };
        if plugin.label.starts_with("builtin:")
            || !seen.insert((assertion.loc.file.clone(), assertion.loc.key.clone()))
        {
            continue;
        }
        out.push(
            crate::diag::Diagnostic::warning(
                &assertion.loc.file,
                format!(
                    "evalhost-only: type `{}` comes from the plugin {}; AgentV 4.42 grades it only if `.agentv/assertions/{}.ts` defines it (else an unknown grader type, scored 0)",
                    assertion.kind, plugin.name, assertion.kind
                ),
            )
            .at(assertion.loc.pos)
            .key(assertion.loc.key.key("type")),
        );
    }
    out
}

/// A path as shown: relative to the current directory when inside it.
fn shown_path(path: &std::path::Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn schema_command(args: &SchemaArgs, err: &mut dyn Write) -> u8 {
    match crate::schema::generate(args.which) {
        Ok(schema) => {
            let mut out = std::io::stdout().lock();
            match writeln!(out, "{schema}") {
                Ok(()) => exit_codes::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit_codes::SUCCESS,
                Err(e) => {
                    let _ = writeln!(err, "error: {e}");
                    exit_codes::INTERNAL
                }
            }
        }
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            exit_codes::INTERNAL
        }
    }
}

fn regrade_command(args: &RegradeArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let options = RunOptions {
        eval: args.eval.clone(),
        output: args.output.clone(),
        reporters: reporters(&args.junit, &args.reporter),
        sandbox_strict: args.sandbox == SandboxKind::Strict,
        regrade: Some(args.run_dir.clone()),
        grader_target: args.grader_target.clone(),
        cache: Some(false),
        ..RunOptions::default()
    };
    match run::run(&options, out, err) {
        Ok(Ok(report)) => report.exit_code(),
        Ok(Err(error)) => report_run_error(err, &error),
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            exit_codes::INTERNAL
        }
    }
}

fn cache_command(command: &CacheCommand, err: &mut dyn Write) -> u8 {
    let caches = [
        (
            "responses",
            "target answer(s)",
            crate::response_cache::ResponseCache::default_dir(),
        ),
        (
            "judge",
            "judge answer(s)",
            crate::judge::Judge::default_cache_dir(),
        ),
        (
            "components",
            "compiled plugin(s)",
            crate::plugin::cache::default_cache_dir(),
        ),
    ];
    match command {
        CacheCommand::Dir => {
            let mut out = crate::text::Terminal::new(std::io::stdout().lock());
            for (label, _, dir) in &caches {
                let shown = dir
                    .as_ref()
                    .map_or_else(|| "(none)".to_owned(), |d| d.display().to_string());
                let _ = writeln!(out, "{label}: {shown}");
            }
            let key = crate::plugin::cache::key_file()
                .map_or_else(|| "(none)".to_owned(), |d| d.display().to_string());
            let _ = writeln!(out, "compile-cache key: {key}");
            exit_codes::SUCCESS
        }
        CacheCommand::Clear {
            responses,
            judge,
            components,
        } => {
            let all = !(*responses || *judge || *components);
            let wanted = [*responses, *judge, *components];
            for ((_, label, dir), want) in caches.into_iter().zip(wanted) {
                if !(all || want) {
                    continue;
                }
                let Some(dir) = dir else { continue };
                match crate::response_cache::ResponseCache::clear(&dir) {
                    Ok(n) => {
                        let _ = writeln!(err, "removed {n} {label} from {}", dir.display());
                    }
                    Err(e) => {
                        let _ = writeln!(err, "error: cannot clear {}: {e}", dir.display());
                        return exit_codes::INTERNAL;
                    }
                }
            }
            exit_codes::SUCCESS
        }
    }
}

fn trace_command(args: &TraceArgs, err: &mut dyn Write) -> u8 {
    use std::io::Read;
    let format: crate::trace::TraceFormat = match args.format.parse() {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return exit_codes::USAGE;
        }
    };
    let text = if args.file.as_os_str() == "-" {
        let mut t = String::new();
        std::io::stdin().read_to_string(&mut t).map(|_| t)
    } else {
        std::fs::read_to_string(&args.file)
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(err, "error: cannot read {}: {e}", args.file.display());
            return exit_codes::USAGE;
        }
    };
    let detected = match format {
        crate::trace::TraceFormat::Auto => crate::trace::detect(&text),
        f => f,
    };
    match crate::trace::normalize(&text, detected) {
        Ok(output) => {
            let _ = writeln!(err, "format: {}", detected.name());
            let doc = crate::trace::to_agentv(&output);
            // A reader that went away (`| head`) is no failure.
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                crate::text::json_shown(&serde_json::to_string_pretty(&doc).unwrap_or_default())
            );
            exit_codes::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(
                err,
                "format: {}\nerror: the agent run failed: {e}",
                detected.name()
            );
            exit_codes::EXECUTION_ERROR
        }
    }
}

/// `--dialect`: one of the dialect names.
fn parse_dialect(value: &str) -> Result<evalhost_suite::dialect::Dialect, String> {
    evalhost_suite::dialect::Dialect::parse(value)
        .ok_or_else(|| format!("`{value}` is not a dialect: agentv4, agentv5 or promptfoo"))
}
