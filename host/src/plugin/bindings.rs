//! The only `bindgen!` of the host: Rust types for the `evalhost:grader`
//! WIT package in `plugin-sdk/wit/`. Every other module imports from here.

wasmtime::component::bindgen!({
    world: "plugin",
    path: "../plugin-sdk/wit",
});

/// The WIT package version this host implements.
pub const API_VERSION: &str = "0.2.0";

/// The export name a compatible plugin provides.
pub const GRADER_INTERFACE: &str = "evalhost:grader/grader";
