//! What a grader receives: the case as the host sees it, and the assertion's
//! config.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::__private::bindings::evalhost::grader::types as wit;

/// An assertion's config: the JSON object of every key the suite gave the
/// assertion except the host's own (`type`, `name`, `weight`, `required`,
/// `min_score`, `negate`).
///
/// The typed getters return messages that name the key, ready to return from
/// [`Grader::check_config`](crate::Grader::check_config).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    map: Map<String, Value>,
}

impl Config {
    /// Parses a config from JSON; it must be an object.
    pub fn from_json(json: &str) -> Result<Self, String> {
        match serde_json::from_str::<Value>(json) {
            Ok(value) => Self::from_value(value),
            Err(err) => Err(format!("config is not valid JSON: {err}")),
        }
    }

    /// Wraps a JSON value; it must be an object (or null, for no config).
    pub fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Object(map) => Ok(Self { map }),
            Value::Null => Ok(Self::default()),
            other => Err(format!(
                "config must be an object, got {}",
                describe(&other)
            )),
        }
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key)
    }

    /// The whole config as a JSON object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.map
    }

    /// Deserializes the whole config into `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_value(Value::Object(self.map.clone())).map_err(|err| err.to_string())
    }

    /// A required, non-empty string. A number or boolean is refused rather
    /// than converted: `value: 42` in YAML is a number, and the fix is to
    /// quote it.
    pub fn required_str(&self, key: &str) -> Result<&str, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Err(format!("missing `{key}` (a non-empty string)")),
            Some(Value::String(s)) if s.is_empty() => {
                Err(format!("`{key}` is empty; it must be a non-empty string"))
            }
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "`{key}` must be a string, got {}{}",
                describe(other),
                quote_hint(other)
            )),
        }
    }

    /// An optional string.
    pub fn optional_str(&self, key: &str) -> Result<Option<&str>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "`{key}` must be a string, got {}{}",
                describe(other),
                quote_hint(other)
            )),
        }
    }

    /// A required, non-empty array of non-empty strings.
    pub fn required_str_list(&self, key: &str) -> Result<Vec<&str>, String> {
        let items = match self.map.get(key) {
            None | Some(Value::Null) => {
                return Err(format!("missing `{key}` (a non-empty list of strings)"));
            }
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(format!(
                    "`{key}` must be a list of strings, got {}",
                    describe(other)
                ));
            }
        };
        if items.is_empty() {
            return Err(format!(
                "`{key}` is an empty list; give at least one string"
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) if !s.is_empty() => Ok(s.as_str()),
                Value::String(_) => Err(format!("`{key}[{i}]` is an empty string")),
                other => Err(format!(
                    "`{key}[{i}]` must be a string, got {}{}",
                    describe(other),
                    quote_hint(other)
                )),
            })
            .collect()
    }

    /// An optional non-negative integer.
    pub fn optional_u64(&self, key: &str) -> Result<Option<u64>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(other) => Err(format!(
                "`{key}` must be a non-negative integer, got {}",
                describe(other)
            )),
        }
    }

    /// An optional finite number.
    pub fn optional_f64(&self, key: &str) -> Result<Option<f64>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(format!("`{key}` must be a number, got {}", describe(other))),
        }
    }

    /// An optional boolean.
    pub fn optional_bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!(
                "`{key}` must be true or false, got {}",
                describe(other)
            )),
        }
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn quote_hint(value: &Value) -> String {
    match value {
        Value::Number(n) => format!(" (quote it: \"{n}\")"),
        Value::Bool(b) => format!(" (quote it: \"{b}\")"),
        _ => String::new(),
    }
}

/// One tool call an agent made.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The id the agent gave the call.
    pub id: Option<String>,
    /// The tool's name.
    pub tool: String,
    /// The call's input.
    pub input: Option<Value>,
    /// The call's output.
    pub output: Option<Value>,
    /// The status the agent reported.
    pub status: Option<String>,
    /// How long the call took, in milliseconds.
    pub duration_ms: Option<u64>,
}

/// One message of a conversation.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The message's text.
    pub content: String,
    /// The structured content, when it was not plain text.
    pub content_json: Option<Value>,
    /// Tool calls made in this message.
    pub tool_calls: Vec<ToolCall>,
    /// The tool or participant name.
    pub name: Option<String>,
}

impl Message {
    /// A message with a role and text.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
            ..Self::default()
        }
    }
    /// The message with these tool calls (for tests).
    #[must_use]
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// The message with structured content (for tests).
    #[must_use]
    pub fn with_content_json(mut self, content: Value) -> Self {
        self.content_json = Some(content);
        self
    }
}

impl ToolCall {
    /// A call of `tool` with no input (for tests).
    pub fn new(tool: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            ..Self::default()
        }
    }

    /// The call with this input.
    #[must_use]
    pub fn with_input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }

    /// The call with this output.
    #[must_use]
    pub fn with_output(mut self, output: Value) -> Self {
        self.output = Some(output);
        self
    }

    /// The call with this duration.
    #[must_use]
    pub fn with_duration_ms(mut self, ms: u64) -> Self {
        self.duration_ms = Some(ms);
        self
    }
}

impl TokenUsage {
    /// Token counts (for tests).
    pub fn new(input: u64, output: u64, cached: u64) -> Self {
        Self {
            input,
            output,
            cached,
            reasoning: 0,
        }
    }
}

/// Tokens a target reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Cached prompt tokens.
    pub cached: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
}

/// What the host knows about how the target produced its output. A grader
/// that needs a missing field must fail with the reason, never pass.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Trace {
    /// Tokens used.
    pub token_usage: Option<TokenUsage>,
    /// Cost in US dollars.
    pub cost_usd: Option<f64>,
    /// Time the target took, in milliseconds.
    pub duration_ms: Option<u64>,
    /// Number of model calls.
    pub llm_calls: Option<u32>,
    /// A unified diff of the workspace changes.
    pub file_changes: Option<String>,
}

/// The case as the host sees it, plus the assertion being graded.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Request {
    /// The assertion type, kebab-case, without a `not-` prefix (the host
    /// applies negation).
    pub assertion_type: String,
    /// The assertion's config.
    pub config: Config,
    /// The test id.
    pub test_id: String,
    /// The candidate: the text of the target's last assistant message.
    pub output: String,
    /// Every message the target produced.
    pub output_messages: Vec<Message>,
    /// The input messages sent to the target.
    pub input: Vec<Message>,
    /// The expected output as text.
    pub expected_output: Option<String>,
    /// The expected output messages.
    pub expected_messages: Vec<Message>,
    /// The case's criteria.
    pub criteria: Option<String>,
    /// The case's metadata (a JSON object).
    pub metadata: Value,
    /// What the target reported about its run.
    pub trace: Trace,
    /// Where the case workspace is mounted, when granted.
    pub workspace_path: Option<String>,
    /// What native tests set for [`Request::finish_reason`] and
    /// [`Request::logprobs`] (a wasm build asks the host instead).
    response: Reported,
}

/// A finish reason and log-probabilities set by a native test.
#[derive(Debug, Clone, Default, PartialEq)]
struct Reported {
    finish_reason: Option<String>,
    logprobs: Option<Vec<f64>>,
    output_json: Option<Value>,
}

impl Request {
    /// A request for `assertion_type` grading `output`, with an empty config:
    /// the starting point for native unit tests of a grader.
    pub fn new(assertion_type: impl Into<String>, output: impl Into<String>) -> Self {
        Self {
            assertion_type: assertion_type.into(),
            output: output.into(),
            test_id: "test".into(),
            metadata: Value::Object(Map::new()),
            ..Self::default()
        }
    }

    /// Sets the config from a JSON object.
    ///
    /// # Panics
    /// When `config` is not an object: this builder is for tests.
    #[must_use]
    pub fn with_config(mut self, config: Value) -> Self {
        self.config = Config::from_value(config).expect("config must be a JSON object");
        self
    }

    /// Sets the expected output.
    #[must_use]
    pub fn with_expected_output(mut self, expected: impl Into<String>) -> Self {
        self.expected_output = Some(expected.into());
        self
    }

    /// Sets the criteria.
    #[must_use]
    pub fn with_criteria(mut self, criteria: impl Into<String>) -> Self {
        self.criteria = Some(criteria.into());
        self
    }

    /// Sets the trace.
    #[must_use]
    pub fn with_trace(mut self, trace: Trace) -> Self {
        self.trace = trace;
        self
    }

    /// Sets the output messages (the target's transcript, with tool calls).
    #[must_use]
    pub fn with_output_messages(mut self, messages: Vec<Message>) -> Self {
        self.output_messages = messages;
        self
    }

    /// Sets the finish reason the target reported (native tests; a wasm
    /// build reads it from the host).
    #[must_use]
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.response.finish_reason = Some(reason.into());
        self
    }

    /// Sets the output tokens' log-probabilities (native tests; a wasm build
    /// reads them from the host).
    #[must_use]
    pub fn with_logprobs(mut self, logprobs: Vec<f64>) -> Self {
        self.response.logprobs = Some(logprobs);
        self
    }

    /// Sets the structured output (native tests; a wasm build reads it from
    /// the host).
    #[must_use]
    pub fn with_output_json(mut self, value: Value) -> Self {
        self.response.output_json = Some(value);
        self
    }

    /// The output as a JSON value, when the target (or a transform of its
    /// output) produced a structured value rather than text; `output` is
    /// then its JSON text. Asks the host each time it is called.
    pub fn output_json(&self) -> Option<Value> {
        #[cfg(target_arch = "wasm32")]
        {
            crate::__private::bindings::evalhost::grader::response::output_json()
                .and_then(|text| serde_json::from_str(&text).ok())
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.response.output_json.clone()
        }
    }

    /// Why the model stopped (`stop`, `length`, `tool_calls`, `end_turn`...),
    /// as the target reported it, not normalised; `None` when it did not
    /// say. Asks the host (the `response` interface) each time it is called:
    /// a plugin that never calls it does not import that interface.
    pub fn finish_reason(&self) -> Option<String> {
        #[cfg(target_arch = "wasm32")]
        {
            crate::__private::bindings::evalhost::grader::response::finish_reason()
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.response.finish_reason.clone()
        }
    }

    /// The log-probability of each output token, when the target returned
    /// them. Asks the host each time it is called, like
    /// [`Request::finish_reason`].
    pub fn logprobs(&self) -> Option<Vec<f64>> {
        #[cfg(target_arch = "wasm32")]
        {
            crate::__private::bindings::evalhost::grader::response::logprobs()
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.response.logprobs.clone()
        }
    }

    /// Sets the expected output messages.
    #[must_use]
    pub fn with_expected_messages(mut self, messages: Vec<Message>) -> Self {
        self.expected_messages = messages;
        self
    }

    pub(crate) fn from_wit(request: wit::GradeRequest) -> Result<Self, String> {
        Ok(Self {
            assertion_type: request.assertion_type,
            config: Config::from_json(&request.config_json)?,
            test_id: request.test_id,
            output: request.output,
            output_messages: request
                .output_messages
                .into_iter()
                .map(message_from_wit)
                .collect(),
            input: request.input.into_iter().map(message_from_wit).collect(),
            expected_output: request.expected_output,
            expected_messages: request
                .expected_messages
                .into_iter()
                .map(message_from_wit)
                .collect(),
            criteria: request.criteria,
            metadata: serde_json::from_str(&request.metadata_json).unwrap_or(Value::Null),
            trace: Trace {
                token_usage: request.trace.token_usage.map(|t| TokenUsage {
                    input: t.input,
                    output: t.output,
                    cached: t.cached,
                    reasoning: t.reasoning,
                }),
                cost_usd: request.trace.cost_usd,
                duration_ms: request.trace.duration_ms,
                llm_calls: request.trace.llm_calls,
                file_changes: request.trace.file_changes,
            },
            workspace_path: request.workspace_path,
            response: Reported::default(),
        })
    }
}

fn json_field(json: Option<String>) -> Option<Value> {
    json.map(|s| serde_json::from_str(&s).unwrap_or(Value::String(s)))
}

fn message_from_wit(message: wit::Message) -> Message {
    Message {
        role: message.role,
        content: message.content,
        content_json: json_field(message.content_json),
        tool_calls: message
            .tool_calls
            .into_iter()
            .map(|call| ToolCall {
                id: call.id,
                tool: call.tool,
                input: json_field(call.input_json),
                output: json_field(call.output_json),
                status: call.status,
                duration_ms: call.duration_ms,
            })
            .collect(),
        name: message.name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_str_refuses_numbers_with_a_quote_hint() {
        let config = Config::from_value(json!({"value": 42})).unwrap();
        let err = config.required_str("value").unwrap_err();
        assert_eq!(
            err,
            "`value` must be a string, got number 42 (quote it: \"42\")"
        );
    }

    #[test]
    fn required_str_list_names_the_bad_index() {
        let config = Config::from_value(json!({"value": ["a", 3]})).unwrap();
        let err = config.required_str_list("value").unwrap_err();
        assert!(err.starts_with("`value[1]` must be a string"), "{err}");
        let empty = Config::from_value(json!({"value": []})).unwrap();
        assert!(
            empty
                .required_str_list("value")
                .unwrap_err()
                .contains("empty list")
        );
    }

    #[test]
    fn config_must_be_an_object() {
        assert!(
            Config::from_json("[1]")
                .unwrap_err()
                .contains("must be an object")
        );
        assert!(Config::from_json("null").unwrap().as_map().is_empty());
    }
}
