//! ARCHITECTURE.md held true: its "may import" tables are data this test
//! reads (rust-analyzer's tidy tests are the model). For the host and the
//! suite crate it parses every `crate::…` path of non-test code and fails,
//! naming the file and line, when a module imports what its row does not
//! allow, when a module is missing from the table or the table names one
//! the code lacks, and when modules import each other (a circle).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One table row's allowance: the modules it may import, or all of them.
#[derive(Debug, Default)]
struct Allowed {
    everything: bool,
    modules: BTreeSet<String>,
}

/// `lib.rs` → `lib`, `plugin/` → `plugin`, `history_cli.rs` → `history_cli`.
fn module_name(token: &str) -> String {
    token
        .trim_end_matches('/')
        .trim_end_matches(".rs")
        .to_owned()
}

/// The backticked words of a table cell.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(module_name)
        .collect()
}

/// The rows of the table under `heading` whose last column is `may import`.
fn table(markdown: &str, heading: &str) -> BTreeMap<String, Allowed> {
    let section = markdown
        .split_once(heading)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{heading}`"))
        .1;
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in section.lines() {
        if line.starts_with("| ") && line.trim_end().ends_with("may import |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        if line.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        let last = cells.last().copied().unwrap_or_default();
        let allowed = Allowed {
            everything: last.contains("everything"),
            modules: backticked(last).into_iter().collect(),
        };
        for module in backticked(cells[0]) {
            rows.insert(
                module,
                Allowed {
                    everything: allowed.everything,
                    modules: allowed.modules.clone(),
                },
            );
        }
    }
    assert!(!rows.is_empty(), "no `may import` table under `{heading}`");
    rows
}

/// The crate's top-level modules: each `.rs` file and folder of `src`.
fn modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .map(|p| module_name(&p.file_name().unwrap().to_string_lossy()))
        .filter(|m| m != "lib" && m != "main")
        .collect()
}

/// The text of `file` that is not test code: up to a `#[cfg(test)]` that
/// opens a `mod tests`.
fn non_test(text: &str) -> &str {
    let mut at = 0;
    while let Some(i) = text[at..].find("#[cfg(test)]") {
        let i = at + i;
        let rest = text[i + "#[cfg(test)]".len()..].trim_start();
        if rest.starts_with("mod tests {") {
            return &text[..i];
        }
        at = i + 1;
    }
    text
}

/// The crate modules `line` names through `crate::…` (and `crate::{a, b::c}`).
fn named(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // `evalhost_crate::` or the like
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = 0;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.push(ident(&group[start..k]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(ident(&group[start..k]));
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// Every import between top-level modules: (from, to) → the first place.
fn imports(src: &Path, known: &BTreeSet<String>) -> BTreeMap<(String, String), String> {
    let mut edges = BTreeMap::new();
    for entry in walkdir::WalkDir::new(src).sort_by_file_name() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs")
            || path.file_name().is_some_and(|n| n == "tests.rs")
        {
            continue;
        }
        let rel = path.strip_prefix(src).unwrap();
        let from = module_name(
            &rel.components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy(),
        );
        if from == "lib" || from == "main" {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in non_test(&text).lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for to in named(line) {
                if to != from && known.contains(&to) {
                    edges
                        .entry((from.clone(), to))
                        .or_insert_with(|| format!("{}:{}", rel.display(), n + 1));
                }
            }
        }
    }
    edges
}

/// The groups of modules that reach each other (circles), each sorted.
fn circles(edges: &BTreeMap<(String, String), String>) -> Vec<Vec<String>> {
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(from).or_default().push(to);
    }
    let reach = |start: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.to_owned()];
        while let Some(m) = todo.pop() {
            for next in graph.get(m.as_str()).into_iter().flatten() {
                if seen.insert((*next).to_owned()) {
                    todo.push((*next).to_owned());
                }
            }
        }
        seen
    };
    let mut groups: BTreeSet<Vec<String>> = BTreeSet::new();
    for m in graph.keys() {
        let from_m = reach(m);
        if !from_m.contains(*m) {
            continue;
        }
        let mut group: Vec<String> = from_m
            .iter()
            .filter(|o| reach(o).contains(*m))
            .cloned()
            .collect();
        group.sort();
        groups.insert(group);
    }
    groups.into_iter().collect()
}

fn check(src: &str, heading: &str) -> Vec<String> {
    let root = crate::support::root();
    let markdown = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let rows = table(&markdown, heading);
    let src = root.join(src);
    let known = modules(&src);
    let mut problems = Vec::new();
    for m in &known {
        if !rows.contains_key(m) {
            problems.push(format!(
                "{}: the module `{m}` is not in ARCHITECTURE.md's table under `{heading}`",
                src.display()
            ));
        }
    }
    for m in rows.keys() {
        if !known.contains(m) && m != "lib" && m != "main" {
            problems.push(format!(
                "ARCHITECTURE.md names `{m}` under `{heading}`, which {} does not have",
                src.display()
            ));
        }
    }
    let edges = imports(&src, &known);
    for ((from, to), at) in &edges {
        let allowed = rows
            .get(from)
            .is_some_and(|a| a.everything || a.modules.contains(to));
        if !allowed {
            problems.push(format!(
                "{at}: `{from}` imports `{to}`, which its row of ARCHITECTURE.md does not allow"
            ));
        }
    }
    for group in circles(&edges) {
        let places: Vec<String> = edges
            .iter()
            .filter(|((f, t), _)| group.contains(f) && group.contains(t))
            .map(|((f, t), at)| format!("{f} → {t} ({at})"))
            .collect();
        problems.push(format!("modules import each other: {}", places.join(", ")));
    }
    problems
}

#[test]
fn the_host_imports_only_what_architecture_md_allows() {
    let problems = check("host/src", "### `host/` — `evalhost`");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_suite_crate_imports_only_what_architecture_md_allows() {
    let problems = check("host/suite/src", "### `host/suite/` — `evalhost-suite`");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The places in `src` (non-test code) that build a process
/// (`Command::new`), as `file:line`, outside the modules `allowed`.
fn process_builders(src: &Path, allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(src) {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("tests.rs") {
            continue;
        }
        let rel = path.strip_prefix(src).unwrap();
        let module = module_name(
            &rel.components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy(),
        );
        if allowed.contains(&module.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in non_test(&text).lines().enumerate() {
            if line.contains("Command::new(") && !line.trim_start().starts_with("//") {
                found.push(format!("{}:{}", path.display(), n + 1));
            }
        }
    }
    found
}

/// ARCHITECTURE.md: only `process` (and the sandbox it starts processes
/// in, `isolate`) builds a process; every other module asks `process`, so
/// no process of a case can start outside its sandbox by accident.
#[test]
fn only_the_process_module_starts_a_process() {
    let src = crate::support::root().join("host/src");
    let found = process_builders(&src, &["process", "isolate", "main"]);
    assert!(
        found.is_empty(),
        "a process built outside `process`/`isolate` (ask `crate::process` instead):\n{}",
        found.join("\n")
    );
    // The check can fail: `isolate` itself builds one.
    assert!(!process_builders(&src, &["process"]).is_empty());
}

/// The checker itself: a forbidden import, a circle and a missing row are
/// each found (a test that cannot fail proves nothing).
#[test]
fn the_architecture_check_finds_forbidden_imports_and_circles() {
    assert_eq!(
        named("use crate::{plugin::x, results, target::{a, b}};"),
        ["plugin", "results", "target"]
    );
    assert_eq!(
        named("let x = crate::outcome::combine(&rows);"),
        ["outcome"]
    );
    let mut edges = BTreeMap::new();
    edges.insert(("a".to_owned(), "b".to_owned()), "a.rs:1".to_owned());
    edges.insert(("b".to_owned(), "c".to_owned()), "b.rs:1".to_owned());
    assert!(circles(&edges).is_empty());
    edges.insert(("c".to_owned(), "a".to_owned()), "c.rs:9".to_owned());
    assert_eq!(
        circles(&edges),
        vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
    );
    let rows = table(
        "### h\n\n| module | job | may import |\n|---|---|---|\n| `a.rs`, `b/` | x | `c` |\n| `cli.rs` | y | everything |\n\nafter\n",
        "### h",
    );
    assert!(rows["a"].modules.contains("c") && !rows["a"].modules.contains("d"));
    assert!(rows["b"].modules.contains("c") && rows["cli"].everything);
}

/// The plugin crates have no table in ARCHITECTURE.md, but the same rule:
/// no two of a crate's modules import each other.
#[test]
fn no_plugin_crate_has_a_module_circle() {
    let root = crate::support::root();
    let mut problems = Vec::new();
    let mut crates = 0;
    for entry in std::fs::read_dir(root.join("plugins")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        crates += 1;
        let known = modules(&src);
        let edges = imports(&src, &known);
        for group in circles(&edges) {
            let places: Vec<String> = edges
                .iter()
                .filter(|((f, t), _)| group.contains(f) && group.contains(t))
                .map(|((f, t), at)| format!("{f} → {t} ({at})"))
                .collect();
            problems.push(format!(
                "{}: modules import each other: {}",
                src.display(),
                places.join(", ")
            ));
        }
    }
    assert!(crates >= 5, "no plugin crates found under plugins/");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
