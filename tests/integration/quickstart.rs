use crate::support::{root, run_in};

#[test]
fn quickstart_runs_end_to_end_and_writes_agentv_style_rows() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().join("run");
    let run = run_in(
        &root(),
        &[
            "run",
            "examples/quickstart/EVAL.yaml",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    assert!(
        run.stdout.contains("RESULT: PASS  3/3 passed"),
        "{}",
        run.stdout
    );

    let text = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    let mut ids: Vec<&str> = rows
        .iter()
        .map(|r| r["test_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        ["names-the-capital", "structured-answer", "tolerant-wording"]
    );
    for row in &rows {
        assert_eq!(row["suite"], "quickstart");
        assert_eq!(row["target"], "default");
        assert_eq!(row["execution_status"], "ok");
        assert_eq!(row["score"], 1.0);
        assert!(row.get("failure_class").is_none());
        for score in row["scores"].as_array().unwrap() {
            for key in [
                "name",
                "type",
                "score",
                "weight",
                "verdict",
                "assertions",
                "plugin",
                "plugin_digest",
            ] {
                assert!(score.get(key).is_some(), "score lacks `{key}`: {score}");
            }
            assert_eq!(score["verdict"], "pass");
            assert_eq!(score["plugin_digest"].as_str().unwrap().len(), 64);
        }
    }
    // Suite-level `is-json` is appended after the test's own assertions.
    let first = rows
        .iter()
        .find(|r| r["test_id"] == "names-the-capital")
        .unwrap();
    let names: Vec<&str> = first["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["contains-Paris", "not-contains-London", "is-json"]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["passed"], 3);
}

#[test]
fn the_promptfoo_example_runs_offline() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().join("run");
    let run = run_in(
        &root(),
        &[
            "run",
            "examples/promptfoo/promptfooconfig.yaml",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("dialect promptfoo 0.121"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("RESULT: PASS  6/6 passed"),
        "{}",
        run.stdout
    );
}
