//! Third-party plugins: `wasm:` graders under `--sandbox strict`, the
//! read-only workspace grant, `plugins:` (map and list form) pinned by
//! sha256, `evalhost plugin inspect`, refusal of an incompatible API
//! version, and graders from other toolchains built during the test run — a
//! Rust crate scaffolded by `evalhost plugin new`, and a Python component
//! built by componentize-py.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Project, root, run_in, score, test_plugin};

fn workspace_reader() -> PathBuf {
    test_plugin("evalhost-test-plugin-workspace-reader")
}

/// The sha256 of a plugin, as `evalhost plugin inspect --json` reports it.
fn digest(wasm: &Path) -> String {
    let r = run_in(
        &root(),
        &["plugin", "inspect", "--json", wasm.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    doc["sha256"].as_str().unwrap().to_owned()
}

fn workspace_project(suite: &str) -> Project {
    let project = Project::with_mock("done");
    project.write("template/notes.txt", "the secret word is banana\n");
    project.write(
        "check.py",
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'score': 1}))\n",
    );
    project.write("EVAL.yaml", suite);
    project
}

#[test]
fn a_wasm_grader_passes_under_sandbox_strict_where_a_command_grader_is_refused() {
    let wasm = workspace_reader();
    let sha = digest(&wasm);
    // Under --sandbox strict a plugin must come from inside the project.
    let sandboxed = format!(
        "{{name: sandboxed, type: code-grader, wasm: graders/reader.wasm, wasm_sha256: {sha}, path: notes.txt, value: banana}}"
    );
    let both = format!(
        "workspace: {{template: ./template}}\ntests:\n  - id: t\n    input: q\n    assertions:\n      - {sandboxed}\n      - {{name: command, type: code-grader, command: [python3, check.py]}}\n"
    );
    let project = workspace_project(&both);
    std::fs::create_dir_all(project.path().join("graders")).unwrap();
    std::fs::copy(&wasm, project.path().join("graders/reader.wasm")).unwrap();
    let r = project.run(&["--sandbox", "strict"]);
    // The refused command grader is an execution error, not a failure of
    // the output.
    assert_eq!(r.code, 3, "{}", r.stderr);
    let row = project.row("t");
    let command = score(&row, "command");
    assert_eq!(command["failure_class"], "plugin_error");
    assert!(
        command["error"]
            .as_str()
            .unwrap()
            .contains("was not granted the `exec` capability: `--sandbox strict` refuses it"),
        "{command}"
    );
    let wasm_score = score(&row, "sandboxed");
    assert_eq!(wasm_score["score"], 1.0, "{wasm_score}");
    // It read the workspace at /workspace, and could not write there.
    assert_eq!(wasm_score["details"]["seen_root"], "/workspace");
    assert_eq!(wasm_score["details"]["write_refused"], true);

    // The same suite with only the wasm grader passes under strict.
    let only_wasm = format!(
        "workspace: {{template: ./template}}\ntests:\n  - id: t\n    input: q\n    assertions:\n      - {sandboxed}\n"
    );
    let project = workspace_project(&only_wasm);
    std::fs::create_dir_all(project.path().join("graders")).unwrap();
    std::fs::copy(&wasm, project.path().join("graders/reader.wasm")).unwrap();
    let r = project.run(&["--sandbox", "strict"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    // A plugin from outside the project is refused under strict.
    let outside = only_wasm.replace("graders/reader.wasm", &format!("'{}'", wasm.display()));
    project.write("EVAL.yaml", &outside);
    let r = project.run(&["--sandbox", "strict"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("outside the suite's project root"),
        "{}",
        r.stderr
    );
    project.write("EVAL.yaml", &only_wasm);
    let r = project.run(&["--sandbox", "strict"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        !project.path().join("template/probe.txt").exists(),
        "the plugin wrote into the template"
    );
}

#[test]
fn a_wasm_grader_without_a_workspace_gets_no_files() {
    let wasm = workspace_reader();
    let suite = format!(
        "tests:\n  - id: t\n    input: q\n    assertions:\n      - {{type: file-contains, wasm: '{}', path: EVAL.yaml, value: tests}}\n",
        wasm.display()
    );
    let project = workspace_project(&suite);
    let r = project.run(&[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let s = &project.row("t")["scores"][0];
    assert_eq!(s["failure_class"], "plugin_error", "{s}");
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("no workspace was granted"),
        "{s}"
    );
}

#[test]
fn a_changed_wasm_file_is_refused_at_load_with_file_line_and_key() {
    let wasm = workspace_reader();
    let suite = format!(
        "tests:\n  - id: t\n    input: q\n    assertions:\n      - type: file-contains\n        wasm: '{}'\n        wasm_sha256: {}\n        path: a\n        value: b\n",
        wasm.display(),
        "0".repeat(64)
    );
    let project = workspace_project(&suite);
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("EVAL.yaml:5"), "{}", r.stderr);
    assert!(r.stderr.contains("wasm"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("but the suite pins {}", "0".repeat(64))),
        "{}",
        r.stderr
    );
    assert!(!project.path().join("out/results.jsonl").exists());
    // One error, not one more per assertion of the plugin's type.
    assert!(r.stderr.contains("\nerror: 1 error(s)"), "{}", r.stderr);
}

/// Issue 16.13: a `plugins:` entry refused for its sha256 is one error; the
/// assertions of the type it would have provided get one warning saying
/// they are not checked, not an "unknown assertion type" error each.
#[test]
fn a_refused_plugin_does_not_cascade_into_unknown_type_errors() {
    let wasm = workspace_reader();
    let suite = format!(
        "plugins:\n  - path: '{}'\n    sha256: {}\ntests:\n  - id: t\n    input: q\n    assertions:\n      - {{type: file-contains, path: a, value: b}}\n  - id: u\n    input: q\n    assertions:\n      - {{type: file-contains, path: a, value: b}}\n",
        wasm.display(),
        "0".repeat(64)
    );
    let project = workspace_project(&suite);
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("but the suite pins"), "{}", r.stderr);
    assert!(!r.stderr.contains("unknown assertion type"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("warning: assertions of type `file-contains` (2) are not checked"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("\nerror: 1 error(s)"), "{}", r.stderr);
}

#[test]
fn the_plugins_map_names_a_type_for_a_wasm_file() {
    let wasm = workspace_reader();
    let sha = digest(&wasm);
    let suite = format!(
        "workspace: {{template: ./template}}\nplugins:\n  notes_mention:\n    path: '{}'\n    sha256: {sha}\ntests:\n  - id: yes\n    input: q\n    assertions: [{{type: notes-mention, path: notes.txt, value: banana}}]\n  - id: no\n    input: q\n    assertions: [{{type: notes_mention, path: notes.txt, value: cherry}}]\n",
        wasm.display()
    );
    let project = workspace_project(&suite);
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(project.row("yes")["scores"][0]["score"], 1.0);
    assert_eq!(project.row("no")["scores"][0]["score"], 0.0);

    // The plugin's own config check runs at load time, as a built-in's.
    let bad = format!(
        "plugins:\n  notes-mention: '{}'\ntests:\n  - id: t\n    input: q\n    assertions:\n      - {{type: notes-mention, path: notes.txt}}\n",
        wasm.display()
    );
    project.write("EVAL.yaml", &bad);
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("EVAL.yaml:7"), "{}", r.stderr);
    assert!(r.stderr.contains("value"), "{}", r.stderr);

    // A plugin of several types must provide the one named.
    let hostile = crate::support::hostile();
    let several = format!(
        "plugins:\n  no-such-type: '{}'\ntests:\n  - {{id: t, input: q, assertions: [{{type: no-such-type}}]}}\n",
        hostile.display()
    );
    project.write("EVAL.yaml", &several);
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("none named `no-such-type`"),
        "{}",
        r.stderr
    );
}

#[test]
fn plugin_inspect_prints_types_schemas_capabilities_and_the_api_version() {
    let wasm = workspace_reader();
    let r = run_in(&root(), &["plugin", "inspect", wasm.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for needle in [
        "workspace-reader 0.1.0",
        "api:       evalhost:grader@0.2.0",
        "type `file-contains` — A workspace file contains a value",
        "capabilities:   workspace-read",
        "\"required\": [",
        "imports:",
    ] {
        assert!(r.stdout.contains(needle), "{needle:?} in\n{}", r.stdout);
    }
    let r = run_in(
        &root(),
        &["plugin", "inspect", "--json", wasm.to_str().unwrap()],
    );
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["api_version"], "0.2.0");
    assert_eq!(doc["types"][0]["name"], "file-contains");
    assert_eq!(
        doc["types"][0]["capabilities"],
        serde_json::json!(["workspace-read"])
    );
    assert_eq!(
        doc["types"][0]["config_schema"]["required"],
        serde_json::json!(["path", "value"])
    );
    assert_eq!(doc["sha256"].as_str().unwrap().len(), 64);

    let r = run_in(&root(), &["plugin", "inspect", "Cargo.toml"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("is not a valid WebAssembly component"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_incompatible_api_version_is_refused_naming_both_versions() {
    let future = test_plugin("evalhost-test-plugin-future-api");
    let expected =
        "was built for evalhost:grader@0.3.0, but this evalhost implements evalhost:grader@0.2.0";
    let r = run_in(&root(), &["plugin", "inspect", future.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(expected), "{}", r.stderr);

    let project = Project::with_mock("x");
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins: ['{}']\ntests:\n  - {{id: t, input: q, assertions: [{{type: contains, value: x}}]}}\n",
            future.display()
        ),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains(expected), "{}", r.stderr);
    assert!(r.stderr.contains("EVAL.yaml:1"), "{}", r.stderr);
}

/// The toolchain of rust-toolchain.toml, for cargo runs outside the repo.
fn toolchain() -> String {
    let text = std::fs::read_to_string(root().join("rust-toolchain.toml")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("channel = "))
        .map(|v| v.trim_matches('"').to_owned())
        .expect("rust-toolchain.toml names a channel")
}

fn cargo(dir: &Path, args: &[&str]) {
    // One scaffold's cargo at a time: they share a target directory, and
    // cargo releases its lock before `cargo test` runs the doctests, whose
    // `--extern` rlib another scaffold's build (the same SDK, the same
    // artifact name) would be replacing meanwhile.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let status = Command::new("cargo")
        .current_dir(dir)
        .args(args)
        // Share dependency builds with the other test plugins.
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-plugins"),
        )
        .env("RUSTUP_TOOLCHAIN", toolchain())
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "cargo {args:?} failed in {}",
        dir.display()
    );
}

#[test]
fn a_rust_grader_scaffolded_by_plugin_new_builds_tests_and_grades() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_in(
        dir.path(),
        &[
            "plugin",
            "new",
            "shout-check",
            "--sdk",
            root().join("plugin-sdk").to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let crate_dir = dir.path().join("shout-check");
    // Its own unit tests, natively, through the SDK's harness.
    cargo(&crate_dir, &["test", "--quiet"]);
    // One command builds the plugin.
    cargo(
        &crate_dir,
        &["build", "--target", "wasm32-wasip2", "--release"],
    );
    let wasm = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("test-plugins/wasm32-wasip2/release/shout_check.wasm");
    assert!(wasm.is_file(), "{} missing", wasm.display());

    let project = Project::with_mock("Hello, World");
    std::fs::create_dir_all(project.path().join("graders")).unwrap();
    std::fs::copy(&wasm, project.path().join("graders/shout_check.wasm")).unwrap();
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins:\n  - path: '{}'\n    sha256: {}\ntests:\n  - {{id: yes, input: q, assertions: [{{type: shout-check, value: WORLD}}]}}\n  - {{id: no, input: q, assertions: [{{type: shout-check, value: moon}}]}}\n",
            "graders/shout_check.wasm",
            digest(&wasm)
        ),
    );
    let r = project.run(&["--sandbox", "strict"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(project.row("yes")["scores"][0]["score"], 1.0);
    assert_eq!(project.row("no")["scores"][0]["score"], 0.0);

    // A name that is not a type name is refused before anything is written.
    let r = run_in(dir.path(), &["plugin", "new", "Bad_Name"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("is not a plugin name"), "{}", r.stderr);
    let r = run_in(dir.path(), &["plugin", "new", "shout-check"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("already exists"), "{}", r.stderr);
}

/// Issue 37.3: `plugin new` with no flag writes a crate that builds as its
/// README says, offline: the SDK the binary carries is written beside it
/// (`vendor/evalhost-plugin-sdk`, by path and version), and it is the crate
/// `cargo package` would publish (its sources and WIT world, file by file),
/// so switching to crates.io once the SDK is published changes nothing.
#[test]
fn a_scaffold_builds_offline_from_the_sdk_the_binary_carries() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_in(dir.path(), &["plugin", "new", "word-check"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let crate_dir = dir.path().join("word-check");
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(
            "evalhost-plugin-sdk = { version = \"0.2\", path = \"vendor/evalhost-plugin-sdk\" }\n"
        ),
        "{manifest}"
    );
    assert!(
        !manifest.contains(root().to_str().unwrap()),
        "no path from the machine evalhost was built on: {manifest}"
    );
    let readme = std::fs::read_to_string(crate_dir.join("README.md")).unwrap();
    assert!(
        readme.contains("evalhost-plugin-sdk = \"0.2\"`") && readme.contains("vendor/"),
        "the README says how to switch to the published crate: {readme}"
    );

    // The package cargo would publish.
    let package_dir = tempfile::tempdir().unwrap();
    let status = Command::new("cargo")
        .current_dir(root())
        .args([
            "package",
            "-p",
            "evalhost-plugin-sdk",
            "--no-verify",
            "--allow-dirty",
        ])
        .env("CARGO_TARGET_DIR", package_dir.path())
        .env("RUSTUP_TOOLCHAIN", toolchain())
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo package failed");
    let crate_file = std::fs::read_dir(package_dir.path().join("package"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "crate"))
        .expect("a .crate");
    let unpacked = tempfile::tempdir().unwrap();
    let status = Command::new("tar")
        .arg("xzf")
        .arg(&crate_file)
        .arg("-C")
        .arg(unpacked.path())
        .status()
        .unwrap();
    assert!(status.success());
    let packaged = std::fs::read_dir(unpacked.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let vendored = crate_dir.join("vendor/evalhost-plugin-sdk");
    let files = |root: &Path| -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p.strip_prefix(root).unwrap().display().to_string());
                }
            }
        }
        out.retain(|f| {
            !f.starts_with("Cargo.toml") && !f.starts_with(".cargo") && f != "Cargo.lock"
        });
        out.sort();
        out
    };
    let shipped = files(&packaged);
    assert!(
        shipped.contains(&"wit/grader.wit".to_owned()),
        "{shipped:?}"
    );
    assert_eq!(files(&vendored), shipped);
    for f in &shipped {
        assert_eq!(
            std::fs::read(vendored.join(f)).unwrap(),
            std::fs::read(packaged.join(f)).unwrap(),
            "{f}"
        );
    }

    // As the README says, with no network: every dependency from the
    // local registry cache the workspace's own build filled.
    for args in [
        &["test", "--quiet", "--offline"][..],
        &[
            "build",
            "--target",
            "wasm32-wasip2",
            "--release",
            "--offline",
        ],
    ] {
        cargo(&crate_dir, args);
    }
    let wasm = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("test-plugins/wasm32-wasip2/release/word_check.wasm");
    let project = Project::with_mock("Hello, World");
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins: ['{}']\ntests:\n  - {{id: yes, input: q, assertions: [{{type: word-check, value: WORLD}}]}}\n",
            wasm.display()
        ),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("yes")["scores"][0]["score"], 1.0);

    // --sdk PATH must be a copy of the SDK.
    let r = run_in(
        dir.path(),
        &[
            "plugin",
            "new",
            "other",
            "--sdk",
            dir.path().to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("is not a copy of evalhost's plugin-sdk"),
        "{}",
        r.stderr
    );
}

/// Builds `tests/plugins/python-grader` with componentize-py against the
/// repository's WIT world.
fn python_grader() -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-grader");
    std::fs::create_dir_all(&out).unwrap();
    let wasm = out.join("max_words.wasm");
    // componentize-py from the pinned tools (installed on first use).
    let status = crate::support::python()
        .current_dir(root())
        .args(["-c", "import sys; from componentize_py import script; sys.argv[0] = 'componentize-py'; sys.exit(script())"])
        .args(["-d", "plugin-sdk/wit", "-w", "plugin", "componentize", "-p"])
        .arg("tests/plugins/python-grader")
        .arg("app")
        .arg("-o")
        .arg(&wasm)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "componentize-py failed");
    wasm
}

#[test]
fn a_python_grader_built_with_componentize_py_grades() {
    let wasm = python_grader();
    let r = run_in(&root(), &["plugin", "inspect", wasm.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("python-word-limit 0.1.0"), "{}", r.stdout);

    let project = Project::with_mock("one two three four");
    std::fs::copy(&wasm, project.path().join("max_words.wasm")).unwrap();
    let sha = digest(&wasm);
    let suite = |assertion: &str| {
        format!(
            "plugins:\n  max-words: {{path: max_words.wasm, sha256: {sha}}}\ntests:\n  - id: t\n    input: q\n    assertions:\n      - {assertion}\n"
        )
    };
    project.write(
        "EVAL.yaml",
        &suite("{name: short, type: max-words, max: 5}"),
    );
    let r = project.run(&["--sandbox", "strict"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = &project.row("t")["scores"][0];
    assert_eq!(s["score"], 1.0);
    assert_eq!(s["assertions"][0]["text"], "Output has 4 words (max 5)");
    assert_eq!(s["details"]["words"], 4);

    project.write(
        "EVAL.yaml",
        &suite("{name: terse, type: max-words, max: 3}"),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(project.row("t")["scores"][0]["score"], 0.0);

    // Its config is checked at load time, like a built-in's: by its own
    // check-config, then by its config schema (here `additionalProperties:
    // false`, which its check-config does not look at).
    project.write("EVAL.yaml", &suite("{type: max-words, max: three}"));
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("EVAL.yaml:7"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("`max` must be a positive integer, got 'three'"),
        "{}",
        r.stderr
    );
    project.write("EVAL.yaml", &suite("{type: max-words, max: 3, maxx: 4}"));
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("config does not match the type's schema") && r.stderr.contains("maxx"),
        "{}",
        r.stderr
    );
}

/// The WIT stability policy, held to: a plugin built against the first
/// published `evalhost:grader` (0.2.0, the SDK's first publishable version)
/// and committed as built (`tests/data/plugins/wit-0.2.0/`, its source
/// beside it) keeps loading, grading and being pinned by its sha256 in
/// every later evalhost of the 0.2 line. If this test fails, the change
/// breaks published plugins: bump the WIT's minor version instead (docs/
/// plugins.md, "Versions").
#[test]
fn a_plugin_built_against_the_first_published_wit_keeps_loading() {
    let wasm = root().join("tests/data/plugins/wit-0.2.0/frozen_grader.wasm");
    let sha = "249b7da2bdfbde1a4740cc43b097d10263c5cff6b1f21a1ee344ab42317ee010";
    assert_eq!(digest(&wasm), sha, "the committed component changed");
    let r = run_in(&root(), &["plugin", "inspect", wasm.to_str().unwrap()]);
    assert!(
        r.stdout.contains("evalhost:grader/types@0.2.0"),
        "{}",
        r.stdout
    );
    let project = Project::with_mock("Hello, World");
    let plugin = project.path().join("frozen_grader.wasm");
    std::fs::copy(&wasm, &plugin).unwrap();
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins:\n  - {{path: frozen_grader.wasm, sha256: {sha}}}\ntests:\n  - id: hit\n    input: hi\n    assertions: [{{type: frozen-grader, value: world}}]\n  - id: miss\n    input: hi\n    assertions: [{{type: frozen-grader, value: moon}}]\n  - id: bad-config\n    input: hi\n    assertions: [{{type: frozen-grader}}]\n"
        ),
    );
    let r = project.run(&[]);
    // The missing `value` is refused at load, by the plugin's check.
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("value"), "{}", r.stderr);
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins:\n  - {{path: frozen_grader.wasm, sha256: {sha}}}\ntests:\n  - id: hit\n    input: hi\n    assertions: [{{type: frozen-grader, value: world}}]\n  - id: miss\n    input: hi\n    assertions: [{{type: frozen-grader, value: moon}}]\n"
        ),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("hit")["score"], 1.0);
    assert_eq!(project.row("miss")["score"], 0.0);
}

/// `npm`, when it is here; required when `EVALHOST_REQUIRE_NODE` is set
/// (`.ci/run` sets it where node is installed).
fn npm() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("npm"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("EVALHOST_REQUIRE_NODE").is_none(),
            "EVALHOST_REQUIRE_NODE is set but npm is not on PATH"
        );
        eprintln!("plugins: no npm on PATH; the TypeScript scaffold is not built");
    }
    found
}

fn npm_run(npm: &Path, dir: &Path, args: &[&str]) {
    let out = Command::new(npm)
        .current_dir(dir)
        .args(args)
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_update_notifier", "false")
        .output()
        .expect("npm runs");
    assert!(
        out.status.success(),
        "npm {args:?} failed in {}: {}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One behaviour, three languages: the grader `plugin new` writes in Rust,
/// Python and TypeScript (the same rule: the output mentions `value`,
/// ignoring case), each scaffolded, tested natively and built as its README
/// says, grade the same cases with identical scores and checks — in one
/// run, side by side, under `--sandbox strict`. (TypeScript where npm is.)
#[test]
fn the_rust_python_and_typescript_scaffolds_grade_identically() {
    let dir = tempfile::tempdir().unwrap();
    // Each as a new user makes it: no flag, the SDK the binary carries.
    for (name, lang) in [("mentions-rs", "rust"), ("mentions-py", "python")] {
        let r = run_in(dir.path(), &["plugin", "new", name, "--lang", lang]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    // Rust: its tests, then its build.
    let rs = dir.path().join("mentions-rs");
    cargo(&rs, &["test", "--quiet"]);
    cargo(&rs, &["build", "--target", "wasm32-wasip2", "--release"]);
    let rs_wasm = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("test-plugins/wasm32-wasip2/release/mentions_rs.wasm");
    // Python: the README's commands, in order, in one shell (a virtual
    // environment, the SDK from vendor/ with componentize-py from PyPI).
    let py = dir.path().join("mentions-py");
    let readme = std::fs::read_to_string(py.join("README.md")).unwrap();
    let script: String = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("evalhost "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        script.contains("pip install ./vendor/evalhost-plugin"),
        "{script}"
    );
    let out = Command::new("sh")
        .current_dir(&py)
        .args(["-ec", &script])
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let py_wasm = py.join("mentions_py.wasm");
    assert!(
        out.status.success() && py_wasm.is_file(),
        "the Python scaffold's README failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let r = run_in(&root(), &["plugin", "inspect", py_wasm.to_str().unwrap()]);
    assert!(
        r.stdout.contains("mentions-py 0.1.0") && r.stdout.contains("stateless: true"),
        "{}",
        r.stdout
    );

    // TypeScript: the scaffold's `npm install` (the SDK from vendor/,
    // esbuild and componentize-js from npm), `npm test`, `npm run build`.
    let ts_wasm = npm().map(|npm| {
        let r = run_in(
            dir.path(),
            &["plugin", "new", "mentions-ts", "--lang", "ts"],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let ts = dir.path().join("mentions-ts");
        npm_run(&npm, &ts, &["install"]);
        // Installed again, as people do: the tree npm settles on the
        // second time must still build (componentize-js 0.23 imports
        // preview2-shim without depending on it; the SDK depends on it).
        npm_run(&npm, &ts, &["install"]);
        npm_run(&npm, &ts, &["test"]);
        npm_run(&npm, &ts, &["run", "build"]);
        let wasm = ts.join("mentions_ts.wasm");
        // Built with every WASI feature off: no clock, random, stdio,
        // filesystem or HTTP import at all — only the grader's world.
        let r = run_in(
            &root(),
            &["plugin", "inspect", "--json", wasm.to_str().unwrap()],
        );
        let doc: Value = serde_json::from_str(&r.stdout).unwrap();
        let imports: Vec<&str> = doc["imports"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            imports.iter().all(|i| i.starts_with("evalhost:grader/")),
            "{imports:?}"
        );
        wasm
    });

    let project = Project::with_mock("Hello, World! The answer is 42.");
    let mut wasms = vec![rs_wasm.clone(), py_wasm.clone()];
    wasms.extend(ts_wasm.clone());
    for w in &wasms {
        std::fs::copy(w, project.path().join(w.file_name().unwrap())).unwrap();
    }
    let cases = [
        ("world", 1.0),
        ("WORLD", 1.0),
        ("answer is 42", 1.0),
        ("moon", 0.0),
        ("43", 0.0),
    ];
    let langs: Vec<&str> = if ts_wasm.is_some() {
        vec!["rs", "py", "ts"]
    } else {
        vec!["rs", "py"]
    };
    let mut suite = String::from("plugins:\n");
    for (lang, w) in langs.iter().zip(&wasms) {
        suite.push_str(&format!(
            "  - {{path: mentions_{lang}.wasm, sha256: {}}}\n",
            digest(w)
        ));
    }
    suite.push_str("tests:\n");
    for (i, (value, _)) in cases.iter().enumerate() {
        suite.push_str(&format!("  - id: c{i}\n    input: q\n    assertions:\n"));
        for lang in &langs {
            suite.push_str(&format!(
                "      - {{type: mentions-{lang}, value: '{value}'}}\n"
            ));
        }
    }
    project.write("EVAL.yaml", &suite);
    let r = project.run(&["--sandbox", "strict"]);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    for (i, (value, expected)) in cases.iter().enumerate() {
        let row = project.row(&format!("c{i}"));
        let rs = crate::support::score(&row, "mentions-rs");
        let py = crate::support::score(&row, "mentions-py");
        assert_eq!(rs["score"], *expected, "{value}: {row}");
        assert_eq!(py["score"], rs["score"], "{value}: {row}");
        assert_eq!(
            py["assertions"], rs["assertions"],
            "{value}: the checks differ"
        );
    }
    // A config error is refused at load by both, with the same message.
    project.write(
        "EVAL.yaml",
        &suite.replace("value: 'world'}", "valu: 'world'}"),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("`value` is required"), "{}", r.stderr);
}

/// The Python SDK builds against the same WIT world as the Rust SDK.
#[test]
fn the_python_sdk_carries_the_rust_sdks_wit() {
    let rust = std::fs::read_to_string(root().join("plugin-sdk/wit/grader.wit")).unwrap();
    let python =
        std::fs::read_to_string(root().join("plugin-sdk/python/evalhost_plugin/wit/grader.wit"))
            .unwrap();
    assert_eq!(
        python, rust,
        "copy plugin-sdk/wit/grader.wit into plugin-sdk/python/evalhost_plugin/wit/"
    );
    let pyproject =
        std::fs::read_to_string(root().join("plugin-sdk/python/pyproject.toml")).unwrap();
    let api = rust
        .lines()
        .find_map(|l| l.strip_prefix("package evalhost:grader@"))
        .unwrap()
        .trim_end_matches(';');
    assert!(
        pyproject.contains(&format!("version = \"{api}\"")),
        "the package version is the WIT version"
    );
}
