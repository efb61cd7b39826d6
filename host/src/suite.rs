//! Suites: read by the `evalhost-suite` crate, re-exported here so the host
//! says `crate::suite::…`. The checks that need plugins are the run's
//! (`run/check.rs`): the reader runs nothing.

pub use evalhost_suite::{
    Aggregate, Assertion, Group, LimitOverrides, Loc, MatrixTarget, Message, PassRule, PluginRef,
    Preprocessor, PromptScript, Required, Suite, TestCase, Trials, dialect, discover_eval_files,
    env, fields, load, model, normalize_media_type, roots, source_map, yaml,
};
