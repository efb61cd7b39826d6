//! The Nunjucks corpus (`tests/data/nunjucks/corpus.jsonl`): every
//! template, rendered with its vars, is byte for byte what real Nunjucks
//! 3.2.4 printed (recorded by `scripts/nunjucks/record.mjs`), or refused —
//! never different. Templates Nunjucks could not render must fail here too.

use serde_json::{Map, Value};

use crate::promptfoo::render::Renderer;

fn corpus() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/nunjucks/corpus.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn every_template_renders_as_nunjucks_renders_it_or_is_refused() {
    let mut env = Map::new();
    env.insert("HOME_REGION".into(), Value::from("eu-west-1"));
    env.insert("API_HOST".into(), Value::from("api.example.com"));
    let renderer = Renderer::new(&env);
    let rows = corpus();
    let (mut equal, mut refused, mut templates) = (0, Vec::new(), std::collections::HashSet::new());
    let mut different = Vec::new();
    for row in &rows {
        let id = row["id"].as_str().unwrap_or_default();
        let template = row["template"].as_str().unwrap_or_default();
        templates.insert(template);
        let vars = match crate::yaml::parse(row["vars_yaml"].as_str().unwrap_or("{}")) {
            Ok(Value::Object(m)) => m,
            Ok(Value::Null) => Map::new(),
            other => panic!("{id}: vars are not a mapping: {other:?}"),
        };
        let ours = renderer.render_text(template, &vars);
        match (row.get("output").and_then(Value::as_str), ours) {
            (Some(want), Ok(got)) if want == got => equal += 1,
            (Some(want), Ok(got)) => different.push(format!(
                "{id}: {template:?}\n    vars: {}\n    nunjucks: {want:?}\n    evalhost: {got:?}",
                row["vars_yaml"]
            )),
            (Some(_), Err(e)) if crate::promptfoo::render::is_refusal(&e) => {
                refused.push(format!("{id}: {e}"))
            }
            (Some(want), Err(e)) => different.push(format!(
                "{id}: {template:?}\n    vars: {}\n    nunjucks: {want:?}\n    evalhost: error {e}",
                row["vars_yaml"]
            )),
            // Nunjucks failed: so must evalhost.
            (None, Err(_)) => equal += 1,
            (None, Ok(got)) => different.push(format!(
                "{id}: {template:?}\n    nunjucks: error {}\n    evalhost: {got:?}",
                row["error"]
            )),
        }
    }
    eprintln!(
        "nunjucks corpus: {} renders of {} templates: {equal} equal, {} refused, {} different",
        rows.len(),
        templates.len(),
        refused.len(),
        different.len()
    );
    for r in &refused {
        eprintln!("refused {r}");
    }
    assert!(
        templates.len() >= 200,
        "the corpus holds {} templates",
        templates.len()
    );
    assert!(
        different.is_empty(),
        "{} rendered differently:\n{}",
        different.len(),
        different.join("\n")
    );
}
