//! AgentV's own example suites in `../shared/corpus/agentv-4.42.4`, run
//! unchanged by evalhost on recorded outputs, scored as AgentV scored them
//! (the corpus carries AgentV's results next to some suites:
//! `*.eval.baseline.jsonl`).

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::run_in;

/// The corpus, beside the repository (`../shared/corpus`). It is not part
/// of the repository: a checkout without it says so and skips these tests;
/// with `EVALHOST_REQUIRE_CORPUS` set its absence is a failure.
fn corpus() -> Option<PathBuf> {
    let dir = crate::support::root().join("../shared/corpus/agentv-4.42.4/features");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("EVALHOST_REQUIRE_CORPUS").is_none(),
        "EVALHOST_REQUIRE_CORPUS is set but {} is missing",
        dir.display()
    );
    eprintln!(
        "conformance: {} is missing (the corpus lives beside the repository); skipped",
        dir.display()
    );
    None
}

/// `tool-trajectory-advanced`: AgentV's static trace, turned into its
/// `cli` output as the example's `cat-trace.ts` does, graded by evalhost;
/// every row scores as in AgentV's baseline (its `input` and `output`
/// expectations included, which evalhost checks where AgentV ignores them).
#[test]
fn tool_trajectory_advanced_scores_as_agentv() {
    let Some(corpus) = corpus() else { return };
    let feature = corpus.join("tool-trajectory-advanced");
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(feature.join("static-trace.json")).unwrap())
            .unwrap();
    let events = trace["trace"].as_array().unwrap();
    let calls: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| {
            let output = events
                .iter()
                .find(|r| r["type"] == "tool_result" && r["id"] == e["id"])
                .map(|r| r["output"].clone());
            let mut call = json!({"tool": e["name"], "input": e["input"], "id": e["id"], "start_time": e["startTime"]});
            if let Some(o) = output {
                call["output"] = o;
            }
            call
        })
        .collect();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out.json");
    std::fs::write(
        &out,
        json!({"text": trace["text"], "output": [{"role": "assistant", "content": trace["text"], "tool_calls": calls}]}).to_string(),
    )
    .unwrap();
    let targets = work.path().join("targets.yaml");
    std::fs::write(
        &targets,
        format!(
            "targets:\n  - name: static_trace\n    provider: cli\n    command: \"cat '{}' > {{OUTPUT_FILE}}\"\n",
            out.display()
        ),
    )
    .unwrap();
    let run_dir = work.path().join("run");
    let r = run_in(
        &feature.join("evals"),
        &[
            "run",
            "trace-file-demo.eval.yaml",
            "--targets",
            targets.to_str().unwrap(),
            "--target",
            "static_trace",
            "-o",
            run_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let ours: Vec<Value> = std::fs::read_to_string(run_dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let theirs: Vec<Value> =
        std::fs::read_to_string(feature.join("evals/trace-file-demo.eval.baseline.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(ours.len(), theirs.len());
    let mut compared = 0;
    for want in &theirs {
        let got = ours
            .iter()
            .find(|r| r["test_id"] == want["test_id"])
            .unwrap_or_else(|| panic!("no row for {}", want["test_id"]));
        assert_eq!(
            got["score"].as_f64(),
            want["score"].as_f64(),
            "{}",
            want["test_id"]
        );
        for ws in want["scores"].as_array().unwrap() {
            let gs = got["scores"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == ws["name"])
                .unwrap_or_else(|| panic!("{}: no score {}", want["test_id"], ws["name"]));
            assert_eq!(
                gs["score"].as_f64(),
                ws["score"].as_f64(),
                "{} {}",
                want["test_id"],
                ws["name"]
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 7);
}
