//! evalhost's suite reader: everything between a suite on disk and the
//! canonical model the host runs, and nothing that runs. It reads every
//! suite form (EVAL.yaml, JSONL with sidecars, case directories, cases
//! files and globs, `include:` templates), discovers cases, merges suite
//! defaults into tests, interpolates `${{ VAR }}` and `{{ var }}`, keeps
//! the position of every key, and reports every problem as a
//! [`diag::Diagnostic`] naming file, line, column and key.
//!
//! It does not depend on wasmtime, an HTTP client or a process runner: the
//! checks that need a plugin (an assertion's config) are the host's, after
//! loading. The fuzz targets and the load benchmark use this crate alone.
//!
//! - [`load`]: the entry points; [`dialect`]: one reader per suite format,
//!   each producing the canonical model (AgentV 4.42's is `agentv4/`, one
//!   file per concern).
//! - [`model`], [`workspace`]: the canonical suite model every stage sees.
//! - [`fields`]: the key tables (unknown-key warnings and the JSON Schema).
//! - [`source_map`], [`diag`], [`text`]: positions, diagnostics, and text
//!   made safe for a terminal.
//! - [`env`], [`roots`]: `${{ VAR }}` and `.env` files; which files a suite
//!   may read.

mod agentv4;
mod agentv5;
pub mod budget;
pub mod code;
mod csv;
pub mod diag;
pub mod dialect;
pub mod env;
pub mod fields;
pub mod limits;
pub mod load;
pub mod mathexpr;
pub mod model;
pub mod nunjucks;
mod promptfoo;
pub mod roots;
pub mod shell_template;
pub mod source_map;
pub mod text;
pub mod vars;
pub mod workspace;
pub mod yaml;

pub use load::load;
pub use model::{
    Aggregate, Assertion, Group, InlineTarget, KeyPositions, LimitOverrides, Loc, MatrixTarget,
    Message, PassRule, PluginRef, Preprocessor, PromptScript, RenderedPrompt, Required, Strategy,
    Suite, TestCase, Trials, normalize_media_type,
};

/// The names of the suite files [`discover_eval_files`] finds, as said to
/// people.
pub const EVAL_FILE_NAMES: &str =
    "EVAL.yaml, eval.yaml, *.eval.yaml, promptfooconfig.yaml; .yml the same";

/// Whether a file of this name is a suite [`discover_eval_files`] finds.
pub fn is_eval_file_name(name: &str) -> bool {
    let name = name.to_lowercase();
    name == "eval.yaml"
        || name == "eval.yml"
        || name.ends_with(".eval.yaml")
        || name.ends_with(".eval.yml")
        || name == "promptfooconfig.yaml"
        || name == "promptfooconfig.yml"
}

/// Eval files under `dir` (recursively, skipping hidden directories,
/// `node_modules` and `target`): `EVAL.yaml`, `eval.yaml`, `*.eval.yaml`
/// (AgentV's names) and `promptfooconfig.yaml` (promptfoo's), `.yml` the
/// same, any case.
pub fn discover_eval_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<std::path::PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0 || !(name.starts_with('.') || name == "node_modules" || name == "target")
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| is_eval_file_name(&e.file_name().to_string_lossy()))
        .map(walkdir::DirEntry::into_path)
        .collect();
    found.sort();
    found
}
