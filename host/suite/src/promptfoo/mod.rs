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

mod render;
#[cfg(test)]
mod tests;

use render::Renderer;
pub(crate) use render::{TEMPLATE_FUEL, guarded};

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
    tools: Option<Value>,
    functions: Option<Value>,
    /// The provider's `config` key.
    at: KeyPath,
}

/// The most tests one config may expand into.
const MAX_ROWS: usize = 1_000_000;

/// One prompt of the config.
#[derive(Debug, Clone)]
struct Prompt {
    raw: String,
    label: String,
    id: Option<String>,
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
    /// `options.provider` and `options.rubricPrompt`: how the test's
    /// model-graded assertions are graded.
    grading: Grading,
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
    let text = match crate::roots::read_regular_text(path, crate::load::MAX_FILE_BYTES) {
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
        for key in ["extensions", "nunjucksFilters", "redteam"] {
            if root.contains_key(key) {
                self.error(&top.key(key), format!("`{key}` is not read by this version of evalhost"))
                    .hint = Some("remove it to run the rest of the config; it is part of the promptfoo dialect still being built".into());
            }
        }
        self.evaluate_options(root.get("evaluateOptions"), &top.key("evaluateOptions"));
        let renderer = Renderer::new(&self.config_env(root));
        let prompts = self.prompts(root.get("prompts"), &top.key("prompts"), &renderer);
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
            }]
        } else {
            prompts
        };
        let mut tests = Vec::new();
        let mut ids = std::collections::HashSet::new();
        let mut var_files: std::collections::HashMap<PathBuf, Result<Value, String>> =
            std::collections::HashMap::new();
        for (n, row) in rows.into_iter().enumerate() {
            let row = match &default_test {
                Some(d) => merge_default(d, row),
                None => row,
            };
            let Some(combos) =
                expand_vars(&row.vars).filter(|c| c.len() * prompts.len() <= MAX_ROWS)
            else {
                self.error(&row.at.key("vars"), format!("these vars expand into more tests than evalhost reads from one config ({MAX_ROWS})"));
                continue;
            };
            for (k, written) in combos.iter().enumerate() {
                let mut vars = written.clone();
                self.load_file_vars(&mut vars, &row.at.key("vars"), &mut var_files);
                let vars = &vars;
                for (p, prompt) in prompts.iter().enumerate() {
                    let base = row
                        .description
                        .clone()
                        .unwrap_or_else(|| format!("test-{}", n + 1));
                    let mut id = base.clone();
                    if combos.len() > 1 {
                        id.push_str(&format!(" #{}", k + 1));
                    }
                    if prompts.len() > 1 {
                        // A prompt's own label when it was given one.
                        if prompt.label != prompt.raw && !prompt.label.starts_with("file://") {
                            id.push_str(&format!(" @{}", prompt.label));
                        } else {
                            id.push_str(&format!(" @prompt-{}", p + 1));
                        }
                    }
                    let mut unique = id.clone();
                    let mut i = 2;
                    while !ids.insert(unique.clone()) {
                        unique = format!("{id} ~{i}");
                        i += 1;
                    }
                    if let Some(mut test) = self.test(&row, vars, prompt, unique, &renderer) {
                        if !test.comparisons.is_empty() {
                            test.compare_group = Some(format!("{n}/{k}"));
                        }
                        // Rows show the vars as written (`file://…`), as
                        // promptfoo's results do; templates saw the contents.
                        if written != vars {
                            test.metadata
                                .insert("vars".into(), Value::Object(written.clone()));
                        }
                        tests.extend(self.with_providers(test, vars, &renderer));
                    }
                }
            }
        }
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
                self.error(at, format!("`outputPath: {p}`: evalhost writes promptfoo's JSON results only (a `.json` path); promptfoo would write this format"))
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

    fn prompts(&mut self, value: Option<&Value>, at: &KeyPath, renderer: &Renderer) -> Vec<Prompt> {
        let _ = renderer;
        let items: Vec<(Value, KeyPath)> = match value {
            None | Some(Value::Null) => {
                return vec![Prompt {
                    raw: "{{prompt}}".into(),
                    label: "{{prompt}}".into(),
                    id: None,
                }];
            }
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), at.index(i)))
                .collect(),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(path, label)| (json!({"id": path, "label": label}), at.key(path)))
                .collect(),
            Some(other) => vec![(other.clone(), at.clone())],
        };
        let mut out = Vec::new();
        for (item, iat) in items {
            match item {
                Value::String(s) => out.extend(self.prompt_source(&s, None, &iat)),
                Value::Object(o) => {
                    let label = o.get("label").and_then(Value::as_str).map(str::to_owned);
                    for key in o.keys() {
                        match key.as_str() {
                            "raw" | "id" | "label" => {}
                            "config" => {
                                self.error(&iat.key("config"), "a prompt's `config` is merged into each provider's request by promptfoo (`response_format`, `temperature`, …); this version of evalhost does not, so it refuses it rather than send requests without it")
                                    .hint = Some("put these settings in the provider's `config`".into());
                            }
                            other => {
                                self.error(&iat.key(other), format!("`{other}` of a prompt is not read by this version of evalhost"))
                                    .hint = Some("a prompt takes `raw` or `id`, and `label`".into());
                            }
                        }
                    }
                    match (
                        o.get("raw").and_then(Value::as_str),
                        o.get("id").and_then(Value::as_str),
                    ) {
                        (Some(raw), id) => out.push(Prompt {
                            raw: raw.to_owned(),
                            label: label.unwrap_or_else(|| raw.to_owned()),
                            id: id.map(str::to_owned),
                        }),
                        (None, Some(id)) => out.extend(self.prompt_source(id, label, &iat)),
                        (None, None) => {
                            self.error(
                                &iat,
                                "a prompt object needs `raw` (the template) or `id` (a file://)",
                            );
                        }
                    }
                }
                Value::Array(_) => {
                    self.error(&iat, "a chat prompt cannot be written as a nested list in promptfoo (\"Invalid prompt\")")
                        .hint = Some("put the messages in a JSON or YAML file and write `file://chat.json`".into());
                }
                other => {
                    self.error(
                        &iat,
                        format!(
                            "a prompt must be text, an object or a file://, got {}",
                            crate::agentv4::kind(&other)
                        ),
                    );
                }
            }
        }
        out
    }

    /// A prompt string: inline text, or (when it looks like a path, as
    /// promptfoo's `maybeFilePath` decides) the prompts of a file or glob.
    fn prompt_source(&mut self, value: &str, label: Option<String>, at: &KeyPath) -> Vec<Prompt> {
        if !maybe_file_path(value) {
            return vec![Prompt {
                raw: value.to_owned(),
                label: label.unwrap_or_else(|| value.to_owned()),
                id: None,
            }];
        }
        let spec = value.strip_prefix("file://").unwrap_or(value);
        let (spec, function) = match spec.rsplit_once(':') {
            Some((p, f))
                if !f.contains('/')
                    && (p.ends_with(".js")
                        || p.ends_with(".py")
                        || p.ends_with(".ts")
                        || p.ends_with(".mjs")
                        || p.ends_with(".cjs")) =>
            {
                (p, Some(f))
            }
            _ => (spec, None),
        };
        let ext = Path::new(spec)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        if matches!(ext.as_str(), "js" | "ts" | "mjs" | "cjs" | "py") || function.is_some() {
            self.error(at, format!("the prompt `{value}` is a prompt function, which this version of evalhost does not run"))
                .hint = Some("use a text, JSON or YAML prompt file; prompt functions will run in the sandbox with inline code".into());
            return Vec::new();
        }
        let files = match self.glob(spec, at) {
            Some(f) => f,
            None => return Vec::new(),
        };
        if files.is_empty() {
            self.error(at, format!("There are no prompts in `{value}`: no file matches"))
                .hint = Some("a one-line prompt with `/` or a file-like ending is read as a path, as in promptfoo; give it as `{raw: ...}`".into());
            return Vec::new();
        }
        let mut out = Vec::new();
        for file in files {
            let Some(text) = self.read_file(&file, at) else {
                continue;
            };
            let shown = file
                .strip_prefix(&self.dir)
                .map_or_else(|_| file.display().to_string(), |p| p.display().to_string());
            let id = format!("file://{shown}");
            let fext = file
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            let parts: Vec<String> = match fext.as_str() {
                "json" => vec![text.trim().to_owned()],
                "yaml" | "yml" => match crate::yaml::parse(&text) {
                    Ok(v) => vec![match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    }],
                    Err(e) => {
                        self.error(
                            at,
                            format!("{}: invalid YAML: {}", file.display(), e.message),
                        );
                        continue;
                    }
                },
                "jsonl" => text
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect(),
                "md" | "j2" => vec![text.clone()],
                _ => split_prompts(&text),
            };
            let many = parts.len() > 1;
            for (i, raw) in parts.into_iter().enumerate() {
                let label = match (&label, many) {
                    (Some(l), _) => l.clone(),
                    (None, true) => format!("{id}: {}", first_line(&raw)),
                    (None, false) => id.clone(),
                };
                let _ = i;
                out.push(Prompt {
                    raw,
                    label,
                    id: Some(id.clone()),
                });
            }
        }
        out
    }

    /// The files a path or glob names, inside the project root.
    fn glob(&mut self, spec: &str, at: &KeyPath) -> Option<Vec<PathBuf>> {
        if !spec.contains(['*', '?', '[', '{']) {
            return match self.options.roots.relative(spec, &self.dir) {
                Ok(p) => Some(vec![p]),
                Err(crate::roots::PathError::NotFound { .. }) => Some(Vec::new()),
                Err(e) => {
                    self.error(at, format!("`{spec}`: {e}"));
                    None
                }
            };
        }
        let matcher = match globset::Glob::new(spec) {
            Ok(g) => g.compile_matcher(),
            Err(e) => {
                self.error(at, format!("`{spec}` is not a valid glob: {e}"));
                return None;
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
            .filter_map(|e| self.options.roots.contain(e.path()).ok())
            .collect();
        found.sort();
        Some(found)
    }

    /// `path`, relative to the config, inside the project root; an error
    /// naming it as `shown` when it is not.
    fn relative(&mut self, path: &str, shown: &str, at: &KeyPath) -> Option<PathBuf> {
        match self.options.roots.relative(path, &self.dir) {
            Ok(p) => Some(p),
            Err(e) => {
                self.error(at, format!("{shown}: {e}"));
                None
            }
        }
    }

    /// A YAML or JSON file the config names, inside the project root,
    /// parsed.
    fn structured_file(&mut self, rel: &str, at: &KeyPath) -> Option<Value> {
        let path = self.relative(rel, &format!("`file://{rel}`"), at)?;
        let text = self.read_file(&path, at)?;
        match crate::yaml::parse(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(at, format!("{}: {e}", path.display()));
                None
            }
        }
    }

    fn read_file(&mut self, file: &Path, at: &KeyPath) -> Option<String> {
        match crate::roots::read_regular_text(file, crate::load::MAX_FILE_BYTES) {
            Ok(t) => Some(t),
            Err(e) => {
                self.error(at, format!("cannot read {}: {e}", file.display()));
                None
            }
        }
    }

    /// `providers` (or `targets`): the matrix and the targets the suite
    /// defines.
    fn providers(
        &mut self,
        root: &Map<String, Value>,
        renderer: &Renderer,
    ) -> (Vec<MatrixTarget>, Vec<InlineTarget>) {
        let top = KeyPath::default();
        let (key, value) = match (root.get("providers"), root.get("targets")) {
            (Some(p), None) => ("providers", p),
            (None, Some(t)) => ("targets", t),
            (Some(_), Some(_)) => {
                self.error(
                    &top.key("targets"),
                    "`providers` and `targets` are the same key; give one",
                );
                return (Vec::new(), Vec::new());
            }
            (None, None) => {
                self.error(&top, "the config has no `providers`")
                    .hint = Some("add `providers: [echo]` to check the config offline, or a model such as `openai:gpt-4.1-mini`".into());
                return (Vec::new(), Vec::new());
            }
        };
        let at = top.key(key);
        let items: Vec<(Value, KeyPath)> = match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), at.index(i)))
                .collect(),
            Value::String(_) | Value::Object(_) => vec![(value.clone(), at.clone())],
            other => {
                self.error(
                    &at,
                    format!(
                        "`{key}` must be a list, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                return (Vec::new(), Vec::new());
            }
        };
        let mut matrix = Vec::new();
        let mut inline = Vec::new();
        for (item, iat) in items {
            let (id, label, config) = match &item {
                Value::String(id) => (id.clone(), None, Map::new()),
                Value::Object(o) if o.contains_key("id") => (
                    o.get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    o.get("label").and_then(Value::as_str).map(str::to_owned),
                    o.get("config")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default(),
                ),
                Value::Object(o) if o.len() == 1 => {
                    let (id, opts) = o.iter().next().expect("one entry");
                    (
                        id.clone(),
                        opts.get("label").and_then(Value::as_str).map(str::to_owned),
                        opts.get("config")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                    )
                }
                other => {
                    self.error(
                        &iat,
                        format!(
                            "a provider must be an id or `{{id, label, config}}`, got {}",
                            crate::agentv4::kind(other)
                        ),
                    );
                    continue;
                }
            };
            let name = label.clone().unwrap_or_else(|| id.clone());
            // `prompts:` — the prompts this provider runs (promptfoo's
            // provider prompt map); any other key is said, not dropped.
            let (own, oat) = match &item {
                Value::Object(o) if o.contains_key("id") => (Some(o), iat.clone()),
                Value::Object(o) if o.len() == 1 => {
                    let (k, v) = o.iter().next().expect("one entry");
                    (v.as_object(), iat.key(k))
                }
                _ => (None, iat.clone()),
            };
            let mut listed = None;
            for (k, v) in own.into_iter().flatten() {
                match k.as_str() {
                    "id" | "label" | "config" => {}
                    "delay" => {
                        self.warning(&oat.key("delay"), "`delay` between calls is not read: evalhost paces calls by its workers and retries");
                    }
                    "prompts" => match v {
                        Value::Array(refs) if refs.iter().all(Value::is_string) => {
                            listed = Some(
                                refs.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect::<Vec<_>>(),
                            );
                        }
                        Value::String(one) => listed = Some(vec![one.clone()]),
                        other => {
                            self.error(&oat.key("prompts"), format!("`prompts` of a provider must be a list of prompt labels or ids, got {}", crate::agentv4::kind(other)));
                        }
                    },
                    other => {
                        self.error(
                            &oat.key(other),
                            format!(
                                "`{other}` of a provider is not read by this version of evalhost"
                            ),
                        )
                        .hint =
                            Some("a provider takes `id`, `label`, `config` and `prompts`".into());
                    }
                }
            }
            self.provider_prompts.push((name.clone(), listed));
            let Some(mut entry) = self.provider_entry(&id, &config, &iat, renderer) else {
                continue;
            };
            self.provider_infos.push(ProviderInfo {
                name: name.clone(),
                kind: provider_kind(&id),
                tools: config.get("tools").cloned(),
                functions: config.get("functions").cloned(),
                at: match &item {
                    Value::Object(o) if !o.contains_key("id") && o.len() == 1 => {
                        iat.key(&id).key("config")
                    }
                    _ => iat.key("config"),
                },
            });
            entry.insert("name".into(), Value::String(name.clone()));
            inline.push(InlineTarget {
                entry,
                loc: self.loc(&iat),
            });
            matrix.push(MatrixTarget {
                name: name.clone(),
                use_target: name,
                hooks: Default::default(),
                loc: Some(self.loc(&iat)),
            });
        }
        (matrix, inline)
    }

    /// The model that grades `llm-rubric` (promptfoo's grading provider):
    /// `defaultTest.options.provider`, else promptfoo 0.121's default OpenAI
    /// grader (`gpt-5.5-2026-04-23`, JSON replies) on the OpenAI endpoint
    /// the environment names. It becomes the judge of every provider.
    fn grader_target(&mut self, inline: &mut Vec<InlineTarget>, renderer: &Renderer) {
        let top = KeyPath::default();
        // promptfoo's default graders: one asked for JSON (`llm-rubric`),
        // one for text (`model-graded-closedqa`).
        let (graders, at) = match self.grading_provider.clone() {
            Some((Value::String(id), at)) => (
                vec![
                    (GRADER, id.clone(), Map::new()),
                    (GRADER_JSON, id, Map::new()),
                ],
                at,
            ),
            Some((Value::Object(o), at)) if o.get("id").is_some_and(Value::is_string) => {
                let id = o["id"].as_str().unwrap_or_default().to_owned();
                let config = o
                    .get("config")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                (
                    vec![
                        (GRADER, id.clone(), config.clone()),
                        (GRADER_JSON, id, config),
                    ],
                    at,
                )
            }
            Some((_, at)) => {
                self.error(
                    &at,
                    "a grading `provider` must be a provider id or `{id, config}`",
                );
                return;
            }
            None => {
                let mut json_config = Map::new();
                json_config.insert("response_format".into(), json!({"type": "json_object"}));
                let id = "openai:chat:gpt-5.5-2026-04-23".to_owned();
                (
                    vec![
                        (GRADER, id.clone(), Map::new()),
                        (GRADER_JSON, id, json_config),
                    ],
                    top.key("defaultTest"),
                )
            }
        };
        for target in inline.iter_mut() {
            target
                .entry
                .insert("grader_target".into(), Value::String(GRADER.into()));
        }
        let mut graders = graders;
        if self.uses_embedder {
            graders.push((
                EMBEDDER,
                "openai:embedding:text-embedding-3-large".to_owned(),
                Map::new(),
            ));
        }
        let named = std::mem::take(&mut self.named_graders);
        let graders = graders
            .into_iter()
            .map(|(name, id, config)| (name.to_owned(), id, config, at.clone()))
            .chain(named.iter().enumerate().filter_map(|(i, g)| {
                let (id, config) = grader_spec(&g.spec)?;
                Some((format!("{GRADER}-{}", i + 1), id, config, g.at.clone()))
            }));
        for (name, id, config, at) in graders.collect::<Vec<_>>() {
            let Some(mut entry) = self.provider_entry(&id, &config, &at, renderer) else {
                continue;
            };
            entry.insert("name".into(), Value::String(name));
            inline.push(InlineTarget {
                entry,
                loc: self.loc(&at),
            });
        }
    }

    /// The judge target of a model-graded assertion: the provider the
    /// assertion or its test names (promptfoo's `provider` in the grading
    /// options), else the config's grading model (`json`: the one asked for
    /// JSON, which `llm-rubric` uses).
    fn judge(&mut self, json: bool, provider: Option<(Value, KeyPath)>) -> String {
        self.uses_grader = true;
        let Some((spec, at)) = provider else {
            return if json { GRADER_JSON } else { GRADER }.to_owned();
        };
        // A map by output type (`{text: …, embedding: …}`): the text one.
        let spec = match &spec {
            Value::Object(o) if !o.contains_key("id") && o.contains_key("text") => {
                o["text"].clone()
            }
            _ => spec,
        };
        if grader_spec(&spec).is_none() {
            self.error(
                &at,
                "a grading `provider` must be a provider id, `{id, config}`, or a map by type (`text: …`)",
            );
        }
        self.named(spec, at)
    }

    /// The judge target of a provider a test or an assertion names, one
    /// per distinct provider.
    fn named(&mut self, spec: Value, at: KeyPath) -> String {
        let key = serde_json::to_string(&spec).unwrap_or_default();
        let i = match self.named_graders.iter().position(|g| g.key == key) {
            Some(i) => i,
            None => {
                self.named_graders.push(NamedGrader { key, spec, at });
                self.named_graders.len() - 1
            }
        };
        format!("{GRADER}-{}", i + 1)
    }

    /// The grader of `search-rubric`: the provider the assertion or its
    /// test names, else `defaultTest.options.provider`, which must search
    /// the web. Of promptfoo's web-search graders evalhost runs OpenAI's
    /// chat search models (`gpt-4o-search-preview`, `gpt-4o-mini-search-preview`,
    /// `gpt-5-search-api`); promptfoo's own default is its Responses API
    /// with the web-search tool, which evalhost does not run, so one must be
    /// named.
    fn search_judge(
        &mut self,
        provider: Option<(Value, KeyPath)>,
        assertion: &KeyPath,
    ) -> Option<String> {
        self.uses_grader = true;
        let Some((spec, at)) = provider.or_else(|| self.grading_provider.clone()) else {
            self.error(
                &assertion.key("type"),
                "`search-rubric` needs a grading model that searches the web; promptfoo's default one runs on OpenAI's Responses API, which evalhost does not run",
            )
            .hint = Some("name one evalhost runs: `provider: openai:chat:gpt-4o-search-preview` on the assertion, the test's options or `defaultTest.options`".into());
            return None;
        };
        let spec = match &spec {
            Value::Object(o) if !o.contains_key("id") && o.contains_key("text") => {
                o["text"].clone()
            }
            _ => spec,
        };
        let searches = grader_spec(&spec).is_some_and(|(id, config)| {
            let model = config
                .get("passthrough")
                .and_then(|p| p.get("model"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| id.strip_prefix("openai:chat:").map(str::to_owned));
            id.starts_with("openai:chat:") && model.is_some_and(|m| is_search_model(&m))
        });
        if !searches {
            self.error(
                &at,
                "`search-rubric` needs a grading model that searches the web (promptfoo: \"search-rubric assertion requires a grading provider with web search capabilities\"); of those, evalhost runs OpenAI's chat search models",
            )
            .hint = Some("`provider: openai:chat:gpt-4o-search-preview` (or gpt-4o-mini-search-preview, gpt-5-search-api)".into());
            return None;
        }
        Some(self.named(spec, at))
    }

    /// The embedding model of `similar` and `answer-relevance`, as
    /// promptfoo picks it: the assertion's or the test's `provider` (its
    /// `embedding` entry, when it is a map by type), which must be an
    /// embedding model; else `defaultTest.options.provider` when it is one;
    /// else promptfoo's default, OpenAI's `text-embedding-3-large`.
    fn embedder(&mut self, provider: Option<(Value, KeyPath)>) -> Option<String> {
        self.uses_grader = true;
        let by_type = |v: Value| match &v {
            Value::Object(o) if o.contains_key("embedding") => o["embedding"].clone(),
            _ => v,
        };
        if let Some((spec, at)) = provider {
            let spec = by_type(spec);
            let id = grader_spec(&spec).map(|(id, _)| id);
            if !id.as_deref().is_some_and(is_embedding_id) {
                self.error(
                    &at,
                    format!(
                        "{} is not an embedding model evalhost can ask (promptfoo fails the assertion: \"not a valid embedding provider\")",
                        id.map_or("this provider".to_owned(), |id| format!("`{id}`"))
                    ),
                )
                .hint = Some("name an OpenAI-compatible one, `openai:embedding:<model>` (with `config.apiBaseUrl` for another endpoint)".into());
                return None;
            }
            return Some(self.named(spec, at));
        }
        if let Some((default, at)) = self.grading_provider.clone() {
            let candidate = match &default {
                Value::Object(o) if !o.contains_key("id") && o.get("text").is_some() => {
                    o["text"].clone()
                }
                _ => default,
            };
            let candidate = by_type(candidate);
            if grader_spec(&candidate).is_some_and(|(id, _)| is_embedding_id(&id)) {
                return Some(self.named(candidate, at));
            }
        }
        self.uses_embedder = true;
        Some(EMBEDDER.to_owned())
    }

    /// `options.factuality`: a number per category name promptfoo knows.
    fn factuality_scores(&mut self, v: &Value, at: &KeyPath) -> Option<Map<String, Value>> {
        const CATEGORIES: [&str; 5] = [
            "subset",
            "superset",
            "agree",
            "disagree",
            "differButFactual",
        ];
        let Value::Object(o) = v else {
            self.error(at, "`options.factuality` must be a mapping of category scores (subset, superset, agree, disagree, differButFactual)");
            return None;
        };
        for (k, score) in o {
            if !CATEGORIES.contains(&k.as_str()) {
                self.error(&at.key(k), format!("`{k}` is not a factuality category; promptfoo reads subset, superset, agree, disagree and differButFactual"))
                    .hint = crate::diag::nearest(k, CATEGORIES.iter().copied()).map(|n| format!("did you mean `{n}`?"));
            } else if !score.is_number() {
                self.error(
                    &at.key(k),
                    format!("a factuality score must be a number, got {score}"),
                );
            }
        }
        Some(o.clone())
    }

    /// A `rubricPrompt` as promptfoo's `loadRubricPrompt` reads it: a
    /// `file://` reference is that file's text (a JavaScript one is run by
    /// promptfoo, and refused here); text, a list of messages or a mapping
    /// is the prompt itself.
    fn rubric_prompt(&mut self, prompt: &Value, at: &KeyPath) -> Option<Value> {
        let Value::String(text) = prompt else {
            return Some(prompt.clone());
        };
        let Some(rest) = text.strip_prefix("file://") else {
            return Some(prompt.clone());
        };
        let (file, _) = file_and_function(text);
        let lower = file.to_ascii_lowercase();
        if [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"]
            .iter()
            .any(|e| lower.ends_with(e))
        {
            self.error(
                at,
                format!("`{text}`: promptfoo runs this JavaScript file on the host to build the grading prompt, and evalhost does not run host code for a prompt"),
            )
            .hint = Some("write the prompt in a .txt or .json file, or inline".into());
            return None;
        }
        let path = self.relative(file, &format!("`file://{rest}`"), at)?;
        let text = self.read_file(&path, at)?;
        Some(Value::String(text))
    }

    /// A provider id as a targets-file entry.
    fn provider_entry(
        &mut self,
        id: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        // promptfoo renders `{{ env.X }}` in a provider's config when it
        // loads the provider (`renderEnvOnlyInObject`); a variable that is
        // not set would be sent as the template text, so it is refused.
        let Value::Object(rendered) = fill_env_refs(&Value::Object(config.clone()), renderer)
        else {
            unreachable!("an object stays an object");
        };
        for (key, value) in &rendered {
            let unset = unset_env_refs(value);
            if let Some(name) = unset.first() {
                self.error(
                    &at.key("config").key(key),
                    format!("`config.{key}` names `{{{{ env.{name} }}}}`, and `{name}` is not set; promptfoo would send the template text as written"),
                )
                .hint = Some(if self.options.untrusted {
                    "under --sandbox strict a config sees only its own `env:`; give the value in a targets file you trust".into()
                } else {
                    format!("set {name} in the environment (or in the config's `env:`)")
                });
                return None;
            }
        }
        let written = config;
        let config = &rendered;
        let mut entry = Map::new();
        if id == "echo" {
            entry.insert("provider".into(), "echo".into());
            return Some(entry);
        }
        let model = id
            .strip_prefix("openai:embedding:")
            .or_else(|| id.strip_prefix("openai:embeddings:"))
            .or_else(|| id.strip_prefix("openai:chat:"))
            .or_else(|| id.strip_prefix("openai:responses:"))
            .or_else(|| id.strip_prefix("openai:"));
        if let Some(model) = model {
            let env = |name: &str| renderer.env_value(name);
            let key_var = config
                .get("apiKeyEnvar")
                .and_then(Value::as_str)
                .unwrap_or("OPENAI_API_KEY");
            let base_url = config
                .get("apiBaseUrl")
                .or(config.get("apiHost").filter(|_| false))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| env("OPENAI_BASE_URL"))
                .or_else(|| env("OPENAI_API_BASE_URL"))
                .unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
            entry.insert("provider".into(), "openai".into());
            entry.insert("model".into(), model.into());
            entry.insert("base_url".into(), base_url.into());
            if let Some(key) = config.get("apiKey").and_then(Value::as_str) {
                if !written
                    .get("apiKey")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.contains("{{"))
                {
                    self.warning(at, "`config.apiKey` is written in the config; evalhost uses it, but keep keys in the environment (`apiKeyEnvar`, or `{{ env.NAME }}`)");
                }
                entry.insert("api_key".into(), key.into());
            } else if let Some(key) = env(key_var) {
                entry.insert("api_key".into(), key.into());
            }
            for (from, to) in [
                ("temperature", "temperature"),
                ("max_tokens", "max_output_tokens"),
            ] {
                if let Some(v) = config.get(from) {
                    entry.insert(to.into(), v.clone());
                }
            }
            // The candidate as promptfoo's provider makes it; the request
            // fields it sends as given.
            entry.insert("output_style".into(), "promptfoo".into());
            let mut params = Map::new();
            for (k, v) in config {
                let kat = at.key("config").key(k);
                match k.as_str() {
                    "apiKey" | "apiKeyEnvar" | "apiBaseUrl" | "temperature" | "max_tokens" => {}
                    "showThinking" => {
                        entry.insert(
                            "show_thinking".into(),
                            Value::Bool(v.as_bool() != Some(false)),
                        );
                    }
                    "top_p"
                    | "presence_penalty"
                    | "frequency_penalty"
                    | "stop"
                    | "seed"
                    | "tool_choice"
                    | "function_call"
                    | "max_completion_tokens"
                    | "reasoning_effort"
                    | "user"
                    | "logit_bias"
                    | "store"
                    | "metadata"
                    | "prompt_cache_key"
                    | "tools"
                    | "functions"
                    | "response_format" => {
                        if let Value::String(s) = v
                            && s.starts_with("file://")
                        {
                            self.error(&kat, format!("`config.{k}: {s}`: a file here is not read by this version of evalhost; write it inline"));
                            continue;
                        }
                        if v.to_string().contains("{{") {
                            self.error(&kat, format!("`config.{k}` holds a template, which promptfoo renders with each test's vars; this version of evalhost sends it as written, so it refuses it"));
                            continue;
                        }
                        params.insert(k.clone(), v.clone());
                    }
                    "passthrough" => match v {
                        Value::Object(o) => params.extend(o.clone()),
                        _ => {
                            self.error(
                                &kat,
                                "`config.passthrough` must be an object of request fields",
                            );
                        }
                    },
                    other => {
                        self.error(&kat, format!("`config.{other}` of an OpenAI provider is not read by this version of evalhost"))
                            .hint = Some("evalhost sends temperature, max_tokens, top_p, presence_penalty, frequency_penalty, stop, seed, tools, tool_choice, functions, function_call, response_format, max_completion_tokens, reasoning_effort, user, logit_bias, store, metadata, prompt_cache_key and passthrough".into());
                    }
                }
            }
            if !params.is_empty() {
                entry.insert("request_params".into(), Value::Object(params));
            }
            return Some(entry);
        }
        if let Some(script) = id.strip_prefix("exec:") {
            return self.exec_provider(id, script, config, at);
        }
        if id == "http" || id == "https" || id.starts_with("http://") || id.starts_with("https://")
        {
            return self.http_provider(id, config, at, renderer);
        }
        let file = id
            .strip_prefix("file://")
            .or_else(|| id.strip_prefix("python:"));
        if let Some(file) = file {
            return self.script_provider(id, file, config, at);
        }
        self.error(at, format!("the provider `{id}` is not run by this version of evalhost"))
            .hint = Some("supported so far: echo, openai:<model>, openai:chat:<model> (any OpenAI-compatible endpoint with config.apiBaseUrl), exec:<command>, file://provider.py|.js".into());
        None
    }

    /// promptfoo's `renderPrompt` for vars that name files (`file://…`,
    /// relative to the config): text trimmed, YAML as its JSON, an image
    /// as a `data:` URI; code, PDFs, audio and video are refused.
    fn load_file_vars(
        &mut self,
        vars: &mut Map<String, Value>,
        at: &KeyPath,
        cache: &mut std::collections::HashMap<PathBuf, Result<Value, String>>,
    ) {
        let names: Vec<String> = vars
            .iter()
            .filter(|(_, v)| v.as_str().is_some_and(|s| s.starts_with("file://")))
            .map(|(k, _)| k.clone())
            .collect();
        for name in names {
            let spec = vars[&name].as_str().unwrap_or_default().to_owned();
            let rel = &spec["file://".len()..];
            let Some(path) = self.relative(rel, &format!("var `{name}`: `{spec}`"), &at.key(&name))
            else {
                continue;
            };
            let loaded = cache
                .entry(path.clone())
                .or_insert_with(|| load_var_file(&path))
                .clone();
            match loaded {
                Ok(v) => {
                    vars.insert(name, v);
                }
                Err(e) => {
                    self.error(&at.key(&name), format!("var `{name}`: `{spec}`: {e}"));
                }
            }
        }
    }

    /// promptfoo's `http` provider (`id: https://…`, or `http` with
    /// `config.url`): method, headers, a templated body, and a
    /// `transformResponse` that is a property path.
    fn http_provider(
        &mut self,
        id: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        let mut entry = Map::new();
        entry.insert("provider".into(), "http".into());
        let url = match config.get("url").and_then(Value::as_str) {
            Some(u) => u.to_owned(),
            None if id.contains("://") => id.to_owned(),
            None => {
                self.error(
                    &at.key("config").key("url"),
                    "an `http` provider needs `config.url`",
                );
                return None;
            }
        };
        entry.insert("url".into(), Value::String(url));
        for (k, v) in config {
            match k.as_str() {
                "url" => {}
                // `{{ env.X }}` is the config's environment, filled now;
                // the vars and `{{ prompt }}` are filled per test.
                "method" | "body" | "headers" => {
                    entry.insert(k.clone(), fill_env_refs(v, renderer));
                }
                "transformResponse" | "responseParser" => match v {
                    Value::String(e) if e.starts_with("file://") => {
                        self.error(&at.key("config").key(k), format!("`{k}: {e}`: a JavaScript file, which needs the JavaScript sandbox this version of evalhost does not have yet"));
                        return None;
                    }
                    Value::String(e) => {
                        entry.insert("transform_response".into(), Value::String(e.clone()));
                    }
                    _ => {
                        self.error(
                            &at.key("config").key(k),
                            format!("`{k}` must be an expression"),
                        );
                        return None;
                    }
                },
                "timeout" => {
                    if let Some(ms) = v.as_f64() {
                        entry.insert("timeout_seconds".into(), serde_json::json!(ms / 1000.0));
                    }
                }
                other => {
                    self.error(
                        &at.key("config").key(other),
                        format!("`config.{other}` of an `http` provider is not read by this version of evalhost"),
                    )
                    .hint = Some("evalhost reads url, method, headers, body, transformResponse (a property path) and timeout".into());
                    return None;
                }
            }
        }
        Some(entry)
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

    /// The provider options promptfoo hands a script: its id and config,
    /// with `basePath` the config's directory.
    fn provider_options(&self, id: &str, config: &Map<String, Value>) -> String {
        let mut c = config.clone();
        c.insert(
            "basePath".into(),
            Value::String(self.abs_dir().display().to_string()),
        );
        json!({"id": id, "config": c}).to_string()
    }

    fn abs_dir(&self) -> PathBuf {
        let d = if self.dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.dir
        };
        d.canonicalize().unwrap_or_else(|_| d.to_path_buf())
    }

    /// `exec:<command line>`: promptfoo's `ScriptCompletionProvider` — the
    /// command's words (split on spaces, quotes kept together), then the
    /// prompt, the provider options and the context as arguments, run in
    /// the config's directory; trimmed stdout is the output.
    fn exec_provider(
        &mut self,
        id: &str,
        script: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
    ) -> Option<Map<String, Value>> {
        let parts = script_parts(script);
        if parts.is_empty() {
            self.error(at, format!("`{id}`: no command after `exec:`"));
            return None;
        }
        let words: Vec<String> = parts.iter().map(|p| shell_quote(p)).collect();
        let command = format!(
            "{} {{PROMPT}} {} {{CONTEXT}} > {{OUTPUT_FILE}}",
            words.join(" "),
            shell_quote(&self.provider_options(id, config))
        );
        let mut entry = Map::new();
        entry.insert("provider".into(), "cli".into());
        entry.insert("command".into(), Value::String(command));
        entry.insert(
            "cwd".into(),
            Value::String(self.abs_dir().display().to_string()),
        );
        entry.insert("trace_format".into(), "text-trimmed".into());
        Some(entry)
    }

    /// `file://provider.py[:fn]` (`call_api` by default) or
    /// `file://provider.js[:fn]`: the script's function called with the
    /// prompt, the provider options and the context, through a small
    /// runner on `python3` or `node`, as promptfoo's Python and JavaScript
    /// providers call it.
    fn script_provider(
        &mut self,
        id: &str,
        file: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
    ) -> Option<Map<String, Value>> {
        let (path_part, function) = match file.rsplit_once(':') {
            Some((p, f)) if !f.contains('/') && !f.contains('\\') && !p.is_empty() => {
                (p, Some(f.to_owned()))
            }
            _ => (file, None),
        };
        let lang = if path_part.ends_with(".py") {
            "python"
        } else if [".js", ".mjs", ".cjs"]
            .iter()
            .any(|e| path_part.ends_with(e))
        {
            "node"
        } else {
            self.error(at, format!("the provider `{id}` is not run by this version of evalhost"))
                .hint = Some("script providers run from file://…py and file://…js (Go, Ruby and TypeScript providers are not run)".into());
            return None;
        };
        let path = self.relative(path_part, &format!("`{id}`"), at)?;
        let (program, runner, default_fn) = if lang == "python" {
            ("python3", PY_PROVIDER_RUNNER, "call_api")
        } else {
            ("node", JS_PROVIDER_RUNNER, "")
        };
        let command = format!(
            "{program} {flag} {runner} {path} {function} {{PROMPT}} {options} {{CONTEXT}} > {{OUTPUT_FILE}}",
            flag = if lang == "python" { "-c" } else { "-e" },
            runner = shell_quote(runner),
            path = shell_quote(&path.display().to_string()),
            function = shell_quote(function.as_deref().unwrap_or(default_fn)),
            options = shell_quote(&self.provider_options(id, config)),
        );
        let mut entry = Map::new();
        entry.insert("provider".into(), "cli".into());
        entry.insert("command".into(), Value::String(command));
        entry.insert(
            "cwd".into(),
            Value::String(self.abs_dir().display().to_string()),
        );
        entry.insert("trace_format".into(), "agentv".into());
        Some(entry)
    }

    /// `tests`: inline rows, or files of rows.
    fn tests(&mut self, value: Option<&Value>, at: &KeyPath) -> Vec<Row> {
        let mut rows = Vec::new();
        let items: Vec<(Value, KeyPath)> = match value {
            None | Some(Value::Null) => return rows,
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), at.index(i)))
                .collect(),
            Some(other) => vec![(other.clone(), at.clone())],
        };
        for (item, iat) in items {
            match item {
                Value::Object(t) => rows.push(self.row(&t, &iat, false)),
                Value::String(spec) => rows.extend(self.test_file(&spec, &iat)),
                other => {
                    self.error(
                        &iat,
                        format!(
                            "a test must be a mapping or a file://, got {}",
                            crate::agentv4::kind(&other)
                        ),
                    );
                }
            }
        }
        rows
    }

    /// `scenarios`: each `config` row with each of its `tests` (or one empty
    /// test), merged as promptfoo merges them: vars and metadata shallow
    /// (the test's win), the config row's assertions first.
    fn scenarios(&mut self, value: Option<&Value>, at: &KeyPath) -> Vec<Row> {
        let Some(value) = value else {
            return Vec::new();
        };
        let Value::Array(scenarios) = value else {
            self.error(at, "`scenarios` must be a list of `{config, tests}`");
            return Vec::new();
        };
        // `file://` entries (globs allowed): each file holds one scenario
        // or a list of them.
        let mut expanded: Vec<(Value, KeyPath)> = Vec::new();
        for (i, scenario) in scenarios.iter().enumerate() {
            let sat = at.index(i);
            match scenario {
                Value::String(spec) if spec.starts_with("file://") => {
                    let Some(files) = self.glob(&spec["file://".len()..], &sat) else {
                        continue;
                    };
                    if files.is_empty() {
                        self.error(&sat, format!("`{spec}` matches no file"));
                    }
                    for file in files {
                        let shown = file.display().to_string();
                        match self.structured_file(&shown, &sat) {
                            Some(Value::Array(list)) => {
                                expanded.extend(list.into_iter().map(|v| (v, sat.clone())));
                            }
                            Some(v) => expanded.push((v, sat.clone())),
                            None => {}
                        }
                    }
                }
                other => expanded.push((other.clone(), sat)),
            }
        }
        let mut rows = Vec::new();
        for (scenario, sat) in &expanded {
            let sat = sat.clone();
            let Value::Object(sc) = scenario else {
                self.error(&sat, "a scenario must be a mapping with `config` and `tests` (a `file://` scenario is not read by this version of evalhost)");
                continue;
            };
            let configs: Vec<(Map<String, Value>, KeyPath)> = match sc.get("config") {
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(j, v)| {
                        v.as_object()
                            .map(|o| (o.clone(), sat.key("config").index(j)))
                    })
                    .collect(),
                _ => {
                    self.error(
                        &sat.key("config"),
                        "a scenario needs `config`, a list of partial tests",
                    );
                    continue;
                }
            };
            let tests: Vec<(Map<String, Value>, KeyPath)> = match sc.get("tests") {
                None => vec![(Map::new(), sat.clone())],
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(j, v)| {
                        v.as_object()
                            .map(|o| (o.clone(), sat.key("tests").index(j)))
                    })
                    .collect(),
                Some(_) => {
                    self.error(&sat.key("tests"), "a scenario's `tests` must be a list");
                    continue;
                }
            };
            for (data, dat) in &configs {
                let base = self.row(data, dat, true);
                for (test, tat) in &tests {
                    let own = self.row(test, tat, true);
                    let mut merged = own.clone();
                    merged.description = own.description.clone().or(base.description.clone());
                    let mut vars = base.vars.clone();
                    vars.extend(own.vars.clone());
                    merged.vars = vars;
                    let mut metadata = base.metadata.clone();
                    metadata.extend(own.metadata.clone());
                    merged.metadata = metadata;
                    let mut assert = base.assert.clone();
                    assert.extend(own.assert.clone());
                    merged.assert = assert;
                    merged.threshold = own.threshold.or(base.threshold);
                    rows.push(merged);
                }
            }
        }
        rows
    }

    /// Rows from `file://tests.yaml|json|jsonl|csv` (globs allowed).
    fn test_file(&mut self, spec: &str, at: &KeyPath) -> Vec<Row> {
        let path = spec.strip_prefix("file://").unwrap_or(spec);
        let Some(files) = self.glob(path, at) else {
            return Vec::new();
        };
        if files.is_empty() {
            self.error(at, format!("`{spec}`: no file matches"));
            return Vec::new();
        }
        let mut rows = Vec::new();
        for file in files {
            let Some(text) = self.read_file(&file, at) else {
                continue;
            };
            let ext = file
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            // Each value with its line in the file, when known.
            let mut lines: Vec<usize> = Vec::new();
            let values: Vec<Value> = match ext.as_str() {
                "csv" => match csv_rows(&text) {
                    Ok(v) => v
                        .into_iter()
                        .map(|(line, value)| {
                            lines.push(line);
                            value
                        })
                        .collect(),
                    Err(e) => {
                        self.error(at, format!("{}: {e}", file.display()))
                            .hint = Some("quote a field that holds a comma (\"a, b\"), and give every row the header's number of fields; promptfoo refuses such a file too".into());
                        continue;
                    }
                },
                "jsonl" => {
                    let mut v = Vec::new();
                    for (i, line) in text
                        .lines()
                        .enumerate()
                        .filter(|(_, l)| !l.trim().is_empty())
                    {
                        match serde_json::from_str(line) {
                            Ok(x) => {
                                lines.push(i + 1);
                                v.push(x)
                            }
                            Err(e) => {
                                self.error(
                                    at,
                                    format!("{}:{}: not JSON: {e}", file.display(), i + 1),
                                );
                            }
                        }
                    }
                    v
                }
                "json" | "yaml" | "yml" => match crate::yaml::parse(&text) {
                    Ok(Value::Array(v)) => v,
                    Ok(v @ Value::Object(_)) => vec![v],
                    Ok(other) => {
                        self.error(
                            at,
                            format!(
                                "{}: a tests file holds a test or a list of tests, got {}",
                                file.display(),
                                crate::agentv4::kind(&other)
                            ),
                        );
                        continue;
                    }
                    Err(e) => {
                        self.error(
                            at,
                            format!(
                                "{}: invalid {}: {}",
                                file.display(),
                                ext.to_uppercase(),
                                e.message
                            ),
                        );
                        continue;
                    }
                },
                other => {
                    self.error(at, format!("{}: tests from `.{other}` files are not read (yaml, json, jsonl, csv are)", file.display()));
                    continue;
                }
            };
            let shown = Arc::new(file.clone());
            for (i, v) in values.into_iter().enumerate() {
                let Value::Object(t) = v else {
                    self.error(
                        at,
                        format!(
                            "{} item {}: a test must be a mapping",
                            file.display(),
                            i + 1
                        ),
                    );
                    continue;
                };
                let mut row = self.row(&t, at, false);
                row.file = shown.clone();
                row.pos = lines
                    .get(i)
                    .map(|&line| crate::source_map::Pos { line, col: 1 });
                if row.description.is_none() && ext == "csv" {
                    row.description = Some(format!("Row #{}", i + 1));
                }
                rows.push(row);
            }
        }
        rows
    }

    /// One test mapping (or `defaultTest`).
    fn row(&mut self, t: &Map<String, Value>, at: &KeyPath, default: bool) -> Row {
        for key in t.keys() {
            if !TEST_KEYS.contains(&key.as_str()) {
                self.warning(
                    &at.key(key),
                    format!("unknown test key `{key}`; promptfoo ignores it, and so does evalhost"),
                )
                .hint = crate::diag::nearest(key, TEST_KEYS.iter().copied())
                    .map(|n| format!("did you mean `{n}`?"));
            }
        }
        if !default
            && ![
                "assert",
                "vars",
                "options",
                "metadata",
                "provider",
                "providerOutput",
                "threshold",
            ]
            .iter()
            .any(|k| t.contains_key(*k))
        {
            self.error(at, "a test needs at least one of assert, vars, options, metadata, provider, providerOutput, threshold (promptfoo refuses it too)");
        }
        for key in ["provider", "providers", "prompts", "assertScoringFunction"] {
            if t.contains_key(key) {
                self.error(
                    &at.key(key),
                    format!("a test's `{key}` is not read by this version of evalhost"),
                );
            }
        }
        let (mut transform, mut postprocess) = (None, None);
        let mut grading = Grading::default();
        if let Some(Value::Object(options)) = t.get("options") {
            for (key, v) in options {
                let oat = at.key("options").key(key);
                match key.as_str() {
                    "transform" => transform = Some((v.clone(), oat)),
                    "postprocess" => postprocess = Some((v.clone(), oat)),
                    "provider" if default => self.grading_provider = Some((v.clone(), oat)),
                    "provider" => grading.provider = Some((v.clone(), oat)),
                    "rubricPrompt" => grading.rubric_prompt = Some((v.clone(), oat)),
                    "factuality" => grading.factuality = self.factuality_scores(v, &oat),
                    _ => {
                        self.error(
                            &oat,
                            format!("test option `{key}` is not read by this version of evalhost"),
                        );
                    }
                }
            }
        }
        let vars = match t.get("vars") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(v)) => v.clone(),
            Some(_) => {
                self.error(&at.key("vars"), "`vars` as a file list is not read by this version of evalhost; write the vars inline");
                Map::new()
            }
        };
        let assert = match t.get("assert") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), at.key("assert").index(i)))
                .collect(),
            Some(other) => {
                self.error(
                    &at.key("assert"),
                    format!(
                        "`assert` must be a list, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                Vec::new()
            }
        };
        let threshold = match t.get("threshold") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && (0.0..=1.0).contains(&x) => Some(x),
                _ => {
                    self.error(
                        &at.key("threshold"),
                        format!("`threshold` must be a number, got {v}"),
                    );
                    None
                }
            },
        };
        Row {
            description: t
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            vars,
            assert,
            threshold,
            metadata: t
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            provider_output: t.get("providerOutput").cloned(),
            transform,
            postprocess,
            grading,
            at: at.clone(),
            file: self.file.clone(),
            pos: None,
        }
    }

    /// The providers that run `prompt`, when some provider lists the
    /// prompts it runs (promptfoo's `isPromptAllowed`: a label or id equal
    /// to a reference, a `prefix*` pattern, or `ref:` at its start); `None`
    /// when every provider runs it.
    fn targets_for(&self, prompt: &Prompt) -> Option<Vec<String>> {
        if self.provider_prompts.iter().all(|(_, l)| l.is_none()) {
            return None;
        }
        let id = prompt.id.as_deref();
        let matches = |r: &String| {
            prompt.label == *r
                || id == Some(r.as_str())
                || r.strip_suffix('*').is_some_and(|p| {
                    prompt.label.starts_with(p) || id.is_some_and(|i| i.starts_with(p))
                })
                || prompt.label.starts_with(&format!("{r}:"))
                || id.is_some_and(|i| i.starts_with(&format!("{r}:")))
        };
        Some(
            self.provider_prompts
                .iter()
                .filter(|(_, listed)| listed.as_ref().is_none_or(|refs| refs.iter().any(matches)))
                .map(|(name, _)| name.clone())
                .collect(),
        )
    }

    /// One canonical test: `row` with `vars`, rendered with `prompt`.
    fn test(
        &mut self,
        row: &Row,
        vars: &Map<String, Value>,
        prompt: &Prompt,
        id: String,
        renderer: &Renderer,
    ) -> Option<TestCase> {
        if row.provider_output.is_some() {
            self.error(
                &row.at.key("providerOutput"),
                "`providerOutput` is not read by this version of evalhost",
            )
            .hint = Some("use the `echo` provider, or a replay target".into());
            return None;
        }
        // The row shows the vars as written, as promptfoo's results do; the
        // prompt and the assertions see them rendered.
        let written = vars.clone();
        let vars = renderer.render_vars(vars);
        let raw = match renderer.render_prompt(&prompt.raw, &vars) {
            Ok(r) => r,
            Err(e) => {
                self.error(
                    &row.at,
                    format!(
                        "the prompt `{}` does not render: {e}",
                        first_line(&prompt.label)
                    ),
                );
                return None;
            }
        };
        let input = vec![Message {
            role: "user".into(),
            content: raw.clone(),
            content_json: None,
        }];
        let mut assertions = Vec::new();
        let mut comparisons = Vec::new();
        for (a, at) in &row.assert {
            if let Some(assertion) = self.assertion(a, at, &vars, renderer, &row.file, &row.grading)
            {
                // `select-best` is graded across the test's outputs, after
                // the rest (promptfoo's comparison pass), and only the first.
                if assertion.plugin_type.as_deref() == Some("promptfoo-select-best") {
                    if comparisons.is_empty() {
                        comparisons.push(assertion);
                    } else {
                        self.error(
                            at,
                            "a second `select-best` in one test: promptfoo grades only the first",
                        );
                    }
                    continue;
                }
                assertions.push(assertion);
            }
        }
        // `context.test` of a javascript assertion: the test as promptfoo
        // hands it over (its vars rendered).
        let test_json = {
            let mut t = Map::new();
            if let Some(d) = &row.description {
                t.insert("description".into(), Value::String(d.clone()));
            }
            t.insert("vars".into(), Value::Object(vars.clone()));
            t.insert(
                "assert".into(),
                Value::Array(row.assert.iter().map(|(a, _)| a.clone()).collect()),
            );
            if let Some(th) = row.threshold {
                t.insert("threshold".into(), json!(th));
            }
            if !row.metadata.is_empty() {
                t.insert("metadata".into(), Value::Object(row.metadata.clone()));
            }
            Value::Object(t)
        };
        for a in &mut assertions {
            with_test_context(a, &test_json);
        }
        let output_transform = match row.transform.as_ref().or(row.postprocess.as_ref()) {
            Some((v, at)) => Some(Box::new(self.transform_step(
                v,
                at,
                &row.file,
                "options.transform",
            )?)),
            None => None,
        };
        let mut metadata = row.metadata.clone();
        metadata.insert("vars".into(), Value::Object(written));
        if let Some(d) = &row.description {
            metadata.insert("description".into(), Value::String(d.clone()));
        }
        Some(TestCase {
            id,
            input,
            expected: Vec::new(),
            criteria: None,
            metadata,
            assertions,
            threshold: row.threshold,
            tags: Vec::new(),
            timeout_ms: None,
            expected_fail: false,
            conversation_id: None,
            targets: self.targets_for(prompt),
            workspace: None,
            loc: Loc {
                file: row.file.clone(),
                // A row of a tests file points into that file (its line, when
                // known), never at the config's line with the file's name.
                pos: if *row.file == *self.file {
                    self.map.locate(&row.at)
                } else {
                    row.pos
                },
                key: row.at.clone(),
            },
            depends_on: None,
            conversation: None,
            pass_rule: if row.threshold.is_some() {
                PassRule::WeightedMean
            } else {
                PassRule::AllPass
            },
            prompt: Some(Box::new(RenderedPrompt {
                raw,
                label: prompt.label.clone(),
                id: prompt.id.clone(),
            })),
            output_transform,
            comparisons,
            compare_group: None,
        })
    }

    /// A transform (`options.transform`, an assertion's `transform`): inline
    /// JavaScript — an expression on one line, a function body of
    /// `(output, context, process)` on several — or `file://x.js[:fn]`, run
    /// by the sandboxed JavaScript plugin.
    fn transform_step(
        &mut self,
        v: &Value,
        at: &KeyPath,
        file: &Arc<PathBuf>,
        name: &str,
    ) -> Option<Assertion> {
        let mut config = Map::new();
        match v {
            Value::String(s) if s.starts_with("file://") => {
                let script = self.javascript_file(s, at)?;
                config.insert("__script".into(), script);
            }
            Value::String(code) => {
                config.insert("value".into(), Value::String(code.clone()));
            }
            other => {
                self.error(
                    at,
                    format!(
                        "a transform must be JavaScript text or a file://, got {}",
                        crate::agentv4::kind(other)
                    ),
                );
                return None;
            }
        }
        Some(Assertion {
            weight: 0.0,
            plugin_type: Some("promptfoo-transform".into()),
            ..self.made(name.into(), "transform", config, at, file)
        })
    }

    /// An assertion written at `at`, as the reader makes them: weight 1,
    /// graded by the plugin of its `kind` unless the caller says otherwise.
    fn made(
        &self,
        name: Arc<str>,
        kind: &str,
        config: Map<String, Value>,
        at: &KeyPath,
        file: &Arc<PathBuf>,
    ) -> Assertion {
        Assertion {
            name,
            kind: kind.into(),
            negate: false,
            weight: 1.0,
            required: Required::No,
            min_score: None,
            limits: LimitOverrides::default(),
            config_json: Value::Object(config.clone()).to_string().into(),
            config: Arc::new(config),
            loc: Loc {
                file: file.clone(),
                pos: self.map.locate(at),
                key: at.clone(),
            },
            key_positions: KeyPositions::new(self.map.clone(), at.clone()),
            wasm: None,
            from_suite: false,
            group: None,
            preprocessors: Arc::from([]),
            prompt_script: None,
            transform: None,
            plugin_type: None,
        }
    }

    /// One assertion, with promptfoo's meaning.
    fn assertion(
        &mut self,
        a: &Value,
        at: &KeyPath,
        vars: &Map<String, Value>,
        renderer: &Renderer,
        file: &Arc<PathBuf>,
        grading: &Grading,
    ) -> Option<Assertion> {
        let Value::Object(a) = a else {
            self.error(at, format!("Expected an object, but got {} (promptfoo assertions are mappings with `type`)", crate::agentv4::kind(a)))
                .hint = Some("write `- type: contains\n  value: ...`".into());
            return None;
        };
        let Some(Value::String(raw_type)) = a.get("type") else {
            self.error(at, "an assertion needs a `type`");
            return None;
        };
        let (base, negate) = match raw_type.strip_prefix("not-") {
            Some(b) => (b.to_owned(), true),
            None => (raw_type.clone(), false),
        };
        let weight = match a.get("weight") {
            None | Some(Value::Null) => 1.0,
            Some(v) => match v.as_f64() {
                Some(w) if w.is_finite() && w >= 0.0 => w,
                _ => {
                    self.error(
                        &at.key("weight"),
                        format!("`weight` must be a number ≥ 0, got {v}"),
                    );
                    1.0
                }
            },
        };
        let threshold = a.get("threshold").and_then(Value::as_f64);
        let metric = a.get("metric").and_then(Value::as_str).map(|m| {
            renderer
                .render_text(m, vars)
                .unwrap_or_else(|_| m.to_owned())
        });
        if let Some(m) = &metric
            && !self.metrics.contains(m)
        {
            self.metrics.push(m.clone());
        }
        if base == "select-best" && negate {
            self.error(
                &at.key("type"),
                "`not-select-best` is not a type: promptfoo compares only `select-best`",
            );
            return None;
        }
        if base == "assert-set" {
            if negate {
                self.error(&at.key("type"), "`not-assert-set` is not a type");
                return None;
            }
            let Some(Value::Array(children)) = a
                .get("assert")
                .filter(|c| c.as_array().is_some_and(|c| !c.is_empty()))
            else {
                self.error(at, "an `assert-set` needs `assert`, a non-empty list of assertions (an empty set would pass vacuously)");
                return None;
            };
            let members: Vec<Assertion> = children
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    self.assertion(c, &at.key("assert").index(i), vars, renderer, file, grading)
                })
                .collect();
            let name: Arc<str> = metric.unwrap_or_else(|| "assert-set".into()).into();
            return Some(Assertion {
                weight,
                key_positions: KeyPositions::default(),
                group: Some(Box::new(Group {
                    members,
                    aggregate: Aggregate::AssertSet { threshold },
                })),
                ..self.made(name, "assert-set", Map::new(), at, file)
            });
        }
        let trace_type = trace_plugin_type(&base);
        let code_type = match base.as_str() {
            "javascript" => Some("promptfoo-javascript".to_owned()),
            "python" => Some("promptfoo-python".to_owned()),
            "llm-rubric"
            | "model-graded-closedqa"
            | "factuality"
            | "g-eval"
            | "context-recall"
            | "context-relevance"
            | "context-faithfulness"
            | "answer-relevance"
            | "search-rubric"
            | "select-best" => Some(format!("promptfoo-{base}")),
            "similar" | "similar:cosine" | "similar:dot" | "similar:euclidean" => {
                Some("promptfoo-similar".to_owned())
            }
            "model-graded-factuality" => Some("promptfoo-factuality".to_owned()),
            _ => None,
        };
        if !DETERMINISTIC.contains(&base.as_str()) && trace_type.is_none() && code_type.is_none() {
            let why = match base.as_str() {
                "ruby" => "evalhost runs no Ruby (promptfoo runs it with the machine's ruby)",
                "moderation" => {
                    "it needs a moderation model (promptfoo asks OpenAI's moderation API, or Azure Content Safety, LlamaGuard or a Hugging Face classifier), and evalhost has no such provider: nothing here could say whether the output is flagged"
                }
                "classifier" => {
                    "it needs a classification model (promptfoo asks a Hugging Face text-classification pipeline through `huggingface:text-classification:<model>`), and evalhost has no such provider: nothing here could classify the output"
                }
                "max-score" => {
                    "it aggregates the scores of every prompt and provider for the test after all of them are graded, which this version of evalhost does not do (`select-best` it does)"
                }
                "trace-span-count" | "trace-span-duration" | "trace-error-spans" => {
                    "it reads OpenTelemetry trace spans, which evalhost does not collect"
                }
                "is-sql" | "contains-sql" => {
                    "promptfoo decides it with node-sql-parser's grammars, which evalhost has no port of (a different parser would give different verdicts)"
                }
                "trajectory:goal-success" => {
                    "it needs an LLM judge of the trajectory, which a later version of evalhost adds"
                }
                _ => {
                    "not a type this version of evalhost grades (promptfoo makes an unknown type an error row at run time)"
                }
            };
            // A type promptfoo has is named with its reason; a near miss of
            // one evalhost grades is likely a typo.
            let hint = why
                .starts_with("not a type")
                .then(|| {
                    crate::diag::nearest(
                        &base,
                        DETERMINISTIC
                            .iter()
                            .copied()
                            .chain(["javascript", "python", "assert-set"]),
                    )
                })
                .flatten()
                .map(|n| format!("did you mean `{n}`?"));
            self.error(
                &at.key("type"),
                format!("assertion type `{raw_type}`: {why}"),
            )
            .hint = hint;
            return None;
        }
        let mut transform = None;
        let mut context_transform = None;
        let mut config = Map::new();
        let mut grading = grading.clone();
        for (k, v) in a {
            match k.as_str() {
                "type" | "weight" | "metric" => {}
                "provider"
                    if MODEL_GRADED.contains(&base.as_str()) || base.starts_with("similar") =>
                {
                    grading.provider = Some((v.clone(), at.key(k)));
                }
                "rubricPrompt" if MODEL_GRADED.contains(&base.as_str()) => {
                    grading.rubric_prompt = Some((v.clone(), at.key(k)));
                }
                "value" => {
                    let vat = at.key("value");
                    let value = match v {
                        Value::String(sv) if sv.starts_with("package:") => {
                            self.error(
                                &vat,
                                format!("`value: {sv}`: promptfoo runs that package's function for the expected value, which needs the sandboxed JavaScript runner this version of evalhost does not have yet; write the value inline"),
                            );
                            return None;
                        }
                        // A script's function runs in the sandbox, with its
                        // source read here (the plugin has no files).
                        Value::String(sv) if sv.starts_with("file://") && base == "javascript" => {
                            let script = self.javascript_file(sv, &vat)?;
                            self.note_env_reads(&script.to_string(), &vat);
                            config.insert("__script".into(), script);
                            continue;
                        }
                        Value::String(sv) if sv.starts_with("file://") && base == "python" => {
                            let script = self.python_file(sv, &vat)?;
                            config.insert("__script".into(), script);
                            continue;
                        }
                        // promptfoo reads the file as it is: never rendered.
                        Value::String(sv) if sv.starts_with("file://") => {
                            self.assertion_file(sv, &vat, true)?
                        }
                        Value::Array(items)
                            if items
                                .iter()
                                .any(|i| i.as_str().is_some_and(|s| s.starts_with("file://"))) =>
                        {
                            let mut out = Vec::new();
                            for (i, item) in items.iter().enumerate() {
                                out.push(match item {
                                    Value::String(s) if s.starts_with("file://") => {
                                        self.assertion_file(s, &vat.index(i), false)?
                                    }
                                    Value::String(_) => renderer.render_value(item, vars),
                                    other => other.clone(),
                                });
                            }
                            Value::Array(out)
                        }
                        other => renderer.render_value(other, vars),
                    };
                    // A JSON Schema written as a string: promptfoo's handler
                    // reads it with `loadYaml` (lazily: a bad one is an
                    // error only when the output holds JSON).
                    if (base == "is-json" || base == "contains-json")
                        && let Value::String(text) = &value
                        && !text.is_empty()
                        && !text.starts_with("file://")
                    {
                        match crate::yaml::parse(text) {
                            Ok(parsed) => {
                                config.insert("__parsed_value".into(), parsed);
                            }
                            Err(e) => {
                                config.insert(
                                    "__parse_error".into(),
                                    Value::String(format!("the schema is not YAML: {e}")),
                                );
                            }
                        }
                    }
                    if base == "javascript"
                        && let Value::String(code) = &value
                    {
                        self.note_env_reads(code, &vat);
                    }
                    config.insert("value".into(), value);
                }
                "transform" => {
                    transform = Some(Arc::new(self.transform_step(
                        v,
                        &at.key("transform"),
                        file,
                        "transform",
                    )?));
                }
                "judge_samples" => {
                    self.warning(
                        &at.key(k),
                        "`judge_samples` is evalhost's own key (promptfoo ignores it): the judge answers that many times and the score is their mean, so it can differ from promptfoo's single answer",
                    );
                    config.insert(k.clone(), v.clone());
                }
                "contextTransform" if base.starts_with("context-") => {
                    let mut step = self.transform_step(v, &at.key(k), file, "contextTransform")?;
                    // Its result is the context the assertion reads, not
                    // the output (see `Assertion::transform`).
                    let mut c = (*step.config).clone();
                    c.insert("__into".into(), Value::String("context".into()));
                    step.config_json = Value::Object(c.clone()).to_string().into();
                    step.config = Arc::new(c);
                    context_transform = Some(Arc::new(step));
                }
                "provider" | "rubricPrompt" | "contextTransform" => {
                    self.error(
                        &at.key(k),
                        format!("assertion key `{k}` is not read by this version of evalhost"),
                    );
                }
                _ => {
                    config.insert(k.clone(), v.clone());
                }
            }
        }
        if base == "meteor" {
            self.warning(
                &at.key("type"),
                "promptfoo 0.121.20 itself makes every `meteor` row an error (`PorterStemmer should be loaded`: its import of the `natural` package sees none of its exports); evalhost grades it as promptfoo's METEOR code computes it once `natural` loads, so this row has a score where promptfoo has an error (docs/dialects.md)",
            );
        }
        if base == "answer-relevance" || base.starts_with("similar") {
            let embedder = self.embedder(grading.provider.clone())?;
            config.insert("__embedder".into(), Value::String(embedder));
        }
        if let Some(metric) = base.strip_prefix("similar:") {
            config.insert("__metric".into(), Value::String(metric.to_owned()));
        }
        if MODEL_GRADED.contains(&base.as_str()) {
            let judge = if base == "search-rubric" {
                self.search_judge(grading.provider.clone(), at)?
            } else {
                self.judge(base == "llm-rubric", grading.provider.clone())
            };
            config.insert("__judge".into(), Value::String(judge));
            if let Some(scores) = &grading.factuality {
                config.insert("__factuality".into(), Value::Object(scores.clone()));
            }
            if let Some((prompt, pat)) = &grading.rubric_prompt {
                let prompt = self.rubric_prompt(prompt, pat)?;
                config.insert("__rubric_prompt".into(), prompt);
            }
        }
        // promptfoo's handlers apply `not-` themselves, each its own way.
        if negate {
            if PROVIDER_TYPES.contains(&base.as_str())
                || matches!(
                    base.as_str(),
                    "model-graded-closedqa"
                        | "factuality"
                        | "model-graded-factuality"
                        | "context-recall"
                        | "context-relevance"
                        | "context-faithfulness"
                        | "answer-relevance"
                )
            {
                self.warning(
                    &at.key("type"),
                    format!("`{raw_type}`: promptfoo ignores `not-` on `{base}` (its handler never reads it), and so does evalhost"),
                );
            }
            config.insert("inverse".into(), Value::Bool(true));
        }
        // What promptfoo's handlers require of the test, said before
        // anything runs (promptfoo makes the row an error).
        if matches!(base.as_str(), "context-relevance" | "context-faithfulness") {
            if !vars.get("query").is_some_and(Value::is_string) {
                self.error(
                    &at.key("type"),
                    format!("`{base}` needs a `query` var holding the user's question (promptfoo makes the row an error without it)"),
                )
                .hint = Some("add `query: ...` to the test's vars".into());
                return None;
            }
            let has_context = match vars.get("context") {
                Some(Value::String(c)) => !c.is_empty(),
                Some(Value::Array(c)) => !c.is_empty(),
                _ => false,
            };
            if !has_context && context_transform.is_none() {
                self.error(
                    &at.key("type"),
                    format!("`{base}` needs the retrieved context: a `context` var (text, or a list of texts) or a `contextTransform` that computes it from the output"),
                )
                .hint = Some("add `context: ...` to the test's vars".into());
                return None;
            }
        }
        if let Some(step) = context_transform {
            if transform.is_some() {
                self.error(
                    &at.key("contextTransform"),
                    "an assertion with both `transform` and `contextTransform` is not read by this version of evalhost; keep one",
                );
                return None;
            }
            transform = Some(step);
        }
        if trace_type.is_some() && base.starts_with("trajectory:") {
            config.insert("require_trace".into(), Value::Bool(true));
        }
        let name = metric.unwrap_or_else(|| raw_type.clone());
        Some(Assertion {
            weight,
            transform,
            plugin_type: Some(
                trace_type
                    .or(code_type)
                    .unwrap_or_else(|| format!("promptfoo-{base}"))
                    .into(),
            ),
            ..self.made(name.into(), &base, config, at, file)
        })
    }
}

/// A grading provider written as an id or `{id, config}`: the id and its
/// config.
fn grader_spec(spec: &Value) -> Option<(String, Map<String, Value>)> {
    match spec {
        Value::String(id) => Some((id.clone(), Map::new())),
        Value::Object(o) => Some((
            o.get("id")?.as_str()?.to_owned(),
            o.get("config")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        )),
        _ => None,
    }
}

/// The types graded by a model, which read `provider` and `rubricPrompt`.
const MODEL_GRADED: &[&str] = &[
    "llm-rubric",
    "model-graded-closedqa",
    "factuality",
    "model-graded-factuality",
    "g-eval",
    "context-recall",
    "context-relevance",
    "context-faithfulness",
    "answer-relevance",
    "search-rubric",
    "select-best",
];

/// promptfoo's test for an OpenAI chat model that searches the web:
/// `gpt-5-search-api`, `gpt-4o-search-preview` or
/// `gpt-4o-mini-search-preview`, at the start or after `/` or `:`, then the
/// end or `-`.
fn is_search_model(model: &str) -> bool {
    [
        "gpt-5-search-api",
        "gpt-4o-search-preview",
        "gpt-4o-mini-search-preview",
    ]
    .iter()
    .any(|name| {
        model.match_indices(name).any(|(i, _)| {
            (i == 0 || model[..i].ends_with(['/', ':']))
                && matches!(model[i + name.len()..].chars().next(), None | Some('-'))
        })
    })
}

/// An OpenAI embedding model's provider id.
fn is_embedding_id(id: &str) -> bool {
    id.starts_with("openai:embedding:") || id.starts_with("openai:embeddings:")
}

/// `file://path[:function]` as promptfoo's `runAssertion` splits it: at the
/// first `:`.
fn file_and_function(spec: &str) -> (&str, Option<String>) {
    let rest = spec.strip_prefix("file://").unwrap_or(spec);
    match rest.split_once(':') {
        Some((f, func)) => (f, Some(func.to_owned())),
        None => (rest, None),
    }
}

/// Gives each `javascript` and `python` assertion (in `assert-set`s too)
/// its test as `__test`.
fn with_test_context(a: &mut Assertion, test: &Value) {
    if matches!(
        a.plugin_type.as_deref(),
        Some("promptfoo-javascript" | "promptfoo-python")
    ) {
        let mut config = (*a.config).clone();
        config.insert("__test".into(), test.clone());
        a.config_json = Value::Object(config.clone()).to_string().into();
        a.config = Arc::new(config);
    }
    if let Some(group) = &mut a.group {
        for m in &mut group.members {
            with_test_context(m, test);
        }
    }
}

impl Reader {
    /// A `python` assertion's `file://check.py[:function]` (`get_assert` by
    /// default): the source, read now, for the sandboxed Python runner.
    fn python_file(&mut self, spec: &str, at: &KeyPath) -> Option<Value> {
        let (file, function) = file_and_function(spec);
        if !file.ends_with(".py") {
            self.error(
                at,
                format!("`{spec}`: a `python` assertion runs a .py file"),
            );
            return None;
        }
        let path = self.relative(file, &format!("`{spec}`"), at)?;
        let source = self.read_file(&path, at)?;
        Some(json!({"reference": spec, "source": source, "function": function}))
    }

    /// A `javascript` assertion's `file://path.js[:function]`: the source,
    /// read now (relative to the config, inside the project), for the
    /// sandboxed engine to evaluate as an ES module (`.mjs`, or `import` /
    /// `export` statements) or CommonJS.
    /// Notes the `process.env` names JavaScript `code` reads.
    fn note_env_reads(&mut self, code: &str, at: &KeyPath) {
        let mut rest = code;
        while let Some(i) = rest.find("process.env") {
            rest = &rest[i + "process.env".len()..];
            let name: String = if let Some(r) = rest.strip_prefix('.') {
                r.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                    .collect()
            } else if let Some(r) = rest.strip_prefix('[') {
                r.trim_start_matches(['\'', '"', '`'])
                    .chars()
                    .take_while(|c| !matches!(c, '\'' | '"' | '`' | ']'))
                    .collect()
            } else {
                String::new()
            };
            let name = if name.is_empty() {
                "process.env".to_owned()
            } else {
                name
            };
            if !self.env_reads.0.contains(&name) {
                self.env_reads.0.push(name);
            }
            self.env_reads.1.get_or_insert_with(|| at.clone());
        }
    }

    /// One warning for every `process.env` read of the config's
    /// `javascript` assertions: promptfoo gives them the machine's
    /// environment, the sandbox none, so their verdicts may differ.
    fn warn_env_reads(&mut self) {
        let (names, at) = std::mem::take(&mut self.env_reads);
        if let Some(at) = at {
            self.warning(
                &at,
                format!(
                    "`javascript` assertions read `process.env` ({}): promptfoo gives them this machine's environment, evalhost's sandbox gives code none, so they read `undefined` and their verdicts may differ from promptfoo's",
                    names.join(", ")
                ),
            )
            .hint = Some("pass the value as a var (`vars:`, read as `context.vars.NAME`) or in the assertion's `config:` (read as `context.config.NAME`)".into());
        }
    }

    fn javascript_file(&mut self, spec: &str, at: &KeyPath) -> Option<Value> {
        let (file, function) = file_and_function(spec);
        let lower = file.to_ascii_lowercase();
        if [".ts", ".cts", ".mts", ".tsx"]
            .iter()
            .any(|e| lower.ends_with(e))
        {
            self.error(at, format!("`{spec}`: a TypeScript assertion is not run by this version of evalhost (promptfoo compiles it with tsx on the host)"))
                .hint = Some("compile it to JavaScript (`.js` or `.mjs`), or write the check inline".into());
            return None;
        }
        if ![".js", ".cjs", ".mjs"].iter().any(|e| lower.ends_with(e)) {
            // promptfoo's `isJavascriptFile` fails; Python and Ruby files
            // go to their runners.
            let (language, why) = if file.ends_with(".py") {
                (
                    "Python",
                    "which evalhost has only for `python` assertions so far",
                )
            } else if file.ends_with(".rb") {
                ("Ruby", "which evalhost does not run")
            } else {
                ("", "")
            };
            if !language.is_empty() {
                self.error(at, format!("`{spec}`: a {language} file here is run by promptfoo's {language} runner, {why}"));
            } else {
                self.error(at, format!("`{spec}`: promptfoo reads only .json, .yaml, .yml and .txt files for an assertion value, and runs .js, .cjs and .mjs files for a `javascript` assertion"));
            }
            return None;
        }
        let path = self.relative(file, &format!("`{spec}`"), at)?;
        let source = self.read_file(&path, at)?;
        let esm = lower.ends_with(".mjs")
            || (!lower.ends_with(".cjs")
                && source.lines().any(|l| {
                    let l = l.trim_start();
                    l.starts_with("export ") || l.starts_with("export{") || l.starts_with("import ")
                }));
        Some(json!({
            "reference": spec,
            "source": source,
            "function": function,
            "esm": esm,
        }))
    }

    /// An assertion `value: file://…`, as promptfoo's `runAssertion` loads
    /// it (`processFileReference`, relative to the config's directory):
    /// `.json`, `.yaml`, `.yml` parsed, `.txt` as its trimmed text, never
    /// rendered. A code file (`.js`, `.ts`, `.py`, `.rb`, optionally
    /// `:function`) runs in promptfoo; `code` says whether that is checked
    /// (a list's items go straight to `processFileReference`).
    fn assertion_file(&mut self, spec: &str, at: &KeyPath, code: bool) -> Option<Value> {
        let rest = &spec["file://".len()..];
        if code {
            let file = rest.split(':').next().unwrap_or(rest);
            let lower = file.to_ascii_lowercase();
            let language = if [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"]
                .iter()
                .any(|e| lower.ends_with(e))
            {
                Some("JavaScript")
            } else if file.ends_with(".py") {
                Some("Python")
            } else if file.ends_with(".rb") {
                Some("Ruby")
            } else {
                None
            };
            if let Some(language) = language {
                self.error(
                    at,
                    format!("`{spec}`: promptfoo runs this {language} file for the expected value, which needs the sandboxed {language} runner this version of evalhost does not have yet"),
                )
                .hint = Some("write the value inline, or in a .json, .yaml or .txt file".into());
                return None;
            }
        }
        // `path.extname` of the whole reference, case-sensitive.
        let name = rest.rsplit('/').next().unwrap_or(rest);
        let ext = match name.rfind('.') {
            Some(i) if i > 0 => &name[i..],
            _ => "",
        };
        if ![".json", ".yaml", ".yml", ".txt"].contains(&ext) {
            self.error(
                at,
                format!("`{spec}`: promptfoo reads only .json, .yaml, .yml and .txt files for an assertion value (any other makes the row an error: \"Unsupported file type\")"),
            );
            return None;
        }
        let path = self.relative(rest, &format!("`{spec}`"), at)?;
        let loaded = match self.value_files.get(&path) {
            Some(r) => r.clone(),
            None => {
                let r = crate::roots::read_regular_text(&path, crate::load::MAX_FILE_BYTES)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))
                    .and_then(|text| {
                        if ext == ".txt" {
                            Ok(Value::String(js_trim(&text).to_owned()))
                        } else {
                            crate::yaml::parse(&text)
                                .map_err(|e| format!("{}: {e}", path.display()))
                        }
                    });
                self.value_files.insert(path.clone(), r.clone());
                r
            }
        };
        match loaded {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(at, e);
                None
            }
        }
    }

    /// `test` with the provider each tool-call assertion reads (`__provider`:
    /// its kind, and its `tools` and `functions` rendered with the test's
    /// vars and read from their files). Where the providers differ, one
    /// test per provider, each run on that provider only.
    fn with_providers(
        &mut self,
        test: TestCase,
        vars: &Map<String, Value>,
        renderer: &Renderer,
    ) -> Vec<TestCase> {
        fn needs(assertions: &[Assertion]) -> bool {
            assertions.iter().any(|a| {
                a.plugin_type
                    .as_deref()
                    .and_then(|t| t.strip_prefix("promptfoo-"))
                    .is_some_and(|t| PROVIDER_TYPES.contains(&t))
                    || a.group.as_ref().is_some_and(|g| needs(&g.members))
            })
        }
        fn inject(assertions: &mut [Assertion], info: &Value) {
            for a in assertions {
                if let Some(g) = a.group.as_mut() {
                    inject(&mut g.members, info);
                }
                let wants = a
                    .plugin_type
                    .as_deref()
                    .and_then(|t| t.strip_prefix("promptfoo-"))
                    .is_some_and(|t| PROVIDER_TYPES.contains(&t));
                if wants {
                    let mut config = (*a.config).clone();
                    config.insert("__provider".into(), info.clone());
                    a.config_json = Value::Object(config.clone()).to_string().into();
                    a.config = Arc::new(config);
                }
            }
        }
        if !needs(&test.assertions) || self.provider_infos.is_empty() {
            return vec![test];
        }
        let providers = self.provider_infos.clone();
        let infos: Vec<(String, Value)> = providers
            .iter()
            .map(|p| {
                let mut info = Map::new();
                info.insert("kind".into(), p.kind.into());
                for (key, v) in [("tools", &p.tools), ("functions", &p.functions)] {
                    if let Some(v) = v
                        && let Some(loaded) = self.provider_tools(v, &p.at.key(key), vars, renderer)
                    {
                        info.insert(key.into(), loaded);
                    }
                }
                (p.name.clone(), Value::Object(info))
            })
            .collect();
        if infos.iter().all(|(_, i)| *i == infos[0].1) {
            let mut test = test;
            inject(&mut test.assertions, &infos[0].1);
            return vec![test];
        }
        infos
            .into_iter()
            .map(|(name, info)| {
                let mut t = test.clone();
                inject(&mut t.assertions, &info);
                t.targets = Some(vec![name]);
                t
            })
            .collect()
    }

    /// A provider's `tools` or `functions` as promptfoo's
    /// `maybeLoadToolsFromExternalFile` makes them for an assertion: the
    /// test's vars rendered in, `file://` JSON or YAML read (a list's
    /// files flattened); tools computed by code are refused.
    fn provider_tools(
        &mut self,
        v: &Value,
        at: &KeyPath,
        vars: &Map<String, Value>,
        renderer: &Renderer,
    ) -> Option<Value> {
        fn render(v: &Value, vars: &Map<String, Value>, renderer: &Renderer) -> Value {
            match v {
                Value::String(s) => {
                    Value::String(renderer.render_text(s, vars).unwrap_or_else(|_| s.clone()))
                }
                Value::Array(items) => {
                    Value::Array(items.iter().map(|i| render(i, vars, renderer)).collect())
                }
                Value::Object(m) => Value::Object(
                    m.iter()
                        .map(|(k, v)| (k.clone(), render(v, vars, renderer)))
                        .collect(),
                ),
                other => other.clone(),
            }
        }
        let rendered = render(v, vars, renderer);
        self.load_tools(rendered, at)
    }

    /// Tools after rendering: `file://` references read.
    fn load_tools(&mut self, rendered: Value, at: &KeyPath) -> Option<Value> {
        match &rendered {
            Value::String(s) if s.starts_with("file://") => {
                let file = s["file://".len()..].split(':').next().unwrap_or_default();
                let lower = file.to_ascii_lowercase();
                if lower.ends_with(".py")
                    || [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"]
                        .iter()
                        .any(|e| lower.ends_with(e))
                {
                    self.error(at, format!("`{s}`: tools computed by code are not read by this version of evalhost (they need the sandboxed code runner); list them in a .json or .yaml file"));
                    return None;
                }
                let loaded = self.assertion_file(s, at, false)?;
                if loaded.is_string() {
                    self.error(at, format!("`{s}`: promptfoo expects an array or object of tool definitions here, not text"));
                    return None;
                }
                Some(loaded)
            }
            Value::Array(items)
                if items
                    .iter()
                    .any(|i| i.as_str().is_some_and(|s| s.starts_with("file://"))) =>
            {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    out.push(self.load_tools(item.clone(), &at.index(i))?);
                }
                if out.iter().all(Value::is_array) {
                    Some(Value::Array(
                        out.into_iter()
                            .flat_map(|v| match v {
                                Value::Array(a) => a,
                                _ => Vec::new(),
                            })
                            .collect(),
                    ))
                } else {
                    Some(Value::Array(out))
                }
            }
            _ => Some(rendered),
        }
    }
}

/// The kind of provider an id names, for the tool-call types.
fn provider_kind(id: &str) -> &'static str {
    if id == "echo" {
        "echo"
    } else if id.starts_with("openai:responses:") {
        "openai-responses"
    } else if id.starts_with("openai:") {
        "openai"
    } else if id.starts_with("exec:") {
        "exec"
    } else if id == "http"
        || id == "https"
        || id.starts_with("http://")
        || id.starts_with("https://")
    {
        "http"
    } else {
        "script"
    }
}

/// JavaScript's `trim()`: U+FEFF is space, U+0085 is not.
fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| {
        matches!(
            c,
            '\t' | '\n'
                | '\u{000B}'
                | '\u{000C}'
                | '\r'
                | ' '
                | '\u{00A0}'
                | '\u{1680}'
                | '\u{2000}'
                ..='\u{200A}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202F}'
                    | '\u{205F}'
                    | '\u{3000}'
                    | '\u{FEFF}'
        )
    })
}

/// promptfoo's trace types, graded by evalhost-metrics (AgentV 5 took them
/// from promptfoo with the same rules): the tools and skills come from the
/// tool calls the target reports.
fn trace_plugin_type(base: &str) -> Option<String> {
    match base {
        "skill-used" => Some("agentv5-skill-used".into()),
        "trajectory:tool-used"
        | "trajectory:tool-sequence"
        | "trajectory:tool-args-match"
        | "trajectory:step-count" => Some(format!(
            "agentv5-trajectory-{}",
            &base["trajectory:".len()..]
        )),
        _ => None,
    }
}

/// `defaultTest` merged into a test, as promptfoo does: vars, metadata
/// shallow (the test's win), the default's assertions first, its threshold
/// when the test has none.
fn merge_default(d: &Row, mut row: Row) -> Row {
    let mut vars = d.vars.clone();
    vars.extend(std::mem::take(&mut row.vars));
    row.vars = vars;
    let mut metadata = d.metadata.clone();
    metadata.extend(std::mem::take(&mut row.metadata));
    row.metadata = metadata;
    let mut assert = d.assert.clone();
    assert.append(&mut row.assert);
    row.assert = assert;
    row.threshold = row.threshold.or(d.threshold);
    // `options` merged shallowly, key by key, the test's winning.
    if row.transform.is_none() {
        row.transform = d.transform.clone();
    }
    if row.postprocess.is_none() {
        row.postprocess = d.postprocess.clone();
    }
    if row.grading.rubric_prompt.is_none() {
        row.grading.rubric_prompt = d.grading.rubric_prompt.clone();
    }
    if row.grading.factuality.is_none() {
        row.grading.factuality = d.grading.factuality.clone();
    }
    row
}

/// promptfoo's var expansion: each var whose value is a list starting with
/// a string takes each of its values; the rows are their cartesian product
/// (in key order, the first key varying slowest).
fn expand_vars(vars: &Map<String, Value>) -> Option<Vec<Map<String, Value>>> {
    let mut rows = vec![Map::new()];
    for (k, v) in vars {
        match v {
            Value::Array(items) if items.first().is_some_and(Value::is_string) => {
                if rows.len().saturating_mul(items.len()) > MAX_ROWS {
                    return None;
                }
                let mut next = Vec::with_capacity(rows.len() * items.len());
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

/// promptfoo's `maybeFilePath`: no newline, and `file://`, a `/`, `\` or
/// `*`, a dot 3rd or 4th from the end, or a prompt file extension.
fn maybe_file_path(s: &str) -> bool {
    if s.contains('\n') {
        return false;
    }
    if s.starts_with("file://") || s.contains(['/', '\\', '*']) {
        return true;
    }
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    (n >= 3 && chars[n - 3] == '.') || (n >= 4 && chars[n - 4] == '.')
}

/// A prompt file's prompts: parts between lines that are exactly `---`.
fn split_prompts(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = Vec::new();
    for line in text.lines() {
        if line.trim_end() == "---" {
            parts.push(current.join("\n"));
            current.clear();
        } else {
            current.push(line);
        }
    }
    parts.push(current.join("\n"));
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    match line.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// A CSV file's rows as test mappings, each with its line: columns are
/// vars, except `__expected[N]` (an assertion in promptfoo's mini-syntax),
/// `__description`, `__threshold` and `__metric`. Read as promptfoo's
/// `csv-parse` reads it (`columns: true`, `bom: true`): a row whose
/// number of fields is not the header's — a stray unquoted comma, an empty
/// line between rows — is refused with its line, as promptfoo refuses it
/// (`CSV_RECORD_INCONSISTENT_COLUMNS`), never read with its columns
/// shifted. A row of empty fields is a test of empty vars, as in promptfoo.
fn csv_rows(text: &str) -> Result<Vec<(usize, Value)>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let records = parse_csv_lines(text)?;
    let Some(((_, header), body)) = records.split_first() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (line, record) in body {
        if record.len() != header.len() {
            return Err(format!(
                "line {line}: {} field{} where the header has {} (a comma outside quotes, or an empty line?)",
                record.len(),
                if record.len() == 1 { "" } else { "s" },
                header.len()
            ));
        }
        let mut vars = Map::new();
        let mut assert = Vec::new();
        let mut test = Map::new();
        let mut metric = None;
        for (name, cell) in header.iter().zip(record) {
            let name = name.trim();
            if name.starts_with("__expected") {
                if !cell.trim().is_empty() {
                    assert.push(
                        assertion_from_string(cell.trim())
                            .map_err(|e| format!("line {line}: `{name}`: {e}"))?,
                    );
                }
            } else if name == "__description" {
                if !cell.is_empty() {
                    test.insert("description".into(), Value::String(cell.clone()));
                }
            } else if name == "__threshold" {
                if let Some(t) = parse_finite_number(cell) {
                    test.insert("threshold".into(), json!(t));
                }
            } else if name == "__metric" {
                metric = Some(cell.clone());
            } else if name.starts_with("__") {
                return Err(format!(
                    "the CSV column `{name}` is not read by this version of evalhost"
                ));
            } else {
                vars.insert(name.to_owned(), Value::String(cell.clone()));
            }
        }
        if let Some(m) = metric {
            for a in &mut assert {
                a["metric"] = Value::String(m.clone());
            }
        }
        test.insert("vars".into(), Value::Object(vars));
        if !assert.is_empty() {
            test.insert("assert".into(), Value::Array(assert));
        }
        out.push((*line, Value::Object(test)));
    }
    Ok(out)
}

/// promptfoo 0.121.20's assertion types, in the order its
/// `BaseAssertionTypesSchema` lists them: `assertionFromString` matches a
/// cell against them in this order (so `similar:cosine:x` is `similar`
/// with the value `cosine:x`, as in promptfoo).
const CSV_ASSERTION_TYPES: &[&str] = &[
    "agent-rubric",
    "answer-relevance",
    "bleu",
    "classifier",
    "contains",
    "contains-all",
    "contains-any",
    "contains-html",
    "contains-json",
    "contains-sql",
    "contains-xml",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "cost",
    "equals",
    "factuality",
    "finish-reason",
    "g-eval",
    "gleu",
    "guardrails",
    "icontains",
    "icontains-all",
    "icontains-any",
    "is-html",
    "is-json",
    "is-refusal",
    "is-sql",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "is-xml",
    "javascript",
    "latency",
    "levenshtein",
    "llm-rubric",
    "pi",
    "meteor",
    "model-graded-closedqa",
    "model-graded-factuality",
    "moderation",
    "perplexity",
    "perplexity-score",
    "python",
    "regex",
    "rouge-n",
    "ruby",
    "similar",
    "similar:cosine",
    "similar:dot",
    "similar:euclidean",
    "starts-with",
    "tool-call-f1",
    "skill-used",
    "trajectory:goal-success",
    "trajectory:tool-args-match",
    "trajectory:step-count",
    "trajectory:tool-sequence",
    "trajectory:tool-used",
    "trace-error-spans",
    "trace-span-count",
    "trace-span-duration",
    "search-rubric",
    "webhook",
    "word-count",
];

/// promptfoo's `parseFiniteNumber`: a complete decimal literal, else none.
fn parse_finite_number(s: &str) -> Option<f64> {
    let t = s.trim();
    let b = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exponent) = match b.find(['e', 'E']) {
        Some(i) => (&b[..i], Some(&b[i + 1..])),
        None => (b, None),
    };
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((i, f)) => (digits(i) && (f.is_empty() || digits(f))) || (i.is_empty() && digits(f)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    if !(mantissa_ok && exponent_ok) {
        return None;
    }
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// promptfoo's `parseCommaSeparatedAssertionValues`: fields split on
/// commas, `"…"` fields with `\"`, `\\` and `""` escapes, unquoted fields
/// trimmed, empty ones skipped.
fn comma_separated_values(value: &str) -> Result<Vec<String>, String> {
    let v: Vec<char> = value.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_ws = |mut i: usize| {
        while i < v.len() && v[i].is_whitespace() {
            i += 1;
        }
        i
    };
    while i < v.len() {
        loop {
            i = skip_ws(i);
            if i < v.len() && v[i] == ',' {
                i += 1;
            } else {
                break;
            }
        }
        if i >= v.len() {
            break;
        }
        if v[i] == '"' {
            let mut field = String::new();
            let mut terminated = false;
            i += 1;
            while i < v.len() {
                if v[i] == '\\' && i + 1 < v.len() && (v[i + 1] == '"' || v[i + 1] == '\\') {
                    field.push(v[i + 1]);
                    i += 2;
                } else if v[i] == '"' && i + 1 < v.len() && v[i + 1] == '"' {
                    field.push('"');
                    i += 2;
                } else if v[i] == '"' {
                    i += 1;
                    terminated = true;
                    break;
                } else {
                    field.push(v[i]);
                    i += 1;
                }
            }
            if !terminated {
                return Err("Unterminated quoted field in contains assertion value".into());
            }
            out.push(field);
            i = skip_ws(i);
            if i < v.len() && v[i] != ',' {
                return Err("Expected comma after quoted field in contains assertion value".into());
            }
        } else {
            let start = i;
            while i < v.len() && v[i] != ',' {
                i += 1;
            }
            out.push(v[start..i].iter().collect::<String>().trim().to_owned());
        }
    }
    Ok(out)
}

/// The parts of `[not-]TYPE[(threshold)][:value]` when `cell` matches
/// promptfoo's assertion regex: (negated, type, threshold text, value).
fn match_assertion(cell: &str) -> Option<(bool, &'static str, Option<&str>, Option<&str>)> {
    let (negated, rest) = match cell.strip_prefix("not-") {
        Some(r) => (true, r),
        None => (false, cell),
    };
    // JavaScript's regex tries the types in order, and for each first with
    // the `(threshold)` group, then without it.
    fn tail(after: &str) -> Option<Option<&str>> {
        if after.is_empty() {
            Some(None)
        } else {
            after.strip_prefix(':').map(Some)
        }
    }
    let threshold = |after: &str| -> Option<(usize, usize)> {
        let inner = after.strip_prefix('(')?;
        let close = inner.find(')')?;
        let number = &inner[..close];
        let (i, f) = number.split_once('.').unwrap_or((number, "0"));
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        (digits(i) && digits(f)).then_some((1, close))
    };
    for ty in CSV_ASSERTION_TYPES {
        let Some(after) = rest.strip_prefix(ty) else {
            continue;
        };
        if let Some((open, close)) = threshold(after) {
            let number = &after[open..open + close];
            if let Some(value) = tail(&after[open + close + 1..]) {
                return Some((negated, ty, Some(number), value));
            }
        }
        if let Some(value) = tail(after) {
            return Some((negated, ty, None, value));
        }
    }
    None
}

/// promptfoo 0.121.20's `assertionFromString` (`src/csv.ts`): `javascript:`,
/// `fn:`, `eval:` and JavaScript files; `grade:` and `llm-rubric:`;
/// `python:` and Python files; then `[not-]TYPE[(threshold)][:value]` over
/// every assertion type it knows, the value optional (`is-json` alone is
/// that assertion); anything else is `equals` with the whole cell.
fn assertion_from_string(expected: &str) -> Result<Value, String> {
    let js_file = |p: &str| {
        let lower = p.to_ascii_lowercase();
        [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"]
            .iter()
            .any(|e| lower.ends_with(e))
    };
    for prefix in ["javascript:", "fn:", "eval:"] {
        if let Some(code) = expected.strip_prefix(prefix) {
            return Ok(json!({"type": "javascript", "value": code.trim()}));
        }
    }
    if let Some(file) = expected.strip_prefix("file://")
        && js_file(file)
    {
        return Ok(json!({"type": "javascript", "value": expected.trim()}));
    }
    if let Some(rubric) = expected
        .strip_prefix("grade:")
        .or_else(|| expected.strip_prefix("llm-rubric:"))
    {
        return Ok(json!({"type": "llm-rubric", "value": rubric}));
    }
    if expected.starts_with("python:")
        || (expected.starts_with("file://")
            && (expected.ends_with(".py") || expected.contains(".py:")))
    {
        return Ok(json!({"type": "python", "value": expected[7..].trim()}));
    }
    let Some((negated, ty, threshold, value)) = match_assertion(expected) else {
        return Ok(json!({"type": "equals", "value": expected}));
    };
    let full = if negated {
        format!("not-{ty}")
    } else {
        ty.to_owned()
    };
    let mut a = json!({"type": full});
    match ty {
        "contains-all" | "contains-any" | "icontains-all" | "icontains-any" => {
            if let Some(v) = value {
                a["value"] = if v.is_empty() {
                    json!("")
                } else {
                    json!(comma_separated_values(v)?)
                };
            }
        }
        "contains-json" | "is-json" => {
            if let Some(v) = value {
                a["value"] = json!(v);
            }
        }
        "answer-relevance"
        | "classifier"
        | "context-faithfulness"
        | "context-recall"
        | "context-relevance"
        | "cost"
        | "latency"
        | "levenshtein"
        | "perplexity-score"
        | "perplexity"
        | "rouge-n"
        | "similar"
        | "starts-with" => {
            if let Some(v) = value {
                a["value"] = json!(v.trim());
            }
            let default = if ty == "similar" { 0.8 } else { 0.75 };
            a["threshold"] = json!(threshold.and_then(parse_finite_number).unwrap_or(default));
        }
        _ => {
            if let Some(v) = value {
                a["value"] = json!(v.trim());
            }
        }
    }
    Ok(a)
}

/// RFC 4180 CSV: quoted fields with `""` escapes and line breaks.
pub(crate) fn parse_csv(text: &str) -> Result<Vec<Vec<String>>, String> {
    Ok(parse_csv_lines(text)?.into_iter().map(|(_, r)| r).collect())
}

/// [`parse_csv`], each record with the line it starts on (1-based).
fn parse_csv_lines(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut line = 1;
    let mut start = 1;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => quoted = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push((start, std::mem::take(&mut record)));
                line += 1;
                start = line;
            }
            _ => field.push(c),
        }
    }
    if quoted {
        return Err(format!("a quoted field is not closed (line {line})"));
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push((start, record));
    }
    Ok(records)
}

/// Single-quotes `s` for `sh`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// promptfoo's `parseScriptParts`: words split on whitespace, `"…"` and
/// `'…'` kept whole (without their quotes).
fn script_parts(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = script.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '"' || c == '\'' {
            chars.next();
            let mut word = String::new();
            let mut closed = false;
            for d in chars.by_ref() {
                if d == c {
                    closed = true;
                    break;
                }
                word.push(d);
            }
            if closed {
                if !word.is_empty() {
                    out.push(word);
                }
            } else {
                out.push(format!("{c}{word}"));
            }
            continue;
        }
        let mut word = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_whitespace() || d == '"' || d == '\'' {
                break;
            }
            word.push(d);
            chars.next();
        }
        out.push(word);
    }
    out
}

/// Calls a Python provider's function (`python3 -c RUNNER file fn prompt
/// options context`) and prints the result in AgentV's output-file shape.
const PY_PROVIDER_RUNNER: &str = r#"import importlib.util, json, os, sys
path, fn, prompt, options, context = sys.argv[1:6]
sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
spec = importlib.util.spec_from_file_location("provider", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
f = getattr(mod, fn, None)
if not callable(f):
    sys.exit(f"{path} has no function {fn}")
r = f(prompt, json.loads(options), json.loads(context))
if not isinstance(r, dict):
    sys.exit(f"{fn} must return a dict with `output`, got {type(r).__name__}")
if r.get("error"):
    sys.exit(str(r["error"]))
out = r.get("output")
text = out if isinstance(out, str) else json.dumps(out, separators=(",", ":"), ensure_ascii=False)
res = {"text": text}
tu = r.get("tokenUsage") or {}
if tu:
    res["token_usage"] = {"input": tu.get("prompt", 0), "output": tu.get("completion", 0)}
if isinstance(r.get("cost"), (int, float)):
    res["cost_usd"] = r["cost"]
print(json.dumps(res))
"#;

/// Calls a JavaScript provider (`node -e RUNNER file fn prompt options
/// context`): a class with `callApi` (constructed with the options), or a
/// function.
const JS_PROVIDER_RUNNER: &str = r#"const [file, fn, prompt, options, context] = process.argv.slice(1);
(async () => {
  const m = await import(require('node:url').pathToFileURL(file).href);
  let P = fn ? m[fn] ?? (m.default && m.default[fn]) : m.default ?? m;
  if (P && P.default && !P.prototype) P = P.default;
  const opts = JSON.parse(options), ctx = JSON.parse(context);
  let r;
  if (typeof P === 'function' && P.prototype && typeof P.prototype.callApi === 'function') {
    r = await new P(opts).callApi(prompt, ctx);
  } else if (P && typeof P.callApi === 'function') {
    r = await P.callApi(prompt, ctx);
  } else if (typeof P === 'function') {
    r = await P(prompt, opts, ctx);
  } else {
    console.error(`${file} exports no provider${fn ? ' ' + fn : ''}`);
    process.exit(1);
  }
  if (!r || typeof r !== 'object') { console.error('the provider must return an object with `output`'); process.exit(1); }
  if (r.error) { console.error(String(r.error)); process.exit(1); }
  const out = typeof r.output === 'string' ? r.output : JSON.stringify(r.output);
  const res = { text: out };
  if (r.tokenUsage) res.token_usage = { input: r.tokenUsage.prompt ?? 0, output: r.tokenUsage.completion ?? 0 };
  if (typeof r.cost === 'number') res.cost_usd = r.cost;
  process.stdout.write(JSON.stringify(res));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
"#;

/// One `file://` var's value, as promptfoo loads it.
fn load_var_file(path: &Path) -> Result<Value, String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    const IMAGES: &[(&str, &str)] = &[
        ("jpg", "image/jpeg"),
        ("jpeg", "image/jpeg"),
        ("png", "image/png"),
        ("gif", "image/gif"),
        ("bmp", "image/bmp"),
        ("webp", "image/webp"),
        ("svg", "image/svg+xml"),
        ("tif", "image/tiff"),
        ("tiff", "image/tiff"),
        ("ico", "image/x-icon"),
        ("avif", "image/avif"),
        ("heic", "image/heic"),
        ("heif", "image/heif"),
    ];
    match ext.as_str() {
        "js" | "cjs" | "mjs" | "ts" | "mts" | "cts" | "py" => {
            return Err("a var computed by code is not run by this version of evalhost; write its value, or point at a text file".into());
        }
        "pdf" => {
            return Err(
                "promptfoo extracts a PDF's text; this version of evalhost does not".into(),
            );
        }
        "mp3" | "wav" | "ogg" | "flac" | "m4a" | "aac" | "mp4" | "webm" | "mov" | "avi" | "mkv" => {
            return Err("audio and video vars are not read by this version of evalhost".into());
        }
        _ => {}
    }
    if let Some((_, mime)) = IMAGES.iter().find(|(e, _)| *e == ext) {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("not a regular file".into());
        }
        if meta.len() > crate::load::MAX_FILE_BYTES {
            return Err(format!(
                "larger than {} MiB",
                crate::load::MAX_FILE_BYTES >> 20
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        // The file's magic number wins over its extension, as in promptfoo.
        let detected = [
            ("/9j/", "image/jpeg"),
            ("iVBORw0KGgo", "image/png"),
            ("R0lGODlh", "image/gif"),
            ("R0lGODdh", "image/gif"),
            ("UklGR", "image/webp"),
            ("Qk0", "image/bmp"),
            ("Qk1", "image/bmp"),
            ("SUkq", "image/tiff"),
            ("TU0A", "image/tiff"),
            ("AAABAA", "image/x-icon"),
        ]
        .iter()
        .find(|(magic, _)| data.starts_with(magic))
        .map_or(*mime, |(_, m)| *m);
        return Ok(Value::String(format!("data:{detected};base64,{data}")));
    }
    let text = crate::roots::read_regular_text(path, crate::load::MAX_FILE_BYTES)?;
    if ext == "yaml" || ext == "yml" {
        let v = crate::yaml::parse(&text).map_err(|e| e.to_string())?;
        return Ok(Value::String(v.to_string()));
    }
    Ok(Value::String(text.trim().to_owned()))
}

/// Only the `{{ env.NAME }}` references in the strings of `v` filled.
fn fill_env_refs(v: &Value, renderer: &Renderer) -> Value {
    match v {
        Value::String(s) => Value::String(render_env_only(s, renderer)),
        Value::Array(a) => Value::Array(a.iter().map(|x| fill_env_refs(x, renderer)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), fill_env_refs(x, renderer)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// promptfoo's `renderEnvOnlyInObject` on one string: each `{{ … }}` that
/// names `env.X` or `env['X']` is rendered when it has a filter or `X` is
/// set; any other template (a var's, `{{ prompt }}`) and one naming an
/// unset variable stay as written.
fn render_env_only(s: &str, renderer: &Renderer) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}").map(|l| l + 2) else {
            break;
        };
        let whole = &rest[start..start + len + 2];
        out.push_str(&rest[..start]);
        out.push_str(&match env_reference(whole) {
            Some(name)
                if whole.contains('|')
                    || name
                        .as_deref()
                        .is_some_and(|n| renderer.env_value(n).is_some()) =>
            {
                renderer
                    .render_text(whole, &Map::new())
                    .unwrap_or_else(|_| whole.to_owned())
            }
            _ => whole.to_owned(),
        });
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// When `template` refers to the environment (`env.X`, `env['X']`): the
/// variable's name, when one is named.
fn env_reference(template: &str) -> Option<Option<String>> {
    let bytes = template.as_bytes();
    let mut found = None;
    for (i, _) in template.match_indices("env") {
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let after = &template[i + 3..];
        if after.starts_with('.') && boundary {
            let name: String = after[1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            found.get_or_insert((!name.is_empty()).then_some(name));
        } else if let Some(q) = after.strip_prefix('[') {
            let name = q
                .strip_prefix(['\'', '"'])
                .and_then(|r| r.find(['\'', '"']).map(|e| r[..e].to_owned()));
            found.get_or_insert(name);
        }
    }
    found
}

/// The environment variables `{{ env.X }}` templates left in `v` name: the
/// ones that were not set when the config was read.
fn unset_env_refs(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(start) = rest.find("{{") {
                let Some(len) = rest[start + 2..].find("}}").map(|l| l + 2) else {
                    break;
                };
                if let Some(Some(name)) = env_reference(&rest[start..start + len + 2]) {
                    out.push(name);
                }
                rest = &rest[start + len + 2..];
            }
        }
        Value::Array(a) => a.iter().for_each(|x| out.extend(unset_env_refs(x))),
        Value::Object(o) => o.values().for_each(|x| out.extend(unset_env_refs(x))),
        _ => {}
    }
    out
}
