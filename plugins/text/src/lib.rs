//! Built-in text assertions: `contains` and its variants, `starts-with`,
//! `ends-with`, `equals` and `is-json`, with AgentV 4.42's semantics and check
//! texts. Built only on the public plugin SDK.

use evalhost_plugin_sdk::{
    AssertionType, Check, Config, Grade, GradeError, Grader, Plugin, Request, Value, export_grader,
    json,
};

/// The text grader plugin.
pub struct TextGrader;

const SINGLE: &[(&str, &str)] = &[
    ("contains", "Output contains a substring (case-sensitive)"),
    ("icontains", "Output contains a substring, ignoring case"),
    (
        "starts-with",
        "Trimmed output starts with the trimmed value",
    ),
    ("ends-with", "Trimmed output ends with the trimmed value"),
    ("equals", "Trimmed output equals the trimmed value exactly"),
];

const LISTS: &[(&str, &str)] = &[
    (
        "contains-any",
        "Output contains at least one of the strings",
    ),
    ("contains-all", "Output contains every one of the strings"),
    (
        "icontains-any",
        "Output contains at least one of the strings, ignoring case",
    ),
    (
        "icontains-all",
        "Output contains every one of the strings, ignoring case",
    ),
];

fn string_schema() -> Value {
    json!({
        "type": "object",
        "required": ["value"],
        "properties": {"value": {"type": "string", "minLength": 1}},
        "additionalProperties": false,
    })
}

fn list_schema() -> Value {
    json!({
        "type": "object",
        "required": ["value"],
        "properties": {
            "value": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        },
        "additionalProperties": false,
    })
}

impl Grader for TextGrader {
    fn describe() -> Plugin {
        let mut plugin = Plugin::new("evalhost-text", env!("CARGO_PKG_VERSION")).stateless(true);
        for (name, description) in SINGLE {
            plugin = plugin
                .assertion_type(AssertionType::new(*name, *description).schema(string_schema()));
        }
        for (name, description) in LISTS {
            plugin = plugin
                .assertion_type(AssertionType::new(*name, *description).schema(list_schema()));
        }
        plugin.assertion_type(
            AssertionType::new("is-json", "Output parses as JSON (any value)")
                .schema(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        )
    }

    fn check_config(assertion_type: &str, config: &Config) -> Result<(), String> {
        match assertion_type {
            "is-json" => Ok(()),
            t if is_list(t) => config.required_str_list("value").map(|_| ()),
            t if is_single(t) => config.required_str("value").map(|_| ()),
            other => Err(format!("evalhost-text does not grade `{other}`")),
        }
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let output = request.output.as_str();
        let config = &request.config;
        let check = match request.assertion_type.as_str() {
            "contains" => contains(output, config.required_str("value")?),
            "icontains" => icontains(output, config.required_str("value")?),
            "contains-any" => contains_any(output, &config.required_str_list("value")?, false),
            "icontains-any" => contains_any(output, &config.required_str_list("value")?, true),
            "contains-all" => contains_all(output, &config.required_str_list("value")?, false),
            "icontains-all" => contains_all(output, &config.required_str_list("value")?, true),
            "starts-with" => starts_with(output, config.required_str("value")?),
            "ends-with" => ends_with(output, config.required_str("value")?),
            "equals" => equals(output, config.required_str("value")?),
            "is-json" => is_json(output),
            other => return Err(format!("evalhost-text does not grade `{other}`").into()),
        };
        Ok(Grade::from_check(check))
    }
}

fn is_single(t: &str) -> bool {
    SINGLE.iter().any(|(name, _)| *name == t)
}

fn is_list(t: &str) -> bool {
    LISTS.iter().any(|(name, _)| *name == t)
}

fn quoted(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn contains(output: &str, value: &str) -> Check {
    if output.contains(value) {
        Check::pass(format!("Output contains \"{value}\""))
    } else {
        Check::fail(format!("Output does not contain \"{value}\""))
    }
}

fn icontains(output: &str, value: &str) -> Check {
    if output.to_lowercase().contains(&value.to_lowercase()) {
        Check::pass(format!("Output contains \"{value}\" (case-insensitive)"))
    } else {
        Check::fail(format!(
            "Output does not contain \"{value}\" (case-insensitive)"
        ))
    }
}

fn contains_any(output: &str, values: &[&str], ignore_case: bool) -> Check {
    let haystack = if ignore_case {
        output.to_lowercase()
    } else {
        output.to_owned()
    };
    let suffix = if ignore_case {
        " (case-insensitive)"
    } else {
        ""
    };
    let found = values.iter().find(|v| {
        if ignore_case {
            haystack.contains(&v.to_lowercase())
        } else {
            haystack.contains(**v)
        }
    });
    match found {
        Some(v) => Check::pass(format!("Output contains \"{v}\"{suffix}")),
        None => Check::fail(format!(
            "Output does not contain any of: {}{suffix}",
            quoted(values)
        )),
    }
}

fn contains_all(output: &str, values: &[&str], ignore_case: bool) -> Check {
    let haystack = if ignore_case {
        output.to_lowercase()
    } else {
        output.to_owned()
    };
    let missing: Vec<&str> = values
        .iter()
        .copied()
        .filter(|v| {
            if ignore_case {
                !haystack.contains(&v.to_lowercase())
            } else {
                !haystack.contains(*v)
            }
        })
        .collect();
    match (missing.is_empty(), ignore_case) {
        (true, false) => Check::pass(format!(
            "Output contains all {} expected strings",
            values.len()
        )),
        (true, true) => Check::pass(format!(
            "Output contains all {} expected strings (case-insensitive)",
            values.len()
        )),
        (false, false) => Check::fail(format!("Output missing: {}", quoted(&missing))),
        (false, true) => Check::fail(format!(
            "Output missing (case-insensitive): {}",
            quoted(&missing)
        )),
    }
}

fn starts_with(output: &str, value: &str) -> Check {
    if output.trim().starts_with(value.trim()) {
        Check::pass(format!("Output starts with \"{value}\""))
    } else {
        Check::fail(format!("Output does not start with \"{value}\""))
    }
}

fn ends_with(output: &str, value: &str) -> Check {
    if output.trim().ends_with(value.trim()) {
        Check::pass(format!("Output ends with \"{value}\""))
    } else {
        Check::fail(format!("Output does not end with \"{value}\""))
    }
}

fn equals(output: &str, value: &str) -> Check {
    if output.trim() == value.trim() {
        Check::pass(format!("Output equals \"{value}\""))
    } else {
        Check::fail(format!("Output does not equal \"{value}\""))
            .with_evidence(excerpt(output.trim()))
    }
}

fn is_json(output: &str) -> Check {
    // Any JSON value counts, as with `JSON.parse`; surrounding whitespace is
    // allowed, anything else is not.
    match output.parse::<Value>() {
        Ok(_) => Check::pass("Output is valid JSON"),
        Err(err) => Check::fail("Output is not valid JSON").with_evidence(err.to_string()),
    }
}

/// At most 200 characters of `text`, for evidence.
fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

export_grader!(TextGrader);

#[cfg(test)]
mod tests {
    use super::*;

    fn grade(kind: &str, output: &str, config: Value) -> Grade {
        let request = Request::new(kind, output).with_config(config);
        TextGrader::check_config(kind, &request.config).expect("config is valid");
        TextGrader::grade(&request).expect("grades")
    }

    fn text(grade: &Grade) -> &str {
        &grade.checks[0].text
    }

    #[test]
    fn contains_is_case_sensitive() {
        let g = grade(
            "contains",
            "The capital is Paris.",
            json!({"value": "Paris"}),
        );
        assert_eq!((g.score, text(&g)), (1.0, "Output contains \"Paris\""));
        let g = grade(
            "contains",
            "The capital is paris.",
            json!({"value": "Paris"}),
        );
        assert_eq!(
            (g.score, text(&g)),
            (0.0, "Output does not contain \"Paris\"")
        );
    }

    #[test]
    fn icontains_ignores_unicode_case() {
        let g = grade("icontains", "GRÜSSE AUS KÖLN", json!({"value": "köln"}));
        assert_eq!(
            (g.score, text(&g)),
            (1.0, "Output contains \"köln\" (case-insensitive)")
        );
        let g = grade("icontains", "bonjour", json!({"value": "HELLO"}));
        assert_eq!(
            (g.score, text(&g)),
            (0.0, "Output does not contain \"HELLO\" (case-insensitive)")
        );
    }

    #[test]
    fn contains_any_names_the_first_match() {
        let g = grade(
            "contains-any",
            "red and blue",
            json!({"value": ["green", "blue", "red"]}),
        );
        assert_eq!((g.score, text(&g)), (1.0, "Output contains \"blue\""));
        let g = grade("contains-any", "grey", json!({"value": ["green", "blue"]}));
        assert_eq!(
            text(&g),
            "Output does not contain any of: \"green\", \"blue\""
        );
        let g = grade("icontains-any", "GREY", json!({"value": ["green", "blue"]}));
        assert_eq!(g.score, 0.0);
        assert_eq!(
            text(&g),
            "Output does not contain any of: \"green\", \"blue\" (case-insensitive)"
        );
        let g = grade(
            "icontains-any",
            "BLUE sky",
            json!({"value": ["green", "blue"]}),
        );
        assert_eq!(text(&g), "Output contains \"blue\" (case-insensitive)");
    }

    #[test]
    fn contains_all_lists_what_is_missing() {
        let g = grade(
            "contains-all",
            "alpha beta gamma",
            json!({"value": ["alpha", "gamma"]}),
        );
        assert_eq!(
            (g.score, text(&g)),
            (1.0, "Output contains all 2 expected strings")
        );
        let g = grade(
            "contains-all",
            "alpha",
            json!({"value": ["alpha", "beta", "delta"]}),
        );
        assert_eq!(
            (g.score, text(&g)),
            (0.0, "Output missing: \"beta\", \"delta\"")
        );
        let g = grade(
            "icontains-all",
            "ALPHA",
            json!({"value": ["alpha", "beta"]}),
        );
        assert_eq!(text(&g), "Output missing (case-insensitive): \"beta\"");
        let g = grade(
            "icontains-all",
            "ALPHA BETA",
            json!({"value": ["alpha", "beta"]}),
        );
        assert_eq!(
            text(&g),
            "Output contains all 2 expected strings (case-insensitive)"
        );
    }

    #[test]
    fn starts_ends_and_equals_trim_both_sides() {
        let g = grade("starts-with", "  Hello world\n", json!({"value": " Hello"}));
        assert_eq!((g.score, text(&g)), (1.0, "Output starts with \" Hello\""));
        let g = grade("ends-with", "Hello world\n\n", json!({"value": "world "}));
        assert_eq!(g.score, 1.0);
        let g = grade("ends-with", "Hello world!", json!({"value": "world"}));
        assert_eq!(
            (g.score, text(&g)),
            (0.0, "Output does not end with \"world\"")
        );
        let g = grade("equals", "\t42 \n", json!({"value": "42"}));
        assert_eq!((g.score, text(&g)), (1.0, "Output equals \"42\""));
        let g = grade("equals", "42.0", json!({"value": "42"}));
        assert_eq!((g.score, text(&g)), (0.0, "Output does not equal \"42\""));
        assert_eq!(g.checks[0].evidence.as_deref(), Some("42.0"));
    }

    #[test]
    fn is_json_accepts_any_value_and_whitespace() {
        for ok in ["{\"a\": [1, 2]}", " 42 ", "\"x\"", "null", "[]\n"] {
            assert_eq!(grade("is-json", ok, json!({})).score, 1.0, "{ok:?}");
        }
        for bad in ["", "{a: 1}", "```json\n{}\n```", "{} {}", "NaN"] {
            let g = grade("is-json", bad, json!({}));
            assert_eq!(
                (g.score, text(&g)),
                (0.0, "Output is not valid JSON"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn empty_output_fails_every_positive_check() {
        for kind in [
            "contains",
            "icontains",
            "starts-with",
            "ends-with",
            "equals",
        ] {
            assert_eq!(grade(kind, "", json!({"value": "x"})).score, 0.0, "{kind}");
        }
    }

    #[test]
    fn huge_output_is_graded() {
        let mut output = "lorem ipsum ".repeat(1_000_000);
        output.push_str("NEEDLE");
        assert_eq!(
            grade("contains", &output, json!({"value": "NEEDLE"})).score,
            1.0
        );
        assert_eq!(
            grade("ends-with", &output, json!({"value": "NEEDLE"})).score,
            1.0
        );
    }

    #[test]
    fn config_errors_name_the_key() {
        let config = |v: Value| Config::from_value(v).unwrap();
        assert_eq!(
            TextGrader::check_config("contains", &config(json!({}))).unwrap_err(),
            "missing `value` (a non-empty string)"
        );
        assert!(
            TextGrader::check_config("contains", &config(json!({"value": 42})))
                .unwrap_err()
                .contains("quote it")
        );
        assert!(
            TextGrader::check_config("contains-any", &config(json!({"value": "one"})))
                .unwrap_err()
                .contains("must be a list of strings")
        );
        assert!(TextGrader::check_config("is-json", &config(json!({}))).is_ok());
    }

    #[test]
    fn describe_lists_every_type() {
        let names: Vec<String> = TextGrader::describe()
            .type_names()
            .map(str::to_owned)
            .collect();
        assert_eq!(names.len(), 10);
        assert!(names.iter().any(|n| n == "icontains-all"));
    }
}
