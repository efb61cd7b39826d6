//! Suites: read by the `evalhost-suite` crate (re-exported here, so the
//! host says `crate::suite::…`), plus the checks that need plugins
//! ([`check`]), which the reader cannot do since it runs nothing.

pub mod check;

pub use check::check_assertions;
pub use evalhost_suite::{
    Aggregate, Assertion, Group, LimitOverrides, Loc, MatrixTarget, Message, PluginRef, Required,
    Suite, TestCase, Trials, discover_eval_files, env, fields, load, model, roots, source_map,
};
