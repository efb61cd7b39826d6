//! promptfoo's DOCTYPE rules (on the text saxes reports for a DOCTYPE),
//! the prolog as saxes reads it, and undeclared entities under an
//! external DTD.

use super::names::{is_xml_ws, read_name, starts_with_at};

/// `hasDoctypeInternalSubset(doctype)`.
pub(super) fn has_internal_subset(doctype: &[char]) -> bool {
    let mut quote = None;
    for &c in doctype {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        if c == '"' || c == '\'' {
            quote = Some(c);
        } else if c == '[' {
            return true;
        }
    }
    false
}

fn skip_xml_ws(s: &[char], mut i: usize) -> usize {
    while is_xml_ws(s.get(i)) {
        i += 1;
    }
    i
}

/// `readQuotedLiteral`: the literal's value range and its end.
fn quoted_literal(s: &[char], start: usize) -> Option<(usize, usize, usize)> {
    let q = *s.get(start)?;
    if q != '"' && q != '\'' {
        return None;
    }
    let close = (start + 1..s.len()).find(|&i| s[i] == q)?;
    Some((start + 1, close, close + 1))
}

/// `hasValidSystemLiteral(input, start)`.
fn valid_system_literal(s: &[char], start: usize) -> bool {
    let lit = skip_xml_ws(s, start);
    if lit == start {
        return false;
    }
    match quoted_literal(s, lit) {
        Some((a, b, end)) => !s[a..b].contains(&'#') && skip_xml_ws(s, end) == s.len(),
        None => false,
    }
}

/// `isWellFormedDoctype(doctype)`.
pub(super) fn well_formed_doctype(s: &[char]) -> bool {
    let mut i = skip_xml_ws(s, 0);
    if i == 0 {
        return false;
    }
    let Some(end) = read_name(s, i) else {
        return false;
    };
    i = end;
    let ext = skip_xml_ws(s, i);
    if ext == s.len() {
        return true;
    }
    if ext == i {
        return false;
    }
    i = ext;
    if starts_with_at(s, i, "SYSTEM") {
        return valid_system_literal(s, i + 6);
    }
    if starts_with_at(s, i, "PUBLIC") {
        i += 6;
        let p = skip_xml_ws(s, i);
        if p == i {
            return false;
        }
        let Some((a, b, end)) = quoted_literal(s, p) else {
            return false;
        };
        // /^[\x20\r\na-zA-Z0-9'()+,./:=?;!*#@$_%-]*$/
        let public_ok = s[a..b]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || " \r\n'()+,./:=?;!*#@$_%-".contains(*c));
        return public_ok && valid_system_literal(s, end);
    }
    false
}

/// `hasDoctypeExternalSubset(doctype)`.
pub(super) fn has_external_subset(s: &[char]) -> bool {
    let Some(end) = read_name(s, skip_xml_ws(s, 0)) else {
        return false;
    };
    let ext = skip_xml_ws(s, end);
    starts_with_at(s, ext, "SYSTEM") || starts_with_at(s, ext, "PUBLIC")
}

/// What the prolog holds, read as saxes reads it: `standalone="yes"` in
/// the XML declaration, and the DOCTYPE's text (after `<!DOCTYPE`, up to
/// its `>`), if there is one.
pub(super) struct Prolog {
    pub(super) standalone: bool,
    /// `version="1.1"`: saxes then allows undeclaring a prefix.
    pub(super) xml11: bool,
    pub(super) doctype: Option<Vec<char>>,
}

/// The value of `name="…"` (or `'…'`) in an XML declaration.
fn decl_value<'a>(decl: &'a str, name: &str) -> Option<&'a str> {
    let at = decl.find(name)?;
    let rest = decl[at + name.len()..]
        .trim_start()
        .strip_prefix('=')?
        .trim_start();
    let q = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &rest[1..];
    Some(&body[..body.find(q)?])
}

pub(super) fn read_prolog(s: &[char]) -> Prolog {
    let (mut standalone, mut xml11) = (false, false);
    let mut i = 0;
    if starts_with_at(s, 0, "<?xml") && is_xml_ws(s.get(5)) {
        let end = (0..s.len())
            .find(|&k| starts_with_at(s, k, "?>"))
            .unwrap_or(s.len());
        let decl: String = s[..end].iter().collect();
        standalone = decl_value(&decl, "standalone") == Some("yes");
        xml11 = decl_value(&decl, "version") == Some("1.1");
        i = end + 2;
    }
    loop {
        i = skip_xml_ws(s, i);
        if starts_with_at(s, i, "<!--") {
            match (i + 4..s.len()).find(|&k| starts_with_at(s, k, "-->")) {
                Some(k) => i = k + 3,
                None => break,
            }
        } else if starts_with_at(s, i, "<?") {
            match (i + 2..s.len()).find(|&k| starts_with_at(s, k, "?>")) {
                Some(k) => i = k + 2,
                None => break,
            }
        } else if starts_with_at(s, i, "<!DOCTYPE") {
            // Up to the `>` outside quotes and outside an internal subset.
            let start = i + 9;
            let (mut quote, mut depth) = (None, 0usize);
            let mut k = start;
            while k < s.len() {
                let c = s[k];
                if let Some(q) = quote {
                    if c == q {
                        quote = None;
                    }
                } else if c == '"' || c == '\'' {
                    quote = Some(c);
                } else if c == '[' {
                    depth += 1;
                } else if c == ']' {
                    depth = depth.saturating_sub(1);
                } else if c == '>' && depth == 0 {
                    break;
                }
                k += 1;
            }
            return Prolog {
                standalone,
                xml11,
                doctype: Some(s[start..k.min(s.len())].to_vec()),
            };
        } else {
            break;
        }
    }
    Prolog {
        standalone,
        xml11,
        doctype: None,
    }
}

/// saxes' ENTITIES proxy under an external DTD: an undeclared entity
/// reference with a well-formed name stays as its text.
pub(super) fn keep_undeclared_entities(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == '&'
            && let Some(end) = read_name(&s, i + 1)
            && s.get(end) == Some(&';')
        {
            let name: String = s[i + 1..end].iter().collect();
            if !matches!(name.as_str(), "amp" | "lt" | "gt" | "quot" | "apos") {
                out.push_str("&amp;");
                out.push_str(&name);
                out.push(';');
                i = end + 1;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    out
}
