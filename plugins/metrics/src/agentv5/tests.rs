//! Unit tests of AgentV 5's trace graders: globs, tool-used,
//! tool-sequence, tool-args-match, missing traces, skill-used.

use super::*;
use evalhost_plugin_sdk::{Message, ToolCall, json};

fn call(tool: &str, input: Value) -> ToolCall {
    let mut c = ToolCall::new(tool);
    c.input = Some(input);
    c
}

fn request(kind: &str, config: Value, calls: Vec<ToolCall>) -> Request {
    let mut r = Request::new(kind, "done");
    r.config = Config::from_value(config).unwrap();
    r.output_messages = vec![Message::new("assistant", "done").with_tool_calls(calls)];
    r
}

fn graded(kind: &str, config: Value, calls: Vec<ToolCall>) -> (bool, String) {
    let g = grade(&request(kind, config, calls)).unwrap();
    (g.checks[0].passed, g.checks[0].text.clone())
}

#[test]
fn globs_match_whole_names_case_insensitively() {
    assert!(glob("knowledgeSearch", "knowledge*"));
    assert!(glob("READ", "re?d"));
    assert!(!glob("xread", "read"));
    assert!(glob("", "*"));
}

#[test]
fn tool_used_lists_counts_and_inverse() {
    let calls = || {
        vec![
            call("search", json!({"q": "a"})),
            call("search", json!({})),
            call("read", json!({})),
        ]
    };
    let (ok, text) = graded(TOOL_USED, json!({"value": ["search", "read"]}), calls());
    assert!(ok, "{text}");
    assert_eq!(
        text,
        "Observed required tool(s): search, read. Actual tools: tool:search, tool:search, tool:read"
    );
    let (ok, text) = graded(
        TOOL_USED,
        json!({"value": {"name": "search", "min": 3}}),
        calls(),
    );
    assert!(!ok);
    assert_eq!(
        text,
        "Matched tool \"search\" 2 time(s) (expected at least 3). Matches: tool:search, tool:search"
    );
    // A forbidden list passes only when none of it was used.
    let (ok, text) = graded(
        TOOL_USED,
        json!({"value": ["delete", "read"], "inverse": true}),
        calls(),
    );
    assert!(!ok);
    assert!(
        text.starts_with("Forbidden tool(s) were used: read."),
        "{text}"
    );
    // A shell call is a command step, not a tool.
    let (ok, _) = graded(
        TOOL_USED,
        json!({"value": "shell"}),
        vec![call("shell", json!({"command": ["ls", "-la"]}))],
    );
    assert!(!ok);
}

#[test]
fn sequences_in_order_and_exact() {
    let calls = || {
        vec![
            call("a", json!({})),
            call("x", json!({})),
            call("b", json!({})),
        ]
    };
    assert!(graded(TOOL_SEQUENCE, json!({"value": ["a", "b"]}), calls()).0);
    let (ok, text) = graded(
        TOOL_SEQUENCE,
        json!({"value": {"mode": "exact", "steps": ["a", "b"]}}),
        calls(),
    );
    assert!(!ok);
    assert_eq!(
        text,
        "Expected exact tool sequence of a, b, but actual tools were tool:a, tool:x, tool:b"
    );
    let (ok, text) = graded(TOOL_SEQUENCE, json!({"value": ["b", "a"]}), calls());
    assert!(!ok);
    assert_eq!(
        text,
        "Expected tool \"a\" was not observed in order. Actual tools: tool:a, tool:x, tool:b"
    );
}

#[test]
fn args_match_partial_exact_ignore_and_defaults() {
    let calls = || {
        vec![call(
            "search",
            json!({"query": "ml", "limit": 10, "trace_id": "z"}),
        )]
    };
    assert!(
        graded(
            TOOL_ARGS_MATCH,
            json!({"value": {"name": "search", "args": {"query": "ml"}}}),
            calls()
        )
        .0
    );
    assert!(
        !graded(
            TOOL_ARGS_MATCH,
            json!({"value": {"name": "search", "args": {"query": "ml"}, "mode": "exact"}}),
            calls()
        )
        .0
    );
    let (ok, text) = graded(
        TOOL_ARGS_MATCH,
        json!({"value": {"name": "search", "args": {"query": "ml"}, "mode": "exact", "ignore": "trace_*", "defaults": {"limit": 10}}}),
        calls(),
    );
    assert!(ok, "{text}");
    assert!(
        text.ends_with(". Ignored argument(s): trace_id. Ignored default argument(s): limit"),
        "{text}"
    );
    // String inputs are parsed as JSON, as AgentV does.
    assert!(
        graded(
            TOOL_ARGS_MATCH,
            json!({"value": {"name": "search", "args": {"query": "ml"}}}),
            vec![call("search", json!("{\"query\":\"ml\"}"))]
        )
        .0
    );
}

#[test]
fn no_trace_fails_with_the_reason() {
    let mut r = request(TOOL_USED, json!({"value": "a"}), vec![]);
    r.output_messages.clear();
    let g = grade(&r).unwrap();
    assert!(!g.checks[0].passed);
    assert_eq!(
        g.checks[0].text,
        "No trace data available for trajectory:tool-used assertion"
    );
}

#[test]
fn skills_from_the_skill_tool_reads_and_commands() {
    let calls = || {
        vec![
            call("Skill", json!({"skill": "acme-deploy"})),
            call(
                "Read",
                json!({"file_path": "/w/.agents/skills/csv-analyzer/SKILL.md"}),
            ),
            call("Bash", json!({"command": "cat skills/notes/SKILL.md"})),
        ]
    };
    let (ok, text) = graded(
        SKILL_USED,
        json!({"value": ["acme-deploy", "csv-analyzer", "notes"]}),
        calls(),
    );
    assert!(ok, "{text}");
    let (ok, text) = graded(
        SKILL_USED,
        json!({"value": "csv-analyzer", "inverse": true}),
        calls(),
    );
    assert!(!ok);
    assert!(
        text.starts_with("Forbidden skill(s) were used: csv-analyzer."),
        "{text}"
    );
    assert!(
        graded(
            SKILL_USED,
            json!({"value": "other", "inverse": true}),
            calls()
        )
        .0
    );
    let (ok, text) = graded(
        SKILL_USED,
        json!({"value": {"pattern": "acme-*", "min": 2}}),
        calls(),
    );
    assert!(!ok);
    assert_eq!(
        text,
        "Matched skill \"acme-*\" 1 time(s) (expected at least 2). Matches: acme-deploy (tool)"
    );
    assert!(
        check(
            SKILL_USED,
            &Config::from_value(json!({"value": {"name": "a", "min": 1}, "inverse": true}))
                .unwrap()
        )
        .is_err()
    );
}
