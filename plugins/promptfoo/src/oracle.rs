//! Cases graded by promptfoo 0.121.20 itself (`testdata/oracle.mjs` runs its
//! `runAssertion` and js-rouge's tokenizer): the same pass, score and
//! reason here.

use super::*;

fn oracle() -> Value {
    serde_json::from_str(include_str!("testdata/oracle.json")).expect("oracle.json parses")
}

/// Grades one recorded case; `(pass, score, reason)`.
pub(crate) fn grade_case(case: &Value) -> Result<(bool, f64, String), String> {
    let raw = case["type"].as_str().unwrap();
    let (base, inverse) = match raw.strip_prefix("not-") {
        Some(b) => (b, true),
        None => (raw, false),
    };
    let mut config = serde_json::Map::new();
    if !case["value"].is_null() {
        config.insert("value".into(), case["value"].clone());
    }
    if !case["threshold"].is_null() {
        config.insert("threshold".into(), case["threshold"].clone());
    }
    if inverse {
        config.insert("inverse".into(), Value::Bool(true));
    }
    // What the suite reader hands over: a string schema's YAML parse,
    // the provider.
    if let Some(v) = case.get("parsed_value") {
        config.insert("__parsed_value".into(), v.clone());
    }
    if let Some(e) = case.get("parse_error") {
        config.insert("__parse_error".into(), e.clone());
    }
    if let Some(p) = case.get("provider") {
        config.insert("__provider".into(), p.clone());
    }
    let t = format!("promptfoo-{base}");
    let config = Value::Object(config);
    PromptfooGrader::check_config(&t, &Config::from_value(config.clone()).unwrap())?;
    // An object output (promptfoo's provider returned one) is its JSON
    // text in evalhost; an OpenAI reply with calls says so.
    let (output, structured) = match &case["output"] {
        Value::String(s) => (s.clone(), false),
        other => (js::stringify(other), true),
    };
    let mut request = Request::new(t, output).with_config(config);
    if structured && case["provider"]["kind"] == "openai" {
        request = request.with_finish_reason("tool_calls");
    }
    let grade = PromptfooGrader::grade(&request).map_err(|e| format!("grade: {e:?}"))?;
    let check = &grade.checks[0];
    Ok((check.passed, grade.score, check.text.clone()))
}

/// Outputs on which roxmltree and saxes disagree (documented in
/// `xml/mod.rs`): an XML 1.1 document that undeclares a prefix
/// (`xmlns:x=""`) and then uses it is accepted by roxmltree, which does
/// not expose prefixes.
const KNOWN_XML_DIFFERENCES: &[&str] =
    &[r#"<?xml version="1.1"?><r xmlns:x="urn:x"><x:a xmlns:x=""/></r>"#];

/// A saxes error as promptfoo reports it: "XML parsing failed: 1:5: …".
fn is_saxes_message(reason: &str) -> bool {
    let Some(rest) = reason.strip_prefix("XML parsing failed: ") else {
        return false;
    };
    let mut parts = rest.splitn(3, ':');
    let digits =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_some()
}

/// A `JSON.parse` error as V8 words it ("Unexpected token …",
/// "… in JSON at position …"): evalhost says where JSON.parse failed
/// but not in V8's words.
fn is_v8_json_message(reason: &str) -> bool {
    reason.contains("is not valid JSON")
        || reason.contains("in JSON at position")
        || reason.contains("Unexpected end of JSON input")
}

#[test]
fn oracle_cases_match_promptfoo() {
    let oracle = oracle();
    let mut differ = Vec::new();
    let (mut saxes_wording, mut known, mut v8_wording) = (0, 0, 0);
    let cases = oracle["assertions"].as_array().unwrap();
    for case in cases {
        if case["output"]
            .as_str()
            .is_some_and(|o| KNOWN_XML_DIFFERENCES.contains(&o))
        {
            known += 1;
            continue;
        }
        if let Some(error) = case.get("error") {
            // promptfoo threw (an error row): evalhost accepts the
            // config and errors when it grades.
            match grade_case(case) {
                Err(e) if e.starts_with("grade: ") => {}
                other => differ.push(format!(
                    "{case}\n  promptfoo throws {error}\n  evalhost {other:?}"
                )),
            }
            continue;
        }
        let want = (
            case["pass"].as_bool().unwrap(),
            case["score"].as_f64().unwrap(),
            case["reason"].as_str().unwrap().to_owned(),
        );
        match grade_case(case) {
            Ok(got) => {
                if got.0 != want.0 || (got.1 - want.1).abs() > 1e-12 {
                    differ.push(format!("{case}\n  evalhost {got:?}"));
                } else if got.2 != want.2 {
                    // saxes' own message ("L:C: …") is the one text not
                    // reproduced: roxmltree checks well-formedness.
                    if is_saxes_message(&want.2) && got.2.starts_with("XML parsing failed: ") {
                        saxes_wording += 1;
                    } else if is_v8_json_message(&want.2)
                        && got.2.starts_with(tools::JSON_PARSE_MARK)
                    {
                        v8_wording += 1;
                    } else {
                        differ.push(format!("{case}\n  evalhost {got:?}"));
                    }
                }
            }
            Err(e) => differ.push(format!("{case}\n  evalhost error {e}")),
        }
    }
    eprintln!(
        "{} cases: {} differ; {saxes_wording} differ only in saxes' wording of a parse error, {v8_wording} only in V8's wording of a JSON.parse error; {known} on known differences not compared",
        cases.len(),
        differ.len()
    );
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
}

/// A parsed object's shape as the oracle writes it: primitives as null,
/// keys sorted (JavaScript lists integer-like keys first).
fn shape(js: &xml::Js) -> Value {
    match js {
        xml::Js::Prim => Value::Null,
        xml::Js::Arr(items) => Value::Array(items.iter().map(shape).collect()),
        xml::Js::Obj(m) => {
            let sorted: std::collections::BTreeMap<&str, Value> =
                m.iter().map(|(k, v)| (k.as_str(), shape(v))).collect();
            serde_json::to_value(sorted).unwrap()
        }
    }
}

fn sorted(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        Value::Object(m) => {
            let s: std::collections::BTreeMap<&str, Value> =
                m.iter().map(|(k, v)| (k.as_str(), sorted(v))).collect();
            serde_json::to_value(s).unwrap()
        }
        other => other.clone(),
    }
}

#[test]
fn fast_xml_parser_port_matches() {
    let oracle = oracle();
    let mut differ = Vec::new();
    let cases = oracle["fxp"].as_array().unwrap();
    for case in cases {
        let input = case["input"].as_str().unwrap();
        let got = xml::fxp_parse(input);
        let ok = match (&got, case.get("error")) {
            (Err(e), Some(want)) => e == want.as_str().unwrap(),
            (Ok(js), None) => shape(js) == sorted(&case["shape"]),
            _ => false,
        };
        if !ok {
            differ.push(format!(
                "{input:?}\n  fast-xml-parser {}\n  evalhost {:?}",
                case.get("error").unwrap_or(&case["shape"]),
                got.map(|j| shape(&j))
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
}

#[test]
fn tokens_match_js_rouge() {
    let oracle = oracle();
    let mut differ = Vec::new();
    let cases = oracle["tokenize"].as_array().unwrap();
    for case in cases {
        let input = case["input"].as_str().unwrap();
        let want: Vec<&str> = case["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        let got: Vec<String> = rouge::tree_bank_tokenize(input)
            .iter()
            .map(|t| String::from_utf16_lossy(t))
            .collect();
        if got != want {
            differ.push(format!(
                "{input:?}\n  js-rouge {want:?}\n  evalhost {got:?}"
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
}
