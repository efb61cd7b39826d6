//! Suites: loading AgentV-style eval files ([`load`]), their positions
//! ([`source_map`]), the resolved model ([`model`]) and the checks that need
//! plugins ([`check`]).

pub mod check;
pub mod env;
pub mod fields;
pub mod load;
pub mod model;
pub mod roots;
pub mod source_map;

pub use check::check_assertions;
pub use load::load;
pub use model::{
    Aggregate, Assertion, Group, LimitOverrides, Loc, MatrixTarget, Message, PluginRef, Required,
    Suite, TestCase, Trials,
};

/// Eval files under `dir` (recursively, skipping hidden directories and
/// `node_modules`): `EVAL.yaml`, `eval.yaml`, `*.eval.yaml`, `*.eval.yml`.
pub fn discover_eval_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<std::path::PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0 || !(name.starts_with('.') || name == "node_modules" || name == "target")
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_lowercase();
            name == "eval.yaml"
                || name == "eval.yml"
                || name.ends_with(".eval.yaml")
                || name.ends_with(".eval.yml")
        })
        .map(walkdir::DirEntry::into_path)
        .collect();
    found.sort();
    found
}
