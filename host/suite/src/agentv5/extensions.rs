//! `extensions`: `agentv:agent-rules` and hook modules (`file://x.mjs:beforeAll`),
//! staged and wired as AgentV 5's built-ins and hooks run.

use super::*;

impl Rewriter {
    /// `extensions`: lifecycle hooks, each a shell snippet for its slot
    /// (`before_all`, …). `file://hook.mjs:beforeAll` runs the module's
    /// function with AgentV 5's hook context (`node`, or `bun` for
    /// TypeScript, as AgentV imports it); `agentv:agent-rules` stages the
    /// configured skills, hooks, agents and rules into the workspace
    /// (`.agentv/agent-rules/<kind>/`) and prints the paths it found, as
    /// AgentV 5's built-in extension does.
    pub(super) fn extensions(
        &mut self,
        value: &Value,
        at: &KeyPath,
    ) -> Vec<(&'static str, String)> {
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
    pub(super) fn abs_dir(&self) -> PathBuf {
        let dir = if self.dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.dir
        };
        dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
    }

    pub(super) fn hook_slot(&mut self, hook: &str, at: &KeyPath) -> Option<&'static str> {
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
    pub(super) fn agent_rules(&mut self, config: &Map<String, Value>, at: &KeyPath) -> String {
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
    pub(super) fn attach_extensions(
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
}

/// Runs an AgentV 5 extension hook (`node -e WRAPPER file fn hook
/// eval_dir`, the hook context as JSON on stdin): imports the module, calls
/// the function with AgentV 5's context, prints its `output`.
pub(super) const EXTENSION_WRAPPER: &str = r#"const [file, fn, hook, evalDir] = process.argv.slice(1);
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

/// Single-quotes `s` for `sh`.
pub(super) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
