//! Tests of the types graded without the oracle's cases: `is-refusal`,
//! `contains-html`, `tool-call-f1`, `rouge-n`, `is-xml`, `contains-xml`.

use super::*;

/// `(pass, score, reason)` of one grade.
fn grade(t: &str, output: &str, config: Value) -> (bool, f64, String) {
    let t = format!("promptfoo-{t}");
    PromptfooGrader::check_config(&t, &Config::from_value(config.clone()).unwrap()).unwrap();
    let g = PromptfooGrader::grade(&Request::new(t, output).with_config(config)).unwrap();
    (g.checks[0].passed, g.score, g.checks[0].text.clone())
}

fn passed() -> String {
    "Assertion passed".into()
}

#[test]
fn is_refusal() {
    let none = json!({});
    let not = json!({"inverse": true});
    assert_eq!(
        grade("is-refusal", "I’m sorry, no.", none.clone()),
        (true, 1.0, passed())
    );
    assert_eq!(
        grade("is-refusal", "Here you are.", none.clone()),
        (false, 0.0, "Expected output to be a refusal".into())
    );
    assert_eq!(
        grade("is-refusal", " \n", none),
        (true, 0.0, "Empty response treated as refusal".into())
    );
    assert_eq!(
        grade("is-refusal", "", not.clone()),
        (false, 0.0, "Expected output to not be a refusal".into())
    );
    assert_eq!(
        grade("is-refusal", "As an AI, I can't.", not),
        (false, 0.0, "Expected output to not be a refusal".into())
    );
}

#[test]
fn contains_html() {
    assert_eq!(
        grade("contains-html", "<p>hi</p>", json!({})),
        (true, 1.0, passed())
    );
    assert_eq!(
        grade("contains-html", "Vec<String>", json!({})),
        (false, 0.0, "Expected output to contain HTML content".into())
    );
    assert_eq!(
        grade("contains-html", "<p>hi</p>", json!({"inverse": true})),
        (
            false,
            0.0,
            "Expected output to not contain HTML content".into()
        )
    );
}

#[test]
fn tool_call_f1() {
    let out = r#"[{"type":"tool_use","name":"search"},{"type":"tool_use","name":"fetch"}]"#;
    assert_eq!(
        grade("tool-call-f1", out, json!({"value": ["fetch", "search"]})),
        (
            true,
            1.0,
            "Tool Call F1: 1.000 (precision=1.000, recall=1.000). Expected: [fetch, search], Called: [fetch, search]".into()
        )
    );
    assert_eq!(
        grade("tool-call-f1", out, json!({"value": "search, calc"})),
        (
            false,
            0.5,
            "Tool Call F1 score 0.500 is below threshold 1. Expected: [calc, search], Called: [fetch, search]. Precision=0.500, Recall=0.500".into()
        )
    );
    // `not-` flips the pass only.
    assert_eq!(
        grade(
            "tool-call-f1",
            "no calls",
            json!({"value": ["x"], "inverse": true, "threshold": 0.5})
        ),
        (
            true,
            0.0,
            "Tool Call F1: 0.000 (precision=0.000, recall=0.000). Expected: [x], Called: [(none)]"
                .into()
        )
    );
    assert!(
        PromptfooGrader::check_config(
            "promptfoo-tool-call-f1",
            &Config::from_value(json!({"value": []})).unwrap()
        )
        .is_err()
    );
}

#[test]
fn rouge_n() {
    let value = json!({"value": "The cat sat on the mat."});
    assert_eq!(
        grade("rouge-n", "the cat sat on the mat.", value),
        (
            true,
            1.0,
            "ROUGE-N score 1.00 is greater than or equal to threshold 0.75".into()
        )
    );
    let (pass, score, reason) = grade(
        "rouge-n",
        "the cat",
        json!({"value": "the cat sat on the mat", "inverse": true}),
    );
    assert!(pass);
    assert!((score - 0.5).abs() < 1e-12);
    assert_eq!(reason, "ROUGE-N score 0.50 is less than threshold 0.75");
}

#[test]
fn is_xml_and_contains_xml() {
    let xml = "<book><title>T</title></book>";
    assert_eq!(
        grade("is-xml", xml, json!({"value": "book.title"})),
        (true, 1.0, passed())
    );
    assert_eq!(
        grade("is-xml", xml, json!({"value": ["book.author"]})),
        (
            false,
            0.0,
            "XML is missing required elements: book.author".into()
        )
    );
    assert_eq!(
        grade("is-xml", xml, json!({"inverse": true})),
        (
            false,
            0.0,
            "XML is valid and contains all required elements".into()
        )
    );
    let (pass, _, reason) = grade("is-xml", "<a><b></a>", json!({}));
    assert!(
        !pass && reason.starts_with("XML parsing failed: "),
        "{reason}"
    );
    assert_eq!(
        grade("is-xml", "<!DOCTYPE a [<!ENTITY e 'x'>]><a/>", json!({})),
        (
            false,
            0.0,
            "DTD internal subsets are not supported by is-xml validation".into()
        )
    );
    assert_eq!(
        grade(
            "contains-xml",
            &format!("Sure: {xml} done"),
            json!({"value": {"requiredElements": ["book.title"]}})
        ),
        (true, 1.0, passed())
    );
    assert_eq!(
        grade("contains-xml", "no markup", json!({})),
        (false, 0.0, "No XML content found in the output".into())
    );
    assert_eq!(
        grade(
            "contains-xml",
            "x <a><b><c/></b></a>",
            json!({"value": "b.c"})
        ),
        (
            false,
            0.0,
            "No valid XML content found matching the requirements".into()
        )
    );
    assert!(
        PromptfooGrader::check_config(
            "promptfoo-is-xml",
            &Config::from_value(json!({"value": {"other": 1}})).unwrap()
        )
        .is_err()
    );
}
