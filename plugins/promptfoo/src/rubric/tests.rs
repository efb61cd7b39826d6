use evalhost_plugin_sdk::testing::Harness;
use evalhost_plugin_sdk::{Completion, Request, json};

fn with_reply(reply: &'static str, config: Value) -> Grade {
    let harness = Harness::<crate::PromptfooGrader>::new().llm(move |req| {
        // The output and the rubric reach the model in their tags.
        let user = &req.messages[1].1;
        assert!(user.contains("<Output>\nthe answer\n</Output>"), "{user}");
        assert!(user.contains("<Rubric>\nbe right\n</Rubric>"), "{user}");
        Ok(Completion {
            text: reply.into(),
            model: "m".into(),
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
            cached: false,
        })
    });
    let mut c = json!({"value": "be right"});
    if let (Some(c), Value::Object(extra)) = (c.as_object_mut(), config) {
        c.extend(extra);
    }
    harness
        .grade(&Request::new("promptfoo-llm-rubric", "the answer").with_config(c))
        .unwrap()
}

use super::*;

fn verdict(g: &Grade) -> bool {
    g.details.as_ref().unwrap()["verdict"] == "pass"
}

#[test]
fn judge_samples_take_the_mean_and_a_strict_majority() {
    let seeds = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = seeds.clone();
    let harness = Harness::<crate::PromptfooGrader>::new().llm(move |req| {
        seen.borrow_mut().push(req.seed);
        // Seeds 1 and 2 pass with 0.9; seed 3 fails with 0.
        let text = if req.seed == Some(3) {
            r#"{"pass": false, "score": 0, "reason": "no"}"#
        } else {
            r#"{"pass": true, "score": 0.9, "reason": "yes"}"#
        };
        Ok(Completion {
            text: text.into(),
            model: "m".into(),
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
            cached: false,
        })
    });
    let g = harness
        .grade(
            &Request::new("promptfoo-llm-rubric", "x")
                .with_config(json!({"value": "r", "judge_samples": 3})),
        )
        .unwrap();
    assert_eq!(*seeds.borrow(), vec![Some(1), Some(2), Some(3)]);
    assert!((g.score - 0.6).abs() < 1e-12);
    assert!(verdict(&g));
    assert_eq!(
        g.details.as_ref().unwrap()["samples"]["verdicts"],
        json!([true, true, false])
    );
    // One answer: no seed, promptfoo's own request.
    seeds.borrow_mut().clear();
    harness
        .grade(&Request::new("promptfoo-llm-rubric", "x").with_config(json!({"value": "r"})))
        .unwrap();
    assert_eq!(*seeds.borrow(), vec![None]);
}

#[test]
fn line_matches_are_javascripts() {
    assert_eq!(
        line_match("x {\"steps\": [1]} y }", "{\"steps\""),
        Some("{\"steps\": [1]} y }")
    );
    // `.` stops at a line break; `.+` needs a character.
    assert_eq!(line_match("{\"steps\"\n}", "{\"steps\""), None);
    assert_eq!(line_match("{}\n{a}", "{"), Some("{a}"));
    assert_eq!(line_match("no braces", "{"), None);
}

fn geval(replies: &'static [&'static str], config: Value) -> Grade {
    let calls = std::cell::Cell::new(0);
    let harness = Harness::<crate::PromptfooGrader>::new().llm(move |req| {
        let i = calls.get();
        calls.set(i + 1);
        // The evaluation call shows the steps and the output.
        if i % 2 == 1 {
            let user = &req.messages[0].1;
            assert!(
                user.contains("- S1\n- S2") && user.contains("the answer"),
                "{user}"
            );
        }
        Ok(Completion {
            text: replies[i % replies.len()].into(),
            model: "m".into(),
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
            cached: false,
        })
    });
    harness
        .grade(&Request::new("promptfoo-g-eval", "the answer").with_config(config))
        .unwrap()
}

#[test]
fn g_eval_scores_over_ten_against_its_threshold() {
    let ok: &[&str] = &[
        r#"{"steps": ["S1", "S2"]}"#,
        r#"{"score": 7, "reason": "fine"}"#,
    ];
    let g = geval(ok, json!({"value": "c"}));
    assert!(verdict(&g) && (g.score - 0.7).abs() < 1e-12);
    let g = geval(ok, json!({"value": "c", "threshold": 0.8}));
    assert!(!verdict(&g));
    let g = geval(ok, json!({"value": "c", "inverse": true}));
    assert!(!verdict(&g) && (g.score - 0.3).abs() < 1e-9);
    // An unusable reply fails, inverted or not.
    let bad: &[&str] = &[
        r#"{"steps": ["S1", "S2"]}"#,
        r#"{"score": 11, "reason": "x"}"#,
    ];
    for inverse in [false, true] {
        let g = geval(bad, json!({"value": "c", "inverse": inverse}));
        assert!(!verdict(&g) && g.score == 0.0, "{:?}", g.checks);
    }
    let g = geval(bad, json!({"value": ["a", "b"]}));
    assert_eq!(
        g.checks[0].text,
        "G-Eval criterion 1/2 (\"a\") failed: G-Eval result score 11 is outside the expected 0-10 range"
    );
}

#[test]
fn factuality_replies_are_read_as_promptfoo_reads_them() {
    assert_eq!(
        factuality_category(r#"{"category": " b ", "reason": " x "}"#),
        Ok(('B', "x".to_owned()))
    );
    assert_eq!(
        factuality_category(r#"{"category": "D"}"#).unwrap().1,
        "Category D: There is a disagreement between the submitted answer and the expert answer."
    );
    assert_eq!(
        factuality_category(r#"{"category": "F"}"#),
        Err("Invalid category value: F".to_owned())
    );
    assert_eq!(
        factuality_category("I pick (e) since they differ"),
        Ok(('E', "since they differ".to_owned()))
    );
    assert!(factuality_category("no idea").is_err());
}

#[test]
fn replies_are_read_as_promptfoo_reads_them() {
    let g = with_reply(r#"{"reason": "ok", "pass": true, "score": 0.9}"#, json!({}));
    assert!(verdict(&g) && (g.score - 0.9).abs() < 1e-12);
    // No pass: a pass; no score: the pass as 1.
    let g = with_reply(r#"text {"reason": "fine"} more"#, json!({}));
    assert!(verdict(&g) && g.score == 1.0);
    // A threshold needs the score too.
    let g = with_reply(
        r#"{"pass": "yes", "score": "0.4"}"#,
        json!({"threshold": 0.5}),
    );
    assert!(!verdict(&g));
    assert_eq!(g.checks[0].text, "Score 0.4 below threshold 0.5");
    // Inverted: the verdict flips, the score is 1 - s.
    let g = with_reply(
        r#"{"pass": true, "score": 0.8, "reason": "r"}"#,
        json!({"inverse": true}),
    );
    assert!(!verdict(&g) && (g.score - 0.2).abs() < 1e-9);
    // No JSON: a failure, never a pass.
    let g = with_reply("It passes, I think.", json!({}));
    assert!(!verdict(&g));
    assert_eq!(
        g.checks[0].text,
        "Could not extract JSON from llm-rubric response"
    );
}
