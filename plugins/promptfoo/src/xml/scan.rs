//! `contains-xml`: promptfoo's scanner of the XML candidates in an output
//! (`extractXmlCandidates`), and the order it tries them in.

use super::names::{read_name, starts_with_at};

#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub(super) start: usize,
    pub(super) end: usize,
    parent: Option<usize>,
}

enum Tag {
    Declaration(usize),
    Closing(usize, String),
    Opening(usize, String, bool),
}

/// `findTagEnd(input, start)`.
fn find_tag_end(s: &[char], start: usize) -> Option<usize> {
    let mut quote = None;
    for (i, &c) in s.iter().enumerate().skip(start + 1) {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        if c == '"' || c == '\'' {
            quote = Some(c);
        } else if c == '<' {
            return None;
        } else if c == '>' {
            return Some(i);
        }
    }
    None
}

/// `findDelimitedDeclarationEnd(input, start, delimiter)`.
fn delimited_end(s: &[char], start: usize, delimiter: &str) -> usize {
    let d: Vec<char> = delimiter.chars().collect();
    let mut i = start;
    while i + d.len() <= s.len() {
        if s[i..i + d.len()] == d[..] {
            return i + d.len() - 1;
        }
        i += 1;
    }
    s.len().saturating_sub(1)
}

/// `findDeclarationEnd(input, start)`.
fn declaration_end(s: &[char], start: usize) -> usize {
    if starts_with_at(s, start, "<!--") {
        return delimited_end(s, start + 4, "-->");
    }
    if starts_with_at(s, start, "<![CDATA[") {
        return delimited_end(s, start + 9, "]]>");
    }
    let (mut quote, mut depth) = (None, 0usize);
    for (i, &c) in s.iter().enumerate().skip(start + 2) {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        if c == '"' || c == '\'' {
            quote = Some(c);
        } else if c == '[' {
            depth += 1;
        } else if c == ']' && depth > 0 {
            depth -= 1;
        } else if c == '>' && depth == 0 {
            return i;
        }
    }
    s.len().saturating_sub(1)
}

/// `readXmlTag(input, start)`.
fn read_tag(s: &[char], start: usize) -> Option<Tag> {
    match *s.get(start + 1)? {
        '!' => Some(Tag::Declaration(declaration_end(s, start))),
        '?' => Some(Tag::Declaration(delimited_end(s, start + 2, "?>"))),
        '/' => {
            let end_name = read_name(s, start + 2)?;
            let end = find_tag_end(s, start)?;
            Some(Tag::Closing(end, s[start + 2..end_name].iter().collect()))
        }
        _ => {
            let end_name = read_name(s, start + 1)?;
            let end = find_tag_end(s, start)?;
            let mut last = end - 1;
            while last > start && crate::js::is_js_space(s[last]) {
                last -= 1;
            }
            Some(Tag::Opening(
                end,
                s[start + 1..end_name].iter().collect(),
                s[last] == '/',
            ))
        }
    }
}

/// `orderXmlCandidates(candidates)`.
fn order_candidates(candidates: &[Candidate]) -> Vec<Candidate> {
    let mut ordered: Vec<Candidate> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut add = |c: Candidate, ordered: &mut Vec<Candidate>| {
        if seen.insert((c.start, c.end)) {
            ordered.push(c);
        }
    };
    let starts: std::collections::HashSet<usize> = candidates.iter().map(|c| c.start).collect();
    // A Map keyed by parent start, in first-insertion order.
    let mut by_parent: Vec<(Option<usize>, Vec<Candidate>)> = Vec::new();
    for c in candidates {
        match by_parent.iter_mut().find(|(p, _)| *p == c.parent) {
            Some((_, siblings)) => siblings.push(*c),
            None => by_parent.push((c.parent, vec![*c])),
        }
    }
    for (parent, siblings) in &mut by_parent {
        if siblings.len() <= 1 || parent.is_some_and(|p| starts.contains(&p)) {
            continue;
        }
        siblings.sort_by(|a, b| a.start.cmp(&b.start).then(a.end.cmp(&b.end)));
        let c = Candidate {
            start: siblings[0].start,
            end: siblings[siblings.len() - 1].end,
            parent: *parent,
        };
        add(c, &mut ordered);
    }
    let mut maximal: Vec<Candidate> = candidates
        .iter()
        .filter(|c| c.parent.is_none_or(|p| !starts.contains(&p)))
        .copied()
        .collect();
    maximal.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    for c in maximal {
        add(c, &mut ordered);
    }
    ordered
}

/// `extractXmlCandidates(output)`: (start, end) in chars, in trial order.
pub(super) fn candidates(s: &[char]) -> Vec<Candidate> {
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut found = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] != '<' {
            i += 1;
            continue;
        }
        let Some(tag) = read_tag(s, i) else {
            i += 1;
            continue;
        };
        let end = match tag {
            Tag::Declaration(end) => end,
            Tag::Opening(end, name, self_closing) => {
                if self_closing {
                    found.push(Candidate {
                        start: i,
                        end: end + 1,
                        parent: stack.last().map(|t| t.1),
                    });
                } else {
                    stack.push((name, i));
                }
                end
            }
            Tag::Closing(end, name) => {
                if stack.last().is_some_and(|t| t.0 == name) {
                    let (_, start) = stack.pop().unwrap_or_default();
                    found.push(Candidate {
                        start,
                        end: end + 1,
                        parent: stack.last().map(|t| t.1),
                    });
                } else {
                    stack.clear();
                }
                end
            }
        };
        i = end + 1;
    }
    order_candidates(&found)
}
