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
//!
//! This file holds the rewriter and the suite's top level; each part of a
//! suite has its own file: `providers` (the catalog), `cases` (prompts ×
//! vars, test files, turns), `assertions`, `scenarios`, `csv` (CSV test
//! files), `files` (defaults and the files a suite names), `environment`,
//! `extensions` and `render` (Nunjucks and the var matrix).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::diag::{Diagnostic, Diagnostics};
use crate::dialect::{Dialect, ReadOptions};
use crate::model::{InlineTarget, Loc, Suite};
use crate::source_map::{KeyPath, SourceMap};

mod assertions;
mod cases;
mod csv;
mod environment;
mod extensions;
mod files;
mod providers;
mod render;
mod scenarios;
#[cfg(test)]
mod tests;

use render::*;

/// The most cases one suite may expand into.
const MAX_CASES: usize = 1_000_000;

/// Reads the AgentV 5 suite at `path`.
pub(crate) fn read(path: &Path, options: ReadOptions) -> (Option<Suite>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let text = match crate::roots::read_regular_text(path, crate::limits::MAX_FILE_BYTES) {
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
        let extensions = self.top_level(root, &mut out);
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
        let mut execution = self.evaluate_options(root);
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

    /// The suite's top-level keys AgentV 5 renamed or removed, each into
    /// AgentV 4's shape in `out` (or refused, or warned about); the
    /// `extensions` to attach to the workspace.
    fn top_level(
        &mut self,
        root: &Map<String, Value>,
        out: &mut Map<String, Value>,
    ) -> Vec<(&'static str, String)> {
        let top = KeyPath::default();
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
                // AgentV 5 keeps a top-level `workspace` for its hooks and
                // env, and refuses a template there (the testbed is the
                // `environment`'s).
                "workspace" => {
                    if let Value::Object(ws) = value
                        && ws.contains_key("template")
                    {
                        self.error(
                            &top.key(key).key("template"),
                            "a top-level `workspace.template` is refused by AgentV 5's loader: a next-format suite's testbed is its `environment`",
                        )
                        .hint = Some("use `environment: {type: host, workdir, setup}` (or a recipe file) for the testbed, and keep `workspace:` for `hooks`".into());
                    } else {
                        out.insert(key.clone(), value.clone());
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
        extensions
    }

    /// `evaluate_options` as AgentV 4's `execution`.
    fn evaluate_options(&mut self, root: &Map<String, Value>) -> Map<String, Value> {
        let top = KeyPath::default();
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
        execution
    }
}
