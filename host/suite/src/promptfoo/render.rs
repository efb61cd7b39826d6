//! promptfoo's Nunjucks templating, as Nunjucks renders it (`crate::nunjucks`:
//! minijinja's parser, JavaScript's values, Nunjucks' own filters):
//! undefined names render as nothing, no autoescape, `env` holds the
//! environment with the config's `env:` over it, and promptfoo's `load`
//! filter (`JSON.parse`) is added. A template evalhost cannot render as
//! Nunjucks does is refused ([`is_refusal`]), never rendered differently.

use minijinja::{Environment, Value as JValue};
use serde_json::{Map, Value};

use crate::budget::{TEMPLATE_FUEL, guarded};
use crate::nunjucks;

/// Whether a render error is evalhost refusing a template it cannot render
/// as Nunjucks does (the config is refused, not a row errored).
pub fn is_refusal(message: &str) -> bool {
    message.contains(nunjucks::print::REFUSED)
}

/// Renders templates against a test's vars.
pub struct Renderer {
    env: Environment<'static>,
    cache: nunjucks::Cache,
    vars_env: Map<String, Value>,
}

/// promptfoo's `resolveVariables`: up to five rounds, each replacing the
/// first `{{ name }}` (word characters only) of each string var by that
/// var's value as JavaScript's `String()` writes it, when it is defined.
fn resolve_variables(vars: &mut Map<String, Value>) {
    fn placeholder(s: &str) -> Option<(usize, usize, &str)> {
        let mut from = 0;
        while let Some(i) = s[from..].find("{{").map(|i| i + from) {
            let inner = &s[i + 2..];
            let trimmed = inner.trim_start();
            let name_len = trimmed
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(trimmed.len());
            let after = trimmed[name_len..].trim_start();
            if name_len > 0 && after.starts_with("}}") {
                let end = s.len() - after.len() + 2;
                return Some((i, end, &trimmed[..name_len]));
            }
            from = i + 2;
        }
        None
    }
    fn js_string(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            // JavaScript writes a whole float without a fraction.
            Value::Number(n) => match n.as_f64() {
                Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => {
                    format!("{}", f as i64)
                }
                _ => n.to_string(),
            },
            Value::Array(items) => items
                .iter()
                .map(|i| {
                    if i.is_null() {
                        String::new()
                    } else {
                        js_string(i)
                    }
                })
                .collect::<Vec<_>>()
                .join(","),
            Value::Object(_) => "[object Object]".into(),
        }
    }
    for _ in 0..5 {
        let mut resolved = true;
        let keys: Vec<String> = vars.keys().cloned().collect();
        for key in keys {
            let Some(Value::String(value)) = vars.get(&key) else {
                continue;
            };
            let Some((start, end, name)) = placeholder(value) else {
                continue;
            };
            let Some(with) = vars.get(name).map(js_string) else {
                continue;
            };
            let replaced = format!("{}{with}{}", &value[..start], &value[end..]);
            vars.insert(key, Value::String(replaced));
            resolved = false;
        }
        if resolved {
            break;
        }
    }
}

impl Renderer {
    /// A renderer whose `env` is `env`.
    pub fn new(env: &Map<String, Value>) -> Self {
        let mut e = nunjucks::environment(TEMPLATE_FUEL);
        // promptfoo's own filter: `JSON.parse`.
        e.add_filter("load", |v: JValue| nunjucks::json_parse(&v));
        Self {
            env: e,
            cache: nunjucks::Cache::default(),
            vars_env: env.clone(),
        }
    }

    /// A filter whose function runs in the host's sandbox (promptfoo's
    /// `nunjucksFilters`): called with the value and the filter's
    /// arguments as JSON; what it throws fails the render.
    pub fn add_code_filter(
        &mut self,
        name: &str,
        runner: crate::code::Runner,
        call: crate::code::CodeCall,
    ) {
        let label = name.to_owned();
        self.env.add_filter(
            name.to_owned(),
            move |value: JValue,
                  rest: minijinja::value::Rest<JValue>|
                  -> Result<JValue, minijinja::Error> {
                let to_json = |v: &JValue| serde_json::to_value(v).unwrap_or(Value::Null);
                let mut call = call.clone();
                call.args = std::iter::once(to_json(&value))
                    .chain(rest.iter().map(to_json))
                    .collect();
                runner
                    .call(&call)
                    .map(|v| JValue::from_serialize(&v))
                    .map_err(|e| {
                        minijinja::Error::new(
                            minijinja::ErrorKind::InvalidOperation,
                            format!("filter `{label}`: {e}"),
                        )
                    })
            },
        );
    }

    /// Why a template somewhere in `value` (a string, or the strings of a
    /// list or mapping) cannot be rendered as Nunjucks renders it, if one
    /// cannot: the config is refused at that key.
    pub fn refused_in(&self, value: &Value) -> Option<String> {
        match value {
            Value::String(s) if s.contains("{{") || s.contains("{%") => {
                match self.cache.translate(s) {
                    Err(e @ nunjucks::TranslateError::Refused(_)) => Some(e.to_string()),
                    _ => None,
                }
            }
            Value::Array(items) => items.iter().find_map(|i| self.refused_in(i)),
            Value::Object(m) => m.values().find_map(|v| self.refused_in(v)),
            _ => None,
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
            nunjucks::render(
                &self.env,
                &self.cache,
                template,
                JValue::from_serialize(Value::Object(ctx)),
            )
        })
        .and_then(|text| crate::budget::rendered(text.len()).map(|()| text))
    }

    /// The vars as a prompt sees them, as promptfoo 0.121's `renderPrompt`
    /// makes them: string vars lose a trailing newline; `resolveVariables`
    /// replaces, up to five rounds, each var's first `{{ name }}` whose var
    /// is defined (a var whose first placeholder names an undefined var is
    /// left alone from there on); then each string var is rendered against
    /// the others — unless it names a variable (other than `env`) that is
    /// not defined, when it stays as written, `{{ name }}` and all.
    pub fn render_vars(&self, vars: &Map<String, Value>) -> Map<String, Value> {
        let mut vars = vars.clone();
        for v in vars.values_mut() {
            if let Value::String(s) = v
                && s.ends_with('\n')
            {
                s.pop();
            }
        }
        resolve_variables(&mut vars);
        let mut out = vars.clone();
        for (k, v) in &vars {
            if let Value::String(s) = v {
                if self.references_undefined(s, &vars) {
                    continue;
                }
                let rendered = self.render_text(s, &vars).unwrap_or_else(|_| s.clone());
                out.insert(k.clone(), Value::String(rendered));
            }
        }
        out
    }

    /// promptfoo's `referencesUndefinedVariables`: `template` names a
    /// variable, other than `env`, that `vars` does not define.
    fn references_undefined(&self, template: &str, vars: &Map<String, Value>) -> bool {
        if !template.contains("{{") && !template.contains("{%") {
            return false;
        }
        let Ok(translated) = self.cache.translate(template) else {
            return true;
        };
        match self.env.template_from_str(&translated) {
            Ok(t) => t.undeclared_variables(false).iter().any(|name| {
                name != "env"
                    && !name.starts_with("__nj_")
                    && !matches!(name.as_str(), "null" | "range" | "joiner" | "loop")
                    && !vars.contains_key(name)
            }),
            // A template that does not parse: promptfoo's renderString then
            // fails too; kept as written.
            Err(_) => true,
        }
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
