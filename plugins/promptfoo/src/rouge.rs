//! promptfoo's `rouge-n` (`src/assertions/rouge.ts`,
//! `pf:evaluator-8V_ULngs.js:3157-3210`): ROUGE-1 F-measure with clipped
//! counts over js-rouge 3.2.3's Penn Treebank tokens
//! (`js-rouge/src/tokenize.ts`).
//!
//! The tokenizer is ported step for step on UTF-16 code units, as
//! JavaScript runs it: the patterns without `\p{…}` run on `regress` (an
//! ECMAScript engine; UCS-2 matching for the patterns without the `u` flag),
//! the ones with `\p{…}` are written out over tables generated from the
//! Node.js that runs promptfoo (`unicode.rs`).

use std::collections::HashMap;
use std::sync::OnceLock;

use evalhost_plugin_sdk::{Config, Grade, GradeError, Value};

use crate::unicode::{self, contains};
use crate::{js, js_num, judged};

type Units = Vec<u16>;

/// js-rouge's `MAX_NGRAM_MATERIALIZATION_WORK`.
const MAX_WORK: usize = 1_000_000;

fn units(s: &str) -> Units {
    s.encode_utf16().collect()
}

/// One part of a replacement: text, or a capture group (`$&` is group 0).
enum Part {
    Text(&'static str),
    Group(usize),
}

/// `text.replace(re, template)` for a global regex without the `u` flag.
fn replace(re: &regress::Regex, text: &[u16], template: &[Part]) -> Units {
    let mut out = Vec::with_capacity(text.len() + 16);
    let mut last = 0;
    for m in re.find_from_ucs2(text, 0) {
        out.extend_from_slice(&text[last..m.start()]);
        for part in template {
            match part {
                Part::Text(t) => out.extend(t.encode_utf16()),
                Part::Group(g) => {
                    if let Some(r) = m.group(*g) {
                        out.extend_from_slice(&text[r]);
                    }
                }
            }
        }
        last = m.end();
    }
    out.extend_from_slice(&text[last..]);
    out
}

struct Patterns {
    spaces: regress::Regex,
    ellipsis: regress::Regex,
    symbols: regress::Regex,
    final_period: regress::Regex,
    question: regress::Regex,
    brackets: regress::Regex,
    dashes: regress::Regex,
    closing_apostrophe: regress::Regex,
    clitic_smd: regress::Regex,
    clitic: regress::Regex,
    runs_of_spaces: regress::Regex,
    edge_space: regress::Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |p: &str| regress::Regex::new(p).expect("js-rouge's patterns compile");
        Patterns {
            spaces: re(r"[\s\u0085]+"),
            ellipsis: re(r"\.{3}"),
            symbols: re(r"[;@#$%&]"),
            final_period: re(r"([^.])(?<!\b[A-Za-z]\.[A-Za-z])(\.)([\])}>'\s]*)$"),
            question: re(r"[?!]"),
            brackets: re(r"[\][(){}<>]"),
            dashes: re(r"--"),
            closing_apostrophe: re(r"([^'])' "),
            clitic_smd: re(r"'([sSmMdD]) "),
            clitic: re(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "),
            runs_of_spaces: re(r" {2,}"),
            edge_space: re(r"^ | $"),
        }
    })
}

fn is_high(u: u16) -> bool {
    (0xD800..0xDC00).contains(&u)
}

fn is_low(u: u16) -> bool {
    (0xDC00..0xE000).contains(&u)
}

/// `input.codePointAt(i)`, or `None` past the end.
fn code_point_at(t: &[u16], i: usize) -> Option<u32> {
    let u = *t.get(i)?;
    if is_high(u)
        && let Some(&lo) = t.get(i + 1)
        && is_low(lo)
    {
        return Some(0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(lo) - 0xDC00));
    }
    Some(u32::from(u))
}

/// The last code point of `t` read as a `u`-flag regex reads it, with its
/// length in code units.
fn last_code_point(t: &[u16]) -> Option<(u32, usize)> {
    let n = t.len();
    let last = *t.last()?;
    if is_low(last) && n >= 2 && is_high(t[n - 2]) {
        return code_point_at(t, n - 2).map(|c| (c, 2));
    }
    Some((u32::from(last), 1))
}

/// `\s` of a JavaScript regex.
fn is_space(cp: u32) -> bool {
    char::from_u32(cp).is_some_and(crate::js::is_js_space)
}

/// `/[class]/u.test(t[i])`: one code unit, a lone surrogate matching none.
fn unit_is(t: &[u16], i: usize, class: impl Fn(u32) -> bool) -> bool {
    t.get(i)
        .is_some_and(|&u| !is_high(u) && !is_low(u) && class(u32::from(u)))
}

/// `/[\s\p{Punctuation}<]/u`, `quoteOpeningContext`'s class.
fn opening_context_class(cp: u32) -> bool {
    is_space(cp) || cp == u32::from('<') || contains(unicode::PUNCTUATION, cp)
}

/// `followsQuotedModifier(input, index)`: the quote follows a modifier
/// letter that NFKC changes (an alphabetic footnote marker), itself after
/// a closed sentence (`."`) and optional digits.
fn follows_quoted_modifier(t: &[u16], index: usize) -> bool {
    let Some((modifier, mlen)) = last_code_point(&t[index.saturating_sub(2)..index])
        .filter(|(c, _)| contains(unicode::LM, *c))
    else {
        return false;
    };
    // isAlphabeticFootnote(input, index - modifier.length - 1)
    let at = index - mlen;
    if !contains(unicode::LM_NOT_NFKC, modifier) {
        return false;
    }
    // /^\p{Lm}(?:[\s.,;:!?"'“‘”’\])}>]|$)/u on input.slice(at, at + 4)
    let window = &t[at..(at + 4).min(t.len())];
    let after = at + mlen;
    let follows = if after >= at + window.len() {
        true
    } else {
        code_point_at(window, mlen).is_some_and(|c| {
            is_space(c)
                || ".,;:!?\"'\u{201C}\u{2018}\u{201D}\u{2019}])}>"
                    .chars()
                    .any(|x| u32::from(x) == c)
        })
    };
    if !follows {
        return false;
    }
    let mut start = at;
    while start > 0 {
        match last_code_point(&t[start.saturating_sub(2)..start]) {
            Some((c, len)) if contains(unicode::NUMBER, c) => start -= len,
            _ => break,
        }
    }
    start >= 2
        && matches!(t[start - 2], 0x2E | 0x21 | 0x3F)
        && matches!(t[start - 1], 0x22 | 0x27 | 0x201D | 0x2019)
}

/// `quoteOpeningContext(input, index)`.
fn quote_opening_context(t: &[u16], index: usize) -> bool {
    index == 0
        || unit_is(t, index - 1, opening_context_class)
        || (index >= 2 && t[index - 2] == 0x60 && t[index - 1] == 0x60)
        || follows_quoted_modifier(t, index)
}

/// The first of `` `` ``, `''` or `"` in `t` from `from`, with its length.
fn next_quote(t: &[u16], from: usize) -> Option<(usize, usize)> {
    let mut i = from;
    while i < t.len() {
        if t[i] == 0x60 && t.get(i + 1) == Some(&0x60) {
            return Some((i, 2));
        }
        if t[i] == 0x27 && t.get(i + 1) == Some(&0x27) {
            return Some((i, 2));
        }
        if t[i] == 0x22 {
            return Some((i, 1));
        }
        i += 1;
    }
    None
}

/// The paired-quote pass: each `` `` ``, `''` or `"` becomes `` ` `` `` or
/// ` '' `, opening or closing.
fn classify_quotes(t: &[u16]) -> Units {
    let mut out = Vec::with_capacity(t.len() + 16);
    let mut inside = false;
    let mut last = 0;
    let mut from = 0;
    while let Some((i, len)) = next_quote(t, from) {
        let backticks = t[i] == 0x60;
        let double = len == 1;
        let position_ok = i + len < t.len()
            || i == 0
            || unit_is(t, i - 1, |c| {
                is_space(c) || c == u32::from('<') || contains(unicode::PS, c)
            });
        let after_terminal = i > 0 && matches!(t[i - 1], 0x2E | 0x21 | 0x3F);
        let pairs = || {
            double
                || (i > 0
                    && code_point_at(t, i + 2).is_some_and(|c| {
                        contains(unicode::LETTER, c)
                            || contains(unicode::NUMBER, c)
                            || contains(unicode::SC, c)
                            || contains(unicode::PS, c)
                    })
                    && next_quote(t, i + 2).is_some_and(|(j, l)| l == 2 && t[j] == 0x27))
        };
        // `opensDoubleQuote(text, index, insideQuotes)` reads the state
        // before this quote.
        inside = backticks
            || (position_ok
                && !inside
                && quote_opening_context(t, i)
                && !after_terminal
                && pairs());
        out.extend_from_slice(&t[last..i]);
        out.extend(if inside { " `` " } else { " '' " }.encode_utf16());
        last = i + len;
        from = i + len;
    }
    out.extend_from_slice(&t[last..]);
    out
}

/// `/[:,](?!\p{Decimal_Number})/gu` → `' $& '`.
fn split_colons_commas(t: &[u16]) -> Units {
    let mut out = Vec::with_capacity(t.len() + 16);
    for (i, &u) in t.iter().enumerate() {
        if (u == 0x3A || u == 0x2C)
            && !code_point_at(t, i + 1).is_some_and(|c| contains(unicode::ND, c))
        {
            out.extend([0x20, u, 0x20]);
        } else {
            out.push(u);
        }
    }
    out
}

/// `[\p{ID_Continue}\u200c\u200d]`, the word of the contraction rules.
fn is_word(cp: u32) -> bool {
    cp == 0x200C || cp == 0x200D || contains(unicode::ID_CONTINUE, cp)
}

/// Simple case folding to ASCII (the `iu` flags): A-Z, U+017F `ſ` → s,
/// U+212A `K` → k.
fn fold(cp: u32) -> u32 {
    match cp {
        0x41..=0x5A => cp + 0x20,
        0x17F => u32::from('s'),
        0x212A => u32::from('k'),
        _ => cp,
    }
}

/// js-rouge's `TREEBANK_CONTRACTIONS`: (first, second, followed by a space).
const CONTRACTIONS: &[(&str, &str, bool)] = &[
    ("can", "not", false),
    ("d", "'ye", false),
    ("gim", "me", false),
    ("gon", "na", false),
    ("got", "ta", false),
    ("lem", "me", false),
    ("more", "'n", false),
    ("wan", "na", true),
    ("'t", "is", false),
    ("'t", "was", false),
];

/// `text.replace(contraction(first + second), ' $1 $2 ')`, global,
/// case-insensitive, Unicode: not inside a word.
fn split_contraction(t: &[u16], first: &str, second: &str, space_after: bool) -> Units {
    let word: Vec<u32> = first.chars().chain(second.chars()).map(u32::from).collect();
    let split = first.chars().count();
    let mut out = Vec::with_capacity(t.len() + 8);
    let mut i = 0;
    while i < t.len() {
        // The code points of a match, with their code-unit positions.
        let mut at = i;
        let mut starts = Vec::with_capacity(word.len() + 1);
        let mut ok = true;
        for &w in &word {
            match code_point_at(t, at) {
                Some(c) if fold(c) == w => {
                    starts.push(at);
                    at += if c > 0xFFFF { 2 } else { 1 };
                }
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        let end = at;
        ok = ok
            && !last_code_point(&t[..i]).is_some_and(|(c, _)| is_word(c))
            && !code_point_at(t, end).is_some_and(is_word)
            && (!space_after || t.get(end) == Some(&0x20));
        if ok {
            let mid = starts[split];
            out.push(0x20);
            out.extend_from_slice(&t[i..mid]);
            out.push(0x20);
            out.extend_from_slice(&t[mid..end]);
            out.push(0x20);
            i = end;
        } else {
            // A `u` regex steps over whole code points.
            let step = match code_point_at(t, i) {
                Some(c) if c > 0xFFFF => 2,
                _ => 1,
            };
            out.extend_from_slice(&t[i..i + step]);
            i += step;
        }
    }
    out
}

/// js-rouge's `treeBankTokenize(input)`, tokens as UTF-16.
pub fn tree_bank_tokenize(input: &str) -> Vec<Units> {
    let p = patterns();
    let raw = units(input);
    let spaced = replace(&p.spaces, &raw, &[Part::Text(" ")]);
    // `.trim()`: only single spaces are left to trim.
    let (mut a, mut b) = (0, spaced.len());
    while a < b && spaced[a] == 0x20 {
        a += 1;
    }
    while b > a && spaced[b - 1] == 0x20 {
        b -= 1;
    }
    let text = &spaced[a..b];
    if text.is_empty() {
        return Vec::new();
    }
    let padded = [Part::Text(" "), Part::Group(0), Part::Text(" ")];
    let mut parse = classify_quotes(text);
    parse = replace(&p.ellipsis, &parse, &[Part::Text(" ... ")]);
    parse = split_colons_commas(&parse);
    parse = replace(&p.symbols, &parse, &padded);
    parse = replace(
        &p.final_period,
        &parse,
        &[
            Part::Group(1),
            Part::Text(" "),
            Part::Group(2),
            Part::Group(3),
            Part::Text(" "),
        ],
    );
    parse = replace(&p.question, &parse, &padded);
    parse = replace(&p.brackets, &parse, &padded);
    parse = replace(&p.dashes, &parse, &[Part::Text(" -- ")]);
    let mut wrapped = Vec::with_capacity(parse.len() + 2);
    wrapped.push(0x20);
    wrapped.extend_from_slice(&parse);
    wrapped.push(0x20);
    parse = replace(
        &p.closing_apostrophe,
        &wrapped,
        &[Part::Group(1), Part::Text(" ' ")],
    );
    parse = replace(
        &p.clitic_smd,
        &parse,
        &[Part::Text(" '"), Part::Group(1), Part::Text(" ")],
    );
    parse = replace(
        &p.clitic,
        &parse,
        &[Part::Text(" "), Part::Group(1), Part::Text(" ")],
    );
    for (first, second, space) in CONTRACTIONS {
        parse = split_contraction(&parse, first, second, *space);
    }
    parse = replace(&p.runs_of_spaces, &parse, &[Part::Text(" ")]);
    parse = replace(&p.edge_space, &parse, &[]);
    parse.split(|u| *u == 0x20).map(<[u16]>::to_vec).collect()
}

/// js-rouge's `fMeasure(p, r, 1)`.
fn f_measure(p: f64, r: f64) -> f64 {
    if p == r {
        return p;
    }
    if p == 0.0 || r == 0.0 {
        return 0.0;
    }
    if p > r {
        let weight = 1.0;
        return p.min(r * ((1.0 + weight) / (1.0 + weight * (r / p))));
    }
    let beta_sq = 1.0;
    r.min(p * ((1.0 + beta_sq) / (1.0 + beta_sq * (p / r))))
}

/// js-rouge's n-gram materialization limit for unigrams: the UTF-16 length
/// of all the tokens.
fn check_materialization(tokens: &[Units]) -> Result<(), String> {
    let work: usize = tokens.iter().map(Vec::len).sum();
    if work > MAX_WORK {
        return Err("N-gram generation exceeds the materialization limit".into());
    }
    Ok(())
}

/// promptfoo's `rougeNScore(candidate, reference)` (n = 1, β = 1), on
/// texts the caller lower-cased.
pub fn rouge_1(candidate: &str, reference: &str) -> Result<f64, String> {
    let cand = tree_bank_tokenize(candidate);
    let refs = tree_bank_tokenize(reference);
    if cand.is_empty() || refs.is_empty() {
        return Ok(0.0);
    }
    check_materialization(&cand)?;
    check_materialization(&refs)?;
    let mut ref_counts: HashMap<&[u16], usize> = HashMap::new();
    for t in &refs {
        *ref_counts.entry(t.as_slice()).or_insert(0) += 1;
    }
    let mut cand_counts: HashMap<&[u16], usize> = HashMap::new();
    for t in &cand {
        *cand_counts.entry(t.as_slice()).or_insert(0) += 1;
    }
    let overlap: usize = cand_counts
        .iter()
        .map(|(g, c)| (*c).min(ref_counts.get(g).copied().unwrap_or(0)))
        .sum();
    if overlap == 0 {
        return Ok(0.0);
    }
    let precision = overlap as f64 / cand.len() as f64;
    let recall = overlap as f64 / refs.len() as f64;
    Ok(f_measure(precision, recall))
}

/// promptfoo's `rouge-n`: the ROUGE-1 F-measure against the value reaches
/// the threshold (default 0.75).
pub(crate) fn grade(
    output: &str,
    config: &Config,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let Value::String(reference) = value else {
        return Err(GradeError::Failed(
            "\"rouge\" assertion type must be a string value".into(),
        ));
    };
    let s =
        rouge_1(&output.to_lowercase(), &reference.to_lowercase()).map_err(GradeError::Failed)?;
    let threshold = config.optional_f64("threshold")?.unwrap_or(0.75);
    let pass = (s >= threshold) != inverse;
    Ok(judged(
        pass,
        if inverse { 1.0 - s } else { s },
        format!(
            "ROUGE-N score {} is {} threshold {}",
            js::to_fixed(s, 2),
            if s >= threshold {
                "greater than or equal to"
            } else {
                "less than"
            },
            js_num(threshold)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(s: &str) -> Vec<String> {
        tree_bank_tokenize(s)
            .iter()
            .map(|t| String::from_utf16_lossy(t))
            .collect()
    }

    #[test]
    fn sentences_tokenize_as_js_rouge_tokenizes_them() {
        assert_eq!(
            tokens("He said \"don't go.\" I cannot, 3,000 U.S. dollars... gimme ``a'' (x) --y?"),
            [
                "He", "said", "``", "do", "n't", "go.", "''", "I", "can", "not", ",", "3,000",
                "U.S.", "dollars", "...", "gim", "me", "``", "a", "''", "(", "x", ")", "--", "y",
                "?"
            ]
        );
        assert_eq!(tokens("the end."), ["the", "end", "."]);
        assert!(tokens(" \u{85}\t ").is_empty());
    }

    #[test]
    fn rouge_1_uses_clipped_counts() {
        let s = rouge_1("the cat sat on the mat", "the cat sat on the mat").unwrap();
        assert_eq!(s, 1.0);
        let s = rouge_1("the cat", "the cat sat on the mat").unwrap();
        assert!((s - 0.5).abs() < 1e-12, "{s}");
        assert_eq!(rouge_1("", "x").unwrap(), 0.0);
        assert_eq!(rouge_1("a", "b").unwrap(), 0.0);
    }
}
