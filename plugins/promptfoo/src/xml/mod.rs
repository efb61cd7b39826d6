//! promptfoo's `is-xml` and `contains-xml` (`src/assertions/xml.ts`,
//! `pf:evaluator-8V_ULngs.js:4583-4960`).
//!
//! promptfoo decides in two steps, and so does this module:
//!
//! 1. `is-xml` only: the output must be well-formed XML with namespaces
//!    (saxes 6 with `xmlns: true`), with promptfoo's own DOCTYPE rules (no
//!    internal subset; a well-formed external id) and, under an external
//!    DTD, undeclared entity references kept as text. evalhost checks
//!    well-formedness with `roxmltree`; the DOCTYPE rules are ported.
//! 2. The text is parsed by fast-xml-parser 5.12 (`allowBooleanAttributes`,
//!    attributes kept, values parsed), which may throw, and each required
//!    element path (`"a.b"`, `"a.0.@_id"`) must exist in the object it
//!    builds. That parse is ported here as far as it decides whether it
//!    throws and which keys, arrays and objects it builds; values are not
//!    converted (no path depends on them).
//!
//! `contains-xml` runs step 2 on the candidates promptfoo's scanner
//! (`extractXmlCandidates`, ported) cuts out of the output.
//!
//! Known differences from promptfoo, all in what step 1 accepts:
//! - the text after "XML parsing failed: " is roxmltree's message, not
//!   saxes' ("1:5: disallowed character." and the like).
//! - roxmltree accepts an XML 1.1 document that undeclares a prefix
//!   (`xmlns:p=""`) and then uses it, which saxes rejects as an unbound
//!   prefix (roxmltree does not expose prefixes). Undeclaring a prefix in
//!   XML 1.0 is rejected, as saxes does. Each other well-formedness case the
//!   plugin's oracle tests try (`testdata/oracle.json`) is decided alike.
//! - fast-xml-parser decodes entities before it decides whether a text is
//!   empty; here a text is empty when its trimmed source is, which differs
//!   only for a text of nothing but `&#0;`-like references, and only for a
//!   path that names `#text`.
//! - a DOCTYPE internal subset inside a `contains-xml` candidate has its
//!   declarations skipped as fast-xml-parser skips them, but their values
//!   are not checked against its limits (size, count).

mod dtd;
mod fxp;
mod names;
mod paths;
mod prolog;
mod scan;

use evalhost_plugin_sdk::{Grade, GradeError, Value};

use crate::judged;
pub use fxp::{Js, fxp_parse};
use paths::has_path;
use prolog::{
    has_external_subset, has_internal_subset, keep_undeclared_entities, read_prolog,
    well_formed_doctype,
};
use scan::{Candidate, candidates};

/// The required element paths of a `value`, as `handleIsXml` reads them:
/// `Err` where it throws.
pub fn required_elements(value: &Value) -> Result<Option<Vec<String>>, String> {
    let to_string = |v: &Value| match v {
        Value::Null => Err("Cannot read properties of null (reading 'toString')".to_owned()),
        other => Ok(crate::js::string(other)),
    };
    match value {
        Value::String(s) => Ok(Some(
            s.split(',')
                .map(|p| crate::js::trim(p).to_owned())
                .collect(),
        )),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(to_string)
            .collect::<Result<_, _>>()
            .map(Some),
        Value::Object(o) if !o.is_empty() => match o.get("requiredElements") {
            Some(Value::Array(items)) => items
                .iter()
                .map(to_string)
                .collect::<Result<_, _>>()
                .map(Some),
            _ => Err("xml assertion must contain a string, array value, or no value".into()),
        },
        _ => Ok(None),
    }
}

/// The outcome of one check: valid, its reason, and whether the text was
/// well-formed for fast-xml-parser.
struct Checked {
    valid: bool,
    reason: String,
    well_formed: bool,
}

/// `validateXmlCandidate(xml, requiredElements)`.
fn validate_candidate(xml: &str, required: Option<&[String]>) -> Checked {
    match fxp_parse(xml) {
        Ok(parsed) => {
            let missing: Vec<&str> = required
                .unwrap_or_default()
                .iter()
                .filter(|e| !has_path(&parsed, &e.split('.').collect::<Vec<_>>()))
                .map(String::as_str)
                .collect();
            if missing.is_empty() {
                Checked {
                    valid: true,
                    reason: "XML is valid and contains all required elements".into(),
                    well_formed: true,
                }
            } else {
                Checked {
                    valid: false,
                    reason: format!("XML is missing required elements: {}", missing.join(", ")),
                    well_formed: true,
                }
            }
        }
        Err(e) => Checked {
            valid: false,
            reason: format!("XML parsing failed: {e}"),
            well_formed: false,
        },
    }
}

/// `validateXml(xml, requiredElements)`: `(valid, reason)`.
pub fn is_xml(xml: &str, required: Option<&[String]>) -> (bool, String) {
    let chars: Vec<char> = xml.chars().collect();
    let prolog = read_prolog(&chars);
    let mut checked = std::borrow::Cow::Borrowed(xml);
    if let Some(doctype) = &prolog.doctype {
        if has_internal_subset(doctype) {
            return (
                false,
                "DTD internal subsets are not supported by is-xml validation".into(),
            );
        }
        if !well_formed_doctype(doctype) {
            return (
                false,
                "XML parsing failed: Malformed DOCTYPE declaration".into(),
            );
        }
        if has_external_subset(doctype) && !prolog.standalone {
            checked = std::borrow::Cow::Owned(keep_undeclared_entities(xml));
        }
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    match roxmltree::Document::parse_with_options(&checked, options) {
        Err(e) => return (false, format!("XML parsing failed: {e}")),
        // roxmltree keeps `xmlns:p=""`; XML 1.0 namespaces (and saxes)
        // forbid undeclaring a prefix.
        Ok(doc)
            if !prolog.xml11
                && doc.descendants().any(|n| {
                    n.namespaces()
                        .any(|ns| ns.name().is_some() && ns.uri().is_empty())
                }) =>
        {
            return (
                false,
                "XML parsing failed: invalid attempt to undefine prefix in XML 1.0".into(),
            );
        }
        Ok(_) => {}
    }
    let r = validate_candidate(xml, required);
    (r.valid, r.reason)
}

/// `containsXml(output, requiredElements)`: `(valid, reason)`.
pub fn contains_xml(output: &str, required: Option<&[String]>) -> (bool, String) {
    let s: Vec<char> = output.chars().collect();
    let list = candidates(&s);
    if list.is_empty() {
        return (false, "No XML content found in the output".into());
    }
    let mut containers: Vec<Candidate> = Vec::new();
    for c in list {
        if containers
            .iter()
            .any(|w| c.start >= w.start && c.end <= w.end)
        {
            continue;
        }
        let text: String = s[c.start..c.end.min(s.len())].iter().collect();
        let r = validate_candidate(&text, required);
        if r.valid {
            return (true, r.reason);
        }
        if r.well_formed {
            containers.push(c);
        }
    }
    (
        false,
        "No valid XML content found matching the requirements".into(),
    )
}

/// promptfoo's `is-xml` and `contains-xml`, their verdict as a grade.
pub(crate) fn grade(
    t: &str,
    output: &str,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let required = required_elements(value).map_err(GradeError::Failed)?;
    let (valid, reason) = if t == "is-xml" {
        is_xml(output, required.as_deref())
    } else {
        contains_xml(output, required.as_deref())
    };
    let pass = valid != inverse;
    Ok(judged(
        pass,
        if pass { 1.0 } else { 0.0 },
        if pass {
            "Assertion passed".into()
        } else {
            reason
        },
    ))
}

#[cfg(test)]
mod tests;
