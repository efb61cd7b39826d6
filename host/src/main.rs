//! The `evalhost` binary: parse the command line, run, exit.

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    evalhost::cli::run_cli(evalhost::cli::Cli::parse())
}
