//! The command line: what was typed ([`Cli`]), and the mapping of outcomes
//! to exit codes ([`run_cli`]), in one place. Each subcommand's arguments
//! and handler live in this folder: `run.rs` (`run`, `merge`, `regrade`),
//! `validate.rs` (`validate`, `schema`), `doctor.rs`, `cache.rs` (`cache`,
//! `trace`), `history.rs` (`runs`, `compare`, `trend`), `view.rs` and
//! `plugin.rs`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

pub use self::plugin::PluginCommand;
pub use crate::schema::SchemaKind;
use clap::{Parser, Subcommand};

use crate::exit_codes;
use crate::run::{RunError, RunOptions};

mod cache;
pub mod complete;
mod doctor;
pub mod history;
pub mod plugin;
mod plugin_sdk;
mod run;
mod suites;
mod validate;
pub mod view;

use cache::*;
use complete::*;
use doctor::*;
use run::*;
use validate::*;

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
    /// Run suites against a target and grade the outputs (a file, several,
    /// a directory of suites or a glob).
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
    Runs(self::history::RunsCommand),
    /// Compare two runs: per-test deltas and flips, and whether the
    /// difference is more than noise.
    Compare(self::history::CompareArgs),
    /// A suite's last runs: each test's scores, the tests that drift or
    /// flap.
    Trend(self::history::TrendArgs),
    /// Browse the project's runs in a browser: runs, tests, comparisons,
    /// trends (read-only; loopback unless told otherwise).
    View(self::view::ViewArgs),
    /// Read an agent CLI's output (Claude Code stream-json, Codex JSONL,
    /// AgentV's output file) and print the trace graders see, as AgentV's
    /// output-file JSON.
    Trace(TraceArgs),
    /// Print a shell's completion script (bash, zsh, fish, powershell,
    /// elvish): subcommands, options, target names and test ids.
    Completions(CompletionsArgs),
    /// Print the man page (`evalhost man | man -l -`), or write one per
    /// command with `--dir DIR`.
    Man(ManArgs),
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
        Command::Plugin(command) => self::plugin::run(&command, &mut stderr),
        Command::Trace(args) => trace_command(&args, &mut stderr),
        Command::Doctor(args) => doctor_command(&args, &mut stdout, &mut stderr),
        Command::Runs(command) => self::history::runs(&command, &mut stdout, &mut stderr),
        Command::Compare(args) => self::history::compare(&args, &mut stdout, &mut stderr),
        Command::Trend(args) => self::history::trend(&args, &mut stdout, &mut stderr),
        Command::View(args) => self::view::command(&args, &mut stdout, &mut stderr),
        Command::Completions(args) => completions_command(&args, &mut stderr),
        Command::Man(args) => man_command(&args, &mut stderr),
    };
    ExitCode::from(code)
}

/// The exit code of a command whose work is printing (a schema, a script,
/// a page): success, also when the reader went away (`| head`).
fn printed(written: std::io::Result<()>, err: &mut dyn Write) -> u8 {
    match written {
        Ok(()) => exit_codes::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit_codes::SUCCESS,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            exit_codes::INTERNAL
        }
    }
}

/// A path as shown: relative to the current directory when inside it.
fn shown_path(path: &std::path::Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `--dialect`: one of the dialect names.
fn parse_dialect(value: &str) -> Result<evalhost_suite::dialect::Dialect, String> {
    evalhost_suite::dialect::Dialect::parse(value)
        .ok_or_else(|| format!("`{value}` is not a dialect: agentv4, agentv5 or promptfoo"))
}
