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
