//! fast-xml-parser's `DocTypeReader`: how far a DOCTYPE reaches, and what
//! in its internal subset makes the parse throw.

use super::names::{is_name_char, is_name_start, starts_with_at};

fn has_seq(s: &[char], seq: &str, i: usize) -> bool {
    seq.chars()
        .enumerate()
        .all(|(j, c)| s.get(i + j + 1) == Some(&c))
}

fn is_js_space_at(s: &[char], i: usize) -> bool {
    s.get(i).copied().is_some_and(crate::js::is_js_space)
}

fn skip_js_ws(s: &[char], mut i: usize) -> usize {
    while is_js_space_at(s, i) {
        i += 1;
    }
    i
}

/// `xml-naming`'s `qName`: an NCName, or two joined by one colon.
fn is_qname(name: &[char]) -> bool {
    let ncname = |p: &[char]| {
        !p.is_empty()
            && is_name_start(p[0])
            && p[0] != ':'
            && p[1..].iter().all(|c| is_name_char(*c) && *c != ':')
    };
    let parts: Vec<&[char]> = name.split(|c| *c == ':').collect();
    match parts.as_slice() {
        [one] => ncname(one),
        [a, b] => ncname(a) && ncname(b),
        _ => false,
    }
}

/// `readIdentifierVal`: the index after the quoted value.
fn identifier_val(s: &[char], i: usize, kind: &str) -> Result<(usize, usize), String> {
    let q = s.get(i).copied();
    if q != Some('"') && q != Some('\'') {
        return Err(format!(
            "Expected quoted string, found \"{}\"",
            q.map_or_else(|| "undefined".into(), String::from)
        ));
    }
    let start = i + 1;
    let mut k = start;
    while k < s.len() && Some(s[k]) != q {
        k += 1;
    }
    if s.get(k).copied() != q {
        return Err(format!("Unterminated {kind} value"));
    }
    Ok((k + 1, k - start))
}

/// `DocTypeReader.readDocType(xmlData, i)`: the index it stops at.
pub(super) fn read_doctype(s: &[char], mut i: usize) -> Result<usize, String> {
    if !starts_with_at(s, i + 3, "OCTYPE") {
        return Err("Invalid Tag instead of DOCTYPE".into());
    }
    i += 9;
    let mut angle = 1i64;
    let (mut has_body, mut comment) = (false, false);
    let mut quote: Option<char> = None;
    let mut entities = 0usize;
    while i < s.len() {
        let c = s[i];
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if !has_body && !comment && (c == '"' || c == '\'') {
            quote = Some(c);
            i += 1;
            continue;
        }
        if c == '<' && !comment {
            if has_body && has_seq(s, "!ENTITY", i) {
                i += 7;
                // readEntityExp
                let mut k = skip_js_ws(s, i + 1);
                let start = k;
                while k < s.len() && !is_js_space_at(s, k) && s[k] != '"' && s[k] != '\'' {
                    k += 1;
                }
                let name = &s[start..k];
                if !is_qname(name) {
                    return Err(format!(
                        "Invalid entity name {}",
                        name.iter().collect::<String>()
                    ));
                }
                k = skip_js_ws(s, k);
                let upper: String = s[k..(k + 6).min(s.len())]
                    .iter()
                    .collect::<String>()
                    .to_uppercase();
                if upper == "SYSTEM" {
                    return Err("External entities are not supported".into());
                }
                if s.get(k) == Some(&'%') {
                    return Err("Parameter entities are not supported".into());
                }
                let (after, len) = identifier_val(s, k, "entity")?;
                if len > 10_000 {
                    return Err(format!(
                        "Entity \"{}\" size ({len}) exceeds maximum allowed size (10000)",
                        name.iter().collect::<String>()
                    ));
                }
                let value = &s[after - 1 - len..after - 1];
                if !value.contains(&'&') {
                    if entities >= 1000 {
                        return Err(format!(
                            "Entity count ({}) exceeds maximum allowed (1000)",
                            entities + 1
                        ));
                    }
                    entities += 1;
                }
                i = after - 1;
            } else if has_body && has_seq(s, "!ELEMENT", i) {
                i += 8;
                // readElementExp
                let mut k = skip_js_ws(s, i + 1);
                let start = k;
                while k < s.len() && !is_js_space_at(s, k) {
                    k += 1;
                }
                let name = &s[start..k];
                if !is_qname(name) {
                    return Err(format!(
                        "Invalid element name: \"{}\"",
                        name.iter().collect::<String>()
                    ));
                }
                k = skip_js_ws(s, k);
                if s.get(k) == Some(&'E') && has_seq(s, "MPTY", k) {
                    k += 4;
                } else if s.get(k) == Some(&'A') && has_seq(s, "NY", k) {
                    k += 2;
                } else if s.get(k) == Some(&'(') {
                    k += 1;
                    while k < s.len() && s[k] != ')' {
                        k += 1;
                    }
                    if s.get(k) != Some(&')') {
                        return Err("Unterminated content model".into());
                    }
                } else {
                    return Err(format!(
                        "Invalid Element Expression, found \"{}\"",
                        s.get(k)
                            .map_or_else(|| "undefined".into(), |c| c.to_string())
                    ));
                }
                i = k;
            } else if has_body && has_seq(s, "!ATTLIST", i) {
                i += 8;
            } else if has_body && has_seq(s, "!NOTATION", i) {
                i += 9;
                // readNotationExp
                let mut k = skip_js_ws(s, i + 1);
                let start = k;
                while k < s.len() && !is_js_space_at(s, k) {
                    k += 1;
                }
                let name = &s[start..k];
                if !is_qname(name) {
                    return Err(format!(
                        "Invalid entity name {}",
                        name.iter().collect::<String>()
                    ));
                }
                k = skip_js_ws(s, k);
                let kind: String = s[k..(k + 6).min(s.len())]
                    .iter()
                    .collect::<String>()
                    .to_uppercase();
                if kind != "SYSTEM" && kind != "PUBLIC" {
                    return Err(format!("Expected SYSTEM or PUBLIC, found \"{kind}\""));
                }
                k += kind.chars().count();
                k = skip_js_ws(s, k);
                if kind == "PUBLIC" {
                    k = identifier_val(s, k, "publicIdentifier")?.0;
                    k = skip_js_ws(s, k);
                    if matches!(s.get(k), Some('"' | '\'')) {
                        k = identifier_val(s, k, "systemIdentifier")?.0;
                    }
                } else {
                    let (after, len) = identifier_val(s, k, "systemIdentifier")?;
                    if len == 0 {
                        return Err(
                            "Missing mandatory system identifier for SYSTEM notation".into()
                        );
                    }
                    k = after;
                }
                i = k - 1;
            } else if has_seq(s, "!--", i) {
                comment = true;
            } else {
                return Err("Invalid DOCTYPE".into());
            }
            angle += 1;
        } else if c == '>' {
            if comment {
                if i >= 2 && s[i - 1] == '-' && s[i - 2] == '-' {
                    comment = false;
                    angle -= 1;
                }
            } else {
                angle -= 1;
            }
            if angle == 0 {
                break;
            }
        } else if c == '[' {
            has_body = true;
        }
        i += 1;
    }
    if quote.is_some() || angle != 0 {
        return Err("Unclosed DOCTYPE".into());
    }
    Ok(i)
}
