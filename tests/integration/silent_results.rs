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

/// A project with a git root and two tests on the mock target.
fn history_project() -> Project {
    let project = Project::with_mock("x");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: a\n    input: q\n    assertions: [{type: contains, value: x}]\n  - id: b\n    input: q\n    assertions: [{type: contains, value: x}]\n",
    );
    project
}

/// Item 3 (B5): a fully passing `--repeat 3` run is 100 %, and `runs list`
/// counts tests, not rows.
#[test]
fn pass_rates_count_tests_not_rows() {
    let project = history_project();
    let r = run_in(project.path(), &["run", "EVAL.yaml", "--repeat", "3"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let list = run_in(project.path(), &["runs", "list", "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    let run = &runs.as_array().unwrap()[0];
    assert_eq!(run["pass_rate"], 1.0, "{run}");
    assert_eq!(run["tests"], 2, "{run}");
    assert_eq!(run["total"], 6, "{run}");
    let list = run_in(project.path(), &["runs", "list"]);
    assert!(
        list.stdout.contains("tests") && list.stdout.contains("100%"),
        "{}",
        list.stdout
    );
}

/// Item 11 (B7): another process holding the index's lock makes a run
/// say so and leave the index alone (it was moved aside and its WAL
/// deleted); a newer evalhost's index is left as it is, not emptied.
#[test]
fn a_busy_or_newer_index_is_left_alone() {
    let project = history_project();
    let r = run_in(project.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let db = project.path().join(".evalhost/results.db");
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE; INSERT INTO runs (id, dir, info, suite, targets, started_at, status, tags, indexed_at) VALUES ('held', '', '{}', '', '[]', '', '', '[]', '');").unwrap();
    let r = run_in(project.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("is busy"), "{}", r.stderr);
    assert!(r.stderr.contains("runs reindex"), "{}", r.stderr);
    let aside: Vec<_> = std::fs::read_dir(project.path().join(".evalhost"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("damaged"))
        .collect();
    assert!(aside.is_empty(), "the busy index was moved aside");
    // The other writer's transaction still commits into the same file.
    holder.execute_batch("COMMIT;").unwrap();
    drop(holder);
    let r = run_in(project.path(), &["runs", "reindex"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let list = run_in(project.path(), &["runs", "list", "--json"]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&list.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2,
        "{}",
        list.stdout
    );

    let newer = rusqlite::Connection::open(&db).unwrap();
    newer.pragma_update(None, "user_version", 99).unwrap();
    drop(newer);
    let r = run_in(project.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("newer evalhost"), "{}", r.stderr);
    let check = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = check
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let runs: i64 = check
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!((version, runs), (99, 2));
}

/// Item 14: `runs list` where there is no project creates no `.evalhost/`.
#[test]
fn reading_the_history_creates_no_state() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_in(dir.path(), &["runs", "list"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!dir.path().join(".evalhost").exists());
    let r = run_in(dir.path(), &["trend"]);
    assert!(r.stderr.contains("no runs"), "{}{}", r.stdout, r.stderr);
    assert!(!dir.path().join(".evalhost").exists());
}

/// Item 4: `compare` of the old model's run with the new model's matches
/// tests by id (each run has one target) and says so; runs with nothing
/// in common are an error, never a pass of `--fail-on-regression`; a run of
/// part of the suite is marked partial in `trend` and `runs list --json`.
#[test]
fn compare_across_targets_matches_by_test_id_and_nothing_matched_is_an_error() {
    let project = history_project();
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - {name: old, provider: mock, response: x}\n  - {name: new, provider: mock, response: y}\n",
    );
    let r = run_in(project.path(), &["run", "EVAL.yaml", "--target", "old"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run_in(project.path(), &["run", "EVAL.yaml", "--target", "new"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let c = run_in(
        project.path(),
        &["compare", "--last", "--fail-on-regression", "--json"],
    );
    let json: serde_json::Value = serde_json::from_str(&c.stdout).unwrap_or_default();
    assert_eq!(
        json["tests"].as_array().map(Vec::len),
        Some(2),
        "{}{}",
        c.stdout,
        c.stderr
    );
    assert!(
        json["matched_by"].as_str().unwrap().contains("old → new"),
        "{json}"
    );
    assert_eq!(json["summary"]["mean_delta"], -1.0, "{json}");
    let c = run_in(
        project.path(),
        &["compare", "--last", "--fail-on-regression"],
    );
    assert!(c.stdout.contains("matched by test id"), "{}", c.stdout);

    // A run of another suite shares no test: an error, exit 2.
    project.write(
        "OTHER.yaml",
        "tests:\n  - id: z\n    input: q\n    assertions: [{type: contains, value: x}]\n",
    );
    let r = run_in(
        project.path(),
        &[
            "run",
            "OTHER.yaml",
            "--target",
            "old",
            "-o",
            ".evalhost/runs/other",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let list = run_in(project.path(), &["runs", "list", "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    let ids: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let c = run_in(
        project.path(),
        &["compare", ids[1], ids[0], "--fail-on-regression"],
    );
    assert_eq!(c.code, 2, "{}{}", c.stdout, c.stderr);
    assert!(c.stderr.contains("nothing to compare"), "{}", c.stderr);

    // A run of part of the suite is marked as such.
    let r = run_in(
        project.path(),
        &["run", "EVAL.yaml", "--target", "old", "--test-id", "a"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let t = run_in(project.path(), &["trend", "EVAL"]);
    assert!(
        t.stdout.contains("partial (--test-id a)"),
        "{}{}",
        t.stdout,
        t.stderr
    );
}

/// Item 5: a promptfoo CSV with a ragged row (a stray unquoted comma, a
/// row of one field) is refused with its line, as promptfoo refuses it —
/// its columns were shifted without a word — and a CSV test's source
/// points into the CSV. (The bare `__expected` types are in the `csv-types`
/// conformance config, recorded from promptfoo 0.121.20.)
#[test]
fn a_ragged_promptfoo_csv_is_refused_with_its_line() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['{{text}}']\nproviders: [echo]\ntests: file://tests.csv\n",
    );
    project.write(
        "tests.csv",
        "text,__expected,__description\nhello,contains:hello,fine\nhello world,contains-any:foo,world,two\nbye\n",
    );
    let r = run_in(project.path(), &["validate", "promptfooconfig.yaml"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(
        said.contains("tests.csv: line 3: 4 fields where the header has 3"),
        "{said}"
    );

    project.write(
        "tests.csv",
        "text,__expected,__description\nhello,contains:hello,first\n\"multi\nline\",contains:line,second\n",
    );
    let r = run_config(&project, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let second = project.row("second");
    assert!(
        second["source"]["file"]
            .as_str()
            .unwrap()
            .ends_with("tests.csv"),
        "{second}"
    );
    assert_eq!(second["source"]["line"], 3, "{second}");
}

/// Item 6: `{{ env.X }}` in a promptfoo provider's config is rendered as
/// promptfoo renders it when the provider loads (it was sent as the
/// template text); an unset variable leaves the template as promptfoo
/// leaves it, warned; `outputPath`
/// writes promptfoo's JSON there, and a format evalhost does not write is
/// refused.
#[test]
fn promptfoo_provider_config_env_templates_and_output_path() {
    let project = Project::with_mock("x");
    let server = crate::support::FakeServer::start(vec![crate::support::Reply::chat("hello")]);
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['say hello']\nproviders:\n  - id: openai:chat:m\n    config:\n      apiBaseUrl: '{{ env.SUPPORT_BASE_URL }}/v1'\n      apiKey: '{{ env.MY_TEAM_KEY }}'\noutputPath: out.json\ntests:\n  - assert: [{type: contains, value: hello}]\n",
    );
    let run = |env: &[(&str, &str)]| -> crate::support::Run {
        let mut cmd = crate::support::evalhost();
        cmd.current_dir(project.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(["run", "promptfooconfig.yaml", "-o", "out"])
            .output()
            .unwrap()
            .into()
    };
    let r = run(&[
        ("SUPPORT_BASE_URL", &server.url),
        ("MY_TEAM_KEY", "sk-team"),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("authorization") && v == "Bearer sk-team"),
        "{:?}",
        requests[0].headers
    );
    assert!(
        !r.stderr.contains("keep keys in the environment"),
        "{}",
        r.stderr
    );
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(project.path().join("out.json")).unwrap())
            .unwrap();
    assert_eq!(
        exported["results"]["results"].as_array().map(Vec::len),
        Some(1),
        "{exported}"
    );

    // Unset, the template stays as written and is sent so, as promptfoo's
    // `renderEnvOnlyInObject` leaves it and its provider sends it: warned
    // at its key (it was refused, and the config did not run at all).
    let r = run(&[("SUPPORT_BASE_URL", &server.url)]);
    assert!(
        r.stderr.contains("warning")
            && r.stderr
                .contains("`MY_TEAM_KEY` is not set; promptfoo sends the template text as written"),
        "{}",
        r.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}{}", r.stdout, r.stderr);
    assert!(
        requests[1]
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("authorization")
                && v == "Bearer {{ env.MY_TEAM_KEY }}"),
        "{:?}",
        requests[1].headers
    );

    project.write(
        "promptfooconfig.yaml",
        "prompts: ['hi']\nproviders: [echo]\noutputPath: results.csv\ntests:\n  - assert: [{type: contains, value: hi}]\n",
    );
    // Another format is an output file evalhost does not write: said
    // loudly, and the run (whose grades it does not touch) goes on.
    let r = run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("warning")
            && r.stderr
                .contains("`outputPath: results.csv` is not written"),
        "{}",
        r.stderr
    );
    assert!(!project.path().join("results.csv").exists());
}

/// Item 7: an Anthropic target whose server answers the streamed request
/// with one plain JSON reply is read in that shape (its output was `""`,
/// graded as the model's failure); a body that is neither is a target
/// error naming what came back, never an empty output.
#[test]
fn an_unreadable_model_answer_is_never_an_empty_output() {
    let reply = serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "hi there"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 3}});
    let server = crate::support::FakeServer::start(vec![crate::support::Reply::json(200, reply)]);
    let project = Project::with_mock("x");
    let targets = |url: &str| {
        format!(
            "targets:\n  - {{name: default, provider: anthropic, base_url: '{url}', model: claude-sonnet-4-5, api_key: '${{{{ EVALHOST_TEST_KEY }}}}', max_retries: 0}}\n"
        )
    };
    project.write(".evalhost/targets.yaml", &targets(&server.url));
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t\n    input: Say hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let run = || -> crate::support::Run {
        crate::support::evalhost()
            .current_dir(project.path())
            .env("EVALHOST_TEST_KEY", "sk-loopback")
            .args(["run", "EVAL.yaml", "-o", "out"])
            .output()
            .unwrap()
            .into()
    };
    let r = run();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row = project.row("t");
    assert_eq!(row["output"], "hi there", "{row}");
    assert_eq!(row["token_usage"]["output"], 3, "{row}");

    let mut html = crate::support::Reply::json(200, serde_json::json!(null));
    html.headers
        .push(("Content-Type".into(), "text/html".into()));
    html.body = "<html>gateway says hello</html>".into();
    let server = crate::support::FakeServer::start(vec![html]);
    project.write(".evalhost/targets.yaml", &targets(&server.url));
    let r = run();
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let row = project.row("t");
    assert_eq!(row["failure_class"], "target", "{row}");
    assert!(
        row["error"]
            .as_str()
            .unwrap()
            .contains("gateway says hello"),
        "{row}"
    );
}

/// Item 8: the judge cache never stores a reply the grader could not use
/// (the next run asks again instead of replaying it forever);
/// `--no-judge-cache` asks the judge and stores the fresh answer, so the
/// next run does not return to a stale verdict; a replayed verdict says so.
#[test]
fn the_judge_cache_keeps_only_usable_answers_and_refreshes() {
    use std::sync::{Arc, Mutex};
    let answer = Arc::new(Mutex::new(crate::support::Reply::chat(
        "I think it is pretty good!",
    )));
    let served = answer.clone();
    let server = crate::support::FakeServer::start_fn(move |_| served.lock().unwrap().clone());
    let checklist = |ok: bool| {
        crate::support::Reply::chat(
            &serde_json::json!({"checks": [{"id": "names-paris", "satisfied": ok, "reasoning": "looked"}], "overall_reasoning": "done"})
                .to_string(),
        )
    };
    let project = Project::with_mock("unused");
    project.write(
        ".evalhost/targets.yaml",
        &format!(
            "targets:\n  - {{name: default, provider: mock, response: Paris., grader_target: judge}}\n  - {{name: judge, provider: openai, base_url: '{}/v1', model: judge-model, api_key: '${{{{ EVALHOST_JUDGE_KEY }}}}', retry_initial_delay_ms: 10}}\n",
            server.url
        ),
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: capital\n    input: What is the capital of France?\n    assertions:\n      - type: rubrics\n        criteria:\n          - {id: names-paris, outcome: Names Paris}\n",
    );
    let cache = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| -> crate::support::Run {
        let mut args = vec!["run", "EVAL.yaml", "-o", "out"];
        args.extend_from_slice(extra);
        crate::support::evalhost()
            .current_dir(project.path())
            .env("EVALHOST_CACHE_DIR", cache.path())
            .env(
                "EVALHOST_COMPILE_CACHE_DIR",
                crate::support::shared_compile_cache(),
            )
            .env("EVALHOST_JUDGE_KEY", "sk-judge")
            .args(&args)
            .output()
            .unwrap()
            .into()
    };
    let r = run(&[]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let asked = server.requests().len();
    // The judge is fixed: the next run asks it again.
    *answer.lock().unwrap() = checklist(true);
    let r = run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        server.requests().len() > asked,
        "the unusable replies were cached"
    );
    let asked = server.requests().len();
    // The judge changes its mind: a cached run keeps the old verdict (and
    // says where it came from), --no-judge-cache asks and stores the new one,
    // and the next plain run gives the new verdict.
    *answer.lock().unwrap() = checklist(false);
    let r = run(&[]);
    assert_eq!(
        (r.code, server.requests().len()),
        (0, asked),
        "{}",
        r.stdout
    );
    let r = run(&["--no-judge-cache"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(server.requests().len(), asked + 1);
    let r = run(&[]);
    assert_eq!(
        r.code, 1,
        "the fresh answer replaced the stale one: {}",
        r.stdout
    );
    assert_eq!(server.requests().len(), asked + 1);
    assert!(
        r.stdout.contains("(judge answers from the cache)"),
        "{}",
        r.stdout
    );
}

/// Item 10: a promptfoo `javascript` assertion reading `process.env` is
/// warned about at load, once per config, naming the variables (in the
/// sandbox it reads `undefined` and can flip promptfoo's verdict).
#[test]
fn javascript_reading_process_env_is_warned_once_at_load() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts: ['Our competitor Globex is great']\nproviders: [echo]\ntests:\n  - assert:\n      - {type: javascript, value: '!output.includes(process.env.FORBIDDEN_WORD)'}\n  - assert:\n      - {type: javascript, value: 'output.length > Number(process.env[\"MIN_LEN\"] || 0)'}\n",
    );
    let r = run_in(project.path(), &["validate", "promptfooconfig.yaml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert_eq!(said.matches("read `process.env`").count(), 1, "{said}");
    assert!(said.contains("FORBIDDEN_WORD, MIN_LEN"), "{said}");
    assert!(said.contains("context.vars"), "{said}");
}

/// Item 12 (B1): `regrade` of a run whose target failed every test is a
/// usage error naming why — it panicked (index out of bounds).
#[test]
fn regrade_of_a_run_without_outputs_is_a_usage_error() {
    let project = Project::with_mock("x");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - {name: default, provider: cli, command: 'exit 1', max_retries: 0}\n",
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t\n    input: q\n    assertions: [{type: contains, value: x}]\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let r = run_in(project.path(), &["regrade", "out", "-o", "again"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("no output to grade again"),
        "{}",
        r.stderr
    );
}

/// Item 12 (B4): `--rerun-failed` of a matrix run re-runs a test that
/// failed on the second target on that target (it ran on the first only,
/// and an aliased matrix entry was a usage error).
#[test]
fn rerun_failed_of_a_matrix_run_reruns_on_the_target_that_failed() {
    let project = Project::with_mock("x");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - {name: good, provider: mock, response: x}\n  - {name: bad, provider: mock, response: y}\n",
    );
    project.write(
        "EVAL.yaml",
        "execution:\n  targets:\n    - {name: a, use_target: good}\n    - {name: b, use_target: bad}\ntests:\n  - id: t\n    input: q\n    assertions: [{type: contains, value: x}]\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let r = run_in(
        project.path(),
        &["run", "EVAL.yaml", "--rerun-failed", "out", "-o", "again"],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(project.path().join("again/results.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert!(
        rows.iter()
            .any(|r| r["target"] == "b" && r["output"] == "y"),
        "{rows:?}"
    );
}

/// Item 12 (B6): a second Ctrl-C kills the commands still running (each
/// in its own process group, out of the terminal's reach) before evalhost
/// exits; they were left running.
#[test]
fn a_second_interrupt_leaves_no_command_running() {
    let project = Project::with_mock("x");
    let marker = format!("sleep 600.{}", std::process::id());
    project.write(
        ".evalhost/targets.yaml",
        &format!("targets:\n  - {{name: default, provider: cli, command: '{marker}; echo x > {{OUTPUT_FILE}}', max_retries: 0}}\n"),
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t\n    input: q\n    assertions: [{type: contains, value: x}]\n",
    );
    let mut child = crate::support::evalhost()
        .current_dir(project.path())
        .args(["run", "EVAL.yaml", "-o", "out"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The processes whose command line holds the marker (read from /proc:
    // no procps needed).
    let matching = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|c| {
                        String::from_utf8_lossy(&c)
                            .replace('\0', " ")
                            .contains(&marker)
                    })
                    .unwrap_or(false)
            })
            .collect()
    };
    let running = || !matching().is_empty();
    let started = std::time::Instant::now();
    while !running() && started.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(running(), "the command started");
    for _ in 0..2 {
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = running();
    if left {
        for pid in matching() {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    }
    assert!(!left, "the command outlived evalhost");
}

/// Item 12 (B10): a conversation whose target never answers is the
/// target's failure (an execution error, class `target`), not the agent's
/// quality; its turns still score 0, as AgentV scores them.
#[test]
fn a_conversation_the_target_never_answers_is_a_target_error() {
    let project = Project::with_mock("x");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - {name: default, provider: cli, command: 'exit 1', max_retries: 0}\n",
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: talk\n    mode: conversation\n    input: [{role: system, content: Be brief.}]\n    turns:\n      - {input: first, assertions: [{type: contains, value: x}]}\n      - {input: second, assertions: [{type: contains, value: x}]}\n",
    );
    let r = project.run(&[]);
    let row = project.row("talk");
    assert_eq!(
        row["execution_status"], "execution_error",
        "{row}\n{}",
        r.stderr
    );
    assert_eq!(row["failure_class"], "target", "{row}");
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
}

/// Item 12 (B11): a FIFO given as the eval file is refused at once — the
/// dialect sniffer read it uncapped and hung.
#[test]
fn a_fifo_as_the_eval_file_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["EVAL.yaml", "promptfooconfig.yaml"] {
        let fifo = dir.path().join(name);
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let mut child = crate::support::evalhost()
            .current_dir(dir.path())
            .args(["validate", name])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if started.elapsed() > std::time::Duration::from_secs(20) {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(2),
            "{name}: validate hung or passed"
        );
    }
}

/// Item 13: a prompt's own `config` (which promptfoo merges into each
/// provider's request) is never dropped without a word (the requests went
/// out without its `response_format`): it reaches the request (the
/// `test-options` conformance config checks the bodies against
/// promptfoo's), and a provider that takes no settings is said.
/// `providers[].prompts` is honoured: the `provider-prompts` conformance
/// config.
#[test]
fn a_prompts_own_config_is_sent_or_said_never_dropped() {
    let project = Project::with_mock("x");
    project.write(
        "promptfooconfig.yaml",
        "prompts:\n  - {raw: 'Say {{q}}', label: json, config: {response_format: {type: json_object}}}\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n",
    );
    let r = run_in(project.path(), &["validate", "promptfooconfig.yaml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(
        said.contains("`response_format` goes into each provider's config")
            && said.contains("provider `echo` (echo) takes no such settings"),
        "{said}"
    );
}

/// Item 13: AgentV 4.42.4's `workspace.repos[].base_commit` and
/// `ancestor` are honoured (they were ignored with a warning, and the agent
/// worked on the default branch's tip): `base_commit` is checked out, and
/// `ancestor: N` goes N commits back from it; `commit` and `base_commit`
/// that disagree are an error.
#[test]
fn agentv_repo_base_commit_and_ancestor_are_checked_out() {
    let project = Project::with_mock("x");
    let origin = project.path().join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    let sh = |cmd: &str| -> String {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(&origin)
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    sh(
        "git init -q -b main && git config user.email t@t && git config user.name t && echo v1 > VERSION && git add -A && git commit -qm one && echo v2 > VERSION && git commit -qam two && echo v3 > VERSION && git commit -qam three && echo v4 > VERSION && git commit -qam four",
    );
    let third = sh("git rev-parse HEAD~1");
    project.write(
        ".evalhost/targets.yaml",
        "targets:\n  - {name: default, provider: cli, command: \"cat repo/VERSION > {OUTPUT_FILE}\"}\n",
    );
    project.write(
        "EVAL.yaml",
        &format!("workspace:\n  repos:\n    - {{path: ./repo, repo: ./origin, base_commit: {third}, ancestor: 1}}\ntests:\n  - {{id: pinned, input: q, assertions: [{{type: equals, value: v2}}]}}\n"),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("base_commit"), "{}", r.stderr);
    assert_eq!(project.row("pinned")["output"], "v2\n");

    project.write(
        "EVAL.yaml",
        &format!("workspace:\n  repos:\n    - {{path: ./repo, repo: ./origin, base_commit: {third}, commit: main}}\ntests:\n  - {{id: pinned, input: q, assertions: [{{type: equals, value: v2}}]}}\n"),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("must be the same commit"), "{}", r.stderr);
}

/// Item 14: piping to a reader that stops early (`| head -1`) prints no
/// "Broken pipe" error and fails nothing: the run still records every row.
#[test]
fn a_closed_pipe_is_no_error_and_the_run_finishes() {
    use std::io::Read as _;
    let project = history_project();
    let mut child = crate::support::evalhost()
        .current_dir(project.path())
        .args(["run", "EVAL.yaml", "-o", "out", "--repeat", "50"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read one byte, then close the pipe, as `head -c1` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    stdout.read_exact(&mut one).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(project.rows().len(), 100);
}
