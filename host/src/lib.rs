//! evalhost: runs evaluation suites (AgentV's `EVAL.yaml`, AgentV 5 and
//! promptfoo configs) and grades every assertion inside a sandboxed
//! WebAssembly component plugin.
//!
//! The pipeline, data flowing one way (ARCHITECTURE.md has the map, and
//! `tests/integration/architecture.rs` holds its import rules):
//! - **prepare**: [`suite`] (the suite crate, re-exported), [`plan`];
//!   [`run`] drives the stages (prepare → plan → execute → record → report);
//! - **get the output**: [`target`], [`trace`], [`response_cache`],
//!   [`lifecycle`] and [`workspace`] (workspaces and hooks);
//! - **grade**: [`grade`], [`grants`], [`plugin`] (wasmtime), [`judge`],
//!   [`judge_proxy`], [`preprocess`], [`prompt_script`];
//! - **record and report**: [`results`], [`outcome`], [`named_metrics`],
//!   [`report`], [`merge`];
//! - **history**: [`history`] (the index, compare, trend) and [`view`];
//! - **commands**: [`cli`] (one file per command), [`exit_codes`],
//!   [`doctor`], [`schema`], [`oci`];
//! - **utilities**: [`process`], [`safe_fs`], [`digest`], [`user_key`],
//!   [`builtin`], [`failure`], [`semaphore`].

pub mod builtin;
pub mod cli;
pub use evalhost_suite::{diag, text};
pub mod digest;
pub mod doctor;
pub mod exit_codes;
pub mod failure;
pub mod grade;
pub mod grants;
pub mod history;
pub mod isolate;
pub mod judge;
pub mod judge_proxy;
pub mod lifecycle;
pub mod merge;
pub mod named_metrics;
pub mod oci;
pub mod outcome;
pub mod plan;
pub mod plugin;
pub mod preprocess;
pub mod process;
pub mod prompt_script;
pub mod report;
pub mod response_cache;
pub mod results;
pub mod run;
pub mod safe_fs;
pub mod schema;
pub mod semaphore;
pub mod suite;
pub mod target;
pub mod trace;
pub mod user_key;
pub mod view;
pub mod workspace;
