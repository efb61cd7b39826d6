//! Built-in trace, metric and structured-output graders, with AgentV 4.42's
//! semantics and check texts: `latency`, `cost`, `token-usage`,
//! `execution-metrics` (limits on what the target's trace reports),
//! `tool-trajectory` (the tools the agent called), `skill-trigger` (whether
//! it loaded a skill) and `field-accuracy` (fields of a JSON answer).
//!
//! The trace reaches the plugin through the grade request: the output
//! messages with their tool calls, and the trace record (tokens, cost,
//! duration, model calls). Data the target did not report fails the check
//! with the reason; it never passes. Built only on the public plugin SDK.

use evalhost_plugin_sdk::{
    AssertionType, Config, Grade, GradeError, Grader, Plugin, Request, Value, export_grader, json,
};

mod agentv5;
mod date;
mod field;
mod js;
mod metrics;
mod similar;
mod skill;
mod trajectory;

/// The metrics grader plugin.
pub struct MetricsGrader;

/// A value, briefly, for messages.
pub(crate) fn show(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

fn nonneg() -> Value {
    json!({"type": "number", "minimum": 0})
}

fn args_match_schema() -> Value {
    json!({"anyOf": [
        {"enum": ["exact", "superset", "subset", "ignore"]},
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    ]})
}

fn types() -> Vec<AssertionType> {
    vec![
        AssertionType::new("latency", "The target's duration is at most `threshold` milliseconds").schema(json!({
            "type": "object",
            "required": ["threshold"],
            "properties": {"threshold": nonneg()},
        })),
        AssertionType::new("cost", "The target's reported cost is at most `budget` US dollars").schema(json!({
            "type": "object",
            "required": ["budget"],
            "properties": {"budget": nonneg()},
        })),
        AssertionType::new("token-usage", "Input, output and total tokens within limits").schema(json!({
            "type": "object",
            "properties": {
                "max_total": nonneg(), "max_input": nonneg(), "max_output": nonneg(),
                "maxTotal": nonneg(), "maxInput": nonneg(), "maxOutput": nonneg(),
            },
        })),
        AssertionType::new(
            "execution-metrics",
            "Tool calls, model calls, tokens, cost, duration and exploration ratio within limits (fractional score)",
        )
        .schema(json!({
            "type": "object",
            "properties": {
                "max_tool_calls": nonneg(), "max_llm_calls": nonneg(), "max_tokens": nonneg(),
                "max_cost_usd": nonneg(), "max_duration_ms": nonneg(),
                "target_exploration_ratio": nonneg(), "exploration_tolerance": nonneg(),
            },
        })),
        AssertionType::new("tool-trajectory", "The tools the agent called match an expected trajectory").schema(json!({
            "type": "object",
            "required": ["mode"],
            "properties": {
                "mode": {"enum": ["any_order", "in_order", "exact", "subset", "superset"]},
                "minimums": {"type": "object", "additionalProperties": nonneg()},
                "expected": {"type": "array", "items": {
                    "type": "object",
                    "required": ["tool"],
                    "properties": {
                        "tool": {"type": "string", "minLength": 1},
                        "args": {"anyOf": [{"const": "any"}, {"type": "object"}]},
                        "args_match": args_match_schema(),
                        "max_duration_ms": nonneg(),
                    },
                }},
                "args_match": args_match_schema(),
            },
        })),
        AssertionType::new("skill-trigger", "The agent loaded (or did not load) a skill").schema(json!({
            "type": "object",
            "required": ["skill"],
            "properties": {
                "skill": {"type": "string", "minLength": 1},
                "should_trigger": {"type": "boolean"},
            },
        })),
        AssertionType::new(agentv5::TOOL_USED, "AgentV 5's trajectory:tool-used: the agent called these tools (or, inverse, none of them)").schema(json!({
            "type": "object", "required": ["value"],
            "properties": {"value": {}, "inverse": {"type": "boolean"}, "require_trace": {"type": "boolean"}},
        })),
        AssertionType::new(agentv5::TOOL_SEQUENCE, "AgentV 5's trajectory:tool-sequence: the tools in this order (in_order or exact)").schema(json!({
            "type": "object", "required": ["value"],
            "properties": {"value": {"anyOf": [{"type": "array"}, {"type": "object"}]}, "inverse": {"type": "boolean"}, "require_trace": {"type": "boolean"}},
        })),
        AssertionType::new(agentv5::TOOL_ARGS_MATCH, "AgentV 5's trajectory:tool-args-match: a call of the tool with these arguments").schema(json!({
            "type": "object", "required": ["value"],
            "properties": {"value": {"type": "object"}, "inverse": {"type": "boolean"}, "require_trace": {"type": "boolean"}},
        })),
        AssertionType::new(agentv5::STEP_COUNT, "AgentV 5's trajectory:step-count: the number of matching trajectory steps within bounds").schema(json!({
            "type": "object", "required": ["value"],
            "properties": {"value": {"type": "object"}, "inverse": {"type": "boolean"}, "require_trace": {"type": "boolean"}},
        })),
        AssertionType::new(agentv5::SKILL_USED, "AgentV 5's skill-used: the agent loaded these skills (or, inverse, none of them)").schema(json!({
            "type": "object", "required": ["value"],
            "properties": {"value": {}, "inverse": {"type": "boolean"}},
        })),
        AssertionType::new(similar::SIMILAR, "AgentV 5's similar: (cosine + 1) / 2 of the value's and the output's embeddings reaches the threshold (default 0.75)")
            .capability(evalhost_plugin_sdk::Capability::Llm)
            .schema(json!({
                "type": "object", "required": ["value"],
                "properties": {"value": {"type": "string"}, "threshold": {"type": "number"}, "__embedder": {"type": "string"}},
            })),
        AssertionType::new("field-accuracy", "Fields of a JSON answer match the expected output's").schema(json!({
            "type": "object",
            "required": ["fields"],
            "properties": {
                "fields": {"type": "array", "minItems": 1, "items": {
                    "type": "object",
                    "required": ["path", "match"],
                    "properties": {
                        "path": {"type": "string", "minLength": 1},
                        "match": {"enum": ["exact", "numeric_tolerance", "date"]},
                        "required": {"type": "boolean"},
                        "weight": nonneg(),
                        "tolerance": nonneg(),
                        "relative": {"type": "boolean"},
                        "formats": {"type": "array", "items": {"type": "string"}},
                    },
                }},
                "aggregation": {"enum": ["weighted_average", "all_or_nothing"]},
            },
        })),
    ]
}

impl Grader for MetricsGrader {
    fn describe() -> Plugin {
        types().into_iter().fold(
            Plugin::new("evalhost-metrics", env!("CARGO_PKG_VERSION")).stateless(true),
            Plugin::assertion_type,
        )
    }

    fn check_config(assertion_type: &str, config: &Config) -> Result<(), String> {
        match assertion_type {
            "latency" => metrics::check_latency(config),
            "cost" => metrics::check_cost(config),
            "token-usage" => metrics::check_token_usage(config),
            "execution-metrics" => metrics::check_execution_metrics(config),
            "tool-trajectory" => trajectory::check(config),
            "skill-trigger" => skill::check(config),
            "field-accuracy" => field::check(config),
            similar::SIMILAR => similar::check(config),
            t if t.starts_with("agentv5-") => agentv5::check(t, config),
            other => Err(format!("evalhost-metrics does not grade `{other}`")),
        }
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let graded = match request.assertion_type.as_str() {
            "latency" => metrics::latency(request),
            "cost" => metrics::cost(request),
            "token-usage" => metrics::token_usage(request),
            "execution-metrics" => metrics::execution_metrics(request),
            "tool-trajectory" => trajectory::grade(request),
            "skill-trigger" => skill::grade(request),
            "field-accuracy" => field::grade(request),
            similar::SIMILAR => similar::grade(request),
            t if t.starts_with("agentv5-") => agentv5::grade(request),
            other => Err(format!("evalhost-metrics does not grade `{other}`")),
        };
        graded.map_err(GradeError::Failed)
    }
}

export_grader!(MetricsGrader);

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::testing::Harness;
    use evalhost_plugin_sdk::{Message, TokenUsage, ToolCall, Trace};

    fn texts(grade: &Grade) -> Vec<String> {
        grade.checks.iter().map(|c| c.text.clone()).collect()
    }

    fn agent(calls: Vec<ToolCall>) -> Vec<Message> {
        vec![
            Message::new("assistant", "working").with_tool_calls(calls),
            Message::new("assistant", "done"),
        ]
    }

    fn grade(ty: &str, config: Value, messages: Vec<Message>, trace: Trace) -> Grade {
        let request = Request::new(ty, "done")
            .with_config(config)
            .with_output_messages(messages)
            .with_trace(trace);
        Harness::<MetricsGrader>::new().grade(&request).unwrap()
    }

    fn trace(
        duration: Option<u64>,
        cost: Option<f64>,
        tokens: Option<TokenUsage>,
        llm: Option<u32>,
    ) -> Trace {
        let mut t = Trace::default();
        t.duration_ms = duration;
        t.cost_usd = cost;
        t.token_usage = tokens;
        t.llm_calls = llm;
        t
    }

    #[test]
    fn latency_cost_and_tokens_read_the_trace() {
        let t = trace(
            Some(1500),
            Some(0.01234),
            Some(TokenUsage::new(1000, 250, 50)),
            Some(2),
        );
        let g = grade(
            "latency",
            json!({"threshold": 2000}),
            agent(vec![]),
            t.clone(),
        );
        assert_eq!(
            (g.score, texts(&g)),
            (1.0, vec!["Duration 1500ms <= 2000ms threshold".to_owned()])
        );
        let g = grade("cost", json!({"budget": 0.01}), agent(vec![]), t.clone());
        assert_eq!(
            (g.score, texts(&g)),
            (0.0, vec!["Cost $0.0123 > $0.0100 budget".to_owned()])
        );
        let g = grade(
            "token-usage",
            json!({"max_input": 5000, "max_total": 1200}),
            agent(vec![]),
            t,
        );
        assert_eq!(
            texts(&g),
            ["Input tokens 1000 <= 5000", "Total tokens 1300 > 1200"]
        );
        assert_eq!(g.score, 0.0);
    }

    #[test]
    fn missing_data_fails_with_the_reason() {
        let none = Trace::default();
        let g = grade(
            "latency",
            json!({"threshold": 1}),
            agent(vec![]),
            none.clone(),
        );
        assert_eq!(
            (g.score, texts(&g)),
            (0.0, vec!["No duration data available in trace".to_owned()])
        );
        let g = grade("cost", json!({"budget": 1}), agent(vec![]), none.clone());
        assert_eq!(texts(&g), ["No cost data available in trace"]);
        let g = grade(
            "token-usage",
            json!({"max_total": 1}),
            agent(vec![]),
            none.clone(),
        );
        assert_eq!(texts(&g), ["No token usage data available in trace"]);
        let g = grade(
            "execution-metrics",
            json!({"max_tool_calls": 5, "max_llm_calls": 5}),
            vec![],
            none.clone(),
        );
        assert_eq!(
            texts(&g),
            [
                "Tool call data not available (the target reported no trace)",
                "LLM call count data not available"
            ]
        );
        assert_eq!(g.score, 0.0);
        let g = grade(
            "tool-trajectory",
            json!({"mode": "any_order", "minimums": {}}),
            vec![],
            none.clone(),
        );
        assert_eq!(
            (g.score, texts(&g)),
            (0.0, vec!["No trace available for evaluation".to_owned()])
        );
        let g = grade(
            "skill-trigger",
            json!({"skill": "pdf", "should_trigger": false}),
            vec![],
            none,
        );
        assert_eq!(
            g.score, 0.0,
            "no trace is not evidence that a skill did not trigger"
        );
    }

    #[test]
    fn execution_metrics_scores_the_fraction_of_checks() {
        let calls = vec![
            ToolCall::new("Read"),
            ToolCall::new("Grep"),
            ToolCall::new("Bash"),
        ];
        let t = trace(
            Some(900),
            Some(0.5),
            Some(TokenUsage::new(100, 20, 1000)),
            Some(2),
        );
        let g = grade(
            "execution-metrics",
            json!({"max_tool_calls": 5, "max_llm_calls": 1, "max_tokens": 120, "max_cost_usd": 1,
                   "max_duration_ms": 1000, "target_exploration_ratio": 0.5}),
            agent(calls),
            t,
        );
        assert_eq!(
            texts(&g),
            [
                "Tool calls 3 <= 5 max",
                "LLM calls 2 > 1 max",
                "Total tokens 120 <= 120 max",
                "Cost $0.5000 <= $1.0000 max",
                "Duration 900ms <= 1000ms max",
                "Exploration ratio 0.67 within tolerance of target 0.5",
            ]
        );
        assert!((g.score - 5.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn trajectory_modes_follow_agentv() {
        let calls = || {
            vec![
                ToolCall::new("Read")
                    .with_input(json!({"path": "a"}))
                    .with_duration_ms(50),
                ToolCall::new("Grep").with_input(json!({"pattern": "x"})),
                ToolCall::new("Read").with_input(json!({"path": "b"})),
            ]
        };
        let t = Trace::default();
        let in_order = grade(
            "tool-trajectory",
            json!({"mode": "in_order", "expected": [{"tool": "Read", "args": {"path": "b"}}, {"tool": "Read"}]}),
            agent(calls()),
            t.clone(),
        );
        assert_eq!(
            texts(&in_order),
            [
                "Expected Read at position 0: tool found at 0 but args mismatch",
                "Found Read at position 2",
            ]
        );
        assert_eq!(in_order.score, 0.5);
        let exact = grade(
            "tool-trajectory",
            json!({"mode": "exact", "expected": [{"tool": "Read", "args": "any"}, {"tool": "Read"}]}),
            agent(calls()),
            t.clone(),
        );
        assert_eq!(
            texts(&exact),
            [
                "Expected 2 tool calls, got 3",
                "Position 0: Read",
                "Position 1: expected Read, got Grep"
            ]
        );
        assert_eq!(exact.score, 0.5);
        let latency = grade(
            "tool-trajectory",
            json!({"mode": "in_order", "expected": [
                {"tool": "Read", "args": {"path": "a"}, "max_duration_ms": 100},
                {"tool": "Write", "max_duration_ms": 10}]}),
            agent(calls()),
            t.clone(),
        );
        assert_eq!(
            texts(&latency),
            [
                "Found Read at position 0",
                "Read completed in 50ms (max: 100ms)",
                "Expected Write at position 1, not found in remaining trace",
            ]
        );
        assert_eq!(latency.score, 0.5, "(1 + 1) / (2 + 2)");
        let superset = grade(
            "tool-trajectory",
            json!({"mode": "superset", "args_match": "superset", "expected": [{"tool": "Read", "args": {"path": "b"}}, {"tool": "Edit"}]}),
            agent(calls()),
            t.clone(),
        );
        assert_eq!(
            texts(&superset),
            [
                "Found Read at position 2",
                "Expected Edit not found in actual trajectory"
            ]
        );
        let subset = grade(
            "tool-trajectory",
            json!({"mode": "subset", "expected": [{"tool": "Read", "args": "any"}]}),
            agent(calls()),
            t.clone(),
        );
        assert_eq!(
            texts(&subset),
            [
                "Position 0: Read is in allowed set",
                "Position 1: Grep is not in allowed set",
                "Position 2: Read is in allowed set",
            ]
        );
        assert!((subset.score - 2.0 / 3.0).abs() < 1e-12);
        let any = grade(
            "tool-trajectory",
            json!({"mode": "any_order", "minimums": {"Read": 2, "Edit": 1}}),
            agent(calls()),
            t,
        );
        assert_eq!(
            texts(&any),
            [
                "Read: called 2 times (required >=2)",
                "Edit: called 0 times (required >=1)"
            ]
        );
        assert_eq!(any.score, 0.5);
    }

    #[test]
    fn skill_trigger_looks_at_skill_calls_reads_and_outputs() {
        let t = Trace::default();
        let g = grade(
            "skill-trigger",
            json!({"skill": "pdf"}),
            agent(vec![
                ToolCall::new("Read").with_input(json!({"file_path": "/x/skills/pdf/SKILL.md"})),
            ]),
            t.clone(),
        );
        assert_eq!(
            (g.score, texts(&g)),
            (
                1.0,
                vec!["Read tool loaded skill file: /x/skills/pdf/SKILL.md".to_owned()]
            )
        );
        let g = grade(
            "skill-trigger",
            json!({"skill": "pdf"}),
            agent(vec![
                ToolCall::new("Skill").with_input(json!({"skill": "my-pdf-helper"})),
            ]),
            t.clone(),
        );
        assert_eq!(
            texts(&g),
            ["Skill tool invoked with skill=\"my-pdf-helper\""]
        );
        let g = grade(
            "skill-trigger",
            json!({"skill": "docx"}),
            agent(vec![
                ToolCall::new("Bash"),
                ToolCall::new("Read"),
                ToolCall::new("Grep"),
            ]),
            t.clone(),
        );
        assert_eq!(
            (g.score, texts(&g)),
            (
                0.0,
                vec!["Skill \"docx\" not found in 3 tool call(s)".to_owned()]
            )
        );
        let g = grade(
            "skill-trigger",
            json!({"skill": "docx", "should_trigger": false}),
            agent(vec![]),
            t,
        );
        assert_eq!(
            (g.score, texts(&g)),
            (
                1.0,
                vec!["Skill \"docx\" correctly did not trigger".to_owned()]
            )
        );
    }

    #[test]
    fn field_accuracy_weights_fields_as_agentv() {
        let expected = vec![Message::new("assistant", "").with_content_json(
            json!({"x": 1, "b": 2, "c": "3", "d": 100.0, "when": "2025-01-15"}),
        )];
        let grade_with = |output: &str, fields: Value| {
            let request = Request::new("field-accuracy", output)
                .with_config(json!({"fields": fields}))
                .with_expected_messages(expected.clone());
            Harness::<MetricsGrader>::new().grade(&request).unwrap()
        };
        let g = grade_with(
            "```json\n{\"x\": 1, \"c\": 3}\n```",
            json!([{"path": "x", "match": "exact"},
                   {"path": "b", "match": "exact", "required": false},
                   {"path": "c", "match": "exact", "weight": 2}]),
        );
        assert_eq!(
            texts(&g),
            [
                "x",
                "b: optional field missing",
                "c (type mismatch: got number, expected string)"
            ]
        );
        assert!((g.score - 1.0 / 3.0).abs() < 1e-12);
        let g = grade_with(
            "{\"d\": \"110 USD\", \"when\": \"Jan 15, 2025\"}",
            json!([{"path": "d", "match": "numeric_tolerance", "tolerance": 0.1, "relative": true},
                   {"path": "when", "match": "date"}]),
        );
        assert_eq!(texts(&g), ["d (within tolerance: diff=10.00)", "when"]);
        assert_eq!(g.score, 1.0);
        let g = grade_with("no json here", json!([{"path": "x", "match": "exact"}]));
        assert_eq!(texts(&g), ["Failed to parse candidate answer as JSON"]);
    }

    #[test]
    fn invalid_configs_name_the_key() {
        let h = Harness::<MetricsGrader>::new();
        for (ty, config, needle) in [
            ("latency", json!({}), "missing `threshold`"),
            (
                "latency",
                json!({"threshold": -1}),
                "`threshold` must be a non-negative number, got -1",
            ),
            (
                "cost",
                json!({"budget": "1"}),
                "`budget` must be a non-negative number",
            ),
            ("token-usage", json!({}), "at least one of `max_total`"),
            (
                "token-usage",
                json!({"max_output": -1, "max_total": 5}),
                "`max_output` must be",
            ),
            (
                "execution-metrics",
                json!({"exploration_tolerance": 0.1}),
                "at least one threshold",
            ),
            (
                "execution-metrics",
                json!({"max_tool_calls": 1, "max_cost_usd": "x"}),
                "`max_cost_usd` must be",
            ),
            (
                "tool-trajectory",
                json!({"mode": "sometimes"}),
                "`mode` must be one of",
            ),
            (
                "tool-trajectory",
                json!({"mode": "any_order"}),
                "needs `minimums`",
            ),
            (
                "tool-trajectory",
                json!({"mode": "in_order"}),
                "`in_order` mode needs `expected`",
            ),
            (
                "tool-trajectory",
                json!({"mode": "exact", "expected": [{"tool": "Read", "arg": {}}]}),
                "`expected[0].arg` is not a key",
            ),
            (
                "tool-trajectory",
                json!({"mode": "exact", "expected": [{"tool": "Read", "args_match": "fuzzy"}]}),
                "`expected[0].args_match` must be",
            ),
            (
                "tool-trajectory",
                json!({"mode": "any_order", "minimums": {"Read": -1}}),
                "`minimums.Read` must be",
            ),
            ("skill-trigger", json!({}), "missing `skill`"),
            (
                "skill-trigger",
                json!({"skill": "x", "should_trigger": "no"}),
                "`should_trigger` must be true or false",
            ),
            ("field-accuracy", json!({"fields": []}), "`fields` is empty"),
            (
                "field-accuracy",
                json!({"fields": [{"path": "a", "match": "fuzzy"}]}),
                "`fields[0].match` must be exact",
            ),
            (
                "field-accuracy",
                json!({"fields": [{"match": "exact"}]}),
                "`fields[0].path` must be",
            ),
            (
                "field-accuracy",
                json!({"fields": [{"path": "a", "match": "exact", "tolerance": 1}]}),
                "`fields[0].tolerance` only applies",
            ),
            (
                "field-accuracy",
                json!({"fields": [{"path": "a", "match": "exact"}], "aggregation": "mean"}),
                "`aggregation` must be",
            ),
        ] {
            let err = h.check_config(ty, config.clone()).unwrap_err();
            assert!(err.contains(needle), "{ty} {config}: {err}");
        }
    }
}
