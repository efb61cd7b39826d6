//! The AgentV 5 reader (AgentV's `main` branch, commit `58f316ca`). AgentV 5
//! itself expands `prompts` × `tests[].vars` into AgentV-4-shaped cases
//! (`yaml-parser.ts` `expandPromptMatrix`: each case's `input` is the
//! rendered prompt, a whole-value `{{ input }}` keeping the var's messages)
//! and grades them with the same machinery under new names. This reader
//! does the same: it rewrites the document into AgentV 4's shape —
//! `assert` → `assertions`, `metric` → `name`, `llm-rubric` → `rubrics` /
//! `llm-grader`, `script` → `code-grader` with AgentV 5's stdout protocol,
//! `default_test` → defaults, `providers` → the suite's own targets (from
//! `.agentv/providers.yaml`) — and hands it to the AgentV 4 reader, whose
//! diagnostics still point into the file. What AgentV 5 has and AgentV 4
//! does not (`scenarios`, `defaults`, …)
//! is an error naming its place until it is built.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::diag::{Diagnostic, Diagnostics};
use crate::dialect::{Dialect, ReadOptions};
use crate::model::{InlineTarget, Loc, Suite};
use crate::source_map::{KeyPath, SourceMap};

/// The most cases one suite may expand into.
const MAX_CASES: usize = 1_000_000;

/// Reads the AgentV 5 suite at `path`.
pub(crate) fn read(path: &Path, options: ReadOptions) -> (Option<Suite>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let text = match crate::roots::read_regular_text(path, crate::load::MAX_FILE_BYTES) {
        Ok(t) => t,
        Err(e) => {
            diags.push(Diagnostic::error(
                path,
                format!("cannot read the suite: {e}"),
            ));
            return (None, diags);
        }
    };
    let Ok((Value::Object(root), map)) = crate::yaml::parse_with_positions(&text) else {
        // The AgentV 4 reader reports what is wrong with the YAML.
        return crate::agentv4::read(path, options);
    };
    let mut rw = Rewriter {
        roots: options.roots.clone(),
        diags,
        file: Arc::new(path.to_path_buf()),
        map,
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        env: env_of(&root, options.untrusted),
        inline: Vec::new(),
        rubric_prompt: None,
        grader: None,
    };
    let rewritten = rw.suite(&root);
    let inline = std::mem::take(&mut rw.inline);
    let mut diags = rw.diags;
    let (suite, more) =
        crate::agentv4::read_rewritten(path, options, Some(Value::Object(rewritten)));
    diags.0.extend(more.0);
    let suite = suite.map(|mut s| {
        s.dialect = Dialect::AgentV5;
        s.inline_targets = inline;
        s
    });
    (suite, diags)
}

fn env_of(root: &Map<String, Value>, untrusted: bool) -> Map<String, Value> {
    let mut env: Map<String, Value> = if untrusted {
        Map::new()
    } else {
        std::env::vars()
            .map(|(k, v)| (k, Value::String(v)))
            .collect()
    };
    if let Some(Value::Object(own)) = root.get("env") {
        for (k, v) in own {
            env.insert(
                k.clone(),
                Value::String(v.as_str().map_or_else(|| v.to_string(), str::to_owned)),
            );
        }
    }
    env
}

struct Rewriter {
    /// Which files the suite may read.
    roots: crate::roots::Roots,
    diags: Diagnostics,
    file: Arc<PathBuf>,
    map: SourceMap,
    dir: PathBuf,
    env: Map<String, Value>,
    inline: Vec<InlineTarget>,
    /// `default_test.options.rubric_prompt`: the judge prompt of every
    /// `llm-rubric` (and plain-string criteria) without its own.
    rubric_prompt: Option<String>,
    /// `default_test.options.provider`, else `defaults.grader`: the judge
    /// of every model-graded assertion without its own `provider`.
    grader: Option<String>,
}

/// Top-level keys the rewrite reads; the rest are refused or warned about.
const READ: &[&str] = &[
    "name",
    "description",
    "prompts",
    "providers",
    "tests",
    "assert",
    "default_test",
    "tags",
    "metadata",
    "env",
    "evaluate_options",
    "threshold",
    "version",
    "governance",
];

impl Rewriter {
    fn error(&mut self, at: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::error(&self.file, message)
            .at(self.map.locate(at))
            .key(at.clone());
        self.diags.push(d);
        self.diags.0.last_mut().expect("just pushed")
    }

    fn warning(&mut self, at: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::warning(&self.file, message)
            .at(self.map.locate(at))
            .key(at.clone());
        self.diags.push(d);
        self.diags.0.last_mut().expect("just pushed")
    }

    fn loc(&self, at: &KeyPath) -> Loc {
        Loc {
            file: self.file.clone(),
            pos: self.map.locate(at),
            key: at.clone(),
        }
    }

    fn suite(&mut self, root: &Map<String, Value>) -> Map<String, Value> {
        let top = KeyPath::default();
        let mut out = Map::new();
        let mut extensions: Vec<(&'static str, String)> = Vec::new();
        for (key, value) in root {
            if READ.contains(&key.as_str()) {
                continue;
            }
            match key.as_str() {
                "environment" => {
                    if let Some(ws) = self.environment(value, &top.key(key)) {
                        out.insert("workspace".into(), ws);
                    }
                }
                "extensions" => {
                    extensions = self.extensions(value, &top.key(key));
                }
                "scenarios" | "defaults" => {}
                "derived_metrics" | "nunjucks_filters" => {
                    self.error(
                        &top.key(key),
                        format!("`{key}` (AgentV 5) is not read by this version of evalhost"),
                    )
                    .hint = Some("it is part of the AgentV 5 dialect still being built".into());
                }
                // AgentV 4 shapes AgentV 5 removed (reference §1.1): its
                // loader refuses them, or (top-level `assertions`) ignores
                // them; evalhost says which, so no score changes quietly.
                "assertions" => {
                    self.warning(&top.key(key), "a top-level `assertions` is ignored: AgentV 5's loader never reads it (its validator refuses it)")
                        .hint = Some("AgentV 5 names it `assert`".into());
                }
                "execution" => {
                    self.error(&top.key(key), "Top-level 'execution' has been removed in AgentV 5")
                        .hint = Some("`threshold` goes top-level, `workers` → `evaluate_options.max_concurrency`, `budget_usd` and `cache` → `evaluate_options`, `target(s)` → `providers`, `assertions` → `assert`".into());
                }
                "target" | "targets" => {
                    self.error(
                        &top.key(key),
                        format!("Top-level '{key}' has been removed. Use top-level 'providers'"),
                    );
                }
                "input" | "input_files" | "expected_output" => {
                    self.error(&top.key(key), format!("Top-level '{key}' has been removed from authored eval YAML"))
                        .hint = Some("author the prompt in top-level `prompts` and put data in `default_test.vars` or `tests[].vars`".into());
                }
                "eval_cases"
                | "evalcases"
                | "repeat"
                | "runs"
                | "early_exit"
                | "budget_usd"
                | "experiment"
                | "policy"
                | "model"
                | "graders"
                | "imports"
                | "on_run_complete"
                | "workers"
                | "providerPromptMap"
                | "provider_prompt_map"
                | "preprocessors"
                | "postprocess" => {
                    self.error(&top.key(key), format!("top-level `{key}` is not part of AgentV 5's eval YAML (its loader refuses it)"));
                }
                "output_path" | "timeout_seconds" => {
                    self.warning(
                        &top.key(key),
                        format!("`{key}` is ignored by this version of evalhost"),
                    );
                }
                _ => {
                    // AgentV 4 keys AgentV 5 removed are reported by the
                    // AgentV 4 reader in context; pass them through.
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        if !extensions.is_empty() {
            match out.get_mut("workspace") {
                Some(Value::Object(ws)) => self.attach_extensions(ws, extensions),
                _ => {
                    self.warning(
                        &top.key("extensions"),
                        "`extensions` run only where there is a workspace; without an `environment` AgentV 5 skips them, and so does evalhost",
                    );
                }
            }
        }
        // AgentV 5's `tags:` map names the suite (promptfoo's shape); a list
        // selects, as in AgentV 4.
        if let Some(Value::Object(tags)) = root.get("tags") {
            let mut meta = match root.get("metadata") {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            meta.insert("tags".into(), Value::Object(tags.clone()));
            out.insert("metadata".into(), Value::Object(meta));
        }
        for key in ["name", "description", "tags", "metadata", "governance"] {
            if key == "tags" && root.get("tags").is_some_and(Value::is_object) {
                continue;
            }
            if key == "metadata" && out.contains_key("metadata") {
                continue;
            }
            if let Some(v) = root.get(key) {
                out.insert(key.into(), v.clone());
            }
        }
        let mut execution = Map::new();
        if let Some(Value::Object(opts)) = root.get("evaluate_options") {
            for (k, v) in opts {
                match k.as_str() {
                    "max_concurrency" => {
                        execution.insert("workers".into(), v.clone());
                    }
                    "budget_usd" | "cache" => {
                        execution.insert(k.clone(), v.clone());
                    }
                    // AgentV 5's `repeat: N`: N samples, the best scoring
                    // (`pass_any`, AgentV 4's `pass_at_k`).
                    "repeat" => {
                        match v.as_u64() {
                            Some(n) if n >= 1 => {
                                execution.insert(
                                    "trials".into(),
                                    json!({"count": n, "strategy": "pass_at_k"}),
                                );
                            }
                            _ => {
                                self.error(
                                &top.key("evaluate_options").key("repeat"),
                                format!("`evaluate_options.repeat` must be a positive integer, got {v}"),
                            );
                            }
                        }
                    }
                    other => {
                        self.warning(
                            &top.key("evaluate_options").key(other),
                            format!(
                                "`evaluate_options.{other}` is ignored by this version of evalhost"
                            ),
                        );
                    }
                }
            }
        }
        // The providers: labels from the catalog, or objects.
        let labels = self.providers(root.get("providers"), &top.key("providers"));
        match labels.as_slice() {
            [] => {}
            [one] => {
                execution.insert("target".into(), Value::String(one.clone()));
            }
            many => {
                execution.insert(
                    "targets".into(),
                    Value::Array(many.iter().cloned().map(Value::String).collect()),
                );
            }
        }
        // Defaults: vars go into each test; assertions after the test's
        // own (the test's, then `default_test.assert`, then `assert`).
        let mut default_vars = Map::new();
        let mut default_metadata = Map::new();
        let mut suite_assert = Vec::new();
        let default_test = match root.get("default_test") {
            Some(Value::String(spec)) => self.default_test_file(spec, &top.key("default_test")),
            Some(Value::Object(d)) => Some(d.clone()),
            None | Some(Value::Null) => None,
            Some(other) => {
                self.error(
                    &top.key("default_test"),
                    format!(
                        "`default_test` must be a mapping or file://…, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                None
            }
        };
        self.defaults(root.get("defaults"), &top.key("defaults"), &mut execution);
        if let Some(d) = &default_test {
            let dat = top.key("default_test");
            if let Some(o) = d.get("options") {
                self.default_options(o, &dat.key("options"));
            }
            if let Some(Value::Object(v)) = d.get("vars") {
                default_vars = v.clone();
            }
            if let Some(Value::Array(a)) = d.get("assert") {
                for (i, item) in a.iter().enumerate() {
                    let a = self.assertion(item, &dat.key("assert").index(i));
                    if !a.is_null() {
                        suite_assert.push(a);
                    }
                }
            }
            if let Some(t) = d.get("threshold") {
                execution.insert("threshold".into(), t.clone());
            }
            for key in d.keys().filter(|k| {
                !matches!(
                    k.as_str(),
                    "vars" | "assert" | "threshold" | "options" | "metadata"
                )
            }) {
                self.error(
                    &dat.key(key),
                    format!("`default_test.{key}` is not read by this version of evalhost"),
                );
            }
            if let Some(Value::Object(m)) = d.get("metadata") {
                default_metadata = m.clone();
            }
        }
        if let Some(Value::Array(a)) = root.get("assert") {
            for (i, item) in a.iter().enumerate() {
                let a = self.assertion(item, &top.key("assert").index(i));
                if !a.is_null() {
                    suite_assert.push(a);
                }
            }
        }
        if root.contains_key("threshold") {
            self.warning(
                &top.key("threshold"),
                "the top-level `threshold` is AgentV 5's gate on the whole suite, which this version of evalhost does not apply; each test still passes at 0.8 (or its own threshold)",
            );
        }
        let suite_assert = self.group_criteria(suite_assert);
        if !suite_assert.is_empty() {
            out.insert("assertions".into(), Value::Array(suite_assert));
        }
        if !execution.is_empty() {
            out.insert("execution".into(), Value::Object(execution));
        }
        let prompts = self.prompts(root.get("prompts"), &top.key("prompts"));
        let scenario_rows = match root.get("scenarios") {
            Some(v) => self.scenarios(v, &top.key("scenarios")),
            None => Vec::new(),
        };
        let mut tests = self.tests(
            root.get("tests"),
            &top.key("tests"),
            &prompts,
            &default_vars,
            scenario_rows,
        );
        if !default_metadata.is_empty()
            && let Value::Array(cases) = &mut tests
        {
            for case in cases.iter_mut().filter_map(Value::as_object_mut) {
                let mut m = default_metadata.clone();
                if let Some(Value::Object(own)) = case.get("metadata") {
                    m.extend(own.clone());
                }
                case.insert("metadata".into(), Value::Object(m));
            }
        }
        out.insert("tests".into(), tests);
        out
    }

    /// A YAML/JSON file the suite names (`file://…`), inside the project
    /// root, parsed.
    fn yaml_file(&mut self, spec: &str, at: &KeyPath, what: &str) -> Option<(PathBuf, Value)> {
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
        let text = match crate::roots::read_regular_text(&path, crate::load::MAX_FILE_BYTES) {
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
    fn default_test_file(&mut self, spec: &str, at: &KeyPath) -> Option<Map<String, Value>> {
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
    fn defaults(
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
    fn default_options(&mut self, value: &Value, at: &KeyPath) {
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
    fn group_criteria(&self, list: Vec<Value>) -> Vec<Value> {
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

    /// `environment: file://recipe.yaml`: the recipe, its relative
    /// `workdir` taken from the recipe's own directory.
    fn environment_file(&mut self, spec: &str, at: &KeyPath) -> Option<Map<String, Value>> {
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

    /// The files a path or glob names, below the suite's directory and
    /// inside the project root, sorted.
    fn glob(&mut self, spec: &str, at: &KeyPath) -> Vec<PathBuf> {
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

    /// `scenarios` lowered into tests as AgentV 5 does
    /// (`lowerScenariosIntoTests`): each `config` row with each of the
    /// scenario's `tests`, vars/metadata/options/run merged (the test's
    /// win), the config row's `assert` first.
    fn scenarios(&mut self, value: &Value, at: &KeyPath) -> Vec<Value> {
        let Value::Array(items) = value else {
            self.error(at, "scenarios must be an array.");
            return Vec::new();
        };
        // `file://…` entries (globs allowed) hold a list of scenarios, or
        // `{scenarios: [...]}`.
        let mut scenarios: Vec<(Value, KeyPath)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let iat = at.index(i);
            match item {
                Value::String(spec) if spec.starts_with("file://") => {
                    for file in self.glob(&spec["file://".len()..], &iat) {
                        let shown = file.display().to_string();
                        let Some((_, v)) = self.yaml_file(&shown, &iat, "scenario file") else {
                            continue;
                        };
                        let list = match v {
                            Value::Array(a) => a,
                            Value::Object(mut o) => match o.remove("scenarios") {
                                Some(Value::Array(a)) => a,
                                _ => {
                                    self.error(&iat, format!("External scenario file must contain a scenario array or an object with a scenarios array: {shown}"));
                                    continue;
                                }
                            },
                            Value::Null => Vec::new(),
                            _ => {
                                self.error(&iat, format!("External scenario file must contain a scenario array or an object with a scenarios array: {shown}"));
                                continue;
                            }
                        };
                        scenarios.extend(list.into_iter().map(|s| (s, iat.clone())));
                    }
                }
                other => scenarios.push((other.clone(), iat)),
            }
        }
        let mut out = Vec::new();
        for (si, (scenario, sat)) in scenarios.iter().enumerate() {
            let Value::Object(sc) = scenario else {
                self.error(sat, format!("scenarios[{si}] must be an object."));
                continue;
            };
            let (Some(Value::Array(configs)), Some(Value::Array(tests))) =
                (sc.get("config"), sc.get("tests"))
            else {
                self.error(
                    sat,
                    format!("scenarios[{si}] needs `config` and `tests`, each an array."),
                );
                continue;
            };
            for (ci, config) in configs.iter().enumerate() {
                let Value::Object(config) = config else {
                    self.error(
                        sat,
                        format!("scenarios[{si}].config[{ci}] must be an object."),
                    );
                    continue;
                };
                for (ti, test) in tests.iter().enumerate() {
                    let Value::Object(test) = test else {
                        self.error(
                            sat,
                            format!("scenarios[{si}].tests[{ti}] must be an object."),
                        );
                        continue;
                    };
                    out.push(Value::Object(merge_scenario_row(
                        config,
                        test,
                        (si, ci, ti),
                        tests.len(),
                    )));
                }
            }
        }
        out
    }

    /// AgentV 5's CSV test file (`parseCsvCases`).
    fn csv_tests(&mut self, text: &str, path: &Path, at: &KeyPath) -> Vec<Value> {
        let records = match crate::csv::parse_csv(text) {
            Ok(r) => r,
            Err(e) => {
                self.error(at, format!("{}: {e}", path.display()));
                return Vec::new();
            }
        };
        let Some((header, body)) = records.split_first() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (row_index, record) in body.iter().enumerate() {
            let mut vars = Map::new();
            let mut metadata = Map::new();
            let mut asserts: Vec<Map<String, Value>> = Vec::new();
            let mut configs: Vec<(usize, f64)> = Vec::new();
            let (mut id, mut input, mut prefix, mut suffix) =
                (None, None, String::new(), String::new());
            let (mut criteria, mut metric, mut threshold) = (None, None, None);
            for (name, cell) in header
                .iter()
                .zip(record.iter().chain(std::iter::repeat(&String::new())))
            {
                let key = name.trim();
                if key.is_empty() {
                    continue;
                }
                match key {
                    "id" => id = Some(cell.clone()),
                    "input" => input = Some(cell.clone()),
                    "__prefix" => prefix = cell.clone(),
                    "__suffix" => suffix = cell.clone(),
                    "__description" => criteria = Some(cell.clone()),
                    "__metric" => metric = Some(cell.clone()).filter(|m| !m.is_empty()),
                    "__threshold" => {
                        threshold = cell.trim().parse::<f64>().ok().filter(|t| t.is_finite())
                    }
                    "__provider_output" | "__providerOutput" => {
                        self.error(at, format!("{key} has been removed from CSV imports. Use an explicit deterministic target such as provider: cli for fixed outputs, or use a replay/fixture target for captured provider responses."));
                    }
                    k if k.starts_with("__expected") => {
                        if !cell.trim().is_empty() {
                            match csv_assertion(cell.trim(), path) {
                                Ok(a) => asserts.push(a),
                                Err(e) => {
                                    self.error(
                                        at,
                                        format!("{}: row {}: {e}", path.display(), row_index + 2),
                                    );
                                }
                            }
                        }
                    }
                    k if k.starts_with("__metadata:") => {
                        let mk = &k["__metadata:".len()..];
                        if !cell.trim().is_empty() {
                            match mk.strip_suffix("[]") {
                                Some(list_key) => {
                                    let items: Vec<Value> = split_unescaped_commas(cell)
                                        .into_iter()
                                        .filter(|s| !s.is_empty())
                                        .map(Value::String)
                                        .collect();
                                    metadata.insert(list_key.to_owned(), Value::Array(items));
                                }
                                None => {
                                    metadata.insert(mk.to_owned(), Value::String(cell.clone()));
                                }
                            }
                        }
                    }
                    k if k.starts_with("__config:") => {
                        let rest = &k["__config:".len()..];
                        let (expected_key, config_key) = rest.split_once(':').unwrap_or((rest, ""));
                        if config_key != "threshold" {
                            self.error(
                                at,
                                format!(
                                    "Invalid config key \"{config_key}\" in __config column: {}",
                                    path.display()
                                ),
                            );
                            continue;
                        }
                        let index = if expected_key == "__expected" {
                            Some(0)
                        } else {
                            expected_key
                                .strip_prefix("__expected")
                                .and_then(|n| n.parse::<usize>().ok())
                                .and_then(|n| n.checked_sub(1))
                        };
                        let Some(index) = index else {
                            self.error(at, format!("Invalid expected key \"{expected_key}\" in __config column: {}", path.display()));
                            continue;
                        };
                        match cell.trim().parse::<f64>() {
                            Ok(t) if t.is_finite() => configs.push((index, t)),
                            _ => {
                                self.error(at, format!("Invalid numeric value for threshold in __config column: {}", path.display()));
                            }
                        }
                    }
                    k => assign_csv_var(&mut vars, k, cell),
                }
            }
            let n = asserts.len();
            for (i, a) in asserts.iter_mut().enumerate() {
                if let Some(m) = &metric {
                    let name = if n == 1 {
                        m.clone()
                    } else {
                        format!("{m}-{}", i + 1)
                    };
                    a.insert("metric".into(), Value::String(name));
                }
                if let Some((_, t)) = configs.iter().rev().find(|(ix, _)| *ix == i) {
                    a.insert("min_score".into(), json!(t));
                    metadata.insert("threshold".into(), json!(t));
                }
            }
            let mut test = Map::new();
            test.insert(
                "id".into(),
                Value::String(
                    id.filter(|s| !s.trim().is_empty())
                        .unwrap_or_else(|| format!("row-{}", row_index + 1)),
                ),
            );
            if let Some(i) = input {
                test.insert(
                    "input".into(),
                    Value::String(format!("{prefix}{i}{suffix}")),
                );
            }
            if let Some(c) = criteria.filter(|c| !c.is_empty()) {
                test.insert("criteria".into(), Value::String(c));
            }
            if !asserts.is_empty() {
                test.insert(
                    "assert".into(),
                    Value::Array(asserts.into_iter().map(Value::Object).collect()),
                );
            }
            if let Some(t) = threshold {
                test.insert("run".into(), json!({ "threshold": t }));
            }
            if !vars.is_empty() {
                test.insert("vars".into(), Value::Object(vars));
            }
            if !metadata.is_empty() {
                test.insert("metadata".into(), Value::Object(metadata));
            }
            out.push(Value::Object(test));
        }
        out
    }

    /// A prompt file's text (CRLF → LF), inside the project root.
    fn prompt_file(&mut self, rel: &str, at: &KeyPath) -> Option<String> {
        let path = match self.roots.relative(rel, &self.dir.clone()) {
            Ok(p) => p,
            Err(e) => {
                self.error(at, format!("Prompt file `{rel}`: {e}"));
                return None;
            }
        };
        match crate::roots::read_regular_text(&path, crate::load::MAX_FILE_BYTES) {
            Ok(t) => Some(t.replace("\r\n", "\n")),
            Err(e) => {
                self.error(
                    at,
                    format!("Prompt file `{rel}`: cannot read {}: {e}", path.display()),
                );
                None
            }
        }
    }

    /// `extensions`: lifecycle hooks, each a shell snippet for its slot
    /// (`before_all`, …). `file://hook.mjs:beforeAll` runs the module's
    /// function with AgentV 5's hook context (`node`, or `bun` for
    /// TypeScript, as AgentV imports it); `agentv:agent-rules` stages the
    /// configured skills, hooks, agents and rules into the workspace
    /// (`.agentv/agent-rules/<kind>/`) and prints the paths it found, as
    /// AgentV 5's built-in extension does.
    fn extensions(&mut self, value: &Value, at: &KeyPath) -> Vec<(&'static str, String)> {
        let Value::Array(items) = value else {
            self.error(at, "`extensions` must be a list");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = at.index(i);
            match item {
                Value::String(s) if s == "agentv:agent-rules" => {
                    out.push(("before_all", self.agent_rules(&Map::new(), &at)));
                }
                Value::String(s) if s.starts_with("agentv:agent-rules:") => {
                    let hook = &s["agentv:agent-rules:".len()..];
                    if let Some(slot) = self.hook_slot(hook, &at) {
                        out.push((slot, self.agent_rules(&Map::new(), &at)));
                    }
                }
                Value::String(s) if s.starts_with("file://") => {
                    let spec = &s["file://".len()..];
                    let Some((file, hook)) = spec.rsplit_once(':').filter(|(f, _)| !f.is_empty())
                    else {
                        self.error(
                            &at,
                            format!("`{s}` must be of the form file://path/to/hook.ts:beforeAll"),
                        );
                        continue;
                    };
                    let Some(slot) = self.hook_slot(hook, &at) else {
                        continue;
                    };
                    let path = match self.roots.relative(file, &self.dir.clone()) {
                        Ok(p) => p,
                        Err(e) => {
                            self.error(&at, format!("`{s}`: {e}"));
                            continue;
                        }
                    };
                    let runtime = if file.ends_with(".ts") || file.ends_with(".mts") {
                        "bun"
                    } else {
                        "node"
                    };
                    let dir = self.abs_dir().display().to_string();
                    let snippet = format!(
                        "printf '%s' \"$ctx\" | (cd {d} && exec {runtime} -e {w} {f} {h} {h} {d})",
                        d = shell_quote(&dir),
                        w = shell_quote(EXTENSION_WRAPPER),
                        f = shell_quote(&path.display().to_string()),
                        h = shell_quote(hook),
                    );
                    out.push((slot, snippet));
                }
                Value::String(s) => {
                    self.error(
                        &at,
                        format!(
                            "`{s}`: an extension must start with file:// or agentv:agent-rules"
                        ),
                    );
                }
                Value::Object(o) => {
                    if o.get("id").and_then(Value::as_str) != Some("agentv:agent-rules") {
                        self.error(
                            &at.key("id"),
                            "an extension object's `id` must be agentv:agent-rules",
                        );
                        continue;
                    }
                    let slot = match o.get("hook") {
                        None | Some(Value::Null) => Some("before_all"),
                        Some(Value::String(h)) => self.hook_slot(h, &at.key("hook")),
                        Some(_) => self.hook_slot("", &at.key("hook")),
                    };
                    let source = match o.get("config") {
                        Some(Value::Object(c)) => c.clone(),
                        _ => o.clone(),
                    };
                    if let Some(slot) = slot {
                        out.push((slot, self.agent_rules(&source, &at)));
                    }
                }
                _ => {
                    self.error(&at, "an extension must be a string or an object");
                }
            }
        }
        out
    }

    /// The suite's directory, absolute.
    fn abs_dir(&self) -> PathBuf {
        let dir = if self.dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.dir
        };
        dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
    }

    fn hook_slot(&mut self, hook: &str, at: &KeyPath) -> Option<&'static str> {
        match hook {
            "beforeAll" => Some("before_all"),
            "beforeEach" => Some("before_each"),
            "afterEach" => Some("after_each"),
            "afterAll" => Some("after_all"),
            other => {
                self.error(
                    at,
                    format!(
                        "`{other}` is not a hook: beforeAll, beforeEach, afterEach or afterAll"
                    ),
                );
                None
            }
        }
    }

    /// AgentV 5's `agentv:agent-rules` as a shell snippet (the workspace
    /// is `$1`).
    fn agent_rules(&mut self, config: &Map<String, Value>, at: &KeyPath) -> String {
        const KINDS: &[(&str, &[&str])] = &[
            (
                "skills",
                &[
                    ".claude/skills",
                    ".agents/skills",
                    ".codex/skills",
                    ".pi/skills",
                    "skills",
                ],
            ),
            (
                "hooks",
                &[
                    ".claude/hooks",
                    ".agents/hooks",
                    ".codex/hooks",
                    ".pi/hooks",
                    "hooks",
                ],
            ),
            ("agents", &[".agents/agents", ".codex/agents", "agents"]),
            ("rules", &["AGENTS.md", "CLAUDE.md", "rules"]),
        ];
        let mut script = String::from("(ws=\"$1\"");
        for (kind, discover) in KINDS {
            let configured: Vec<String> = match config.get(*kind) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                Some(_) => {
                    self.error(
                        &at.key(kind),
                        format!("`{kind}` must be a string or a list of strings"),
                    );
                    Vec::new()
                }
            };
            if configured.is_empty() {
                for d in *discover {
                    script += &format!(
                        "; [ -e \"$ws\"/{p} ] && echo \"{kind}: $ws/\"{p}",
                        p = shell_quote(d)
                    );
                }
                continue;
            }
            for entry in configured {
                let source = match self.roots.relative(&entry, &self.dir.clone()) {
                    Ok(p) => p,
                    Err(e) => {
                        self.error(
                            &at.key(kind),
                            format!("agentv:agent-rules {kind} path `{entry}`: {e}"),
                        );
                        continue;
                    }
                };
                let name = source
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                script += &format!(
                    "; mkdir -p \"$ws\"/.agentv/agent-rules/{kind} && cp -R {src} \"$ws\"/.agentv/agent-rules/{kind}/{n} && echo \"{kind}: $ws/.agentv/agent-rules/{kind}/\"{n}",
                    src = shell_quote(&source.display().to_string()),
                    n = shell_quote(&name),
                );
            }
        }
        script += "; true)";
        script
    }

    /// The extensions' snippets and the setup hook as one hook per slot:
    /// AgentV 5 runs a slot's extensions before the suite's own hook.
    fn attach_extensions(
        &mut self,
        ws: &mut Map<String, Value>,
        extensions: Vec<(&'static str, String)>,
    ) {
        let mut hooks = match ws.remove("hooks") {
            Some(Value::Object(h)) => h,
            _ => Map::new(),
        };
        for slot in ["before_all", "before_each", "after_each", "after_all"] {
            let mut parts: Vec<String> = extensions
                .iter()
                .filter(|(s, _)| *s == slot)
                .map(|(_, snippet)| snippet.clone())
                .collect();
            if parts.is_empty() {
                continue;
            }
            let mut timeout = None;
            if let Some(Value::Object(h)) = hooks.remove(slot) {
                timeout = h.get("timeout_ms").cloned();
                let cwd = match h.get("cwd").and_then(Value::as_str) {
                    Some(c) => self.abs_dir().join(c),
                    None => self.abs_dir(),
                };
                let run = match h.get("command") {
                    Some(Value::Array(argv)) => format!(
                        "exec {}",
                        argv.iter()
                            .map(|a| shell_quote(
                                &a.as_str().map_or_else(|| a.to_string(), str::to_owned)
                            ))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                    Some(Value::String(line)) => format!("exec sh -c {}", shell_quote(line)),
                    _ => "true".into(),
                };
                parts.push(format!(
                    "printf '%s' \"$ctx\" | (cd {} && {run})",
                    shell_quote(&cwd.display().to_string())
                ));
            }
            let script = format!(
                "ctx=$(cat); {}",
                parts
                    .iter()
                    .map(|p| format!("{p} || exit $?"))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            let mut hook = Map::new();
            hook.insert(
                "command".into(),
                json!(["sh", "-c", script, "sh", "{{workspace_path}}"]),
            );
            hook.insert(
                "cwd".into(),
                Value::String(self.abs_dir().display().to_string()),
            );
            if let Some(t) = timeout {
                hook.insert("timeout_ms".into(), t);
            }
            hooks.insert(slot.into(), Value::Object(hook));
        }
        ws.insert("hooks".into(), Value::Object(hooks));
    }

    /// `environment: {type: host, workdir, setup}` as AgentV 5 prepares it
    /// (`environment/host.ts`): the workdir itself is the workspace (made
    /// when missing) and `setup` runs once before the tests — an AgentV 4
    /// static workspace with a `before_all` hook. `type: docker` stays a
    /// warning, as Docker workspaces do.
    fn environment(&mut self, value: &Value, at: &KeyPath) -> Option<Value> {
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
            "docker" => {
                self.warning(at, "a docker `environment` is ignored: containers are not supported by this version");
                return None;
            }
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

    /// A judge named by its label: its catalog entry becomes a target
    /// (once), as the providers' do.
    fn catalog_target(&mut self, label: &str, at: &KeyPath) {
        let known = self
            .inline
            .iter()
            .any(|t| t.entry.get("name").and_then(Value::as_str) == Some(label));
        if !known {
            self.providers(Some(&Value::String(label.to_owned())), at);
        }
    }

    /// `providers`: each a label in `.agentv/providers.yaml` (walking up),
    /// or an object; returns the labels.
    fn providers(&mut self, value: Option<&Value>, at: &KeyPath) -> Vec<String> {
        let items: Vec<(Value, KeyPath)> = match value {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), at.index(i)))
                .collect(),
            Some(v) => vec![(v.clone(), at.clone())],
        };
        let catalog = self.catalog();
        let mut labels = Vec::new();
        for (item, iat) in items {
            match item {
                Value::String(label) => {
                    if let Some(entry) = catalog
                        .iter()
                        .find(|e| entry_label(e).as_deref() == Some(label.as_str()))
                    {
                        if let Some(t) = self.target(entry, &iat)
                            && !self
                                .inline
                                .iter()
                                .any(|k| k.entry.get("name") == t.entry.get("name"))
                        {
                            self.inline.push(t);
                        }
                    } else if label == "echo" {
                        // promptfoo's offline provider, which AgentV 5 reads too.
                        let mut entry = Map::new();
                        entry.insert("name".into(), "echo".into());
                        entry.insert("provider".into(), "echo".into());
                        self.inline.push(InlineTarget {
                            entry,
                            loc: self.loc(&iat),
                        });
                    } else if label.contains(':') {
                        self.error(&iat, format!("the provider `{label}` is a promptfoo-style id, which this version of evalhost reads only in promptfoo configs"));
                    }
                    // Otherwise the name is looked up in a targets file, as
                    // an AgentV 4 target (a run says when it is missing).
                    labels.push(label);
                }
                Value::Object(o) => {
                    let label = entry_label(&o).unwrap_or_default();
                    if let Some(t) = self.target(&o, &iat) {
                        self.inline.push(t);
                    }
                    labels.push(label);
                }
                other => {
                    self.error(
                        &iat,
                        format!(
                            "a provider must be a label or an object, got {}",
                            crate::agentv4::kind(&other)
                        ),
                    );
                }
            }
        }
        labels
    }

    /// `.agentv/providers.yaml` found walking up from the suite: a bare
    /// list, or `{providers: [...]}`.
    fn catalog(&mut self) -> Vec<Map<String, Value>> {
        let root = self.roots.project_root.clone();
        // A suite named by a bare file name has the directory `""`, which
        // canonicalizes to nothing: start from the current directory then.
        let start = if self.dir.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            self.dir.as_path()
        };
        let dir = start
            .canonicalize()
            .or_else(|_| std::path::absolute(start))
            .unwrap_or_else(|_| self.dir.clone());
        let root = root.canonicalize().unwrap_or(root);
        for dir in dir.ancestors().take_while(|d| d.starts_with(&root)) {
            let file = dir.join(".agentv/providers.yaml");
            if !file.exists() {
                continue;
            }
            let Ok(text) = crate::roots::read_regular_text(&file, crate::load::MAX_FILE_BYTES)
            else {
                continue;
            };
            let items = match crate::yaml::parse(&text) {
                Ok(Value::Array(items)) => items,
                Ok(Value::Object(o)) => match o.get("providers") {
                    Some(Value::Array(items)) => items.clone(),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            return items
                .into_iter()
                .filter_map(|v| v.as_object().cloned())
                .collect();
        }
        Vec::new()
    }

    /// A provider entry (`{id: <kind>, label, config | settings}`) as a
    /// targets-file entry.
    fn target(&mut self, entry: &Map<String, Value>, at: &KeyPath) -> Option<InlineTarget> {
        let label = entry_label(entry)?;
        let kind = entry
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut out = Map::new();
        out.insert("name".into(), Value::String(label));
        out.insert("provider".into(), Value::String(kind.clone()));
        let render = |v: &Value, env: &Map<String, Value>| -> Value {
            match v {
                Value::String(s) => Value::String(render_env(s, env)),
                other => other.clone(),
            }
        };
        for (k, v) in entry {
            match k.as_str() {
                "id" | "label" | "runtime" | "healthcheck" => {}
                "config" => {
                    if let Value::Object(c) = v {
                        for (ck, cv) in c {
                            let key = if ck == "api_format" {
                                continue;
                            } else {
                                ck.clone()
                            };
                            out.insert(key, render(cv, &self.env));
                        }
                    }
                }
                _ => {
                    out.insert(k.clone(), render(v, &self.env));
                }
            }
        }
        let _ = at;
        Some(InlineTarget {
            entry: out,
            loc: self.loc(at),
        })
    }

    fn prompts(&mut self, value: Option<&Value>, at: &KeyPath) -> Vec<(String, Value)> {
        let items: Vec<Value> = match value {
            None | Some(Value::Null) => {
                return vec![("default".into(), Value::String("{{ input }}".into()))];
            }
            Some(Value::Array(items)) if items.iter().all(|i| i.get("role").is_some()) => {
                vec![Value::Array(items.clone())]
            }
            Some(Value::Array(items)) => items.clone(),
            Some(v) => vec![v.clone()],
        };
        let mut out = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            let iat = at.index(i);
            let (id, template) = match item {
                Value::String(s) if s.starts_with("file://") => {
                    // AgentV 5's `readPromptFile`: the file's text is the
                    // template, its path the id.
                    let shown = s["file://".len()..].to_owned();
                    let Some(text) = self.prompt_file(&shown, &iat) else {
                        continue;
                    };
                    (shown, Value::String(text))
                }
                Value::String(s) => (format!("prompt-{}", i + 1), Value::String(s)),
                Value::Array(messages) => (format!("chat-{}", i + 1), Value::Array(messages)),
                Value::Object(o) => {
                    let id = o
                        .get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("prompt-{}", i + 1), str::to_owned);
                    if let Some(Value::String(file)) = o.get("file") {
                        let shown = file.strip_prefix("file://").unwrap_or(file).to_owned();
                        let Some(text) = self.prompt_file(&shown, &iat) else {
                            continue;
                        };
                        let id = o
                            .get("id")
                            .and_then(Value::as_str)
                            .map_or_else(|| shown.clone(), str::to_owned);
                        out.push((id, Value::String(text)));
                        continue;
                    }
                    if o.contains_key("function")
                        || o.contains_key("function_file")
                        || o.contains_key("command")
                    {
                        self.error(&iat, "a prompt computed by a function or command is not run by this version of evalhost; write the prompt, or point `file:` at its text");
                        continue;
                    }
                    match o.get("prompt").or(o.get("raw")).or(o.get("messages")) {
                        Some(p) => (id, p.clone()),
                        None => {
                            self.error(&iat, "a prompt object needs `prompt`, `raw` or `messages`");
                            continue;
                        }
                    }
                }
                other => {
                    self.error(
                        &iat,
                        format!(
                            "a prompt must be text, a chat message list or an object, got {}",
                            crate::agentv4::kind(&other)
                        ),
                    );
                    continue;
                }
            };
            out.push((id, template));
        }
        out
    }

    fn tests(
        &mut self,
        value: Option<&Value>,
        at: &KeyPath,
        prompts: &[(String, Value)],
        default_vars: &Map<String, Value>,
        scenario_rows: Vec<Value>,
    ) -> Value {
        // Tests from files are expanded like inline ones.
        let mut inlined;
        let tests = match value {
            Some(Value::Array(items)) => {
                let mut all = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(spec) => all.extend(
                            self.test_file(spec, &at.index(i))
                                .into_iter()
                                .map(from_file),
                        ),
                        other => all.push(other.clone()),
                    }
                }
                inlined = all;
                &inlined
            }
            Some(Value::String(spec)) => {
                inlined = self
                    .test_file(spec, at)
                    .into_iter()
                    .map(from_file)
                    .collect();
                &inlined
            }
            None | Some(Value::Null) if !scenario_rows.is_empty() => {
                inlined = Vec::new();
                &inlined
            }
            // Nothing: the AgentV 4 reader reports it.
            _ => return value.cloned().unwrap_or(Value::Null),
        };
        let tests: &Vec<Value> = if scenario_rows.is_empty() {
            tests
        } else {
            inlined = tests.iter().cloned().chain(scenario_rows).collect();
            &inlined
        };
        let mut out = Vec::new();
        for (i, test) in tests.iter().enumerate() {
            let tat = at.index(i);
            let Value::Object(t) = test else {
                out.push(test.clone());
                continue;
            };
            let mut vars = default_vars.clone();
            if let Some(Value::Object(v)) = t.get("vars") {
                vars.extend(v.clone());
            }
            let Some(combos) =
                expand(&vars).filter(|c| c.len().saturating_mul(prompts.len()) <= MAX_CASES)
            else {
                self.error(&tat.key("vars"), format!("these vars expand into more tests than evalhost reads from one suite ({MAX_CASES})"));
                continue;
            };
            for (k, combo) in combos.iter().enumerate() {
                for (pid, template) in prompts {
                    let mut case = Map::new();
                    for (key, v) in t {
                        match key.as_str() {
                            "vars" | "assert" | "run" | "options" | "environment" | "provider"
                            | "providers" | "prompts" | "input" | "threshold" | "__from_file"
                            | "assertions" | "expected_output" | "preprocessors"
                            | "postprocess" | "provider_output" => {}
                            "turns" => {
                                case.insert(key.clone(), self.turns(v, &tat.key("turns"), combo));
                            }
                            "description" => {
                                let text = match v {
                                    Value::String(s) => Value::String(render(s, combo, &self.env)),
                                    other => other.clone(),
                                };
                                let meta = case.entry("metadata").or_insert_with(|| json!({}));
                                if let Value::Object(m) = meta {
                                    m.entry("description").or_insert(text);
                                }
                            }
                            "metadata" => {
                                let meta = case.entry("metadata").or_insert_with(|| json!({}));
                                if let (Value::Object(m), Value::Object(own)) = (meta, v) {
                                    for (mk, mv) in own {
                                        m.insert(mk.clone(), mv.clone());
                                    }
                                } else {
                                    case.insert(key.clone(), v.clone());
                                }
                            }
                            "id" | "criteria" => {
                                case.insert(
                                    key.clone(),
                                    match v {
                                        Value::String(s) => {
                                            Value::String(render(s, combo, &self.env))
                                        }
                                        other => other.clone(),
                                    },
                                );
                            }
                            _ => {
                                case.insert(key.clone(), v.clone());
                            }
                        }
                    }
                    if k == 0 && pid == &prompts[0].0 {
                        let raw = t.get("__from_file") == Some(&Value::Bool(true));
                        if t.contains_key("assertions") {
                            self.warning(&tat.key("assertions"), "a test's `assertions` is ignored: AgentV 5's loader never reads it (its validator refuses it)")
                                .hint = Some("AgentV 5 names it `assert`".into());
                        }
                        if t.contains_key("input") && !raw {
                            self.error(&tat.key("input"), "a test's `input` has been removed in AgentV 5 (only raw cases from `tests: file://…` may carry one)")
                                .hint = Some("put it in `vars` and render it with `prompts`".into());
                        }
                        for key in [
                            "expected_output",
                            "preprocessors",
                            "postprocess",
                            "provider_output",
                        ] {
                            if t.contains_key(key) {
                                self.error(&tat.key(key), format!("a test's `{key}` has been removed in AgentV 5"))
                                    .hint = Some(match key {
                                        "expected_output" => "put the reference answer in `vars.expected_output` and grade with an assertion that uses it".into(),
                                        _ => "AgentV 5 shapes output with `options.transform`".into(),
                                    });
                            }
                        }
                    }
                    if t.contains_key("threshold") && k == 0 && pid == &prompts[0].0 {
                        self.warning(&tat.key("threshold"), "a test's `threshold` is ignored (as AgentV ignores it: AgentV 5's schema accepts it, its loader never reads it)")
                            .hint = Some("write `run: {threshold: …}`, the per-test gate AgentV 5 reads".into());
                    }
                    for key in ["environment", "provider", "providers", "prompts", "options"] {
                        if t.contains_key(key) && k == 0 && pid == &prompts[0].0 {
                            self.error(&tat.key(key), format!("a test's `{key}` (AgentV 5) is not read by this version of evalhost"));
                        }
                    }
                    if let Some(Value::Object(run)) = t.get("run")
                        && let Some(th) = run.get("threshold")
                    {
                        let exec = case.entry("execution").or_insert_with(|| json!({}));
                        if let Value::Object(e) = exec {
                            e.insert("threshold".into(), th.clone());
                        }
                    }
                    let id = t
                        .get("id")
                        .and_then(Value::as_str)
                        .map(|s| render(s, combo, &self.env))
                        .unwrap_or_else(|| format!("test-{}", i + 1));
                    let mut id = id;
                    if combos.len() > 1 {
                        id = format!("{id}__vars_{}", k + 1);
                    }
                    if prompts.len() > 1 {
                        id = format!("{id}__prompt_{pid}");
                    }
                    case.insert("id".into(), Value::String(id));
                    // A raw case's own `input` is its `input` var (AgentV 5
                    // lowers it so).
                    let mut combo = combo.clone();
                    if let Some(input) = t.get("input") {
                        combo.insert("input".into(), input.clone());
                    }
                    let combo = &combo;
                    let input = render_prompt(template, combo, &self.env);
                    let empty = matches!(&input, Value::String(s) if s.trim().is_empty());
                    if !(empty && t.get("mode").and_then(Value::as_str) == Some("conversation")) {
                        case.insert("input".into(), input);
                    }
                    if let Some(expected) = combo.get("expected_output") {
                        case.entry("expected_output")
                            .or_insert_with(|| expected.clone());
                    }
                    if let Some(Value::Array(a)) = t.get("assert") {
                        let list: Vec<Value> = a
                            .iter()
                            .enumerate()
                            .map(|(j, x)| {
                                let rendered = render_value(x, combo, &self.env);
                                self.assertion(&rendered, &tat.key("assert").index(j))
                            })
                            .filter(|a| !a.is_null())
                            .collect();
                        let list = self.group_criteria(list);
                        case.insert("assertions".into(), Value::Array(list));
                    }
                    if let Some(Value::Object(exec)) = t.get("execution") {
                        let mut e = exec.clone();
                        if let Some(a) = e.remove("assert") {
                            e.insert("assertions".into(), a);
                        }
                        case.insert("execution".into(), Value::Object(e));
                    }
                    out.push(Value::Object(case));
                }
            }
        }
        Value::Array(out)
    }

    /// The tests of `file://cases.yaml|json|jsonl` (a list, or one test).
    fn test_file(&mut self, spec: &str, at: &KeyPath) -> Vec<Value> {
        let rel = spec.strip_prefix("file://").unwrap_or(spec);
        let path = match self.roots.relative(rel, &self.dir.clone()) {
            Ok(p) => p,
            Err(e) => {
                self.error(at, format!("`{spec}`: {e}"))
                    .hint = Some("a suite may read only files inside its project root (the nearest directory with `.git`)".into());
                return Vec::new();
            }
        };
        let text = match crate::roots::read_regular_text(&path, crate::load::MAX_FILE_BYTES) {
            Ok(t) => t,
            Err(e) => {
                self.error(at, format!("`{spec}`: cannot read {}: {e}", path.display()));
                return Vec::new();
            }
        };
        if rel.ends_with(".jsonl") {
            let mut out = Vec::new();
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                match serde_json::from_str::<Value>(line) {
                    Ok(v) => out.push(v),
                    Err(e) => {
                        self.error(at, format!("{}:{}: not JSON: {e}", path.display(), i + 1));
                    }
                }
            }
            return out;
        }
        if rel.ends_with(".csv") {
            return self.csv_tests(&text, &path, at);
        }
        if !(rel.ends_with(".yaml") || rel.ends_with(".yml") || rel.ends_with(".json")) {
            self.error(at, format!("`{spec}`: tests from this kind of file are not read by this version of evalhost (yaml, json, jsonl are)"));
            return Vec::new();
        }
        match crate::yaml::parse(&text) {
            Ok(Value::Array(items)) => items,
            Ok(Value::Object(o)) => match o.get("tests") {
                Some(Value::Array(items)) => items.clone(),
                _ => vec![Value::Object(o)],
            },
            Ok(_) | Err(_) => {
                self.error(at, format!("`{spec}`: not a list of tests"));
                Vec::new()
            }
        }
    }

    fn turns(&mut self, value: &Value, at: &KeyPath, vars: &Map<String, Value>) -> Value {
        let Value::Array(turns) = value else {
            return value.clone();
        };
        Value::Array(
            turns
                .iter()
                .enumerate()
                .map(|(i, turn)| {
                    let Value::Object(t) = render_value(turn, vars, &self.env) else {
                        return turn.clone();
                    };
                    let mut t = t.clone();
                    if let Some(Value::Array(a)) = t.remove("assert") {
                        let list: Vec<Value> = a
                            .iter()
                            .enumerate()
                            .map(|(j, x)| self.assertion(x, &at.index(i).key("assert").index(j)))
                            .collect();
                        t.insert("assertions".into(), Value::Array(list));
                    }
                    Value::Object(t)
                })
                .collect(),
        )
    }

    /// One assertion, in AgentV 4's shape.
    fn assertion(&mut self, value: &Value, at: &KeyPath) -> Value {
        let Value::Object(a) = value else {
            // A plain string: a rubric criterion, in both.
            return value.clone();
        };
        let mut a = a.clone();
        if let Some(m) = a.remove("metric") {
            a.insert("name".into(), m);
        }
        let Some(Value::String(t)) = a.get("type").cloned() else {
            return Value::Object(a);
        };
        let removed = match t.replace('_', "-").as_str() {
            "code-grader" | "code-judge" | "script-grader" => Some("a command grader is `type: script` in AgentV 5".to_owned()),
            "llm-grader" | "llm-judge" | "rubrics" | "rubric" => Some("an LLM grader is `type: llm-rubric` in AgentV 5 (criteria under `value`)".to_owned()),
            "composite" => Some("a group is `type: assert-set` in AgentV 5 (its `threshold` is the weighted mean score, not the share of members that pass)".to_owned()),
            "skill-trigger" => Some(match (a.get("skill").and_then(Value::as_str), a.get("should_trigger")) {
                (Some(skill), Some(Value::Bool(false))) => format!("write `type: not-skill-used` with `value: {skill}`"),
                (Some(skill), _) => format!("write `type: skill-used` with `value: {skill}`"),
                _ => "write `type: skill-used` (or `not-skill-used`) with the skill's name as `value`".to_owned(),
            }),
            "tool-trajectory" => Some("AgentV 5 checks tool use with `trajectory:tool-used`, `trajectory:tool-sequence` and `trajectory:tool-args-match`".to_owned()),
            _ => None,
        };
        if let Some(hint) = removed {
            self.error(
                &at.key("type"),
                format!("`{t}` is an AgentV 4 grader type AgentV 5 refuses"),
            )
            .hint = Some(hint);
            return Value::Null;
        }
        if a.get("required").is_some_and(Value::is_number) {
            self.error(
                &at.key("required"),
                "a numeric `required` is refused by AgentV 5",
            )
            .hint = Some("write `required: true` with `min_score`".into());
        }
        for key in ["preprocessors", "postprocess"] {
            if a.contains_key(key) {
                self.error(
                    &at.key(key),
                    format!("`{key}` has been removed from authored eval YAML in AgentV 5"),
                );
            }
        }
        if t == "script" {
            if a.contains_key("target") {
                self.error(
                    &at.key("target"),
                    "a `script` takes `provider`, not `target`, in AgentV 5",
                );
            }
            if a.contains_key("script") {
                self.error(
                    &at.key("script"),
                    "a `script` takes `command` in AgentV 5; the `script:` field is refused",
                );
            }
        }
        if t.contains('_') {
            self.error(
                &at.key("type"),
                format!(
                    "`{t}`: AgentV 5 writes types with `-`; use `{}`",
                    t.replace('_', "-")
                ),
            );
        }
        let base = t.strip_prefix("not-").unwrap_or(&t).to_owned();
        // AgentV 5 takes `not-` only on skill-used and trajectory:*; any
        // other `not-X` is an unknown grader type that fails its run.
        if t.starts_with("not-") && base != "skill-used" && !base.starts_with("trajectory:") {
            self.error(
                &at.key("type"),
                format!("`{t}`: AgentV 5 has no `not-` form of `{base}` (only skill-used and trajectory:* take one); it fails the run as an unknown grader type"),
            )
            .hint = Some(format!("write `type: {base}` with `negate: true`"));
            return Value::Null;
        }
        if base == "llm-rubric" {
            // AgentV 5 reads a promptfoo-shaped reply with its own rules,
            // and its threshold is `threshold` (kept in the grader's
            // config), else `min_score`.
            a.insert("agentv5".into(), Value::Bool(true));
            let threshold = a
                .remove("threshold")
                .and_then(|t| t.as_f64())
                .or_else(|| {
                    a.get("config")
                        .and_then(|c| c.get("threshold"))
                        .and_then(Value::as_f64)
                })
                .or_else(|| a.get("min_score").and_then(Value::as_f64));
            if let Some(t) = threshold {
                a.insert("agentv5_threshold".into(), json!(t));
            }
            if let Some(p) = a.remove("provider") {
                a.insert("target".into(), p);
            } else if let Some(g) = &self.grader {
                a.insert("target".into(), Value::String(g.clone()));
            }
            if !a.contains_key("prompt")
                && let Some(p) = &self.rubric_prompt
            {
                a.insert("prompt".into(), Value::String(p.clone()));
            }
        }
        match base.as_str() {
            "llm-rubric" => match a.remove("value") {
                Some(Value::Array(items)) => {
                    a.insert("type".into(), "rubrics".into());
                    a.insert("criteria".into(), Value::Array(items));
                }
                Some(Value::String(s)) => {
                    a.insert("type".into(), "rubrics".into());
                    a.insert("criteria".into(), json!([s]));
                }
                Some(other) => {
                    a.insert("value".into(), other);
                    a.insert("type".into(), "llm-grader".into());
                }
                None => {
                    a.insert("type".into(), "llm-grader".into());
                }
            },
            "script" => {
                a.insert("type".into(), "code-grader".into());
                a.insert("protocol".into(), "agentv5".into());
                if let Some(p) = a.remove("provider") {
                    a.insert("target".into(), p);
                }
            }
            "similar" => {
                if a.get("value")
                    .and_then(Value::as_str)
                    .is_none_or(|s| s.trim().is_empty())
                {
                    self.error(
                        &at.key("value"),
                        "AgentV 5's `similar` compares against one text: `value` must be a non-empty string (a list, as promptfoo takes, is refused by AgentV 5's schema)",
                    );
                    return Value::Null;
                }
                let Some(embedder) = self.embedder(&a, at) else {
                    return Value::Null;
                };
                a.remove("config");
                a.remove("provider");
                a.insert("type".into(), "agentv5-similar".into());
                a.insert("__embedder".into(), Value::String(embedder));
            }
            "assert-set" => {
                if let Some(Value::Array(members)) = a.remove("assert") {
                    // AgentV 5's `withAssertSetConfig`: the set's `config`
                    // under each member's own, key by key.
                    let shared = a.remove("config").and_then(|c| c.as_object().cloned());
                    let list: Vec<Value> = members
                        .iter()
                        .enumerate()
                        .map(|(i, m)| {
                            // Only the members that read a `config` get it
                            // (the others would be warned about a key they
                            // ignore).
                            let m = match (&shared, m) {
                                (Some(shared), Value::Object(child))
                                    if matches!(
                                        child.get("type").and_then(Value::as_str),
                                        Some("similar" | "script")
                                    ) =>
                                {
                                    let mut child = child.clone();
                                    let mut config = shared.clone();
                                    if let Some(Value::Object(own)) = child.get("config") {
                                        config.extend(own.clone());
                                    }
                                    child.insert("config".into(), Value::Object(config));
                                    Value::Object(child)
                                }
                                _ => m.clone(),
                            };
                            self.assertion(&m, &at.key("assert").index(i))
                        })
                        .collect();
                    a.insert("assert".into(), Value::Array(list));
                }
            }
            "skill-used"
            | "trajectory:tool-used"
            | "trajectory:tool-sequence"
            | "trajectory:tool-args-match"
            | "trajectory:step-count" => {
                // Graded by evalhost-metrics with AgentV 5's own inversion
                // (a forbidden list passes only when none of it was used).
                let kind = match base.as_str() {
                    "skill-used" => "agentv5-skill-used".to_owned(),
                    b => format!("agentv5-trajectory-{}", &b["trajectory:".len()..]),
                };
                a.insert("type".into(), kind.into());
                if t.starts_with("not-") || a.remove("negate") == Some(Value::Bool(true)) {
                    a.insert("inverse".into(), Value::Bool(true));
                }
            }
            "agent-rubric" | "javascript" | "python" | "webhook" | "trajectory:goal-success" => {
                self.error(
                    &at.key("type"),
                    format!(
                        "assertion type `{t}` (AgentV 5) is not graded by this version of evalhost"
                    ),
                );
                return Value::Null;
            }
            b if b.starts_with("trajectory:") => {
                self.error(
                    &at.key("type"),
                    format!("`{t}` is not an AgentV 5 trajectory type"),
                )
                .hint = Some(
                    "AgentV 5 has trajectory:tool-used, tool-sequence, tool-args-match, step-count and goal-success"
                        .into(),
                );
                return Value::Null;
            }
            _ => {}
        }
        Value::Object(a)
    }
}

impl Rewriter {
    /// The embedding target of a `similar` assertion, as AgentV 5 finds its
    /// endpoint: `config.embedding_provider`, else an object `provider`,
    /// else `config` itself, with `model` and `base_url` (or `endpoint`),
    /// and an optional `api_key`.
    fn embedder(&mut self, a: &Map<String, Value>, at: &KeyPath) -> Option<String> {
        let config = a.get("config").and_then(Value::as_object);
        let (embedding, eat) = match (
            config
                .and_then(|c| c.get("embedding_provider"))
                .and_then(Value::as_object),
            a.get("provider").and_then(Value::as_object),
        ) {
            (Some(e), _) => (Some(e), at.key("config").key("embedding_provider")),
            (None, Some(p)) => (Some(p), at.key("provider")),
            (None, None) => (config, at.key("config")),
        };
        let text = |k: &str| {
            embedding
                .and_then(|e| e.get(k))
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(|s| render_env(s, &self.env))
        };
        let (Some(model), Some(base_url)) =
            (text("model"), text("base_url").or_else(|| text("endpoint")))
        else {
            self.error(
                &eat,
                "AgentV 5's `similar` needs `config.embedding_provider` with an OpenAI-compatible `base_url` and `model` (AgentV 5 fails the assertion without them)",
            )
            .hint = Some("config: {embedding_provider: {base_url: https://api.openai.com/v1, model: text-embedding-3-small, api_key: \"${{ OPENAI_API_KEY }}\"}}".into());
            return None;
        };
        let name = format!("agentv5-embedder-{}", self.inline.len() + 1);
        let mut entry = Map::new();
        entry.insert("name".into(), Value::String(name.clone()));
        entry.insert("provider".into(), "openai".into());
        entry.insert("model".into(), Value::String(model));
        entry.insert("base_url".into(), Value::String(base_url));
        if let Some(key) = text("api_key") {
            entry.insert("api_key".into(), Value::String(key));
        }
        self.inline.push(InlineTarget {
            entry,
            loc: self.loc(&eat),
        });
        Some(name)
    }
}

fn entry_label(entry: &Map<String, Value>) -> Option<String> {
    entry
        .get("label")
        .or(entry.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// `{{ env.NAME }}` references filled from `env`; everything else kept.
fn render_env(s: &str, env: &Map<String, Value>) -> String {
    if !s.contains("{{") {
        return s.to_owned();
    }
    let mut vars = Map::new();
    vars.insert("env".into(), Value::Object(env.clone()));
    render(s, &vars, env)
}

/// A template rendered with `vars` (and `env`), as AgentV 5's Nunjucks does.
fn render(s: &str, vars: &Map<String, Value>, env: &Map<String, Value>) -> String {
    if !s.contains("{{") && !s.contains("{%") {
        return s.to_owned();
    }
    let mut e = minijinja::Environment::new();
    e.set_undefined_behavior(minijinja::UndefinedBehavior::Lenient);
    e.set_keep_trailing_newline(true);
    e.set_fuel(Some(crate::promptfoo::TEMPLATE_FUEL));
    let mut ctx = vars.clone();
    ctx.entry("vars")
        .or_insert_with(|| Value::Object(vars.clone()));
    ctx.entry("env")
        .or_insert_with(|| Value::Object(env.clone()));
    crate::promptfoo::guarded(|| {
        e.render_str(s, Value::Object(ctx))
            .map_err(|e| e.to_string())
    })
    .and_then(|text| crate::budget::rendered(text.len()).map(|()| text))
    .unwrap_or_else(|_| s.to_owned())
}

/// A value's strings rendered (objects and lists recursively); a string
/// that is one whole `{{ name }}` reference takes the var's value itself,
/// keeping its type (a message list stays a list).
fn render_value(v: &Value, vars: &Map<String, Value>, env: &Map<String, Value>) -> Value {
    match v {
        Value::String(s) => {
            let trimmed = s.trim();
            if let Some(name) = trimmed
                .strip_prefix("{{")
                .and_then(|r| r.strip_suffix("}}"))
                .map(str::trim)
                .filter(|n| {
                    n.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
                })
            {
                let name = name.strip_prefix("vars.").unwrap_or(name);
                if let Some(value) = vars.get(name) {
                    return value.clone();
                }
            }
            Value::String(render(s, vars, env))
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| render_value(i, vars, env)).collect())
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), render_value(x, vars, env)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn render_prompt(template: &Value, vars: &Map<String, Value>, env: &Map<String, Value>) -> Value {
    render_value(template, vars, env)
}

/// String-list vars expand into their cartesian product (AgentV 5 as
/// promptfoo: `yaml-parser.ts` 524-554).
fn expand(vars: &Map<String, Value>) -> Option<Vec<Map<String, Value>>> {
    let mut rows = vec![Map::new()];
    for (k, v) in vars {
        match v {
            Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_string) => {
                if rows.len().saturating_mul(items.len()) > MAX_CASES {
                    return None;
                }
                let mut next = Vec::new();
                for row in &rows {
                    for item in items {
                        let mut r = row.clone();
                        r.insert(k.clone(), item.clone());
                        next.push(r);
                    }
                }
                rows = next;
            }
            other => {
                for r in &mut rows {
                    r.insert(k.clone(), other.clone());
                }
            }
        }
    }
    Some(rows)
}

/// Single-quotes `s` for `sh`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Runs an AgentV 5 extension hook (`node -e WRAPPER file fn hook
/// eval_dir`, the hook context as JSON on stdin): imports the module, calls
/// the function with AgentV 5's context, prints its `output`.
const EXTENSION_WRAPPER: &str = r#"const [file, fn, hook, evalDir] = process.argv.slice(1);
let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', async () => {
  const c = input.trim() ? JSON.parse(input) : {};
  const ctx = { hook_name: hook, test_id: c.test_id ?? '__before_all__', eval_dir: evalDir };
  if (c.workspace_path) ctx.workspace_path = c.workspace_path;
  if (c.eval_run_id) ctx.eval_run_id = c.eval_run_id;
  if (c.case_input != null) ctx.case_input = c.case_input;
  if (c.case_metadata != null) ctx.case_metadata = c.case_metadata;
  const m = await import(require('node:url').pathToFileURL(file).href);
  const d = m.default && typeof m.default === 'object' ? m.default[fn] : undefined;
  const f = m[fn] ?? d;
  if (typeof f !== 'function') {
    console.error(`Extension ${file} does not export function ${fn}`);
    process.exit(1);
  }
  const r = await f(ctx, { hookName: hook });
  if (r && typeof r === 'object') {
    if (typeof r.output === 'string') process.stdout.write(r.output);
    if (r.metadata || r.provider_context) {
      console.error('evalhost: this hook returned metadata/provider_context, which this version of evalhost records only here: ' + JSON.stringify({ metadata: r.metadata, provider_context: r.provider_context }));
    }
  }
});
"#;

/// AgentV 5's `mergeScenarioTestRows`.
fn merge_scenario_row(
    config: &Map<String, Value>,
    test: &Map<String, Value>,
    (si, ci, ti): (usize, usize, usize),
    test_count: usize,
) -> Map<String, Value> {
    let mut row = config.clone();
    row.extend(test.clone());
    for key in ["vars", "metadata", "options", "run"] {
        let mut merged = Map::new();
        if let Some(Value::Object(c)) = config.get(key) {
            merged.extend(c.clone());
        }
        if let Some(Value::Object(t)) = test.get(key) {
            merged.extend(t.clone());
        }
        if merged.is_empty() {
            row.remove(key);
        } else {
            row.insert(key.into(), Value::Object(merged));
        }
    }
    let as_list = |v: Option<&Value>| -> Vec<Value> {
        match v {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::Null) | None => Vec::new(),
            Some(other) => vec![other.clone()],
        }
    };
    let asserts: Vec<Value> = as_list(config.get("assert"))
        .into_iter()
        .chain(as_list(test.get("assert")))
        .collect();
    if asserts.is_empty() {
        row.remove("assert");
    } else {
        row.insert("assert".into(), Value::Array(asserts));
    }
    let nonempty = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    let id = match (nonempty(test.get("id")), nonempty(config.get("id"))) {
        (Some(id), _) => id,
        (None, Some(cid)) if test_count > 1 => format!("{cid}__scenario_test_{}", ti + 1),
        (None, Some(cid)) => cid,
        (None, None) => format!("scenario-{}-{}-{}", si + 1, ci + 1, ti + 1),
    };
    row.insert("id".into(), Value::String(id));
    row
}

/// Splits on commas not preceded by a backslash; `\,` becomes `,`.
fn split_unescaped_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&',') {
            cur.push(',');
            chars.next();
        } else if c == ',' {
            out.push(cur.trim().to_owned());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    out.push(cur.trim().to_owned());
    out
}

/// A CSV column that is a var: `vars.a.b` nests, anything else is flat.
fn assign_csv_var(vars: &mut Map<String, Value>, key: &str, value: &str) {
    let Some(path) = key.strip_prefix("vars.") else {
        vars.insert(key.to_owned(), Value::String(value.to_owned()));
        return;
    };
    let segments: Vec<&str> = path
        .split('.')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let Some((last, parents)) = segments.split_last() else {
        vars.insert(key.to_owned(), Value::String(value.to_owned()));
        return;
    };
    let mut current = vars;
    for seg in parents {
        let entry = current
            .entry((*seg).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        current = entry.as_object_mut().expect("just made an object");
    }
    current.insert((*last).to_owned(), Value::String(value.to_owned()));
}

/// The assertion types AgentV 5's CSV `__expected` mini-syntax knows.
const CSV_TYPES: &[&str] = &[
    "contains",
    "contains-any",
    "contains-all",
    "icontains",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "ends-with",
    "regex",
    "is-json",
    "equals",
    "latency",
    "cost",
];

/// One `__expected` cell as AgentV 5 reads it (`parseAssertionFromString`).
fn csv_assertion(expected: &str, path: &Path) -> Result<Map<String, Value>, String> {
    let obj = |v: Value| match v {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    for prefix in ["grade:", "llm-rubric:"] {
        if let Some(rest) = expected.strip_prefix(prefix) {
            return Ok(obj(json!({
                "type": "llm-rubric",
                "value": [rest.trim()],
            })));
        }
    }
    for prefix in ["javascript:", "fn:", "eval:"] {
        if expected.starts_with(prefix) {
            return Err(format!(
                "`{expected}`: inline JavaScript assertions are not run by this version of evalhost"
            ));
        }
    }
    if let Some(rest) = expected.strip_prefix("python:") {
        return Ok(obj(
            json!({"type": "script", "command": ["uv", "run", "python", rest.trim()]}),
        ));
    }
    if let Some(file) = expected.strip_prefix("file://") {
        let file = file.trim();
        if !file.ends_with(".py") {
            return Err(format!(
                "Unsupported promptfoo __expected file assertion \"{expected}\". Only file://*.py script graders are supported."
            ));
        }
        let command_path = if Path::new(file).is_absolute() {
            PathBuf::from(file)
        } else {
            path.parent().unwrap_or(Path::new(".")).join(file)
        };
        return Ok(obj(
            json!({"type": "script", "command": ["uv", "run", "python", command_path.display().to_string()]}),
        ));
    }
    // `[not-]type[(threshold)][:value]`
    let (head, value) = match expected.split_once(':') {
        Some((h, v)) => (h, Some(v)),
        None => (expected, None),
    };
    let (raw_type, threshold_text) = match head.strip_suffix(')').and_then(|h| h.split_once('(')) {
        Some((t, th)) => (t, Some(th)),
        None => (head, None),
    };
    let well_formed = raw_type
        .strip_prefix("not-")
        .unwrap_or(raw_type)
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase())
        && raw_type
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && threshold_text.is_none_or(|t| {
            !t.is_empty()
                && t.chars().all(|c| c.is_ascii_digit() || c == '.')
                && t.parse::<f64>().is_ok()
        });
    if !well_formed {
        return Ok(obj(json!({"type": "equals", "value": expected})));
    }
    let negate = raw_type.starts_with("not-");
    let kind = raw_type.strip_prefix("not-").unwrap_or(raw_type);
    let value = value.map(str::trim);
    let threshold = threshold_text
        .and_then(|t| t.parse::<f64>().ok())
        .or((kind == "starts-with").then_some(0.75));
    if !CSV_TYPES.contains(&kind) {
        if value.is_some() || threshold_text.is_some() {
            return Err(format!(
                "Unsupported promptfoo __expected assertion \"{kind}\". Supported assertion types: {}",
                CSV_TYPES.join(", ")
            ));
        }
        return Ok(obj(json!({"type": "equals", "value": expected})));
    }
    if matches!(kind, "latency" | "cost") && threshold.is_none() {
        return Err(format!(
            "promptfoo __expected {kind} assertion requires a numeric limit, e.g. {kind}(1)"
        ));
    }
    let mut a = Map::new();
    a.insert("type".into(), Value::String(kind.to_owned()));
    if negate {
        a.insert("negate".into(), Value::Bool(true));
    }
    if matches!(
        kind,
        "contains-any" | "contains-all" | "icontains-any" | "icontains-all"
    ) {
        let items: Vec<Value> = value
            .filter(|v| !v.is_empty())
            .map(|v| {
                v.split(',')
                    .map(|i| Value::String(i.trim().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        a.insert("value".into(), Value::Array(items));
    } else if let Some(v) = value {
        a.insert("value".into(), Value::String(v.to_owned()));
    }
    match (kind, threshold) {
        ("latency", Some(t)) => {
            a.insert("threshold".into(), json!(t));
        }
        ("cost", Some(t)) => {
            a.insert("budget".into(), json!(t));
        }
        (_, Some(t)) => {
            a.insert("min_score".into(), json!(t));
        }
        _ => {}
    }
    Ok(a)
}

/// `{{ env.NAME }}` filled in every string of `v`.
fn render_env_value(v: &Value, env: &Map<String, Value>) -> Value {
    match v {
        Value::String(s) => Value::String(fill_env_refs(s, env)),
        Value::Array(a) => Value::Array(a.iter().map(|x| render_env_value(x, env)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), render_env_value(x, env)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Only the `{{ env.NAME }}` references of `s` filled; every other
/// template expression is kept for the per-test rendering.
fn fill_env_refs(s: &str, env: &Map<String, Value>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let inner = rest[start + 2..start + len].trim();
        out.push_str(&rest[..start]);
        match inner.strip_prefix("env.") {
            Some(name) if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                match env.get(name) {
                    Some(Value::String(v)) => out.push_str(v),
                    Some(other) => out.push_str(&other.to_string()),
                    None => {}
                }
            }
            _ => out.push_str(&rest[start..start + len + 2]),
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// A test read from a `tests: file://…` file (a raw case may carry its own
/// `input` there, lowered to the `input` var).
fn from_file(test: Value) -> Value {
    match test {
        Value::Object(mut o) => {
            o.insert("__from_file".into(), Value::Bool(true));
            Value::Object(o)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(files: &[(&str, &str)]) -> (Option<Suite>, Diagnostics) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        for (name, text) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let r = crate::load(&dir.path().join(files[0].0));
        drop(dir);
        r
    }

    fn errors(d: &Diagnostics) -> Vec<String> {
        d.0.iter()
            .filter(|x| x.severity == crate::diag::Severity::Error)
            .map(|x| x.message.clone())
            .collect()
    }

    #[test]
    fn scenarios_cross_config_rows_with_tests_as_agentv5_does() {
        let (suite, d) = load(&[
            (
                "evals/suite.yaml",
                "prompts: [\"Translate '{{ phrase }}' to {{ language }}.\"]\nscenarios: [file://scenarios/*.yaml]\n",
            ),
            (
                "evals/scenarios/m.yaml",
                "- config:\n    - {id: es, vars: {language: Spanish, hello: hola}}\n    - {vars: {language: French, hello: bonjour}}\n  tests:\n    - description: greets\n      vars: {phrase: hello}\n      assert: [{type: equals, value: '{{ hello }}'}]\n    - {vars: {phrase: bye}, assert: [{type: contains, value: bye}]}\n",
            ),
        ]);
        assert!(errors(&d).is_empty(), "{:?}", d.0);
        let suite = suite.unwrap();
        let ids: Vec<&str> = suite.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "es__scenario_test_1",
                "es__scenario_test_2",
                "scenario-1-2-1",
                "scenario-1-2-2"
            ]
        );
        let t = &suite.tests[0];
        assert_eq!(t.metadata["description"], "greets");
        assert_eq!(t.assertions[0].config["value"], "hola");
        assert_eq!(suite.tests[2].assertions[0].config["value"], "bonjour");
    }

    #[test]
    fn csv_tests_read_as_agentv5_reads_them() {
        let (suite, d) = load(&[
            (
                "suite.yaml",
                "prompts: ['{{ input }} ({{ locale }}, {{ user.name }})']\ntests: file://cases.csv\n",
            ),
            (
                "cases.csv",
                "id,vars.input,vars.user.name,__expected1,__expected2,__metric,__threshold,__metadata:source,__metadata:tags[],locale,__config:__expected2:threshold\ng1,Say hi,Ada,icontains:hello,\"not-contains-any:x,y\",greeting,0.8,csv,\"a\\,b,c\",en-US,0.5\n,Other,Bob,starts-with:Hi,,,,,,fr,1\n",
            ),
        ]);
        assert!(errors(&d).is_empty(), "{:?}", d.0);
        let suite = suite.unwrap();
        let t = &suite.tests[0];
        assert_eq!(t.id, "g1");
        assert_eq!(t.input[0].content, "Say hi (en-US, Ada)");
        assert_eq!(&*t.assertions[0].name, "greeting-1");
        assert_eq!(&*t.assertions[1].kind, "contains-any");
        assert!(t.assertions[1].negate);
        assert_eq!(
            t.assertions[1].config["value"],
            serde_json::json!(["x", "y"])
        );
        assert_eq!(t.threshold, Some(0.8));
        assert_eq!(t.metadata["source"], "csv");
        assert_eq!(t.metadata["tags"], serde_json::json!(["a,b", "c"]));
        assert_eq!(t.metadata["threshold"], 0.5);
        // No id: `row-N`; `starts-with` without a threshold gets 0.75.
        let t = &suite.tests[1];
        assert_eq!(t.id, "row-2");
        assert_eq!(t.assertions[0].min_score, Some(0.75));
    }

    #[test]
    fn default_test_files_environment_files_defaults_and_repeat() {
        let (suite, d) = load(&[
            (
                "evals/suite.yaml",
                "defaults: {grader: judge, system_message: hi}\nevaluate_options: {repeat: 3}\ntags: {experiment: a}\nenvironment: file://../env/recipe.yaml\nprompts: [{id: p, file: ./p.txt}]\ndefault_test: file://./dt.yaml\ntests:\n  - id: t\n    vars: {q: x}\n    assert: [crit one, crit two, {type: llm-rubric, value: [c3]}]\n",
            ),
            ("evals/p.txt", "Q: {{ q }}\r\n"),
            (
                "evals/dt.yaml",
                "threshold: 0.6\noptions:\n  rubric_prompt: 'Judge {{ output }} by {{ rubrics }}'\n",
            ),
            ("env/recipe.yaml", "type: host\nworkdir: ../ws\n"),
        ]);
        assert!(errors(&d).is_empty(), "{:?}", d.0);
        // AgentV 5 drops `defaults.system_message`; evalhost says so.
        assert!(
            d.0.iter()
                .any(|x| x.message.contains("`defaults.system_message` is ignored")),
            "{:?}",
            d.0
        );
        let suite = suite.unwrap();
        let t = &suite.tests[0];
        assert_eq!(t.input[0].content, "Q: x\n");
        assert_eq!(suite.threshold, Some(0.6));
        let trials = suite.trials.as_ref().unwrap();
        assert_eq!(trials.count, 3);
        assert!(
            suite
                .workspace
                .as_ref()
                .unwrap()
                .static_path
                .as_ref()
                .unwrap()
                .ends_with("ws")
        );
        // The plain strings are one rubric of weight 2 with the default
        // prompt and judge, like the explicit llm-rubric.
        assert_eq!(t.assertions.len(), 2);
        for a in &t.assertions {
            assert_eq!(&*a.kind, "rubrics");
            assert_eq!(a.config["prompt"], "Judge {{ output }} by {{ rubrics }}");
            assert_eq!(a.config["target"], "judge");
        }
        assert_eq!(t.assertions[0].weight, 2.0);
    }

    #[test]
    fn a_transform_is_refused_with_its_reason() {
        let (_, d) = load(&[(
            "suite.yaml",
            "prompts: ['{{ q }}']\ndefault_test: {options: {transform: 'file://t.ts'}}\ntests: [{id: t, vars: {q: x}, assert: [{type: contains, value: x}]}]\n",
        )]);
        assert!(
            errors(&d).iter().any(|e| e.contains("`options.transform`")),
            "{:?}",
            d.0
        );
    }

    #[test]
    fn a_not_prefix_is_read_only_where_agentv5_reads_it() {
        let (_, d) = load(&[(
            "suite.yaml",
            "prompts: ['{{ q }}']\ntests: [{id: t, vars: {q: x}, assert: [{type: not-contains, value: x}, {type: not-skill-used, value: s}]}]\n",
        )]);
        let errs = errors(&d);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("AgentV 5 has no `not-` form of `contains`"),
            "{errs:?}"
        );
    }

    #[test]
    fn agentv4_shapes_are_refused_or_ignored_as_agentv5_loads_them() {
        let (suite, d) = crate::load::load_as(
            &{
                let dir = tempfile::tempdir().unwrap().keep();
                std::fs::create_dir_all(dir.join(".git")).unwrap();
                let p = dir.join("s.yaml");
                std::fs::write(
                    &p,
                    "prompts: ['{{ q }}']\nassertions: [{type: contains, value: x}]\nexecution: {workers: 2}\ntests:\n  - id: t\n    input: hi\n    vars: {q: x}\n    assertions: [{type: contains, value: x}]\n    assert:\n      - {type: contains, value: x}\n      - {type: skill-trigger, skill: deploy, should_trigger: false}\n      - {type: composite, assertions: []}\n",
                )
                .unwrap();
                p
            },
            false,
            Some(Dialect::AgentV5),
        );
        let errs = errors(&d);
        let all =
            d.0.iter()
                .map(|x| format!("{} {:?}", x.message, x.hint))
                .collect::<Vec<_>>()
                .join("\n");
        assert!(all.contains("a top-level `assertions` is ignored"), "{all}");
        assert!(all.contains("a test's `assertions` is ignored"), "{all}");
        assert!(
            all.contains("Top-level 'execution' has been removed"),
            "{all}"
        );
        assert!(all.contains("a test's `input` has been removed"), "{all}");
        assert!(
            all.contains("write `type: not-skill-used` with `value: deploy`"),
            "{all}"
        );
        assert!(
            all.contains("`composite` is an AgentV 4 grader type"),
            "{all}"
        );
        assert_eq!(errs.len(), 4, "{all}");
        // The ignored lists add nothing to what is graded.
        if let Some(suite) = suite {
            assert!(suite.tests.iter().all(|t| t.assertions.len() <= 1));
        }
    }
}
