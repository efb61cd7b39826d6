//! Reading an AgentV-style eval file into a [`Suite`]: every `tests:` form
//! (inline, `file://` entries and globs, a YAML or JSONL file of cases, a
//! directory of `<id>/case.yaml`), standalone JSONL suites with their
//! sidecar, `${{ ENV }}` and `{{ var }}` interpolation, `include:` templates,
//! and the merging of suite-level input, files, assertions and metadata.
//!
//! Every problem becomes a [`Diagnostic`] with file, line and key; loading
//! goes on to report them all. What AgentV silently drops or reinterprets is
//! an error or a warning here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::env::Env;
use super::fields::{self, Field, Status};
use super::model::{
    Aggregate, Assertion, Group, LimitOverrides, Loc, Message, PluginRef, Required, Suite,
    TestCase, Trials,
};
use super::roots::{PathError, Roots};
use super::source_map::{KeyPath, Pos, SourceMap};
use crate::diag::{Diagnostic, Diagnostics, nearest};

/// Largest suite, case or template file read (a bigger one is refused).
pub const MAX_FILE_BYTES: u64 = 32 << 20;
/// Largest file attached to an input (`type: file`, `input_files`).
pub const MAX_INPUT_FILE_BYTES: u64 = 16 << 20;
/// Deepest nesting of `include:` templates (AgentV's limit).
pub const MAX_INCLUDE_DEPTH: usize = 3;

/// Keys of an assertion the host reads (the rest is plugin config).
pub fn host_assertion_keys() -> impl Iterator<Item = &'static str> + Clone {
    fields::names(fields::ASSERTION_HOST)
}

/// Reads and checks the eval file at `path`. Returns the suite as far as it
/// could be read (check the diagnostics for errors before running it), and
/// every diagnostic.
pub fn load(path: &Path) -> (Option<Suite>, Diagnostics) {
    let roots = Roots::for_eval(path);
    let env = Env::load(&roots.eval_dir, &roots.project_root, &roots.cwd);
    load_with(path, roots, env, false)
}

/// [`load`] for an untrusted suite (`--sandbox strict`): `${{ VAR }}` sees
/// only the suite's `.env` files, never the process environment.
pub fn load_untrusted(path: &Path) -> (Option<Suite>, Diagnostics) {
    let roots = Roots::for_eval(path);
    let env = Env::load_files_only(&roots.eval_dir, &roots.project_root, &roots.cwd);
    load_with(path, roots, env, true)
}

/// [`load`] with explicit roots and environment; `untrusted` as
/// [`load_untrusted`].
pub fn load_with(
    path: &Path,
    roots: Roots,
    env: Env,
    untrusted: bool,
) -> (Option<Suite>, Diagnostics) {
    let mut loader = Loader {
        configs: HashMap::new(),
        strings: std::collections::HashSet::new(),
        diags: Diagnostics::default(),
        env,
        roots,
        eval_display: Arc::new(path.to_path_buf()),
        untrusted,
    };
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut suite = match extension.as_str() {
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
    if let Some(suite) = &mut suite {
        suite.tests.shrink_to_fit();
    }
    (suite, loader.diags)
}

/// Where the first alias (`*name`) of a YAML text is, roughly (for errors
/// the parser reports without a position).
fn first_alias(text: &str) -> Option<Pos> {
    for (n, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            if *b == b'#' {
                break;
            }
            let before = if i == 0 { b' ' } else { bytes[i - 1] };
            if *b == b'*'
                && matches!(before, b' ' | b'[' | b',' | b':' | b'-')
                && bytes
                    .get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                return Some(Pos {
                    line: n + 1,
                    col: i + 1,
                });
            }
        }
    }
    None
}

/// Parses YAML text into JSON values, applying merge keys (`<<: *anchor`).
pub fn parse_yaml(text: &str) -> Result<Value, yaml_serde::Error> {
    let mut value: yaml_serde::Value = yaml_serde::from_str(text)?;
    value.apply_merge()?;
    yaml_serde::from_value(value)
}

/// One file of the suite: its path as shown, its directory, its positions.
#[derive(Debug)]
struct Doc {
    display: Arc<PathBuf>,
    dir: PathBuf,
    map: SourceMap,
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
}

impl Loader {
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

    /// Reads a YAML file (size-capped), parses it and interpolates `${{ }}`.
    fn read_yaml(
        &mut self,
        path: &Path,
        from: Option<(&Doc, &KeyPath)>,
    ) -> Option<(Value, Arc<Doc>)> {
        let display = Arc::new(if path == self.eval_display.as_path() {
            path.to_path_buf()
        } else {
            self.display(path)
        });
        let text = self.read_text(path, &display, from, MAX_FILE_BYTES)?;
        // YAML allows no control characters but tab and line breaks (and
        // NEL): name the first one by line and column.
        if let Some((i, c)) = text
            .char_indices()
            .find(|(_, c)| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{85}'))
        {
            self.diags.push(
                Diagnostic::error(
                    &display,
                    format!("invalid YAML: the control character U+{:04X} is not allowed", c as u32),
                )
                .at(Some(position(&text[..i])))
                .hint("remove it; write it as an escape (\"\\u0000\") inside a double-quoted string if you need it"),
            );
            return None;
        }
        let map = SourceMap::build(&text);
        let doc = Arc::new(Doc {
            display: display.clone(),
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            map,
        });
        let mut value = match parse_yaml(&text) {
            Ok(v) => v,
            Err(err) => {
                let pos = err.location().map(|l| Pos {
                    line: l.line(),
                    col: l.column(),
                });
                let message = err.to_string();
                let message = message
                    .split(" at line ")
                    .next()
                    .unwrap_or(&message)
                    .to_owned();
                if message.contains("repetition limit exceeded")
                    || message.contains("recursion limit exceeded")
                {
                    // An alias bomb (`&a [*b, *b, ...]` nested) or a document
                    // nested without end: refused before it is expanded.
                    let pos = pos.or_else(|| first_alias(&text));
                    self.diags.push(
                        Diagnostic::error(&display, format!("invalid YAML: {message}: the document expands (through anchors and aliases) or nests past the parser's limits"))
                            .at(pos)
                            .hint("a suite never needs this much repetition; look for `*alias` references nested inside anchors (a \"billion laughs\" document)"),
                    );
                    return None;
                }
                self.diags.push(
                    Diagnostic::error(&display, format!("invalid YAML: {message}"))
                        .at(pos)
                        .hint("check the indentation and quoting around this line"),
                );
                return None;
            }
        };
        self.interpolate(&mut value, &doc);
        Some((value, doc))
    }

    fn read_text(
        &mut self,
        path: &Path,
        display: &Path,
        from: Option<(&Doc, &KeyPath)>,
        cap: u64,
    ) -> Option<String> {
        let report = |loader: &mut Self, message: String| match from {
            Some((doc, key)) => {
                loader.error(doc, key, message);
            }
            None => loader.diags.push(Diagnostic::error(display, message).hint(
                "pass the path of an EVAL.yaml (or any .yaml suite, or a .jsonl file of cases)",
            )),
        };
        // A file another names must really be inside the project root (a
        // link out is refused), and only a regular file is read: a FIFO or
        // a device could block or never end.
        if from.is_some()
            && let Err(err) = self.roots.contain(path)
            && matches!(err, PathError::Outside { .. })
        {
            report(self, format!("{}: {err}", display.display()));
            return None;
        }
        match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => {
                report(self, format!("{} is not a regular file", display.display()));
                return None;
            }
            Ok(meta) if meta.len() > cap => {
                report(
                    self,
                    format!(
                        "{} is {} MiB, more than the {} MiB a suite file may be",
                        display.display(),
                        meta.len() >> 20,
                        cap >> 20
                    ),
                );
                return None;
            }
            Ok(_) => {}
            Err(err) => {
                report(self, format!("cannot read {}: {err}", display.display()));
                return None;
            }
        }
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(err) => {
                report(self, format!("cannot read {}: {err}", display.display()));
                return None;
            }
        };
        // Say where: the first byte that is not UTF-8, by line and column.
        match String::from_utf8(bytes) {
            Ok(text) => Some(text),
            Err(err) => {
                let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
                let pos = position(std::str::from_utf8(valid).unwrap_or_default());
                self.diags.push(
                    Diagnostic::error(display, format!("{} is not valid UTF-8", display.display()))
                        .at(Some(pos))
                        .hint("save it as UTF-8 text"),
                );
                None
            }
        }
    }

    fn interpolate(&mut self, value: &mut Value, doc: &Doc) {
        let missing = self.env.interpolate(value);
        for name in missing {
            self.diags.push(
                Diagnostic::warning(
                    &doc.display,
                    format!("environment variable `{name}` is not set; `${{{{ {name} }}}}` became an empty string"),
                )
                .hint("export it, or add it to a .env file next to the eval file"),
            );
        }
    }

    // ----- the suite -------------------------------------------------------

    fn yaml_suite(&mut self, path: &Path) -> Option<Suite> {
        let (root, doc) = self.read_yaml(path, None)?;
        let top = KeyPath::default();
        let Value::Object(root) = root else {
            self.error(
                &doc,
                &top,
                "the eval file must be a mapping with a `tests` key",
            )
            .hint = Some("start the file with `tests:` followed by a list of test cases".into());
            return None;
        };
        self.check_keys(&doc, &root, fields::SUITE, &top, "the suite");

        let name = self.suite_name(&root, &doc, path);
        let execution = self.object(&doc, &root, "execution", &top);
        let exec_path = top.key("execution");
        if let Some(exec) = &execution {
            self.check_keys(&doc, exec, fields::EXECUTION, &exec_path, "`execution`");
        }
        let target = match execution.as_ref().and_then(|e| e.get("target")) {
            Some(v) => self.string(&doc, v, &exec_path.key("target")),
            None => root
                .get("target")
                .and_then(|v| self.string(&doc, v, &top.key("target"))),
        };
        let threshold = execution
            .as_ref()
            .and_then(|e| e.get("threshold"))
            .and_then(|v| self.unit_number(&doc, v, &exec_path.key("threshold")));
        let limits = execution
            .as_ref()
            .and_then(|e| e.get("limits"))
            .map(|v| self.limits(&doc, v, &exec_path.key("limits")))
            .unwrap_or_default();

        let mut defaults = Defaults::default();
        let suite_list = first_present(
            &[
                (&root, "assertions"),
                (&root, "assert"),
                (&root, "evaluators"),
            ],
            execution
                .as_ref()
                .map(|e| [(e, "assertions"), (e, "assert"), (e, "evaluators")]),
        );
        if let Some((key, list, in_execution)) = suite_list {
            let at = if in_execution {
                exec_path.key(key)
            } else {
                top.key(key)
            };
            defaults.assertions =
                self.assertion_list(&doc, list, &at, true, "the suite", &mut Vec::new());
        }
        defaults.input = root
            .get("input")
            .map(|v| (v.clone(), doc.clone(), top.key("input")));
        defaults.input_files = root
            .get("input_files")
            .map(|v| (v.clone(), doc.clone(), top.key("input_files")));
        defaults.metadata = self.suite_metadata(&doc, &root, &top);
        defaults.workspace = root
            .get("workspace")
            .and_then(|w| self.workspace(&doc, w, &top.key("workspace")));
        defaults.tags = match root.get("tags") {
            Some(v) => self.string_list(&doc, v, &top.key("tags")),
            None => Vec::new(),
        };
        let trials = execution
            .as_ref()
            .and_then(|e| e.get("trials"))
            .and_then(|v| self.trials(&doc, v, &exec_path.key("trials")));
        let plugins = root
            .get("plugins")
            .map(|v| self.plugins(&doc, v, &top.key("plugins")))
            .unwrap_or_default();

        let tests_value = match (root.get("tests"), root.get("eval_cases")) {
            (Some(t), _) => Some((t, top.key("tests"))),
            (None, Some(t)) => Some((t, top.key("eval_cases"))),
            (None, None) => None,
        };
        let Some((tests_value, tests_path)) = tests_value else {
            self.error(&doc, &top, "the suite has no `tests`").hint = Some(
                "add `tests:` with a list of test cases, a cases file (`tests: ./cases.yaml`) or a directory \
                 of case directories (`tests: ./cases/`)"
                    .into(),
            );
            return None;
        };
        let raw = self.expand_tests(&doc, tests_value, &tests_path);
        let tests = self.build_tests(raw, &defaults);
        let exec_allow = execution
            .as_ref()
            .and_then(|e| e.get("allow_commands"))
            .map(|v| self.string_list(&doc, v, &exec_path.key("allow_commands")));
        let matrix = match execution.as_ref().and_then(|e| e.get("targets")) {
            Some(list) => self.matrix(&doc, list, &exec_path.key("targets")),
            None => Vec::new(),
        };
        let mut suite = self.finish(
            doc,
            name,
            tests,
            target,
            threshold,
            limits,
            plugins,
            &tests_path,
        )?;
        suite.trials = trials;
        suite.exec_allow = exec_allow;
        suite.workspace = defaults.workspace.clone();
        suite.matrix = matrix;
        suite.cache = matches!(
            execution.as_ref().and_then(|e| e.get("cache")),
            Some(Value::Bool(true))
        );
        suite.cache_path = execution
            .as_ref()
            .and_then(|e| e.get("cache_path"))
            .and_then(Value::as_str)
            .map(|p| self.roots.eval_dir.join(p));
        Some(suite)
    }

    /// A `workspace` mapping, or a path to a YAML file holding one.
    fn workspace(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
    ) -> Option<crate::workspace::Spec> {
        use crate::workspace::{Isolation, Repo, Spec};
        // Paths resolve against the eval file's directory (AgentV: even in a
        // case.yaml), or against the workspace file that holds them.
        let (map, wdoc, wat) = match value {
            Value::Object(m) => (m.clone(), doc.clone(), at.clone()),
            Value::String(path) => {
                let file = match self.roots.relative(path, &doc.dir) {
                    Ok(f) => f,
                    Err(err) => {
                        self.path_error(doc, at, path, &err);
                        return None;
                    }
                };
                let (v, wdoc) = self.read_yaml(&file, Some((doc, at)))?;
                match v {
                    Value::Object(m) if m.contains_key("workspace") && m.len() == 1 => {
                        self.error(&wdoc, &KeyPath::default(), "a workspace file holds the workspace itself, without a `workspace:` wrapper");
                        return None;
                    }
                    Value::Object(m) => (m, wdoc, KeyPath::default()),
                    other => {
                        self.error(
                            &wdoc,
                            &KeyPath::default(),
                            format!("a workspace file must be a mapping, got {}", kind(&other)),
                        );
                        return None;
                    }
                }
            }
            Value::Null => return None,
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "`workspace` must be a mapping or a path to a workspace file, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        let base = if matches!(value, Value::String(_)) {
            wdoc.dir.clone()
        } else {
            self.roots.eval_dir.clone()
        };
        let doc = &wdoc;
        let at = &wat;
        self.check_keys(doc, &map, fields::WORKSPACE, at, "`workspace`");
        let template = match map.get("template") {
            Some(Value::String(t)) => match self.roots.relative(t, &base) {
                Ok(p) if p.is_dir() => Some(p),
                Ok(p) => {
                    self.error(
                        doc,
                        &at.key("template"),
                        format!("workspace template {} is not a directory", p.display()),
                    );
                    None
                }
                Err(err) => {
                    self.path_error(doc, &at.key("template"), t, &err);
                    None
                }
            },
            None | Some(Value::Null) => None,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("template"),
                    format!("`template` must be a path, got {}", kind(other)),
                );
                None
            }
        };
        let isolation = match map.get("isolation").and_then(Value::as_str) {
            None | Some("per_test") => Isolation::PerTest,
            Some("shared") => Isolation::Shared,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("isolation"),
                    format!("`isolation` must be per_test or shared, got {other:?}"),
                );
                Isolation::PerTest
            }
        };
        let mut repos = Vec::new();
        if let Some(list) = map.get("repos") {
            let Value::Array(items) = list else {
                self.error(doc, &at.key("repos"), "`repos` must be a list");
                return None;
            };
            for (i, item) in items.iter().enumerate() {
                let rat = at.key("repos").index(i);
                let Some(r) = item.as_object() else {
                    self.error(
                        doc,
                        &rat,
                        "a repo must be a mapping with `path` and `source`",
                    );
                    continue;
                };
                self.check_keys(doc, r, fields::REPO, &rat, "a repo");
                let path = r
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or(".")
                    .trim_start_matches("./")
                    .to_owned();
                if path.split('/').any(|c| c == "..") || path.starts_with('/') {
                    self.error(
                        doc,
                        &rat.key("path"),
                        "a repo `path` must stay inside the workspace",
                    );
                    continue;
                }
                if path.split('/').any(|c| c.eq_ignore_ascii_case(".git")) {
                    self.error(
                        doc,
                        &rat.key("path"),
                        format!("a repo `path` cannot be or go through a `.git` directory, got {path:?}"),
                    )
                    .hint = Some("files checked out there would become another repository's hooks and config".into());
                    continue;
                }
                let source = r.get("source");
                let (given, url_at) = match (source, r.get("repo")) {
                    (Some(Value::Object(src)), _) => match (
                        src.get("type").and_then(Value::as_str),
                        src.get("url"),
                        src.get("path"),
                    ) {
                        (Some("git") | None, Some(Value::String(u)), _) => {
                            (Some(u), rat.key("source").key("url"))
                        }
                        (Some("local"), _, Some(Value::String(p))) => {
                            (Some(p), rat.key("source").key("path"))
                        }
                        _ => (None, rat.key("source")),
                    },
                    (Some(Value::String(u)), _) => (Some(u), rat.key("source")),
                    (None, Some(Value::String(u))) => (Some(u), rat.key("repo")),
                    _ => (None, rat.clone()),
                };
                let Some(given) = given else {
                    self.error(doc, &rat, "a repo needs `source: {type: git, url: ...}` or `{type: local, path: ...}`");
                    continue;
                };
                let Some(url) = self.repo_source(doc, &url_at, given, &base) else {
                    continue;
                };
                let reference = r
                    .get("checkout")
                    .and_then(|c| c.get("ref"))
                    .or(r.get("commit"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(reference) = reference.as_deref().filter(|r| r.starts_with('-')) {
                    let key = if r.get("checkout").is_some() {
                        rat.key("checkout").key("ref")
                    } else {
                        rat.key("commit")
                    };
                    self.error(
                        doc,
                        &key,
                        format!("a git ref cannot start with `-`, got {reference:?}"),
                    )
                    .hint =
                        Some("git would read it as an option; name a branch, tag or commit".into());
                    continue;
                }
                let depth = r
                    .get("clone")
                    .and_then(|c| c.get("depth"))
                    .and_then(Value::as_u64)
                    .map(|d| d as u32);
                repos.push(Repo {
                    path,
                    url,
                    reference,
                    depth,
                });
            }
        }
        let hooks = match map.get("hooks") {
            Some(Value::Object(h)) => {
                self.check_keys(doc, h, fields::HOOKS, &at.key("hooks"), "`hooks`");
                if matches!(h.get("enabled"), Some(Value::Bool(false))) {
                    crate::workspace::Hooks::default()
                } else {
                    let mut hook = |name: &str| {
                        h.get(name)
                            .and_then(|v| self.hook(doc, v, &at.key("hooks").key(name)))
                    };
                    crate::workspace::Hooks {
                        before_all: hook("before_all"),
                        before_each: hook("before_each"),
                        after_each: hook("after_each"),
                        after_all: hook("after_all"),
                    }
                }
            }
            None | Some(Value::Null) => crate::workspace::Hooks::default(),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("hooks"),
                    format!("`hooks` must be a mapping, got {}", kind(other)),
                );
                crate::workspace::Hooks::default()
            }
        };
        Some(Spec {
            template,
            repos,
            hooks,
            isolation,
        })
    }

    fn hook(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
    ) -> Option<crate::workspace::Hook> {
        use crate::workspace::{Hook, Reset};
        if self.untrusted {
            self.error(doc, at, "`--sandbox strict` refuses commands the suite defines: this hook would run on the host")
                .hint = Some("grade an untrusted suite without its hooks, or without --sandbox strict on a machine you can lose".into());
            return None;
        }
        let map = match value {
            Value::Object(m) => m.clone(),
            Value::String(_) | Value::Array(_) => {
                let mut m = Map::new();
                m.insert("command".into(), value.clone());
                m
            }
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "a hook must be a mapping with `command`, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        self.check_keys(doc, &map, fields::HOOK, at, "a hook");
        let command = map.get("command").or(map.get("script"));
        let (argv, shell) = match command {
            Some(Value::String(s)) if !s.trim().is_empty() => (Vec::new(), Some(s.clone())),
            Some(Value::Array(items))
                if !items.is_empty()
                    && items
                        .iter()
                        .all(|i| i.as_str().is_some_and(|s| !s.is_empty())) =>
            {
                (
                    items
                        .iter()
                        .filter_map(|i| i.as_str().map(str::to_owned))
                        .collect(),
                    None,
                )
            }
            None if map.contains_key("reset") => (Vec::new(), None),
            _ => {
                self.error(doc, &at.key("command"), "a hook's `command` must be a non-empty list of arguments or a shell command line");
                return None;
            }
        };
        let reset = match map.get("reset").and_then(Value::as_str) {
            None | Some("none") => Reset::None,
            Some("fast") => Reset::Fast,
            Some("strict") => Reset::Strict,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("reset"),
                    format!("`reset` must be none, fast or strict, got {other:?}"),
                );
                Reset::None
            }
        };
        let timeout = match map.get("timeout_ms").or(map.get("timeoutMs")) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|t| t > 0) => {
                n.as_u64().map(std::time::Duration::from_millis)
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("timeout_ms"),
                    format!(
                        "`timeout_ms` must be a positive integer, got {}",
                        show(other)
                    ),
                );
                None
            }
        };
        let cwd = map
            .get("cwd")
            .and_then(Value::as_str)
            .map(|c| self.roots.eval_dir.join(c));
        Some(Hook {
            argv,
            shell,
            cwd,
            timeout,
            reset,
        })
    }

    fn matrix(&mut self, doc: &Arc<Doc>, value: &Value, at: &KeyPath) -> Vec<crate::MatrixTarget> {
        let Value::Array(items) = value else {
            self.error(doc, at, format!("`execution.targets` must be a list of target names or {{name, use_target, hooks}}, got {}", kind(value)));
            return Vec::new();
        };
        let mut out: Vec<crate::MatrixTarget> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let iat = at.index(i);
            let entry = match item {
                Value::String(name) if !name.is_empty() => crate::MatrixTarget {
                    name: name.clone(),
                    use_target: name.clone(),
                    hooks: crate::workspace::Hooks::default(),
                },
                Value::Object(o) => {
                    let Some(name) = o
                        .get("name")
                        .and_then(Value::as_str)
                        .filter(|n| !n.is_empty())
                    else {
                        self.error(doc, &iat, "a matrix target needs a `name`");
                        continue;
                    };
                    self.check_keys(doc, o, fields::MATRIX_TARGET, &iat, "a matrix target");
                    let use_target = o
                        .get("use_target")
                        .and_then(Value::as_str)
                        .filter(|u| !u.is_empty())
                        .unwrap_or(name);
                    let hooks = match o.get("hooks") {
                        Some(Value::Object(h)) => {
                            self.check_keys(doc, h, fields::HOOKS, &iat.key("hooks"), "`hooks`");
                            let mut hook = |n: &str| {
                                h.get(n)
                                    .and_then(|v| self.hook(doc, v, &iat.key("hooks").key(n)))
                            };
                            crate::workspace::Hooks {
                                before_all: hook("before_all"),
                                before_each: hook("before_each"),
                                after_each: hook("after_each"),
                                after_all: hook("after_all"),
                            }
                        }
                        None | Some(Value::Null) => crate::workspace::Hooks::default(),
                        Some(other) => {
                            self.error(
                                doc,
                                &iat.key("hooks"),
                                format!("`hooks` must be a mapping, got {}", kind(other)),
                            );
                            crate::workspace::Hooks::default()
                        }
                    };
                    crate::MatrixTarget {
                        name: name.to_owned(),
                        use_target: use_target.to_owned(),
                        hooks,
                    }
                }
                other => {
                    self.error(
                        doc,
                        &iat,
                        format!(
                            "a matrix target must be a name or a mapping, got {}",
                            kind(other)
                        ),
                    );
                    continue;
                }
            };
            if out.iter().any(|t| t.name == entry.name) {
                self.error(
                    doc,
                    &iat,
                    format!(
                        "target `{}` appears twice in `execution.targets`",
                        entry.name
                    ),
                );
                continue;
            }
            out.push(entry);
        }
        out
    }

    fn trials(&mut self, doc: &Doc, value: &Value, at: &KeyPath) -> Option<Trials> {
        let Value::Object(o) = value else {
            self.error(
                doc,
                at,
                format!(
                    "`trials` must be a mapping like {{count: 3, strategy: mean}}, got {}",
                    kind(value)
                ),
            );
            return None;
        };
        let count = match o.get("count") {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|c| (1..=1000).contains(&c)) => {
                n.as_u64()? as u32
            }
            other => {
                self.error(
                    doc,
                    &at.key("count"),
                    format!(
                        "`count` must be an integer from 1 to 1000, got {}",
                        other.map_or("nothing".into(), show)
                    ),
                );
                return None;
            }
        };
        let strategy = match o.get("strategy") {
            None | Some(Value::Null) => crate::model::Strategy::PassAtK,
            Some(Value::String(s)) if s == "pass_at_k" => crate::model::Strategy::PassAtK,
            Some(Value::String(s)) if s == "mean" => crate::model::Strategy::Mean,
            Some(Value::String(s)) if s == "confidence_interval" => {
                crate::model::Strategy::ConfidenceInterval
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("strategy"),
                    format!(
                        "`strategy` must be pass_at_k, mean or confidence_interval, got {}",
                        show(other)
                    ),
                );
                return None;
            }
        };
        if o.contains_key("cost_limit_usd") {
            self.warning(
                doc,
                &at.key("cost_limit_usd"),
                "`cost_limit_usd` is ignored: targets in this version report no cost",
            );
        }
        for key in o
            .keys()
            .filter(|k| !["count", "strategy", "cost_limit_usd"].contains(&k.as_str()))
        {
            self.warning(
                doc,
                &at.key(key),
                format!("unknown key `{key}` in `trials`; it is ignored"),
            );
        }
        Some(Trials { count, strategy })
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        doc: Arc<Doc>,
        name: String,
        tests: Vec<TestCase>,
        target: Option<String>,
        threshold: Option<f64>,
        limits: LimitOverrides,
        plugins: Vec<PluginRef>,
        tests_path: &KeyPath,
    ) -> Option<Suite> {
        if tests.is_empty() && !self.diags.has_errors() {
            self.error(&doc, tests_path, "the suite has no test cases")
                .hint = Some("add at least one test case".into());
        }
        Some(Suite {
            file: self.eval_display.clone(),
            dir: self.roots.eval_dir.clone(),
            name,
            tests,
            target,
            threshold,
            limits,
            plugins,
            trials: None,
            exec_allow: None,
            workspace: None,
            matrix: Vec::new(),
            cache: false,
            cache_path: None,
        })
    }

    fn suite_name(&mut self, root: &Map<String, Value>, doc: &Doc, path: &Path) -> String {
        match root.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
            Some(Value::String(_) | Value::Null) | None => suite_name_from_file(path),
            Some(other) => {
                self.error(
                    doc,
                    &KeyPath::default().key("name"),
                    format!("`name` must be a string, got {}", kind(other)),
                );
                suite_name_from_file(path)
            }
        }
    }

    /// Suite `metadata` with `governance` copied into `metadata.governance`.
    fn suite_metadata(
        &mut self,
        doc: &Doc,
        root: &Map<String, Value>,
        top: &KeyPath,
    ) -> Map<String, Value> {
        let mut metadata = self.object(doc, root, "metadata", top).unwrap_or_default();
        if let Some(governance) = self.object(doc, root, "governance", top) {
            metadata.insert("governance".into(), Value::Object(governance));
        }
        metadata
    }

    /// A standalone JSONL suite: one case per line, with an optional sidecar
    /// `<base>.yaml` (name, description, execution).
    fn jsonl_suite(&mut self, path: &Path) -> Option<Suite> {
        let cases = self.read_jsonl(path, None)?;
        let doc = cases.first().map(|c| c.doc.clone()).unwrap_or_else(|| {
            Arc::new(Doc {
                display: self.eval_display.clone(),
                dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                map: SourceMap::default(),
            })
        });
        let sidecar = path.with_extension("yaml");
        let top = KeyPath::default();
        let mut defaults = Defaults::default();
        let mut name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "eval".into());
        let (mut target, mut threshold, mut limits) = (None, None, LimitOverrides::default());
        if sidecar.is_file()
            && let Err(err @ PathError::Outside { .. }) = self.roots.contain(&sidecar)
        {
            let display = self.display(&sidecar);
            self.diags.push(
                Diagnostic::error(&display, format!("the JSONL sidecar: {err}"))
                    .hint("a suite may read only files inside its project root"),
            );
            return None;
        }
        if sidecar.is_file()
            && let Some((Value::Object(side), side_doc)) = self.read_yaml(&sidecar, None)
        {
            self.check_keys(&side_doc, &side, fields::SUITE, &top, "the JSONL sidecar");
            if let Some(Value::String(n)) = side.get("name") {
                name = n.trim().to_owned();
            }
            let exec_path = top.key("execution");
            if let Some(exec) = self.object(&side_doc, &side, "execution", &top) {
                self.check_keys(
                    &side_doc,
                    &exec,
                    fields::EXECUTION,
                    &exec_path,
                    "`execution`",
                );
                target = exec
                    .get("target")
                    .and_then(|v| self.string(&side_doc, v, &exec_path.key("target")));
                threshold = exec
                    .get("threshold")
                    .and_then(|v| self.unit_number(&side_doc, v, &exec_path.key("threshold")));
                limits = exec
                    .get("limits")
                    .map(|v| self.limits(&side_doc, v, &exec_path.key("limits")))
                    .unwrap_or_default();
                for key in ["assertions", "assert", "evaluators"] {
                    if let Some(list) = exec.get(key) {
                        let list = list.clone();
                        defaults.assertions.extend(self.assertion_list(
                            &side_doc,
                            &list,
                            &exec_path.key(key),
                            true,
                            "the suite",
                            &mut Vec::new(),
                        ));
                        break;
                    }
                }
            }
            if let Some(list) = side.get("assertions") {
                self.warning(&side_doc, &top.key("assertions"), "AgentV ignores top-level `assertions` in a JSONL sidecar; evalhost applies them")
                    .hint = Some("move them under `execution.assertions` to behave the same under both".into());
                let list = list.clone();
                defaults.assertions.extend(self.assertion_list(
                    &side_doc,
                    &list,
                    &top.key("assertions"),
                    true,
                    "the suite",
                    &mut Vec::new(),
                ));
            }
        }
        let tests = self.build_tests(cases, &defaults);
        self.finish(
            doc,
            name,
            tests,
            target,
            threshold,
            limits,
            Vec::new(),
            &top,
        )
    }

    // ----- tests: every form ---------------------------------------------

    fn expand_tests(&mut self, doc: &Arc<Doc>, value: &Value, at: &KeyPath) -> Vec<RawCase> {
        match value {
            Value::Array(items) => {
                let mut cases = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let item_at = at.index(i);
                    match item {
                        Value::Object(map) => cases.push(RawCase {
                            map: RawBody::Map(map.clone()),
                            doc: doc.clone(),
                            at: item_at,
                            dir_id: None,
                            workspace_dir: None,
                        }),
                        Value::String(s) if s.starts_with("file://") => {
                            cases.extend(self.file_reference(doc, &s["file://".len()..], &item_at));
                        }
                        Value::String(s) => {
                            self.error(doc, &item_at, format!("a test entry that is a string must be a file reference, got {s:?}"))
                                .hint = Some(format!("write `file://{s}` to load cases from that file"));
                        }
                        other => {
                            self.error(
                                doc,
                                &item_at,
                                format!("a test case must be a mapping, got {}", kind(other)),
                            );
                        }
                    }
                }
                cases
            }
            Value::String(s) => {
                let rel = s.strip_prefix("file://").unwrap_or(s);
                match self.roots.relative(rel, &doc.dir) {
                    Ok(path) if path.is_dir() => self.discover(doc, &path, at),
                    Ok(path) => self.case_file(doc, &path, at),
                    Err(err) => {
                        self.path_error(doc, at, rel, &err);
                        Vec::new()
                    }
                }
            }
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "`tests` must be a list of cases, a file or a directory, got {}",
                        kind(other)
                    ),
                );
                Vec::new()
            }
        }
    }

    /// A repo's source as git will get it: a remote URL as given; a local
    /// path or `file://` URL only inside the project root (resolved); never
    /// something git would read as an option. `None` when refused (reported).
    fn repo_source(&mut self, doc: &Doc, at: &KeyPath, given: &str, base: &Path) -> Option<String> {
        if given.starts_with('-') {
            self.error(
                doc,
                at,
                format!("a repo source cannot start with `-`, got {given:?}"),
            )
            .hint = Some("git would read it as an option; give a URL or a path".into());
            return None;
        }
        // `user@host:path` (scp-like) is remote; so is any URL but file://.
        let scp_like = given
            .find(':')
            .is_some_and(|i| i > 1 && !given[..i].contains('/'));
        let local = match given.strip_prefix("file://") {
            Some(path) => path,
            None if given.contains("://") || scp_like => return Some(given.to_owned()),
            None => given,
        };
        match self.roots.relative(local, base) {
            Ok(found) => Some(found.display().to_string()),
            Err(err) => {
                self.path_error(doc, at, given, &err);
                None
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
        };
        self.error(doc, at, format!("`{value}`: {err}")).hint = Some(hint.into());
    }

    /// A `file://` entry inside a tests list: a file, or a glob (sorted).
    fn file_reference(&mut self, doc: &Arc<Doc>, pattern: &str, at: &KeyPath) -> Vec<RawCase> {
        if !pattern.contains(['*', '?', '{', '[']) {
            return match self.roots.relative(pattern, &doc.dir) {
                Ok(path) => self.case_file(doc, &path, at),
                Err(err) => {
                    self.path_error(doc, at, pattern, &err);
                    Vec::new()
                }
            };
        }
        let matches = match self.glob(&doc.dir, pattern) {
            Ok(m) => m,
            Err(GlobError::Invalid(message)) => {
                self.error(doc, at, format!("invalid glob `{pattern}`: {message}"));
                return Vec::new();
            }
            Err(GlobError::Path(err)) => {
                self.path_error(doc, at, pattern, &err);
                return Vec::new();
            }
        };
        if matches.is_empty() {
            self.warning(doc, at, format!("glob `{pattern}` matched no files"));
        }
        let mut cases = Vec::new();
        for path in matches {
            match self.roots.contain(&path) {
                Ok(path) => cases.extend(self.case_file(doc, &path, at)),
                Err(err) => self.path_error(doc, at, &path.display().to_string(), &err),
            }
        }
        cases
    }

    /// Files under `base` matching `pattern`, sorted. The walk starts at
    /// the pattern's literal prefix, which must be inside the project root
    /// (nothing outside it is even listed), and goes only as deep as the
    /// pattern can match (unbounded only below a `**`).
    fn glob(&self, base: &Path, pattern: &str) -> Result<Vec<PathBuf>, GlobError> {
        let is_glob = |c: &std::path::Component<'_>| {
            c.as_os_str()
                .to_string_lossy()
                .contains(['*', '?', '{', '['])
        };
        let components: Vec<_> = Path::new(pattern.trim_start_matches("./"))
            .components()
            .collect();
        let split = components
            .iter()
            .position(is_glob)
            .unwrap_or(components.len());
        let literal: PathBuf = components[..split].iter().collect();
        let rest: PathBuf = components[split..].iter().collect();
        let matcher = globset::GlobBuilder::new(&rest.to_string_lossy())
            .literal_separator(true)
            .build()
            .map_err(|e| GlobError::Invalid(e.to_string()))?
            .compile_matcher();
        let start = match self.roots.relative(&literal.to_string_lossy(), base) {
            Ok(start) => start,
            Err(PathError::NotFound { .. }) => return Ok(Vec::new()),
            Err(err) => return Err(GlobError::Path(err)),
        };
        let deep = components[split..]
            .iter()
            .any(|c| c.as_os_str().to_string_lossy().contains("**"));
        let depth = if deep {
            usize::MAX
        } else {
            components.len() - split
        };
        let mut found: Vec<PathBuf> = walkdir::WalkDir::new(&start)
            .follow_links(false)
            .min_depth(1)
            .max_depth(depth)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file() || e.file_type().is_symlink())
            .filter(|e| {
                e.path()
                    .strip_prefix(&start)
                    .is_ok_and(|relative| matcher.is_match(relative))
            })
            .map(walkdir::DirEntry::into_path)
            .collect();
        found.sort();
        Ok(found)
    }

    /// A file of cases: YAML (a list) or JSONL (one per line).
    fn case_file(&mut self, from: &Arc<Doc>, path: &Path, at: &KeyPath) -> Vec<RawCase> {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        match extension.as_str() {
            "yaml" | "yml" => {
                if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
                    self.warning(
                        from,
                        at,
                        format!("cases file {} is empty", self.display(path).display()),
                    );
                    return Vec::new();
                }
                let Some((value, doc)) = self.read_yaml(path, Some((from, at))) else {
                    return Vec::new();
                };
                match value {
                    Value::Array(items) => items
                        .into_iter()
                        .enumerate()
                        .filter_map(|(i, item)| match item {
                            Value::Object(map) => Some(RawCase {
                                map: RawBody::Map(map),
                                doc: doc.clone(),
                                at: KeyPath::default().index(i),
                                dir_id: None,
                                workspace_dir: None,
                            }),
                            other => {
                                self.error(
                                    &doc,
                                    &KeyPath::default().index(i),
                                    format!("a test case must be a mapping, got {}", kind(&other)),
                                );
                                None
                            }
                        })
                        .collect(),
                    Value::Null => {
                        self.warning(&doc, &KeyPath::default(), "cases file is empty");
                        Vec::new()
                    }
                    other => {
                        self.error(&doc, &KeyPath::default(), format!("a cases file must be a YAML list of test cases, got {}", kind(&other)))
                            .hint = Some("write the cases as a list (`- id: ...`), or use `tests: ./dir/` for a directory of case.yaml".into());
                        Vec::new()
                    }
                }
            }
            "jsonl" => self.read_jsonl(path, Some((from, at))).unwrap_or_default(),
            other => {
                self.error(
                    from,
                    at,
                    format!(
                        "unsupported cases file format `.{other}` ({})",
                        self.display(path).display()
                    ),
                )
                .hint = Some("cases files are .yaml, .yml or .jsonl".into());
                Vec::new()
            }
        }
    }

    /// One case per non-blank line.
    fn read_jsonl(
        &mut self,
        path: &Path,
        from: Option<(&Arc<Doc>, &KeyPath)>,
    ) -> Option<Vec<RawCase>> {
        let display = Arc::new(if path == self.eval_display.as_path() {
            path.to_path_buf()
        } else {
            self.display(path)
        });
        let text = self.read_text(path, &display, from.map(|(d, k)| (&**d, k)), MAX_FILE_BYTES)?;
        let mut map = SourceMap::default();
        let mut lines = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = KeyPath::default().index(lines.len());
            map.insert(
                at.clone(),
                Pos {
                    line: n + 1,
                    col: 1,
                },
            );
            lines.push((n + 1, at, line));
        }
        let doc = Arc::new(Doc {
            display: display.clone(),
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            map,
        });
        if lines.is_empty() {
            if let Some((from_doc, at)) = from {
                self.warning(
                    from_doc,
                    at,
                    format!("cases file {} is empty", display.display()),
                );
            }
            return Some(Vec::new());
        }
        // Lines are parsed when their test is built (see `RawBody::Line`).
        let shared: Arc<str> = Arc::from(text.as_str());
        let cases = lines
            .into_iter()
            .map(|(line_no, at, line)| {
                let start = line.as_ptr() as usize - text.as_ptr() as usize;
                RawCase {
                    map: RawBody::Line {
                        text: shared.clone(),
                        range: start..start + line.len(),
                        line_no,
                    },
                    doc: doc.clone(),
                    at,
                    dir_id: None,
                    workspace_dir: None,
                }
            })
            .collect();
        Some(cases)
    }

    /// A directory of cases: each immediate subdirectory with a `case.yaml`
    /// (or `case.yml`) is a case named after it, in sorted order.
    fn discover(&mut self, from: &Arc<Doc>, dir: &Path, at: &KeyPath) -> Vec<RawCase> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(err) => {
                self.error(
                    from,
                    at,
                    format!(
                        "cannot read the case directory {}: {err}",
                        self.display(dir).display()
                    ),
                );
                return Vec::new();
            }
        };
        let mut subdirs: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect();
        // Plain code-unit order, as AgentV sorts (upper case before lower).
        subdirs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut cases = Vec::new();
        for (name, sub) in subdirs {
            let sub = match self.roots.contain(&sub) {
                Ok(s) => s,
                Err(err) => {
                    self.path_error(
                        from,
                        at,
                        &format!("{}/{name}", self.display(dir).display()),
                        &err,
                    );
                    continue;
                }
            };
            let Some(case_file) = ["case.yaml", "case.yml"]
                .iter()
                .map(|f| sub.join(f))
                .find(|p| p.is_file())
            else {
                self.warning(
                    from,
                    at,
                    format!("skipping directory `{name}`: no case.yaml found"),
                )
                .hint = Some(format!(
                    "add {}/case.yaml to make it a test case",
                    self.display(&sub).display()
                ));
                continue;
            };
            let Some((value, doc)) = self.read_yaml(&case_file, Some((from, at))) else {
                continue;
            };
            let Value::Object(map) = value else {
                self.error(
                    &doc,
                    &KeyPath::default(),
                    format!(
                        "case.yaml must be a mapping (one test case), got {}",
                        kind(&value)
                    ),
                );
                continue;
            };
            let mut workspace_dir = sub.join("workspace");
            if workspace_dir.is_dir() {
                match self.roots.contain(&workspace_dir) {
                    Ok(real) => workspace_dir = real,
                    Err(err) => {
                        let shown = self.display(&workspace_dir).display().to_string();
                        self.path_error(from, at, &shown, &err);
                        continue;
                    }
                }
            }
            cases.push(RawCase {
                map: RawBody::Map(map),
                doc,
                at: KeyPath::default(),
                dir_id: Some(name),
                workspace_dir: workspace_dir.is_dir().then_some(workspace_dir),
            });
        }
        cases
    }

    // ----- building tests --------------------------------------------------

    fn build_tests(&mut self, raw: Vec<RawCase>, defaults: &Defaults) -> Vec<TestCase> {
        // Sized once: growing a vector of 100,000 tests by doubling would
        // briefly hold both copies.
        let mut tests: Vec<TestCase> = Vec::with_capacity(raw.len());
        let mut seen: HashMap<String, usize> = HashMap::new();
        for case in raw {
            let Some(test) = self.test(case, defaults) else {
                continue;
            };
            if let Some(&first) = seen.get(&test.id) {
                let first = &tests[first];
                let first_place = match first.loc.pos {
                    Some(p) => format!("{}:{}", first.loc.file.display(), p.line),
                    None => first.loc.file.display().to_string(),
                };
                let message = format!(
                    "duplicate test id `{}`: also used at {first_place}",
                    test.id
                );
                self.diags.push(
                    Diagnostic::error(&test.loc.file, message)
                        .at(test.loc.pos)
                        .key(test.loc.key.clone())
                        .hint("every test id must be unique within a suite"),
                );
            } else {
                seen.insert(test.id.clone(), tests.len());
            }
            tests.push(test);
        }
        tests
    }

    fn test(&mut self, case: RawCase, defaults: &Defaults) -> Option<TestCase> {
        let RawCase {
            map: body,
            doc,
            at,
            dir_id,
            workspace_dir,
        } = case;
        let doc = &doc;
        let at = &at;
        let test = match body {
            RawBody::Map(map) => map,
            RawBody::Line {
                text,
                range,
                line_no,
            } => match serde_json::from_str::<Value>(text[range].trim()) {
                Ok(mut value) => {
                    self.interpolate(&mut value, doc);
                    match value {
                        Value::Object(m) => m,
                        other => {
                            self.error(
                                doc,
                                at,
                                format!(
                                    "line {line_no} must be a JSON object (a test case), got {}",
                                    kind(&other)
                                ),
                            );
                            return None;
                        }
                    }
                }
                Err(err) => {
                    self.diags.push(
                        Diagnostic::error(
                            &doc.display,
                            format!("line {line_no} is not valid JSON: {err}"),
                        )
                        .at(Some(Pos {
                            line: line_no,
                            col: err.column(),
                        }))
                        .hint("a .jsonl file has one JSON object per line"),
                    );
                    return None;
                }
            },
        };
        self.check_keys(doc, &test, fields::CASE, at, "a test case");
        let id = match (test.get("id"), &dir_id) {
            (Some(Value::String(s)), _) if !s.is_empty() => s.clone(),
            (None | Some(Value::Null), Some(dir)) => dir.clone(),
            (Some(Value::Number(n)), _) => {
                self.error(
                    doc,
                    &at.key("id"),
                    format!("test `id` must be a string, got number {n}"),
                )
                .hint = Some(format!("quote it: id: \"{n}\""));
                n.to_string()
            }
            (Some(other), _) => {
                self.error(
                    doc,
                    &at.key("id"),
                    format!("test `id` must be a non-empty string, got {}", kind(other)),
                );
                return None;
            }
            (None, None) => {
                self.error(doc, at, "the test case has no `id`").hint =
                    Some("add `id: some-name`, unique in the suite".into());
                return None;
            }
        };
        let vars = match test.get("vars") {
            None | Some(Value::Null) => None,
            Some(Value::Object(v)) => Some(v.clone()),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("vars"),
                    format!("`vars` must be a mapping, got {}", kind(other)),
                );
                None
            }
        };
        let subst = |v: &Value| match &vars {
            Some(vars) => substitute_vars(v, vars),
            None => v.clone(),
        };

        let execution = self.object(doc, &test, "execution", at);
        if let Some(exec) = &execution {
            let mut own = Map::new();
            for (key, value) in exec {
                if fields::get(fields::CASE_EXECUTION, key).is_none()
                    && fields::get(fields::EXECUTION, key).is_some()
                {
                    self.warning(
                        doc,
                        &at.key("execution").key(key),
                        format!("`{key}` applies to the whole suite, not to one test; it is ignored here"),
                    )
                    .hint = Some("set it in the suite's `execution`".into());
                } else {
                    own.insert(key.clone(), value.clone());
                }
            }
            self.check_keys(
                doc,
                &own,
                fields::CASE_EXECUTION,
                &at.key("execution"),
                "a test's `execution`",
            );
        }
        let skip_defaults = match execution.as_ref().and_then(|e| e.get("skip_defaults")) {
            None | Some(Value::Null | Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("execution").key("skip_defaults"),
                    format!("`skip_defaults` must be true or false, got {}", kind(other)),
                );
                false
            }
        };
        let threshold = execution
            .as_ref()
            .and_then(|e| e.get("threshold"))
            .and_then(|v| self.unit_number(doc, v, &at.key("execution").key("threshold")));

        // Input: suite input first, then the test's; input_files turn a
        // string input into file blocks followed by the text.
        let input_mark = self.diags.error_count();
        let mut input = Vec::new();
        if !skip_defaults && let Some((value, sdoc, sat)) = &defaults.input {
            input.extend(self.messages(sdoc, &subst(value), sat, "user"));
        }
        let files = match test.get("input_files") {
            Some(v) => Some((subst(v), doc.clone(), at.key("input_files"))),
            None if !skip_defaults => defaults
                .input_files
                .as_ref()
                .map(|(v, d, k)| (subst(v), d.clone(), k.clone())),
            None => None,
        };
        match test.get("input") {
            Some(value) => {
                let value = subst(value);
                match (&files, &value) {
                    (Some((list, fdoc, fat)), Value::String(text)) => {
                        let paths = self.string_list(fdoc, list, fat);
                        if paths.is_empty() {
                            self.error(
                                fdoc,
                                fat,
                                "`input_files` has no file; the input would be empty",
                            )
                            .hint = Some("list at least one file, or remove `input_files`".into());
                        }
                        // Checked here, so that an error names `input_files[i]`;
                        // only files that pass become blocks.
                        let mut blocks: Vec<Value> = Vec::new();
                        for (i, p) in paths.into_iter().enumerate() {
                            let file_at = fat.index(i);
                            match self.roots.find(&p, Some(&self.roots.eval_dir.clone())) {
                                Err(err) => self.path_error(fdoc, &file_at, &p, &err),
                                Ok(path) => match std::fs::metadata(&path) {
                                    Ok(m) if !m.is_file() => {
                                        let display = self.display(&path);
                                        self.error(
                                            fdoc,
                                            &file_at,
                                            format!("{} is not a regular file", display.display()),
                                        );
                                    }
                                    Ok(m) if m.len() > MAX_INPUT_FILE_BYTES => {
                                        let display = self.display(&path);
                                        self.error(
                                            fdoc,
                                            &file_at,
                                            format!(
                                                "{} is {} MiB, more than the {} MiB a suite file may be",
                                                display.display(),
                                                m.len() >> 20,
                                                MAX_INPUT_FILE_BYTES >> 20
                                            ),
                                        );
                                    }
                                    _ => {
                                        blocks.push(serde_json::json!({"type": "file", "value": p}))
                                    }
                                },
                            }
                        }
                        blocks.push(serde_json::json!({"type": "text", "value": text}));
                        let content = Value::Array(blocks);
                        let message = serde_json::json!({"role": "user", "content": content});
                        input.extend(self.messages(doc, &message, &at.key("input"), "user"));
                    }
                    (Some((_, fdoc, fat)), other) => {
                        self.error(
                            fdoc,
                            fat,
                            format!(
                                "`input_files` needs a string `input`, but test `{id}` has {}",
                                kind(other)
                            ),
                        )
                        .hint = Some(
                            "AgentV skips such a test silently; put the files in the messages as \
                             `{type: file, value: path}` blocks instead"
                                .into(),
                        );
                    }
                    (None, _) => input.extend(self.messages(doc, &value, &at.key("input"), "user")),
                }
            }
            None => {
                self.error(doc, at, format!("test `{id}` has no `input`"))
                    .hint =
                    Some("add `input:` with the prompt (a string or a list of messages)".into());
            }
        }
        // Only when reading this test's input found nothing wrong: another
        // test's error must not hide this one.
        if test.get("input").is_some() && input.is_empty() && self.diags.error_count() == input_mark
        {
            self.error(
                doc,
                &at.key("input"),
                format!("test `{id}` has an empty input"),
            );
        }

        let expected = test
            .get("expected_output")
            .map(|v| self.messages(doc, &subst(v), &at.key("expected_output"), "assistant"))
            .unwrap_or_default();
        let criteria = match (test.get("criteria"), test.get("expected_outcome")) {
            (Some(v), _) => self.string(doc, &subst(v), &at.key("criteria")),
            (None, Some(v)) => self.string(doc, &subst(v), &at.key("expected_outcome")),
            (None, None) => None,
        };
        let mut metadata = self.object(doc, &test, "metadata", at).unwrap_or_default();
        merge_metadata(&mut metadata, &defaults.metadata);

        let what = format!("test `{id}`");
        let mut assertions = Vec::new();
        if let Some(rubrics) = test.get("rubrics") {
            let mut config = Map::new();
            config.insert("criteria".into(), rubrics.clone());
            assertions.push(rubric_assertion(
                config,
                1.0,
                doc.loc(&at.key("rubrics")),
                false,
            ));
        }
        match (test.get("assertions"), test.get("assert")) {
            (Some(list), _) => {
                assertions.extend(self.assertion_list(
                    doc,
                    list,
                    &at.key("assertions"),
                    false,
                    &what,
                    &mut Vec::new(),
                ));
            }
            (None, Some(list)) => {
                assertions.extend(self.assertion_list(
                    doc,
                    list,
                    &at.key("assert"),
                    false,
                    &what,
                    &mut Vec::new(),
                ));
            }
            (None, None) => {
                if test
                    .get("evaluators")
                    .or(execution.as_ref().and_then(|e| e.get("evaluators")))
                    .is_some()
                {
                    self.error(doc, at, format!("test `{id}` lists its graders under `evaluators`"))
                        .hint = Some("rename `evaluators` to `assertions` (AgentV skips such a test as incomplete)".into());
                }
            }
        }
        if !skip_defaults {
            assertions.extend(defaults.assertions.iter().cloned());
        }
        let listed = test.get("assertions").or(test.get("assert")).is_some();
        if assertions.is_empty()
            && !listed
            && criteria.as_deref().is_some_and(|c| !c.trim().is_empty())
        {
            // AgentV's implicit default grader: an LLM judge of the criteria.
            let config = Map::new();
            assertions.push(Assertion {
                name: "llm-grader".into(),
                kind: "llm-grader".into(),
                negate: false,
                weight: 1.0,
                required: Required::No,
                min_score: None,
                limits: LimitOverrides::default(),
                config_json: Value::Object(config.clone()).to_string().into(),
                config: Arc::new(config),
                loc: doc.loc(at),
                key_positions: Vec::new(),
                group: None,
                wasm: None,
                from_suite: false,
            });
        }
        if assertions.is_empty() {
            let message = if listed {
                format!("test `{id}` has an empty assertion list, so nothing would grade it")
            } else {
                format!(
                    "test `{id}` has no assertions and no `criteria`, so nothing would grade it"
                )
            };
            self.error(doc, at, message).hint = Some(
                "add `assertions:`, or `criteria:` for the default LLM judge (AgentV would run a judge without \
                 criteria; evalhost does not guess)"
                    .into(),
            );
        }
        let mut tags = match test.get("tags") {
            Some(v) => self.string_list(doc, v, &at.key("tags")),
            None => Vec::new(),
        };
        for tag in &defaults.tags {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        let timeout_ms = match test.get("timeout_ms") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|t| t > 0) => n.as_u64(),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("timeout_ms"),
                    format!(
                        "`timeout_ms` must be a positive integer, got {}",
                        show(other)
                    ),
                );
                None
            }
        };
        let test_targets = execution
            .as_ref()
            .and_then(|e| e.get("targets"))
            .map(|v| self.string_list(doc, v, &at.key("execution").key("targets")));
        let expected_fail = match test.get("expected_fail") {
            None | Some(Value::Null | Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("expected_fail"),
                    format!("`expected_fail` must be true or false, got {}", show(other)),
                );
                false
            }
        };
        let conversation_id = match test.get("conversation_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.clone()),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("conversation_id"),
                    format!("`conversation_id` must be a string, got {}", kind(other)),
                );
                None
            }
        };
        let workspace = match test.get("workspace") {
            Some(w) => self.workspace(doc, w, &at.key("workspace")),
            None => workspace_dir.map(|d| crate::workspace::Spec {
                template: Some(d),
                ..crate::workspace::Spec::default()
            }),
        };
        // Exact sizes: a suite of 100,000 tests keeps these for the run.
        let (mut input, mut expected, mut assertions) = (input, expected, assertions);
        input.shrink_to_fit();
        expected.shrink_to_fit();
        assertions.shrink_to_fit();
        Some(TestCase {
            id,
            input,
            expected,
            criteria,
            metadata,
            assertions,
            threshold,
            tags,
            timeout_ms,
            expected_fail,
            conversation_id,
            targets: test_targets,
            workspace: workspace.map(Box::new),
            loc: doc.loc(at),
        })
    }

    // ----- assertions ----------------------------------------------------

    fn assertion_list(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
        from_suite: bool,
        owner: &str,
        chain: &mut Vec<PathBuf>,
    ) -> Vec<Assertion> {
        let Value::Array(items) = value else {
            self.error(
                doc,
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
                    self.warning(doc, &item_path, "empty rubric criterion; it is ignored");
                }
                Value::String(s) => {
                    criteria.push(s.trim().to_owned());
                    if rubric_slot.is_none() {
                        rubric_slot = Some((out.len(), item_path));
                    }
                }
                Value::Object(entry) if entry.len() == 1 && entry.contains_key("include") => {
                    out.extend(self.include(doc, entry, &item_path, from_suite, owner, chain));
                }
                Value::Object(entry) => {
                    if let Some(a) = self.assertion(doc, entry, &item_path, from_suite, owner) {
                        out.push(a);
                    }
                }
                other => {
                    self.error(
                        doc,
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
            out.insert(
                slot,
                rubric_assertion(config, weight, doc.loc(&path), from_suite),
            );
        }
        out
    }

    /// `- include: name-or-path`: the `assertions` of a template file.
    fn include(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
        from_suite: bool,
        owner: &str,
        chain: &mut Vec<PathBuf>,
    ) -> Vec<Assertion> {
        let Some(Value::String(name)) = entry.get("include") else {
            self.error(
                doc,
                &at.key("include"),
                "`include` must be a template name or path (a string)",
            );
            return Vec::new();
        };
        let is_name = !name.contains(['/', '\\']) && !name.starts_with('.');
        let found = if is_name {
            let yaml = format!(".agentv/templates/{name}.yaml");
            let yml = format!(".agentv/templates/{name}.yml");
            let evalhost = format!(".evalhost/templates/{name}.yaml");
            // The first found, looked for in order; else a link out of the
            // project, named as such rather than as "not found".
            let mut error: Option<PathError> = None;
            let mut hit = None;
            for candidate in [evalhost, yaml, yml] {
                match self.roots.find(&candidate, Some(&doc.dir)) {
                    Ok(p) => {
                        hit = Some(p);
                        break;
                    }
                    Err(e) => {
                        if !matches!(error, Some(PathError::Outside { .. })) {
                            error = Some(e);
                        }
                    }
                }
            }
            hit.ok_or_else(|| error.expect("three candidates were tried"))
        } else {
            self.roots.find(name, Some(&doc.dir))
        };
        let path = match found {
            Ok(p) => p,
            Err(err) => {
                self.path_error(doc, &at.key("include"), name, &err);
                return Vec::new();
            }
        };
        let show = |p: &PathBuf| {
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        };
        if chain.contains(&path) {
            let mut names: Vec<String> = chain.iter().map(show).collect();
            names.push(show(&path));
            self.error(
                doc,
                &at.key("include"),
                format!("assertion template cycle: {}", names.join(" -> ")),
            );
            return Vec::new();
        }
        if chain.len() >= MAX_INCLUDE_DEPTH {
            let mut names: Vec<String> = chain.iter().map(show).collect();
            names.push(show(&path));
            self.error(
                doc,
                &at.key("include"),
                format!(
                    "assertion templates nest deeper than {MAX_INCLUDE_DEPTH}: {}",
                    names.join(" -> ")
                ),
            );
            return Vec::new();
        }
        let Some((value, tdoc)) = self.read_yaml(&path, Some((doc, &at.key("include")))) else {
            return Vec::new();
        };
        let Some(list) = value.get("assertions").filter(|l| l.is_array()).cloned() else {
            self.error(
                &tdoc,
                &KeyPath::default(),
                "an assertion template must be a mapping with an `assertions` list",
            );
            return Vec::new();
        };
        chain.push(path);
        let out = self.assertion_list(
            &tdoc,
            &list,
            &KeyPath::default().key("assertions"),
            from_suite,
            owner,
            chain,
        );
        chain.pop();
        out
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

    /// The members and aggregator of a `composite` or `assert-set`.
    fn group(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
        kind_name: &str,
        from_suite: bool,
        owner: &str,
    ) -> Option<Group> {
        let composite = kind_name == "composite";
        let (own_keys, member_keys): (&[&str], &[&str]) = if composite {
            (
                &[
                    "type",
                    "name",
                    "weight",
                    "required",
                    "min_score",
                    "negate",
                    "aggregator",
                    "assertions",
                    "assert",
                    "evaluators",
                ],
                &["assertions", "assert", "evaluators"],
            )
        } else {
            (
                &[
                    "type",
                    "name",
                    "weight",
                    "required",
                    "min_score",
                    "negate",
                    "threshold",
                    "metric",
                    "config",
                    "assert",
                    "assertions",
                ],
                &["assert", "assertions"],
            )
        };
        for key in entry.keys().filter(|k| !own_keys.contains(&k.as_str())) {
            self.error(
                doc,
                &at.key(key),
                format!(
                    "`{key}` is not a key of {kind_name} (its keys: {})",
                    own_keys.join(", ")
                ),
            );
        }
        if !composite && entry.contains_key("metric") {
            self.warning(
                doc,
                &at.key("metric"),
                "`metric` (promptfoo's named metric) is ignored: evalhost reports the set's score under its `name`",
            )
            .hint = Some("give the assert-set a `name` to label its score".into());
        }
        let Some((list_key, list)) = member_keys
            .iter()
            .find_map(|k| entry.get(*k).map(|v| (*k, v)))
        else {
            self.error(
                doc,
                at,
                format!("a {kind_name} needs its members under `{}`", member_keys[0]),
            );
            return None;
        };
        let items = match list {
            Value::Array(items) if !items.is_empty() => items,
            Value::Array(_) => {
                self.error(
                    doc,
                    &at.key(list_key),
                    format!("`{list_key}` is empty: a {kind_name} needs at least one member"),
                );
                return None;
            }
            other => {
                self.error(
                    doc,
                    &at.key(list_key),
                    format!(
                        "`{list_key}` must be a non-empty list of assertions, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        // assert-set `config` is passed into every member (a member's own keys win).
        let shared = match entry.get("config") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(c)) if !composite => c.clone(),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("config"),
                    format!("`config` must be a mapping, got {}", kind(other)),
                );
                Map::new()
            }
        };
        let mut members = Vec::new();
        let mut names = std::collections::HashSet::new();
        let before = self.diags.error_count();
        for (i, item) in items.iter().enumerate() {
            let item_at = at.key(list_key).index(i);
            let Value::Object(member) = item else {
                self.error(
                    doc,
                    &item_at,
                    format!(
                        "a {kind_name} member must be a mapping with a `type`, got {}",
                        kind(item)
                    ),
                );
                continue;
            };
            if member.contains_key("include") {
                self.error(
                    doc,
                    &item_at.key("include"),
                    format!("`include` is not supported inside a {kind_name}; list its members"),
                );
                continue;
            }
            if composite {
                // AgentV skips these members with a warning; evalhost refuses
                // them, since the composite would grade something else.
                match member.get("name") {
                    Some(Value::String(n)) if !n.trim().is_empty() => {
                        if !names.insert(n.clone()) {
                            self.error(
                                doc,
                                &item_at.key("name"),
                                format!("two members of this composite are named `{n}`"),
                            );
                        }
                    }
                    _ => {
                        self.error(doc, &item_at, "a composite member needs a `name` (the aggregator refers to it; AgentV skips a member without one)");
                        continue;
                    }
                }
                if let Some(Value::String(t)) = member.get("type")
                    && t.contains('_')
                {
                    self.error(
                        doc,
                        &item_at.key("type"),
                        format!(
                            "write composite member types with `-` (`{}`): AgentV skips `{t}` here",
                            t.replace('_', "-")
                        ),
                    );
                }
                for key in ["weight", "required", "min_score", "negate"] {
                    if member.contains_key(key) {
                        let hint = if key == "weight" {
                            "set it in `aggregator.weights`"
                        } else {
                            "set it on the composite"
                        };
                        self.error(doc, &item_at.key(key), format!("a composite member's `{key}` has no effect (AgentV ignores it): {hint}"));
                    }
                }
            }
            let merged;
            let member = if shared.is_empty() {
                member
            } else {
                let mut m = shared.clone();
                m.extend(member.clone());
                merged = m;
                &merged
            };
            if let Some(a) = self.assertion(doc, member, &item_at, from_suite, owner) {
                members.push(a);
            }
        }
        if self.diags.error_count() > before {
            return None;
        }
        let aggregate = if composite {
            let aggregator = match entry.get("aggregator") {
                Some(Value::Object(a)) => a,
                Some(other) => {
                    self.error(
                        doc,
                        &at.key("aggregator"),
                        format!(
                            "`aggregator` must be a mapping with a `type`, got {}",
                            kind(other)
                        ),
                    );
                    return None;
                }
                None => {
                    self.error(doc, at, "a composite needs an `aggregator`: {type: weighted_average, weights?} or {type: threshold, threshold}");
                    return None;
                }
            };
            let agg_at = at.key("aggregator");
            match aggregator.get("type").and_then(Value::as_str) {
                Some("weighted_average") => {
                    for key in aggregator
                        .keys()
                        .filter(|k| !matches!(k.as_str(), "type" | "weights"))
                    {
                        self.error(doc, &agg_at.key(key), format!("`{key}` is not a key of a weighted_average aggregator (its keys: type, weights)"));
                    }
                    let mut weights = Vec::new();
                    match aggregator.get("weights") {
                        None | Some(Value::Null) => {}
                        Some(Value::Object(w)) => {
                            for (name, value) in w {
                                if !members.iter().any(|m| *m.name == **name) {
                                    let known: Vec<&str> =
                                        members.iter().map(|m| &*m.name).collect();
                                    self.error(
                                        doc,
                                        &agg_at.key("weights").key(name),
                                        format!(
                                            "no member is named `{name}` (members: {})",
                                            known.join(", ")
                                        ),
                                    );
                                }
                                match value.as_f64() {
                                    Some(x) if x.is_finite() && x >= 0.0 => {
                                        weights.push((name.clone(), x))
                                    }
                                    _ => {
                                        self.error(
                                            doc,
                                            &agg_at.key("weights").key(name),
                                            format!(
                                                "a weight must be a number ≥ 0, got {}",
                                                show(value)
                                            ),
                                        );
                                    }
                                }
                            }
                        }
                        Some(other) => {
                            self.error(
                                doc,
                                &agg_at.key("weights"),
                                format!(
                                    "`weights` must map member names to numbers, got {}",
                                    kind(other)
                                ),
                            );
                        }
                    }
                    Aggregate::WeightedAverage { weights }
                }
                Some("threshold") => {
                    for key in aggregator
                        .keys()
                        .filter(|k| !matches!(k.as_str(), "type" | "threshold"))
                    {
                        self.error(doc, &agg_at.key(key), format!("`{key}` is not a key of a threshold aggregator (its keys: type, threshold)"));
                    }
                    match aggregator.get("threshold").and_then(Value::as_f64) {
                        Some(t) if (0.0..=1.0).contains(&t) => Aggregate::Threshold(t),
                        _ => {
                            self.error(doc, &agg_at.key("threshold"), "a threshold aggregator needs `threshold`, a number between 0 and 1");
                            return None;
                        }
                    }
                }
                Some(
                    t @ ("code-grader" | "code_grader" | "llm-grader" | "llm_grader" | "code-judge"
                    | "llm-judge"),
                ) => {
                    self.error(doc, &agg_at.key("type"), format!("the `{t}` aggregator is not supported by evalhost yet; use weighted_average or threshold"));
                    return None;
                }
                other => {
                    self.error(
                        doc,
                        &agg_at.key("type"),
                        format!(
                            "aggregator `type` must be weighted_average or threshold, got {}",
                            other.map_or("nothing".to_owned(), |t| format!("`{t}`"))
                        ),
                    );
                    return None;
                }
            }
        } else {
            let threshold = match entry.get("threshold") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_f64() {
                    Some(t) if (0.0..=1.0).contains(&t) => Some(t),
                    _ => {
                        self.error(
                            doc,
                            &at.key("threshold"),
                            format!(
                                "`threshold` must be a number between 0 and 1, got {}",
                                show(v)
                            ),
                        );
                        return None;
                    }
                },
            };
            Aggregate::AssertSet { threshold }
        };
        Some(Group { members, aggregate })
    }

    fn assertion(
        &mut self,
        doc: &Arc<Doc>,
        entry: &Map<String, Value>,
        at: &KeyPath,
        from_suite: bool,
        owner: &str,
    ) -> Option<Assertion> {
        let raw_type = match entry.get("type") {
            Some(Value::String(t)) if !t.trim().is_empty() => t.trim().to_owned(),
            Some(other) => {
                self.error(
                    doc,
                    &at.key("type"),
                    format!("assertion `type` must be a string, got {}", kind(other)),
                );
                return None;
            }
            None => {
                self.error(doc, at, format!("an assertion of {owner} has no `type`"))
                    .hint = Some("add `type:` (contains, regex, equals, is-json, ...)".into());
                return None;
            }
        };
        let normalized = raw_type.replace('_', "-");
        if matches!(normalized.as_str(), "code-judge" | "llm-judge") {
            let new = normalized.replace("judge", "grader");
            self.error(
                doc,
                &at.key("type"),
                format!("`{raw_type}` is a removed alias; use `{new}`"),
            );
            return None;
        }
        let (kind_name, prefixed) = match normalized.strip_prefix("not-") {
            Some(rest) => (rest.to_owned(), true),
            None => (normalized.clone(), false),
        };
        let kind_name = if kind_name == "rubric" {
            self.warning(
                doc,
                &at.key("type"),
                "`type: rubric` is deprecated; use `type: rubrics` with `criteria`",
            );
            "rubrics".to_owned()
        } else {
            kind_name
        };
        let negate = match entry.get("negate") {
            None | Some(Value::Null) => prefixed,
            Some(Value::Bool(b)) => {
                if *b && prefixed {
                    self.error(
                        doc,
                        &at.key("negate"),
                        format!("`{raw_type}` is already negated by its `not-` prefix; `negate: true` would negate it twice"),
                    )
                    .hint = Some(format!("use `type: {kind_name}` with `negate: true`, or `type: {raw_type}` alone"));
                }
                *b != prefixed
            }
            Some(other) => {
                self.error(
                    doc,
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
                    doc,
                    &at.key("weight"),
                    format!("`weight` must be a number ≥ 0, got {}", show(other)),
                );
                1.0
            }
        };
        let required = match entry.get("required") {
            None | Some(Value::Null | Value::Bool(false)) => Required::No,
            Some(Value::Bool(true)) => Required::Yes,
            Some(Value::Number(n)) if n.as_f64().is_some_and(|r| r > 0.0 && r <= 1.0) => {
                self.warning(
                    doc,
                    &at.key("required"),
                    "`required: <number>` is deprecated; use `required: true` with `min_score`",
                );
                Required::AtLeast(n.as_f64().expect("checked"))
            }
            Some(other) => {
                self.error(
                    doc,
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
            .and_then(|v| self.unit_number(doc, v, &at.key("min_score")));
        if matches!(kind_name.as_str(), "composite" | "assert-set") {
            let group = self.group(doc, entry, at, &kind_name, from_suite, owner)?;
            let name = match entry.get("name") {
                Some(Value::String(n)) if !n.trim().is_empty() => n.clone(),
                _ => kind_name.clone(),
            };
            return Some(Assertion {
                name: self.intern(&name),
                kind: self.intern(&kind_name),
                negate,
                weight,
                required,
                min_score,
                limits: LimitOverrides::default(),
                config: Arc::new(Map::new()),
                config_json: Arc::from("{}"),
                loc: doc.loc(at),
                key_positions: Vec::new(),
                wasm: None,
                from_suite,
                group: Some(Box::new(group)),
            });
        }
        let limits = entry
            .get("limits")
            .map(|v| self.limits(doc, v, &at.key("limits")))
            .unwrap_or_default();
        let mut config: Map<String, Value> = entry
            .iter()
            .filter(|(k, _)| !host_assertion_keys().any(|h| h == k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if matches!(kind_name.as_str(), "llm-grader" | "rubrics")
            && let Some(Value::String(prompt)) = config.get("prompt").cloned()
            && let Some(path) = prompt.strip_prefix("file://")
        {
            match self.roots.find(path, Some(&self.roots.eval_dir.clone())) {
                Ok(file) => {
                    let display = self.display(&file);
                    if let Some(text) = self.read_text(
                        &file,
                        &display,
                        Some((doc, &at.key("prompt"))),
                        MAX_FILE_BYTES,
                    ) {
                        if !text.contains("{{output}}")
                            && !text.contains("{{ output }}")
                            && !text.contains("{{expected_output}}")
                            && !text.contains("{{ expected_output }}")
                        {
                            self.error(doc, &at.key("prompt"), format!("prompt file {} uses neither {{{{output}}}} nor {{{{expected_output}}}}", display.display()))
                                .hint = Some("a judge prompt must show the judge the answer: add {{output}}".into());
                        }
                        config.insert("prompt".into(), Value::String(text));
                        config.insert(
                            "prompt_file".into(),
                            Value::String(display.display().to_string()),
                        );
                    }
                }
                Err(err) => self.path_error(doc, &at.key("prompt"), path, &err),
            }
        }
        let wasm = match entry.get("wasm").cloned() {
            None | Some(Value::Null) => None,
            Some(Value::String(path)) => {
                let sha = match entry.get("wasm_sha256").cloned() {
                    Some(Value::String(s))
                        if s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit()) =>
                    {
                        Some(s.to_ascii_lowercase())
                    }
                    Some(_) => {
                        self.error(
                            doc,
                            &at.key("wasm_sha256"),
                            "`wasm_sha256` must be 64 hexadecimal digits",
                        );
                        None
                    }
                    None => None,
                };
                Some((doc.dir.join(path), sha))
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("wasm"),
                    format!(
                        "`wasm` must be the path of a .wasm grader, got {}",
                        kind(&other)
                    ),
                );
                None
            }
        };
        if let Some(script) = config.remove("script") {
            if config.contains_key("command") {
                self.warning(
                    doc,
                    &at.key("script"),
                    "both `command` and `script` are given; `script` is ignored",
                );
            } else {
                self.warning(
                    doc,
                    &at.key("script"),
                    "`script` is deprecated; use `command`",
                );
                config.insert("command".into(), script);
            }
        }
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
                    doc,
                    &at.key("name"),
                    format!("assertion `name` must be a string, got {}", kind(other)),
                );
                kind_name.clone()
            }
        };
        let key_positions = key_positions(doc, at, &config);
        let (config, config_json) = self.intern_config(config);
        Some(Assertion {
            name: self.intern(&name),
            kind: self.intern(&kind_name),
            negate,
            weight,
            required,
            min_score,
            limits,
            config,
            config_json,
            loc: doc.loc(at),
            wasm: wasm.map(Box::new),
            key_positions,
            from_suite,
            group: None,
        })
    }

    fn plugins(&mut self, doc: &Arc<Doc>, value: &Value, at: &KeyPath) -> Vec<PluginRef> {
        let mut out = Vec::new();
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(r) = self.plugin_entry(doc, item, &at.index(i), None) {
                        out.push(r);
                    }
                }
            }
            Value::Object(map) => {
                for (name, item) in map {
                    let type_name = name.replace('_', "-");
                    let valid = type_name.starts_with(|c: char| c.is_ascii_lowercase())
                        && type_name
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
                    if !valid {
                        self.error(
                            doc,
                            &at.key(name),
                            format!(
                                "`{name}` is not an assertion type name: use lowercase letters, digits, `-` or `_`"
                            ),
                        );
                        continue;
                    }
                    if let Some(r) = self.plugin_entry(doc, item, &at.key(name), Some(type_name)) {
                        out.push(r);
                    }
                }
            }
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "`plugins` must map assertion types to plugins ({{TYPE: {{path, sha256}}}}) or list plugins ([{{path, sha256}}]), got {}",
                        kind(other)
                    ),
                );
            }
        }
        out
    }

    /// One plugin entry: a path, or `{path, sha256}`.
    fn plugin_entry(
        &mut self,
        doc: &Arc<Doc>,
        item: &Value,
        item_path: &KeyPath,
        type_name: Option<String>,
    ) -> Option<PluginRef> {
        let (path, sha) = match item {
            Value::String(p) => (Some(p.clone()), None),
            Value::Object(o) => {
                self.check_keys(doc, o, fields::PLUGIN, item_path, "a plugin entry");
                let path = o
                    .get("path")
                    .and_then(|v| self.string(doc, v, &item_path.key("path")));
                let sha = o
                    .get("sha256")
                    .and_then(|v| self.string(doc, v, &item_path.key("sha256")));
                (path, sha)
            }
            other => {
                self.error(
                    doc,
                    item_path,
                    format!(
                        "a plugin entry must be a path or a mapping, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        let Some(path) = path else {
            self.error(doc, item_path, "the plugin entry has no `path`");
            return None;
        };
        if let Some(sha) = &sha
            && (sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()))
        {
            self.error(
                doc,
                &item_path.key("sha256"),
                "`sha256` must be 64 hexadecimal digits",
            );
        }
        Some(PluginRef {
            path: doc.dir.join(path),
            sha256: sha.map(|s| s.to_ascii_lowercase()),
            type_name,
            loc: doc.loc(item_path),
        })
    }

    fn limits(&mut self, doc: &Doc, value: &Value, at: &KeyPath) -> LimitOverrides {
        let Value::Object(o) = value else {
            self.error(
                doc,
                at,
                format!(
                    "`limits` must be a mapping with `timeout_ms` and/or `memory_mb`, got {}",
                    kind(value)
                ),
            );
            return LimitOverrides::default();
        };
        self.check_keys(doc, o, fields::LIMITS, at, "`limits`");
        let mut positive = |key: &str| match o.get(key) {
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
        };
        LimitOverrides {
            timeout_ms: positive("timeout_ms"),
            memory_mb: positive("memory_mb"),
        }
    }

    // ----- small typed readers -------------------------------------------

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

    // ----- messages ------------------------------------------------------

    fn messages(
        &mut self,
        doc: &Doc,
        value: &Value,
        at: &KeyPath,
        default_role: &str,
    ) -> Vec<Message> {
        match value {
            Value::String(s) => vec![Message::text(default_role, s.clone())],
            Value::Object(o) if o.contains_key("role") => {
                self.message(doc, o, at).into_iter().collect()
            }
            Value::Object(_) => vec![Message {
                role: default_role.into(),
                content: pretty(value),
                content_json: Some(value.clone()),
            }],
            // No message at all: AgentV's "input is invalid" (the test would
            // be skipped as incomplete); the caller says it is empty.
            Value::Array(items) if items.is_empty() => Vec::new(),
            Value::Array(items) if items.first().is_some_and(|f| f.get("role").is_some()) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| match item {
                    Value::Object(o) => self.message(doc, o, &at.index(i)),
                    other => {
                        self.error(
                            doc,
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
            Value::Array(_) => {
                let content = self.resolve_blocks(doc, value, at);
                vec![Message {
                    role: default_role.into(),
                    content: content_text(&content),
                    content_json: Some(content),
                }]
            }
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "expected a string, a message or a list of messages, got {}",
                        show(other)
                    ),
                )
                .hint = Some("quote it to make it a string".into());
                Vec::new()
            }
        }
    }

    fn message(&mut self, doc: &Doc, o: &Map<String, Value>, at: &KeyPath) -> Option<Message> {
        self.check_keys(doc, o, fields::MESSAGE, at, "a message");
        let role = match o.get("role") {
            Some(Value::String(r))
                if ["system", "user", "assistant", "tool"].contains(&r.as_str()) =>
            {
                r.clone()
            }
            other => {
                self.error(
                    doc,
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
                self.error(doc, at, "the message has no `content`");
                return None;
            }
            Value::Array(_) => {
                let content = self.resolve_blocks(doc, &content, &at.key("content"));
                Message {
                    role,
                    content: content_text(&content),
                    content_json: Some(content),
                }
            }
            other => Message {
                role,
                content: content_text(&other),
                content_json: Some(other),
            },
        })
    }

    /// Resolves `type: file` and `type: image` blocks through the search
    /// roots: found files get `path`, `resolved_path` and (for files) `text`.
    fn resolve_blocks(&mut self, doc: &Doc, content: &Value, at: &KeyPath) -> Value {
        let Value::Array(blocks) = content else {
            return content.clone();
        };
        let mut out = Vec::new();
        for (i, block) in blocks.iter().enumerate() {
            let block_at = at.index(i);
            match block {
                Value::String(s) if s.is_empty() => {}
                Value::String(s) => out.push(serde_json::json!({"type": "text", "value": s})),
                Value::Object(o) => {
                    let kind_name = o.get("type").and_then(Value::as_str).unwrap_or("");
                    if !matches!(kind_name, "file" | "image") {
                        out.push(block.clone());
                        continue;
                    }
                    let Some(Value::String(value)) = o.get("value") else {
                        self.error(
                            doc,
                            &block_at,
                            format!("a `{kind_name}` block needs a `value` (the path)"),
                        );
                        continue;
                    };
                    let path = match self.roots.find(value, Some(&self.roots.eval_dir.clone())) {
                        Ok(p) => p,
                        Err(err) => {
                            self.path_error(doc, &block_at.key("value"), value, &err);
                            continue;
                        }
                    };
                    let mut resolved = o.clone();
                    let display = value.trim_start_matches(['/', '\\']).to_owned();
                    resolved.insert("path".into(), Value::String(display));
                    resolved.insert(
                        "resolved_path".into(),
                        Value::String(path.display().to_string()),
                    );
                    if kind_name == "image" {
                        let ext = path
                            .extension()
                            .and_then(|e| e.to_str())
                            .unwrap_or("")
                            .to_ascii_lowercase();
                        let Some(mime) = image_mime(&ext) else {
                            self.error(doc, &block_at.key("value"), format!("`{value}` is not an image evalhost can send (.png .jpg .jpeg .gif .webp .svg .bmp)"));
                            continue;
                        };
                        resolved.insert("media_type".into(), Value::String(mime.into()));
                    } else {
                        let display = self.display(&path);
                        match self.read_text(
                            &path,
                            &display,
                            Some((doc, &block_at.key("value"))),
                            MAX_INPUT_FILE_BYTES,
                        ) {
                            Some(text) => {
                                resolved.insert(
                                    "text".into(),
                                    Value::String(text.replace("\r\n", "\n")),
                                );
                            }
                            None => continue,
                        }
                    }
                    out.push(Value::Object(resolved));
                }
                other => out.push(other.clone()),
            }
        }
        Value::Array(out)
    }
}

/// The line and column just after `before`, the text preceding a place.
fn position(before: &str) -> Pos {
    Pos {
        line: before.matches('\n').count() + 1,
        col: before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
    }
}

/// The first `(key, list, in_execution)` present among the top-level keys,
/// then among `execution`'s (legacy location).
fn first_present<'a>(
    top: &[(&'a Map<String, Value>, &'static str)],
    execution: Option<[(&'a Map<String, Value>, &'static str); 3]>,
) -> Option<(&'static str, &'a Value, bool)> {
    for (map, key) in top {
        if let Some(v) = map.get(*key) {
            return Some((key, v, false));
        }
    }
    for (map, key) in execution.into_iter().flatten() {
        if let Some(v) = map.get(key) {
            return Some((key, v, true));
        }
    }
    None
}

fn rubric_assertion(
    config: Map<String, Value>,
    weight: f64,
    loc: Loc,
    from_suite: bool,
) -> Assertion {
    let config_json: Arc<str> = Value::Object(config.clone()).to_string().into();
    Assertion {
        name: "rubrics".into(),
        kind: "rubrics".into(),
        negate: false,
        weight,
        required: Required::No,
        min_score: None,
        limits: LimitOverrides::default(),
        config: Arc::new(config),
        config_json,
        loc,
        key_positions: Vec::new(),
        group: None,
        wasm: None,
        from_suite,
    }
}

fn image_mime(ext: &str) -> Option<&'static str> {
    Some(match ext {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        _ => return None,
    })
}

/// AgentV's metadata merge (§2.8): the test's keys win for scalars; nested
/// mappings merge recursively; lists concatenate suite-first without
/// duplicates; missing keys come from the suite.
pub fn merge_metadata(test: &mut Map<String, Value>, suite: &Map<String, Value>) {
    for (key, suite_value) in suite {
        match (test.get_mut(key), suite_value) {
            (None, v) => {
                test.insert(key.clone(), v.clone());
            }
            (Some(Value::Object(t)), Value::Object(s)) => merge_metadata(t, s),
            (Some(Value::Array(t)), Value::Array(s)) => {
                let mut merged: Vec<Value> = Vec::new();
                for v in s.iter().chain(t.iter()) {
                    if !merged.contains(v) {
                        merged.push(v.clone());
                    }
                }
                *t = merged;
            }
            (Some(_), _) => {}
        }
    }
}

/// `{{ var }}` substitution (§1.8): a string that is exactly one placeholder
/// becomes the variable's value (any JSON type); inside a larger string,
/// non-strings are JSON-encoded; missing variables are left as written;
/// dotted names walk into mappings.
pub fn substitute_vars(value: &Value, vars: &Map<String, Value>) -> Value {
    match value {
        Value::String(s) if s.contains("{{") => {
            let spans = var_spans(s);
            if let [(0, end, name)] = spans.as_slice()
                && *end == s.len()
            {
                return lookup_var(vars, name)
                    .cloned()
                    .unwrap_or_else(|| value.clone());
            }
            let mut out = String::with_capacity(s.len());
            let mut last = 0;
            for (start, end, name) in &spans {
                out.push_str(&s[last..*start]);
                match lookup_var(vars, name) {
                    Some(Value::String(v)) => out.push_str(v),
                    Some(other) => out.push_str(&other.to_string()),
                    None => out.push_str(&s[*start..*end]),
                }
                last = *end;
            }
            out.push_str(&s[last..]);
            Value::String(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute_vars(v, vars)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute_vars(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn var_spans(text: &str) -> Vec<(usize, usize, String)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find("{{") {
        let start = from + rel;
        // `${{` is environment syntax, already handled.
        if start > 0 && text.as_bytes()[start - 1] == b'$' {
            from = start + 2;
            continue;
        }
        let Some(close) = text[start + 2..].find("}}") else {
            break;
        };
        let name = text[start + 2..start + 2 + close].trim();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        let end = start + 2 + close + 2;
        if valid {
            spans.push((start, end, name.to_owned()));
        }
        from = end;
    }
    spans
}

fn lookup_var<'a>(vars: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    let mut parts = name.split('.');
    let mut current = vars.get(parts.next()?)?;
    for part in parts {
        current = current.get(part)?;
    }
    Some(current)
}

/// AgentV's suite name: the file name without `.eval.yaml`/`.yaml`.
fn suite_name_from_file(file: &Path) -> String {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_lowercase();
    for suffix in [".eval.yaml", ".eval.yml", ".yaml", ".yml", ".jsonl"] {
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
                        let shown = o.get("path").and_then(Value::as_str).unwrap_or(p);
                        format!("<file: path=\"{shown}\">")
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

/// Positions of every key path of an assertion's config (depth-first, at
/// most [`MAX_KEY_POSITIONS`](super::model::MAX_KEY_POSITIONS)), relative to
/// the assertion.
fn key_positions(doc: &Doc, at: &KeyPath, config: &Map<String, Value>) -> Vec<(String, Pos)> {
    fn walk(doc: &Doc, path: &KeyPath, rel: &str, value: &Value, out: &mut Vec<(String, Pos)>) {
        if out.len() >= super::model::MAX_KEY_POSITIONS {
            return;
        }
        if let Some(pos) = doc.map.exact(path) {
            out.push((rel.to_owned(), pos));
        }
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    walk(doc, &path.key(k), &format!("{rel}.{k}"), v, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(doc, &path.index(i), &format!("{rel}[{i}]"), v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (k, v) in config {
        walk(doc, &at.key(k), k, v, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load_str(text: &str) -> (Option<Suite>, Diagnostics) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("EVAL.yaml");
        std::fs::write(&path, text).unwrap();
        let roots = Roots::for_eval(&path);
        let (suite, diags) = load_with(Path::new(&path), roots, Env::default(), false);
        // Show diagnostics relative to the file name only.
        let diags = Diagnostics(
            diags
                .0
                .into_iter()
                .map(|mut d| {
                    d.file = PathBuf::from(d.file.file_name().unwrap());
                    d
                })
                .collect(),
        );
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
            .map(|a| (a.kind.as_ref(), a.negate))
            .collect();
        assert_eq!(kinds, [("contains", false), ("is-json", false)]);
        let b = &suite.tests[1].assertions;
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].kind.as_ref(), b[0].negate, b[0].name.as_ref()),
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
        assert_eq!(&*a[0].name, "regex-012345678901234567890123456789");
        assert_eq!(a[0].weight, 2.0);
        assert_eq!((a[1].kind.as_ref(), a[1].weight), ("rubrics", 2.0));
        assert_eq!(&*a[2].name, "contains-any-2");
    }

    #[test]
    fn mistakes_are_all_reported_with_lines() {
        let (_, diags) = load_str(
            "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: contains\n        weight: -1\n  - id: a\n    input: hi\n    asertions: []\n  - input: x\n",
        );
        let all = diags
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            all.contains("EVAL.yaml:6:9: error: `weight` must be a number ≥ 0, got number -1"),
            "{all}"
        );
        assert!(all.contains("duplicate test id `a`: also used at"), "{all}");
        assert!(all.contains("warning: unknown key `asertions`"), "{all}");
        assert!(all.contains("did you mean `assertions`?"), "{all}");
        assert!(all.contains("the test case has no `id`"), "{all}");
    }

    #[test]
    fn double_negation_is_an_error() {
        let (_, diags) = load_str(
            "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: not-contains\n        negate: true\n        value: x\n",
        );
        assert!(
            diags.iter().any(|d| d.message.contains("negate it twice")),
            "{diags:?}"
        );
    }

    #[test]
    fn merge_keys_apply() {
        let (suite, diags) = load_str(
            "x-defaults: &d\n  input: shared\n  assertions: [{type: is-json}]\ntests:\n  - <<: *d\n    id: one\n",
        );
        assert!(!diags.has_errors(), "{diags:?}");
        assert_eq!(suite.unwrap().tests[0].input[0].content, "shared");
    }

    #[test]
    fn suite_names_come_from_the_file() {
        assert_eq!(suite_name_from_file(Path::new("a/EVAL.yaml")), "EVAL");
        assert_eq!(suite_name_from_file(Path::new("foo.eval.yaml")), "foo");
    }

    #[test]
    fn vars_substitute_whole_values_and_leave_missing_ones() {
        let vars = json!({"q": "capital", "n": {"k": 1}, "deep": {"a": {"b": "x"}}});
        let vars = vars.as_object().unwrap();
        assert_eq!(
            substitute_vars(&json!("What is the {{ q }}?"), vars),
            json!("What is the capital?")
        );
        assert_eq!(substitute_vars(&json!("{{n}}"), vars), json!({"k": 1}));
        assert_eq!(
            substitute_vars(&json!("n={{ n }}"), vars),
            json!("n={\"k\":1}")
        );
        assert_eq!(substitute_vars(&json!("{{ deep.a.b }}"), vars), json!("x"));
        assert_eq!(
            substitute_vars(&json!("{{ missing }} ${{ ENV }}"), vars),
            json!("{{ missing }} ${{ ENV }}")
        );
    }

    #[test]
    fn a_discovered_case_gets_its_workspace_directory_unless_it_sets_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("EVAL.yaml"),
            "assertions: [{type: is-json}]\ntests: ./cases/\n",
        )
        .unwrap();
        for (name, case) in [
            ("with-dir", "input: q\n"),
            ("explicit", "input: q\nworkspace: {template: ./elsewhere}\n"),
        ] {
            std::fs::create_dir_all(root.join("cases").join(name).join("workspace")).unwrap();
            std::fs::write(root.join("cases").join(name).join("case.yaml"), case).unwrap();
        }
        std::fs::create_dir_all(root.join("cases/plain")).unwrap();
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        std::fs::write(root.join("cases/plain/case.yaml"), "input: q\n").unwrap();
        let eval = root.join("EVAL.yaml");
        let (suite, diags) = load_with(&eval, Roots::for_eval(&eval), Env::default(), false);
        assert!(!diags.has_errors(), "{diags:?}");
        let suite = suite.unwrap();
        let ids: Vec<&str> = suite.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["explicit", "plain", "with-dir"]);
        let template = |i: usize| {
            suite.tests[i]
                .workspace
                .as_ref()
                .and_then(|w| w.template.clone())
        };
        assert!(
            template(0).is_some_and(|t| t.ends_with("elsewhere")),
            "{:?}",
            template(0)
        );
        assert_eq!(suite.tests[1].workspace, None);
        let template = template(2).unwrap().display().to_string();
        assert!(template.ends_with("cases/with-dir/workspace"), "{template}");
    }

    #[test]
    fn metadata_merges_as_agentv_does() {
        let mut test = json!({"tags": ["b", "c"], "level": "hard", "nested": {"x": 1}})
            .as_object()
            .unwrap()
            .clone();
        let suite =
            json!({"tags": ["a", "b"], "level": "easy", "nested": {"y": 2}, "team": "core"});
        merge_metadata(&mut test, suite.as_object().unwrap());
        assert_eq!(
            Value::Object(test),
            json!({"tags": ["a", "b", "c"], "level": "hard", "nested": {"x": 1, "y": 2}, "team": "core"})
        );
    }
}
