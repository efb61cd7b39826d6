//! The per-call store state of a plugin: a WASI context that grants nothing,
//! the memory limiter, and the host side of the `llm` and `exec` imports.
//!
//! What a plugin sees of the outside world is decided here and nowhere else:
//! - no preopened directories (no files), no environment variables, no
//!   arguments, stdin closed;
//! - stdout and stderr go to capped in-memory pipes, shown with the result;
//! - no network: TCP, UDP and name lookup are all refused;
//! - the wall clock and the monotonic clock are frozen at zero, so a plugin
//!   cannot behave differently depending on the time;
//! - random numbers come from fixed seeds, so grading is reproducible;
//! - `llm` and `exec` refuse every call with a message naming the missing
//!   grant unless the plugin was granted them.

use std::time::Duration;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{
    HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};

use super::bindings::evalhost::grader::{exec, llm, types};

/// How much a plugin may write to stdout and to stderr, each, per call.
pub const OUTPUT_CAP: usize = 64 << 10;

/// The capabilities granted to one plugin for one call.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    /// Chat completions through the judge.
    pub llm: bool,
    /// Running commands.
    pub exec: bool,
}

/// Caps memory growth, remembering when the cap was hit so the failure can
/// be classified.
#[derive(Debug)]
pub struct Limiter {
    memory_cap: usize,
    /// The size the plugin asked for when it hit the cap.
    pub memory_hit: Option<usize>,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_cap {
            self.memory_hit = Some(desired);
            return Err(wasmtime::format_err!(
                "plugin tried to grow its memory to {} MiB, past its cap of {} MiB",
                desired >> 20,
                self.memory_cap >> 20
            ));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// The state of one store: one plugin instance, one call (or a run of calls
/// for a reused stateless instance).
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The memory limiter.
    pub limiter: Limiter,
    grants: Grants,
    plugin: String,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
}

impl HostState {
    /// A state for `plugin` with a memory cap and grants.
    pub fn new(plugin: &str, memory_cap: usize, grants: Grants) -> Self {
        let stdout = MemoryOutputPipe::new(OUTPUT_CAP);
        let stderr = MemoryOutputPipe::new(OUTPUT_CAP);
        let mut builder = WasiCtxBuilder::new();
        builder
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .wall_clock(FrozenClock)
            .monotonic_clock(FrozenClock)
            .secure_random(StdRng::seed_from_u64(0x5eed))
            .insecure_random(StdRng::seed_from_u64(0x5eed + 1))
            .insecure_random_seed(0x5eed)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        let mut table = ResourceTable::new();
        table.set_max_capacity(4096);
        Self {
            wasi: builder.build(),
            table,
            limiter: Limiter {
                memory_cap,
                memory_hit: None,
            },
            grants,
            plugin: plugin.to_owned(),
            stdout,
            stderr,
        }
    }

    /// What the plugin wrote to stdout and stderr, as text.
    pub fn output(&self) -> String {
        let mut text = String::new();
        for pipe in [&self.stdout, &self.stderr] {
            let bytes = pipe.contents();
            if !bytes.is_empty() {
                text.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
        text
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for HostState {}

impl llm::Host for HostState {
    fn complete(
        &mut self,
        _request: llm::CompletionRequest,
    ) -> Result<llm::Completion, llm::LlmError> {
        if !self.grants.llm {
            return Err(llm::LlmError::NotGranted(format!(
                "plugin `{}` was not granted the `llm` capability; an assertion type must declare it \
                 and the run must grant it",
                self.plugin
            )));
        }
        Err(llm::LlmError::Unavailable(
            "no judge model is configured for this run".into(),
        ))
    }
}

impl exec::Host for HostState {
    fn run(&mut self, _command: exec::Command) -> Result<exec::CommandOutput, exec::ExecError> {
        if !self.grants.exec {
            return Err(exec::ExecError::NotGranted(format!(
                "plugin `{}` was not granted the `exec` capability; an assertion type must declare it \
                 and the run's sandbox policy must allow it",
                self.plugin
            )));
        }
        Err(exec::ExecError::Denied(
            "running commands is not enabled in this run".into(),
        ))
    }
}
