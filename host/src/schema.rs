//! `evalhost schema`: the JSON Schema of the suite and case formats,
//! generated from the loader's own field tables ([`crate::suite::fields`])
//! and the built-in plugins' config schemas. The generated files are
//! committed in `schema/`; a test fails when they are stale.

use crate::cli::SchemaKind;
use crate::plugin::Registry;
use crate::suite::fields::{self, TypeSchema};

/// The schema `which`, pretty-printed.
pub fn generate(which: SchemaKind) -> anyhow::Result<String> {
    let engine = crate::run::engine(false, 1)?;
    let registry = Registry::with_builtins(&engine)?;
    let types: Vec<TypeSchema> = registry
        .type_names()
        .filter_map(|name| registry.resolve(name))
        .map(|(_, info)| TypeSchema {
            name: info.name.clone(),
            description: info.description.clone(),
            config: info.config_schema.clone(),
        })
        .collect();
    let schema = match which {
        SchemaKind::Suite => fields::suite_schema(&types),
        SchemaKind::Case => fields::case_schema(&types),
    };
    Ok(serde_json::to_string_pretty(&schema)?)
}
