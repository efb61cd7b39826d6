//! Messages and content blocks: roles, text, file and image blocks found
//! through the search roots, and a content value as text.

use super::*;

impl Loader {
    pub(super) fn messages(
        &mut self,
        doc: &Doc,
        value: &Value,
        at: &KeyPath,
        default_role: &str,
    ) -> Vec<Message> {
        match value {
            Value::String(s) => vec![Message::text(default_role, s.clone())],
            Value::Object(o) if o.contains_key("role") => {
                self.message(doc, o, at).into_iter().collect()
            }
            Value::Object(_) => vec![Message {
                role: default_role.into(),
                content: pretty(value),
                content_json: Some(value.clone()),
            }],
            // No message at all: AgentV's "input is invalid" (the test would
            // be skipped as incomplete); the caller says it is empty.
            Value::Array(items) if items.is_empty() => Vec::new(),
            Value::Array(items) if items.first().is_some_and(|f| f.get("role").is_some()) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| match item {
                    Value::Object(o) => self.message(doc, o, &at.index(i)),
                    other => {
                        self.error(
                            doc,
                            &at.index(i),
                            format!(
                                "a message must be a mapping with `role` and `content`, got {}",
                                kind(other)
                            ),
                        );
                        None
                    }
                })
                .collect(),
            Value::Array(_) => {
                let content = self.resolve_blocks(doc, value, at);
                vec![Message {
                    role: default_role.into(),
                    content: content_text(&content),
                    content_json: Some(content),
                }]
            }
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "expected a string, a message or a list of messages, got {}",
                        show(other)
                    ),
                )
                .hint = Some("quote it to make it a string".into());
                Vec::new()
            }
        }
    }

    pub(super) fn message(
        &mut self,
        doc: &Doc,
        o: &Map<String, Value>,
        at: &KeyPath,
    ) -> Option<Message> {
        self.check_keys(doc, o, fields::MESSAGE, at, "a message");
        let role = match o.get("role") {
            Some(Value::String(r))
                if ["system", "user", "assistant", "tool"].contains(&r.as_str()) =>
            {
                r.clone()
            }
            other => {
                self.error(
                    doc,
                    &at.key("role"),
                    format!(
                        "`role` must be system, user, assistant or tool, got {}",
                        other.map_or("nothing".into(), show)
                    ),
                );
                return None;
            }
        };
        let content = o.get("content").cloned().unwrap_or(Value::Null);
        Some(match content {
            Value::String(s) => Message::text(&role, s),
            Value::Null if o.contains_key("tool_calls") => Message {
                role,
                content: String::new(),
                content_json: None,
            },
            Value::Null => {
                self.error(doc, at, "the message has no `content`");
                return None;
            }
            Value::Array(_) => {
                let content = self.resolve_blocks(doc, &content, &at.key("content"));
                Message {
                    role,
                    content: content_text(&content),
                    content_json: Some(content),
                }
            }
            other => Message {
                role,
                content: content_text(&other),
                content_json: Some(other),
            },
        })
    }

    /// Resolves `type: file` and `type: image` blocks through the search
    /// roots: found files get `path`, `resolved_path` and (for files) `text`.
    pub(super) fn resolve_blocks(&mut self, doc: &Doc, content: &Value, at: &KeyPath) -> Value {
        let Value::Array(blocks) = content else {
            return content.clone();
        };
        let mut out = Vec::new();
        for (i, block) in blocks.iter().enumerate() {
            let block_at = at.index(i);
            match block {
                Value::String(s) if s.is_empty() => {}
                Value::String(s) => out.push(serde_json::json!({"type": "text", "value": s})),
                Value::Object(o) => {
                    let kind_name = o.get("type").and_then(Value::as_str).unwrap_or("");
                    if !matches!(kind_name, "file" | "image") {
                        out.push(block.clone());
                        continue;
                    }
                    let Some(Value::String(value)) = o.get("value") else {
                        self.error(
                            doc,
                            &block_at,
                            format!("a `{kind_name}` block needs a `value` (the path)"),
                        );
                        continue;
                    };
                    let path = match self.roots.find(value, Some(&self.roots.eval_dir.clone())) {
                        Ok(p) => p,
                        Err(err) => {
                            self.path_error(doc, &block_at.key("value"), value, &err);
                            continue;
                        }
                    };
                    let mut resolved = o.clone();
                    let display = value.trim_start_matches(['/', '\\']).to_owned();
                    resolved.insert("path".into(), Value::String(display));
                    resolved.insert(
                        "resolved_path".into(),
                        Value::String(path.display().to_string()),
                    );
                    if kind_name == "image" {
                        let ext = path
                            .extension()
                            .and_then(|e| e.to_str())
                            .unwrap_or("")
                            .to_ascii_lowercase();
                        let Some(mime) = image_mime(&ext) else {
                            self.error(doc, &block_at.key("value"), format!("`{value}` is not an image evalhost can send (.png .jpg .jpeg .gif .webp .svg .bmp)"));
                            continue;
                        };
                        resolved.insert("media_type".into(), Value::String(mime.into()));
                    } else {
                        let display = self.display(&path);
                        match self.read_text(
                            &path,
                            &display,
                            Some((doc, &block_at.key("value"))),
                            MAX_INPUT_FILE_BYTES,
                        ) {
                            Some(text) => {
                                resolved.insert(
                                    "text".into(),
                                    Value::String(text.replace("\r\n", "\n")),
                                );
                            }
                            None => continue,
                        }
                    }
                    out.push(Value::Object(resolved));
                }
                other => out.push(other.clone()),
            }
        }
        Value::Array(out)
    }
}

pub(super) fn image_mime(ext: &str) -> Option<&'static str> {
    Some(match ext {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        _ => return None,
    })
}

pub(super) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Text of a content value: strings as they are, `text` blocks joined by
/// newlines, file blocks as `<file: path="...">`, other values as JSON.
pub fn content_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block {
                Value::String(s) => s.clone(),
                Value::Object(o) => match (
                    o.get("type").and_then(Value::as_str),
                    o.get("value").or(o.get("text")),
                ) {
                    (Some("text"), Some(Value::String(t))) => t.clone(),
                    (Some("file" | "image"), Some(Value::String(p))) => {
                        let shown = o.get("path").and_then(Value::as_str).unwrap_or(p);
                        format!("<file: path=\"{shown}\">")
                    }
                    _ => pretty(block),
                },
                other => pretty(other),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => pretty(other),
    }
}
