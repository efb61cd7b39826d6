//! The one-pass reader against the two-pass one it replaced
//! (`yaml_serde` values, then `apply_merge`, then JSON): same values, same
//! refusals, on hand-picked edge cases and on every YAML file of the
//! corpus and the fixtures.

use super::*;

/// The reader evalhost used before ([`super::two_pass`]), errors as text.
fn two_pass(text: &str) -> Result<Value, String> {
    super::two_pass(text).map_err(|e| e.to_string())
}

fn same(text: &str) {
    let old = two_pass(text);
    let new = parse(text);
    match (&old, &new) {
        // `IndexMap` equality ignores key order.
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{text:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{text:?}: two-pass {old:?}, one-pass {new:?}"),
    }
}

#[test]
fn scalars_resolve_as_before() {
    for text in [
        "a: 0x1F",
        "a: 0o17",
        "a: 0b101",
        "a: -0x1F",
        "a: 0x-1",
        "a: +0x1",
        "a: 1e3",
        "a: .nan",
        "a: .inf",
        "a: -.inf",
        "a: +.inf",
        "a: 012",
        "a: -012",
        "a: 0",
        "a: 00",
        "a: 1.0",
        "a: 18446744073709551615",
        "a: 18446744073709551616",
        "a: -9223372036854775808",
        "a: -9223372036854775809",
        "a: -1",
        "a: 1_000",
        "a: +1",
        "a: ++1",
        "a: +-1",
        "a: !!int 1.5",
        "a: !!int '7'",
        "a: !!float 1",
        "a: !!float x",
        "a: !!bool yes",
        "a: !!bool True",
        "a: !!null ~",
        "x: !!null ''",
        "a: !!str 12",
        "a: !!binary aGk=",
        "a: 2.",
        "a: .5",
        "a: 1.5e+3",
        "a: 1.0e10",
        "k: 1.7976931348623157e309",
        "a: inf",
        "a: nan",
        "a: infinity",
        "a: NaN",
        "a: yes",
        "a: no",
        "a: on",
        "a: -0",
        "a: 0.0",
        "a: -0.0",
        "a: True",
        "a: TRUE",
        "a: tRUE",
        "a: Null",
        "a: NULL",
        "a: ~",
        "a:",
        "a: ''",
        "a: \"\"",
        "a: 'true'",
        "a: \"12\"",
        "a: |\n  x\n",
        "a: >\n  x\n  y\n",
        "a: |-\n  x\n",
        "a: 1e",
        "a: 1.2.3",
        "a: 0x",
        "a: -",
        "a: 1 # comment",
        "a: \"\\x00\\u263A\"",
        "a: 'it''s'",
        "a: 123456789012345678901234567890",
        "a: 1.5E3",
        "a: 0.1e-2",
    ] {
        same(text);
    }
}

#[test]
fn documents_keys_and_tags_as_before() {
    for text in [
        "",
        "---",
        "--- 1",
        "--- 1\n--- 2",
        "a: 1\n...\n",
        "%YAML 1.2\n---\na: 1",
        "# only\n",
        "a: 1\na: 2",
        "{a: 1, a: 1}",
        "1: x",
        "true: x",
        "~: x",
        "? [a]\n: b",
        "? {a: 1}\n: b",
        "? a\n? b",
        "a: [1, 2,]",
        "a: !foo bar",
        "a: !foo [1]",
        "a: !custom\n  b: 1",
        "a: *u",
        "a: &x 1\nb: *x\nc: *x",
        "a: &x [1, 2]\nb: *x",
        "&x a: 1\n*x : 2",
        "- a\n- b",
        "just a string",
        "42",
        "[1, {a: [2, 3]}]",
        "a:\n  - b:\n      c: d\n",
        "a: !!map {b: 1}",
        "a: !!seq [1]",
        "\u{feff}a: 1",
    ] {
        same(text);
    }
}

#[test]
fn merge_keys_as_before() {
    for text in [
        "a: &x {b: 1}\nc:\n  <<: *x\n  d: 2",
        "c:\n  <<: [{b: 1}, {b: 2, e: 3}]\n  b: 0",
        "c:\n  <<: 1",
        "c:\n  <<: [1]",
        "c:\n  <<: [[1]]",
        "<<: {a: 1}\nb: 2",
        "a:\n  <<: {b: 1}\n  <<: {c: 1}",
        "base: &base {x: 1, y: 2}\nover:\n  y: 3\n  <<: *base\n  z: 4",
        "a: &a {k: 1}\nb: &b {k: 2, j: 2}\nc: {<<: [*a, *b]}",
    ] {
        same(text);
    }
}

#[test]
fn merged_keys_take_the_place_of_the_merge_key() {
    let value = parse("base: &b {x: 1, y: 2}\nover:\n  w: 0\n  <<: *b\n  y: 3\n").unwrap();
    let keys: Vec<&String> = value["over"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["w", "x", "y"]);
    assert_eq!(value["over"]["y"], 3);
}

#[test]
fn a_merge_inside_an_anchor_is_applied_before_the_alias_copies_it() {
    // `yaml_serde` copied the anchor unmerged and kept `<<` as a key.
    let value = parse("a: &x {<<: {k: 1}}\nb: {<<: *x}\n").unwrap();
    assert_eq!(value["b"], serde_json::json!({"k": 1}));
}

#[test]
fn errors_name_their_line() {
    let cases = [
        ("a: 1\na: 2\n", "duplicate entry with key \"a\"", 2),
        (
            "x: 1\n[1]: x\n",
            "a mapping key is a sequence or a mapping",
            2,
        ),
        ("x: 1\ny: !foo bar\n", "the tag `!foo` is not supported", 2),
        ("x:\n  <<: 1\n", "expected a mapping or list of mappings", 2),
        ("a: 1\n--- \nb: 2\n", "a second YAML document", 2),
        ("a: 1\nb: [\n", "", 3),
        (
            "a: 1\nb: 99999999999999999999999\n",
            "does not fit in 64 bits",
            2,
        ),
        ("a: 1\nb: *nope\n", "", 2),
    ];
    for (text, message, line) in cases {
        let error = parse(text).unwrap_err();
        assert!(error.message.contains(message), "{text:?}: {error}");
        assert_eq!(error.pos.map(|p| p.line), Some(line), "{text:?}: {error}");
    }
}

#[test]
fn an_alias_bomb_is_refused_before_it_is_built() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let error = parse(&text).unwrap_err();
    assert_eq!(error.kind, YamlErrorKind::Limit, "{error}");
    assert!(error.message.contains("repetition limit exceeded"));
    assert!(two_pass(&text).is_err());
    // A few levels are fine.
    let small: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
    same(&small);
    assert_eq!(parse(&small).unwrap()["a2"][9][9][9], "x");
}

#[test]
fn nesting_past_the_limit_is_refused() {
    for depth in [MAX_DEPTH, MAX_DEPTH + 1] {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        same(&text);
        assert_eq!(parse(&text).is_ok(), depth <= MAX_DEPTH, "{depth}");
    }
    // Through an alias: 100 levels named twice inside 60 more.
    let inner = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let text = format!("a: &a {inner}\nb: {}*a{}\n", "[".repeat(60), "]".repeat(60));
    let error = parse(&text).unwrap_err();
    assert!(
        error.message.contains("recursion limit exceeded"),
        "{error}"
    );
    same(&text);
}

fn yaml_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

#[test]
fn every_yaml_file_of_the_corpus_and_fixtures_reads_as_before() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["../shared/corpus", "tests/fixtures", "examples", "docs"] {
        yaml_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "found only {} YAML files", files.len());
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let old = two_pass(&text);
        let new = parse(&text);
        match (&old, &new) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", file.display()),
            (Err(_), Err(_)) => {}
            _ => panic!("{}: two-pass {old:?}, one-pass {new:?}", file.display()),
        }
    }
}

#[test]
fn a_block_scalar_at_the_end_of_a_file_without_a_line_break_reads_as_before() {
    for ind in ["|", "|-", "|+", ">", ">-", ">+", "|2"] {
        for tail in ["", "\n", "\n\n", " ", "\n  "] {
            same(&format!("a: {ind}\n  x\n  y{tail}"));
            same(&format!("- b: 1\n- {ind}\n  x\n  y{tail}"));
            same(&format!("a:\n  b: [1]\n  c: {ind}\n    x\n    y{tail}"));
        }
    }
    assert_eq!(parse("a: |\n  x\n  y").unwrap()["a"], "x\ny");
}

#[test]
fn a_quoted_string_continued_at_its_keys_indentation_reads_as_before() {
    // saphyr refuses these; libyaml (and evalhost before) reads them.
    for text in [
        "b: \"one\ntwo\"\n",
        "a:\n  b: \"one\n  two\"\n",
        "a:\n  b: 'one\n  two'\n",
    ] {
        same(text);
        assert!(parse(text).is_ok(), "{text:?}");
    }
    // Positions before the place saphyr stopped are kept.
    let (_, map) = parse_with_positions("x: 1\nb: \"one\ntwo\"\n").unwrap();
    assert_eq!(
        map.exact(&crate::source_map::KeyPath::default().key("x")),
        Some(Pos { line: 1, col: 1 })
    );
}

/// AgentV's `score_ranges` shorthand writes integer keys (`0:` … `10:`):
/// both readers make scalar keys strings as JavaScript does, with the line
/// of each key kept.
#[test]
fn scalar_keys_are_strings_as_in_javascript() {
    let text = "score_ranges:\n  0: bad\n  10: good\n  true: yes\n  ~: none\n";
    let want = serde_json::json!({"score_ranges": {"0": "bad", "10": "good", "true": "yes", "null": "none"}});
    assert_eq!(parse(text).unwrap(), want);
    assert_eq!(two_pass(text).unwrap(), want);
    let (_, map) = parse_with_positions(text).unwrap();
    let at = crate::source_map::KeyPath::default()
        .key("score_ranges")
        .key("10");
    assert_eq!(map.locate(&at).map(|p| p.line), Some(3));
}

/// Runs `f` on a thread and waits for it at most `secs` seconds: a test of
/// something that once took minutes fails in bounded time instead.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    receive
        .recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("not done in {secs} s"))
}

#[test]
fn deep_flow_nesting_is_refused_before_the_parser_reads_it() {
    // n = 200,000 took the parser about 160 s (debug build) before the
    // depth limit fired: its look-ahead is quadratic in the nesting.
    let n = 200_000;
    for (open, close) in [("[", "]"), ("{", "}")] {
        let text = format!("tests: {}{}\n", open.repeat(n), close.repeat(n));
        let error = within(60, move || parse(&text).unwrap_err());
        assert_eq!(error.kind, YamlErrorKind::Limit, "{error}");
        assert!(
            error.message.contains("recursion limit exceeded"),
            "{error}"
        );
        assert_eq!(error.pos.map(|p| p.line), Some(1), "{error}");
    }
    // The position is the builder's (the mapping counts as a level).
    let text = format!("tests: {}{}\n", "[".repeat(200), "]".repeat(200));
    assert_eq!(parse(&text), parse_unchecked(&text).map(|(v, _)| v));
    assert_eq!(
        parse(&text).unwrap_err().pos,
        Some(Pos {
            line: 1,
            col: 8 + MAX_DEPTH - 1
        })
    );
}

#[test]
fn deep_block_nesting_is_refused_in_linear_time() {
    let text = format!("{}x\n", "- ".repeat(1 << 20));
    let error = within(60, move || parse(&text).unwrap_err());
    assert_eq!(error.kind, YamlErrorKind::Limit, "{error}");
    assert!(
        error.message.contains("recursion limit exceeded"),
        "{error}"
    );
    // Block and flow together.
    let text = format!("{}{}\n", "- ".repeat(100), "[".repeat(1 << 20));
    let error = within(60, move || parse(&text).unwrap_err());
    assert_eq!(error.kind, YamlErrorKind::Limit, "{error}");
}

#[test]
fn the_nesting_pass_finds_flow_collections_where_the_parser_does() {
    let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    let d = deep(MAX_DEPTH + 1);
    let open = "[{".repeat(150);
    // Past the limit, wherever the flow collection starts: the same error
    // as the builder's.
    for text in [
        d.clone(),
        format!("a: {d}\n"),
        format!("a:\n  b: {d}\n"),
        format!("- {d}\n"),
        format!("- - a: {d}\n"),
        format!("a: |\n  text\nb: {d}\n"),
        format!("- key: |\n  foo: {d}\n"),
        format!("a: 'quoted # [' \nb: {d}\n"),
        format!("a: \"esc \\\" [\"\nb: {d}\n"),
        format!("a: plain [ text\n  continued [\nb: {d}\n"),
        format!("# comment [[[\n&x !!seq {d}\n"),
        format!("a: {{b: [c, \"]]\", '}}}}', d # ]]\n  , {d}]}}\n"),
        format!("a: >2\n   text [\nb: {d}\n"),
        format!("--- {d}\n"),
        format!("[a'b, {d}]\n"),
    ] {
        let old = parse_unchecked(&text).map(|(v, _)| v);
        assert!(
            matches!(&old, Err(e) if e.kind == YamlErrorKind::Limit),
            "{text:.80?}: {old:?}"
        );
        assert!(depth::too_deep(&text).is_some(), "{text:.80?}");
        assert_eq!(parse(&text), old, "{text:.80?}");
    }
    // Brackets that open nothing: in scalars of every style, comments,
    // tags. Nothing is refused that was read before.
    for text in [
        format!("a: |\n  {open}\n  {open}\nb: 1\n"),
        format!("- a: >-\n    {open}\n\n    {open}\n  b: 1\n"),
        format!("a: '{open}'\nb: \"{open}\\\"{open}\"\n"),
        format!("a: x{open}\n  {open}\n  more {open}\nb: 1\n"),
        format!("a: 1 # {open}\n# {open}\nb: [x, \"{open}\"] # {open}\n"),
        format!("a: !<tag:x{open}> 1\n"),
        format!("- |2\n   {open}\n- 1\n"),
        format!("a:\n  - b\n    {open}\n"),
        format!("[\"{open}\", '{open}', x # {open}\n]\n"),
    ] {
        assert_eq!(depth::too_deep(&text), None, "{text:.80?}");
        assert_eq!(
            parse(&text),
            parse_unchecked(&text).map(|(v, _)| v),
            "{text:.80?}"
        );
    }
}
