//! promptfoo's Nunjucks templating, through `minijinja` (a maintained
//! Jinja2 engine; Nunjucks is Jinja2's JavaScript port): undefined names
//! render as nothing, no autoescape, `env` holds the environment with the
//! config's `env:` over it, and the Nunjucks filters configs use that
//! Jinja2 spells differently (`dump`, `load`) are added.

use minijinja::{Environment, UndefinedBehavior, Value as JValue};
use serde_json::{Map, Value};

/// The most instructions one template may run.
pub const TEMPLATE_FUEL: u64 = 5_000_000;

/// `render` with a panic in the template engine (an overflow on absurd
/// arguments) turned into an error.
/// Rendering is also held to [`crate::budget::TEMPLATE_BYTES`] of memory.
pub fn guarded<T>(render: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    crate::budget::within(
        crate::budget::TEMPLATE_BYTES,
        "a template of the suite",
        || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(render))
                .unwrap_or_else(|_| Err("the template engine failed on this template".into()))
        },
    )
}

/// Renders templates against a test's vars.
pub struct Renderer {
    env: Environment<'static>,
    vars_env: Map<String, Value>,
}

impl Renderer {
    /// A renderer whose `env` is `env`.
    pub fn new(env: &Map<String, Value>) -> Self {
        let mut e = Environment::new();
        e.set_undefined_behavior(UndefinedBehavior::Lenient);
        e.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        e.set_keep_trailing_newline(true);
        // A bound on the work one template may do (nested loops over huge
        // ranges would run for minutes).
        e.set_fuel(Some(TEMPLATE_FUEL));
        e.add_filter("dump", |v: JValue| -> Result<String, minijinja::Error> {
            serde_json::to_string(&v).map_err(|err| {
                minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, err.to_string())
            })
        });
        e.add_filter("load", |s: String| -> Result<JValue, minijinja::Error> {
            serde_json::from_str::<Value>(&s)
                .map(JValue::from_serialize)
                .map_err(|err| {
                    minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, err.to_string())
                })
        });
        Self {
            env: e,
            vars_env: env.clone(),
        }
    }

    /// An environment variable as `{{ env.NAME }}` sees it.
    pub fn env_value(&self, name: &str) -> Option<String> {
        self.vars_env
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// `template` rendered with `vars` (and `env`).
    pub fn render_text(&self, template: &str, vars: &Map<String, Value>) -> Result<String, String> {
        if !template.contains("{{") && !template.contains("{%") && !template.contains("{#") {
            return Ok(template.to_owned());
        }
        let mut ctx = vars.clone();
        ctx.entry("env")
            .or_insert_with(|| Value::Object(self.vars_env.clone()));
        guarded(|| {
            self.env
                .render_str(template, Value::Object(ctx))
                .map_err(|e| e.to_string())
        })
        .and_then(|text| crate::budget::rendered(text.len()).map(|()| text))
    }

    /// The vars as a prompt sees them: string vars lose a trailing newline
    /// and are rendered against the other vars.
    pub fn render_vars(&self, vars: &Map<String, Value>) -> Map<String, Value> {
        let mut out = vars.clone();
        for (k, v) in vars {
            if let Value::String(s) = v {
                let trimmed = s.strip_suffix('\n').unwrap_or(s);
                let rendered = self
                    .render_text(trimmed, vars)
                    .unwrap_or_else(|_| trimmed.to_owned());
                out.insert(k.clone(), Value::String(rendered));
            }
        }
        out
    }

    /// A prompt rendered with `vars`: a JSON prompt (a chat) leaf by leaf,
    /// so that it stays JSON; any other text whole.
    pub fn render_prompt(&self, raw: &str, vars: &Map<String, Value>) -> Result<String, String> {
        if let Ok(json @ (Value::Array(_) | Value::Object(_))) = serde_json::from_str::<Value>(raw)
        {
            // As promptfoo: `JSON.stringify(rendered, null, 2)`.
            let rendered = self.render_leaves(json, vars)?;
            return serde_json::to_string_pretty(&rendered).map_err(|e| e.to_string());
        }
        self.render_text(raw, vars)
    }

    fn render_leaves(&self, value: Value, vars: &Map<String, Value>) -> Result<Value, String> {
        Ok(match value {
            Value::String(s) => Value::String(self.render_text(&s, vars)?),
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|i| self.render_leaves(i, vars))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, v)| Ok((k, self.render_leaves(v, vars)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => other,
        })
    }

    /// An assertion `value`: a string rendered, a list's strings rendered,
    /// anything else as written.
    pub fn render_value(&self, value: &Value, vars: &Map<String, Value>) -> Value {
        match value {
            Value::String(s) => {
                Value::String(self.render_text(s, vars).unwrap_or_else(|_| s.clone()))
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| match i {
                        Value::String(s) => {
                            Value::String(self.render_text(s, vars).unwrap_or_else(|_| s.clone()))
                        }
                        other => other.clone(),
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}
