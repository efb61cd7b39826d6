//! XML names (promptfoo's `isXmlNameStartCodePoint` /
//! `isXmlNameCodePoint`) and the small readers the scanners share.

pub(super) fn is_name_start(c: char) -> bool {
    let c = c as u32;
    c == 58
        || c == 95
        || (65..=90).contains(&c)
        || (97..=122).contains(&c)
        || (192..=214).contains(&c)
        || (216..=246).contains(&c)
        || (248..=767).contains(&c)
        || (880..=893).contains(&c)
        || (895..=8191).contains(&c)
        || (8204..=8205).contains(&c)
        || (8304..=8591).contains(&c)
        || (11264..=12271).contains(&c)
        || (12289..=55295).contains(&c)
        || (63744..=64975).contains(&c)
        || (65008..=65533).contains(&c)
        || (65536..=983039).contains(&c)
}

pub(super) fn is_name_char(c: char) -> bool {
    let u = c as u32;
    is_name_start(c)
        || u == 45
        || u == 46
        || (48..=57).contains(&u)
        || u == 183
        || (768..=879).contains(&u)
        || (8255..=8256).contains(&u)
}

/// `readXmlName(input, start)`: the end of the name at `start`.
pub(super) fn read_name(s: &[char], start: usize) -> Option<usize> {
    if !s.get(start).copied().is_some_and(is_name_start) {
        return None;
    }
    let mut end = start + 1;
    while s.get(end).copied().is_some_and(is_name_char) {
        end += 1;
    }
    Some(end)
}

pub(super) fn is_xml_ws(c: Option<&char>) -> bool {
    matches!(c, Some(' ' | '\t' | '\r' | '\n'))
}

pub(super) fn starts_with_at(s: &[char], at: usize, word: &str) -> bool {
    let w: Vec<char> = word.chars().collect();
    s.get(at..at + w.len()) == Some(&w[..])
}
