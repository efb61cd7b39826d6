//! promptfoo's `meteor` (`src/assertions/meteor.ts`, 0.121.20): METEOR of
//! the output against each reference, the best one kept.
//!
//! Both texts are split on JavaScript's `/\s+/` (a leading or trailing space
//! makes an empty word, which counts), trailing dots dropped from each word,
//! lower-cased. Words are then aligned in three rounds, each scanning the
//! candidate's words from the last and taking the last unaligned reference
//! word that fits: equal words; equal stems under natural's `PorterStemmer`
//! (ported below, quirks and all — it is not Porter2); and, among the stems
//! still unaligned, a reference stem that is the candidate stem or one of
//! its WordNet synonyms, as natural's `WordNet.lookup` returns them (words
//! with `_` dropped). Score = (1 − γ·(chunks/matches)^β) · P·R / (α·P +
//! (1−α)·R), α = 0.9, β = 3, γ = 0.5 unless the assertion sets them; it
//! passes at `threshold` (default 0.5); `not-` passes below it and scores
//! 1 − score.
//!
//! The synonyms come from `wordnet-synonyms.bin`, written by
//! `scripts/wordnet-synonyms.py` from the WordNet 3.1 files natural reads
//! (license: `WORDNET-LICENSE`), inflated once per plugin instance on the
//! first lookup. The stemmer is a port of natural 8.1's
//! `stemmers/porter_stemmer.js` (MIT, Copyright (c) 2011 Chris Umbel).
//!
//! `testdata/meteor-oracle.mjs` records what promptfoo, natural's stemmer
//! and natural's WordNet answer for several hundred cases; the tests below
//! replay them.

use std::sync::OnceLock;

use evalhost_plugin_sdk::{Config, Grade, GradeError, Value};

use crate::js;

/// promptfoo's defaults: `alpha`, `beta`, `gamma`, `threshold`.
const ALPHA: f64 = 0.9;
const BETA: f64 = 3.0;
const GAMMA: f64 = 0.5;
const THRESHOLD: f64 = 0.5;

/// The references of a `value`: a string, or a list of strings.
fn references(value: Option<&Value>) -> Result<Vec<String>, String> {
    match value {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            if items.is_empty() {
                // promptfoo throws "Invalid inputs" when it grades.
                return Err(
                    "needs at least one reference (an empty list is an error in promptfoo)".into(),
                );
            }
            Ok(items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect())
        }
        _ => Err("must have a string or array of strings value".into()),
    }
}

/// `alpha`, `beta`, `gamma` as the assertion sets them. Values for which
/// promptfoo's formula can leave [0, 1] are refused: evalhost scores within
/// it.
fn parameters(config: &Config) -> Result<(f64, f64, f64), String> {
    let alpha = config.optional_f64("alpha")?.unwrap_or(ALPHA);
    let beta = config.optional_f64("beta")?.unwrap_or(BETA);
    let gamma = config.optional_f64("gamma")?.unwrap_or(GAMMA);
    if !(0.0..=1.0).contains(&alpha) {
        return Err(format!(
            "`alpha` must be between 0 and 1, got {} (promptfoo's score could leave [0, 1])",
            js::number(alpha)
        ));
    }
    if !(beta >= 0.0 && beta.is_finite()) {
        return Err(format!(
            "`beta` must be a number ≥ 0, got {} (promptfoo's score could leave [0, 1])",
            js::number(beta)
        ));
    }
    if !(0.0..=1.0).contains(&gamma) {
        return Err(format!(
            "`gamma` must be between 0 and 1, got {} (promptfoo's score could leave [0, 1])",
            js::number(gamma)
        ));
    }
    Ok((alpha, beta, gamma))
}

/// Checks a `meteor` assertion's config.
pub(crate) fn check_config(config: &Config) -> Result<(), String> {
    references(config.get("value")).map_err(|e| format!("\"meteor\" assertion {e}"))?;
    parameters(config)?;
    Ok(())
}

/// `handleMeteorAssertion`: pass, score and reason as promptfoo gives them.
pub(crate) fn grade(output: &str, config: &Config, inverse: bool) -> Result<Grade, GradeError> {
    let refs = references(config.get("value"))
        .map_err(|e| GradeError::Failed(format!("\"meteor\" assertion {e}")))?;
    let (alpha, beta, gamma) = parameters(config)?;
    let threshold = config.optional_f64("threshold")?.unwrap_or(THRESHOLD);
    let score = meteor(output, &refs, alpha, beta, gamma).map_err(GradeError::Failed)?;
    let pass = if inverse {
        score < threshold
    } else {
        score >= threshold
    };
    Ok(crate::judged(
        pass,
        if inverse { 1.0 - score } else { score },
        if pass {
            "METEOR assertion passed".into()
        } else {
            format!(
                "METEOR score {} did not meet threshold {}",
                js::to_fixed(score, 4),
                js::number(threshold)
            )
        },
    ))
}

/// `calculateMeteorScore`: the best score over the references; an empty
/// output or no reference is promptfoo's "Invalid inputs" error.
pub fn meteor(
    candidate: &str,
    references: &[String],
    alpha: f64,
    beta: f64,
    gamma: f64,
) -> Result<f64, String> {
    if candidate.is_empty() || references.is_empty() {
        return Err("Invalid inputs".into());
    }
    let cand = words(candidate);
    Ok(references
        .iter()
        .map(|r| single(&words(r), &cand, alpha, beta, gamma))
        .fold(f64::NEG_INFINITY, f64::max))
}

/// `text.split(/\s+/).map(w => w.replace(/\.+$/, ""))`, each word
/// lower-cased (`preprocessWord`).
fn words(text: &str) -> Vec<String> {
    let pieces: Vec<&str> = text.split(js::is_js_space).collect();
    let last = pieces.len() - 1;
    pieces
        .iter()
        .enumerate()
        // Runs of spaces are one separator: only the first and the last
        // piece may be empty.
        .filter(|(i, p)| !p.is_empty() || *i == 0 || *i == last)
        .map(|(_, p)| p.trim_end_matches('.').to_lowercase())
        .collect()
}

type Enum = Vec<(usize, String)>;

/// `matchExactEnums`: from the candidate's last word, the last equal
/// reference word.
fn match_exact(mut cand: Enum, mut refs: Enum) -> (Vec<(usize, usize)>, Enum, Enum) {
    let mut matches = Vec::new();
    for i in (0..cand.len()).rev() {
        if let Some(j) = (0..refs.len()).rev().find(|&j| cand[i].1 == refs[j].1) {
            matches.push((cand[i].0, refs[j].0));
            cand.remove(i);
            refs.remove(j);
        }
    }
    (matches, cand, refs)
}

/// `matchSynonymEnums`: from the candidate's last word, the last reference
/// word that is it or one of its synonyms.
fn match_synonyms(mut cand: Enum, mut refs: Enum) -> Vec<(usize, usize)> {
    let table = table();
    let mut matches = Vec::new();
    for i in (0..cand.len()).rev() {
        let word = cand[i].1.as_str();
        let synonyms = table.synonyms(word);
        if let Some(j) = (0..refs.len())
            .rev()
            .find(|&j| refs[j].1 == word || synonyms.contains(&refs[j].1.as_str()))
        {
            matches.push((cand[i].0, refs[j].0));
            cand.remove(i);
            refs.remove(j);
        }
    }
    matches
}

/// `calculateSingleMeteorScore`.
fn single(reference: &[String], candidate: &[String], alpha: f64, beta: f64, gamma: f64) -> f64 {
    let enumerate = |ws: &[String]| -> Enum { ws.iter().cloned().enumerate().collect() };
    let (cand, refs) = (enumerate(candidate), enumerate(reference));
    let (translation_length, reference_length) = (cand.len(), refs.len());
    let (mut all, cand, refs) = match_exact(cand, refs);
    // The stem round hands its leftovers, stems now, to the synonym round.
    let stems = |e: Enum| -> Enum { e.into_iter().map(|(i, w)| (i, stem(&w))).collect() };
    let (stem_matches, cand, refs) = match_exact(stems(cand), stems(refs));
    all.extend(stem_matches);
    all.extend(match_synonyms(cand, refs));
    all.sort_by_key(|m| m.0);
    let matches = all.len();
    if matches == 0 || translation_length == 0 || reference_length == 0 {
        return 0.0;
    }
    let m = matches as f64;
    let precision = m / translation_length as f64;
    let recall = m / reference_length as f64;
    let denominator = alpha * precision + (1.0 - alpha) * recall;
    if denominator == 0.0 {
        return 0.0;
    }
    let fmean = precision * recall / denominator;
    let frag = chunks(&all) as f64 / m;
    (1.0 - gamma * frag.powf(beta)) * fmean
}

/// `countChunks`: runs of matches adjacent in both texts.
fn chunks(matches: &[(usize, usize)]) -> usize {
    if matches.is_empty() {
        return 0;
    }
    1 + matches
        .windows(2)
        .filter(|w| w[1].0 != w[0].0 + 1 || w[1].1 != w[0].1 + 1)
        .count()
}

/// The synonym table: sorted words, and for each the indexes of its
/// synonyms.
struct Table {
    text: String,
    spans: Vec<(u32, u32)>,
    starts: Vec<u32>,
    ids: Vec<u32>,
}

static DATA: &[u8] = include_bytes!("../wordnet-synonyms.bin");
const MAGIC: &[u8] = b"evalhost wordnet-synonyms 1\n";

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table::load(DATA).expect("the bundled WordNet table is well-formed"))
}

impl Table {
    fn load(packed: &[u8]) -> Result<Table, String> {
        let raw = miniz_oxide::inflate::decompress_to_vec_zlib(packed)
            .map_err(|e| format!("inflate: {e:?}"))?;
        let body = raw.strip_prefix(MAGIC).ok_or("no header")?;
        let nul = body
            .iter()
            .position(|&b| b == 0)
            .ok_or("no word list end")?;
        let text = String::from_utf8(body[..nul].to_vec()).map_err(|e| e.to_string())?;
        let mut spans = Vec::new();
        let mut at = 0u32;
        for w in text.split('\n') {
            let end = at + w.len() as u32;
            spans.push((at, end));
            at = end + 1;
        }
        let mut rest = &body[nul + 1..];
        let mut next = || -> Result<u32, String> {
            let mut n = 0u32;
            for shift in (0..35).step_by(7) {
                let (&b, tail) = rest.split_first().ok_or("truncated")?;
                rest = tail;
                n |= u32::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    return Ok(n);
                }
            }
            Err("bad number".into())
        };
        let mut starts = Vec::with_capacity(spans.len() + 1);
        let mut ids = Vec::new();
        for _ in 0..spans.len() {
            starts.push(ids.len() as u32);
            let count = next()?;
            let mut id = 0u32;
            for _ in 0..count {
                id += next()?;
                if id as usize >= spans.len() {
                    return Err("word index out of range".into());
                }
                ids.push(id);
            }
        }
        starts.push(ids.len() as u32);
        if !rest.is_empty() {
            return Err("trailing bytes".into());
        }
        Ok(Table {
            text,
            spans,
            starts,
            ids,
        })
    }

    fn word(&self, i: usize) -> &str {
        let (a, b) = self.spans[i];
        &self.text[a as usize..b as usize]
    }

    /// What meteor takes from `WordNet.lookup(word)`: the synonyms without
    /// `_` (and without the word itself) of the synsets natural finds.
    fn synonyms(&self, word: &str) -> Vec<&str> {
        let Ok(i) = self
            .spans
            .binary_search_by(|&(a, b)| self.text[a as usize..b as usize].cmp(word))
        else {
            return Vec::new();
        };
        self.ids[self.starts[i] as usize..self.starts[i + 1] as usize]
            .iter()
            .map(|&j| self.word(j as usize))
            .collect()
    }
}

// ---------------------------------------------------------------------------
// natural's PorterStemmer, on UTF-16 code units as its regular expressions
// (none has the `u` flag) see them.

type U = Vec<u16>;

const fn is_aeiou(c: u16) -> bool {
    matches!(c, 0x61 | 0x65 | 0x69 | 0x6f | 0x75)
}

const fn is_aeiouy(c: u16) -> bool {
    is_aeiou(c) || c == 0x79
}

/// What `.` does not match.
const fn is_line_terminator(c: u16) -> bool {
    matches!(c, 0x0a | 0x0d | 0x2028 | 0x2029)
}

const C: u16 = b'C' as u16;
const V: u16 = b'V' as u16;

fn ends(t: &[u16], suffix: &str) -> bool {
    t.len() >= suffix.len()
        && t[t.len() - suffix.len()..]
            .iter()
            .zip(suffix.bytes())
            .all(|(&a, b)| a == u16::from(b))
}

fn last_is(t: &[u16], set: &[u8]) -> bool {
    t.last()
        .is_some_and(|&c| set.iter().any(|&s| u16::from(s) == c))
}

fn u(s: &str) -> U {
    s.encode_utf16().collect()
}

/// `categorizeGroups`: `/[^aeiouy]+y/g` → `CV`, `/[aeiou]+/g` → `V`,
/// `/[^V]+/g` → `C`.
fn categorize_groups(t: &[u16]) -> U {
    let mut a = U::with_capacity(t.len());
    let mut i = 0;
    while i < t.len() {
        if is_aeiouy(t[i]) {
            a.push(t[i]);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < t.len() && !is_aeiouy(t[j]) {
            j += 1;
        }
        if j < t.len() && t[j] == u16::from(b'y') {
            a.extend([C, V]);
            i = j + 1;
        } else {
            a.extend_from_slice(&t[i..j]);
            i = j;
        }
    }
    // `[aeiou]` runs (not the `V`s just written) become one `V` …
    let mut b = U::with_capacity(a.len());
    let mut in_run = false;
    for &c in &a {
        if is_aeiou(c) {
            if !in_run {
                b.push(V);
            }
            in_run = true;
        } else {
            b.push(c);
            in_run = false;
        }
    }
    // … and runs of anything but `V` one `C`.
    let mut out = U::with_capacity(b.len());
    for c in b {
        if c == V {
            out.push(V);
        } else if out.last() != Some(&C) {
            out.push(C);
        }
    }
    out
}

/// `categorizeChars`: `/[^aeiouy]y/g` → `CV`, each `[aeiou]` → `V`, each
/// other unit → `C`.
fn categorize_chars(t: &[u16]) -> U {
    let mut out = U::with_capacity(t.len());
    let mut i = 0;
    while i < t.len() {
        if i + 1 < t.len() && !is_aeiouy(t[i]) && t[i + 1] == u16::from(b'y') {
            out.extend([C, V]);
            i += 2;
        } else {
            out.push(if is_aeiou(t[i]) || t[i] == V { V } else { C });
            i += 1;
        }
    }
    out
}

/// `measure`: the VC count, −1 for an empty (or null) token; halves occur.
fn measure(t: Option<&[u16]>) -> f64 {
    let Some(t) = t.filter(|t| !t.is_empty()) else {
        return -1.0;
    };
    let g = categorize_groups(t);
    let g = g.strip_prefix(&[C]).unwrap_or(&g);
    let g = g.strip_suffix(&[V]).unwrap_or(g);
    g.len() as f64 / 2.0
}

/// `attemptReplace` with a string pattern; an empty result is `None`, as
/// every caller treats `""` like `null`.
fn attempt_replace(t: &[u16], pattern: &str, replacement: &str) -> Option<U> {
    if !ends(t, pattern) {
        return None;
    }
    let mut out = t[..t.len() - pattern.len()].to_vec();
    out.extend(replacement.encode_utf16());
    (!out.is_empty()).then_some(out)
}

/// `attemptReplacePatterns`: each pattern that the original token ends with
/// (and whose removal leaves a measure above the threshold) is replaced in
/// the token as rewritten so far.
fn replace_patterns(t: &[u16], patterns: &[(&str, &str)], threshold: Option<f64>) -> U {
    let mut replacement = t.to_vec();
    for (pattern, with) in patterns {
        if threshold.is_none_or(|m| measure(attempt_replace(t, pattern, "").as_deref()) > m)
            && let Some(r) = attempt_replace(&replacement, pattern, with)
        {
            replacement = r;
        }
    }
    replacement
}

fn step1a(t: U) -> U {
    if ends(&t, "sses") || ends(&t, "ies") {
        return t[..t.len() - 2].to_vec();
    }
    if t.len() > 2 && ends(&t, "s") && t[t.len() - 2] != u16::from(b's') {
        return t[..t.len() - 1].to_vec();
    }
    t
}

fn step1b(t: U) -> U {
    if ends(&t, "eed") {
        if measure(Some(&t[..t.len() - 3])) > 0.0 {
            return t[..t.len() - 1].to_vec();
        }
        return t;
    }
    let stripped = if ends(&t, "ed") {
        &t[..t.len() - 2]
    } else if ends(&t, "ing") {
        &t[..t.len() - 3]
    } else {
        return t;
    };
    if stripped.is_empty() || !categorize_groups(stripped).contains(&V) {
        return t;
    }
    let r = replace_patterns(
        stripped,
        &[("at", "ate"), ("bl", "ble"), ("iz", "ize")],
        None,
    );
    if r != stripped {
        return r;
    }
    let n = stripped.len();
    if n >= 2
        && stripped[n - 1] == stripped[n - 2]
        && !is_aeiou(stripped[n - 1])
        && !last_is(stripped, b"lsz")
    {
        return stripped[..n - 1].to_vec();
    }
    if measure(Some(stripped)) == 1.0
        && categorize_chars(stripped).ends_with(&[C, V, C])
        && !last_is(stripped, b"wxy")
    {
        let mut out = stripped.to_vec();
        out.push(u16::from(b'e'));
        return out;
    }
    stripped.to_vec()
}

fn step1c(t: U) -> U {
    let g = categorize_groups(&t);
    if ends(&t, "y") && g[..g.len().saturating_sub(1)].contains(&V) {
        let mut t = t;
        let n = t.len();
        t[n - 1] = u16::from(b'i');
        return t;
    }
    t
}

const STEP2: &[(&str, &str)] = &[
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("abli", "able"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
];

const STEP3: &[(&str, &str)] = &[
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
];

const STEP4: &[&str] = &[
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ou", "ism",
    "ate", "iti", "ous", "ive", "ize",
];

/// `^(.+?)(suffixes)$`: the shortest non-empty prefix (without a line
/// terminator) whose rest is one of the suffixes.
fn shortest_prefix(t: &[u16], suffixes: &[&str]) -> Option<usize> {
    (1..t.len())
        .take_while(|&k| !is_line_terminator(t[k - 1]))
        .find(|&k| {
            suffixes
                .iter()
                .any(|s| t[k..].iter().copied().eq(s.encode_utf16()))
        })
}

fn step4(t: U) -> U {
    if let Some(k) = shortest_prefix(&t, STEP4)
        && measure(Some(&t[..k])) > 1.0
    {
        return t[..k].to_vec();
    }
    if let Some(k) = shortest_prefix(&t, &["sion", "tion"])
        && measure(Some(&t[..k + 1])) > 1.0
    {
        return t[..k + 1].to_vec();
    }
    t
}

fn step5a(t: U) -> U {
    let without_e = if ends(&t, "e") {
        &t[..t.len() - 1]
    } else {
        &t[..]
    };
    let m = measure(Some(without_e));
    let cc = categorize_chars(&t);
    let start = cc.len().saturating_sub(4);
    let cvc = cc[start..(start + 3).min(cc.len())] == [C, V, C];
    let n = t.len();
    let not_wxy_then_one =
        n >= 2 && !is_line_terminator(t[n - 1]) && !matches!(t[n - 2], 0x77..=0x79);
    if m > 1.0 || (m == 1.0 && !(cvc && not_wxy_then_one)) {
        return without_e.to_vec();
    }
    t
}

fn step5b(t: U) -> U {
    if measure(Some(&t)) > 1.0 && ends(&t, "ll") {
        return t[..t.len() - 1].to_vec();
    }
    t
}

/// natural's `PorterStemmer.stem(token)`.
pub fn stem(token: &str) -> String {
    if js::utf16_len(token) < 3 {
        return token.to_owned();
    }
    let t = u(&token.to_lowercase());
    let t = step1a(t);
    let t = step1b(t);
    let t = step1c(t);
    let t = replace_patterns(&t, STEP2, Some(0.0));
    let t = replace_patterns(&t, STEP3, Some(0.0));
    let t = step4(t);
    let t = step5a(t);
    let t = step5b(t);
    String::from_utf16_lossy(&t)
}

#[cfg(test)]
mod tests;
