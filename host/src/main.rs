//! The `evalhost` binary: parse the command line, run, exit.

use std::process::ExitCode;

use clap::Parser as _;

// mimalloc: loading a suite and writing its results allocate many small
// values (JSON trees, strings, rows); mimalloc serves them from per-thread
// pages, about a third faster than glibc's malloc on `validate` and `run`
// (`scripts/bench.py --only layout`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    evalhost::cli::run_cli(evalhost::cli::Cli::parse())
}
