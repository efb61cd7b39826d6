//! promptfoo's OpenAI providers (`openai:<model>`, `openai:chat:`,
//! `openai:embedding:`, `openai:responses:`) as targets-file entries for
//! the host's promptfoo-style OpenAI target: promptfoo's request fields and
//! defaults, its price table.

use super::*;

impl Reader {
    /// An OpenAI provider `id` of `model`, its config as written and as
    /// rendered.
    pub(super) fn openai_provider(
        &mut self,
        id: &str,
        model: &str,
        (written, config): (&Map<String, Value>, &Map<String, Value>),
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        let model = openai_model(model, config);
        let mut entry = Map::new();
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
        // promptfoo parses a `json_schema` reply only when `response_format`
        // is written inline: one given as `file://…` is still a string when
        // the provider looks at its type.
        let inline_schema = config
            .get("response_format")
            .and_then(|f| f.get("type"))
            .is_some_and(|t| t == "json_schema");
        entry.insert("json_reply".into(), Value::Bool(inline_schema));
        if id.starts_with("openai:responses:") {
            let params = self.responses_params(model, config, at, renderer)?;
            entry.insert("output_style".into(), "promptfoo".into());
            entry.insert("api_format".into(), "responses".into());
            entry.insert("request_params".into(), Value::Object(params));
            if let Some(pricing) = pricing(model, config) {
                entry.insert("pricing".into(), pricing);
            }
            return Some(entry);
        }
        // promptfoo's chat provider sends `max_tokens` (1024) and
        // `temperature` (0) unless told otherwise (`omitDefaults`, the
        // env); a reasoning model (o1/o3/o4, gpt-5) gets neither, and
        // `max_completion_tokens` instead.
        let chat = !id.starts_with("openai:embedding") && !id.starts_with("openai:responses:");
        let reasoning = is_reasoning_model(model);
        let omit_defaults = config.get("omitDefaults").and_then(Value::as_bool) == Some(true);
        let env_number = |name: &str| env(name).and_then(|v| v.trim().parse::<f64>().ok());
        if chat && reasoning {
            if !config.contains_key("max_completion_tokens")
                && let Some(n) = env_number("OPENAI_MAX_COMPLETION_TOKENS")
            {
                entry.insert(
                    "request_params".into(),
                    serde_json::json!({"max_completion_tokens": n.trunc() as i64}),
                );
            }
        } else {
            for (from, to, var, default) in [
                ("temperature", "temperature", "OPENAI_TEMPERATURE", 0.0),
                (
                    "max_tokens",
                    "max_output_tokens",
                    "OPENAI_MAX_TOKENS",
                    1024.0,
                ),
            ] {
                if let Some(v) = config.get(from) {
                    entry.insert(to.into(), v.clone());
                } else if chat {
                    let n = env_number(var).or((!omit_defaults).then_some(default));
                    if let Some(n) = n {
                        entry.insert(to.into(), js_number(n));
                    }
                }
            }
        }
        // The candidate as promptfoo's provider makes it; the request
        // fields it sends as given.
        entry.insert("output_style".into(), "promptfoo".into());
        let mut params = match entry.remove("request_params") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        for (k, v) in config {
            let kat = at.key("config").key(k);
            match k.as_str() {
                "apiKey" | "apiKeyEnvar" | "apiBaseUrl" | "temperature" | "max_tokens"
                | "omitDefaults" | "cost" | "inputCost" | "outputCost" => {}
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
                | "user"
                | "logit_bias"
                | "store"
                | "metadata"
                | "prompt_cache_key"
                | "tools"
                | "functions"
                | "response_format" => {
                    // promptfoo loads a `file://` JSON or YAML file here
                    // (`maybeLoadFromExternalFile`), rendering the
                    // test's vars in it: a file without templates is
                    // the same for every test, read here.
                    let loaded;
                    let v = if let Value::String(s) = v
                        && let Some(rel) = s.strip_prefix("file://")
                    {
                        if rel.contains(':')
                            || !(rel.ends_with(".json")
                                || rel.ends_with(".yaml")
                                || rel.ends_with(".yml"))
                        {
                            self.error(&kat, format!("`config.{k}: {s}`: evalhost reads a JSON or YAML file here (promptfoo also runs code files, which evalhost does not here)"));
                            continue;
                        }
                        let read = if k == "response_format" {
                            self.response_format(v, &kat)
                        } else {
                            self.structured_file(rel, &kat)
                        };
                        let Some(value) = read else {
                            continue;
                        };
                        loaded = value;
                        &loaded
                    } else if k == "response_format" {
                        // Inline, with its `schema` perhaps a file.
                        let Some(value) = self.response_format(v, &kat) else {
                            continue;
                        };
                        loaded = value;
                        &loaded
                    } else {
                        v
                    };
                    if v.to_string().contains("{{") {
                        self.error(&kat, format!("`config.{k}` holds a template, which promptfoo renders with each test's vars; this version of evalhost sends it as written, so it refuses it"));
                        continue;
                    }
                    params.insert(k.clone(), v.clone());
                }
                // Sent to reasoning models (and gpt-oss) only, as
                // promptfoo sends it.
                "reasoning_effort" => {
                    if reasoning || model.contains("gpt-oss") {
                        params.insert(k.clone(), v.clone());
                    }
                }
                // Sent to GPT-5 models only, as promptfoo sends it.
                "verbosity" => {
                    if model.starts_with("gpt-5") || model.contains("/gpt-5") {
                        params.insert(k.clone(), v.clone());
                    }
                }
                // Keys promptfoo's chat provider does not send (they are
                // its Responses provider's), or sends only to some models:
                // as promptfoo does, and said.
                "instructions" | "max_output_tokens" => {
                    self.warning(&kat, format!("`config.{k}` is not sent by promptfoo's chat provider (it is `openai:responses:`'s), so evalhost does not send it either"));
                }
                "reasoning" => {
                    let o_series = ["o1", "o3", "o4"]
                        .iter()
                        .any(|p| model.starts_with(p) || model.contains(&format!("/{p}")));
                    if o_series {
                        params.insert(k.clone(), v.clone());
                    } else {
                        self.warning(&kat, "`config.reasoning` is sent by promptfoo's chat provider to o1/o3/o4 models only, so evalhost does not send it to this one either");
                    }
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
                // Sent with every call, over promptfoo's own (its
                // `Authorization` included), as its provider spreads them.
                "headers" => {
                    if let Some(headers) = self.provider_headers(v, &kat) {
                        entry.insert("headers".into(), Value::Object(headers));
                    }
                }
                // The model a bare `openai:chat` runs (above); with a model
                // in the id, promptfoo sends the id's.
                "model" => {}
                // promptfoo's OpenAI provider sends the fields it knows and
                // ignores the rest (`baseUrl`, `maxTokens`): so does
                // evalhost, said.
                // A field promptfoo reads that evalhost does not send: refused,
                // never dropped quietly.
                other if PROMPTFOO_OPENAI_READS.contains(&other) => {
                    self.error(&kat, format!("`config.{other}` of an OpenAI provider is not read by this version of evalhost"))
                        .hint = Some("evalhost sends temperature, max_tokens, top_p, presence_penalty, frequency_penalty, stop, seed, tools, tool_choice, functions, function_call, response_format, max_completion_tokens, reasoning_effort, user, logit_bias, store, metadata, prompt_cache_key, passthrough and headers".into());
                }
                other => {
                    self.warning(&kat, format!("`config.{other}` is not an OpenAI request field promptfoo reads: promptfoo does not send it, and neither does evalhost"))
                        .hint = Some("evalhost sends temperature, max_tokens, top_p, presence_penalty, frequency_penalty, stop, seed, tools, tool_choice, functions, function_call, response_format, max_completion_tokens, reasoning_effort, user, logit_bias, store, metadata, prompt_cache_key, passthrough and headers; the endpoint is `apiBaseUrl`".into());
                }
            }
        }
        if !params.is_empty() {
            entry.insert("request_params".into(), Value::Object(params));
        }
        if let Some(pricing) = pricing(model, config) {
            entry.insert("pricing".into(), pricing);
        }
        Some(entry)
    }
}

impl Reader {
    /// A provider's `config.headers`: names to text (a number or boolean
    /// as JavaScript writes it), sent with each call over promptfoo's own.
    fn provider_headers(&mut self, v: &Value, at: &KeyPath) -> Option<Map<String, Value>> {
        let Value::Object(o) = v else {
            self.error(
                at,
                "`config.headers` must be a mapping of header names to values",
            );
            return None;
        };
        let mut headers = Map::new();
        for (name, value) in o {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(_) | Value::Bool(_) => value.to_string(),
                _ => {
                    self.error(
                        &at.key(name),
                        format!("`config.headers.{name}` must be a string"),
                    );
                    continue;
                }
            };
            headers.insert(name.clone(), Value::String(text));
        }
        Some(headers)
    }
}

/// The config keys promptfoo 0.121's OpenAI chat provider (and its generic
/// base) reads, from its code: one evalhost does not handle is refused;
/// any other key promptfoo ignores, and so does evalhost, with a warning.
const PROMPTFOO_OPENAI_READS: &[&str] = &[
    "apiBaseUrl",
    "apiHost",
    "apiKey",
    "apiKeyEnvar",
    "apiKeyRequired",
    "audio",
    "cost",
    "frequency_penalty",
    "functionToolCallbacks",
    "function_call",
    "functions",
    "headers",
    "inputCost",
    "instructions",
    "maxRetries",
    "max_completion_tokens",
    "max_output_tokens",
    "max_tokens",
    "mcp",
    "metadata",
    "modalities",
    "omitDefaults",
    "organization",
    "outputCost",
    "passthrough",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "reasoning_effort",
    "response_format",
    "seed",
    "service_tier",
    "showThinking",
    "stop",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tool_resources",
    "tools",
    "top_p",
    "user",
    "verbosity",
];

/// The model of `openai:<model>`: a bare `openai:chat` (or
/// `openai:responses`, `openai:embedding`) names none, and promptfoo takes
/// `config.model`, else its default (`modelName || configuredModel || …` in
/// its OpenAI loader).
fn openai_model<'a>(model: &'a str, config: &'a Map<String, Value>) -> &'a str {
    let configured = config
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty());
    match model {
        "chat" | "responses" | "" => configured.unwrap_or("gpt-4.1-2025-04-14"),
        "embedding" | "embeddings" => configured.unwrap_or("text-embedding-3-large"),
        m => m,
    }
}

/// promptfoo's `isReasoningModel` of its OpenAI provider: o1, o3, o4 and
/// gpt-5 models (a fine-tune's `ft:` prefix aside).
fn is_reasoning_model(model: &str) -> bool {
    let m = model.replacen("ft:", "", 1);
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|p| m.starts_with(p) || m.contains(&format!("/{p}")))
}

/// promptfoo prices a reply from its token usage: the config's `cost`,
/// `inputCost`, `outputCost` (USD per token), else its own price table.
fn pricing(model: &str, config: &Map<String, Value>) -> Option<Value> {
    let per_token = |k: &str| config.get(k).and_then(Value::as_f64);
    let listed = super::openai_prices::OPENAI_PRICES
        .iter()
        .find(|(m, ..)| *m == model);
    let flat_input = per_token("inputCost")
        .or(per_token("cost"))
        .map(|c| c * 1e6);
    let input = flat_input.or(listed.map(|p| p.1))?;
    let output = per_token("outputCost")
        .or(per_token("cost"))
        .map(|c| c * 1e6)
        .or(listed.map(|p| p.2))?;
    let cached = flat_input.or(listed.map(|p| p.3)).unwrap_or(input);
    Some(serde_json::json!({
        "input_per_million": input,
        "output_per_million": output,
        "cached_input_per_million": cached,
    }))
}

/// A number as JavaScript writes it: `0`, not `0.0`.
pub(super) fn js_number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9e15 {
        serde_json::json!(n as i64)
    } else {
        serde_json::json!(n)
    }
}

impl Reader {
    /// promptfoo's `openai:responses:` request fields
    /// (`OpenAiResponsesProvider.getOpenAiBody`), all but `model` and
    /// `input`: `max_output_tokens` (1024 unless configured; for a
    /// reasoning model only from the config or the env), `reasoning`,
    /// `temperature` (0; none for a reasoning model), `instructions`,
    /// `top_p`, function tools flattened, `text.format` from
    /// `response_format` (with GPT-5's `verbosity`), and the fields it
    /// passes through. Any other key is refused at its line.
    fn responses_params(
        &mut self,
        model: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        let env = |name: &str| renderer.env_value(name);
        let env_number = |name: &str| env(name).and_then(|v| v.trim().parse::<f64>().ok());
        let reasoning = is_reasoning_model(model);
        let gpt5 = model.starts_with("gpt-5") || model.contains("/gpt-5");
        let omit = config.get("omitDefaults").and_then(Value::as_bool) == Some(true);
        let mut p = Map::new();
        let max = config.get("max_output_tokens").cloned().or_else(|| {
            let n = if reasoning {
                env_number("OPENAI_MAX_COMPLETION_TOKENS").or(env_number("OPENAI_MAX_TOKENS"))
            } else {
                env_number("OPENAI_MAX_TOKENS").or((!omit).then_some(1024.0))
            };
            n.map(|n| js_number(n.trunc()))
        });
        if let Some(m) = max {
            p.insert("max_output_tokens".into(), m);
        }
        let effort = config
            .get("reasoning")
            .and_then(|r| r.get("effort"))
            .or(config.get("reasoning_effort"))
            .filter(|_| reasoning)
            .cloned();
        if let Some(e) = &effort {
            p.insert("reasoning".into(), serde_json::json!({"effort": e}));
        }
        if !reasoning {
            let t = config.get("temperature").cloned().or_else(|| {
                env_number("OPENAI_TEMPERATURE")
                    .or((!omit).then_some(0.0))
                    .map(js_number)
            });
            if let Some(t) = t {
                p.insert("temperature".into(), t);
            }
        }
        let mut text = serde_json::json!({"format": {"type": "text"}});
        for (k, v) in config {
            let kat = at.key("config").key(k);
            if v.to_string().contains("{{") {
                self.error(&kat, format!("`config.{k}` holds a template, which promptfoo renders with each test's vars; this version of evalhost sends it as written, so it refuses it"));
                continue;
            }
            let loaded;
            let v = match v {
                Value::String(s) if s.starts_with("file://") && k == "tools" => {
                    loaded = self.structured_file(&s["file://".len()..], &kat)?;
                    &loaded
                }
                _ if k == "response_format" => {
                    loaded = self.response_format(v, &kat)?;
                    &loaded
                }
                other => other,
            };
            match k.as_str() {
                "apiKey" | "apiKeyEnvar" | "apiBaseUrl" | "omitDefaults" | "max_output_tokens"
                | "temperature" | "reasoning_effort" | "cost" | "inputCost" | "outputCost"
                | "verbosity" => {}
                "reasoning" => {
                    if reasoning && let Value::Object(r) = v {
                        let mut merged = p
                            .get("reasoning")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default();
                        merged.extend(r.clone());
                        p.insert("reasoning".into(), Value::Object(merged));
                    }
                }
                "instructions" => {
                    if !(v.is_null() || *v == "") {
                        p.insert(k.clone(), v.clone());
                    }
                }
                "top_p" => {
                    if effort.as_ref().is_none_or(|e| *e == "none") {
                        p.insert(k.clone(), v.clone());
                    }
                }
                "tools" => {
                    let flat = |t: &Value| match (t.get("type"), t.get("function")) {
                        (Some(ty), Some(Value::Object(f))) if *ty == "function" => {
                            let mut out = t.as_object().cloned().unwrap_or_default();
                            out.remove("function");
                            out.extend(f.clone());
                            Value::Object(out)
                        }
                        _ => t.clone(),
                    };
                    let tools = match v {
                        Value::Array(items) => Value::Array(items.iter().map(flat).collect()),
                        other => other.clone(),
                    };
                    p.insert(k.clone(), tools);
                }
                "tool_choice" => {
                    let choice = match (v.get("type"), v.pointer("/function/name")) {
                        (Some(t), Some(name)) if *t == "function" => {
                            serde_json::json!({"type": "function", "name": name})
                        }
                        _ => v.clone(),
                    };
                    p.insert(k.clone(), choice);
                }
                "response_format" => {
                    text = match v.get("type").and_then(Value::as_str) {
                        Some("json_object") => {
                            serde_json::json!({"format": {"type": "json_object"}})
                        }
                        Some("json_schema") => serde_json::json!({"format": {
                            "type": "json_schema",
                            "name": v.pointer("/json_schema/name").or(v.get("name")).cloned().unwrap_or(serde_json::json!("response_schema")),
                            "schema": v.get("schema").or(v.pointer("/json_schema/schema")).cloned().unwrap_or(Value::Null),
                            "strict": v.pointer("/json_schema/strict").or(v.get("strict")).filter(|s| !s.is_null()).cloned().unwrap_or(Value::Bool(true)),
                        }}),
                        _ => serde_json::json!({"format": {"type": "text"}}),
                    };
                }
                "max_tool_calls"
                | "include"
                | "previous_response_id"
                | "truncation"
                | "metadata"
                | "user"
                | "prompt_cache_key" => {
                    p.insert(k.clone(), v.clone());
                }
                "parallel_tool_calls" | "store" => {
                    let truthy =
                        !matches!(v, Value::Null | Value::Bool(false)) && *v != 0 && *v != "";
                    p.insert(k.clone(), Value::Bool(truthy));
                }
                "passthrough" => {
                    if let Value::Object(o) = v {
                        p.extend(o.clone());
                    }
                }
                other => {
                    self.error(&kat, format!("`config.{other}` of an OpenAI Responses provider is not read by this version of evalhost"))
                        .hint = Some("evalhost sends max_output_tokens, reasoning, reasoning_effort, temperature, instructions, top_p, tools, tool_choice, response_format, verbosity, max_tool_calls, include, previous_response_id, truncation, metadata, parallel_tool_calls, store, user, prompt_cache_key and passthrough as promptfoo does".into());
                }
            }
        }
        if gpt5 && let Some(v) = config.get("verbosity") {
            text["verbosity"] = v.clone();
        }
        p.insert("text".into(), text);
        Some(p)
    }

    /// A `response_format` (or Anthropic's `output_format`) as promptfoo's
    /// `maybeLoadResponseFormatFromExternalFile` loads it: a `file://`
    /// JSON or YAML file read, and a `json_schema` format whose `schema`
    /// (or `json_schema.schema`) is itself a `file://` gets that file too —
    /// whether the format was written inline or in a file.
    pub(super) fn response_format(&mut self, v: &Value, at: &KeyPath) -> Option<Value> {
        let mut format = match v {
            Value::String(s) if s.starts_with("file://") => {
                self.structured_file(&s["file://".len()..], at)?
            }
            other => other.clone(),
        };
        if format.get("type").is_some_and(|t| t == "json_schema") {
            for pointer in ["/schema", "/json_schema/schema"] {
                if let Some(Value::String(nested)) = format.pointer(pointer).cloned()
                    && let Some(nested) = nested.strip_prefix("file://")
                {
                    let schema = self.structured_file(nested, at)?;
                    if let Some(slot) = format.pointer_mut(pointer) {
                        *slot = schema;
                    }
                    break;
                }
            }
        }
        Some(format)
    }
}
