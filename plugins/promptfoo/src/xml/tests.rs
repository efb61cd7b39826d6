//! Unit tests: fast-xml-parser's shapes, path lookup, candidate order,
//! DOCTYPE rules.

use super::*;

fn keys(js: &Js) -> Vec<&str> {
    match js {
        Js::Obj(m) => m.iter().map(|(k, _)| k.as_str()).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn fast_xml_parser_shapes_are_reproduced() {
    let r = fxp_parse(r#"<?xml version="1.0"?><r a="1">t<c/>u</r>"#).unwrap();
    assert_eq!(keys(&r), ["?xml", "r"]);
    let Js::Obj(m) = &r else { panic!() };
    assert_eq!(keys(&m[1].1), ["c", "#text", "@_a"]);
    let r = fxp_parse("<a/><a>1</a><a b=\"2\"/>").unwrap();
    let Js::Obj(m) = &r else { panic!() };
    assert!(matches!(&m[0].1, Js::Arr(items) if items.len() == 3));
    assert!(
        fxp_parse("<constructor/>")
            .unwrap_err()
            .contains("[SECURITY]")
    );
    assert_eq!(keys(&fxp_parse("<a><toString/></a>").unwrap()), ["a"]);
    assert!(
        fxp_parse("x<")
            .unwrap_err()
            .starts_with("readTagExp returned undefined")
    );
    assert_eq!(
        fxp_parse("<a><b>t").unwrap(),
        fxp_parse("<a><b/></a>").unwrap()
    );
}

#[test]
fn paths_are_looked_up_as_javascript_looks_them_up() {
    let r = fxp_parse("<r><a><b>1</b></a><a x='1'/></r>").unwrap();
    assert!(has_path(&r, &["r", "a", "0", "b"]));
    assert!(has_path(&r, &["r", "a", "1", "@_x"]));
    assert!(!has_path(&r, &["r", "a", "b"]));
    assert!(!has_path(&r, &["r", "a", "01"]));
    assert!(!has_path(&r, &["r", "a", "0", "b", "c"]));
    // Inherited names exist on every object.
    assert!(has_path(&r, &["r", "constructor"]));
    assert!(has_path(&r, &["r", "__proto__", "toString"]));
    assert!(!has_path(&r, &["r", "__proto__", "x"]));
}

#[test]
fn candidates_are_found_and_ordered_as_promptfoo_orders_them() {
    let s: Vec<char> = "x <a>1</a> y <b/> <c><d/></c>".chars().collect();
    let c: Vec<(usize, usize)> = candidates(&s).iter().map(|c| (c.start, c.end)).collect();
    // The sibling span first, then each maximal candidate.
    assert_eq!(c, [(2, 29), (2, 10), (13, 17), (18, 29)]);
}

#[test]
fn doctypes_follow_promptfoos_rules() {
    let d = |s: &str| s.chars().collect::<Vec<_>>();
    assert!(well_formed_doctype(&d(" html")));
    assert!(well_formed_doctype(&d(" r SYSTEM \"r.dtd\"")));
    assert!(well_formed_doctype(&d(" r PUBLIC \"-//X//EN\" 'r.dtd'")));
    assert!(!well_formed_doctype(&d(" r PUBLIC \"-//X//EN\"")));
    assert!(!well_formed_doctype(&d(" r SYSTEM \"a#b\"")));
    assert!(has_internal_subset(&d(" r [<!ENTITY e 'v'>]")));
    assert!(!has_internal_subset(&d(" r SYSTEM \"[x]\"")));
}
