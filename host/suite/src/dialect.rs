//! The dialect boundary: each suite format has one reader, and every reader
//! produces the one canonical [`crate::model::Suite`]. Nothing downstream
//! asks which dialect a suite was written in; what a dialect means by a
//! shared name (a threshold, a pass rule) is carried in the model.
//!
//! [`Dialect::of`] tells the dialects apart as `reference/dialects.md` §1.3
//! does: every key or type only some dialects define narrows the
//! candidates; one left is the answer; none left is a file that mixes
//! dialects (an error naming each marker and its line); AgentV 5 and
//! promptfoo share a subset (`prompts`, `providers`, `tests[{vars,
//! assert}]`), and a file that uses only it is told apart by its name
//! (`promptfooconfig.yaml` is promptfoo's, `*.eval.yaml` and `EVAL.yaml`
//! AgentV's) or promptfoo's `$schema` comment — else `--dialect` must say,
//! since the two pass tests by different rules. Never a guess.
//!
//! Assertion type names are weaker evidence than keys (an evalhost suite
//! may name a third-party plugin type `bleu`): they narrow the candidates
//! only while some remain.

use std::path::Path;

use serde_json::Value;

use crate::diag::Diagnostic;
use crate::env::Env;
use crate::roots::Roots;
use crate::source_map::{KeyPath, SourceMap};

/// A suite format evalhost reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// AgentV 4.42's `EVAL.yaml` (and `.jsonl`) format.
    AgentV4,
    /// AgentV's next format (its `main` branch, commit `58f316ca`):
    /// promptfoo-style `prompts`, `providers`, `tests[].vars`, `assert`.
    AgentV5,
    /// A promptfoo 0.121 config (`promptfooconfig.yaml`).
    Promptfoo,
}

const ALL: [Dialect; 3] = [Dialect::AgentV4, Dialect::AgentV5, Dialect::Promptfoo];

impl Dialect {
    /// Its name, as printed and recorded.
    pub fn name(self) -> &'static str {
        match self {
            Self::AgentV4 => "agentv4",
            Self::AgentV5 => "agentv5",
            Self::Promptfoo => "promptfoo",
        }
    }

    /// What it is, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Self::AgentV4 => "AgentV 4.42",
            Self::AgentV5 => "AgentV 5 (next)",
            Self::Promptfoo => "promptfoo 0.121",
        }
    }

    /// The dialect named `name` (`--dialect`).
    pub fn parse(name: &str) -> Option<Self> {
        ALL.into_iter().find(|d| d.name() == name)
    }

    /// Drops the parse [`Dialect::of`] kept for the reader, when the
    /// reader did not take it (it read other text, or the dialect was
    /// forced).
    pub fn forget_parse() {
        crate::yaml::forget_kept();
    }

    /// The dialect of the suite at `path`, or why it cannot be told. A
    /// YAML suite's parse is kept for its reader ([`crate::yaml::keep`]).
    pub fn of(path: &Path) -> Result<Self, Box<Diagnostic>> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        if ext == "jsonl" {
            return Ok(Self::AgentV4);
        }
        // A file that cannot be read or parsed is the reader's to report,
        // with its line; AgentV 4 is the reader that has always done so.
        // Capped, and only a regular file: a FIFO given as the eval file
        // would block the sniffing forever, a huge file be read whole.
        let Ok(text) = crate::roots::read_regular_text(path, crate::limits::MAX_FILE_BYTES) else {
            return Ok(Self::AgentV4);
        };
        let parsed = if ext == "json" {
            serde_json::from_str::<Value>(&text)
                .ok()
                .map(|v| (v, SourceMap::default()))
        } else {
            crate::yaml::parse_with_positions(&text).ok()
        };
        let Some((Value::Object(root), map)) = parsed else {
            return Ok(Self::AgentV4);
        };
        let dialect = detect(path, &text, &root, &map);
        // The reader parses the same text next: it gets this parse.
        if ext != "json" {
            crate::yaml::keep(text, Value::Object(root), map);
        }
        dialect
    }
}

/// A key or type only some dialects define, where it was found.
struct Marker {
    what: String,
    at: KeyPath,
    possible: &'static [Dialect],
}

use Dialect::{AgentV4 as V4, AgentV5 as V5, Promptfoo as PF};

const TOP: &[(&str, &[Dialect])] = &[
    ("execution", &[V4]),
    ("assertions", &[V4]),
    ("target", &[V4]),
    ("input", &[V4]),
    ("input_files", &[V4]),
    ("expected_output", &[V4]),
    ("eval_cases", &[V4]),
    ("evalcases", &[V4]),
    ("preprocessors", &[V4]),
    // AgentV 5 keeps a top-level `workspace` (its validator lists and
    // checks it), beside `environment`.
    ("workspace", &[V4, V5]),
    ("plugins", &[V4]),
    ("default_test", &[V5]),
    ("evaluate_options", &[V5]),
    ("derived_metrics", &[V5]),
    ("output_path", &[V5]),
    ("nunjucks_filters", &[V5]),
    ("environment", &[V5]),
    ("timeout_seconds", &[V5]),
    ("threshold", &[V5]),
    ("assert", &[V4, V5]),
    ("prompts", &[V5, PF]),
    ("providers", &[V5, PF]),
    ("scenarios", &[V5, PF]),
    ("extensions", &[V5, PF]),
    ("env", &[V5, PF]),
    ("targets", &[V5, PF]),
    ("defaultTest", &[PF]),
    ("evaluateOptions", &[PF]),
    ("derivedMetrics", &[PF]),
    ("outputPath", &[PF]),
    ("nunjucksFilters", &[PF]),
    ("commandLineOptions", &[PF]),
    ("redteam", &[PF]),
    ("sharing", &[PF]),
    ("tracing", &[PF]),
    ("writeLatestResults", &[PF]),
    ("providerPromptMap", &[PF]),
];

const TEST: &[(&str, &[Dialect])] = &[
    ("assertions", &[V4]),
    ("evaluators", &[V4]),
    ("input", &[V4]),
    ("expected_output", &[V4]),
    ("input_files", &[V4]),
    ("run", &[V5]),
    ("environment", &[V5]),
    ("id", &[V4, V5]),
    ("execution", &[V4, V5]),
    ("criteria", &[V4, V5]),
    ("assertScoringFunction", &[PF]),
    ("providerOutput", &[PF]),
];

const TEST_OPTIONS: &[&str] = &[
    "transformVars",
    "disableDefaultAsserts",
    "storeOutputAs",
    "rubricPrompt",
    "disableVarExpansion",
    "runSerially",
];

const ASSERTION: &[(&str, &[Dialect])] = &[
    ("required", &[V4, V5]),
    ("min_score", &[V4, V5]),
    ("negate", &[V4, V5]),
    ("prompt", &[V4, V5]),
    ("command", &[V4, V5]),
    ("flags", &[V4, V5]),
    ("rubricPrompt", &[PF]),
    ("contextTransform", &[PF]),
];

/// Types only AgentV 5 rejects as promptfoo's "future scope"
/// (`eval-validator.ts` on `main`).
const PF_ONLY_TYPES: &[&str] = &[
    "answer-relevance",
    "bleu",
    "classifier",
    "contains-html",
    "contains-json",
    "contains-sql",
    "contains-xml",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "factuality",
    "finish-reason",
    "gleu",
    "guardrails",
    "is-html",
    "is-refusal",
    "is-sql",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "is-xml",
    "levenshtein",
    "meteor",
    "model-graded-closedqa",
    "model-graded-factuality",
    "moderation",
    "perplexity",
    "perplexity-score",
    "pi",
    "rouge-n",
    "ruby",
    "similar:cosine",
    "similar:dot",
    "similar:euclidean",
    "select-best",
    "human",
    "max-score",
    "tool-call-f1",
    "trace-error-spans",
    "trace-span-count",
    "trace-span-duration",
    "search-rubric",
    "word-count",
];

/// The dialects that define assertion type `t` (`None`: every one).
fn type_dialects(t: &str) -> Option<&'static [Dialect]> {
    let base = t.strip_prefix("not-").unwrap_or(t);
    if t.contains('_') {
        return Some(&[V4]);
    }
    match base {
        "code-grader" | "llm-grader" | "rubrics" | "rubric" | "composite" | "skill-trigger"
        | "tool-trajectory" => Some(&[V4]),
        "script" => Some(&[V5]),
        "ends-with" | "field-accuracy" | "token-usage" | "execution-metrics" => Some(&[V4, V5]),
        // evalhost's AgentV 4 reader takes `assert-set` too (an extension).
        "assert-set" => Some(&[V4, V5, PF]),
        "llm-rubric" | "agent-rubric" | "javascript" | "python" | "webhook" | "similar"
        | "skill-used" => Some(&[V5, PF]),
        b if b.starts_with("trajectory:") => Some(&[V5, PF]),
        b if PF_ONLY_TYPES.contains(&b) => Some(&[PF]),
        // `not-` on anything but skill-used and trajectory:* is promptfoo's
        // (and an evalhost extension of AgentV 4).
        _ if t.starts_with("not-") => Some(&[V4, PF]),
        _ => None,
    }
}

fn assertion_markers(list: &Value, at: &KeyPath, strong: &mut Vec<Marker>, weak: &mut Vec<Marker>) {
    let Value::Array(items) = list else { return };
    for (i, item) in items.iter().enumerate() {
        let iat = at.index(i);
        match item {
            Value::String(_) => strong.push(Marker {
                what: "a plain-text assertion".into(),
                at: iat,
                possible: &[V4, V5],
            }),
            Value::Object(a) => {
                for (key, possible) in ASSERTION {
                    if a.contains_key(*key) {
                        strong.push(Marker {
                            what: format!("assertion key `{key}`"),
                            at: iat.key(key),
                            possible,
                        });
                    }
                }
                if let Some(Value::Number(_)) = a.get("required") {
                    strong.push(Marker {
                        what: "a numeric `required`".into(),
                        at: iat.key("required"),
                        possible: &[V4],
                    });
                }
                if a.contains_key("metric") && a.contains_key("type") {
                    weak.push(Marker {
                        what: "assertion key `metric`".into(),
                        at: iat.key("metric"),
                        possible: &[V5, PF],
                    });
                }
                if let Some(Value::String(t)) = a.get("type")
                    && let Some(possible) = type_dialects(t.trim())
                {
                    weak.push(Marker {
                        what: format!("assertion type `{t}`"),
                        at: iat.key("type"),
                        possible,
                    });
                }
                for key in ["assert", "assertions"] {
                    if let Some(inner) = a.get(key) {
                        assertion_markers(inner, &iat.key(key), strong, weak);
                    }
                }
            }
            _ => {}
        }
    }
}

fn has_v4_env_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("${{"),
        Value::Array(items) => items.iter().any(has_v4_env_reference),
        Value::Object(m) => m.values().any(has_v4_env_reference),
        _ => false,
    }
}

fn markers(root: &serde_json::Map<String, Value>) -> (Vec<Marker>, Vec<Marker>) {
    let (mut strong, mut weak) = (Vec::new(), Vec::new());
    let top = KeyPath::default();
    for (key, possible) in TOP {
        if root.contains_key(*key) {
            strong.push(Marker {
                what: format!("top-level `{key}`"),
                at: top.key(key),
                possible,
            });
        }
    }
    // AgentV 5's `defaults: {provider, grader}` (an AgentV 4 file may hold
    // YAML anchors under a key of that name).
    if let Some(Value::Object(d)) = root.get("defaults")
        && (d.contains_key("provider") || d.contains_key("grader"))
    {
        strong.push(Marker {
            what: "top-level `defaults` with `provider`/`grader`".into(),
            at: top.key("defaults"),
            possible: &[V5],
        });
    }
    if let Some(Value::Array(prompts)) = root.get("prompts")
        && let Some(i) = prompts.iter().position(Value::is_array)
    {
        strong.push(Marker {
            what: "a chat prompt written as a nested list".into(),
            at: top.key("prompts").index(i),
            possible: &[V5],
        });
    }
    if let Some(Value::Array(providers)) = root.get("providers") {
        for (i, p) in providers.iter().enumerate() {
            if p.get("runtime").is_some() {
                strong.push(Marker {
                    what: "a provider with `runtime`".into(),
                    at: top.key("providers").index(i).key("runtime"),
                    possible: &[V5],
                });
            }
            // promptfoo names a provider by its path (`openai:gpt-4o-mini`,
            // `anthropic:messages:…`, `exec:…`); AgentV 5 by a catalog label
            // or a backend kind (`openai`, `codex-cli`). Weak: a label may
            // hold a colon.
            let id = match p {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => o.get("id").and_then(Value::as_str),
                _ => None,
            };
            if let Some(id) = id.filter(|id| promptfoo_provider_path(id)) {
                weak.push(Marker {
                    what: format!("the provider id `{id}` (promptfoo's `<provider>:<model>` form)"),
                    at: top.key("providers").index(i),
                    possible: &[PF],
                });
            }
        }
    }
    for key in ["assert", "assertions"] {
        if let Some(list) = root.get(key) {
            assertion_markers(list, &top.key(key), &mut strong, &mut weak);
        }
    }
    for key in ["default_test", "defaultTest"] {
        if let Some(Value::Object(d)) = root.get(key)
            && let Some(list) = d.get("assert")
        {
            assertion_markers(list, &top.key(key).key("assert"), &mut strong, &mut weak);
        }
    }
    if let Some(Value::Array(tests)) = root.get("tests") {
        for (i, test) in tests.iter().enumerate() {
            let Value::Object(t) = test else { continue };
            let tat = top.key("tests").index(i);
            for (key, possible) in TEST {
                if t.contains_key(*key) {
                    strong.push(Marker {
                        what: format!("test key `{key}`"),
                        at: tat.key(key),
                        possible,
                    });
                }
            }
            if let Some(Value::Object(options)) = t.get("options") {
                for key in TEST_OPTIONS {
                    if options.contains_key(*key) {
                        strong.push(Marker {
                            what: format!("test option `{key}`"),
                            at: tat.key("options").key(key),
                            possible: &[PF],
                        });
                    }
                }
            }
            for key in ["assert", "assertions", "evaluators"] {
                if let Some(list) = t.get(key) {
                    assertion_markers(list, &tat.key(key), &mut strong, &mut weak);
                }
            }
        }
    }
    if has_v4_env_reference(&Value::Object(root.clone())) {
        weak.push(Marker {
            what: "a `${{ VAR }}` reference".into(),
            at: top.clone(),
            possible: &[V4],
        });
    }
    (strong, weak)
}

/// A provider path of promptfoo's form: `<provider>:<rest>` with a lower-case
/// provider name (`openai:gpt-4o`, `anthropic:messages:claude-…`,
/// `exec:./run.sh`), not a URL or a `file://` path.
fn promptfoo_provider_path(id: &str) -> bool {
    let Some((head, rest)) = id.split_once(':') else {
        return false;
    };
    !head.is_empty()
        && !rest.is_empty()
        && !rest.starts_with("//")
        && head
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn narrow(candidates: &[Dialect], markers: &[Marker]) -> Vec<Dialect> {
    candidates
        .iter()
        .copied()
        .filter(|d| markers.iter().all(|m| m.possible.contains(d)))
        .collect()
}

fn detect(
    path: &Path,
    text: &str,
    root: &serde_json::Map<String, Value>,
    map: &SourceMap,
) -> Result<Dialect, Box<Diagnostic>> {
    let (strong, weak) = markers(root);
    let strong_left = narrow(&ALL, &strong);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let promptfoo_name = name.starts_with("promptfooconfig.");
    let schema = text
        .lines()
        .take(5)
        .any(|l| l.trim_start().starts_with('#') && l.contains("promptfoo.dev/config-schema"));
    if strong_left.is_empty() {
        // A file promptfoo would read (its name, its schema comment) whose
        // only other dialect's markers are top-level keys promptfoo ignores
        // (`assertions:` beside `prompts:`): promptfoo's, and its reader
        // warns at each unknown key, as promptfoo ignores it.
        let top_level = |m: &Marker| {
            let at = m.at.to_string();
            !at.contains('.') && !at.contains('[')
        };
        let kept: Vec<Marker> = strong
            .iter()
            .filter(|m| m.possible.contains(&PF) || !top_level(m))
            .map(|m| Marker {
                what: m.what.clone(),
                at: m.at.clone(),
                possible: m.possible,
            })
            .collect();
        if (promptfoo_name || schema)
            && kept.iter().any(|m| m.possible.contains(&PF))
            && narrow(&ALL, &kept).contains(&PF)
        {
            return Ok(PF);
        }
        return Err(Box::new(mixed(path, map, &strong)));
    }
    let with_weak = narrow(&strong_left, &weak);
    let left = if with_weak.is_empty() {
        strong_left
    } else {
        with_weak
    };
    if let [one] = left.as_slice() {
        return Ok(*one);
    }
    if (promptfoo_name || schema) && left.contains(&PF) {
        return Ok(PF);
    }
    // AgentV 4 is what evalhost read before there was a choice: a file
    // with nothing of another dialect stays AgentV 4.
    if left.contains(&V4) {
        return Ok(V4);
    }
    let agentv_name = name == "eval.yaml"
        || name == "eval.yml"
        || name == "suite.yaml"
        || name == "suite.yml"
        || name.ends_with(".eval.yaml")
        || name.ends_with(".eval.yml");
    if agentv_name && left.contains(&V5) {
        return Ok(V5);
    }
    let mut d = Diagnostic::error(
        path,
        format!(
            "cannot tell whether this file is {}: it uses only keys they share, and they pass tests by different rules",
            left.iter()
                .map(|d| d.title())
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    );
    d.hint = Some(format!(
        "run with --dialect {}, or name the file promptfooconfig.yaml (promptfoo) or *.eval.yaml (AgentV)",
        left.iter().map(|d| d.name()).collect::<Vec<_>>().join("|")
    ));
    Err(Box::new(d))
}

/// The error for a file that mixes dialects: every marker and what it
/// points to.
fn mixed(path: &Path, map: &SourceMap, markers: &[Marker]) -> Diagnostic {
    // Each kind of marker once (at its first place), those that rule out
    // a dialect first.
    let mut seen = std::collections::HashSet::new();
    let mut unique: Vec<&Marker> = markers
        .iter()
        .filter(|m| seen.insert(m.what.clone()))
        .collect();
    unique.sort_by_key(|m| m.possible.len());
    let shown = unique.len().min(6);
    let more = unique.len() - shown;
    let lines: Vec<String> = unique[..shown]
        .iter()
        .map(|m| {
            let line = map
                .locate(&m.at)
                .map(|p| format!("line {}: ", p.line))
                .unwrap_or_default();
            format!(
                "{line}{} ({})",
                m.what,
                m.possible
                    .iter()
                    .map(|d| d.title())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    let mut d = Diagnostic::error(
        path,
        format!(
            "this file mixes suite dialects: {}{}",
            lines.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ),
    );
    d.hint = Some(
        "a suite is written in one dialect: AgentV 4.42, AgentV 5, or promptfoo; force one with --dialect to see what it makes of the rest"
            .into(),
    );
    d
}

/// What every reader is given besides the path.
#[derive(Debug)]
pub struct ReadOptions {
    /// Which files the suite may read.
    pub roots: Roots,
    /// What `${{ VAR }}` sees.
    pub env: Env,
    /// `--sandbox strict`: commands the suite defines are refused where
    /// they are written.
    pub untrusted: bool,
    /// Runs the code a config computes values with while it is read
    /// (promptfoo's `transformVars`, var files, prompt functions, Nunjucks
    /// filters) in the host's sandbox; without one such a config is refused.
    pub code: Option<crate::code::Runner>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect_text(name: &str, text: &str) -> Result<Dialect, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        Dialect::of(&path).map_err(|d| format!("{}\n{}", d.message, d.hint.unwrap_or_default()))
    }

    #[test]
    fn agentv4_suites_stay_agentv4() {
        for text in [
            "tests:\n  - id: a\n    input: hi\n    assertions: [{type: contains, value: x}]\n",
            "execution: {target: llm}\ntests:\n  - id: a\n    criteria: c\n",
            "tests: []\n",
            "tests:\n  - id: a\n    input: hi\n    assertions: [{type: not-contains, value: x}, {type: assert-set, assert: [{type: contains, value: y}]}]\n",
            "plugins: [{path: x.wasm}]\ntests:\n  - id: a\n    input: hi\n    assertions: [{type: bleu, value: x}]\n",
        ] {
            assert_eq!(detect_text("EVAL.yaml", text), Ok(V4), "{text}");
        }
        assert_eq!(detect_text("cases.jsonl", "not read"), Ok(V4));
    }

    #[test]
    fn agentv5_and_promptfoo_markers_decide() {
        let v5 = "prompts: ['{{q}}']\nproviders: [local]\ndefault_test: {assert: [{type: contains, value: x}]}\ntests:\n  - vars: {q: hi}\n";
        assert_eq!(detect_text("suite.yaml", v5), Ok(V5));
        let pf = "prompts: ['{{q}}']\nproviders: [echo]\ndefaultTest: {assert: [{type: contains, value: x}]}\ntests:\n  - vars: {q: hi}\n";
        assert_eq!(detect_text("config.yaml", pf), Ok(PF));
        let pf_type = "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert: [{type: levenshtein, value: hi, threshold: 2}]\n";
        assert_eq!(detect_text("x.yaml", pf_type), Ok(PF));
        let v5_script = "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert: [{type: script, command: [node, x.js]}]\n";
        assert_eq!(detect_text("x.yaml", v5_script), Ok(V5));
        // A provider path of promptfoo's form settles the shared subset.
        for provider in [
            "openai:gpt-4o-mini",
            "anthropic:messages:claude-3-5-haiku-latest",
            "{id: 'openai:chat:gpt-4.1', config: {temperature: 0}}",
        ] {
            let pf_provider = format!(
                "prompts: ['{{{{q}}}}']\nproviders: [{provider}]\ntests:\n  - vars: {{q: hi}}\n    assert: [{{type: contains, value: hi}}]\n"
            );
            assert_eq!(
                detect_text("config.yaml", &pf_provider),
                Ok(PF),
                "{pf_provider}"
            );
        }
        // AgentV 5 knows a top-level `workspace`: with `prompts` it is
        // AgentV 5, not a mix of dialects.
        let v5_workspace = "workspace: {template: ./ws}\nprompts: ['{{q}}']\nproviders: [local]\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: hi}]\n";
        assert_eq!(detect_text("agent.eval.yaml", v5_workspace), Ok(V5));
    }

    #[test]
    fn the_shared_subset_is_told_apart_by_name_or_schema_else_refused() {
        let shared = "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: hi}]\n";
        assert_eq!(detect_text("promptfooconfig.yaml", shared), Ok(PF));
        assert_eq!(detect_text("dataset.eval.yaml", shared), Ok(V5));
        let schema = format!(
            "# yaml-language-server: $schema=https://promptfoo.dev/config-schema.json\n{shared}"
        );
        assert_eq!(detect_text("config.yaml", &schema), Ok(PF));
        assert_eq!(detect_text("suite.yaml", shared), Ok(V5));
        let err = detect_text("config.yaml", shared).unwrap_err();
        assert!(
            err.contains("cannot tell whether this file is AgentV 5 (next) or promptfoo 0.121"),
            "{err}"
        );
        assert!(err.contains("--dialect agentv5|promptfoo"), "{err}");
    }

    #[test]
    fn a_promptfoo_config_with_a_top_level_key_promptfoo_ignores_is_promptfoos() {
        // The user-written set's `weoptimize-*` configs: `assertions:` beside
        // `prompts:` and `providers:`; promptfoo ignores it.
        let text = "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\nassertions:\n  - {type: contains, value: hi}\n";
        assert_eq!(detect_text("promptfooconfig.yaml", text), Ok(PF));
        // The same under another name is still a mix, named.
        assert!(detect_text("EVAL.yaml", text).is_err());
    }

    #[test]
    fn a_file_that_mixes_dialects_names_every_marker() {
        let mixed = "execution: {target: x}\ndefaultTest: {vars: {a: 1}}\ntests:\n  - id: a\n    input: hi\n";
        let err = detect_text("EVAL.yaml", mixed).unwrap_err();
        assert!(err.contains("this file mixes suite dialects"), "{err}");
        assert!(
            err.contains("line 1: top-level `execution` (AgentV 4.42)"),
            "{err}"
        );
        assert!(
            err.contains("line 2: top-level `defaultTest` (promptfoo 0.121)"),
            "{err}"
        );
    }
}

#[cfg(test)]
mod corpus_tests {
    use super::*;

    fn eval_files(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut files: Vec<_> = walkdir::WalkDir::new(dir)
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| e.path().to_path_buf())
            .filter(|p| {
                let n = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("")
                    .to_ascii_lowercase();
                n == "eval.yaml" || n == "suite.yaml" || n.ends_with(".eval.yaml")
            })
            .collect();
        files.sort();
        files
    }

    /// AgentV's example suites in both formats, beside the repository
    /// (skipped when the corpus is not there).
    #[test]
    fn the_corpus_suites_are_told_apart() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
        if !root.is_dir() {
            eprintln!("corpus missing; skipped");
            return;
        }
        let mut wrong = Vec::new();
        let mut counts = [0usize; 2];
        for (i, (dir, want)) in [("agentv-4.42.4", V4), ("agentv-5-next", V5)]
            .into_iter()
            .enumerate()
        {
            for file in eval_files(&root.join(dir)) {
                counts[i] += 1;
                match Dialect::of(&file) {
                    Ok(d) if d == want => {}
                    other => wrong.push(format!(
                        "{}: {:?}",
                        file.display(),
                        other.map_err(|d| d.message)
                    )),
                }
            }
        }
        eprintln!(
            "dialects: {} AgentV 4 and {} AgentV 5 suites",
            counts[0], counts[1]
        );
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
