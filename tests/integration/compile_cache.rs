//! Compiled plugins are cached on disk: the second run of a suite loads them
//! instead of compiling them again. Measured through `summary.json`, which
//! records for each plugin whether it came from the cache.

use crate::support::{Project, evalhost};

#[test]
fn second_run_loads_every_plugin_from_the_cache() {
    let project = Project::with_mock("Paris");
    project.write("EVAL.yaml", "tests:\n  - id: a\n    input: q\n    assertions: [{type: contains, value: Paris}, {type: regex, value: P.r}]\n");
    let cache = tempfile::tempdir().unwrap();
    let run = |out: &str| {
        let output = evalhost()
            .current_dir(project.path())
            .env("EVALHOST_CACHE_DIR", cache.path())
            .args(["run", "EVAL.yaml", "-o", out])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(project.path().join(out).join("summary.json")).unwrap(),
        )
        .unwrap();
        let plugins = summary["plugins"].as_array().unwrap().clone();
        assert!(!plugins.is_empty());
        (
            plugins,
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (first, stderr) = run("first");
    assert!(first.iter().all(|p| p["from_cache"] == false), "{first:?}");
    assert!(stderr.contains("compiled in"), "{stderr}");
    let (second, stderr) = run("second");
    assert!(second.iter().all(|p| p["from_cache"] == true), "{second:?}");
    assert!(
        stderr.contains("(cached)") && !stderr.contains("compiled in"),
        "{stderr}"
    );
    // A corrupt cache entry is evicted and recompiled, never trusted.
    for entry in std::fs::read_dir(cache.path().join("components")).unwrap() {
        std::fs::write(entry.unwrap().path(), b"garbage").unwrap();
    }
    let (third, _) = run("third");
    assert!(third.iter().all(|p| p["from_cache"] == false), "{third:?}");
}

/// Once the compile cache knows the built-in plugins' types, a run loads
/// only the plugins its suite uses; a type no built-in has (a typo) loads
/// them all, so the error can name the nearest type; a list of types that
/// fails its check is dropped and every plugin loaded.
#[test]
fn a_run_loads_only_the_built_in_plugins_its_suite_uses() {
    let project = Project::with_mock("Paris");
    project.write("EVAL.yaml", "tests:\n  - id: a\n    input: q\n    assertions: [{type: contains, value: Paris}, {type: regex, value: P.r}]\n");
    project.write(
        "typo.yaml",
        "tests:\n  - id: a\n    input: q\n    assertions: [{type: contians, value: Paris}]\n",
    );
    let cache = tempfile::tempdir().unwrap();
    let run = |eval: &str, out: &str| {
        let output = evalhost()
            .current_dir(project.path())
            .env("EVALHOST_CACHE_DIR", cache.path())
            .args(["run", eval, "-o", out])
            .output()
            .unwrap();
        let summary = std::fs::read_to_string(project.path().join(out).join("summary.json"))
            .ok()
            .map(|s| serde_json::from_str::<serde_json::Value>(&s).unwrap());
        let names: Vec<String> = summary
            .map(|s| {
                s["plugins"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        (
            output.status.code(),
            names,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, first, _) = run("EVAL.yaml", "first");
    assert_eq!(code, Some(0));
    assert!(
        first.len() >= 7,
        "a first run loads every built-in: {first:?}"
    );
    let (code, second, _) = run("EVAL.yaml", "second");
    assert_eq!(code, Some(0));
    let mut second = second;
    second.sort();
    assert_eq!(second, ["evalhost-regex", "evalhost-text"]);
    let (code, _, stderr) = run("typo.yaml", "typo");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("contains"),
        "the hint names the nearest type: {stderr}"
    );
    // A tampered list of types is not believed: every plugin is loaded.
    for entry in std::fs::read_dir(cache.path().join("components")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "types") {
            std::fs::write(&path, b"contains\nregex\nzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz").unwrap();
        }
    }
    let (code, third, _) = run("EVAL.yaml", "third");
    assert_eq!(code, Some(0));
    assert!(third.len() >= 7, "{third:?}");
}
