//! Built-in `regex` assertion: JavaScript (ECMAScript) regular expressions,
//! as AgentV's `new RegExp(value, flags).test(output)`, through the `regress`
//! engine. A pattern that backtracks without end is stopped by the host's
//! deadline like any other plugin. Built only on the public plugin SDK.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use evalhost_plugin_sdk::{
    AssertionType, Check, Config, Grade, GradeError, Grader, Plugin, Request, export_grader, json,
};

/// The regex grader plugin.
pub struct RegexGrader;

/// JavaScript's flags. `g` and `d` do not change what `test` on a fresh
/// RegExp answers; `y` anchors the match at the start.
const KNOWN_FLAGS: &str = "dgimsuvy";

/// A compiled pattern with the flags that the engine does not handle itself.
struct Pattern {
    regex: regress::Regex,
    sticky: bool,
}

thread_local! {
    // Compiled patterns, for hosts that reuse an instance (the plugin says it
    // is stateless: the cache changes speed, never results).
    static CACHE: RefCell<HashMap<(String, String), Rc<Pattern>>> = RefCell::new(HashMap::new());
}

const CACHE_CAP: usize = 256;

fn compile(pattern: &str, flags: &str) -> Result<Rc<Pattern>, String> {
    let key = (pattern.to_owned(), flags.to_owned());
    if let Some(hit) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(hit);
    }
    for (i, flag) in flags.char_indices() {
        if !KNOWN_FLAGS.contains(flag) {
            return Err(format!(
                "invalid regex flag `{flag}` in `flags` (`{flags}`); known flags: {KNOWN_FLAGS}"
            ));
        }
        if flags[..i].contains(flag) {
            return Err(format!(
                "regex flag `{flag}` is repeated in `flags` (`{flags}`)"
            ));
        }
    }
    if flags.contains('u') && flags.contains('v') {
        return Err("regex flags u and v cannot be combined in `flags`".into());
    }
    let engine_flags: String = flags.chars().filter(|f| "imsuv".contains(*f)).collect();
    let regex = regress::Regex::with_flags(pattern, engine_flags.as_str())
        .map_err(|err| format!("invalid regex /{pattern}/{flags}: {err}"))?;
    let compiled = Rc::new(Pattern {
        regex,
        sticky: flags.contains('y'),
    });
    CACHE.with(|c| {
        let mut cache = c.borrow_mut();
        if cache.len() >= CACHE_CAP {
            cache.clear();
        }
        cache.insert(key, compiled.clone());
    });
    Ok(compiled)
}

fn pattern_and_flags(config: &Config) -> Result<(&str, &str), String> {
    Ok((
        config.required_str("value")?,
        config.optional_str("flags")?.unwrap_or(""),
    ))
}

impl Grader for RegexGrader {
    fn describe() -> Plugin {
        Plugin::new("evalhost-regex", env!("CARGO_PKG_VERSION"))
            .stateless(true)
            .assertion_type(
                AssertionType::new("regex", "Output matches a JavaScript regular expression (unanchored)").schema(
                    json!({
                        "type": "object",
                        "required": ["value"],
                        "properties": {
                            "value": {"type": "string", "minLength": 1, "description": "ECMAScript pattern"},
                            "flags": {"type": "string", "pattern": "^[dgimsuvy]*$"},
                        },
                        "additionalProperties": false,
                    }),
                ),
            )
    }

    fn check_config(_assertion_type: &str, config: &Config) -> Result<(), String> {
        let (pattern, flags) = pattern_and_flags(config)?;
        compile(pattern, flags).map(|_| ())
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let (pattern, flags) = pattern_and_flags(&request.config)?;
        let compiled = compile(pattern, flags)?;
        let found = compiled
            .regex
            .find(&request.output)
            .filter(|m| !compiled.sticky || m.start() == 0);
        let label = if flags.is_empty() {
            String::new()
        } else {
            format!(" (flags: {flags})")
        };
        let check = match found {
            Some(m) => Check::pass(format!("Output matches pattern /{pattern}/{flags}{label}"))
                .with_evidence(excerpt(&request.output[m.range()])),
            None => Check::fail(format!(
                "Output does not match pattern /{pattern}/{flags}{label}"
            )),
        };
        Ok(Grade::from_check(check))
    }
}

fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

export_grader!(RegexGrader);

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::Value;

    fn grade(output: &str, config: Value) -> Grade {
        let request = Request::new("regex", output).with_config(config);
        RegexGrader::check_config("regex", &request.config).expect("valid config");
        RegexGrader::grade(&request).expect("grades")
    }

    #[test]
    fn matches_unanchored_with_agentv_texts() {
        let g = grade("Call 555-1234 now", json!({"value": "\\b\\d{3}-\\d{4}\\b"}));
        assert_eq!(g.score, 1.0);
        assert_eq!(
            g.checks[0].text,
            "Output matches pattern /\\b\\d{3}-\\d{4}\\b/"
        );
        assert_eq!(g.checks[0].evidence.as_deref(), Some("555-1234"));
        let g = grade("no digits", json!({"value": "\\d+"}));
        assert_eq!(
            (g.score, g.checks[0].text.as_str()),
            (0.0, "Output does not match pattern /\\d+/")
        );
    }

    #[test]
    fn flags_follow_javascript() {
        let g = grade("PARIS", json!({"value": "paris", "flags": "i"}));
        assert_eq!(g.score, 1.0);
        assert_eq!(
            g.checks[0].text,
            "Output matches pattern /paris/i (flags: i)"
        );
        assert_eq!(grade("a\nERROR: x", json!({"value": "^ERROR:"})).score, 0.0);
        assert_eq!(
            grade("a\nERROR: x", json!({"value": "^ERROR:", "flags": "m"})).score,
            1.0
        );
        assert_eq!(grade("a\nb", json!({"value": "a.b"})).score, 0.0);
        assert_eq!(
            grade("a\nb", json!({"value": "a.b", "flags": "s"})).score,
            1.0
        );
        assert_eq!(
            grade("xab", json!({"value": "ab", "flags": "y"})).score,
            0.0
        );
        assert_eq!(
            grade("abx", json!({"value": "ab", "flags": "gy"})).score,
            1.0
        );
    }

    #[test]
    fn ecmascript_syntax_lookaround_and_backreferences() {
        assert_eq!(
            grade("price: $42", json!({"value": "(?<=\\$)\\d+"})).score,
            1.0
        );
        assert_eq!(grade("abab", json!({"value": "(ab)\\1"})).score, 1.0);
        assert_eq!(
            grade("naïve café", json!({"value": "caf\\u00e9"})).score,
            1.0
        );
        assert_eq!(
            grade("😀", json!({"value": "^.$", "flags": "u"})).score,
            1.0
        );
    }

    #[test]
    fn bad_patterns_and_flags_are_config_errors() {
        let check = |v: Value| RegexGrader::check_config("regex", &Config::from_value(v).unwrap());
        let err = check(json!({"value": "([a-z"})).unwrap_err();
        assert!(err.starts_with("invalid regex /([a-z/"), "{err}");
        assert!(
            check(json!({"value": "a", "flags": "q"}))
                .unwrap_err()
                .contains("invalid regex flag `q`")
        );
        assert!(
            check(json!({"value": "a", "flags": "ii"}))
                .unwrap_err()
                .contains("repeated")
        );
        assert!(
            check(json!({"value": 5}))
                .unwrap_err()
                .contains("must be a string")
        );
        assert!(check(json!({})).unwrap_err().contains("missing `value`"));
    }

    #[test]
    fn empty_and_huge_outputs() {
        assert_eq!(grade("", json!({"value": "^$"})).score, 1.0);
        assert_eq!(grade("", json!({"value": "x"})).score, 0.0);
        let big = format!("{}tail-777", "z".repeat(5_000_000));
        assert_eq!(grade(&big, json!({"value": "tail-\\d+$"})).score, 1.0);
    }
}
