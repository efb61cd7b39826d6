//! The process-wide wasmtime [`Engine`]: component model, epoch interruption
//! driven by a ticker thread, and the pooling allocator tuned for many short
//! instances (falling back to on-demand allocation when the pool's address
//! space cannot be reserved).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache::CompileCache;
use super::state::HostState;

/// How often the ticker advances the engine's epoch: the granularity of every
/// plugin deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// How a component was obtained, for the run summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompileSource {
    /// Loaded from the on-disk compile cache.
    Cache,
    /// Compiled now (and written to the cache when there is one).
    Compiled,
}

/// Options for [`PluginEngine::new`].
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// How many instances may be live at once (about twice the workers).
    pub max_instances: u32,
    /// How many warm instances each stateless plugin keeps (the number of
    /// plugin calls that run at once).
    pub max_idle: usize,
}

/// The engine, its linker and its compile cache.
pub struct PluginEngine {
    engine: Engine,
    linker: Linker<HostState>,
    cache: Option<CompileCache>,
    warnings: std::sync::Mutex<Vec<String>>,
    pooling: bool,
    max_idle: usize,
}

impl std::fmt::Debug for PluginEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginEngine")
            .field("pooling", &self.pooling)
            .finish_non_exhaustive()
    }
}

fn base_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.cranelift_opt_level(wasmtime::OptLevel::Speed);
    config
}

fn pooling_config(max_instances: u32) -> Config {
    let mut pool = PoolingAllocationConfig::default();
    let n = max_instances.max(4);
    pool.total_component_instances(n)
        .total_core_instances(n * 8)
        .total_memories(n * 2)
        .total_tables(n * 4)
        .total_stacks(n)
        // Measured on this kind of machine (shared/reference/wasm-host.md,
        // B3): keeping pages resident and batching decommits cut a fresh
        // instance from 31 µs to 12.6 µs and sys time about 12×.
        .linear_memory_keep_resident(2 << 20)
        .table_keep_resident(512 << 10)
        .decommit_batch_size(32)
        .pagemap_scan(Enabled::Auto);
    let mut config = base_config();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

impl PluginEngine {
    /// Builds the engine, starts its epoch ticker and links the host's
    /// imports (WASI p2 with nothing granted, `llm`, `exec`).
    pub fn new(options: &EngineOptions) -> anyhow::Result<Arc<Self>> {
        let (engine, pooling) = match Engine::new(&pooling_config(options.max_instances)) {
            Ok(engine) => (engine, true),
            Err(_) => (
                Engine::new(&base_config())
                    .map_err(|e| anyhow::anyhow!("cannot create the wasm engine: {e}"))?,
                false,
            ),
        };
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("evalhost-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking WASI: {e}"))?;
        super::bindings::Plugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(
            &mut linker,
            |state| state,
        )
        .map_err(|e| anyhow::anyhow!("linking evalhost imports: {e}"))?;
        let mut warnings = Vec::new();
        let cache = options.cache_dir.as_ref().and_then(|dir| {
            match CompileCache::new(dir.clone(), &engine) {
                Ok(cache) => Some(cache),
                Err(e) => {
                    warnings.push(e.to_string());
                    None
                }
            }
        });
        Ok(Arc::new(Self {
            engine,
            linker,
            cache,
            warnings: std::sync::Mutex::new(warnings),
            pooling,
            max_idle: options.max_idle,
        }))
    }

    fn warn(&self, warning: String) {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(warning);
    }

    /// What the engine found worth telling since the last call (an
    /// untrusted cache directory, a cache entry that failed its check).
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The linker holding every import the host provides.
    pub fn linker(&self) -> &Linker<HostState> {
        &self.linker
    }

    /// How many warm instances each stateless plugin keeps.
    pub fn max_idle(&self) -> usize {
        self.max_idle
    }

    /// True when the pooling allocator is in use.
    pub fn pooling(&self) -> bool {
        self.pooling
    }

    /// Compiles `wasm`, or loads it from the compile cache. `digest` is the
    /// sha256 of `wasm`, hex.
    /// True when `digest` is in the compile cache (loading it takes
    /// milliseconds; compiling it, seconds).
    pub fn is_cached(&self, digest: &str) -> bool {
        self.cache.as_ref().is_some_and(|c| c.contains(digest))
    }

    /// The assertion types the component of `digest` described when it was
    /// last loaded here (the compile cache keeps them, tagged).
    pub fn remembered_types(&self, digest: &str) -> Option<Vec<String>> {
        self.cache.as_ref()?.load_types(digest)
    }

    /// Remembers the assertion types of the component of `digest`.
    pub fn remember_types(&self, digest: &str, types: &[&str]) {
        if let Some(cache) = &self.cache {
            // A cache that cannot be written only costs speed.
            let _ = cache.store_types(digest, types);
        }
    }

    pub fn compile(
        &self,
        wasm: &[u8],
        digest: &str,
    ) -> anyhow::Result<(Component, CompileSource, Duration)> {
        let start = Instant::now();
        if let Some(cache) = &self.cache {
            match cache.load(&self.engine, digest) {
                Ok(Some(component)) => {
                    return Ok((component, CompileSource::Cache, start.elapsed()));
                }
                Ok(None) => {}
                Err(warning) => self.warn(warning),
            }
        }
        let component = Component::new(&self.engine, wasm).map_err(|e| anyhow::anyhow!("{e:#}"))?;
        if let Some(cache) = &self.cache {
            // A cache that cannot be written only costs speed.
            let _ = cache.store(&component, digest);
        }
        Ok((component, CompileSource::Compiled, start.elapsed()))
    }
}
