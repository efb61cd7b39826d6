//! The promptfoo 0.121 reader: a `promptfooconfig.yaml` (`prompts` ×
//! `providers` × `tests`) read into the canonical [`Suite`]. Each test row
//! (after `vars` lists expand into their cartesian product) is rendered
//! with each prompt into one canonical test; each provider becomes a target
//! the suite defines itself, and every test runs on each. promptfoo's pass
//! rule (every assertion passes, unless the test sets a `threshold`) and
//! its meaning of each assertion type (the `promptfoo-*` plugin types) are
//! carried in the model. `reference/dialects.md` §2-§3 is the catalogue.
//!
//! What promptfoo silently ignores (unknown keys, a top-level `assert`) is
//! a warning here; what evalhost does not run yet (prompt functions,
//! script and HTTP providers, model-graded and code assertions) is an
//! error naming the place, never a row that quietly passes.
//!
//! This file holds the reader's state and the config's top level (the
//! suite, `outputPath`, `evaluateOptions`, `env`, `derivedMetrics`); each
//! part of a config has its own file: `prompts`, `providers`, `graders`
//! (the grading models), `rows` (tests, scenarios, `defaultTest`, vars),
//! `case` (one canonical test), `assertions`, `code` (JavaScript and Python
//! assertion files), `csv` (CSV test files) and `render` (Nunjucks).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::diag::{Diagnostic, Diagnostics};
use crate::dialect::{Dialect, ReadOptions};
use crate::model::{
    Aggregate, Assertion, Group, InlineTarget, KeyPositions, LimitOverrides, Loc, MatrixTarget,
    Message, PassRule, RenderedPrompt, Required, Suite, TestCase,
};
use crate::source_map::{KeyPath, SourceMap};

mod anthropic;
mod anthropic_prices;
mod assertions;
mod case;
mod code;
mod csv;
mod graders;
mod hosted;
mod openai;
mod openai_prices;
mod prompts;
mod providers;
mod refs;
pub(crate) mod render;
mod rows;

#[cfg(test)]
mod tests;

use code::*;
use csv::*;
use graders::*;
use prompts::*;

use render::Renderer;

/// Top-level keys promptfoo reads, and what evalhost does with them.
const TOP_KEYS: &[&str] = &[
    "description",
    "tags",
    "providers",
    "targets",
    "prompts",
    "tests",
    "defaultTest",
    "scenarios",
    "evaluateOptions",
    "outputPath",
    "env",
    "derivedMetrics",
    "extensions",
    "nunjucksFilters",
    "metadata",
    "commandLineOptions",
    "redteam",
    "tracing",
    "sharing",
    "writeLatestResults",
    "providerPromptMap",
    // Read through `$ref`s (see `dereference`), nothing else.
    "assertionTemplates",
];

/// Test keys promptfoo reads.
const TEST_KEYS: &[&str] = &[
    "description",
    "vars",
    "assert",
    "threshold",
    "options",
    "metadata",
    "provider",
    "providers",
    "prompts",
    "providerOutput",
    "assertScoringFunction",
];

/// Assertion types graded with promptfoo's meaning by the `promptfoo-*`
/// plugin types.
pub const DETERMINISTIC: &[&str] = &[
    "equals",
    "contains",
    "icontains",
    "contains-any",
    "contains-all",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "regex",
    "is-json",
    "contains-json",
    "word-count",
    "levenshtein",
    "latency",
    "cost",
    "bleu",
    "gleu",
    "is-refusal",
    "contains-html",
    "is-html",
    "finish-reason",
    "perplexity",
    "perplexity-score",
    "tool-call-f1",
    "rouge-n",
    "is-xml",
    "contains-xml",
    "is-valid-openai-tools-call",
    "is-valid-openai-function-call",
    "is-valid-function-call",
    "meteor",
];

/// The types promptfoo grades against the provider's `tools` or
/// `functions` config: the reader hands the provider over under
/// `__provider`.
/// The grading model promptfoo asks for text, and the one it asks for
/// JSON (the judge targets of a config's model-graded assertions).
const GRADER: &str = "promptfoo-grader";
const GRADER_JSON: &str = "promptfoo-grader-json";
/// promptfoo's default embedding model, the judge target of `similar`.
const EMBEDDER: &str = "promptfoo-embedder";

const PROVIDER_TYPES: &[&str] = &[
    "is-valid-openai-tools-call",
    "is-valid-openai-function-call",
    "is-valid-function-call",
];

/// What the tool-call types need of one provider: its kind and its
/// `config.tools` / `config.functions` as written.
#[derive(Debug, Clone)]
struct ProviderInfo {
    name: String,
    kind: &'static str,
    /// The provider's id and `config` as written, to make the request of a
    /// test whose options or prompt change its config.
    id: String,
    config: Map<String, Value>,
    tools: Option<Value>,
    functions: Option<Value>,
    /// The provider's `config` key.
    at: KeyPath,
}

/// The most tests one config may expand into.
const MAX_ROWS: usize = 1_000_000;

/// One prompt of the config.
#[derive(Debug, Clone, Default)]
struct Prompt {
    raw: String,
    label: String,
    id: Option<String>,
    /// The prompt's own `config`: promptfoo merges it into each provider's
    /// config for the calls with this prompt (under a test's options).
    config: Map<String, Value>,
    /// A prompt function (`file://prompt.js[:fn]`, `file://prompt.py:fn`):
    /// called per test and provider with `{vars, provider, config}`, its
    /// result the template (or `{prompt, config}`).
    function: Option<Arc<crate::code::CodeCall>>,
}

/// One test row before rendering: its vars, assertions and settings.
#[derive(Debug, Clone)]
struct Row {
    description: Option<String>,
    vars: Map<String, Value>,
    assert: Vec<(Value, KeyPath)>,
    threshold: Option<f64>,
    metadata: Map<String, Value>,
    provider_output: Option<Value>,
    /// `options.transform`.
    transform: Option<(Value, KeyPath)>,
    /// `options.postprocess`, its old name (a `transform` wins, the
    /// default's too).
    postprocess: Option<(Value, KeyPath)>,
    /// `options.transformVars`: the vars rewritten by code before the
    /// test runs (the default's when the test has none).
    transform_vars: Option<(Value, KeyPath)>,
    /// `options.provider` and `options.rubricPrompt`: how the test's
    /// model-graded assertions are graded.
    grading: Grading,
    /// The other `options` (`response_format`, `temperature`, …): promptfoo
    /// merges them into each provider's config for this test's calls.
    provider_options: Map<String, Value>,
    /// `prompts:` — the prompts this test runs (labels, ids, `prefix*`
    /// patterns, as a provider's), with where it was written; `None`: all.
    prompts: Option<(Vec<String>, KeyPath)>,
    /// Keys promptfoo does not read for itself (`expected:` beside
    /// `vars:`): kept, as promptfoo keeps them, in `context.test`.
    extra: Map<String, Value>,
    at: KeyPath,
    file: Arc<PathBuf>,
    /// Where the row starts in `file` when it came from a tests file (a
    /// CSV or JSONL line); `at` then names the config's key that loaded it.
    pos: Option<crate::source_map::Pos>,
}

/// A test's grading options (an assertion's own `provider` and
/// `rubricPrompt` win over them).
#[derive(Debug, Clone, Default)]
struct Grading {
    provider: Option<(Value, KeyPath)>,
    rubric_prompt: Option<(Value, KeyPath)>,
    /// `options.factuality`: the score of each factuality category.
    factuality: Option<Map<String, Value>>,
}

/// A grading model a test or an assertion names, as a judge target.
struct NamedGrader {
    /// The provider as written (its JSON text), to share one target.
    key: String,
    spec: Value,
    at: KeyPath,
}

struct Reader {
    /// The metric names assertions declare, in order of first use.
    metrics: Vec<String>,
    /// Each provider, for the types that read its tools.
    provider_infos: Vec<ProviderInfo>,
    /// Assertion values read from files (`value: file://…`), by path.
    value_files: std::collections::HashMap<PathBuf, Result<Value, String>>,
    /// `defaultTest.options.provider`: the model that grades `llm-rubric`.
    grading_provider: Option<(Value, KeyPath)>,
    /// The grading models tests and assertions name (`provider`), each a
    /// judge target `promptfoo-grader-<n>`.
    named_graders: Vec<NamedGrader>,
    /// Whether an assertion needs promptfoo's default embedding model.
    uses_embedder: bool,
    /// Whether an assertion needs the grading model.
    uses_grader: bool,
    /// The `process.env` names `javascript` assertions read, and where the
    /// first one is: warned once (the sandbox gives code no environment).
    env_reads: (Vec<String>, Option<KeyPath>),
    /// Each provider's name and, when it lists them (`prompts:`), the
    /// prompts it runs (labels, ids, `prefix*` patterns).
    provider_prompts: Vec<(String, Option<Vec<String>>)>,
    diags: Diagnostics,
    options: ReadOptions,
    file: Arc<PathBuf>,
    map: Arc<SourceMap>,
    dir: PathBuf,
    /// The line of the row being read, when it comes from a tests file
    /// (CSV, JSONL): its assertions point there, not at the config.
    row_pos: Option<crate::source_map::Pos>,
}

impl Reader {
    fn loc(&self, at: &KeyPath) -> Loc {
        Loc {
            file: self.file.clone(),
            pos: self.map.locate(at),
            key: at.clone(),
        }
    }

    fn error(&mut self, at: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::error(&self.file, message)
            .at(self.map.locate(at))
            .key(at.clone());
        self.diags.push(d);
        self.diags.0.last_mut().expect("just pushed")
    }

    /// A warning, unless the same one was given already (one per prompt or
    /// file, not one per row).
    fn warn_once(&mut self, at: &KeyPath, message: String) {
        if !self
            .diags
            .0
            .iter()
            .any(|d| d.message == message && d.severity == crate::diag::Severity::Warning)
        {
            self.warning(at, message);
        }
    }

    fn warning(&mut self, at: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::warning(&self.file, message)
            .at(self.map.locate(at))
            .key(at.clone());
        self.diags.push(d);
        self.diags.0.last_mut().expect("just pushed")
    }
}

/// Reads the promptfoo config at `path`.
pub(crate) fn read(path: &Path, options: ReadOptions) -> (Option<Suite>, Diagnostics) {
    let display = Arc::new(path.to_path_buf());
    let mut diags = Diagnostics::default();
    let text = match crate::roots::read_regular_text(path, crate::limits::MAX_FILE_BYTES) {
        Ok(t) => t,
        Err(e) => {
            diags.push(Diagnostic::error(
                path,
                format!("cannot read the config: {e}"),
            ));
            return (None, diags);
        }
    };
    let (root, map) = match crate::yaml::parse_with_positions(&text) {
        Ok(parsed) => parsed,
        Err(err) => {
            diags.push(
                Diagnostic::error(path, format!("invalid YAML: {}", err.message)).at(err.pos),
            );
            return (None, diags);
        }
    };
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut reader = Reader {
        metrics: Vec::new(),
        provider_infos: Vec::new(),
        value_files: std::collections::HashMap::new(),
        grading_provider: None,
        named_graders: Vec::new(),
        uses_embedder: false,
        uses_grader: false,
        env_reads: (Vec::new(), None),
        provider_prompts: Vec::new(),
        diags,
        options,
        file: display,
        map: Arc::new(map),
        dir,
        row_pos: None,
    };
    // promptfoo dereferences the config's JSON references before reading it
    // (`$RefParser.dereference`): `{$ref: "#/assertionTemplates/x"}` is the
    // value it points to.
    let root = match refs::dereference(&root, &root, 0) {
        Ok(Some(v)) => v,
        Ok(None) => root,
        Err((at, message)) => {
            reader.error(&at, message).hint = Some(
                "a `$ref` points into this config: `$ref: \"#/assertionTemplates/NAME\"`".into(),
            );
            return (None, reader.diags);
        }
    };
    let suite = match root {
        Value::Object(root) => {
            let suite = reader.suite(path, &root);
            reader.warn_env_reads();
            suite
        }
        _ => {
            reader
                .error(&KeyPath::default(), "a promptfoo config must be a mapping")
                .hint = Some("start with `prompts:`, `providers:` and `tests:`".into());
            None
        }
    };
    (suite, reader.diags)
}

impl Reader {
    fn suite(&mut self, path: &Path, root: &Map<String, Value>) -> Option<Suite> {
        let top = KeyPath::default();
        for key in root.keys() {
            if !TOP_KEYS.contains(&key.as_str()) {
                let hint = crate::diag::nearest(key, TOP_KEYS.iter().copied())
                    .map(|n| format!("did you mean `{n}`?"));
                let message = if key == "assert" {
                    "a top-level `assert` has no effect in promptfoo (it is ignored); put shared assertions under `defaultTest.assert`".to_owned()
                } else {
                    format!("unknown key `{key}`; promptfoo ignores it, and so does evalhost")
                };
                self.warning(&top.key(key), message).hint = hint;
            }
        }
        let derived = self.derived_metrics(root.get("derivedMetrics"), &top.key("derivedMetrics"));
        for key in ["extensions", "redteam"] {
            if root.contains_key(key) {
                self.error(&top.key(key), format!("`{key}` is not read by this version of evalhost"))
                    .hint = Some("remove it to run the rest of the config; it is part of the promptfoo dialect still being built".into());
            }
        }
        self.evaluate_options(root.get("evaluateOptions"), &top.key("evaluateOptions"));
        let mut renderer = Renderer::new(&self.config_env(root));
        self.nunjucks_filters(
            root.get("nunjucksFilters"),
            &top.key("nunjucksFilters"),
            &mut renderer,
        );
        let renderer = renderer;
        let prompts = self.prompts(root.get("prompts"), &top.key("prompts"), &renderer);
        // promptfoo fills `_conversation` with the earlier turns of the
        // test's conversation (`metadata.conversationId`) as it runs them
        // one by one; evalhost renders prompts before the run, where it is
        // empty: said loudly, per prompt.
        for prompt in &prompts {
            if prompt.raw.contains("_conversation") {
                self.warn_once(
                    &top.key("prompts"),
                    format!(
                        "the prompt `{}` reads `_conversation` (the earlier turns of a conversation), which this version of evalhost renders empty: its requests, and so its rows, are not promptfoo's — the first turn of each conversation alone is the same",
                        first_line(&prompt.label)
                    ),
                );
            }
        }
        let (providers, mut inline_targets) = self.providers(root, &renderer);
        let default_test = match root.get("defaultTest") {
            None | Some(Value::Null) => None,
            Some(Value::Object(d)) => Some(self.row(d, &top.key("defaultTest"), true)),
            Some(Value::String(s)) if s.starts_with("file://") => {
                let dat = top.key("defaultTest");
                match self.structured_file(&s["file://".len()..], &dat) {
                    Some(Value::Object(d)) => Some(self.row(&d, &dat, true)),
                    Some(other) => {
                        self.error(
                            &dat,
                            format!(
                                "`{s}` must hold a mapping (the default test), got {}",
                                crate::agentv4::kind(&other)
                            ),
                        );
                        None
                    }
                    None => None,
                }
            }
            Some(other) => {
                self.error(
                    &top.key("defaultTest"),
                    format!(
                        "`defaultTest` must be a mapping, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                None
            }
        };
        let mut rows = self.tests(root.get("tests"), &top.key("tests"));
        rows.extend(self.scenarios(root.get("scenarios"), &top.key("scenarios")));
        if rows.is_empty() && !root.contains_key("tests") && !root.contains_key("scenarios") {
            // promptfoo runs one empty test: each prompt on each provider.
            rows.push(self.row(&Map::new(), &top.key("tests"), true));
        }
        // With no usable prompt (already an error), the tests are still
        // read, so that every problem is reported at once.
        let prompts = if prompts.is_empty() {
            vec![Prompt {
                raw: String::new(),
                label: String::new(),
                id: None,
                config: Map::new(),
                function: None,
            }]
        } else {
            prompts
        };
        let tests = self.expand(rows, default_test.as_ref(), &prompts, &renderer);
        if tests.is_empty() && !self.diags.has_errors() {
            self.error(&top.key("tests"), "the config has no tests")
                .hint = Some("add `tests:` with `vars` and `assert`".into());
        }
        let name = root
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                path.file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("promptfoo")
                    .to_owned()
            });
        // Every name a derived metric reads must exist: promptfoo leaves a
        // metric whose expression throws at 0 without a word.
        let mut known: Vec<String> = self.metrics.clone();
        known.push("__count".into());
        for (k, d) in derived.iter().enumerate() {
            for name in d.expr.names() {
                if !known.contains(&name) {
                    self.error(
                        &top.key("derivedMetrics").index(k).key("value"),
                        format!("derived metric `{}`: `{name}` is not a metric of this config (promptfoo would leave `{}` at 0 without a word)", d.name, d.name),
                    )
                    .hint = crate::diag::nearest(&name, known.iter().map(String::as_str))
                        .map(|n| format!("did you mean `{n}`?"));
                }
            }
            known.push(d.name.clone());
        }
        if self.uses_grader {
            self.grader_target(&mut inline_targets, &renderer);
        }
        Some(Suite {
            file: self.file.clone(),
            dir: self.dir.clone(),
            name,
            tests,
            target: None,
            target_loc: None,
            threshold: None,
            limits: LimitOverrides::default(),
            plugins: Vec::new(),
            // promptfoo's `evaluateOptions.repeat`: each repetition a row of
            // its own, each judged by promptfoo's rule.
            trials: root
                .get("evaluateOptions")
                .and_then(|o| o.get("repeat"))
                .and_then(Value::as_u64)
                .filter(|&n| n > 1)
                .map(|n| crate::model::Trials {
                    count: u32::try_from(n).unwrap_or(u32::MAX),
                    strategy: crate::model::Strategy::AllPass,
                    cost_limit_usd: None,
                }),
            exec_allow: None,
            workspace: None,
            matrix: providers,
            cache: false,
            workers: root
                .get("evaluateOptions")
                .and_then(|o| o.get("maxConcurrency"))
                .and_then(Value::as_u64)
                .map(|n| n.max(1) as usize),
            budget_usd: None,
            extensions: Vec::new(),
            cache_path: None,
            dialect: Dialect::Promptfoo,
            inline_targets,
            derived_metrics: derived,
            named_metrics: std::mem::take(&mut self.metrics),
            output_path: self.output_path(root.get("outputPath"), &top.key("outputPath")),
        })
    }

    /// `outputPath`: one `.json` file, where promptfoo's JSON results are
    /// written; any other format promptfoo writes is refused, not dropped.
    fn output_path(&mut self, value: Option<&Value>, at: &KeyPath) -> Option<PathBuf> {
        let paths: Vec<&str> = match value {
            None | Some(Value::Null) => return None,
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
                a.iter().filter_map(Value::as_str).collect()
            }
            Some(other) => {
                self.error(
                    at,
                    format!(
                        "`outputPath` must be a path or a list of paths, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                return None;
            }
        };
        if self.options.untrusted {
            self.error(
                at,
                "under --sandbox strict a suite does not choose where evalhost writes",
            )
            .hint = Some("name the file yourself: `--export promptfoo-json FILE`".into());
            return None;
        }
        let mut json = Vec::new();
        for p in paths {
            if p.to_ascii_lowercase().ends_with(".json") {
                json.push(PathBuf::from(p));
            } else {
                // An output file, not a grade: the run goes on, and the
                // user is told the file is not written.
                self.warning(at, format!("`outputPath: {p}` is not written: evalhost writes promptfoo's JSON results only (a `.json` path), where promptfoo would write this format; the run's results are in its results.jsonl and report.html"))
                    .hint = Some("use a .json path, or `--export promptfoo-json FILE`; `--reporter junit`/`--junit` writes JUnit XML".into());
            }
        }
        if json.len() > 1 {
            self.error(
                at,
                "`outputPath` lists several .json files; evalhost writes one",
            );
        }
        json.into_iter().next()
    }

    /// Checks `evaluateOptions`: `repeat` a whole number of trials evalhost
    /// runs, the keys that change what runs and evalhost does not read
    /// said, not dropped.
    fn evaluate_options(&mut self, options: Option<&Value>, at: &KeyPath) {
        let Some(Value::Object(options)) = options else {
            return;
        };
        if let Some(repeat) = options.get("repeat") {
            let ok = repeat.as_u64().is_some_and(|n| (1..=1000).contains(&n));
            if !ok {
                self.error(
                    &at.key("repeat"),
                    format!("`repeat` must be a whole number from 1 to 1000, got {repeat}"),
                );
            }
        }
        for (key, _) in options {
            match key.as_str() {
                "repeat" | "maxConcurrency" | "showProgressBar" | "cache" | "delay" => {}
                "timeoutMs" | "maxEvalTimeMs" => {
                    self.warning(
                        &at.key(key),
                        format!("`{key}` is not read: evalhost's own time limits apply (a target's `timeout_s`, the suite's limits)"),
                    );
                }
                _ => {
                    self.warning(
                        &at.key(key),
                        format!("`evaluateOptions.{key}` is not read by evalhost"),
                    );
                }
            }
        }
    }

    /// The config's `env:` over the environment evalhost sees, for
    /// `{{ env.NAME }}`.
    fn config_env(&mut self, root: &Map<String, Value>) -> Map<String, Value> {
        let mut env: Map<String, Value> = std::env::vars()
            .filter(|_| !self.options.untrusted)
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        if let Some(Value::Object(own)) = root.get("env") {
            for (k, v) in own {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    other => other.to_string(),
                };
                env.insert(k.clone(), Value::String(v));
            }
        }
        env
    }

    /// `derivedMetrics: [{name, value}]`, each value a mathjs expression.
    fn derived_metrics(
        &mut self,
        value: Option<&Value>,
        at: &KeyPath,
    ) -> Vec<crate::model::DerivedMetric> {
        let items = match value {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::Array(items)) => items,
            Some(_) => {
                self.error(at, "`derivedMetrics` must be a list of `{name, value}`");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let iat = at.index(i);
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty());
            let Some(name) = name else {
                self.error(&iat.key("name"), "a derived metric needs a `name`");
                continue;
            };
            match item.get("value") {
                Some(Value::String(src)) => match crate::mathexpr::parse(src) {
                    Ok(expr) => out.push(crate::model::DerivedMetric {
                        name: name.to_owned(),
                        source: src.clone(),
                        expr,
                    }),
                    Err(e) => {
                        self.error(&iat.key("value"), format!("derived metric `{name}`: {e}"));
                    }
                },
                _ => {
                    self.error(&iat.key("value"), format!("derived metric `{name}`: `value` must be an expression over the metrics (a JavaScript function is not run by this version of evalhost)"));
                }
            }
        }
        out
    }
}
