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

/// Copies `from` to `to`, writable (the corpus is read-only).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest).unwrap();
            let mut perms = std::fs::metadata(&dest).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&dest, perms).unwrap();
        }
    }
}

/// Every suite of the corpus that needs nothing but the answer (and, for
/// its LLM graders, a judge), run unchanged on the answers recorded in
/// `tests/data/agentv-conformance/` (each test's expected output, an answer
/// built to meet its assertions, and for deterministic suites a wrong
/// answer), with a mock judge whose one reply both tools read, scores as
/// AgentV 4.42.4 scored the same answers (`scripts/conformance-agentv.py`
/// ran AgentV and wrote its rows there): every test, every grader.
#[test]
fn corpus_suites_score_as_agentv_on_the_same_answers() {
    let Some(corpus) = corpus() else { return };
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("corpus");
    copy_tree(corpus.parent().unwrap(), &copy);
    // AgentV's repository root: file references search up to it.
    std::fs::create_dir_all(copy.join(".git")).unwrap();
    let targets = work.path().join("replay.yaml");
    // The targets AgentV ran with: the replay, and a mock judge whose one
    // reply (a free-form verdict and a checklist) both tools read.
    std::fs::copy(
        crate::support::root().join("tests/data/agentv-conformance/targets.yaml"),
        &targets,
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let fixtures = crate::support::root().join("tests/data/agentv-conformance");
    let mut runs: Vec<std::path::PathBuf> = walkdir::WalkDir::new(&fixtures)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "agentv.json")
        .map(|e| e.path().parent().unwrap().to_path_buf())
        .collect();
    runs.sort();
    assert!(runs.len() >= 69, "{} recorded runs", runs.len());
    let (mut suites, mut rows, mut scores, mut differ) =
        (std::collections::BTreeSet::new(), 0, 0, Vec::new());
    for run in &runs {
        let recorded: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("agentv.json")).unwrap())
                .unwrap();
        let suite_rel = recorded["suite"].as_str().unwrap();
        suites.insert(suite_rel.to_owned());
        let suite = copy.join(suite_rel.trim_start_matches("agentv-4.42.4/"));
        let out = work
            .path()
            .join("runs")
            .join(run.strip_prefix(&fixtures).unwrap());
        let r: crate::support::Run = crate::support::evalhost()
            .current_dir(suite.parent().unwrap())
            .env("REPLAY_DIR", run.join("answers"))
            .env("EVALHOST_CACHE_DIR", cache.path())
            .env(
                "EVALHOST_COMPILE_CACHE_DIR",
                crate::support::shared_compile_cache(),
            )
            .args(["run", suite.to_str().unwrap(), "--targets"])
            .arg(&targets)
            .args(["--target", "replay", "-o"])
            .arg(&out)
            .output()
            .unwrap()
            .into();
        if !out.join("results.jsonl").is_file() {
            differ.push(format!(
                "{}: no results ({}): {}",
                run.display(),
                r.code,
                r.stderr
            ));
            continue;
        }
        let ours: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let where_ = run.strip_prefix(&fixtures).unwrap().display().to_string();
        for want in recorded["rows"].as_array().unwrap() {
            rows += 1;
            let id = &want["test_id"];
            let Some(got) = ours.iter().find(|r| r["test_id"] == *id) else {
                differ.push(format!("{where_} {id}: no row"));
                continue;
            };
            let same = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-9,
                _ => false,
            };
            if !same(&got["score"], &want["score"]) {
                differ.push(format!(
                    "{where_} {id}: evalhost {} agentv {}",
                    got["score"], want["score"]
                ));
            }
            for (i, ws) in want["scores"].as_array().unwrap().iter().enumerate() {
                scores += 1;
                match got["scores"].get(i) {
                    Some(gs) if gs["name"] == ws["name"] && same(&gs["score"], &ws["score"]) => {}
                    other => differ.push(format!(
                        "{where_} {id} #{i} {}: evalhost {} agentv {}",
                        ws["name"],
                        other.map_or("nothing".to_owned(), |g| format!(
                            "{} {}",
                            g["name"], g["score"]
                        )),
                        ws["score"]
                    )),
                }
            }
        }
    }
    eprintln!(
        "conformance: {} suites, {} runs, {rows} rows, {scores} grader scores compared with AgentV 4.42.4; {} differ",
        suites.len(),
        runs.len(),
        differ.len()
    );
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
