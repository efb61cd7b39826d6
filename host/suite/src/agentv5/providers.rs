//! `providers`: labels looked up in `.agentv/providers.yaml` (the catalog),
//! each entry a target the suite defines itself; the embedding model of
//! `similar`.

use super::*;

impl Rewriter {
    /// A judge named by its label: its catalog entry becomes a target
    /// (once), as the providers' do.
    pub(super) fn catalog_target(&mut self, label: &str, at: &KeyPath) {
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
    pub(super) fn providers(&mut self, value: Option<&Value>, at: &KeyPath) -> Vec<String> {
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
                            unset_env: Vec::new(),
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
    pub(super) fn catalog(&mut self) -> Vec<Map<String, Value>> {
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
            let Ok(text) = crate::roots::read_regular_text(&file, crate::limits::MAX_FILE_BYTES)
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
    pub(super) fn target(
        &mut self,
        entry: &Map<String, Value>,
        at: &KeyPath,
    ) -> Option<InlineTarget> {
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
        // `{{ env.NAME }}` whose variable is not set: AgentV resolves a
        // provider only when it calls it, so `validate` warns and a run
        // errs, naming the variable.
        let mut unset_env = Vec::new();
        let config = entry.get("config").and_then(Value::as_object);
        for (k, v) in config
            .into_iter()
            .flatten()
            .chain(entry.iter().filter(|(k, _)| k.as_str() != "config"))
        {
            if let Value::String(s) = v {
                for name in render::env_names(s) {
                    if self
                        .env
                        .get(&name)
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        unset_env.push((k.clone(), name));
                    }
                }
            }
        }
        Some(InlineTarget {
            entry: out,
            loc: self.loc(at),
            unset_env,
        })
    }

    /// The embedding target of a `similar` assertion, as AgentV 5 finds its
    /// endpoint: `config.embedding_provider`, else an object `provider`,
    /// else `config` itself, with `model` and `base_url` (or `endpoint`),
    /// and an optional `api_key`.
    pub(super) fn embedder(&mut self, a: &Map<String, Value>, at: &KeyPath) -> Option<String> {
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
            unset_env: Vec::new(),
        });
        Some(name)
    }
}

pub(super) fn entry_label(entry: &Map<String, Value>) -> Option<String> {
    entry
        .get("label")
        .or(entry.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}
