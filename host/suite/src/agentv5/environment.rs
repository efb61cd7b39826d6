//! `environment`: `{type: host, workdir, setup}` (inline or a recipe file)
//! as AgentV 5's `environment/host.ts` prepares it.

use super::*;

impl Rewriter {
    /// `environment: file://recipe.yaml`: the recipe, its relative
    /// `workdir` taken from the recipe's own directory.
    pub(super) fn environment_file(
        &mut self,
        spec: &str,
        at: &KeyPath,
    ) -> Option<Map<String, Value>> {
        let (path, value) = self.yaml_file(spec, at, "environment")?;
        let Value::Object(mut env) = value else {
            self.error(
                at,
                format!(
                    "environment file must contain a YAML object: {}",
                    path.display()
                ),
            );
            return None;
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if let Some(Value::String(w)) = env.get("workdir").cloned()
            && !Path::new(&w).is_absolute()
        {
            env.insert(
                "workdir".into(),
                Value::String(dir.join(w).display().to_string()),
            );
        }
        Some(env)
    }

    /// `environment: {type: host, workdir, setup}` as AgentV 5 prepares it
    /// (`environment/host.ts`): the workdir itself is the workspace (made
    /// when missing) and `setup` runs once before the tests — an AgentV 4
    /// static workspace with a `before_all` hook. `type: docker` is AgentV 4's
    /// `workspace.docker`: run only in a container.
    pub(super) fn environment(&mut self, value: &Value, at: &KeyPath) -> Option<Value> {
        let loaded;
        let env = match value {
            Value::Object(env) => env,
            Value::String(spec) if spec.starts_with("file://") => {
                loaded = self.environment_file(spec, at)?;
                &loaded
            }
            other => {
                self.error(
                    at,
                    format!(
                        "`environment` must be a mapping or file://…, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                return None;
            }
        };
        match env.get("type").and_then(Value::as_str).unwrap_or("host") {
            "host" => {}
            // A Docker environment: AgentV 4's `workspace.docker`, which a
            // run refuses without a working container runtime.
            "docker" => return Some(json!({ "docker": Value::Object(env.clone()) })),
            other => {
                self.error(
                    &at.key("type"),
                    format!("environment `type` must be host or docker, got `{other}`"),
                );
                return None;
            }
        }
        for key in env
            .keys()
            .filter(|k| !matches!(k.as_str(), "type" | "workdir" | "setup" | "env"))
        {
            self.error(
                &at.key(key),
                format!("`environment.{key}` is not read by this version of evalhost"),
            );
        }
        if env.contains_key("env") {
            self.warning(&at.key("env"), "`environment.env` (variables for the setup command) is ignored by this version of evalhost");
        }
        let mut ws = Map::new();
        match env.get("workdir").and_then(Value::as_str) {
            Some(dir) => {
                ws.insert("path".into(), Value::String(dir.to_owned()));
            }
            None => {
                self.error(
                    &at.key("workdir"),
                    "a host `environment` needs `workdir`, the directory the tests run in",
                );
                return None;
            }
        }
        if let Some(Value::Object(setup)) = env.get("setup") {
            let mut hook = Map::new();
            if let Some(c) = setup.get("command") {
                hook.insert("command".into(), c.clone());
            }
            // AgentV 5: a relative `cwd` is inside the workdir; none is the
            // suite's directory.
            if let Some(Value::String(c)) = setup.get("cwd") {
                let workdir = env.get("workdir").and_then(Value::as_str).unwrap_or(".");
                let cwd = if Path::new(c).is_absolute() {
                    c.clone()
                } else {
                    Path::new(workdir).join(c).display().to_string()
                };
                hook.insert("cwd".into(), Value::String(cwd));
            }
            if let Some(t) = setup.get("timeout_ms") {
                hook.insert("timeout_ms".into(), t.clone());
            }
            ws.insert("hooks".into(), json!({ "before_all": hook }));
        }
        Some(Value::Object(ws))
    }
}
