//! promptfoo's Nunjucks templating, through `minijinja` (a maintained
//! Jinja2 engine; Nunjucks is Jinja2's JavaScript port): undefined names
//! render as nothing, no autoescape, `env` holds the environment with the
//! config's `env:` over it, and the Nunjucks filters configs use that
//! Jinja2 spells differently (`dump`, `load`) are added.

use minijinja::{Environment, UndefinedBehavior, Value as JValue};
use serde_json::{Map, Value};

use crate::budget::{TEMPLATE_FUEL, guarded};

/// Renders templates against a test's vars.
pub struct Renderer {
    env: Environment<'static>,
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

/// Nunjucks' `{% for k, v in x %}` walks a mapping's keys and values;
/// Jinja2 (and `minijinja`) unpacks each item instead, which a mapping's
/// keys cannot be. Each such loop is rewritten to iterate
/// `(x)|nunjucks_pairs` (a mapping's `[key, value]` pairs, a list as it
/// is), leaving every other tag as written.
fn nunjucks_for(template: &str) -> std::borrow::Cow<'_, str> {
    if !template.contains("{%") || !template.contains(',') {
        return std::borrow::Cow::Borrowed(template);
    }
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    let mut changed = false;
    while let Some(open) = rest.find("{%") {
        out.push_str(&rest[..open]);
        let tag = &rest[open..];
        let Some(close) = tag.find("%}") else {
            out.push_str(tag);
            rest = "";
            break;
        };
        let whole = &tag[..close + 2];
        let inner = whole[2..whole.len() - 2].trim_start_matches('-');
        let inner = inner.strip_suffix('-').unwrap_or(inner).trim();
        let rewritten = inner.strip_prefix("for").and_then(|r| {
            let r = r.strip_prefix(char::is_whitespace)?;
            let (targets, iter) = r.split_once(" in ")?;
            let ident = |t: &str| {
                let t = t.trim();
                !t.is_empty() && t.chars().all(|c| c.is_alphanumeric() || c == '_')
            };
            let (a, b) = targets.split_once(',')?;
            let iter = iter.trim();
            (ident(a) && ident(b) && !iter.contains(" if ") && !iter.ends_with("recursive")).then(
                || {
                    let lead = if whole.starts_with("{%-") {
                        "{%-"
                    } else {
                        "{%"
                    };
                    let trail = if whole.ends_with("-%}") { "-%}" } else { "%}" };
                    format!(
                        "{lead} for {}, {} in ({iter})|nunjucks_pairs {trail}",
                        a.trim(),
                        b.trim()
                    )
                },
            )
        });
        match rewritten {
            Some(r) => {
                out.push_str(&r);
                changed = true;
            }
            None => out.push_str(whole),
        }
        rest = &tag[close + 2..];
    }
    out.push_str(rest);
    if changed {
        std::borrow::Cow::Owned(out)
    } else {
        std::borrow::Cow::Borrowed(template)
    }
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
        // `{% for k, v in mapping %}` (rewritten by `nunjucks_for`): a
        // mapping's pairs, anything else itself.
        e.add_filter("nunjucks_pairs", |v: JValue| -> JValue {
            if v.kind() == minijinja::value::ValueKind::Map
                && let Ok(keys) = v.try_iter()
            {
                return JValue::from(
                    keys.map(|k| {
                        let value = v.get_item(&k).unwrap_or_default();
                        JValue::from(vec![k, value])
                    })
                    .collect::<Vec<_>>(),
                );
            }
            v
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
                .render_str(&nunjucks_for(template), Value::Object(ctx))
                .map_err(|e| e.to_string())
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
        match self.env.template_from_str(&nunjucks_for(template)) {
            Ok(t) => t
                .undeclared_variables(false)
                .iter()
                .any(|name| name != "env" && !vars.contains_key(name)),
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
