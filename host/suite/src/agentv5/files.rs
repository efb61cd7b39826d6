//! Files a suite names: YAML files, `default_test: file://…`, the defaults
//! and `default_test.options`, rubric criteria grouping, globs.

use super::*;

impl Rewriter {
    /// A YAML/JSON file the suite names (`file://…`), inside the project
    /// root, parsed.
    pub(super) fn yaml_file(
        &mut self,
        spec: &str,
        at: &KeyPath,
        what: &str,
    ) -> Option<(PathBuf, Value)> {
        let rel = spec.strip_prefix("file://").unwrap_or(spec);
        let path = match self.roots.relative(rel, &self.dir.clone()) {
            Ok(p) => p,
            Err(e) => {
                self.error(at, format!("{what} `{spec}`: {e}")).hint = Some(
                    "a suite may read only files inside its project root (the nearest directory with `.git`)"
                        .into(),
                );
                return None;
            }
        };
        let text = match crate::roots::read_regular_text(&path, crate::limits::MAX_FILE_BYTES) {
            Ok(t) => t,
            Err(e) => {
                self.error(
                    at,
                    format!("{what} `{spec}`: cannot read {}: {e}", path.display()),
                );
                return None;
            }
        };
        match crate::yaml::parse(&text) {
            Ok(v) => Some((path, render_env_value(&v, &self.env))),
            Err(e) => {
                self.error(at, format!("{what} `{spec}`: {}: {e}", path.display()));
                None
            }
        }
    }

    /// `default_test: file://…` (AgentV 5's `loadDefaultTestFile`): a
    /// mapping, with neither `description` nor `assertions`.
    pub(super) fn default_test_file(
        &mut self,
        spec: &str,
        at: &KeyPath,
    ) -> Option<Map<String, Value>> {
        if !spec.starts_with("file://") {
            self.error(at, format!("`default_test: {spec}`: use file://…"));
            return None;
        }
        let (path, value) = self.yaml_file(spec, at, "default_test")?;
        let Value::Object(d) = value else {
            self.error(
                at,
                format!(
                    "default_test file must contain a YAML object: {}",
                    path.display()
                ),
            );
            return None;
        };
        if d.contains_key("description") {
            self.error(
                at,
                format!(
                    "default_test file must not define description: {}",
                    path.display()
                ),
            );
            return None;
        }
        if d.contains_key("assertions") {
            self.error(
                at,
                format!(
                    "default_test file must use assert, not assertions: {}",
                    path.display()
                ),
            );
            return None;
        }
        Some(d)
    }

    /// `defaults: {provider, grader}` (AgentV 5 reads only these two).
    pub(super) fn defaults(
        &mut self,
        value: Option<&Value>,
        at: &KeyPath,
        execution: &mut Map<String, Value>,
    ) {
        let d = match value {
            None | Some(Value::Null) => return,
            Some(Value::Object(d)) => d,
            Some(_) => {
                self.error(at, "Invalid defaults: expected an object.");
                return;
            }
        };
        for (k, v) in d {
            match (k.as_str(), v) {
                ("provider", Value::String(p)) if !p.trim().is_empty() => {
                    execution.insert("target".into(), Value::String(p.trim().to_owned()));
                }
                ("grader", Value::String(g)) if !g.trim().is_empty() => {
                    self.grader.get_or_insert_with(|| g.trim().to_owned());
                    self.catalog_target(g.trim(), &at.key(k));
                }
                ("provider" | "grader", other) => {
                    self.error(
                        &at.key(k),
                        format!(
                            "`defaults.{k}` must be a provider label, got {}",
                            crate::agentv4::kind(other)
                        ),
                    );
                }
                ("target", _) => {
                    self.error(&at.key(k), "Invalid defaults.target: defaults.target has been removed. Use defaults.provider.");
                }
                (other, _) => {
                    self.warning(
                        &at.key(other),
                        format!("`defaults.{other}` is ignored: AgentV 5 reads only `defaults.provider` and `defaults.grader`, and drops the rest without a word"),
                    )
                    .hint = Some(match other {
                        "system_message" => "to give the model a system message, make it the first message of the prompt: `prompts: [[{role: system, content: ...}, {role: user, content: '{{ input }}'}]]`".into(),
                        _ => "remove it, or move it where AgentV 5 reads it".into(),
                    });
                }
            }
        }
    }

    /// `default_test.options`: `rubric_prompt` and `provider` for the
    /// model-graded assertions; `transform` needs a JavaScript runtime.
    pub(super) fn default_options(&mut self, value: &Value, at: &KeyPath) {
        let Value::Object(o) = value else {
            self.error(at, "`default_test.options` must be a mapping");
            return;
        };
        for (k, v) in o {
            match (k.as_str(), v) {
                ("rubric_prompt", Value::String(p)) => self.rubric_prompt = Some(p.clone()),
                ("provider", Value::String(p)) if !p.trim().is_empty() => {
                    self.grader = Some(p.trim().to_owned());
                    self.catalog_target(p.trim(), &at.key(k));
                }
                ("transform", _) => {
                    self.error(
                        &at.key(k),
                        "`options.transform` (a script run over each output before grading) is not run by this version of evalhost",
                    )
                    .hint = Some(
                        "output transforms arrive with the sandboxed inline-code runtime; until then, grade the raw output or convert it in the target".into(),
                    );
                }
                (other, _) => {
                    self.error(
                        &at.key(other),
                        format!(
                            "`default_test.options.{other}` is not read by this version of evalhost"
                        ),
                    );
                }
            }
        }
    }

    /// AgentV 5 groups a list's plain-string criteria into one `llm-rubric`
    /// (weight = their number) at the first one's place, graded with AgentV
    /// 5's reading of the judge's reply, the default judge prompt and
    /// provider.
    pub(super) fn group_criteria(&self, list: Vec<Value>) -> Vec<Value> {
        let criteria: Vec<Value> = list
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.to_owned()))
            .collect();
        if criteria.is_empty() {
            return list;
        }
        let mut group = Map::new();
        group.insert("type".into(), "rubrics".into());
        group.insert("weight".into(), json!(criteria.len()));
        group.insert("criteria".into(), Value::Array(criteria));
        group.insert("agentv5".into(), Value::Bool(true));
        if let Some(p) = &self.rubric_prompt {
            group.insert("prompt".into(), Value::String(p.clone()));
        }
        if let Some(g) = &self.grader {
            group.insert("target".into(), Value::String(g.clone()));
        }
        let mut out = Vec::new();
        let mut placed = false;
        for item in list {
            if item.is_string() {
                if !placed {
                    out.push(Value::Object(group.clone()));
                    placed = true;
                }
            } else {
                out.push(item);
            }
        }
        out
    }

    /// The files a path or glob names, below the suite's directory and
    /// inside the project root, sorted.
    pub(super) fn glob(&mut self, spec: &str, at: &KeyPath) -> Vec<PathBuf> {
        if !spec.contains(['*', '?', '[', '{']) {
            return match self.roots.relative(spec, &self.dir.clone()) {
                Ok(p) => vec![p],
                Err(e) => {
                    self.error(at, format!("`{spec}`: {e}"));
                    Vec::new()
                }
            };
        }
        let matcher = match globset::Glob::new(spec) {
            Ok(g) => g.compile_matcher(),
            Err(e) => {
                self.error(at, format!("`{spec}` is not a valid glob: {e}"));
                return Vec::new();
            }
        };
        let base = self.abs_dir();
        let mut found: Vec<PathBuf> = walkdir::WalkDir::new(&base)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter(|e| {
                e.path()
                    .strip_prefix(&base)
                    .is_ok_and(|rel| matcher.is_match(rel))
            })
            .filter_map(|e| self.roots.contain(e.path()).ok())
            .collect();
        found.sort();
        if found.is_empty() {
            self.warning(at, format!("`{spec}` matches no file"));
        }
        found
    }
}
