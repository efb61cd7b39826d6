//! `mode: conversation` (AgentV §2.10): `turns`, each with its input,
//! optional `expected_output` and `assertions` (string criteria become one
//! `turn-rubrics` judge, as AgentV groups them), and how the turns combine.

use super::*;
use crate::model::{Conversation, Turn, TurnAggregation};

impl Loader {
    /// The conversation of a test, when `mode: conversation`; `turns`
    /// without it is an error (AgentV's validator refuses it too; its run
    /// would ignore the turns).
    pub(super) fn conversation(
        &mut self,
        doc: &Arc<Doc>,
        test: &Map<String, Value>,
        at: &KeyPath,
        id: &str,
    ) -> Option<Box<Conversation>> {
        match test.get("mode") {
            None | Some(Value::Null) => {
                if test.contains_key("turns") {
                    self.error(doc, &at.key("turns"), format!("test `{id}` has `turns` but no `mode: conversation`"))
                        .hint = Some("add `mode: conversation` (without it AgentV runs the test as a single call and ignores the turns)".into());
                }
                return None;
            }
            Some(Value::String(m)) if m == "conversation" => {}
            Some(other) => {
                self.error(
                    doc,
                    &at.key("mode"),
                    format!("`mode` must be `conversation`, got {}", show(other)),
                );
                return None;
            }
        }
        let Some(Value::Array(items)) = test
            .get("turns")
            .filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
        else {
            self.error(
                doc,
                &at.key("turns"),
                format!("test `{id}` is a conversation but has no `turns` (a non-empty list)"),
            );
            return None;
        };
        let items = items.clone();
        let mut turns = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let tat = at.key("turns").index(i);
            let Value::Object(turn) = item else {
                self.error(
                    doc,
                    &tat,
                    format!("a turn must be a mapping with `input`, got {}", kind(item)),
                );
                continue;
            };
            for key in turn.keys() {
                if !["input", "expected_output", "assertions"].contains(&key.as_str()) {
                    let hint = nearest(key, ["input", "expected_output", "assertions"]);
                    self.error(doc, &tat.key(key), format!("unknown key `{key}` in a turn"))
                        .hint = hint.map(|h| format!("did you mean `{h}`?"));
                }
            }
            let input = match turn.get("input") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => {
                    self.error(
                        doc,
                        &tat,
                        format!("turn {} of test `{id}` has no `input`", i + 1),
                    );
                    continue;
                }
                // AgentV sends content that is not a string as its JSON.
                Some(other) => other.to_string(),
            };
            let expected = match turn.get("expected_output") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            };
            let owner = format!("test `{id}`, turn {}", i + 1);
            let mut assertions = Vec::new();
            let mut criteria = Vec::new();
            match turn.get("assertions") {
                None | Some(Value::Null) => {}
                Some(Value::Array(list)) => {
                    for (j, a) in list.iter().enumerate() {
                        let aat = tat.key("assertions").index(j);
                        match a {
                            Value::String(s) if !s.trim().is_empty() => {
                                criteria.push(s.trim().to_owned())
                            }
                            Value::Object(entry) => {
                                if let Some(parsed) =
                                    self.assertion(doc, entry, &aat, false, &owner)
                                {
                                    assertions.push(parsed);
                                }
                            }
                            other => {
                                self.error(doc, &aat, format!("a turn's assertion must be a mapping with a `type` or a string criterion, got {}", kind(other)));
                            }
                        }
                    }
                }
                Some(other) => {
                    self.error(
                        doc,
                        &tat.key("assertions"),
                        format!("a turn's `assertions` must be a list, got {}", kind(other)),
                    );
                }
            }
            if !criteria.is_empty() {
                // AgentV: one `turn-rubrics` judge, items `criterion-<n>`,
                // weight 1, not required, first in the list.
                let items: Vec<Value> = criteria
                    .iter()
                    .enumerate()
                    .map(|(n, c)| json!({"id": format!("criterion-{}", n + 1), "outcome": c, "weight": 1, "required": false}))
                    .collect();
                let mut config = Map::new();
                config.insert("criteria".into(), Value::Array(items));
                let mut rubric =
                    rubric_assertion(config, 1.0, doc.loc(&tat.key("assertions")), false);
                rubric.name = "turn-rubrics".into();
                assertions.insert(0, rubric);
            }
            if assertions.is_empty() && expected.is_some() {
                // A turn with only `expected_output`: AgentV's implicit judge.
                assertions.push(implicit_llm_grader(doc.loc(&tat)));
            }
            turns.push(Turn {
                input,
                expected,
                assertions,
            });
        }
        let aggregation = match test.get("aggregation") {
            None | Some(Value::Null) => TurnAggregation::Mean,
            Some(Value::String(a)) if a == "mean" => TurnAggregation::Mean,
            Some(Value::String(a)) if a == "min" => TurnAggregation::Min,
            Some(Value::String(a)) if a == "max" => TurnAggregation::Max,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("aggregation"),
                    format!(
                        "`aggregation` must be mean, min or max, got {}",
                        show(other)
                    ),
                );
                TurnAggregation::Mean
            }
        };
        let stop_on_failure = match test.get("on_turn_failure") {
            None | Some(Value::Null) => false,
            Some(Value::String(p)) if p == "continue" => false,
            Some(Value::String(p)) if p == "stop" => true,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("on_turn_failure"),
                    format!(
                        "`on_turn_failure` must be continue or stop, got {}",
                        show(other)
                    ),
                );
                false
            }
        };
        let window_size = self
            .positive_int(doc, test.get("window_size"), at, "window_size")
            .map(|n| n as usize);
        Some(Box::new(Conversation {
            turns,
            aggregation,
            stop_on_failure,
            window_size,
        }))
    }
}

/// AgentV's implicit default grader: an LLM judge of the criteria and the
/// expected output.
pub(super) fn implicit_llm_grader(loc: Loc) -> Assertion {
    let config = Map::new();
    Assertion {
        name: "llm-grader".into(),
        kind: "llm-grader".into(),
        negate: false,
        weight: 1.0,
        required: Required::No,
        min_score: None,
        limits: LimitOverrides::default(),
        config_json: Value::Object(config.clone()).to_string().into(),
        config: Arc::new(config),
        loc,
        key_positions: KeyPositions::default(),
        group: None,
        wasm: None,
        from_suite: false,
        preprocessors: Arc::from([]),
        prompt_script: None,
        transform: None,
        plugin_type: None,
    }
}
