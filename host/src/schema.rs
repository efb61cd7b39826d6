//! `evalhost schema`: the JSON Schema of the suite and case formats,
//! generated from the loader's own field tables ([`crate::suite::fields`])
//! and the built-in plugins' config schemas. The generated files are
//! committed in `schema/`; a test fails when they are stale.

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
        .chain(group_types())
        .collect();
    let schema = match which {
        SchemaKind::Suite => fields::suite_schema(&types),
        SchemaKind::Case => fields::case_schema(&types),
    };
    Ok(serde_json::to_string_pretty(&schema)?)
}

/// The host's own types: `composite` and `assert-set`, whose members are
/// assertions.
fn group_types() -> [TypeSchema; 2] {
    let members =
        serde_json::json!({"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/assertion"}});
    [
        TypeSchema {
            name: "composite".into(),
            description: "Members graded in parallel, combined by an aggregator (AgentV)".into(),
            config: serde_json::json!({
                "type": "object",
                "required": ["aggregator"],
                "properties": {
                    "assertions": members,
                    "assert": members,
                    "evaluators": members,
                    "aggregator": {
                        "type": "object",
                        "required": ["type"],
                        "properties": {
                            "type": {"enum": ["weighted_average", "threshold"]},
                            "weights": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}},
                            "threshold": {"type": "number", "minimum": 0, "maximum": 1},
                        },
                    },
                },
            }),
        },
        TypeSchema {
            name: "assert-set".into(),
            description: "Members graded in parallel: all must pass, or their weighted score must reach `threshold` (promptfoo)".into(),
            config: serde_json::json!({
                "type": "object",
                "anyOf": [{"required": ["assert"]}, {"required": ["assertions"]}],
                "properties": {
                    "assert": members,
                    "assertions": members,
                    "threshold": {"type": "number", "minimum": 0, "maximum": 1},
                    "metric": {"type": "string", "description": "promptfoo's named metric: accepted, not used by evalhost (a warning says so)"},
                    "config": {"type": "object"},
                },
            }),
        },
    ]
}

/// Which schema `evalhost schema` prints.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SchemaKind {
    /// An eval file (EVAL.yaml, *.eval.yaml).
    Suite,
    /// A case.yaml of a discovered case directory.
    Case,
}
