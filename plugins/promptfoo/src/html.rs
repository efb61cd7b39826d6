//! promptfoo's `containsHtml` (`src/assertions/html.ts`,
//! `pf:evaluator-8V_ULngs.js:1896-1918`): regular-expression indicators,
//! HTML when they add up to 2. The patterns are promptfoo's, run by an
//! ECMAScript engine (`regress`) with the same flags.

use std::sync::OnceLock;

use evalhost_plugin_sdk::Grade;

use crate::{judged, not};

/// promptfoo's `MAX_INPUT_SIZE`: 10 MiB of UTF-16 code units.
const MAX_INPUT_SIZE: usize = 10 * 1024 * 1024;

struct Patterns {
    opening_tag: regress::Regex,
    closing_tag: regress::Regex,
    self_closing_tag: regress::Regex,
    html_entity: regress::Regex,
    doctype: regress::Regex,
    html_comment: regress::Regex,
    html_attribute: regress::Regex,
    common_tag: regress::Regex,
}

/// `word` matched as a non-Unicode `/i` regex matches it: each ASCII letter
/// as `[xX]`. (`regress` folds `ſ` to `s` and `K` to `k` there, which
/// JavaScript's `Canonicalize` does not: it never maps a non-ASCII
/// character to an ASCII one without the `u` flag.)
fn ascii_ci(word: &str) -> String {
    word.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The tags of promptfoo's `/<(html|head|…|hr)\b/i`.
const COMMON_TAGS: &[&str] = &[
    "html", "head", "body", "div", "span", "p", "a", "img", "h[1-6]", "ul", "ol", "li", "table",
    "tr", "td", "th", "form", "input", "button", "script", "style", "link", "meta", "br", "hr",
];

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |p: &str, flags: &str| {
            regress::Regex::with_flags(p, flags).expect("promptfoo's HTML patterns compile")
        };
        Patterns {
            opening_tag: re(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>", ""),
            closing_tag: re(r"<\/[a-zA-Z][a-zA-Z0-9-]*\s*>", ""),
            self_closing_tag: re(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?\/>", ""),
            html_entity: re(r"&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);", ""),
            doctype: re(
                &format!(r"<!{}\s+{}", ascii_ci("DOCTYPE"), ascii_ci("html")),
                "",
            ),
            html_comment: re(r"<!--[^-]*(?:-[^-]+)*-->", ""),
            html_attribute: re(r#"\s[a-zA-Z-]+=\s*["'][^"']*["']"#, ""),
            common_tag: re(
                &format!(
                    r"<({})\b",
                    COMMON_TAGS
                        .iter()
                        .map(|t| match t.strip_suffix("[1-6]") {
                            Some(h) => format!("{}[1-6]", ascii_ci(h)),
                            None => ascii_ci(t),
                        })
                        .collect::<Vec<_>>()
                        .join("|")
                ),
                "",
            ),
        }
    })
}

/// `containsHtml(text)`.
pub fn contains_html(text: &str) -> bool {
    if text.len() > MAX_INPUT_SIZE && crate::js::utf16_len(text) > MAX_INPUT_SIZE {
        return false;
    }
    let p = patterns();
    let test = |re: &regress::Regex| re.find(text).is_some();
    let mut indicators = 0;
    let (opening, closing) = (test(&p.opening_tag), test(&p.closing_tag));
    if opening && closing {
        indicators += 2;
    } else if opening || closing {
        indicators += 1;
    }
    for (re, weight) in [
        (&p.self_closing_tag, 1),
        (&p.html_entity, 1),
        (&p.doctype, 2),
        (&p.html_comment, 1),
        (&p.html_attribute, 1),
        (&p.common_tag, 2),
    ] {
        if test(re) {
            indicators += weight;
        }
    }
    indicators >= 2
}

/// promptfoo's `contains-html`.
pub(crate) fn grade(output: &str, inverse: bool) -> Grade {
    let pass = contains_html(output) != inverse;
    judged(
        pass,
        if pass { 1.0 } else { 0.0 },
        if pass {
            "Assertion passed".into()
        } else {
            format!("Expected output to {}contain HTML content", not(inverse))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_recognised_by_its_indicators() {
        assert!(contains_html("<div>hi</div>"));
        assert!(contains_html("<p>")); // a common tag alone weighs 2
        assert!(contains_html("Tom &amp; Jerry <x-y z=\"1\">"));
        assert!(contains_html("<!doctype html>"));
        assert!(!contains_html("a < b and c > d"));
        assert!(!contains_html("<foo>"));
        assert!(!contains_html("&amp;"));
        assert!(!contains_html(""));
        // JavaScript's `/i` without `u` does not fold `ſ` to `s`.
        assert!(!contains_html("<ſpan>"));
        assert!(contains_html("<SPAN>"));
    }
}
