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
    let text = match std::fs::read_to_string(path) {
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
                "scenarios" | "derived_metrics" | "nunjucks_filters" | "defaults" => {
                    self.error(
                        &top.key(key),
                        format!("`{key}` (AgentV 5) is not read by this version of evalhost"),
                    )
                    .hint = Some("it is part of the AgentV 5 dialect still being built".into());
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
        for key in ["name", "description", "tags", "metadata", "governance"] {
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
        let mut suite_assert = Vec::new();
        if let Some(Value::Object(d)) = root.get("default_test") {
            if let Some(Value::Object(v)) = d.get("vars") {
                default_vars = v.clone();
            }
            if let Some(Value::Array(a)) = d.get("assert") {
                for (i, item) in a.iter().enumerate() {
                    let a = self.assertion(item, &top.key("default_test").key("assert").index(i));
                    if !a.is_null() {
                        suite_assert.push(a);
                    }
                }
            }
            if let Some(t) = d.get("threshold") {
                execution.insert("threshold".into(), t.clone());
            }
            for key in d
                .keys()
                .filter(|k| !matches!(k.as_str(), "vars" | "assert" | "threshold"))
            {
                self.error(
                    &top.key("default_test").key(key),
                    format!("`default_test.{key}` is not read by this version of evalhost"),
                );
            }
        } else if let Some(Value::String(_)) = root.get("default_test") {
            self.error(
                &top.key("default_test"),
                "`default_test: file://…` is not read by this version of evalhost",
            );
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
        if !suite_assert.is_empty() {
            out.insert("assertions".into(), Value::Array(suite_assert));
        }
        if !execution.is_empty() {
            out.insert("execution".into(), Value::Object(execution));
        }
        let prompts = self.prompts(root.get("prompts"), &top.key("prompts"));
        out.insert(
            "tests".into(),
            self.tests(
                root.get("tests"),
                &top.key("tests"),
                &prompts,
                &default_vars,
            ),
        );
        out
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
        self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone())
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
        let Value::Object(env) = value else {
            self.error(
                at,
                "`environment: file://…` is not read by this version of evalhost; write it inline",
            );
            return None;
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
                        if let Some(t) = self.target(entry, &iat) {
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
        let dir = self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone());
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
                    self.error(&iat, "a prompt from a file is not read by this version of evalhost for AgentV 5 suites; write it inline");
                    continue;
                }
                Value::String(s) => (format!("prompt-{}", i + 1), Value::String(s)),
                Value::Array(messages) => (format!("chat-{}", i + 1), Value::Array(messages)),
                Value::Object(o) => {
                    let id = o
                        .get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("prompt-{}", i + 1), str::to_owned);
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
    ) -> Value {
        // Tests from files are expanded like inline ones.
        let inlined;
        let tests = match value {
            Some(Value::Array(items)) => {
                let mut all = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(spec) => all.extend(self.test_file(spec, &at.index(i))),
                        other => all.push(other.clone()),
                    }
                }
                inlined = all;
                &inlined
            }
            Some(Value::String(spec)) => {
                inlined = self.test_file(spec, at);
                &inlined
            }
            // Nothing: the AgentV 4 reader reports it.
            _ => return value.cloned().unwrap_or(Value::Null),
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
                            | "providers" | "prompts" | "input" => {}
                            "turns" => {
                                case.insert(key.clone(), self.turns(v, &tat.key("turns"), combo));
                            }
                            "id" | "description" | "criteria" => {
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
            "assert-set" => {
                if let Some(Value::Array(members)) = a.remove("assert") {
                    let list: Vec<Value> = members
                        .iter()
                        .enumerate()
                        .map(|(i, m)| self.assertion(m, &at.key("assert").index(i)))
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
            "agent-rubric"
            | "javascript"
            | "python"
            | "webhook"
            | "similar"
            | "trajectory:goal-success" => {
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
