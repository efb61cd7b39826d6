//! `frozen-grader`: an evalhost grader plugin.
//!
//! Build: `cargo build --target wasm32-wasip2 --release`, then name
//! `target/wasm32-wasip2/release/frozen_grader.wasm` under `plugins:` in a suite.

use evalhost_plugin_sdk::{
    export_grader, json, AssertionType, Check, Config, Grade, GradeError, Grader, Plugin, Request,
};

/// The plugin.
pub struct FrozenGrader;

impl Grader for FrozenGrader {
    fn describe() -> Plugin {
        Plugin::new("frozen-grader", env!("CARGO_PKG_VERSION")).stateless(true).assertion_type(
            AssertionType::new("frozen-grader", "Output mentions `value`, ignoring case")
                .schema(json!({
                    "type": "object",
                    "required": ["value"],
                    "properties": {"value": {"type": "string", "minLength": 1}},
                })),
        )
    }

    fn check_config(_type: &str, config: &Config) -> Result<(), String> {
        config.required_str("value").map(|_| ())
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let value = request.config.required_str("value")?;
        let found = request.output.to_lowercase().contains(&value.to_lowercase());
        Ok(Grade::from_check(Check::new(found, format!("Output mentions {value:?}"))))
    }
}

export_grader!(FrozenGrader);

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::testing::Harness;

    // The harness checks what evalhost checks (the type, the config, the
    // grade) and fakes its capabilities (Harness::llm, Harness::exec).
    #[test]
    fn grades_natively() {
        let harness = Harness::<FrozenGrader>::new();
        assert_eq!(harness.score("frozen-grader", "Hello, World", json!({"value": "world"})), 1.0);
        assert_eq!(harness.score("frozen-grader", "Hello", json!({"value": "world"})), 0.0);
        assert!(harness.check_config("frozen-grader", json!({})).is_err());
    }
}
