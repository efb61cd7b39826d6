//! What promptfoo's model-graded types share: the call to the grading model
//! (the host's `llm` capability: the plugin never sees a key), a user's
//! `rubricPrompt` rendered as promptfoo renders it, and promptfoo's
//! `tryParse` of the values a prompt shows.
//!
//! A prompt — promptfoo's own (`crate::prompts`) or the user's
//! `rubricPrompt` — is rendered exactly as promptfoo's
//! `renderLlmRubricPrompt` does: Nunjucks
//! (here `minijinja`, Jinja2's Rust port) over the test's vars and the
//! type's own variables, object values shown as JSON; a prompt that is JSON
//! has each of its strings rendered instead; a rendered prompt that is a
//! JSON list of chat messages is sent as those messages, anything else as
//! one user message — the OpenAI provider's rule.

use evalhost_plugin_sdk::{CompletionRequest, GradeError, LlmError, Request, Value};
use minijinja::{Environment, UndefinedBehavior};
use serde_json::Map;

/// The most instructions one rubric prompt may run.
const TEMPLATE_FUEL: u64 = 5_000_000;

/// Chat messages, `(role, content)`.
pub type Messages = Vec<(String, String)>;

pub fn judge_error(e: LlmError) -> GradeError {
    match e {
        LlmError::NotGranted(m) | LlmError::Unavailable(m) | LlmError::Failed(m) => {
            GradeError::Judge(m)
        }
    }
}

/// promptfoo's `tryParse`: the value JSON text stands for, else the text.
pub fn try_parse(text: &str) -> Value {
    crate::js::json_parse(text).unwrap_or_else(|| Value::String(text.to_owned()))
}

/// A value as a Nunjucks template shows it once promptfoo has prepared it
/// (objects as JSON, text as itself).
pub fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => crate::js::stringify(other),
    }
}

/// The test's vars (the reader keeps them in the metadata).
pub fn vars(request: &Request) -> Map<String, Value> {
    request
        .metadata
        .get("vars")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The rendered prompt the target was given (its one input message).
pub fn prompt(request: &Request) -> String {
    request
        .input
        .first()
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

/// promptfoo's `processContextForTemplating`: an object becomes its JSON
/// text, a list keeps its items but shows objects inside it as JSON.
fn templating_context(vars: &Map<String, Value>) -> Value {
    Value::Object(
        vars.iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::Object(_) => Value::String(crate::js::stringify(v)),
                    Value::Array(items) => Value::Array(
                        items
                            .iter()
                            .map(|i| match i {
                                Value::Object(_) | Value::Array(_) => {
                                    Value::String(crate::js::stringify(i))
                                }
                                other => other.clone(),
                            })
                            .collect(),
                    ),
                    other => other.clone(),
                };
                (k.clone(), v)
            })
            .collect(),
    )
}

/// A template value as Nunjucks writes it (JavaScript's `String(v)`):
/// `null` and `undefined` as nothing, a list as its items joined by
/// commas, a whole number without a fraction, an object as
/// `[object Object]`.
fn js_string(v: &minijinja::Value) -> String {
    use minijinja::value::ValueKind;
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => String::new(),
        ValueKind::Number => match f64::try_from(v.clone()) {
            Ok(f) if !v.is_integer() => crate::js::number(f),
            _ => v.to_string(),
        },
        ValueKind::Seq => v
            .try_iter()
            .map(|items| items.map(|i| js_string(&i)).collect::<Vec<_>>().join(","))
            .unwrap_or_default(),
        ValueKind::Map => "[object Object]".to_owned(),
        _ => v.to_string(),
    }
}

fn environment() -> Environment<'static> {
    let mut e = Environment::new();
    e.set_undefined_behavior(UndefinedBehavior::Lenient);
    e.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    e.set_keep_trailing_newline(true);
    e.set_fuel(Some(TEMPLATE_FUEL));
    e.set_formatter(|out, _state, value| {
        write!(out, "{}", js_string(value)).map_err(minijinja::Error::from)
    });
    e.add_filter(
        "dump",
        |v: minijinja::Value| -> Result<String, minijinja::Error> {
            serde_json::to_string(&v).map_err(|err| {
                minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, err.to_string())
            })
        },
    );
    e
}

fn render_str(env: &Environment<'_>, template: &str, ctx: &Value) -> Result<String, GradeError> {
    env.render_str(template, ctx)
        .map_err(|e| GradeError::Failed(format!("rubricPrompt: {e}")))
}

/// `template` (a user's `rubricPrompt`) rendered with `vars`, as the
/// messages the grading model is sent.
pub fn render(template: &str, vars: &Map<String, Value>) -> Result<Messages, GradeError> {
    let env = environment();
    let ctx = templating_context(vars);
    let rendered = match crate::js::json_parse(template) {
        Some(parsed) => {
            fn walk(v: &Value, env: &Environment<'_>, ctx: &Value) -> Result<Value, GradeError> {
                Ok(match v {
                    Value::String(s) => Value::String(render_str(env, s, ctx)?),
                    Value::Array(items) => Value::Array(
                        items
                            .iter()
                            .map(|i| walk(i, env, ctx))
                            .collect::<Result<_, _>>()?,
                    ),
                    Value::Object(o) => Value::Object(
                        o.iter()
                            .map(|(k, v)| Ok((k.clone(), walk(v, env, ctx)?)))
                            .collect::<Result<_, GradeError>>()?,
                    ),
                    other => other.clone(),
                })
            }
            crate::js::stringify(&walk(&parsed, &env, &ctx)?)
        }
        None => render_str(&env, template, &ctx)?,
    };
    Ok(chat(&rendered))
}

/// The OpenAI provider's reading of a prompt: a JSON list of messages is
/// sent as those messages; any other text as one user message.
pub fn chat(prompt: &str) -> Messages {
    if let Some(Value::Array(items)) = crate::js::json_parse(prompt)
        && !items.is_empty()
        && items
            .iter()
            .all(|m| m.get("role").is_some_and(Value::is_string))
    {
        return items
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap_or_default().to_owned(),
                    m.get("content").map(shown).unwrap_or_default(),
                )
            })
            .collect();
    }
    vec![("user".into(), prompt.to_owned())]
}

/// The user's `rubricPrompt` for this assertion, when it gave one as text
/// (promptfoo turns an object into its JSON text).
pub fn custom_prompt(request: &Request) -> Option<String> {
    match request.config.get("__rubric_prompt") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(o)) if o.is_empty() => None,
        Some(other) => Some(crate::js::stringify(other)),
    }
}

/// The messages for one grading call: the user's `rubricPrompt`, else
/// promptfoo's own `default` (`crate::prompts`), rendered with the test's
/// vars and the type's `own` variables over them.
pub fn messages(
    request: &Request,
    custom: Option<&str>,
    default: &str,
    own: &[(&str, Value)],
) -> Result<Messages, GradeError> {
    let mut v = vars(request);
    for (k, val) in own {
        v.insert((*k).to_owned(), val.clone());
    }
    render(custom.unwrap_or(default), &v)
}

/// As [`messages`], with the type's own variables only: promptfoo's
/// `answer-relevance`, `context-relevance` and `g-eval` show a prompt no
/// test var.
pub fn messages_own(
    custom: Option<&str>,
    default: &str,
    own: &[(&str, Value)],
) -> Result<Messages, GradeError> {
    let v = own
        .iter()
        .map(|(k, val)| ((*k).to_owned(), val.clone()))
        .collect();
    render(custom.unwrap_or(default), &v)
}

thread_local! {
    /// The seed of the judge sample being taken (`judge_samples`), none for
    /// a single answer (the request is then promptfoo's, without a seed).
    static SEED: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// The types `judge_samples` applies to: one verdict from the judge's
/// answer.
pub const SAMPLED: &[&str] = &[
    "llm-rubric",
    "g-eval",
    "model-graded-closedqa",
    "factuality",
    "search-rubric",
];

/// `judge_samples: N` (evalhost's own key, promptfoo has none): the grade
/// taken N times, each answer asked with its own seed (so the judge cache
/// keeps them apart): the mean score, the verdict of a strict majority
/// (a tie fails), the spread and agreement in the details. A failed sample
/// fails the assertion.
pub fn sampled(
    request: &Request,
    grade: impl Fn() -> Result<evalhost_plugin_sdk::Grade, GradeError>,
) -> Result<evalhost_plugin_sdk::Grade, GradeError> {
    let n = match request
        .config
        .optional_u64("judge_samples")
        .map_err(GradeError::Failed)?
    {
        None | Some(1) => return grade(),
        Some(n) if (2..=20).contains(&n) => n,
        Some(n) => {
            return Err(GradeError::Failed(format!(
                "`judge_samples` must be from 1 to 20, got {n}"
            )));
        }
    };
    let mut grades = Vec::new();
    for i in 0..n {
        SEED.with(|s| s.set(Some(i + 1)));
        let g = grade();
        SEED.with(|s| s.set(None));
        grades.push(g?);
    }
    let passed = |g: &evalhost_plugin_sdk::Grade| {
        g.details
            .as_ref()
            .and_then(|d| d.get("verdict"))
            .and_then(Value::as_str)
            == Some("pass")
    };
    let scores: Vec<f64> = grades.iter().map(|g| g.score).collect();
    let mean = scores.iter().sum::<f64>() / n as f64;
    let stdev = (scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    let passes = grades.iter().filter(|g| passed(g)).count() as u64;
    let pass = passes * 2 > n;
    let agreement = passes.max(n - passes) as f64 / n as f64;
    let mut out = evalhost_plugin_sdk::Grade::new(mean);
    out.checks.push(evalhost_plugin_sdk::Check::new(
        pass,
        format!(
            "{n} judge samples: {passes} pass, {} fail (mean {mean:.2}, agreement {:.0}%)",
            n - passes,
            agreement * 100.0
        ),
    ));
    out.checks.extend(grades[0].checks.iter().cloned());
    Ok(out.with_details(serde_json::json!({
        "verdict": if pass { "pass" } else { "fail" },
        "samples": {
            "scores": scores,
            "verdicts": grades.iter().map(passed).collect::<Vec<_>>(),
            "mean": mean,
            "stdev": stdev,
            "agreement": agreement,
        },
    })))
}

/// The reply of the grading model named by the assertion (`__judge`), or
/// the run's judge.
pub fn ask(request: &Request, messages: Messages) -> Result<String, GradeError> {
    evalhost_plugin_sdk::complete(&CompletionRequest {
        messages,
        target: request
            .config
            .get("__judge")
            .and_then(Value::as_str)
            .map(str::to_owned),
        seed: SEED.with(std::cell::Cell::get),
        ..CompletionRequest::default()
    })
    .map(|c| c.text)
    .map_err(judge_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::json;

    #[test]
    fn rubric_prompts_render_as_promptfoo_renders_them() {
        let vars = json!({"output": "Paris", "rubric": "names a city", "obj": {"a": 1}})
            .as_object()
            .cloned()
            .unwrap();
        // A JSON chat: each string rendered, sent as its messages.
        let m = render(
            r#"[{"role": "system", "content": "Grade {{ rubric }}"}, {"role": "user", "content": "{{ output }} {{ obj }}"}]"#,
            &vars,
        )
        .unwrap();
        assert_eq!(
            m,
            vec![
                ("system".into(), "Grade names a city".into()),
                ("user".into(), "Paris {\"a\":1}".into())
            ]
        );
        // Plain text: one user message; unknown names render as nothing.
        let m = render("Is {{output}} {{missing}}ok?", &vars).unwrap();
        assert_eq!(m, vec![("user".into(), "Is Paris ok?".into())]);
        // A template that does not compile is the assertion's error.
        assert!(render("{% if %}", &vars).is_err());
    }

    #[test]
    fn promptfoos_own_prompts_show_values_as_nunjucks_does() {
        // promptfoo 0.121.20 sent this user message for an output that is
        // JSON text (recorded from its request to the loopback server):
        // `tryParse`, then `JSON.stringify`, compact.
        let output = r#"{"color": "yellow", "countries": ["Ecuador", "Brazil"], "answer": 42}"#;
        let vars = json!({"rubric": "Is it French?"})
            .as_object()
            .cloned()
            .unwrap();
        let own = [
            ("output", try_parse(output)),
            ("rubric", Value::String("Is it French?".into())),
        ];
        let mut all = vars.clone();
        for (k, v) in &own {
            all.insert((*k).to_owned(), v.clone());
        }
        let m = render(crate::prompts::LLM_RUBRIC, &all).unwrap();
        assert_eq!(m[0].0, "system");
        assert!(
            m[0].1
                .starts_with("You are grading output according to a user-specified rubric.")
        );
        assert_eq!(
            m[1],
            (
                "user".into(),
                "<Output>\n{\"color\":\"yellow\",\"countries\":[\"Ecuador\",\"Brazil\"],\"answer\":42}\n</Output>\n<Rubric>\nIs it French?\n</Rubric>".into()
            )
        );
        // JavaScript's `String(v)`: null as nothing, a list joined by
        // commas (a list inside it as JSON: `processContextForTemplating`),
        // a whole float without a fraction.
        let vars = json!({"n": null, "list": [1, "a", null, [2, 3]], "f": 3.0, "x": 2.5})
            .as_object()
            .cloned()
            .unwrap();
        let m = render("[{{ n }}] [{{ list }}] [{{ f }}] [{{ x }}]", &vars).unwrap();
        assert_eq!(m[0].1, "[] [1,a,,[2,3]] [3] [2.5]");
    }
}
