//! Where each key of a YAML document is: a map from key paths
//! (`tests[2].assertions[0].value`) to line and column, built from the
//! parser's events, so that every diagnostic can name its line.
//!
//! The map is filled by [`crate::yaml`] in the same pass that builds the
//! values, keyed by a hash of the path built as the events arrive (no path
//! is allocated while indexing). A path that was not indexed (what an
//! alias or a merge key brought in) falls back to its nearest known
//! ancestor.

use std::collections::HashMap;
use std::fmt;

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    /// A mapping key (the format's own key names are shared, not copied).
    Key(std::borrow::Cow<'static, str>),
    /// A sequence index.
    Index(usize),
}

/// A key path inside a document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KeyPath(pub Vec<Seg>);

/// Key names of the format, shared by every key path that uses them.
const KNOWN_KEYS: &[&str] = &[
    "tests",
    "assertions",
    "assert",
    "input",
    "expected_output",
    "value",
    "type",
    "name",
    "criteria",
    "metadata",
    "id",
    "execution",
    "workspace",
    "input_files",
    "weight",
    "required",
    "rubrics",
    "config",
    "command",
    "role",
    "content",
    "threshold",
    "tags",
];

fn interned(key: &str) -> std::borrow::Cow<'static, str> {
    match KNOWN_KEYS.iter().find(|k| **k == key) {
        Some(k) => std::borrow::Cow::Borrowed(k),
        None => std::borrow::Cow::Owned(key.to_owned()),
    }
}

impl KeyPath {
    /// The path with one more key.
    #[must_use]
    pub fn key(&self, key: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(interned(key)));
        Self(segs)
    }

    /// The path with one more index.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(index));
        Self(segs)
    }

    /// The path followed by `rel`, a relative path written as
    /// `fields[1].match`.
    #[must_use]
    pub fn join(&self, rel: &str) -> Self {
        let mut out = self.clone();
        for part in rel.split('.') {
            let (name, mut indexes) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if !name.is_empty() {
                out = out.key(name);
            }
            while let Some(close) = indexes.find(']') {
                if let Ok(n) = indexes[1..close].parse() {
                    out = out.index(n);
                }
                indexes = &indexes[close + 1..];
            }
        }
        out
    }

    /// True for the document root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Line (1-based) and column (1-based) of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    /// Line, 1-based.
    pub line: usize,
    /// Column, 1-based.
    pub col: usize,
}

/// A 64-bit hash of a key path, built one segment at a time: indexing a
/// document never allocates a path, and a lookup hashes the path it is
/// given the same way. (A collision would only misplace a diagnostic's
/// line; at 64 bits, over one document's keys, it does not happen.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PathHash(u64);

impl PathHash {
    pub(crate) const ROOT: Self = Self(0xcbf2_9ce4_8422_2325);

    fn mix(self, tag: u8, bytes: &[u8]) -> Self {
        let mut h = self.0 ^ u64::from(tag);
        h = h.wrapping_mul(0x0100_0000_01b3);
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // Length and a final avalanche keep `a.b` and `ab` apart.
        h ^= bytes.len() as u64;
        h = (h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        Self(h ^ (h >> 32))
    }

    pub(crate) fn key(self, key: &str) -> Self {
        self.mix(1, key.as_bytes())
    }

    pub(crate) fn index(self, index: usize) -> Self {
        self.mix(2, &(index as u64).to_le_bytes())
    }

    fn of(path: &[Seg]) -> Self {
        path.iter().fold(Self::ROOT, |h, seg| match seg {
            Seg::Key(k) => h.key(k),
            Seg::Index(n) => h.index(*n),
        })
    }
}

/// A hasher for keys that are already hashes.
#[derive(Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Positions = HashMap<PathHash, Pos, std::hash::BuildHasherDefault<Prehashed>>;

/// Positions of the keys and items of one document.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    positions: Positions,
}

impl SourceMap {
    /// Makes room for `n` more positions.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.positions.reserve(n);
    }

    /// Records where a key or item starts (the first record of a path
    /// wins).
    pub(crate) fn record(&mut self, path: PathHash, pos: Pos) {
        self.positions.entry(path).or_insert(pos);
    }

    /// Records a position (for documents indexed by hand, such as JSONL).
    pub fn insert(&mut self, path: KeyPath, pos: Pos) {
        self.positions.insert(PathHash::of(&path.0), pos);
    }

    /// The position of `path` itself, if it was indexed.
    pub fn exact(&self, path: &KeyPath) -> Option<Pos> {
        self.positions.get(&PathHash::of(&path.0)).copied()
    }

    /// The position of `path`, or of its nearest ancestor that is known.
    pub fn locate(&self, path: &KeyPath) -> Option<Pos> {
        // Hashes of every prefix, longest first.
        let mut prefixes = Vec::with_capacity(path.0.len() + 1);
        let mut h = PathHash::ROOT;
        prefixes.push(h);
        for seg in &path.0 {
            h = match seg {
                Seg::Key(k) => h.key(k),
                Seg::Index(n) => h.index(*n),
            };
            prefixes.push(h);
        }
        prefixes
            .iter()
            .rev()
            .find_map(|h| self.positions.get(h).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segs: &[&str]) -> KeyPath {
        KeyPath(
            segs.iter()
                .map(|s| {
                    s.parse::<usize>()
                        .map_or_else(|_| Seg::Key(interned(s)), Seg::Index)
                })
                .collect(),
        )
    }

    #[test]
    fn finds_keys_and_items() {
        let text = "name: demo\ntests:\n  - id: a\n    assertions:\n      - type: regex\n        value: \"([a-z\"\n  - id: b\n";
        let map = crate::yaml::parse_with_positions(text).unwrap().1;
        assert_eq!(map.locate(&path(&["name"])), Some(Pos { line: 1, col: 1 }));
        assert_eq!(
            map.locate(&path(&["tests", "0"])),
            Some(Pos { line: 3, col: 5 })
        );
        assert_eq!(
            map.locate(&path(&["tests", "0", "assertions", "0", "value"])),
            Some(Pos { line: 6, col: 9 })
        );
        assert_eq!(
            map.locate(&path(&["tests", "1", "id"])),
            Some(Pos { line: 7, col: 5 })
        );
        // Unknown paths fall back to the nearest ancestor.
        assert_eq!(
            map.locate(&path(&["tests", "1", "nope"])),
            Some(Pos { line: 7, col: 5 })
        );
        assert_eq!(
            path(&["tests", "0", "assertions", "1"]).to_string(),
            "tests[0].assertions[1]"
        );
    }

    #[test]
    fn flow_style() {
        let text = "a: {b: [1, {c: 2}]}\nd: 4\n";
        let map = crate::yaml::parse_with_positions(text).unwrap().1;
        assert_eq!(
            map.locate(&path(&["a", "b", "1", "c"])),
            Some(Pos { line: 1, col: 13 })
        );
        assert_eq!(map.locate(&path(&["d"])), Some(Pos { line: 2, col: 1 }));
    }
}
