//! The `evalhost` binary: parse the command line, run, exit.

use std::process::ExitCode;

use clap::Parser as _;

// mimalloc: loading a suite and writing its results allocate many small
// values (JSON trees, strings, rows); mimalloc serves them from per-thread
// pages, about a third faster than glibc's malloc on `validate` and `run`
// (`scripts/bench.py --only layout`).
//
// Every allocation is also reported to the template memory budget
// (`evalhost_suite::budget`): a suite's template cannot fill the machine's
// memory while it renders.
#[global_allocator]
static ALLOCATOR: Budgeted = Budgeted(mimalloc::MiMalloc);

struct Budgeted(mimalloc::MiMalloc);

// SAFETY: every call is forwarded unchanged to mimalloc; the budget's
// hooks only read and write this thread's counters (no allocation).
unsafe impl std::alloc::GlobalAlloc for Budgeted {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        evalhost_suite::budget::on_alloc(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        evalhost_suite::budget::on_alloc(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        evalhost_suite::budget::on_dealloc(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        if new > layout.size() {
            evalhost_suite::budget::on_alloc(new - layout.size());
        } else {
            evalhost_suite::budget::on_dealloc(layout.size() - new);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.realloc(ptr, layout, new) }
    }
}

fn main() -> ExitCode {
    // Inside an `--isolate` sandbox with a network: evalhost carries the
    // program's connections to its proxy outside (see `isolate::net`).
    // The arguments as the OS gives them: `std::env::args` panics on one
    // that is not UTF-8 (a Latin-1 file name), before clap could say so.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(evalhost::isolate::net::BRIDGE_ARG)) {
        // The bridge's arguments are evalhost's own (addresses and paths it
        // chose); one that is not UTF-8 is not one of them.
        let Ok(args) = args
            .map(std::ffi::OsString::into_string)
            .collect::<Result<Vec<_>, _>>()
        else {
            eprintln!("evalhost: the network bridge's arguments are not UTF-8");
            return ExitCode::from(1);
        };
        let code = evalhost::isolate::net::bridge(&args);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // A shell asking for completions (the script `evalhost completions`
    // prints sets EVALHOST_COMPLETE): answered, and the process ends here.
    evalhost::cli::complete::answer_completion_request();
    evalhost::cli::run_cli(evalhost::cli::Cli::parse())
}
