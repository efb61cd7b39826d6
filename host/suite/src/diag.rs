//! Diagnostics about the user's files: every problem names the file, the
//! line and column, the key path, and where one helps, a hint.
//!
//! Printed as `file:line:col: error: message` (the form editors and CI
//! annotations understand), then `  --> at key` and `  hint:` lines.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::source_map::{KeyPath, Pos};

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Nothing runs until it is fixed.
    Error,
    /// Runs, but probably not as meant.
    Warning,
}

/// One problem in a user's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file.
    pub file: PathBuf,
    /// Where in the file, when known.
    pub pos: Option<Pos>,
    /// The key path, when the problem is at a key.
    pub key: Option<KeyPath>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// An error.
    pub fn error(file: &Path, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            file: file.to_path_buf(),
            pos: None,
            key: None,
            message: message.into(),
            hint: None,
        }
    }

    /// A warning.
    pub fn warning(file: &Path, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(file, message)
        }
    }

    /// Sets the position.
    #[must_use]
    pub fn at(mut self, pos: Option<Pos>) -> Self {
        self.pos = pos;
        self
    }

    /// Sets the key path.
    #[must_use]
    pub fn key(mut self, key: KeyPath) -> Self {
        self.key = (!key.is_root()).then_some(key);
        self
    }

    /// Sets a hint.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::text::shown;
        write!(f, "{}", shown(&self.file.display().to_string()))?;
        if let Some(pos) = self.pos {
            write!(f, ":{}:{}", pos.line, pos.col)?;
        }
        let label = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        // A message's own line breaks are kept, each further line indented;
        // every other control character is escaped.
        let message = crate::text::shown_lines(&self.message, "  ");
        write!(f, ": {label}: {}", message.trim_start())?;
        if let Some(key) = &self.key {
            write!(f, "\n  --> at `{}`", shown(&key.to_string()))?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {}", shown(hint))?;
        }
        Ok(())
    }
}

/// The diagnostics of one load or validation.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Keeps the first of diagnostics that say the same thing at the same
    /// place: a suite-level value read into every test reports its problem
    /// once, not once per test.
    pub fn dedup(&mut self) {
        let mut seen = std::collections::HashSet::new();
        self.0.retain(|d| {
            seen.insert((
                d.severity,
                d.file.clone(),
                d.pos.map(|p| (p.line, p.col)),
                d.key.as_ref().map(ToString::to_string),
                d.message.clone(),
            ))
        });
    }

    /// Adds one.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.0.push(diagnostic);
    }

    /// True when any is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.0.iter().filter(|d| d.is_error()).count()
    }

    /// Every diagnostic, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }
}

/// The known name closest to `name` (Levenshtein distance at most a third of
/// its length, and at least 1), for "did you mean" hints.
pub fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let chars = name.chars().count();
    let limit = (chars / 3).max(2);
    known
        .into_iter()
        // A distance is at least the difference in length: names too long
        // or too short are not measured at all.
        .filter(|k| k.chars().count().abs_diff(chars) <= limit)
        .map(|k| (levenshtein(name, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// The name in `known` that `name` is a typo of: one edit away (two for
/// names of more than five characters), a swap of neighbours counting as
/// one edit. Stricter than [`nearest`], for keys that may also be someone
/// else's (a plugin's `tone` is not a misspelled `name`).
pub fn typo_of<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let chars = name.chars().count();
    let limit = if chars > 5 { 2 } else { 1 };
    known
        .into_iter()
        .filter(|k| k.chars().count().abs_diff(chars) <= limit)
        .map(|k| (edits(name, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions
/// and swaps of neighbours.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j] + 1).min(row[j + 1] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_suggests_close_names_only() {
        let known = ["assertions", "tests", "execution"];
        assert_eq!(nearest("assertion", known), Some("assertions"));
        assert_eq!(nearest("test", known), Some("tests"));
        assert_eq!(nearest("zzzzzz", known), None);
    }

    #[test]
    fn display_has_file_line_key_and_hint() {
        let d = Diagnostic::error(Path::new("EVAL.yaml"), "bad")
            .at(Some(Pos { line: 3, col: 5 }))
            .key(KeyPath::default().key("tests").index(0))
            .hint("fix it");
        assert_eq!(
            d.to_string(),
            "EVAL.yaml:3:5: error: bad\n  --> at `tests[0]`\n  hint: fix it"
        );
    }
}
