//! The plugin host: every assertion is graded inside a sandboxed WebAssembly
//! component that implements the `evalhost:grader` WIT world.
//!
//! - [`engine`]: one wasmtime engine per process, epoch ticker, pooling.
//! - [`cache`]: compiled components cached on disk.
//! - [`state`]: what a plugin may see (nothing, unless granted).
//! - [`services`]: what it may ask of the host (`llm`, `embed`, a judge for
//!   its commands), as traits the grading stage implements.
//! - [`instance`]: loading a plugin and calling it under limits.
//! - [`registry`]: which plugin grades which assertion type.

pub mod bindings;
pub mod cache;
pub mod engine;
pub mod instance;
pub mod registry;
pub mod services;
pub mod state;

pub use bindings::API_VERSION;
pub use engine::{CompileSource, EngineOptions, PluginEngine};
pub use instance::{
    CallLimits, LoadedPlugin, PluginFailure, PluginLoadError, TypeInfo, sha256_hex,
};
pub use registry::Registry;
pub use state::{ContainerRun, Grants};
