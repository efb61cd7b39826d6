//! No silent wrong result, round two (issue 32): each number evalhost
//! prints is the number the user's own tool would print, or a loud
//! refusal. One test per finding of `../shared/reference/trial-3.md` and
//! `code-review-3.md` (B1–B16); each failed on the code they were made
//! against.

use crate::support::{Project, run_in};

fn run_config(project: &Project, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["run", "promptfooconfig.yaml", "-o", "out"];
    args.extend_from_slice(extra);
    run_in(project.path(), &args)
}

/// Item 1 (B2): under `--repeat`, a promptfoo test passes only when every
/// trial passes by promptfoo's rule — never by AgentV's mean ≥ 0.8 — and a
/// test whose every trial passes below 0.8 is not failed.
#[test]
fn promptfoo_trials_keep_promptfoos_pass_rule() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['a b c d']\nproviders: [echo]\ntests:\n  - description: four of five\n    assert:\n      - {type: contains, value: a}\n      - {type: contains, value: b}\n      - {type: contains, value: c}\n      - {type: contains, value: d}\n      - {type: contains, value: zzz}\n  - description: rouge below 0.8\n    assert:\n      - {type: rouge-n, value: a b c d e f g h, threshold: 0.5}\n",
    );
    let r = run_config(&project, &["--repeat", "2"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["passed"], 1, "{summary}");
    assert_eq!(summary["failed"], 1, "{summary}");
    let rows = project.rows();
    for row in rows.iter().filter(|r| r["test_id"] == "four of five") {
        assert_eq!(row["status"], "failed", "{row}");
        assert_eq!(row["strategy"], "all_pass", "{row}");
    }
    assert!(r.stdout.contains("RESULT: FAIL"), "{}", r.stdout);

    // `evaluateOptions.repeat` is promptfoo's own way to ask for trials.
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['a b c d']\nproviders: [echo]\nevaluateOptions: {repeat: 3}\ntests:\n  - description: four of five\n    assert:\n      - {type: contains, value: a}\n      - {type: contains, value: zzz}\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(project.rows().len(), 3, "three trials");
}

/// Item 9: a promptfoo row records no threshold it did not use (the viewer
/// showed "0.80 / 0.80 failed"), and `--threshold` is refused for a
/// promptfoo config rather than silently ignored.
#[test]
fn promptfoo_rows_hold_no_unused_threshold_and_threshold_is_refused() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['a b c d']\nproviders: [echo]\ntests:\n  - description: all must pass\n    assert:\n      - {type: contains, value: a}\n      - {type: contains, value: zzz}\n  - description: own threshold\n    threshold: 0.5\n    assert:\n      - {type: contains, value: a}\n      - {type: contains, value: zzz}\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let row = project.row("all must pass");
    assert!(row.get("threshold").is_none(), "{row}");
    assert_eq!(row["pass_rule"], "all-pass", "{row}");
    assert_eq!(row["status"], "failed", "{row}");
    let own = project.row("own threshold");
    assert_eq!(own["threshold"], 0.5, "{own}");
    assert_eq!(own["status"], "passed", "{own}");

    let r = run_config(&project, &["--threshold", "0.4"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("--threshold does not apply to a promptfoo config"),
        "{}",
        r.stderr
    );
}

fn copy_conformance(name: &str, to: &std::path::Path) {
    let from = crate::support::root()
        .join("tests/data/promptfoo-conformance")
        .join(name);
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn statuses(dir: &std::path::Path) -> Vec<(String, String, Option<u64>, String)> {
    let mut rows: Vec<_> = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| {
            (
                r["test_id"].as_str().unwrap().to_owned(),
                r["target"].as_str().unwrap().to_owned(),
                r["trial"].as_u64(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// Item 2 (B3): `select-best` under `--shard` compares all of a test's
/// outputs (its rows share a shard), and `merge` keeps the named metrics
/// and hooks a single run would have.
#[test]
fn select_best_and_named_metrics_survive_shards_and_merge() {
    let project = Project::with_mock("x");
    copy_conformance("select-best", project.path());
    let server = crate::support::FakeServer::start(vec![crate::support::Reply::chat("1")]);
    let run = |args: &[&str]| -> crate::support::Run {
        crate::support::evalhost()
            .current_dir(project.path())
            .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
            .env("OPENAI_API_KEY", "sk-loopback")
            .args(args)
            .output()
            .unwrap()
            .into()
    };
    let whole = run(&["run", "promptfooconfig.yaml", "-o", "whole"]);
    assert!(whole.code <= 1, "{}{}", whole.stdout, whole.stderr);
    for shard in ["1/2", "2/2"] {
        let out = format!("s{}", &shard[..1]);
        let r = run(&["run", "promptfooconfig.yaml", "-o", &out, "--shard", shard]);
        assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    }
    let r = run(&["merge", "s1", "s2", "-o", "merged"]);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    let merged = statuses(&project.path().join("merged"));
    assert!(merged.iter().all(|r| r.3 != "error"), "{merged:?}");
    assert_eq!(merged, statuses(&project.path().join("whole")));

    let project = Project::with_mock("x");
    copy_conformance("derived-metrics", project.path());
    let whole = run_in(
        project.path(),
        &["run", "promptfooconfig.yaml", "-o", "whole"],
    );
    assert!(whole.code <= 1, "{}{}", whole.stdout, whole.stderr);
    for shard in ["1/2", "2/2"] {
        let out = format!("s{}", &shard[..1]);
        run_in(
            project.path(),
            &["run", "promptfooconfig.yaml", "-o", &out, "--shard", shard],
        );
    }
    let r = run_in(project.path(), &["merge", "s1", "s2", "-o", "merged"]);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    let metrics = |dir: &str| -> serde_json::Value {
        let s: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(project.path().join(dir).join("summary.json")).unwrap(),
        )
        .unwrap();
        let mut m = s["metrics"].as_array().cloned().unwrap_or_default();
        m.sort_by_key(|v| v.to_string());
        serde_json::Value::Array(m)
    };
    assert!(!metrics("whole").as_array().unwrap().is_empty());
    assert_eq!(metrics("merged"), metrics("whole"));
}
