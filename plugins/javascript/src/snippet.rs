//! The code an assertion runs: a `file://` script as the host hands it
//! over, or a one-line snippet made a function body as promptfoo makes it.

use evalhost_plugin_sdk::{Config, Value};

/// A `file://` script as the host hands it over.
pub(crate) struct Script {
    /// `file://…` as written (appended to failure reasons, as promptfoo
    /// appends its rendered value).
    pub(crate) reference: String,
    pub(crate) source: String,
    pub(crate) function: Option<String>,
    pub(crate) esm: bool,
}

pub(crate) fn script(config: &Config) -> Result<Option<Script>, String> {
    let Some(s) = config.get("__script") else {
        return Ok(None);
    };
    let text = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(Some(Script {
        reference: text("reference").unwrap_or_default(),
        source: text("source").ok_or("`__script` needs its `source`")?,
        function: text("function"),
        esm: s.get("esm").and_then(Value::as_bool).unwrap_or(false),
    }))
}

/// promptfoo's `buildFunctionBody` for a one-line snippet.
pub fn build_function_body(code: &str) -> String {
    // `code.trim().replace(/;+\s*$/, "")`: trimmed, there is no space
    // left after the semicolons.
    let trimmed = code.trim().trim_end_matches(';');
    let declares = ["const", "let", "var"].iter().any(|k| {
        trimmed
            .strip_prefix(k)
            .is_some_and(|r| r.starts_with(char::is_whitespace))
    });
    if declares {
        if let Some(i) = last_statement_semicolon(trimmed) {
            let statements = &trimmed[..=i];
            let expression = trimmed[i + 1..].trim();
            if !expression.is_empty() {
                return format!("{statements} return {expression}");
            }
        }
        return trimmed.to_owned();
    }
    format!("return {trimmed}")
}

/// promptfoo's `findLastStatementSemicolon`: the last `;` outside strings,
/// template literals, comments and brackets.
fn last_statement_semicolon(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let mut last = None;
    let mut depth = 0i32;
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' | b'"' | b'`' => quote = Some(c),
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b';' if depth == 0 => last = Some(i),
            _ => {}
        }
        i += 1;
    }
    last
}
