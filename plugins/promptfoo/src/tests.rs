//! Unit tests of the text and score helpers: comma lists, BLEU and
//! GLEU, edit distance, JSON objects in text.

use super::*;
use crate::text::list;

#[test]
fn comma_strings_split_as_promptfoo_splits_them() {
    assert_eq!(comma_values("a, b,c"), ["a", "b", "c"]);
    assert_eq!(comma_values("\"a, b\", c"), ["a, b", "c"]);
    assert_eq!(comma_values("x \\\"y\\\""), ["x \\\"y\\\""]);
}

#[test]
fn a_list_value_naming_nothing_is_refused() {
    let config = |v: &str| Config::from_value(json!({ "value": v })).unwrap();
    assert!(
        list(&config(" , ,"))
            .unwrap_err()
            .contains("names no strings")
    );
    assert_eq!(list(&config("a,b")).unwrap(), ["a", "b"]);
}

#[test]
fn bleu_and_gleu_score_as_promptfoo() {
    let r = vec!["the cat sat on the mat".to_owned()];
    assert!((bleu("the cat sat on the mat", &r) - 1.0).abs() < 1e-12);
    assert_eq!(bleu("   ", &r), 0.0);
    let partial = bleu("the cat sat on a mat", &r);
    assert!(partial > 0.0 && partial < 1.0, "{partial}");
    assert_eq!(gleu("The cat sat on the mat.", &r), 1.0);
    let g = gleu("the cat", &r);
    assert!((g - 3.0 / 18.0).abs() < 1e-12, "{g}");
}

#[test]
fn levenshtein_counts_edits() {
    assert_eq!(levenshtein("kitten", "sitting"), 3);
    assert_eq!(levenshtein("", "abc"), 3);
}

#[test]
fn json_objects_are_found_in_text() {
    assert_eq!(json_objects("x {\"a\": 1} y").len(), 1);
    assert!(json_objects("no json here {").is_empty());
    assert_eq!(json_objects("{\"a\": {\"b\": 2}} and {\"c\": 3}").len(), 2);
}
