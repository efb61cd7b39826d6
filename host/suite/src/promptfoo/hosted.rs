//! promptfoo's providers for hosted and local model APIs beyond OpenAI's
//! and Anthropic's: `azure:chat:<deployment>`, `openrouter:<model>`,
//! `ollama:[chat:|completion:]<model>`, `google:<model>` (the Gemini API)
//! and `vertex:<model>` (Vertex AI with an API key), as targets-file
//! entries — each with promptfoo 0.121.20's request fields, defaults and
//! environment variables (`src/providers/azure/chat.ts`,
//! `openrouter.ts`, `ollama.ts`, `google/ai.studio.ts`, `google/vertex.ts`).

use super::openai::js_number;
use super::*;

/// promptfoo's Azure chat provider's `isReasoningModel`.
fn azure_reasoning(deployment: &str, config: &Map<String, Value>) -> bool {
    if config.get("isReasoningModel").and_then(Value::as_bool) == Some(true)
        || config.get("o1").and_then(Value::as_bool) == Some(true)
    {
        return true;
    }
    let d = deployment.to_ascii_lowercase();
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|p| d.starts_with(p) || d.contains(&format!("-{p}")))
        || [
            "deepseek-r1",
            "deepseek_r1",
            "phi-4-reasoning",
            "phi-4-mini-reasoning",
            "mai-thinking",
            "mai-ds-r1",
            "mai-reasoning",
        ]
        .iter()
        .any(|p| d.contains(p))
        || (d.contains("grok") && d.contains("reasoning"))
}

/// The Ollama option keys promptfoo puts in a request's `options`.
const OLLAMA_OPTIONS: &[&str] = &[
    "num_predict",
    "top_k",
    "top_p",
    "tfs_z",
    "seed",
    "useNUMA",
    "num_ctx",
    "num_keep",
    "num_batch",
    "num_gqa",
    "num_gpu",
    "main_gpu",
    "low_vram",
    "f16_kv",
    "logits_all",
    "vocab_only",
    "use_mmap",
    "use_mlock",
    "embedding_only",
    "rope_frequency_base",
    "rope_frequency_scale",
    "typical_p",
    "repeat_last_n",
    "temperature",
    "repeat_penalty",
    "presence_penalty",
    "frequency_penalty",
    "mirostat",
    "mirostat_tau",
    "mirostat_eta",
    "penalize_newline",
    "stop",
    "num_thread",
];

impl Reader {
    /// `{{ env.X }}` of the config's `env:`, else the environment.
    fn env_of(&self, renderer: &Renderer, name: &str) -> Option<String> {
        renderer.env_value(name).filter(|v| !v.is_empty())
    }

    /// A key promptfoo would need and evalhost cannot find: an error naming
    /// the variables it reads.
    fn missing_key(&mut self, at: &KeyPath, id: &str, vars: &[&str]) {
        self.error(
            at,
            format!(
                "`{id}` needs an API key: `config.apiKey`, or {} in the environment",
                vars.iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .hint = Some(format!("export {}=…", vars[0]));
    }

    /// `azure:chat:<deployment>`: Azure OpenAI's chat completions at
    /// `<base>/openai/deployments/<d>/chat/completions?api-version=…`,
    /// the key in an `api-key` header, promptfoo's defaults (`max_tokens`
    /// 1024, `temperature` 0, `top_p` 1, both penalties 0; a reasoning
    /// deployment gets `reasoning_effort` "medium" and
    /// `max_completion_tokens` instead of the first two).
    pub(super) fn azure_provider(
        &mut self,
        id: &str,
        deployment: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        if deployment.is_empty() {
            self.error(
                at,
                "Azure chat provider requires a deployment name. Use azure:chat:<deployment>.",
            );
            return None;
        }
        let text = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_owned);
        let env = |n: &str| self.env_of(renderer, n);
        let base = text("apiBaseUrl")
            .or_else(|| env("AZURE_API_BASE_URL"))
            .or_else(|| env("AZURE_OPENAI_API_BASE_URL"))
            .or_else(|| env("AZURE_OPENAI_BASE_URL"))
            .map(|b| b.strip_suffix('/').map(str::to_owned).unwrap_or(b))
            .or_else(|| {
                text("apiHost")
                    .or_else(|| env("AZURE_API_HOST"))
                    .or_else(|| env("AZURE_OPENAI_API_HOST"))
                    .map(|h| {
                        let h = h
                            .trim_start_matches("https://")
                            .trim_start_matches("http://")
                            .trim_end_matches('/');
                        format!("https://{h}")
                    })
            });
        let Some(base) = base else {
            self.error(at, format!("`{id}`: Azure API host must be set"))
                .hint = Some("set `config.apiHost` (or AZURE_API_HOST / AZURE_OPENAI_API_HOST), or `config.apiBaseUrl` (AZURE_API_BASE_URL)".into());
            return None;
        };
        let key = text("apiKey")
            .or_else(|| text("apiKeyEnvar").and_then(|v| env(&v)))
            .or_else(|| env("AZURE_API_KEY"))
            .or_else(|| env("AZURE_OPENAI_API_KEY"));
        let Some(key) = key else {
            self.error(at, format!("`{id}` has no API key, and promptfoo would sign in with Entra ID (`@azure/identity`), which evalhost does not"))
                .hint = Some("set AZURE_API_KEY (or AZURE_OPENAI_API_KEY, or `config.apiKeyEnvar`)".into());
            return None;
        };
        let reasoning = azure_reasoning(deployment, config);
        let omit = config.get("omitDefaults").and_then(Value::as_bool) == Some(true);
        let env_number = |n: &str| env(n).and_then(|v| v.trim().parse::<f64>().ok());
        let setting = |k: &str, var: &str, default: f64| -> Option<Value> {
            config
                .get(k)
                .cloned()
                .or_else(|| env_number(var).map(js_number))
                .or((!omit).then(|| js_number(default)))
        };
        let mut entry = Map::new();
        entry.insert("provider".into(), "openai".into());
        entry.insert("model".into(), deployment.into());
        entry.insert(
            "base_url".into(),
            format!("{base}/openai/deployments/{deployment}").into(),
        );
        entry.insert(
            "api_version".into(),
            text("apiVersion")
                .unwrap_or_else(|| "2024-12-01-preview".into())
                .into(),
        );
        entry.insert("api_key_header".into(), "api-key".into());
        entry.insert("api_key".into(), key.into());
        entry.insert("output_style".into(), "promptfoo".into());
        // promptfoo's Azure provider shows no reasoning.
        entry.insert("show_thinking".into(), Value::Bool(false));
        let inline_schema = config
            .get("response_format")
            .and_then(|f| f.get("type"))
            .is_some_and(|t| t == "json_schema" || t == "json_object");
        entry.insert("json_reply".into(), Value::Bool(inline_schema));
        let mut params = Map::new();
        let max_tokens = setting("max_tokens", "OPENAI_MAX_TOKENS", 1024.0);
        if reasoning {
            params.insert(
                "reasoning_effort".into(),
                config
                    .get("reasoning_effort")
                    .cloned()
                    .unwrap_or_else(|| "medium".into()),
            );
            if let Some(m) = config
                .get("max_completion_tokens")
                .cloned()
                .or_else(|| env_number("OPENAI_MAX_COMPLETION_TOKENS").map(js_number))
                .or(max_tokens)
            {
                params.insert("max_completion_tokens".into(), m);
            }
        } else {
            if let Some(m) = max_tokens {
                entry.insert("max_output_tokens".into(), m);
            }
            if let Some(t) = setting("temperature", "OPENAI_TEMPERATURE", 0.0) {
                entry.insert("temperature".into(), t);
            }
        }
        for (k, var, default) in [
            ("top_p", "OPENAI_TOP_P", 1.0),
            ("presence_penalty", "OPENAI_PRESENCE_PENALTY", 0.0),
            ("frequency_penalty", "OPENAI_FREQUENCY_PENALTY", 0.0),
        ] {
            if let Some(v) = setting(k, var, default) {
                params.insert(k.into(), v);
            }
        }
        for (k, v) in config {
            let kat = at.key("config").key(k);
            match k.as_str() {
                "apiKey"
                | "apiKeyEnvar"
                | "apiBaseUrl"
                | "apiHost"
                | "apiVersion"
                | "temperature"
                | "max_tokens"
                | "max_completion_tokens"
                | "reasoning_effort"
                | "omitDefaults"
                | "isReasoningModel"
                | "o1"
                | "top_p"
                | "presence_penalty"
                | "frequency_penalty" => {}
                "seed" | "functions" | "function_call" | "tools" | "tool_choice"
                | "deployment_id" | "response_format" | "logprobs" | "stop" => {
                    if v.as_str().is_some_and(|s| s.starts_with("file://"))
                        || v.to_string().contains("{{")
                    {
                        self.error(&kat, format!("`config.{k}` of an Azure provider is sent as written by evalhost; a file:// or a template here is not read yet"));
                        continue;
                    }
                    params.insert(k.clone(), v.clone());
                }
                "passthrough" => match v {
                    Value::Object(o) => {
                        for (pk, pv) in o {
                            // A passthrough key over a setting evalhost
                            // sends as its own field.
                            match pk.as_str() {
                                "temperature" if !reasoning => {
                                    entry.insert("temperature".into(), pv.clone());
                                }
                                "max_tokens" if !reasoning => {
                                    entry.insert("max_output_tokens".into(), pv.clone());
                                }
                                _ => {
                                    params.insert(pk.clone(), pv.clone());
                                }
                            }
                        }
                    }
                    _ => {
                        self.error(
                            &kat,
                            "`config.passthrough` must be an object of request fields",
                        );
                    }
                },
                other => {
                    self.error(&kat, format!("`config.{other}` of an Azure provider is not read by this version of evalhost"))
                        .hint = Some("evalhost sends apiHost/apiBaseUrl, apiVersion, apiKey(Envar), temperature, max_tokens, max_completion_tokens, reasoning_effort, top_p, presence_penalty, frequency_penalty, seed, functions, function_call, tools, tool_choice, response_format, logprobs, stop and passthrough".into());
                }
            }
        }
        if !params.is_empty() {
            entry.insert("request_params".into(), Value::Object(params));
        }
        Some(entry)
    }

    /// `openrouter:<model>`: OpenRouter's OpenAI-compatible API
    /// (`https://openrouter.ai/api/v1`, or `config.apiBaseUrl`; never
    /// `OPENAI_BASE_URL`), the key from `OPENROUTER_API_KEY` (else
    /// `OPENAI_API_KEY`), promptfoo's OpenAI chat request with
    /// `transforms`, `models`, `route` and `provider` added.
    pub(super) fn openrouter_provider(
        &mut self,
        id: &str,
        model: &str,
        (written, config): (&Map<String, Value>, &Map<String, Value>),
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        let mut config = config.clone();
        let mut extra = Map::new();
        for k in ["transforms", "models", "route", "provider"] {
            if let Some(v) = config.remove(k)
                && !is_js_falsy(&v)
            {
                extra.insert(k.into(), v);
            }
        }
        match config.remove("passthrough") {
            None => {}
            Some(Value::Object(p)) => extra.extend(p),
            Some(_) => {
                self.error(
                    &at.key("config").key("passthrough"),
                    "`config.passthrough` must be an object of request fields",
                );
                return None;
            }
        }
        config
            .entry("apiBaseUrl")
            .or_insert_with(|| "https://openrouter.ai/api/v1".into());
        if !config.contains_key("apiKey") && !config.contains_key("apiKeyEnvar") {
            let var = if self.env_of(renderer, "OPENROUTER_API_KEY").is_some() {
                "OPENROUTER_API_KEY"
            } else {
                "OPENAI_API_KEY"
            };
            config.insert("apiKeyEnvar".into(), var.into());
        }
        if !extra.is_empty() {
            config.insert("passthrough".into(), Value::Object(extra));
        }
        let mut entry = self.openai_provider(id, model, (written, &config), at, renderer)?;
        if !entry.contains_key("api_key") {
            self.missing_key(at, id, &["OPENROUTER_API_KEY", "OPENAI_API_KEY"]);
            return None;
        }
        // OpenRouter's prices are not promptfoo's OpenAI table.
        if !config.contains_key("cost") && !config.contains_key("inputCost") {
            entry.remove("pricing");
        }
        Some(entry)
    }

    /// `ollama:chat:<model>` (`/api/chat`), `ollama:completion:<model>` and
    /// `ollama:<model>` (`/api/generate`, the prompt as written): Ollama's
    /// own API at `OLLAMA_BASE_URL` (promptfoo reads no config key for
    /// it), `Authorization` only with `OLLAMA_API_KEY`; the config's Ollama
    /// options in `options` in the order written, `think`, `passthrough`
    /// and (chat) `tools` as promptfoo sends them.
    pub(super) fn ollama_provider(
        &mut self,
        id: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        let rest = id.strip_prefix("ollama:").unwrap_or_default();
        let (chat, model) = if let Some(m) = rest.strip_prefix("chat:") {
            (true, m)
        } else if let Some(m) = rest.strip_prefix("completion:") {
            (false, m)
        } else if rest.starts_with("embedding:") || rest.starts_with("embeddings:") {
            self.error(at, format!("`{id}`: Ollama embeddings are not run by this version of evalhost"))
                .hint = Some("give an `ollama:` provider as the grader's `embedding` provider only through an OpenAI-compatible id (`openai:embedding:<model>` with `apiBaseUrl: http://localhost:11434/v1`)".into());
            return None;
        } else {
            (false, rest)
        };
        if model.is_empty() {
            self.error(at, format!("`{id}` names no model"));
            return None;
        }
        let mut options = Map::new();
        let mut top = Map::new();
        for (k, v) in config {
            let kat = at.key("config").key(k);
            match k.as_str() {
                k if OLLAMA_OPTIONS.contains(&k) => {
                    options.insert(k.to_owned(), v.clone());
                }
                "think" => {
                    // promptfoo's chat provider copies it into `options`
                    // too.
                    if chat {
                        options.insert("think".into(), v.clone());
                    }
                    top.insert("think".into(), v.clone());
                }
                "passthrough" => match v {
                    Value::Object(p) => {
                        if chat {
                            options.insert("passthrough".into(), v.clone());
                        }
                        top.extend(p.clone());
                    }
                    _ => {
                        self.error(
                            &kat,
                            "`config.passthrough` must be an object of request fields",
                        );
                        return None;
                    }
                },
                "tools" if chat => {
                    if v.as_str().is_some_and(|s| s.starts_with("file://")) {
                        self.error(&kat, "`config.tools` as a file:// is not read for an Ollama provider by this version of evalhost");
                        return None;
                    }
                    top.insert("tools".into(), v.clone());
                }
                // promptfoo drops every other key (its `options` filter).
                _ => {
                    self.warning(&kat, format!("`config.{k}` is not an Ollama option: promptfoo does not send it, and neither does evalhost"))
                        .hint = Some("give request fields beyond Ollama's options under `passthrough`".into());
                }
            }
        }
        // `think` wins over a passthrough's (promptfoo sets it after).
        if let Some(t) = config.get("think") {
            top.insert("think".into(), t.clone());
        }
        let mut params = Map::new();
        if !chat {
            params.insert("stream".into(), Value::Bool(false));
        }
        params.insert("options".into(), Value::Object(options));
        params.extend(top);
        let mut entry = Map::new();
        entry.insert("provider".into(), "openai".into());
        entry.insert(
            "api_format".into(),
            if chat {
                "ollama-chat"
            } else {
                "ollama-generate"
            }
            .into(),
        );
        entry.insert("model".into(), model.into());
        entry.insert(
            "base_url".into(),
            self.env_of(renderer, "OLLAMA_BASE_URL")
                .unwrap_or_else(|| "http://localhost:11434".into())
                .into(),
        );
        if let Some(key) = self.env_of(renderer, "OLLAMA_API_KEY") {
            entry.insert("api_key".into(), key.into());
        }
        entry.insert("output_style".into(), "promptfoo".into());
        entry.insert("request_params".into(), Value::Object(params));
        Some(entry)
    }

    /// `google:<model>` (the Gemini API: `<base>/v1beta/models/<m>:
    /// generateContent`, the key in `x-goog-api-key`) and `vertex:<model>`
    /// with an API key (Vertex AI's express mode: `https://<host>/v1/
    /// publishers/google/models/<m>:generateContent`): promptfoo's
    /// `contents` and system instruction from the prompt, its
    /// `generationConfig` (no defaults), the output as promptfoo joins the
    /// parts. Vertex without a key needs Google's OAuth, which evalhost
    /// does not do: refused.
    pub(super) fn google_provider(
        &mut self,
        id: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        let vertex = id.starts_with("vertex:");
        let model = id
            .strip_prefix("vertex:chat:")
            .or_else(|| id.strip_prefix("vertex:"))
            .or_else(|| id.strip_prefix("google:"))
            .unwrap_or_default();
        if model.is_empty() || model.contains(':') {
            self.error(at, format!("`{id}`: evalhost runs `google:<model>` and `vertex:<model>` (Gemini chat models)"))
                .hint = Some("promptfoo's Google image, video, live and embedding providers are not run by this version of evalhost".into());
            return None;
        }
        let gemini = ["gemini", "gemma", "codegemma", "paligemma"]
            .iter()
            .any(|p| model.starts_with(p));
        if !gemini {
            self.error(at, format!("`{id}`: only Gemini and Gemma models are run by this version of evalhost (promptfoo calls {model} through another API)"));
            return None;
        }
        let text = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_owned);
        let env = |n: &str| self.env_of(renderer, n);
        let key = if vertex {
            text("apiKey")
                .or_else(|| env("VERTEX_API_KEY"))
                .or_else(|| env("GOOGLE_API_KEY"))
        } else {
            text("apiKey")
                .or_else(|| env("GOOGLE_API_KEY"))
                .or_else(|| env("GEMINI_API_KEY"))
                .or_else(|| env("PALM_API_KEY"))
        };
        let Some(key) = key else {
            if vertex {
                self.error(at, format!("`{id}` has no API key, and promptfoo would sign in to Google Cloud (OAuth through google-auth-library), which evalhost does not"))
                    .hint = Some("give Vertex AI an API key (express mode): VERTEX_API_KEY or GOOGLE_API_KEY, or `config.apiKey`".into());
            } else {
                self.missing_key(
                    at,
                    id,
                    &["GOOGLE_API_KEY", "GEMINI_API_KEY", "PALM_API_KEY"],
                );
            }
            return None;
        };
        let base = if vertex {
            if config.get("expressMode").and_then(Value::as_bool) == Some(false)
                || config.contains_key("credentials")
                || config.contains_key("keyFilename")
            {
                self.error(at, format!("`{id}`: Vertex AI through Google Cloud sign-in (`credentials`, `keyFilename`, `expressMode: false`) is not run by this version of evalhost"))
                    .hint = Some("use an API key (express mode)".into());
                return None;
            }
            let host = text("apiHost")
                .or_else(|| env("VERTEX_API_HOST"))
                .unwrap_or_else(|| {
                    let region = text("region")
                        .or_else(|| env("VERTEX_REGION"))
                        .or_else(|| env("GOOGLE_CLOUD_LOCATION"))
                        .unwrap_or_else(|| "us-central1".into());
                    if region == "global" {
                        "aiplatform.googleapis.com".into()
                    } else {
                        format!("{region}-aiplatform.googleapis.com")
                    }
                });
            let version = text("apiVersion")
                .or_else(|| env("VERTEX_API_VERSION"))
                .unwrap_or_else(|| "v1".into());
            let publisher = text("publisher")
                .or_else(|| env("VERTEX_PUBLISHER"))
                .unwrap_or_else(|| "google".into());
            format!("https://{host}/{version}/publishers/{publisher}")
        } else {
            let version = text("apiVersion").unwrap_or_else(|| {
                if model == "gemini-2.0-flash-thinking-exp" {
                    "v1alpha".into()
                } else {
                    "v1beta".into()
                }
            });
            let root = text("apiHost")
                .or_else(|| env("GOOGLE_API_HOST"))
                .or_else(|| env("PALM_API_HOST"))
                .map(|h| format!("https://{h}"))
                .or_else(|| text("apiBaseUrl"))
                .or_else(|| env("GOOGLE_API_BASE_URL"))
                .unwrap_or_else(|| "https://generativelanguage.googleapis.com".into());
            format!("{root}/{version}")
        };
        let mut generation = Map::new();
        let mut params = Map::new();
        let mut system = None;
        let order: &[&str] = if vertex {
            &[
                "stopSequences",
                "temperature",
                "maxOutputTokens",
                "topP",
                "topK",
            ]
        } else {
            &[
                "temperature",
                "topP",
                "topK",
                "stopSequences",
                "maxOutputTokens",
            ]
        };
        for k in order {
            if let Some(v) = config.get(*k) {
                generation.insert((*k).into(), v.clone());
            }
        }
        for (k, v) in config {
            let kat = at.key("config").key(k);
            match k.as_str() {
                "apiKey" | "apiHost" | "apiBaseUrl" | "apiVersion" | "region" | "publisher"
                | "projectId" | "expressMode" | "temperature" | "topP" | "topK"
                | "stopSequences" | "maxOutputTokens" => {}
                "generationConfig" => match v {
                    Value::Object(g) => generation.extend(g.clone()),
                    _ => {
                        self.error(&kat, "`config.generationConfig` must be an object");
                        return None;
                    }
                },
                "responseSchema" => {
                    let schema = match v {
                        Value::String(s) if s.starts_with("file://") => {
                            self.structured_file(&s["file://".len()..], &kat)?
                        }
                        Value::String(s) => match serde_json::from_str::<Value>(s) {
                            Ok(v) => v,
                            Err(e) => {
                                self.error(
                                    &kat,
                                    format!("`config.responseSchema` is not JSON: {e}"),
                                );
                                return None;
                            }
                        },
                        other => other.clone(),
                    };
                    generation.insert("response_schema".into(), schema);
                    generation.insert("response_mime_type".into(), "application/json".into());
                }
                "safetySettings" | "toolConfig" => {
                    params.insert(k.clone(), v.clone());
                }
                "tools" => {
                    let google_shape = v.as_array().is_some_and(|t| {
                        t.iter().all(|t| {
                            t.get("functionDeclarations").is_some()
                                || t.get("googleSearch").is_some()
                                || t.get("codeExecution").is_some()
                        })
                    });
                    if !google_shape {
                        self.error(&kat, "`config.tools` of a Google provider: evalhost sends tools in Google's own form (`functionDeclarations`, `googleSearch`, `codeExecution`) as written; promptfoo's conversion of OpenAI-style tools and files is not done yet");
                        return None;
                    }
                    params.insert("tools".into(), v.clone());
                }
                "systemInstruction" => match v {
                    Value::String(s) if !s.starts_with("file://") && !s.contains("{{") => {
                        system = Some(json!({"parts": [{"text": s}]}));
                    }
                    Value::Object(o) if o.contains_key("parts") => system = Some(v.clone()),
                    _ => {
                        self.error(&kat, "`config.systemInstruction` is read as text or `{parts: [...]}`; a file:// or a template here is not read by this version of evalhost");
                        return None;
                    }
                },
                "passthrough" => match v {
                    Value::Object(p) => params.extend(p.clone()),
                    _ => {
                        self.error(
                            &kat,
                            "`config.passthrough` must be an object of request fields",
                        );
                        return None;
                    }
                },
                other => {
                    self.error(&kat, format!("`config.{other}` of a Google provider is not read by this version of evalhost"))
                        .hint = Some("evalhost sends apiKey, apiHost/apiBaseUrl, apiVersion, temperature, topP, topK, stopSequences, maxOutputTokens, generationConfig, responseSchema, safetySettings, toolConfig, tools (Google's form), systemInstruction and passthrough".into());
                    return None;
                }
            }
        }
        let mut entry = Map::new();
        entry.insert("provider".into(), "gemini".into());
        entry.insert("model".into(), model.into());
        entry.insert("base_url".into(), base.into());
        entry.insert("api_key".into(), key.into());
        entry.insert("output_style".into(), "promptfoo".into());
        entry.insert(
            "system_key".into(),
            if vertex {
                "systemInstruction"
            } else {
                "system_instruction"
            }
            .into(),
        );
        if let Some(s) = system {
            entry.insert("system_instruction".into(), s);
        }
        params.insert("generationConfig".into(), Value::Object(generation));
        entry.insert("request_params".into(), Value::Object(params));
        Some(entry)
    }
}
