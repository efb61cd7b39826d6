//! The AgentV 4.42 reader: an `EVAL.yaml` suite (or a `.jsonl` one) with
//! every `tests:` form, case directories, `include:` templates, and the
//! merging of suite-level input, files, assertions and metadata, read into
//! the canonical [`Suite`]. Each concern has its file; they share the
//! [`Loader`] (diagnostics, roots, environment, interning) defined here.
//!
//! Every problem becomes a [`Diagnostic`] with file, line and key; reading
//! goes on to report them all. What AgentV silently drops or reinterprets
//! is an error or a warning here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::diag::{Diagnostic, Diagnostics, nearest};
use crate::env::Env;
use crate::fields::{self, Field, Status};
use crate::model::{
    Aggregate, Assertion, Group, KeyPositions, LimitOverrides, Loc, Message, PluginRef, Required,
    Suite, TestCase, Trials,
};
use crate::roots::{PathError, Roots};
use crate::source_map::{KeyPath, Pos, SourceMap};

mod assertions;
mod case;
mod conversation;
mod execution;
mod group;
mod messages;
mod node;
mod read;
mod sources;
mod suite;
#[cfg(test)]
mod tests;
mod workspace;

pub use case::merge_metadata;
pub use messages::content_text;
pub use node::kind;
pub use read::parse_yaml;

use crate::limits::{MAX_FILE_BYTES, MAX_INCLUDE_DEPTH, MAX_INPUT_FILE_BYTES};

use crate::limits::host_assertion_keys;
use crate::vars::substitute_vars;
use assertions::rubric_assertion;
use conversation::implicit_llm_grader;
use node::show;
use serde_json::json;

/// True when `object[key]` holds text that also appears elsewhere in
/// `object`: the key holds YAML anchors the file uses through aliases
/// (expanded when the file was read, so the copies are equal). Only text
/// of 16 characters or more counts, so that short words shared by chance
/// do not.
fn anchors_used_elsewhere(key: &str, object: &Map<String, Value>) -> bool {
    fn texts<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) if s.chars().count() >= 16 => out.push(s),
            Value::Array(items) => items.iter().for_each(|i| texts(i, out)),
            Value::Object(m) => m.values().for_each(|i| texts(i, out)),
            _ => {}
        }
    }
    let Some(held) = object.get(key) else {
        return false;
    };
    let mut mine = Vec::new();
    texts(held, &mut mine);
    if mine.is_empty() {
        return false;
    }
    let mut rest = Vec::new();
    for (k, v) in object {
        if k != key {
            texts(v, &mut rest);
        }
    }
    mine.iter().all(|t| rest.contains(t))
}

/// One file of the suite: its path as shown, its directory, its positions.
#[derive(Debug)]
struct Doc {
    display: Arc<PathBuf>,
    dir: PathBuf,
    map: Arc<SourceMap>,
}

impl Doc {
    fn loc(&self, key: &KeyPath) -> Loc {
        Loc {
            file: self.display.clone(),
            pos: self.map.locate(key),
            key: key.clone(),
        }
    }
}

/// Why a `file://` glob in `tests:` gave no list of files.
enum GlobError {
    /// The pattern does not parse.
    Invalid(String),
    /// Its literal prefix leaves the project root.
    Path(PathError),
}

/// A test case's raw mapping, or a line of a `.jsonl` file not parsed yet
/// (parsed when its test is built, so a large file is never held parsed).
enum RawBody {
    Map(Map<String, Value>),
    Line {
        text: Arc<str>,
        range: std::ops::Range<usize>,
        line_no: usize,
    },
}

/// A test case before merging: where it came from and its raw mapping.
struct RawCase {
    map: RawBody,
    doc: Arc<Doc>,
    at: KeyPath,
    /// The case directory's name, for a discovered case.
    dir_id: Option<String>,
    /// The case directory's `workspace/`, for a discovered case.
    workspace_dir: Option<PathBuf>,
}

/// What the suite level contributes to every test.
#[derive(Default)]
struct Defaults {
    assertions: Vec<Assertion>,
    input: Option<(Value, Arc<Doc>, KeyPath)>,
    input_files: Option<(Value, Arc<Doc>, KeyPath)>,
    metadata: Map<String, Value>,
    workspace: Option<crate::workspace::Spec>,
    tags: Vec<String>,
}

struct Loader {
    diags: Diagnostics,
    env: Env,
    roots: Roots,
    eval_display: Arc<PathBuf>,
    /// `--sandbox strict`: commands the suite defines (hooks) are refused
    /// where they are written.
    untrusted: bool,
    /// Assertion configs by their JSON text: identical configs (suite-level
    /// assertions copied into every test, repeated checks) share one copy.
    configs: HashMap<Arc<str>, Arc<Map<String, Value>>>,
    /// Shared strings (see [`Loader::intern`]).
    strings: std::collections::HashSet<Arc<str>>,
    /// evalhost-only features used, for `validate --agentv`.
    extensions: Vec<crate::model::Extension>,
    /// The suite's `preprocessors`: every LLM grader's defaults.
    preprocessors: Vec<crate::model::Preprocessor>,
    /// The eval file's document as another dialect's reader rewrote it
    /// into this one's shape (AgentV 5 → 4), read in place of the file's
    /// (whose positions still locate what is reported).
    replace_root: Option<Value>,
    /// Reading AgentV 5's rewrite (so AgentV 5's rules where they differ).
    agentv5: bool,
}

/// Reads the AgentV 4.42 suite at `path` (`.yaml`/`.yml`, or `.jsonl`).
pub(crate) fn read(
    path: &Path,
    options: crate::dialect::ReadOptions,
) -> (Option<Suite>, Diagnostics) {
    read_rewritten(path, options, None)
}

/// [`read`], with the eval file's document replaced by `root` (another
/// dialect's reader's rewrite of it).
pub(crate) fn read_rewritten(
    path: &Path,
    options: crate::dialect::ReadOptions,
    root: Option<Value>,
) -> (Option<Suite>, Diagnostics) {
    let mut loader = Loader {
        agentv5: root.is_some(),
        replace_root: root,
        configs: HashMap::new(),
        strings: std::collections::HashSet::new(),
        extensions: Vec::new(),
        diags: Diagnostics::default(),
        env: options.env,
        roots: options.roots,
        eval_display: Arc::new(path.to_path_buf()),
        untrusted: options.untrusted,
        preprocessors: Vec::new(),
    };
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let suite = match extension.as_str() {
        "yaml" | "yml" => loader.yaml_suite(path),
        "jsonl" => loader.jsonl_suite(path),
        other => {
            loader.diags.push(
                Diagnostic::error(path, format!("unsupported eval file format `.{other}`"))
                    .hint("an eval file is a .yaml/.yml suite or a .jsonl file of cases"),
            );
            None
        }
    };
    (suite, loader.diags)
}

impl Loader {
    /// A loader for another thread: the same settings, no diagnostics yet,
    /// shared strings and configs of its own.
    fn fork(&self) -> Self {
        Self {
            diags: Diagnostics::default(),
            env: self.env.clone(),
            roots: self.roots.clone(),
            eval_display: self.eval_display.clone(),
            untrusted: self.untrusted,
            configs: HashMap::new(),
            strings: std::collections::HashSet::new(),
            extensions: Vec::new(),
            preprocessors: self.preprocessors.clone(),
            replace_root: None,
            agentv5: self.agentv5,
        }
    }

    fn push(
        &mut self,
        doc: &Doc,
        key: &KeyPath,
        severity_error: bool,
        message: String,
    ) -> &mut Diagnostic {
        let d = if severity_error {
            Diagnostic::error(&doc.display, message)
        } else {
            Diagnostic::warning(&doc.display, message)
        };
        self.diags.push(d.at(doc.map.locate(key)).key(key.clone()));
        self.diags.0.last_mut().expect("just pushed")
    }

    /// Records a use of an evalhost-only feature (once per place: a
    /// suite-level assertion is read again for every test).
    fn extension(&mut self, doc: &Doc, key: &KeyPath, what: impl Into<String>) {
        let loc = doc.loc(key);
        if !self.extensions.iter().any(|e| e.loc == loc) {
            self.extensions.push(crate::model::Extension {
                loc,
                what: what.into(),
            });
        }
    }

    fn error(&mut self, doc: &Doc, key: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        self.push(doc, key, true, message.into())
    }

    fn warning(&mut self, doc: &Doc, key: &KeyPath, message: impl Into<String>) -> &mut Diagnostic {
        self.push(doc, key, false, message.into())
    }

    /// How a path is shown: relative to the current directory when inside it.
    fn display(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.roots.cwd)
            .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
    }

    fn check_keys(
        &mut self,
        doc: &Doc,
        object: &Map<String, Value>,
        table: &[Field],
        at: &KeyPath,
        what: &str,
    ) {
        for key in object.keys() {
            match fields::get(table, key) {
                // A key that only holds YAML anchors the rest of the file
                // uses (`defaults: {prompt: &p ...}`): its values are in
                // use, so nothing the user wrote is lost.
                None if nearest(key, fields::names(table)).is_none()
                    && anchors_used_elsewhere(key, object) => {}
                None => {
                    let hint = match nearest(key, fields::names(table)) {
                        Some(near) => format!("did you mean `{near}`?"),
                        None => format!(
                            "known keys: {}",
                            fields::names(table).collect::<Vec<_>>().join(", ")
                        ),
                    };
                    self.warning(
                        doc,
                        &at.key(key),
                        format!("unknown key `{key}` in {what}; it is ignored"),
                    )
                    .hint = Some(hint);
                }
                Some(Field {
                    status: Status::Unsupported(why),
                    ..
                }) => {
                    self.warning(doc, &at.key(key), format!("`{key}` is ignored: {why}"));
                }
                Some(Field {
                    status: Status::Deprecated(instead),
                    ..
                }) => {
                    self.warning(
                        doc,
                        &at.key(key),
                        format!("`{key}` is deprecated; use `{instead}`"),
                    );
                }
                Some(_) => {}
            }
        }
    }

    fn path_error(&mut self, doc: &Doc, at: &KeyPath, value: &str, err: &PathError) {
        let hint = match err {
            PathError::Outside { .. } => {
                "a suite may read only files inside its project root (the nearest directory with `.git`, \
                 else the eval file's directory)"
            }
            PathError::NotFound { .. } => "paths are relative to the file that names them",
            PathError::Secret { .. } => {
                "evalhost keeps these from every suite and every sandboxed process; copy what the test needs into a file of its own"
            }
        };
        let mut hint = hint.to_owned();
        if matches!(err, PathError::NotFound { .. }) {
            // A file of a near name beside where it was looked for.
            let wanted = doc.dir.join(value.trim_start_matches('/'));
            if let (Some(dir), Some(name)) =
                (wanted.parent(), wanted.file_name().and_then(|n| n.to_str()))
            {
                let siblings: Vec<String> = std::fs::read_dir(dir)
                    .map(|rd| {
                        rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(near) = nearest(name, siblings.iter().map(String::as_str)) {
                    hint = format!("did you mean `{near}`? ({hint})");
                }
            }
        }
        self.error(doc, at, format!("`{value}`: {err}")).hint = Some(hint);
    }

    /// One shared copy of a string (assertion names and types repeat in
    /// every test).
    fn intern(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.strings.get(text) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(text);
        self.strings.insert(shared.clone());
        shared
    }

    /// One shared copy of each distinct assertion config, with its JSON.
    fn intern_config(&mut self, config: Map<String, Value>) -> (Arc<Map<String, Value>>, Arc<str>) {
        let json: Arc<str> = serde_json::to_string(&config).unwrap_or_default().into();
        match self.configs.get_key_value(&json) {
            Some((json, config)) => (config.clone(), json.clone()),
            None => {
                let config = Arc::new(config);
                self.configs.insert(json.clone(), config.clone());
                (config, json)
            }
        }
    }

    fn object(
        &mut self,
        doc: &Doc,
        parent: &Map<String, Value>,
        key: &str,
        at: &KeyPath,
    ) -> Option<Map<String, Value>> {
        match parent.get(key)? {
            Value::Object(o) => Some(o.clone()),
            Value::Null => None,
            other => {
                self.error(
                    doc,
                    &at.key(key),
                    format!("`{key}` must be a mapping, got {}", kind(other)),
                );
                None
            }
        }
    }

    fn string(&mut self, doc: &Doc, value: &Value, at: &KeyPath) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => {
                self.error(doc, at, format!("expected a string, got {}", show(other)));
                None
            }
        }
    }

    fn string_list(&mut self, doc: &Doc, value: &Value, at: &KeyPath) -> Vec<String> {
        match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| match v {
                    Value::String(s) => Some(s.clone()),
                    other => {
                        self.error(
                            doc,
                            &at.index(i),
                            format!("expected a string, got {}", show(other)),
                        );
                        None
                    }
                })
                .collect(),
            Value::String(s) => vec![s.clone()],
            other => {
                self.error(
                    doc,
                    at,
                    format!("expected a list of strings, got {}", show(other)),
                );
                Vec::new()
            }
        }
    }

    /// A positive integer at `key` of a mapping (absent or null: none);
    /// anything else is an error at that key.
    fn positive_int(
        &mut self,
        doc: &Doc,
        value: Option<&Value>,
        at: &KeyPath,
        key: &str,
    ) -> Option<u64> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v > 0) => n.as_u64(),
            Some(other) => {
                self.error(
                    doc,
                    &at.key(key),
                    format!("`{key}` must be a positive integer, got {}", show(other)),
                );
                None
            }
        }
    }

    fn unit_number(&mut self, doc: &Doc, value: &Value, at: &KeyPath) -> Option<f64> {
        match value {
            Value::Number(n) if n.as_f64().is_some_and(|x| (0.0..=1.0).contains(&x)) => n.as_f64(),
            Value::Null => None,
            other => {
                self.error(
                    doc,
                    at,
                    format!("expected a number between 0 and 1, got {}", show(other)),
                );
                None
            }
        }
    }
}
