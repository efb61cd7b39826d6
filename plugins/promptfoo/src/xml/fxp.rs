//! fast-xml-parser 5.12.1's parse, as far as the object's shape goes:
//! whether it throws, and which keys, arrays and objects it builds.

use super::dtd::read_doctype;

/// A value of the parsed object, as far as a path can tell.
#[derive(Debug, Clone, PartialEq)]
pub enum Js {
    /// A string, number or boolean (a path cannot go into it).
    Prim,
    /// A plain object: its own keys, in order.
    Obj(Vec<(String, Js)>),
    Arr(Vec<Js>),
}

impl Js {
    fn set(&mut self, key: &str, v: Js) {
        if let Js::Obj(m) = self {
            match m.iter_mut().find(|(k, _)| k == key) {
                Some((_, old)) => *old = v,
                None => m.push((key.to_owned(), v)),
            }
        }
    }
}

#[derive(Debug)]
enum Child {
    /// A text entry; `true` when it is not the empty string.
    Text(bool),
    Elem(usize),
}

#[derive(Debug)]
struct Node {
    name: String,
    attrs: Vec<String>,
    children: Vec<Child>,
}

/// `util.js`: names that would pollute a prototype.
const CRITICAL: &[&str] = &["__proto__", "constructor", "prototype"];
const DANGEROUS: &[&str] = &[
    "hasOwnProperty",
    "toString",
    "valueOf",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
];

/// `sanitizeName(name)`.
fn sanitize(name: &str) -> Result<String, String> {
    if CRITICAL.contains(&name) {
        return Err(format!(
            "[SECURITY] Invalid name: \"{name}\" is a reserved JavaScript keyword that could cause prototype pollution"
        ));
    }
    if DANGEROUS.contains(&name) {
        return Ok(format!("__{name}"));
    }
    Ok(name.to_owned())
}

fn js_trim(s: &[char]) -> &[char] {
    let mut a = 0;
    let mut b = s.len();
    while a < b && crate::js::is_js_space(s[a]) {
        a += 1;
    }
    while b > a && crate::js::is_js_space(s[b - 1]) {
        b -= 1;
    }
    &s[a..b]
}

fn index_of(s: &[char], needle: &str, from: usize) -> Option<usize> {
    let n: Vec<char> = needle.chars().collect();
    (from..s.len().saturating_sub(n.len() - 1)).find(|&i| s[i..i + n.len()] == n[..])
}

/// `readTagExp`: (tag name, attribute expression, index of the closing
/// character, whether attributes may be present).
struct TagExp {
    name: Vec<char>,
    exp: Vec<char>,
    close: usize,
}

/// `tagExpWithClosingIndex` then `readTagExp` (no namespace removal).
fn read_tag_exp(s: &[char], i: usize, closing: &str) -> Option<TagExp> {
    let close: Vec<char> = closing.chars().collect();
    let mut data = Vec::new();
    let mut index = i + 1;
    while index < s.len() {
        let c = s[index];
        if c == '"' || c == '\'' {
            let end = (index + 1..s.len()).find(|&k| s[k] == c)?;
            data.extend_from_slice(&s[index..end]);
            index = end;
            data.push(c);
        } else if c == close[0] && (close.len() == 1 || s.get(index + 1) == Some(&close[1])) {
            let (name, exp) = match data.iter().position(|c| crate::js::is_js_space(*c)) {
                Some(sep) => {
                    let rest = &data[sep + 1..];
                    let skip = rest
                        .iter()
                        .take_while(|c| crate::js::is_js_space(**c))
                        .count();
                    (data[..sep].to_vec(), rest[skip..].to_vec())
                }
                None => (data.clone(), data),
            };
            return Some(TagExp {
                name,
                exp,
                close: index,
            });
        } else if c == '\t' {
            data.push(' ');
        } else {
            data.push(c);
        }
        index += 1;
    }
    None
}

/// `buildAttributesMap`: the keys (`@_name`), in order, duplicates kept
/// once.
fn attribute_keys(exp: &[char]) -> Vec<String> {
    static RE: std::sync::OnceLock<regress::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regress::Regex::new(r#"([^\s=]+)\s*(=\s*(?:"([^"]*)"|'([^']*)'))?"#)
            .expect("fast-xml-parser's attribute pattern compiles")
    });
    let text: String = exp.iter().collect();
    let mut keys: Vec<String> = Vec::new();
    for m in re.find_iter(&text) {
        if let Some(r) = m.group(1) {
            let k = format!("@_{}", &text[r]);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys
}

/// fast-xml-parser's `maxNestedTags` default.
const MAX_NESTED_TAGS: usize = 100;

/// fast-xml-parser's `parse(xml)`: the object it returns, or the message
/// of what it throws.
pub fn fxp_parse(xml: &str) -> Result<Js, String> {
    let s: Vec<char> = xml
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .collect();
    let mut nodes = vec![Node {
        name: "!xml".into(),
        attrs: Vec::new(),
        children: Vec::new(),
    }];
    let mut current = 0usize;
    let mut stack: Vec<usize> = Vec::new();
    let mut text: Vec<char> = Vec::new();
    let mut doctype_found = false;
    // `saveTextToParentTag`: a text whose trimmed form is empty is dropped.
    let save_text = |text: &mut Vec<char>, node: &mut Node| {
        if !text.is_empty() {
            if !js_trim(text).is_empty() {
                node.children.push(Child::Text(true));
            }
            text.clear();
        }
    };
    let add_node = |nodes: &mut Vec<Node>, parent: usize, name: String, attrs: Vec<String>| {
        let name = if name == "__proto__" {
            "#__proto__".to_owned()
        } else {
            name
        };
        nodes.push(Node {
            name,
            attrs,
            children: Vec::new(),
        });
        let id = nodes.len() - 1;
        nodes[parent].children.push(Child::Elem(id));
        id
    };
    let mut i = 0;
    while i < s.len() {
        if s[i] != '<' {
            text.push(s[i]);
            i += 1;
            continue;
        }
        let c1 = s.get(i + 1).copied();
        if c1 == Some('/') {
            let close = index_of(&s, ">", i).ok_or("Closing Tag is not closed.")?;
            let name: String = js_trim(&s[i + 2..close]).iter().collect();
            sanitize(&name)?;
            save_text(&mut text, &mut nodes[current]);
            current = stack.pop().unwrap_or(0);
            text.clear();
            i = close;
        } else if c1 == Some('?') {
            let tag = read_tag_exp(&s, i, "?>").ok_or("Pi Tag is not closed.")?;
            save_text(&mut text, &mut nodes[current]);
            let name: String = tag.name.iter().collect();
            let attrs = if tag.name != tag.exp {
                attribute_keys(&tag.exp)
            } else {
                Vec::new()
            };
            let id = add_node(&mut nodes, current, name, attrs);
            nodes[id].children.push(Child::Text(false));
            i = tag.close + 1;
        } else if c1 == Some('!') && s.get(i + 2) == Some(&'-') && s.get(i + 3) == Some(&'-') {
            let end = index_of(&s, "-->", i + 4).ok_or("Comment is not closed.")?;
            i = end + 2;
        } else if c1 == Some('!') && s.get(i + 2) == Some(&'D') {
            if doctype_found {
                return Err("Multiple DOCTYPE declarations found.".into());
            }
            doctype_found = true;
            i = read_doctype(&s, i)?;
        } else if c1 == Some('!') && s.get(i + 2) == Some(&'[') {
            let close = index_of(&s, "]]>", i).ok_or("CDATA is not closed.")?;
            save_text(&mut text, &mut nodes[current]);
            // `substring(i + 9, close)` swaps reversed bounds.
            let (a, b) = if i + 9 <= close {
                (i + 9, close)
            } else {
                (close, i + 9)
            };
            let content = &s[a.min(s.len())..b.min(s.len())];
            nodes[current]
                .children
                .push(Child::Text(!content.is_empty()));
            i = close + 2;
        } else {
            let Some(tag) = read_tag_exp(&s, i, ">") else {
                let lo = i.saturating_sub(50);
                let hi = (i + 50).min(s.len());
                return Err(format!(
                    "readTagExp returned undefined at position {i}. Context: \"{}\"",
                    s[lo..hi].iter().collect::<String>()
                ));
            };
            let mut name: String = tag.name.iter().collect();
            let mut exp: String = tag.exp.iter().collect();
            name = sanitize(&name)?;
            if name == "#text" {
                return Err("Invalid tag name: #text".into());
            }
            if !text.is_empty() && current != 0 {
                save_text(&mut text, &mut nodes[current]);
            }
            let mut attr_present = true;
            let mut self_closing = false;
            if exp.ends_with('/') {
                self_closing = true;
                if let Some(stripped) = name.strip_suffix('/') {
                    name = stripped.to_owned();
                    exp = name.clone();
                } else {
                    exp.pop();
                }
                attr_present = name != exp;
            }
            let attrs = if name != exp && attr_present {
                attribute_keys(&exp.chars().collect::<Vec<_>>())
            } else {
                Vec::new()
            };
            if self_closing {
                let name = sanitize(&name)?;
                add_node(&mut nodes, current, name, attrs);
            } else {
                if stack.len() > MAX_NESTED_TAGS {
                    return Err("Maximum nested tags exceeded".into());
                }
                stack.push(current);
                current = add_node(&mut nodes, current, name, attrs);
            }
            text.clear();
            i = tag.close;
        }
        i += 1;
    }
    Ok(compress(&nodes, 0))
}

/// node2json's `compress`: a node's children as an object.
fn compress(nodes: &[Node], id: usize) -> Js {
    let mut obj = Js::Obj(Vec::new());
    // The text entries: how many, whether one is a non-empty string, and
    // whether the first is an array (an element named `#text`): a lone
    // array is kept even when empty, as any value that is not a string.
    let (mut texts, mut nonempty, mut first_array) = (0usize, false, false);
    for child in &nodes[id].children {
        match child {
            Child::Text(ne) => {
                texts += 1;
                nonempty |= *ne;
            }
            Child::Elem(c) => {
                let node = &nodes[*c];
                if node.name == "#text" {
                    // An element named `#text` is read as text: its child
                    // list, written as an empty string when it is empty.
                    first_array |= texts == 0;
                    texts += 1;
                    nonempty |= !node.children.is_empty();
                    continue;
                }
                let mut val = compress(nodes, *c);
                let Js::Obj(keys) = &val else { unreachable!() };
                if !node.attrs.is_empty() {
                    for a in &node.attrs {
                        val.set(a, Js::Prim);
                    }
                } else if keys.len() == 1 && keys[0].0 == "#text" {
                    val = keys[0].1.clone();
                } else if keys.is_empty() {
                    val = Js::Prim;
                }
                let Js::Obj(m) = &mut obj else { unreachable!() };
                match m.iter_mut().find(|(k, _)| *k == node.name) {
                    Some((_, Js::Arr(items))) => items.push(val),
                    Some((_, old)) => {
                        let first = std::mem::replace(old, Js::Prim);
                        *old = Js::Arr(vec![first, val]);
                    }
                    None => m.push((node.name.clone(), val)),
                }
            }
        }
    }
    if texts == 1 && first_array {
        obj.set("#text", Js::Arr(Vec::new()));
    } else if nonempty {
        obj.set("#text", Js::Prim);
    }
    obj
}
