//! The `http` target: promptfoo's HTTP provider for any JSON or text API.
//!
//! Settings: `url`, `method` (default `GET`, as promptfoo's), `headers`, `body` (a JSON
//! value whose strings, or a string, are Nunjucks templates over the test's
//! vars and `prompt`; the URL and header values are templates too),
//! `transform_response` (how the output is taken from the answer) and
//! `timeout_seconds` (default 120). A 2xx answer is parsed as JSON when it
//! is JSON; without a transform the output is the JSON (its text, or the
//! string itself) or else the raw text, as promptfoo takes `data || text`.
//!
//! `transform_response` is promptfoo's JavaScript expression over `json` and
//! `text`; evalhost evaluates the expressions that are property paths —
//! `json.choices[0].message.content`, `json["a-b"].c`, `text` — and refuses
//! the others when the suite is read (they need the JavaScript sandbox).
//! 429 and 5xx answers are retried by the target's retry policy.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{Invocation, TargetFailure, TargetOutput};
use crate::suite::TestCase;

/// One step of a response path.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `.name` or `["name"]`.
    Key(String),
    /// `[n]`.
    Index(usize),
}

/// What the output is taken from.
#[derive(Debug, Clone, PartialEq)]
pub enum Transform {
    /// The parsed JSON, else the text.
    Default,
    /// The raw text (`text`).
    Text,
    /// A path into the parsed JSON (`json.a[0].b`).
    Json(Vec<Step>),
}

impl Transform {
    /// Parses promptfoo's `transformResponse` when it is a property path.
    pub fn parse(expr: &str) -> Result<Self, String> {
        let e = expr.trim();
        if e == "text" {
            return Ok(Self::Text);
        }
        let Some(rest) = e.strip_prefix("json") else {
            return Err(not_a_path(expr));
        };
        let mut steps = Vec::new();
        let chars: Vec<char> = rest.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    let start = i + 1;
                    let mut j = start;
                    while j < chars.len()
                        && (chars[j].is_alphanumeric() || chars[j] == '_' || chars[j] == '$')
                    {
                        j += 1;
                    }
                    if j == start || chars[start].is_ascii_digit() {
                        return Err(not_a_path(expr));
                    }
                    steps.push(Step::Key(chars[start..j].iter().collect()));
                    i = j;
                }
                '[' => {
                    let close = chars[i..]
                        .iter()
                        .position(|c| *c == ']')
                        .map(|p| p + i)
                        .ok_or_else(|| not_a_path(expr))?;
                    let inner: String = chars[i + 1..close].iter().collect();
                    let inner = inner.trim();
                    if let Ok(n) = inner.parse::<usize>() {
                        steps.push(Step::Index(n));
                    } else if inner.len() >= 2
                        && ((inner.starts_with('"') && inner.ends_with('"'))
                            || (inner.starts_with('\'') && inner.ends_with('\'')))
                        && !inner[1..inner.len() - 1].contains(['"', '\'', '\\'])
                    {
                        steps.push(Step::Key(inner[1..inner.len() - 1].to_owned()));
                    } else {
                        return Err(not_a_path(expr));
                    }
                    i = close + 1;
                }
                _ => return Err(not_a_path(expr)),
            }
        }
        Ok(Self::Json(steps))
    }
}

fn not_a_path(expr: &str) -> String {
    format!(
        "`transformResponse: {expr}` is JavaScript beyond a property path (`json.a.b[0]`, `text`), which needs the JavaScript sandbox this version of evalhost does not have yet"
    )
}

/// An HTTP provider's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// URL template.
    pub url: String,
    /// Method.
    pub method: String,
    /// Header templates.
    pub headers: Vec<(String, String)>,
    /// Body template.
    pub body: Option<Value>,
    /// How the output is taken from the answer.
    pub transform: Transform,
    /// Request timeout.
    pub timeout: Duration,
}

impl HttpConfig {
    /// Reads an `http` entry.
    pub fn parse(entry: &Map<String, Value>) -> Result<Self, (String, String)> {
        let url = entry
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                (
                    "url".to_owned(),
                    "an `http` target needs a `url`".to_owned(),
                )
            })?
            .to_owned();
        let method = entry
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("GET")
            .to_ascii_uppercase();
        if !matches!(method.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
            return Err((
                "method".into(),
                format!("`method` must be GET, POST, PUT, PATCH or DELETE, got {method}"),
            ));
        }
        let mut headers = Vec::new();
        match entry.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(h)) => {
                for (k, v) in h {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    headers.push((k.clone(), v));
                }
            }
            Some(_) => return Err(("headers".into(), "`headers` must be a mapping".into())),
        }
        let body = entry.get("body").filter(|b| !b.is_null()).cloned();
        if body.is_none() && method != "GET" {
            return Err((
                "body".into(),
                format!(
                    "an `http` target with method {method} needs a `body` (promptfoo requires it)"
                ),
            ));
        }
        if body.is_some() && method == "GET" {
            return Err((
                "method".into(),
                "this `http` target has a `body` but no `method`, so it sends GET, as promptfoo does, and the body is never sent; write `method: POST`".into(),
            ));
        }
        let transform = match entry.get("transform_response") {
            None | Some(Value::Null) => Transform::Default,
            Some(Value::String(e)) => {
                Transform::parse(e).map_err(|m| ("transform_response".to_owned(), m))?
            }
            Some(_) => {
                return Err((
                    "transform_response".into(),
                    "`transform_response` must be an expression (a string)".into(),
                ));
            }
        };
        let timeout = match entry.get("timeout_seconds").and_then(Value::as_f64) {
            Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s),
            _ => Duration::from_secs(120),
        };
        Ok(Self {
            url,
            method,
            headers,
            body,
            transform,
            timeout,
        })
    }
}

/// The template context: the test's vars and the `prompt`.
fn context(test: &TestCase) -> Map<String, Value> {
    let mut ctx = match test.metadata.get("vars") {
        Some(Value::Object(v)) => v.clone(),
        _ => Map::new(),
    };
    ctx.insert("prompt".into(), Value::String(super::echo_text(test)));
    ctx
}

fn render(
    env: &minijinja::Environment<'_>,
    s: &str,
    ctx: &Map<String, Value>,
) -> Result<String, TargetFailure> {
    if !s.contains("{{") && !s.contains("{%") {
        return Ok(s.to_owned());
    }
    evalhost_suite::budget::within(
        evalhost_suite::budget::TEMPLATE_BYTES,
        "an http target's request template",
        || env.render_str(s, Value::Object(ctx.clone())),
    )
    .map_err(|e| TargetFailure::fatal(format!("rendering the request template `{s}`: {e}")))
}

fn render_value(
    env: &minijinja::Environment<'_>,
    v: &Value,
    ctx: &Map<String, Value>,
) -> Result<Value, TargetFailure> {
    Ok(match v {
        Value::String(s) => Value::String(render(env, s, ctx)?),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| render_value(env, x, ctx))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| Ok((k.clone(), render_value(env, x, ctx)?)))
                .collect::<Result<_, TargetFailure>>()?,
        ),
        other => other.clone(),
    })
}

/// The output text from an answer, as promptfoo's transform takes it.
pub fn output_of(transform: &Transform, text: &str) -> Result<String, String> {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let as_text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match transform {
        Transform::Text => Ok(text.to_owned()),
        // `data || text`: a falsy JSON value (null, false, 0, "") gives the text.
        Transform::Default => Ok(match &parsed {
            Some(v) if truthy(v) => as_text(v),
            _ => text.to_owned(),
        }),
        Transform::Json(steps) => {
            let Some(mut v) = parsed.as_ref() else {
                return Err("the answer is not JSON, so `json` is null".into());
            };
            for step in steps {
                let next = match (step, v) {
                    (Step::Key(k), Value::Object(o)) => o.get(k),
                    (Step::Index(n), Value::Array(a)) => a.get(*n),
                    (Step::Key(k), Value::Array(a)) if k == "length" => {
                        return Ok(a.len().to_string());
                    }
                    _ => None,
                };
                match next {
                    Some(n) => v = n,
                    None => return Err(format!("the answer has nothing at `{}`", describe(steps))),
                }
            }
            // A transform result with `output` is that output.
            match v {
                Value::Object(o) if o.contains_key("output") => Ok(as_text(&o["output"])),
                other => Ok(as_text(other)),
            }
        }
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

fn describe(steps: &[Step]) -> String {
    let mut s = String::from("json");
    for step in steps {
        match step {
            Step::Key(k) => s += &format!(".{k}"),
            Step::Index(n) => s += &format!("[{n}]"),
        }
    }
    s
}

/// Calls the API once.
pub fn invoke(
    config: &HttpConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Lenient);
    env.set_fuel(Some(5_000_000));
    let ctx = context(test);
    let url = render(&env, &config.url, &ctx)?;
    let body = match &config.body {
        None => None,
        Some(Value::String(s)) => Some(render(&env, s, &ctx)?),
        Some(v) => Some(render_value(&env, v, &ctx)?.to_string()),
    };
    let timeout = inv
        .time_left(Some(config.timeout))
        .map_or(config.timeout, |t| t.min(config.timeout));
    // The process's connection pool, this call's deadline.
    let agent = super::api::agent();
    let mut headers: Vec<(String, String)> = Vec::new();
    for (k, v) in &config.headers {
        headers.push((k.clone(), render(&env, v, &ctx)?));
    }
    let json_body = matches!(config.body, Some(Value::Object(_) | Value::Array(_)));
    if json_body
        && !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    let started = Instant::now();
    let result = match (config.method.as_str(), body) {
        ("GET", _) => {
            let mut r = agent
                .get(&url)
                .config()
                .timeout_global(Some(timeout))
                .build();
            for (k, v) in &headers {
                r = r.header(k, v);
            }
            r.call()
        }
        ("DELETE", _) => {
            let mut r = agent
                .delete(&url)
                .config()
                .timeout_global(Some(timeout))
                .build();
            for (k, v) in &headers {
                r = r.header(k, v);
            }
            r.call()
        }
        (m, body) => {
            let mut r = match m {
                "PUT" => agent.put(&url),
                "PATCH" => agent.patch(&url),
                _ => agent.post(&url),
            }
            .config()
            .timeout_global(Some(timeout))
            .build();
            for (k, v) in &headers {
                r = r.header(k, v);
            }
            r.send(body.unwrap_or_default().as_bytes())
        }
    };
    let mut response = match result {
        Ok(r) => r,
        Err(ureq::Error::Timeout(_)) => {
            return Err(TargetFailure::new(format!(
                "{url} did not answer within {:.1}s",
                timeout.as_secs_f64()
            )));
        }
        Err(e) => return Err(TargetFailure::new(format!("request to {url} failed: {e}"))),
    };
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| TargetFailure::new(format!("reading the answer of {url} failed: {e}")))?;
    if !(200..300).contains(&status) {
        let excerpt: String = text.chars().take(300).collect();
        let message = format!("{url} answered HTTP {status}: {excerpt}");
        return Err(if status == 429 || status >= 500 {
            TargetFailure::new(message)
        } else {
            TargetFailure::fatal(message)
        });
    }
    let output = output_of(&config.transform, &text).map_err(TargetFailure::fatal)?;
    Ok(TargetOutput {
        duration_ms: Some(started.elapsed().as_millis() as u64),
        ..TargetOutput::text(output)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_paths_parse_and_javascript_is_refused() {
        assert_eq!(
            Transform::parse("json.choices[0].message['content']").unwrap(),
            Transform::Json(vec![
                Step::Key("choices".into()),
                Step::Index(0),
                Step::Key("message".into()),
                Step::Key("content".into()),
            ])
        );
        assert_eq!(Transform::parse(" text ").unwrap(), Transform::Text);
        assert!(Transform::parse("json.a.map(x => x.b)").is_err());
        assert!(Transform::parse("json.a + 'x'").is_err());
        assert!(Transform::parse("JSON.parse(text)").is_err());
    }

    #[test]
    fn outputs_are_taken_as_promptfoo_takes_them() {
        let t = Transform::parse("json.a[1].b").unwrap();
        assert_eq!(output_of(&t, r#"{"a": [0, {"b": "x"}]}"#).unwrap(), "x");
        assert_eq!(
            output_of(&t, r#"{"a": [0, {"b": {"c": 1}}]}"#).unwrap(),
            r#"{"c":1}"#
        );
        assert!(
            output_of(&t, r#"{"a": []}"#)
                .unwrap_err()
                .contains("json.a[1].b")
        );
        assert_eq!(output_of(&Transform::Default, r#""hi""#).unwrap(), "hi");
        assert_eq!(
            output_of(&Transform::Default, r#"{"k": 1}"#).unwrap(),
            r#"{"k":1}"#
        );
        assert_eq!(output_of(&Transform::Default, "plain").unwrap(), "plain");
        assert_eq!(output_of(&Transform::Default, "null").unwrap(), "null");
        let o = Transform::parse("json").unwrap();
        assert_eq!(output_of(&o, r#"{"output": "y", "x": 1}"#).unwrap(), "y");
    }
}
