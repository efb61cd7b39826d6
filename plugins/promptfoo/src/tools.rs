//! `is-valid-openai-tools-call` and `is-valid-openai-function-call` /
//! `is-valid-function-call` as promptfoo 0.121 grades them
//! (`src/assertions/openai.ts`, `functionToolCall.ts`,
//! `src/providers/openai/util.ts` `validateFunctionCall`): the output must
//! be OpenAI's tool-call (or function-call) shape, and each call's
//! arguments must match the `parameters` schema of the function of that
//! name in the provider's `config.tools` (`config.functions`), checked by
//! ajv as promptfoo's `getAjv()` checks it ([`crate::schema`]).
//!
//! The provider is handed over by the suite reader under the host-owned
//! key `__provider`: `{kind, tools?, functions?}`, its `tools` and
//! `functions` rendered with the test's vars and loaded from their files.
//! promptfoo reads the provider's raw output, which is an object for an
//! OpenAI reply with tool calls and may be for script and HTTP providers;
//! evalhost's targets give its JSON text, read back here. `not-` is
//! ignored, as promptfoo's handlers ignore it.

use evalhost_plugin_sdk::{Config, Grade, GradeError, Request, Value};

use crate::{js, schema};

fn provider(config: &Config) -> Option<&serde_json::Map<String, Value>> {
    config.get("__provider").and_then(Value::as_object)
}

/// The suite reader must have named the provider.
pub fn check_config(config: &Config) -> Result<(), String> {
    match provider(config) {
        Some(p) if p.get("kind").is_some_and(Value::is_string) => Ok(()),
        _ => Err("needs the provider the test runs on (`__provider`, which evalhost's promptfoo reader adds)".into()),
    }
}

fn kind(config: &Config) -> &str {
    provider(config)
        .and_then(|p| p.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or("echo")
}

/// The output as promptfoo's handler sees it: an object or array where
/// promptfoo's provider returns one, else the text.
fn output_value(config: &Config, request: &Request) -> Value {
    let text = &request.output;
    let structured = || match js::json_parse(text) {
        Some(v @ (Value::Object(_) | Value::Array(_))) => Some(v),
        _ => None,
    };
    let parsed = match kind(config) {
        // promptfoo's OpenAI chat provider returns the message (content
        // and calls), the calls or the function call as an object, which
        // evalhost's target writes as JSON.
        "openai" => {
            let calls = request
                .output_messages
                .iter()
                .any(|m| m.role == "assistant" && !m.tool_calls.is_empty());
            let reason = request.finish_reason().map(|r| r.trim().to_lowercase());
            if calls || matches!(reason.as_deref(), Some("tool_calls" | "function_call")) {
                structured()
            } else {
                None
            }
        }
        "script" | "http" => structured(),
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::String(text.clone()))
}

fn fail(reason: String) -> Grade {
    crate::judged(false, 0.0, reason)
}

fn pass(reason: String) -> Grade {
    crate::judged(true, 1.0, reason)
}

/// `JSON.stringify(x)` for a value that may be `undefined`.
fn stringify(v: Option<&Value>) -> String {
    v.map_or_else(|| "undefined".into(), js::stringify)
}

/// A JavaScript `typeof x === "string"` on a property.
fn str_prop<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `is-valid-openai-tools-call`.
pub fn tools_call(config: &Config, request: &Request) -> Result<Grade, GradeError> {
    let output = output_value(config, request);
    let output_str = match &output {
        Value::String(s) => s.clone(),
        other => js::stringify(other),
    };
    if output_str.contains("MCP Tool Result") || output_str.contains("MCP Tool Error") {
        if output_str.contains("MCP Tool Error") {
            let re = regress::Regex::new(r"MCP Tool Error \(([^)]+)\): (.+)").expect("pattern");
            let (name, message) = match re.find(&output_str) {
                Some(m) => (
                    m.group(1).map_or("unknown", |r| &output_str[r]).to_owned(),
                    m.group(2).map_or("unknown", |r| &output_str[r]).to_owned(),
                ),
                None => ("unknown".to_owned(), "unknown error".to_owned()),
            };
            return Ok(fail(format!("MCP tool call failed for {name}: {message}")));
        }
        let re = regress::Regex::new(r"MCP Tool Result \(([^)]+)\):").expect("pattern");
        let name = re
            .find(&output_str)
            .and_then(|m| m.group(1))
            .map_or("unknown", |r| &output_str[r])
            .to_owned();
        return Ok(pass(format!("MCP tool call succeeded for {name}")));
    }
    let calls = match &output {
        Value::Object(o) if o.contains_key("tool_calls") => o["tool_calls"].clone(),
        other => other.clone(),
    };
    let well_formed = match &calls {
        Value::Array(items) => {
            !items.is_empty()
                && items.iter().all(|c| {
                    let f = c.get("function");
                    f.and_then(|f| str_prop(f, "name")).is_some()
                        && f.and_then(|f| str_prop(f, "arguments")).is_some()
                })
        }
        _ => false,
    };
    if !well_formed {
        return Ok(fail(format!(
            "OpenAI did not return a valid-looking tools response: {}",
            js::stringify(&calls)
        )));
    }
    let tools = provider(config).and_then(|p| p.get("tools")).cloned();
    let Some(tools) = tools.filter(crate::is_json::truthy) else {
        return Ok(fail(
            "No tools configured in provider, but output contains tool calls".into(),
        ));
    };
    let Value::Array(tool_list) = &tools else {
        return Ok(fail("tools.filter is not a function".into()));
    };
    let mut functions = Vec::new();
    for t in tool_list {
        if t.is_null() {
            return Ok(fail(
                "Cannot read properties of null (reading 'type')".into(),
            ));
        }
        if t.get("type").and_then(Value::as_str) == Some("function")
            && let Some(f) = t.get("function")
        {
            functions.push(f.clone());
        }
    }
    let functions = Value::Array(functions);
    for call in calls.as_array().into_iter().flatten() {
        if let Err(e) = validate_function_call(call.get("function"), Some(&functions)) {
            return Ok(fail(e));
        }
    }
    Ok(pass("Assertion passed".into()))
}

/// `is-valid-openai-function-call` and `is-valid-function-call`: only
/// promptfoo's OpenAI chat provider can check them.
pub fn function_call(config: &Config, request: &Request) -> Result<Grade, GradeError> {
    if kind(config) != "openai" {
        return Ok(fail(
            "Provider does not have functionality for checking function call.".into(),
        ));
    }
    let output = output_value(config, request);
    let functions = provider(config).and_then(|p| p.get("functions")).cloned();
    Ok(
        match validate_function_call(Some(&output), functions.as_ref()) {
            Ok(()) => pass("Assertion passed".into()),
            Err(e) => fail(e),
        },
    )
}

/// promptfoo's `validateFunctionCall`: the error it throws, if any.
fn validate_function_call(output: Option<&Value>, functions: Option<&Value>) -> Result<(), String> {
    let call = match output {
        Some(Value::Null) => {
            return Err("Cannot use 'in' operator to search for 'function_call' in null".into());
        }
        Some(Value::Object(o)) if o.contains_key("function_call") => o.get("function_call"),
        other => other,
    };
    let (name, arguments) = match call {
        Some(Value::Null) => return Err("Cannot read properties of null (reading 'name')".into()),
        Some(c @ (Value::Object(_) | Value::Array(_))) => {
            (str_prop(c, "name"), str_prop(c, "arguments"))
        }
        _ => (None, None),
    };
    let (Some(name), Some(arguments)) = (name, arguments) else {
        return Err(format!(
            "OpenAI did not return a valid-looking function call: {}",
            stringify(call)
        ));
    };
    let Some(args) = js::json_parse(arguments) else {
        return Err(json_parse_error(arguments));
    };
    let schema = match functions {
        None | Some(Value::Null) => None,
        Some(Value::Array(fs)) => {
            let mut found = None;
            for f in fs {
                if f.is_null() {
                    return Err("Cannot read properties of null (reading 'name')".into());
                }
                if f.get("name").and_then(Value::as_str) == Some(name) {
                    found = f.get("parameters");
                    break;
                }
            }
            found
        }
        Some(_) => return Err("interpolatedFunctions?.find is not a function".into()),
    };
    let Some(schema) = schema.filter(|s| crate::is_json::truthy(s)) else {
        return Err(format!(
            "Called \"{name}\", but there is no function with that name"
        ));
    };
    let validator = schema::compile(schema)?;
    validator.validate(&args).map_err(|errors| {
        format!(
            "Call to \"{name}\" does not match schema: {}",
            schema::errors_json(&errors)
        )
    })
}

/// What `JSON.parse` throws on text that is not JSON. V8's exact wording
/// (which token, where) is not reproduced; the oracle counts these apart.
pub fn json_parse_error(text: &str) -> String {
    // The text ends where more JSON was due: V8 says so in these words.
    let ended = serde_json::from_str::<Value>(text)
        .err()
        .is_some_and(|e| e.classify() == serde_json::error::Category::Eof);
    if js::trim(text).is_empty() || ended {
        return "Unexpected end of JSON input".into();
    }
    format!("{JSON_PARSE_MARK}{text:?} is not valid JSON")
}

/// The start of [`json_parse_error`]'s text for a non-empty input.
pub const JSON_PARSE_MARK: &str = "JSON.parse: ";
