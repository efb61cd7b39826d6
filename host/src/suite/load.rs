//! Reading an AgentV-style `EVAL.yaml` into a [`Suite`], collecting every
//! problem as a [`Diagnostic`] with file, line and key rather than stopping
//! at the first, and refusing what AgentV silently drops.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::model::{Assertion, LimitOverrides, Loc, Message, PluginRef, Required, Suite, TestCase};
use super::source_map::{KeyPath, SourceMap};
use crate::diag::{Diagnostic, Diagnostics, nearest};

/// Top-level keys AgentV 4.42 knows, plus evalhost's `plugins`.
pub const SUITE_KEYS: &[&str] = &[
    "$schema",
    "name",
    "description",
    "category",
    "version",
    "author",
    "tags",
    "license",
    "requires",
    "input",
    "input_files",
    "tests",
    "eval_cases",
    "target",
    "execution",
    "assertions",
    "assert",
    "evaluators",
    "preprocessors",
    "workspace",
    "metadata",
    "governance",
    "plugins",
];

/// Keys of a test case.
pub const TEST_KEYS: &[&str] = &[
    "id",
    "input",
    "criteria",
    "expected_output",
    "expected_outcome",
    "assertions",
    "assert",
    "rubrics",
    "input_files",
    "vars",
    "execution",
    "workspace",
    "metadata",
    "conversation_id",
    "evaluator",
    "evaluators",
    "depends_on",
    "on_dependency_failure",
    "mode",
    "turns",
    "aggregation",
    "on_turn_failure",
    "window_size",
    "suite",
    "tags",
    "timeout_ms",
    "expected_fail",
];

/// Keys of `execution` (suite or test).
pub const EXECUTION_KEYS: &[&str] = &[
    "target",
    "targets",
    "workers",
    "threshold",
    "trials",
    "budget_usd",
    "fail_on_error",
    "cache",
    "cache_path",
    "skip_defaults",
    "assertions",
    "assert",
    "evaluators",
    "limits",
];

/// Keys of an assertion that the host interprets; all others are the
/// plugin's config.
pub const HOST_ASSERTION_KEYS: &[&str] = &[
    "type",
    "name",
    "weight",
    "required",
    "min_score",
    "negate",
    "limits",
];

/// Reads and checks the eval file at `path`. Returns the suite when there
/// are no errors, and every diagnostic either way.
pub fn load(path: &Path) -> (Option<Suite>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) => {
            diags.push(
                Diagnostic::error(path, format!("cannot read the eval file: {err}"))
                    .hint("pass the path of an EVAL.yaml (or any .yaml suite file)"),
            );
            return (None, diags);
        }
    };
    let suite = parse(path, &text, &mut diags);
    if diags.has_errors() {
        (None, diags)
    } else {
        (suite, diags)
    }
}

/// Parses YAML text into JSON values, applying merge keys (`<<: *anchor`).
pub fn parse_yaml(text: &str) -> Result<Value, yaml_serde::Error> {
    let mut value: yaml_serde::Value = yaml_serde::from_str(text)?;
    value.apply_merge()?;
    yaml_serde::from_value(value)
}

fn parse(path: &Path, text: &str, diags: &mut Diagnostics) -> Option<Suite> {
    let root = match parse_yaml(text) {
        Ok(value) => value,
        Err(err) => {
            let pos = err.location().map(|l| super::source_map::Pos {
                line: l.line(),
                col: l.column(),
            });
            diags.push(
                Diagnostic::error(path, format!("invalid YAML: {err}"))
                    .at(pos)
                    .hint("check the indentation and quoting around this line"),
            );
            return None;
        }
    };
    let mut reader = Reader {
        file: Arc::new(path.to_path_buf()),
        map: SourceMap::build(text),
        diags,
    };
    reader.suite(root)
}

struct Reader<'a> {
    file: Arc<PathBuf>,
    map: SourceMap,
    diags: &'a mut Diagnostics,
}

impl Reader<'_> {
    fn loc(&self, key: &KeyPath) -> Loc {
        Loc {
            file: self.file.clone(),
            pos: self.map.locate(key),
            key: key.clone(),
        }
    }

    fn error(&mut self, key: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::error(&self.file, message)
            .at(self.map.locate(key))
            .key(key.clone());
        self.diags.push(d);
        self.diags.0.last_mut().expect("just pushed")
    }

    fn warning(&mut self, key: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::warning(&self.file, message)
            .at(self.map.locate(key))
            .key(key.clone());
        self.diags.push(d);
        self.diags.0.last_mut().expect("just pushed")
    }

    fn unknown_keys(
        &mut self,
        object: &Map<String, Value>,
        known: &[&str],
        at: &KeyPath,
        what: &str,
    ) {
        for key in object.keys() {
            if !known.contains(&key.as_str()) {
                let hint = match nearest(key, known.iter().copied()) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!("known keys: {}", known.join(", ")),
                };
                self.warning(
                    &at.key(key),
                    format!("unknown key `{key}` in {what}; it is ignored"),
                )
                .hint = Some(hint);
            }
        }
    }

    fn suite(&mut self, root: Value) -> Option<Suite> {
        let top = KeyPath::default();
        let Value::Object(root) = root else {
            self.error(&top, "the eval file must be a mapping with a `tests` key")
                .hint =
                Some("start the file with `tests:` followed by a list of test cases".into());
            return None;
        };
        self.unknown_keys(&root, SUITE_KEYS, &top, "the suite");
        let file = self.file.clone();
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();

        let name = match root.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
            Some(Value::String(_)) | None | Some(Value::Null) => suite_name_from_file(&file),
            Some(other) => {
                self.error(
                    &top.key("name"),
                    format!("`name` must be a string, got {}", kind(other)),
                );
                suite_name_from_file(&file)
            }
        };

        let execution = self.object(&root, "execution", &top);
        if let Some(exec) = &execution {
            self.unknown_keys(exec, EXECUTION_KEYS, &top.key("execution"), "`execution`");
        }
        let exec_path = top.key("execution");
        let target = match execution.as_ref().and_then(|e| e.get("target")) {
            Some(v) => self.string(v, &exec_path.key("target")),
            None => root
                .get("target")
                .and_then(|v| self.string(v, &top.key("target"))),
        };
        let threshold = execution
            .as_ref()
            .and_then(|e| e.get("threshold"))
            .and_then(|v| self.unit_number(v, &exec_path.key("threshold")));
        let limits = execution
            .as_ref()
            .and_then(|e| e.get("limits"))
            .map(|v| self.limits(v, &exec_path.key("limits")))
            .unwrap_or_default();

        let suite_assertions = match (root.get("assertions"), root.get("assert")) {
            (Some(list), other) => {
                if other.is_some() {
                    self.warning(
                        &top.key("assert"),
                        "both `assertions` and `assert` are given; `assert` is ignored",
                    );
                }
                self.assertion_list(list, &top.key("assertions"), true, "the suite")
            }
            (None, Some(list)) => {
                self.warning(
                    &top.key("assert"),
                    "`assert` is deprecated; use `assertions`",
                );
                self.assertion_list(list, &top.key("assert"), true, "the suite")
            }
            (None, None) => Vec::new(),
        };
        let suite_input = root
            .get("input")
            .map(|v| self.messages(v, &top.key("input"), "user"))
            .unwrap_or_default();
        let suite_metadata = self.object(&root, "metadata", &top).unwrap_or_default();
        let plugins = root
            .get("plugins")
            .map(|v| self.plugins(v, &top.key("plugins"), &dir))
            .unwrap_or_default();

        let tests_path = top.key("tests");
        let tests_value = match (root.get("tests"), root.get("eval_cases")) {
            (Some(t), _) => t.clone(),
            (None, Some(t)) => {
                self.warning(
                    &top.key("eval_cases"),
                    "`eval_cases` is deprecated; use `tests`",
                );
                t.clone()
            }
            (None, None) => {
                self.error(&top, "the suite has no `tests`")
                    .hint = Some("add `tests:` with a list of test cases (each with `id`, `input` and `assertions`)".into());
                return None;
            }
        };
        let Value::Array(items) = tests_value else {
            self.error(
                &tests_path,
                format!(
                    "`tests` must be a list of test cases, got {}",
                    kind(&tests_value)
                ),
            )
            .hint = Some("give the test cases inline as a YAML list".into());
            return None;
        };

        let mut tests: Vec<TestCase> = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            let at = tests_path.index(i);
            if let Some(test) =
                self.test(item, &at, &suite_assertions, &suite_input, &suite_metadata)
            {
                if let Some(first) = tests.iter().find(|t| t.id == test.id) {
                    let first_line = first
                        .loc
                        .pos
                        .map_or_else(String::new, |p| format!(" (line {})", p.line));
                    let message = format!(
                        "duplicate test id `{}`: already used by `{}`{first_line}",
                        test.id, first.loc.key
                    );
                    self.error(&at.key("id"), message).hint =
                        Some("every test id must be unique within a suite".into());
                }
                tests.push(test);
            }
        }
        if tests.is_empty() && !self.diags.has_errors() {
            self.error(&tests_path, "the suite has no test cases").hint =
                Some("add at least one test case under `tests:`".into());
        }

        Some(Suite {
            file: file.clone(),
            dir,
            name,
            tests,
            target,
            threshold,
            limits,
            plugins,
        })
    }

    fn test(
        &mut self,
        item: Value,
        at: &KeyPath,
        suite_assertions: &[Assertion],
        suite_input: &[Message],
        suite_metadata: &Map<String, Value>,
    ) -> Option<TestCase> {
        let Value::Object(test) = item else {
            self.error(
                at,
                format!("a test case must be a mapping, got {}", kind(&item)),
            );
            return None;
        };
        self.unknown_keys(&test, TEST_KEYS, at, "a test case");
        let id = match test.get("id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => {
                self.error(
                    &at.key("id"),
                    format!("test `id` must be a string, got number {n}"),
                )
                .hint = Some(format!("quote it: id: \"{n}\""));
                n.to_string()
            }
            Some(other) => {
                self.error(
                    &at.key("id"),
                    format!("test `id` must be a non-empty string, got {}", kind(other)),
                );
                return None;
            }
            None => {
                self.error(at, "the test case has no `id`").hint =
                    Some("add `id: some-name`, unique in the suite".into());
                return None;
            }
        };
        let execution = self.object(&test, "execution", at);
        if let Some(exec) = &execution {
            self.unknown_keys(
                exec,
                EXECUTION_KEYS,
                &at.key("execution"),
                "a test's `execution`",
            );
        }
        let skip_defaults = matches!(
            execution.as_ref().and_then(|e| e.get("skip_defaults")),
            Some(Value::Bool(true))
        );
        let threshold = execution
            .as_ref()
            .and_then(|e| e.get("threshold"))
            .and_then(|v| self.unit_number(v, &at.key("execution").key("threshold")));

        let mut input = if skip_defaults {
            Vec::new()
        } else {
            suite_input.to_vec()
        };
        match test.get("input") {
            Some(v) => input.extend(self.messages(v, &at.key("input"), "user")),
            None => {
                self.error(at, format!("test `{id}` has no `input`")).hint =
                    Some("add `input:` with the prompt (a string or a list of messages)".into());
            }
        }
        let expected = test
            .get("expected_output")
            .map(|v| self.messages(v, &at.key("expected_output"), "assistant"))
            .unwrap_or_default();
        let criteria = match (test.get("criteria"), test.get("expected_outcome")) {
            (Some(v), _) => self.string(v, &at.key("criteria")),
            (None, Some(v)) => {
                self.warning(
                    &at.key("expected_outcome"),
                    "`expected_outcome` is deprecated; use `criteria`",
                );
                self.string(v, &at.key("expected_outcome"))
            }
            (None, None) => None,
        };
        let mut metadata = self.object(&test, "metadata", at).unwrap_or_default();
        for (k, v) in suite_metadata {
            metadata.entry(k.clone()).or_insert_with(|| v.clone());
        }

        let what = format!("test `{id}`");
        let mut assertions = match (test.get("assertions"), test.get("assert")) {
            (Some(list), _) => self.assertion_list(list, &at.key("assertions"), false, &what),
            (None, Some(list)) => {
                self.warning(
                    &at.key("assert"),
                    "`assert` is deprecated; use `assertions`",
                );
                self.assertion_list(list, &at.key("assert"), false, &what)
            }
            (None, None) => Vec::new(),
        };
        if !skip_defaults {
            assertions.extend(suite_assertions.iter().cloned());
        }
        if assertions.is_empty() {
            let message = format!("test `{id}` has no assertions, so nothing would grade it");
            self.error(at, message).hint = Some(
                "add `assertions:` to the test or to the suite (AgentV would fall back to an LLM judge here; \
                 evalhost does not guess)"
                    .into(),
            );
        }
        Some(TestCase {
            id,
            input,
            expected,
            criteria,
            metadata,
            assertions,
            threshold,
            loc: self.loc(at),
        })
    }

    fn assertion_list(
        &mut self,
        value: &Value,
        at: &KeyPath,
        from_suite: bool,
        owner: &str,
    ) -> Vec<Assertion> {
        let Value::Array(items) = value else {
            self.error(
                at,
                format!("assertions of {owner} must be a list, got {}", kind(value)),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut criteria: Vec<String> = Vec::new();
        let mut rubric_slot: Option<(usize, KeyPath)> = None;
        for (i, item) in items.iter().enumerate() {
            let item_path = at.index(i);
            match item {
                Value::String(s) if s.trim().is_empty() => {
                    self.warning(&item_path, "empty rubric criterion; it is ignored");
                }
                Value::String(s) => {
                    criteria.push(s.trim().to_owned());
                    if rubric_slot.is_none() {
                        rubric_slot = Some((out.len(), item_path));
                    }
                }
                Value::Object(entry) => {
                    if let Some(a) = self.assertion(entry, &item_path, from_suite, owner) {
                        out.push(a);
                    }
                }
                other => {
                    self.error(
                        &item_path,
                        format!("an assertion must be a mapping with a `type`, or a string criterion; got {}", kind(other)),
                    );
                }
            }
        }
        if let Some((slot, path)) = rubric_slot {
            // AgentV §2.7: every string entry becomes one `rubrics` grader
            // with weight = the number of strings.
            let weight = criteria.len() as f64;
            let mut config = Map::new();
            config.insert(
                "criteria".into(),
                Value::Array(criteria.into_iter().map(Value::String).collect()),
            );
            let config_json: Arc<str> = Value::Object(config.clone()).to_string().into();
            out.insert(
                slot,
                Assertion {
                    name: "rubrics".into(),
                    kind: "rubrics".into(),
                    negate: false,
                    weight,
                    required: Required::No,
                    min_score: None,
                    limits: LimitOverrides::default(),
                    config,
                    config_json,
                    loc: self.loc(&path),
                    value_pos: None,
                    from_suite,
                },
            );
        }
        out
    }

    fn assertion(
        &mut self,
        entry: &Map<String, Value>,
        at: &KeyPath,
        from_suite: bool,
        owner: &str,
    ) -> Option<Assertion> {
        let raw_type = match entry.get("type") {
            Some(Value::String(t)) if !t.trim().is_empty() => t.trim().to_owned(),
            Some(other) => {
                self.error(
                    &at.key("type"),
                    format!("assertion `type` must be a string, got {}", kind(other)),
                );
                return None;
            }
            None => {
                self.error(at, format!("an assertion of {owner} has no `type`"))
                    .hint = Some("add `type:` (contains, regex, equals, is-json, ...)".into());
                return None;
            }
        };
        let normalized = raw_type.replace('_', "-");
        let (kind_name, prefixed) = match normalized.strip_prefix("not-") {
            Some(rest) => (rest.to_owned(), true),
            None => (normalized.clone(), false),
        };
        let negate = match entry.get("negate") {
            None | Some(Value::Null) => prefixed,
            Some(Value::Bool(b)) => {
                if *b && prefixed {
                    self.error(
                        &at.key("negate"),
                        format!("`{raw_type}` is already negated by its `not-` prefix; `negate: true` would negate it twice"),
                    )
                    .hint = Some(format!("use `type: {kind_name}` with `negate: true`, or `type: {raw_type}` alone"));
                }
                *b != prefixed
            }
            Some(other) => {
                self.error(
                    &at.key("negate"),
                    format!("`negate` must be true or false, got {}", kind(other)),
                );
                prefixed
            }
        };
        let weight = match entry.get("weight") {
            None | Some(Value::Null) => 1.0,
            Some(Value::Number(n)) if n.as_f64().is_some_and(|w| w.is_finite() && w >= 0.0) => {
                n.as_f64().expect("checked")
            }
            Some(other) => {
                self.error(
                    &at.key("weight"),
                    format!("`weight` must be a number ≥ 0, got {}", show(other)),
                );
                1.0
            }
        };
        let required = match entry.get("required") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Required::No,
            Some(Value::Bool(true)) => Required::Yes,
            Some(Value::Number(n)) if n.as_f64().is_some_and(|r| r > 0.0 && r <= 1.0) => {
                self.warning(
                    &at.key("required"),
                    "`required: <number>` is deprecated; use `required: true` with `min_score`",
                );
                Required::AtLeast(n.as_f64().expect("checked"))
            }
            Some(other) => {
                self.error(
                    &at.key("required"),
                    format!(
                        "`required` must be true, false or a number in (0, 1], got {}",
                        show(other)
                    ),
                );
                Required::No
            }
        };
        let min_score = entry
            .get("min_score")
            .and_then(|v| self.unit_number(v, &at.key("min_score")));
        let limits = entry
            .get("limits")
            .map(|v| self.limits(v, &at.key("limits")))
            .unwrap_or_default();
        let config: Map<String, Value> = entry
            .iter()
            .filter(|(k, _)| !HOST_ASSERTION_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let name = match entry.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            Some(Value::Null) | None => {
                let base = auto_name(&kind_name, &config);
                if prefixed {
                    format!("not-{base}")
                } else {
                    base
                }
            }
            Some(other) => {
                self.error(
                    &at.key("name"),
                    format!("assertion `name` must be a string, got {}", kind(other)),
                );
                kind_name.clone()
            }
        };
        let config_json: Arc<str> = Value::Object(config.clone()).to_string().into();
        Some(Assertion {
            name,
            kind: kind_name,
            negate,
            weight,
            required,
            min_score,
            limits,
            config,
            config_json,
            loc: self.loc(at),
            value_pos: entry
                .contains_key("value")
                .then(|| self.map.locate(&at.key("value")))
                .flatten(),
            from_suite,
        })
    }

    fn plugins(&mut self, value: &Value, at: &KeyPath, dir: &Path) -> Vec<PluginRef> {
        let Value::Array(items) = value else {
            self.error(
                at,
                format!(
                    "`plugins` must be a list of {{path, sha256}} entries, got {}",
                    kind(value)
                ),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item_path = at.index(i);
            let (path, sha) = match item {
                Value::String(p) => (Some(p.clone()), None),
                Value::Object(o) => {
                    self.unknown_keys(o, &["path", "sha256"], &item_path, "a plugin entry");
                    let path = o
                        .get("path")
                        .and_then(|v| self.string(v, &item_path.key("path")));
                    let sha = o
                        .get("sha256")
                        .and_then(|v| self.string(v, &item_path.key("sha256")));
                    (path, sha)
                }
                other => {
                    self.error(
                        &item_path,
                        format!(
                            "a plugin entry must be a path or a mapping, got {}",
                            kind(other)
                        ),
                    );
                    continue;
                }
            };
            let Some(path) = path else {
                self.error(&item_path, "the plugin entry has no `path`");
                continue;
            };
            if let Some(sha) = &sha
                && (sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()))
            {
                self.error(
                    &item_path.key("sha256"),
                    "`sha256` must be 64 hexadecimal digits",
                );
            }
            out.push(PluginRef {
                path: dir.join(path),
                sha256: sha.map(|s| s.to_ascii_lowercase()),
                loc: self.loc(&item_path),
            });
        }
        out
    }

    fn limits(&mut self, value: &Value, at: &KeyPath) -> LimitOverrides {
        let Value::Object(o) = value else {
            self.error(
                at,
                format!(
                    "`limits` must be a mapping with `timeout_ms` and/or `memory_mb`, got {}",
                    kind(value)
                ),
            );
            return LimitOverrides::default();
        };
        self.unknown_keys(o, &["timeout_ms", "memory_mb"], at, "`limits`");
        let mut positive = |key: &str| match o.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v > 0) => n.as_u64(),
            Some(other) => {
                self.error(
                    &at.key(key),
                    format!("`{key}` must be a positive integer, got {}", show(other)),
                );
                None
            }
        };
        LimitOverrides {
            timeout_ms: positive("timeout_ms"),
            memory_mb: positive("memory_mb"),
        }
    }

    fn object(
        &mut self,
        parent: &Map<String, Value>,
        key: &str,
        at: &KeyPath,
    ) -> Option<Map<String, Value>> {
        match parent.get(key)? {
            Value::Object(o) => Some(o.clone()),
            Value::Null => None,
            other => {
                self.error(
                    &at.key(key),
                    format!("`{key}` must be a mapping, got {}", kind(other)),
                );
                None
            }
        }
    }

    fn string(&mut self, value: &Value, at: &KeyPath) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => {
                self.error(at, format!("expected a string, got {}", show(other)));
                None
            }
        }
    }

    fn unit_number(&mut self, value: &Value, at: &KeyPath) -> Option<f64> {
        match value {
            Value::Number(n) if n.as_f64().is_some_and(|x| (0.0..=1.0).contains(&x)) => n.as_f64(),
            Value::Null => None,
            other => {
                self.error(
                    at,
                    format!("expected a number between 0 and 1, got {}", show(other)),
                );
                None
            }
        }
    }

    fn messages(&mut self, value: &Value, at: &KeyPath, default_role: &str) -> Vec<Message> {
        match value {
            Value::String(s) => vec![Message::text(default_role, s.clone())],
            Value::Object(o) if o.contains_key("role") => self.message(o, at).into_iter().collect(),
            Value::Object(_) => vec![Message {
                role: default_role.into(),
                content: pretty(value),
                content_json: Some(value.clone()),
            }],
            Value::Array(items) if items.first().is_some_and(|f| f.get("role").is_some()) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| match item {
                    Value::Object(o) => self.message(o, &at.index(i)),
                    other => {
                        self.error(
                            &at.index(i),
                            format!(
                                "a message must be a mapping with `role` and `content`, got {}",
                                kind(other)
                            ),
                        );
                        None
                    }
                })
                .collect(),
            Value::Array(_) => vec![Message {
                role: default_role.into(),
                content: content_text(value),
                content_json: Some(value.clone()),
            }],
            other => {
                self.error(
                    at,
                    format!(
                        "expected a string, a message or a list of messages, got {}",
                        show(other)
                    ),
                );
                Vec::new()
            }
        }
    }

    fn message(&mut self, o: &Map<String, Value>, at: &KeyPath) -> Option<Message> {
        self.unknown_keys(
            o,
            &["role", "content", "name", "tool_calls"],
            at,
            "a message",
        );
        let role = match o.get("role") {
            Some(Value::String(r))
                if ["system", "user", "assistant", "tool"].contains(&r.as_str()) =>
            {
                r.clone()
            }
            other => {
                self.error(
                    &at.key("role"),
                    format!(
                        "`role` must be system, user, assistant or tool, got {}",
                        other.map_or("nothing".into(), show)
                    ),
                );
                return None;
            }
        };
        let content = o.get("content").cloned().unwrap_or(Value::Null);
        Some(match content {
            Value::String(s) => Message::text(&role, s),
            Value::Null if o.contains_key("tool_calls") => Message {
                role,
                content: String::new(),
                content_json: None,
            },
            Value::Null => {
                self.error(at, "the message has no `content`");
                return None;
            }
            other => Message {
                role,
                content: content_text(&other),
                content_json: Some(other),
            },
        })
    }
}

/// AgentV's suite name: the file name without `.eval.yaml`/`.yaml`.
fn suite_name_from_file(file: &Path) -> String {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_lowercase();
    for suffix in [".eval.yaml", ".eval.yml", ".yaml", ".yml"] {
        if lower.ends_with(suffix) {
            return name[..name.len() - suffix.len()].to_owned();
        }
    }
    if name.is_empty() { "eval".into() } else { name }
}

/// AgentV's generated assertion names (§3.2).
fn auto_name(kind_name: &str, config: &Map<String, Value>) -> String {
    let value = config.get("value");
    match (kind_name, value) {
        (
            "contains" | "icontains" | "starts-with" | "ends-with" | "equals",
            Some(Value::String(v)),
        ) => {
            format!("{kind_name}-{v}")
        }
        ("regex", Some(Value::String(v))) => {
            format!("regex-{}", v.chars().take(30).collect::<String>())
        }
        (
            "contains-any" | "contains-all" | "icontains-any" | "icontains-all",
            Some(Value::Array(a)),
        ) => {
            format!("{kind_name}-{}", a.len())
        }
        ("skill-trigger", _) => match config.get("skill") {
            Some(Value::String(s)) => format!("skill-trigger-{s}"),
            _ => kind_name.to_owned(),
        },
        _ => kind_name.to_owned(),
    }
}

/// A JSON type's name, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("string {s:?}"),
        Value::Number(n) => format!("number {n}"),
        Value::Bool(b) => format!("boolean {b}"),
        other => kind(other).to_owned(),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Text of a content value: strings as they are, `text` blocks joined by
/// newlines, file blocks as `<file: path="...">`, other values as JSON.
pub fn content_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block {
                Value::String(s) => s.clone(),
                Value::Object(o) => match (
                    o.get("type").and_then(Value::as_str),
                    o.get("value").or(o.get("text")),
                ) {
                    (Some("text"), Some(Value::String(t))) => t.clone(),
                    (Some("file" | "image"), Some(Value::String(p))) => {
                        format!("<file: path=\"{p}\">")
                    }
                    _ => pretty(block),
                },
                other => pretty(other),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => pretty(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_str(text: &str) -> (Option<Suite>, Diagnostics) {
        let mut diags = Diagnostics::default();
        let suite = parse(Path::new("EVAL.yaml"), text, &mut diags);
        (suite, diags)
    }

    #[test]
    fn suite_assertions_follow_the_tests_own_unless_skip_defaults() {
        let (suite, diags) = load_str(
            "assertions:\n  - type: is_json\ntests:\n  - id: a\n    input: hi\n    assertions:\n      - type: contains\n        value: x\n  - id: b\n    input: hi\n    execution:\n      skip_defaults: true\n    assertions:\n      - type: not-contains\n        value: y\n",
        );
        assert!(!diags.has_errors(), "{diags:?}");
        let suite = suite.unwrap();
        let kinds: Vec<_> = suite.tests[0]
            .assertions
            .iter()
            .map(|a| (a.kind.as_str(), a.negate))
            .collect();
        assert_eq!(kinds, [("contains", false), ("is-json", false)]);
        let b = &suite.tests[1].assertions;
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].kind.as_str(), b[0].negate, b[0].name.as_str()),
            ("contains", true, "not-contains-y")
        );
    }

    #[test]
    fn names_weights_and_strings_follow_agentv() {
        let (suite, diags) = load_str(
            "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: regex\n        value: \"0123456789012345678901234567890123\"\n        weight: 2\n      - Be polite\n      - type: contains_any\n        value: [a, b]\n      - Be brief\n",
        );
        assert!(!diags.has_errors(), "{diags:?}");
        let a = &suite.unwrap().tests[0].assertions;
        assert_eq!(a[0].name, "regex-012345678901234567890123456789");
        assert_eq!(a[0].weight, 2.0);
        assert_eq!((a[1].kind.as_str(), a[1].weight), ("rubrics", 2.0));
        assert_eq!(a[2].name, "contains-any-2");
    }

    #[test]
    fn mistakes_are_all_reported_with_lines() {
        let (_, diags) = load_str(
            "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: contains\n        weight: -1\n  - id: a\n    input: hi\n    asertions: []\n  - input: x\n",
        );
        let errors: Vec<String> = diags.iter().map(ToString::to_string).collect();
        let all = errors.join("\n");
        assert!(
            all.contains("EVAL.yaml:6:9: error: `weight` must be a number ≥ 0, got number -1"),
            "{all}"
        );
        assert!(
            all.contains("duplicate test id `a`: already used by `tests[0]` (line 2)"),
            "{all}"
        );
        assert!(all.contains("warning: unknown key `asertions`"), "{all}");
        assert!(all.contains("did you mean `assertions`?"), "{all}");
        assert!(all.contains("the test case has no `id`"), "{all}");
    }

    #[test]
    fn double_negation_and_bad_types_are_errors() {
        let (_, diags) = load_str(
            "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: not-contains\n        negate: true\n        value: x\n",
        );
        assert!(
            diags.iter().any(|d| d.message.contains("negate it twice")),
            "{diags:?}"
        );
        let (_, diags) = load_str("tests: ./cases.yaml\n");
        assert!(diags.has_errors());
    }

    #[test]
    fn merge_keys_apply() {
        let (suite, diags) = load_str(
            "defaults: &d\n  input: shared\n  assertions: [{type: is-json}]\ntests:\n  - <<: *d\n    id: one\n",
        );
        assert!(!diags.has_errors(), "{diags:?}");
        assert_eq!(suite.unwrap().tests[0].input[0].content, "shared");
    }

    #[test]
    fn suite_names_come_from_the_file() {
        assert_eq!(suite_name_from_file(Path::new("a/EVAL.yaml")), "EVAL");
        assert_eq!(suite_name_from_file(Path::new("foo.eval.yaml")), "foo");
    }
}
