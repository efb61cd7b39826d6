//! YAML text to JSON values and key positions, in one pass over the
//! parser's events.
//!
//! Every suite, targets and case file is read here. The values follow the
//! rules evalhost always applied (those of `serde_yaml`): YAML 1.2 core
//! scalars (`null`/`~`/empty, `true`/`false` in three spellings, decimal,
//! `0x`, `0o` and `0b` integers, floats with `.inf` and `.nan`; `012` and
//! `1_000` stay strings), merge keys (`<<: *anchor`, `<<: [*a, *b]`), the
//! core tags (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`). What JSON
//! cannot hold is an error naming its line: a key that is not a string, a
//! duplicate key, an integer past 64 bits, a custom tag (`!foo`), a second
//! document.
//!
//! Anchors and aliases are expanded as the events arrive; a document that
//! would expand past 100 alias uses per event (a "billion laughs"
//! document) or nest deeper than 128 levels is refused before it is built.
//!
//! Positions: every mapping key and every sequence item is indexed in a
//! [`SourceMap`] as it is read. What an alias or a merge brings in is not
//! indexed again; a diagnostic about it falls back to the alias or the
//! mapping.

use std::borrow::Cow;

use saphyr_parser::{Event, Parser, ScalarStyle, Tag};
use serde_json::{Map, Number, Value};

use crate::source_map::{PathHash, Pos, SourceMap};

mod depth;

/// How deep collections may nest (after aliases are expanded).
pub const MAX_DEPTH: usize = 128;

/// Alias uses allowed per event of the document.
const REPETITIONS_PER_EVENT: u64 = 100;

/// Why a YAML text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// What is wrong, without the position.
    pub message: String,
    /// Where, when known.
    pub pos: Option<Pos>,
    /// Which kind of problem it is.
    pub kind: YamlErrorKind,
}

/// The kinds of [`YamlError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YamlErrorKind {
    /// Not YAML: the parser stopped here.
    Syntax,
    /// YAML that expands (through aliases) or nests past the limits.
    Limit,
    /// YAML that has no JSON value (a non-string key, a duplicate key, a
    /// custom tag, an integer past 64 bits, more than one document).
    Unsupported,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(pos) = self.pos {
            write!(f, " at line {} column {}", pos.line, pos.col)?;
        }
        Ok(())
    }
}

impl std::error::Error for YamlError {}

/// Parses `text` into a JSON value, applying merge keys.
pub fn parse(text: &str) -> Result<Value, YamlError> {
    parse_with_positions(text).map(|(value, _)| value)
}

thread_local! {
    /// A document parsed to tell its dialect ([`keep`]), for the reader
    /// that parses the same text next on this thread.
    static KEPT: std::cell::RefCell<Option<(String, Value, SourceMap)>> = const { std::cell::RefCell::new(None) };
}

/// Keeps `value` and `map`, parsed from `text`, for the next
/// [`parse_with_positions`] of the same text on this thread: a suite is
/// parsed once to tell its dialect, and not again to read it.
pub fn keep(text: String, value: Value, map: SourceMap) {
    KEPT.with(|kept| *kept.borrow_mut() = Some((text, value, map)));
}

/// Drops what [`keep`] kept (when no reader took it).
pub fn forget_kept() {
    KEPT.with(|kept| kept.borrow_mut().take());
}

/// Parses `text` into a JSON value and the positions of its keys and items.
pub fn parse_with_positions(text: &str) -> Result<(Value, SourceMap), YamlError> {
    let kept = KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.as_ref().is_some_and(|(t, _, _)| t == text) {
            kept.take().map(|(_, value, map)| (value, map))
        } else {
            None
        }
    });
    if let Some(parsed) = kept {
        return Ok(parsed);
    }
    if let Some(at) = depth::too_deep(text) {
        return Err(too_deep(text, at));
    }
    parse_unchecked(text)
}

/// The error for flow nesting past [`MAX_DEPTH`] that [`depth::too_deep`]
/// found: the builder's own, from the text up to that bracket (which the
/// parser reads in linear time: no more than the limit is open in it), so
/// that the position is where the builder counts the limit passed (block
/// collections count too); the bracket's, if the builder stops otherwise.
fn too_deep(text: &str, at: depth::TooDeep) -> YamlError {
    let own = err(
        YamlErrorKind::Limit,
        "recursion limit exceeded",
        Pos {
            line: at.line,
            col: at.col + 1,
        },
    );
    match Builder::default().feed(&text[..at.end]) {
        Err(error) if error.kind == YamlErrorKind::Limit => error,
        _ => own,
    }
}

/// [`parse_with_positions`] without the nesting pre-pass (and without
/// what [`keep`] kept).
fn parse_unchecked(text: &str) -> Result<(Value, SourceMap), YamlError> {
    let mut builder = Builder::default();
    match builder.feed(text) {
        Ok(()) => {
            let mut root = builder.root.take().unwrap_or(Value::Null);
            // A block scalar (`|`, `>`) that ends a file without a final
            // line break: saphyr's trailing line breaks differ from
            // libyaml's (`a: |\n  x` is "x" to libyaml, and so to evalhost
            // before; "x\n" to saphyr). The values are read as before;
            // the positions are the same in both.
            if builder.last_is_block
                && !text.ends_with(['\n', '\r'])
                && let Ok(value) = two_pass(text)
            {
                root = value;
            }
            Ok((root, builder.map))
        }
        // A document libyaml reads and saphyr does not (a quoted string
        // continued at its key's indentation): read it as evalhost always
        // did, with the positions indexed before the parser stopped.
        Err(error) if error.kind == YamlErrorKind::Syntax => match two_pass(text) {
            Ok(value) => Ok((value, builder.map)),
            Err(_) => Err(error),
        },
        Err(error) => Err(error),
    }
}

/// The reader evalhost used before this one (`yaml_serde`, then merge
/// keys, then JSON), for the documents saphyr refuses.
fn two_pass(text: &str) -> Result<Value, yaml_serde::Error> {
    let mut value: yaml_serde::Value = yaml_serde::from_str(text)?;
    value.apply_merge()?;
    string_keys(&mut value);
    yaml_serde::from_value(value)
}

/// Scalar mapping keys as JavaScript makes them strings (`0:` is "0"), as
/// the one-pass reader reads them.
fn string_keys(value: &mut yaml_serde::Value) {
    use yaml_serde::Value as Y;
    match value {
        Y::Mapping(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                string_keys(&mut item);
                let key = match key {
                    Y::Number(n) => Y::String(n.to_string()),
                    Y::Bool(b) => Y::String(b.to_string()),
                    Y::Null => Y::String("null".to_owned()),
                    other => other,
                };
                map.insert(key, item);
            }
        }
        Y::Sequence(items) => items.iter_mut().for_each(string_keys),
        Y::Tagged(tagged) => string_keys(&mut tagged.value),
        _ => {}
    }
}

/// From how many bytes a file is parsed on two threads.
const PIPELINE_FROM: usize = 64 << 10;

/// Events per batch handed from the parser to the builder.
const BATCH: usize = 1024;

/// What the parser yields.
type Item<'a> = Result<(Event<'a>, saphyr_parser::Span), saphyr_parser::ScanError>;

/// What is known of a finished node besides its value.
#[derive(Debug, Clone, Copy, Default)]
struct Shape {
    /// Alias uses its expansion took (each alias counts once, plus those
    /// inside what it names).
    repetitions: u64,
    /// Levels of collections, itself included (a scalar is 0).
    depth: usize,
}

/// A collection being read.
enum Open {
    Seq {
        items: Vec<Value>,
        path: PathHash,
    },
    Map {
        entries: Map<String, Value>,
        path: PathHash,
        /// The key just read, waiting for its value (`None` before a key).
        key: Option<(String, PathHash, Pos)>,
        /// `<<` values to merge when the mapping ends, and how many keys
        /// came before the first of them.
        merges: Vec<(Value, Pos)>,
        merge_at: usize,
    },
}

struct Frame {
    open: Open,
    anchor: usize,
    start: Pos,
    shape: Shape,
}

#[derive(Default)]
struct Builder {
    /// The last node read was a block scalar.
    last_is_block: bool,
    stack: Vec<Frame>,
    map: SourceMap,
    /// Anchored values by anchor id.
    anchors: Vec<Option<(Value, Shape)>>,
    events: u64,
    repetitions: u64,
    root: Option<Value>,
    documents: usize,
}

fn at(span_start: &saphyr_parser::Marker) -> Pos {
    Pos {
        line: span_start.line(),
        col: span_start.col() + 1,
    }
}

fn err(kind: YamlErrorKind, message: impl Into<String>, pos: Pos) -> YamlError {
    YamlError {
        message: message.into(),
        pos: Some(pos),
        kind,
    }
}

impl Builder {
    /// Reads `text`: a large one with the parser on another thread, which
    /// hands its events over in batches while this one builds the values,
    /// so scanning and building overlap.
    fn feed(&mut self, text: &str) -> Result<(), YamlError> {
        if text.len() < PIPELINE_FROM {
            return self.run(text.len(), Parser::new_from_str(text));
        }
        std::thread::scope(|scope| {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<Item<'_>>>(16);
            let parser = std::thread::Builder::new().name("evalhost-yaml".into());
            let spawned = parser.spawn_scoped(scope, move || {
                let mut batch = Vec::with_capacity(BATCH);
                for item in Parser::new_from_str(text) {
                    let last = matches!(item, Err(_) | Ok((Event::StreamEnd, _)));
                    batch.push(item);
                    if batch.len() == BATCH || last {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                        // The builder stopped (an error): so does the parser.
                        if sender.send(full).is_err() || last {
                            return;
                        }
                    }
                }
                let _ = sender.send(batch);
            });
            match spawned {
                Ok(_) => self.run(text.len(), receiver.into_iter().flatten()),
                // Without a thread, the parse runs here, in one pass.
                Err(_) => self.run(text.len(), Parser::new_from_str(text)),
            }
        })
    }

    fn run<'a>(
        &mut self,
        len: usize,
        events: impl Iterator<Item = Item<'a>>,
    ) -> Result<(), YamlError> {
        // About one indexed key or item per 16 bytes of YAML.
        self.map.reserve(len / 16);
        for item in events {
            let (event, span) = item.map_err(|e| YamlError {
                message: e.info().to_owned(),
                pos: Some(at(e.marker())),
                kind: YamlErrorKind::Syntax,
            })?;
            let pos = at(&span.start);
            match event {
                Event::StreamStart | Event::Nothing | Event::DocumentEnd => {}
                Event::StreamEnd => break,
                Event::DocumentStart(_) => {
                    self.documents += 1;
                    if self.documents > 1 {
                        return Err(err(
                            YamlErrorKind::Unsupported,
                            "a second YAML document (after `---`): a suite file holds one document",
                            pos,
                        ));
                    }
                }
                Event::Alias(id) => {
                    self.events += 1;
                    self.last_is_block = false;
                    let Some(Some((value, shape))) = self.anchors.get(id) else {
                        return Err(err(YamlErrorKind::Syntax, "unknown anchor", pos));
                    };
                    let shape = Shape {
                        repetitions: shape.repetitions.saturating_add(1),
                        depth: shape.depth,
                    };
                    self.repetitions = self.repetitions.saturating_add(shape.repetitions);
                    if self.repetitions > self.events.saturating_mul(REPETITIONS_PER_EVENT) {
                        return Err(err(YamlErrorKind::Limit, "repetition limit exceeded", pos));
                    }
                    if self.stack.len() + shape.depth > MAX_DEPTH {
                        return Err(err(YamlErrorKind::Limit, "recursion limit exceeded", pos));
                    }
                    let value = value.clone();
                    self.node(value, shape, pos, true)?;
                }
                Event::Scalar(text, style, anchor, tag) => {
                    self.events += 1;
                    self.last_is_block =
                        matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
                    let value = scalar(text, style, tag.as_deref(), pos)?;
                    let shape = Shape::default();
                    if anchor > 0 {
                        self.anchor(anchor, &value, shape);
                    }
                    self.node(value, shape, pos, false)?;
                }
                Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                    self.events += 1;
                    self.last_is_block = false;
                    let is_map = matches!(event, Event::MappingStart(..));
                    if let Some(Open::Map { key: None, .. }) = self.stack.last().map(|f| &f.open) {
                        return Err(err(
                            YamlErrorKind::Unsupported,
                            "a mapping key is a sequence or a mapping; keys must be strings",
                            pos,
                        ));
                    }
                    if let Some(tag) = tag.as_deref()
                        && !tag.is_yaml_core_schema()
                    {
                        return Err(unsupported_tag(tag, pos));
                    }
                    if self.stack.len() + 1 > MAX_DEPTH {
                        return Err(err(YamlErrorKind::Limit, "recursion limit exceeded", pos));
                    }
                    let path = self.item_path(pos);
                    let open = if is_map {
                        Open::Map {
                            entries: Map::new(),
                            path,
                            key: None,
                            merges: Vec::new(),
                            merge_at: 0,
                        }
                    } else {
                        Open::Seq {
                            items: Vec::new(),
                            path,
                        }
                    };
                    self.stack.push(Frame {
                        open,
                        anchor,
                        start: pos,
                        shape: Shape {
                            repetitions: 0,
                            depth: 1,
                        },
                    });
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    self.events += 1;
                    let Some(frame) = self.stack.pop() else {
                        continue;
                    };
                    let value = match frame.open {
                        Open::Seq { items, .. } => Value::Array(items),
                        Open::Map {
                            entries,
                            merges,
                            merge_at,
                            ..
                        } => Value::Object(merge(entries, merges, merge_at)?),
                    };
                    if frame.anchor > 0 {
                        self.anchor(frame.anchor, &value, frame.shape);
                    }
                    self.node(value, frame.shape, frame.start, false)?;
                }
            }
        }
        Ok(())
    }

    fn anchor(&mut self, id: usize, value: &Value, shape: Shape) {
        if self.anchors.len() <= id {
            self.anchors.resize(id + 1, None);
        }
        self.anchors[id] = Some((value.clone(), shape));
    }

    /// The path a node starting here will have, indexing its position
    /// (called for collections as they open; scalars are indexed in
    /// [`Self::node`]).
    fn item_path(&mut self, pos: Pos) -> PathHash {
        match self.stack.last_mut().map(|f| &mut f.open) {
            None => {
                self.map.record(PathHash::ROOT, pos);
                PathHash::ROOT
            }
            Some(Open::Seq { items, path }) => {
                let item = path.index(items.len());
                self.map.record(item, pos);
                item
            }
            Some(Open::Map { key, path, .. }) => match key {
                Some((_, key_path, _)) => *key_path,
                // A collection as a key: refused before this is reached.
                None => *path,
            },
        }
    }

    /// Places a finished node in its parent (or as the root).
    fn node(&mut self, value: Value, shape: Shape, pos: Pos, alias: bool) -> Result<(), YamlError> {
        let Some(frame) = self.stack.last_mut() else {
            if self.root.is_none() {
                self.map.record(PathHash::ROOT, pos);
            }
            self.root = Some(value);
            return Ok(());
        };
        frame.shape.repetitions = frame.shape.repetitions.saturating_add(shape.repetitions);
        frame.shape.depth = frame.shape.depth.max(shape.depth + 1);
        let is_scalar_or_alias = alias || !matches!(value, Value::Array(_) | Value::Object(_));
        match &mut frame.open {
            Open::Seq { items, path } => {
                if is_scalar_or_alias {
                    self.map.record(path.index(items.len()), pos);
                }
                items.push(value);
            }
            Open::Map {
                entries,
                path,
                key,
                merges,
                merge_at,
                ..
            } => match key.take() {
                None => {
                    // A scalar key is a string as JavaScript makes it one
                    // (`0:` is "0", as AgentV reads `score_ranges`).
                    let name = match value {
                        Value::String(s) => s,
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        Value::Null => "null".to_owned(),
                        other => return Err(non_string_key(&other, pos)),
                    };
                    let key_path = path.key(&name);
                    self.map.record(key_path, pos);
                    *key = Some((name, key_path, pos));
                }
                Some((name, _, key_pos)) => {
                    if name == "<<" {
                        if !merges.is_empty() {
                            return Err(duplicate_key(&name, key_pos));
                        }
                        *merge_at = entries.len();
                        merges.push((value, pos));
                    } else {
                        match entries.entry(name) {
                            serde_json::map::Entry::Vacant(slot) => {
                                slot.insert(value);
                            }
                            serde_json::map::Entry::Occupied(slot) => {
                                return Err(duplicate_key(slot.key(), key_pos));
                            }
                        }
                    }
                }
            },
        }
        Ok(())
    }
}

/// A mapping with its `<<` merged: the keys of the merged mappings that
/// the mapping does not write itself, in the place of `<<` (earlier
/// mappings of a `<<: [*a, *b]` list first).
fn merge(
    entries: Map<String, Value>,
    merges: Vec<(Value, Pos)>,
    merge_at: usize,
) -> Result<Map<String, Value>, YamlError> {
    let Some((merged, pos)) = merges.into_iter().next() else {
        return Ok(entries);
    };
    let sources = match merged {
        Value::Object(map) => vec![map],
        Value::Array(items) => {
            let mut maps = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Object(map) => maps.push(map),
                    Value::Array(_) => {
                        return Err(err(
                            YamlErrorKind::Unsupported,
                            "expected a mapping for merging, but found a sequence",
                            pos,
                        ));
                    }
                    _ => {
                        return Err(err(
                            YamlErrorKind::Unsupported,
                            "expected a mapping for merging, but found a scalar",
                            pos,
                        ));
                    }
                }
            }
            maps
        }
        _ => {
            return Err(err(
                YamlErrorKind::Unsupported,
                "expected a mapping or list of mappings for merging, but found a scalar",
                pos,
            ));
        }
    };
    let mut out = Map::with_capacity(entries.len());
    let mut explicit = entries.into_iter();
    for (k, v) in explicit.by_ref().take(merge_at) {
        out.insert(k, v);
    }
    let rest: Vec<(String, Value)> = explicit.collect();
    for source in sources {
        for (k, v) in source {
            if !out.contains_key(&k) && !rest.iter().any(|(r, _)| *r == k) {
                out.insert(k, v);
            }
        }
    }
    out.extend(rest);
    Ok(out)
}

fn duplicate_key(name: &str, pos: Pos) -> YamlError {
    err(
        YamlErrorKind::Unsupported,
        format!("duplicate entry with key {name:?}"),
        pos,
    )
}

fn non_string_key(value: &Value, pos: Pos) -> YamlError {
    let what = match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean `{b}`"),
        Value::Number(n) => format!("the number `{n}`"),
        _ => "a collection".to_owned(),
    };
    err(
        YamlErrorKind::Unsupported,
        format!("a mapping key is {what}; keys must be strings (quote it)"),
        pos,
    )
}

fn unsupported_tag(tag: &Tag, pos: Pos) -> YamlError {
    err(
        YamlErrorKind::Unsupported,
        format!(
            "the tag `{tag}` is not supported (only the core tags `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`)"
        ),
        pos,
    )
}

/// The JSON value of a scalar.
fn scalar(
    text: Cow<'_, str>,
    style: ScalarStyle,
    tag: Option<&Tag>,
    pos: Pos,
) -> Result<Value, YamlError> {
    let invalid = |expected: &str| {
        err(
            YamlErrorKind::Unsupported,
            format!("invalid value: string {:?}, expected {expected}", &*text),
            pos,
        )
    };
    if let Some(tag) = tag {
        if !tag.is_yaml_core_schema() {
            return Err(unsupported_tag(tag, pos));
        }
        return match tag.suffix.as_str() {
            "bool" => parse_bool(&text)
                .map(Value::Bool)
                .ok_or_else(|| invalid("a boolean")),
            "int" => match parse_int(&text) {
                Some(Int::Fits(n)) => Ok(Value::Number(n)),
                Some(Int::TooBig) => Err(too_big(&text, pos)),
                None => Err(invalid("an integer")),
            },
            "float" => parse_f64(&text)
                .map(float)
                .ok_or_else(|| invalid("a float")),
            "null" => {
                if is_null(&text) {
                    Ok(Value::Null)
                } else {
                    Err(invalid("null"))
                }
            }
            _ => Ok(Value::String(text.into_owned())),
        };
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.into_owned()));
    }
    if text.is_empty() || is_null(&text) {
        return Ok(Value::Null);
    }
    if let Some(b) = parse_bool(&text) {
        return Ok(Value::Bool(b));
    }
    // Every number (`12`, `-0x1F`, `+.5`, `.inf`) starts with a digit or a
    // dot after at most one sign: most scalars are words, and skip the rest.
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(&text);
    if !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Ok(Value::String(text.into_owned()));
    }
    match parse_int(&text) {
        Some(Int::Fits(n)) => return Ok(Value::Number(n)),
        Some(Int::TooBig) => return Err(too_big(&text, pos)),
        None => {}
    }
    if !digits_but_not_number(&text)
        && let Some(f) = parse_f64(&text)
    {
        return Ok(float(f));
    }
    Ok(Value::String(text.into_owned()))
}

fn too_big(text: &str, pos: Pos) -> YamlError {
    err(
        YamlErrorKind::Unsupported,
        format!("the integer `{text}` does not fit in 64 bits"),
        pos,
    )
}

/// JSON has no NaN or infinity: they become `null`.
fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn is_null(text: &str) -> bool {
    matches!(text, "null" | "Null" | "NULL" | "~")
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

enum Int {
    Fits(Number),
    /// An integer past `u64`/`i64`.
    TooBig,
}

fn parse_int(text: &str) -> Option<Int> {
    if let Some(n) = parse_unsigned::<u64>(text, u64::from_str_radix) {
        return Some(Int::Fits(n.into()));
    }
    if let Some(n) = parse_negative::<i64>(text, i64::from_str_radix) {
        return Some(Int::Fits(n.into()));
    }
    if parse_unsigned::<u128>(text, u128::from_str_radix).is_some()
        || parse_negative::<i128>(text, i128::from_str_radix).is_some()
    {
        return Some(Int::TooBig);
    }
    None
}

type Radix<T> = fn(&str, u32) -> Result<T, std::num::ParseIntError>;

fn parse_unsigned<T>(text: &str, from: Radix<T>) -> Option<T> {
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = unsigned.strip_prefix(prefix) {
            if rest.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(n) = from(rest, radix) {
                return Some(n);
            }
        }
    }
    if unsigned.starts_with(['+', '-']) || digits_but_not_number(text) {
        return None;
    }
    from(unsigned, 10).ok()
}

fn parse_negative<T>(text: &str, from: Radix<T>) -> Option<T> {
    for (prefix, radix) in [("-0x", 16), ("-0o", 8), ("-0b", 2)] {
        if let Some(rest) = text.strip_prefix(prefix)
            && let Ok(n) = from(&format!("-{rest}"), radix)
        {
            return Some(n);
        }
    }
    if digits_but_not_number(text) {
        return None;
    }
    from(text, 10).ok()
}

fn parse_f64(text: &str) -> Option<f64> {
    let unsigned = match text.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return None,
        Some(rest) => rest,
        None => text,
    };
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") {
        return Some(f64::INFINITY);
    }
    if matches!(text, "-.inf" | "-.Inf" | "-.INF") {
        return Some(f64::NEG_INFINITY);
    }
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return Some(f64::NAN);
    }
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Leading zeros followed by digits (`012`) are a string in YAML 1.2.
fn digits_but_not_number(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    digits.len() > 1 && digits.starts_with('0') && digits[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests;
