//! `providers`: each provider id and its `config` as a targets-file entry
//! (echo, OpenAI-compatible, `exec:`, script files, `http`), its
//! `prompts:` list, and `{{ env.X }}` rendered as promptfoo renders it when
//! a provider loads.

use super::*;

impl Reader {
    /// `providers` (or `targets`): the matrix and the targets the suite
    /// defines.
    pub(super) fn providers(
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
        // promptfoo runs a provider listed twice alike (the same JSON) once
        // (`combineConfigs`' `providerDedupeKey`).
        let mut seen = std::collections::HashSet::new();
        let mut items = items;
        items.retain(|(item, iat)| {
            let first = seen.insert(item.to_string());
            if !first {
                self.warning(iat, "this provider is listed twice, written the same; promptfoo runs it once, and so does evalhost");
            }
            first
        });
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
            // The row's provider: the label, else the id promptfoo's
            // provider reports — the path as written in an object (it is
            // the provider's `id` option), the provider's own for a bare
            // string (Anthropic's is `anthropic:<model>`, whichever API
            // path named it).
            let name = label.clone().unwrap_or_else(|| {
                let short = id
                    .strip_prefix("anthropic:messages:")
                    .map(|m| ("anthropic", m))
                    .or_else(|| id.strip_prefix("openai:chat:").map(|m| ("openai", m)))
                    .or_else(|| id.strip_prefix("azure:chat:").map(|m| ("azure", m)))
                    .or_else(|| {
                        id.strip_prefix("ollama:")
                            .filter(|m| !m.starts_with("chat:") && !m.starts_with("completion:"))
                            .map(|m| ("ollama:completion", m))
                    })
                    .or_else(|| id.strip_prefix("vertex:chat:").map(|m| ("vertex", m)));
                match (&item, short) {
                    (Value::String(_), Some((api, model))) => format!("{api}:{model}"),
                    _ => id.clone(),
                }
            });
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
                    // Read by promptfoo, not (yet) by evalhost: refused.
                    other @ ("transform" | "env" | "inputs") => {
                        self.error(
                            &oat.key(other),
                            format!(
                                "`{other}` of a provider is not read by this version of evalhost"
                            ),
                        )
                        .hint =
                            Some("a provider takes `id`, `label`, `config` and `prompts`".into());
                    }
                    // promptfoo's provider schema drops any other key
                    // (`provider: openai` beside `id`): so does evalhost,
                    // said.
                    other => {
                        self.warning(
                            &oat.key(other),
                            format!(
                                "`{other}` of a provider is not read by promptfoo (a provider takes `id`, `label`, `config`, `prompts`, `transform`, `delay`, `env`, `inputs`), nor by evalhost"
                            ),
                        );
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
                id: id.clone(),
                config: config.clone(),
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
                unset_env: Vec::new(),
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

    /// The targets-file entry of each provider whose config `overlay`
    /// (a prompt's `config` and a test's `options`, promptfoo merges them
    /// into the provider's config for those calls) changes, by target name
    /// — made as the provider's own is, so a setting evalhost does not send
    /// is refused at the option's line as it would be in `config`. A
    /// provider that takes no such settings (`echo`, commands, scripts,
    /// `http`) gets a warning that they are not sent. Made once per
    /// distinct overlay.
    pub(super) fn target_params(
        &mut self,
        overlay: &Map<String, Value>,
        at: &KeyPath,
        renderer: &Renderer,
        made: &mut std::collections::HashMap<String, Option<Arc<Map<String, Value>>>>,
    ) -> Option<Arc<Map<String, Value>>> {
        let key = Value::Object(overlay.clone()).to_string();
        if let Some(done) = made.get(&key) {
            return done.clone();
        }
        let mut out = Map::new();
        for info in self.provider_infos.clone() {
            match info.kind {
                "openai" | "openai-responses" | "anthropic" | "azure" | "openrouter" | "ollama"
                | "google" => {
                    let mut config = info.config.clone();
                    config.extend(overlay.clone());
                    if let Some(mut entry) = self.provider_entry(&info.id, &config, at, renderer) {
                        entry.insert("name".into(), Value::String(info.name.clone()));
                        out.insert(info.name.clone(), Value::Object(entry));
                    }
                }
                other => {
                    let keys: Vec<&str> = overlay.keys().map(String::as_str).collect();
                    self.warn_once(
                        at,
                        format!(
                            "`{}` goes into each provider's config for this test's calls, as promptfoo merges it; provider `{}` ({other}) takes no such settings, so evalhost sends none",
                            keys.join("`, `"),
                            info.name
                        ),
                    );
                }
            }
        }
        // Shared by every test with the same options.
        let made_now = (!out.is_empty()).then(|| Arc::new(out));
        made.insert(key, made_now.clone());
        made_now
    }

    /// A provider id as a targets-file entry.
    pub(super) fn provider_entry(
        &mut self,
        id: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        // promptfoo renders `{{ env.X }}` in a provider's config when it
        // loads the provider (`renderEnvOnlyInObject`); a variable that is
        // not set leaves the template text as written, and promptfoo sends
        // that: so does evalhost, warned (it is what the user's config
        // says, and refusing would make rows promptfoo errors into no run).
        let Value::Object(rendered) = fill_env_refs(&Value::Object(config.clone()), renderer)
        else {
            unreachable!("an object stays an object");
        };
        for (key, value) in &rendered {
            let unset = unset_env_refs(value);
            if let Some(name) = unset.first() {
                self.warning(
                    &at.key("config").key(key),
                    format!("`config.{key}` names `{{{{ env.{name} }}}}`, and `{name}` is not set; promptfoo sends the template text as written, and so does evalhost"),
                )
                .hint = Some(if self.options.untrusted {
                    "under --sandbox strict a config sees only its own `env:`; give the value in a targets file you trust".into()
                } else {
                    format!("set {name} in the environment (or in the config's `env:`)")
                });
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
            return self.openai_provider(id, model, (written, config), at, renderer);
        }
        if let Some(rest) = id.strip_prefix("anthropic:") {
            return self.anthropic_provider(id, rest, (written, config), at, renderer);
        }
        if let Some(rest) = id
            .strip_prefix("azure:")
            .or_else(|| id.strip_prefix("azureopenai:"))
        {
            return match rest.split_once(':') {
                Some(("chat", deployment)) => {
                    self.azure_provider(id, deployment, config, at, renderer)
                }
                _ => {
                    self.error(
                        at,
                        format!("the provider `{id}` is not run by this version of evalhost"),
                    )
                    .hint = Some(
                        "of promptfoo's Azure providers evalhost runs `azure:chat:<deployment>`"
                            .into(),
                    );
                    None
                }
            };
        }
        if let Some(model) = id.strip_prefix("openrouter:") {
            return self.openrouter_provider(id, model, (written, config), at, renderer);
        }
        if id.starts_with("ollama:") {
            return self.ollama_provider(id, config, at, renderer);
        }
        if id.starts_with("google:") || id.starts_with("vertex:") {
            return self.google_provider(id, config, at, renderer);
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
            .hint = Some("supported so far: echo, openai:<model>, openai:chat:<model> (any OpenAI-compatible endpoint with config.apiBaseUrl), anthropic:messages:<model>, anthropic:<model>, azure:chat:<deployment>, openrouter:<model>, ollama:[chat:|completion:]<model>, google:<model>, vertex:<model> (with an API key), exec:<command>, http(s), file://provider.py|.js".into());
        None
    }

    /// promptfoo's `http` provider (`id: https://…`, or `http` with
    /// `config.url`): method, headers, a templated body, and a
    /// `transformResponse` that is a property path.
    pub(super) fn http_provider(
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

    /// The provider options promptfoo hands a script: its id and config,
    /// with `basePath` the config's directory.
    pub(super) fn provider_options(&self, id: &str, config: &Map<String, Value>) -> String {
        let mut c = config.clone();
        c.insert(
            "basePath".into(),
            Value::String(self.abs_dir().display().to_string()),
        );
        json!({"id": id, "config": c}).to_string()
    }

    pub(super) fn abs_dir(&self) -> PathBuf {
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
    pub(super) fn exec_provider(
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
    pub(super) fn script_provider(
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
}

/// The kind of provider an id names, for the tool-call types.
pub(super) fn provider_kind(id: &str) -> &'static str {
    if id == "echo" {
        "echo"
    } else if id.starts_with("openai:responses:") {
        "openai-responses"
    } else if id.starts_with("openai:") {
        "openai"
    } else if id.starts_with("anthropic:") {
        "anthropic"
    } else if id.starts_with("azure:") || id.starts_with("azureopenai:") {
        "azure"
    } else if id.starts_with("openrouter:") {
        "openrouter"
    } else if id.starts_with("ollama:") {
        "ollama"
    } else if id.starts_with("google:") || id.starts_with("vertex:") {
        "google"
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

/// Single-quotes `s` for `sh`.
pub(super) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// promptfoo's `parseScriptParts`: words split on whitespace, `"…"` and
/// `'…'` kept whole (without their quotes).
pub(super) fn script_parts(script: &str) -> Vec<String> {
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
pub(super) const PY_PROVIDER_RUNNER: &str = r#"import importlib.util, json, os, sys
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
pub(super) const JS_PROVIDER_RUNNER: &str = r#"const [file, fn, prompt, options, context] = process.argv.slice(1);
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

/// Only the `{{ env.NAME }}` references in the strings of `v` filled.
pub(super) fn fill_env_refs(v: &Value, renderer: &Renderer) -> Value {
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
pub(super) fn render_env_only(s: &str, renderer: &Renderer) -> String {
    let mut out = String::new();
    let mut from = 0;
    for (start, end) in tags(s) {
        let whole = &s[start..end];
        out.push_str(&s[from..start]);
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
        from = end;
    }
    out.push_str(&s[from..]);
    out
}

/// The byte ranges of the `{{ … }}` tags of `s`, each up to the first `}}`
/// after its `{{` (promptfoo's `/\{\{(?:[^}]|\}(?!\}))*\}\}/g`).
fn tags(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(start) = s[at..].find("{{").map(|i| i + at) {
        let Some(end) = s[start + 2..].find("}}").map(|l| start + 2 + l + 2) else {
            break;
        };
        out.push((start, end));
        at = end;
    }
    out
}

/// When `template` refers to the environment (`env.X`, `env['X']`): the
/// variable's name, when one is named.
pub(super) fn env_reference(template: &str) -> Option<Option<String>> {
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
pub(super) fn unset_env_refs(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match v {
        Value::String(s) => out.extend(
            tags(s)
                .into_iter()
                .filter_map(|(start, end)| env_reference(&s[start..end]).flatten()),
        ),
        Value::Array(a) => a.iter().for_each(|x| out.extend(unset_env_refs(x))),
        Value::Object(o) => o.values().for_each(|x| out.extend(unset_env_refs(x))),
        _ => {}
    }
    out
}
