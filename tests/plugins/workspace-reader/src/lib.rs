//! A test-only sandboxed grader: it reads a file of the case workspace
//! (granted read-only at `/workspace`) and checks it contains a value. It
//! also tries to write there, and reports whether that was refused.

use evalhost_plugin_sdk::{
    AssertionType, Capability, Check, Config, Grade, GradeError, Grader, Plugin, Request,
    export_grader, json,
};

/// The plugin.
pub struct WorkspaceReader;

impl Grader for WorkspaceReader {
    fn describe() -> Plugin {
        Plugin::new("workspace-reader", "0.1.0").assertion_type(
            AssertionType::new("file-contains", "A workspace file contains a value")
                .capability(Capability::WorkspaceRead)
                .schema(json!({"type": "object", "required": ["path", "value"]})),
        )
    }

    fn check_config(_type: &str, config: &Config) -> Result<(), String> {
        config.required_str("path")?;
        config.required_str("value").map(|_| ())
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let root = request
            .workspace_path
            .clone()
            .ok_or_else(|| GradeError::Failed("no workspace was granted".into()))?;
        let path = format!("{root}/{}", request.config.required_str("path")?);
        let value = request.config.required_str("value")?;
        let text = std::fs::read_to_string(&path)
            .map_err(|e| GradeError::Failed(format!("cannot read {path}: {e}")))?;
        let write_refused = std::fs::write(format!("{root}/probe.txt"), "x").is_err();
        let check = Check::new(text.contains(value), format!("{path} contains {value:?}"));
        Ok(Grade::from_check(check)
            .with_details(json!({"write_refused": write_refused, "seen_root": root})))
    }
}

export_grader!(WorkspaceReader);
