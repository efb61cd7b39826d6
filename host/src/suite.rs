//! Suites: read by the `evalhost-suite` crate, re-exported here so the host
//! says `crate::suite::…`. The checks that need plugins are the run's
//! (`run/check.rs`); the only code the reader runs is what a promptfoo
//! config computes its vars and prompts with, through the sandbox the host
//! hands it (`run/code_runner.rs`).

pub use evalhost_suite::{
    Aggregate, Assertion, EVAL_FILE_NAMES, Group, LimitOverrides, Loc, MatrixTarget, Message,
    PassRule, PluginRef, Preprocessor, PromptScript, Required, Suite, TestCase, Trials, code,
    dialect, discover_eval_files, env, fields, is_eval_file_name, load, model,
    normalize_media_type, roots, source_map, yaml,
};
