//! evalhost: runs evaluation suites (AgentV's `EVAL.yaml` format) and grades
//! every assertion inside a sandboxed WebAssembly component plugin.
//!
//! The pipeline, one module per stage, data flowing one way:
//! [`suite`] (load and check) → [`target`] (get the output) → [`grade`]
//! (dispatch each assertion to its [`plugin`]) → [`results`] (stream rows) →
//! [`report`] (summary). [`run`] drives it; [`cli`] maps outcomes to the
//! [`exit_codes`].

pub mod cli;
pub use evalhost_suite::{diag, text};
pub mod digest;
pub mod doctor;
pub mod exit_codes;
pub mod failure;
pub mod grade;
pub mod grants;
pub mod history;
pub mod history_cli;
pub mod judge;
pub mod judge_proxy;
pub mod lifecycle;
pub mod merge;
pub mod named_metrics;
pub mod oci;
pub mod outcome;
pub mod plan;
pub mod plugin;
pub mod plugin_cli;
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
pub mod view;
pub mod workspace;
