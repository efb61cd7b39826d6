//! promptfoo's Anthropic provider (`anthropic:messages:<model>`,
//! `anthropic:<model>`) as a targets-file entry for the host's
//! promptfoo-style Anthropic target.

use super::*;

impl Reader {
    /// promptfoo's Anthropic provider: `anthropic:messages:<model>`, or
    /// `anthropic:<model>` for a model promptfoo knows. Its key and address
    /// from `apiKey`/`apiBaseUrl`, else `ANTHROPIC_API_KEY`/
    /// `ANTHROPIC_BASE_URL`; `max_tokens` and `temperature` from the config,
    /// else `ANTHROPIC_MAX_TOKENS`/`ANTHROPIC_TEMPERATURE` (the host's
    /// request then fills promptfoo's defaults, 1024 and 0). What evalhost
    /// does not send as promptfoo does is refused by name.
    pub(super) fn anthropic_provider(
        &mut self,
        id: &str,
        rest: &str,
        (written, config): (&Map<String, Value>, &Map<String, Value>),
        at: &KeyPath,
        renderer: &Renderer,
    ) -> Option<Map<String, Value>> {
        let model = match rest.split_once(':') {
            Some(("messages", model)) if !model.is_empty() => model,
            Some(("completion", _)) => {
                self.error(at, format!("`{id}`: Anthropic's legacy Text Completions API, which this version of evalhost does not call"))
                    .hint = Some("use `anthropic:messages:<model>`".into());
                return None;
            }
            None if ANTHROPIC_MODELS.contains(&rest) => rest,
            // promptfoo 0.121 refuses a model its list lacks; 0.123 (npm's
            // latest) warns and calls the Messages API with it. evalhost
            // follows the latest, and says so (docs/dialects.md).
            None if !rest.is_empty() => {
                self.warning(at, format!("`{id}`: `{rest}` is not a model promptfoo 0.121 lists (0.121 refuses it); promptfoo 0.123 calls the Messages API with it, and so does evalhost"))
                    .hint = Some("write `anthropic:messages:<model>` to say it plainly".into());
                rest
            }
            _ => {
                self.error(at, format!("`{id}`: promptfoo knows no such Anthropic model or API (\"Unknown Anthropic model type or model name\")"))
                    .hint = Some("write `anthropic:messages:<model>`, or `anthropic:<model>` with a model promptfoo 0.121 lists (claude-sonnet-4-5, claude-3-5-haiku-latest, …)".into());
                return None;
            }
        };
        let env = |name: &str| renderer.env_value(name);
        let mut entry = Map::new();
        entry.insert("provider".into(), "anthropic".into());
        entry.insert("model".into(), model.into());
        let base_url = config
            .get("apiBaseUrl")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| env("ANTHROPIC_BASE_URL"))
            .unwrap_or_else(|| "https://api.anthropic.com".to_owned());
        entry.insert("base_url".into(), base_url.into());
        if let Some(key) = config.get("apiKey").and_then(Value::as_str) {
            if !written
                .get("apiKey")
                .and_then(Value::as_str)
                .is_some_and(|k| k.contains("{{"))
            {
                self.warning(at, "`config.apiKey` is written in the config; evalhost uses it, but keep keys in the environment (`ANTHROPIC_API_KEY`, or `{{ env.NAME }}`)");
            }
            entry.insert("api_key".into(), key.into());
        } else if let Some(key) = env("ANTHROPIC_API_KEY") {
            entry.insert("api_key".into(), key.into());
        }
        entry.insert("output_style".into(), "promptfoo".into());
        let mut params = Map::new();
        for (from, var) in [
            ("max_tokens", "ANTHROPIC_MAX_TOKENS"),
            ("temperature", "ANTHROPIC_TEMPERATURE"),
        ] {
            if let Some(n) = env(var).and_then(|v| v.trim().parse::<f64>().ok())
                && !config.contains_key(from)
            {
                let n = if from == "max_tokens" {
                    serde_json::json!(n.trunc() as i64)
                } else {
                    serde_json::json!(n)
                };
                params.insert(from.into(), n);
            }
        }
        if let Some(pricing) = self.anthropic_pricing(model, config, at) {
            entry.insert("pricing".into(), pricing);
        }
        for (k, v) in config {
            let kat = at.key("config").key(k);
            match k.as_str() {
                "apiKey" | "apiBaseUrl" | "cost" | "inputCost" | "outputCost" => {}
                "showThinking" => {
                    entry.insert(
                        "show_thinking".into(),
                        Value::Bool(v.as_bool() != Some(false)),
                    );
                }
                "temperature" | "max_tokens" | "top_p" | "top_k" | "stop_sequences"
                | "metadata" | "tools" | "tool_choice" | "extra_body" | "cache_control"
                | "service_tier" | "thinking" | "effort" | "output_format" => {
                    // A JSON or YAML file for a schema or tools, as
                    // promptfoo loads it.
                    let loaded;
                    let v = if let Value::String(s) = v
                        && let Some(rel) = s.strip_prefix("file://")
                    {
                        if !matches!(k.as_str(), "output_format" | "tools")
                            || !(rel.ends_with(".json")
                                || rel.ends_with(".yaml")
                                || rel.ends_with(".yml"))
                        {
                            self.error(&kat, format!("`config.{k}: {s}`: a file here is not read by this version of evalhost; write it inline"));
                            continue;
                        }
                        let read = if k == "output_format" {
                            self.response_format(v, &kat)
                        } else {
                            self.structured_file(rel, &kat)
                        };
                        let Some(value) = read else {
                            continue;
                        };
                        loaded = value;
                        &loaded
                    } else if k == "output_format" {
                        // Inline, with its `schema` perhaps a file
                        // (`maybeLoadResponseFormatFromExternalFile`).
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
                    if k == "tools" || k == "tool_choice" {
                        // promptfoo converts OpenAI-shaped tools for
                        // Anthropic (`transformTools`); evalhost sends them
                        // as written, so only Anthropic's own shape is sent.
                        let openai_shaped = match v {
                            Value::Array(items) => items.iter().any(|t| {
                                t.get("function").is_some()
                                    || t.get("type").and_then(Value::as_str) == Some("function")
                            }),
                            Value::Object(o) => {
                                o.get("function").is_some()
                                    || o.get("type").and_then(Value::as_str) == Some("function")
                            }
                            _ => false,
                        };
                        if openai_shaped {
                            self.error(&kat, format!("`config.{k}` is written in OpenAI's shape, which promptfoo converts for Anthropic; this version of evalhost does not convert it"))
                                .hint = Some("write Anthropic's shape: `{name, description, input_schema}` (tool_choice `{type: auto|any|tool}`)".into());
                            continue;
                        }
                    }
                    params.insert(k.clone(), v.clone());
                }
                // promptfoo's Anthropic provider builds its request from the
                // keys it knows and ignores the rest (a test's `options`
                // merged into the config included): so does evalhost, said.
                // A field promptfoo reads that evalhost does not send: refused,
                // never dropped quietly.
                other if PROMPTFOO_ANTHROPIC_READS.contains(&other) => {
                    self.error(&kat, format!("`config.{other}` of an Anthropic provider is not read by this version of evalhost"))
                        .hint = Some("evalhost sends temperature, max_tokens, top_p, top_k, stop_sequences, metadata, tools, tool_choice, thinking, cache_control, service_tier and extra_body as promptfoo does".into());
                }
                other => {
                    self.warning(&kat, format!("`config.{other}` is not an Anthropic request field: promptfoo does not send it, and neither does evalhost"))
                        .hint = Some("evalhost sends temperature, max_tokens, top_p, top_k, stop_sequences, metadata, tools, tool_choice, thinking, cache_control, service_tier and extra_body as promptfoo does".into());
                }
            }
        }
        if !params.is_empty() {
            entry.insert("request_params".into(), Value::Object(params));
        }
        Some(entry)
    }
}

impl Reader {
    /// How promptfoo prices a reply of `model` (`calculateAnthropicCost`):
    /// a model its table lists, at the config's `inputCost`/`outputCost`/
    /// `cost` (USD per token) else the table's; cache reads at a tenth of
    /// the input price (a fortieth for Fable/Mythos 5.1), cache writes at
    /// 1.25 times, unless a flat `cost` alone is given. A model the table
    /// does not list has no cost, whatever the config says.
    fn anthropic_pricing(
        &mut self,
        model: &str,
        config: &Map<String, Value>,
        at: &KeyPath,
    ) -> Option<Value> {
        let mut rate = |k: &str| match config.get(k) {
            None | Some(Value::Null) => Some(None),
            Some(Value::Number(n)) => Some(n.as_f64()),
            Some(other) => {
                self.error(
                    &at.key("config").key(k),
                    format!("`config.{k}` must be a number, USD per token (got {other})"),
                );
                None
            }
        };
        let (cost, input, output) = (rate("cost")?, rate("inputCost")?, rate("outputCost")?);
        let normalized = normalize_anthropic_model(model);
        if normalized != model {
            self.warning(at, format!("`{model}`: promptfoo prices a regional model name with a premium evalhost does not compute; its rows have no cost, and a `cost` assertion on them is an error"));
            return None;
        }
        let (_, listed_in, listed_out) = super::anthropic_prices::ANTHROPIC_PRICES
            .iter()
            .find(|(m, ..)| *m == model)?;
        let flat = cost.is_some() && input.is_none() && output.is_none();
        let mut pricing = serde_json::json!({
            "input_per_token": input.or(cost).unwrap_or(*listed_in),
            "output_per_token": output.or(cost).unwrap_or(*listed_out),
        });
        if !flat {
            let fable_51 = ["claude-fable-5-1", "claude-mythos-5-1"]
                .iter()
                .any(|f| model.to_ascii_lowercase().contains(f));
            pricing["cache_read_factor"] = serde_json::json!(if fable_51 { 0.025 } else { 0.1 });
            pricing["cache_write_factor"] = serde_json::json!(1.25);
        }
        Some(pricing)
    }
}

/// promptfoo's `normalizeAnthropicModelName`: a Bedrock-style
/// `[region.]anthropic.` prefix removed.
fn normalize_anthropic_model(model: &str) -> &str {
    let rest = ["global.", "us.", "eu.", "jp.", "au."]
        .iter()
        .find_map(|r| model.strip_prefix(r))
        .filter(|r| r.starts_with("anthropic."))
        .unwrap_or(model);
    rest.strip_prefix("anthropic.").unwrap_or(model)
}

/// The config keys promptfoo 0.121's Anthropic Messages provider reads,
/// from its code (and its cost: `cost`, `inputCost`, `outputCost`): one
/// evalhost does not handle is refused; any other key promptfoo ignores,
/// and so does evalhost, with a warning.
const PROMPTFOO_ANTHROPIC_READS: &[&str] = &[
    "apiBaseUrl",
    "apiKey",
    "apiKeyRequired",
    "beta",
    "cache_control",
    "cost",
    "effort",
    "extra_body",
    "headers",
    "inputCost",
    "max_tokens",
    "max_tool_calls",
    "mcp",
    "metadata",
    "output_format",
    "outputCost",
    "service_tier",
    "showThinking",
    "stop_sequences",
    "stream",
    "temperature",
    "thinking",
    "tool_choice",
    "tools",
    "top_k",
    "top_p",
];

/// The models promptfoo 0.121.20's `anthropic:<model>` shorthand knows
/// (`ANTHROPIC_MODELS` of `src/providers/anthropic/util.ts`, less the
/// Text Completions ones).
const ANTHROPIC_MODELS: &[&str] = &[
    "claude-fable-5",
    "claude-mythos-5",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-mythos-preview",
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-sonnet-4-6",
    "claude-sonnet-4-6-latest",
    "claude-opus-4-6",
    "claude-opus-4-6-latest",
    "claude-opus-4-5",
    "claude-opus-4-5-20251101",
    "claude-opus-4-5-latest",
    "claude-opus-4-1",
    "claude-opus-4-1-20250805",
    "claude-opus-4-20250514",
    "claude-opus-4-0",
    "claude-opus-4-latest",
    "claude-sonnet-4-5",
    "claude-sonnet-4-5-20250929",
    "claude-sonnet-4-5-latest",
    "claude-sonnet-4-20250514",
    "claude-sonnet-4-0",
    "claude-sonnet-4-latest",
    "claude-haiku-4-5",
    "claude-haiku-4-5-20251001",
    "claude-haiku-4-5-latest",
    "claude-3-haiku-20240307",
    "claude-3-haiku-latest",
    "claude-3-opus-20240229",
    "claude-3-opus-latest",
    "claude-3-5-haiku-20241022",
    "claude-3-5-haiku-latest",
    "claude-3-5-sonnet-20240620",
    "claude-3-5-sonnet-20241022",
    "claude-3-5-sonnet-latest",
    "claude-3-7-sonnet-20250219",
    "claude-3-7-sonnet-latest",
];
