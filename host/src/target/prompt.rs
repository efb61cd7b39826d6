//! How a test's input becomes a prompt. Agent targets (`cli`) get AgentV's
//! "agent" text: the plain text of a single user message, or every message
//! as `@[Role]:` paragraphs, with files as `<file: path="...">` references.
//! Chat targets (`openai`) get the messages, with files' text embedded.

use std::path::PathBuf;

use serde_json::Value;

use crate::suite::Message;

fn blocks(message: &Message) -> Option<&Vec<Value>> {
    match &message.content_json {
        Some(Value::Array(blocks)) => Some(blocks),
        _ => None,
    }
}

fn render(message: &Message, embed_files: bool) -> String {
    let Some(blocks) = blocks(message) else {
        return message.content.clone();
    };
    blocks
        .iter()
        .map(|block| {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            let text = |k: &str| {
                block
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            match kind {
                // As the loader reads a text block: `value`, else `text`
                // (`suite::load::content_text`), so results show what the
                // target was sent.
                "text" => block
                    .get("value")
                    .or(block.get("text"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                "file" | "image" if embed_files && kind == "file" => {
                    format!(
                        "<file path=\"{}\">\n{}\n</file>",
                        text("path"),
                        text("text").trim()
                    )
                }
                "file" | "image" => {
                    let path = block
                        .get("resolved_path")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| text("value"));
                    format!("<file: path=\"{path}\">")
                }
                _ => block
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| block.to_string()),
            }
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// AgentV's agent-style prompt.
pub fn agent_prompt(messages: &[Message]) -> String {
    let visible: Vec<&Message> = messages
        .iter()
        .filter(|m| !render(m, false).trim().is_empty())
        .collect();
    if let [only] = visible.as_slice()
        && only.role == "user"
    {
        return render(only, false);
    }
    visible
        .iter()
        .map(|m| {
            let role = match m.role.as_str() {
                "system" => "System",
                "assistant" => "Assistant",
                "tool" => "Tool",
                _ => "User",
            };
            format!("@[{role}]:\n{}", render(m, false))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// AgentV's `systemMessage`: the leading system messages, joined by a
/// blank line.
pub fn system_text(messages: &[Message]) -> String {
    messages
        .iter()
        .take_while(|m| m.role == "system")
        .map(|m| render(m, false))
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The messages for a chat endpoint, files' text embedded.
pub fn chat_messages(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|m| (m.role.clone(), render(m, true)))
        .collect()
}

/// The files attached to the input (`type: file` blocks), resolved.
pub fn input_files(messages: &[Message]) -> Vec<PathBuf> {
    messages
        .iter()
        .filter_map(blocks)
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("file"))
        .filter_map(|b| {
            b.get("resolved_path")
                .and_then(Value::as_str)
                .map(PathBuf::from)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_single_user_message_is_plain_text_else_role_paragraphs() {
        assert_eq!(agent_prompt(&[Message::text("user", "Fix it")]), "Fix it");
        let two = [
            Message::text("system", "Be terse."),
            Message::text("user", "Fix it"),
        ];
        assert_eq!(
            agent_prompt(&two),
            "@[System]:\nBe terse.\n\n@[User]:\nFix it"
        );
    }

    #[test]
    fn files_are_references_for_agents_and_embedded_for_chat() {
        let content = json!([
            {"type": "file", "value": "a.txt", "path": "a.txt", "resolved_path": "/abs/a.txt", "text": "alpha\n"},
            {"type": "text", "value": "Summarise."}
        ]);
        let m = Message {
            role: "user".into(),
            content: String::new(),
            content_json: Some(content),
        };
        assert_eq!(
            agent_prompt(std::slice::from_ref(&m)),
            "<file: path=\"/abs/a.txt\">\n\nSummarise."
        );
        assert_eq!(
            chat_messages(std::slice::from_ref(&m))[0].1,
            "<file path=\"a.txt\">\nalpha\n</file>\n\nSummarise."
        );
        assert_eq!(input_files(&[m]), [PathBuf::from("/abs/a.txt")]);
    }
}
