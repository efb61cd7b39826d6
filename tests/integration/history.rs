//! Run history: the SQLite index survives kills, deletion, damage and
//! parallel runs (the run directories are the truth); `compare` reports
//! exactly the flips it sees and tells a regression from noise; `trend`
//! follows a suite.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rand::{Rng as _, SeedableRng as _};
use serde_json::Value;

use crate::support::{Project, Run, evalhost, run_in};

const WORDS: [&str; 10] = ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9"];

/// A suite of `n` tests `t00…`, each scored by ten `contains` assertions
/// (one per word), its answer read from `answers/<id>.txt` by a `cli`
/// target: the fraction of words in the answer is the score.
pub(crate) fn scored_project(n: usize) -> Project {
    let project = Project::with_mock("unused");
    let answers = project.path().join("answers");
    std::fs::create_dir_all(&answers).unwrap();
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        format!(
            "targets:\n  - {{name: default, provider: cli, command: \"cat {}/{{EVAL_ID}}.txt > {{OUTPUT_FILE}}\"}}\n",
            answers.display()
        ),
    )
    .unwrap();
    let mut suite = String::from("name: scored\ntests:\n");
    for i in 0..n {
        suite.push_str(&format!(
            "  - id: t{i:02}\n    input: say the words\n    assertions:\n"
        ));
        for w in WORDS {
            suite.push_str(&format!("      - {{type: contains, value: {w}}}\n"));
        }
    }
    project.write("EVAL.yaml", &suite);
    project
}

/// Writes each test's answer: test `i` gets `words[i]` of the ten words.
pub(crate) fn answer(project: &Project, words: &[usize]) {
    for (i, k) in words.iter().enumerate() {
        std::fs::write(
            project.path().join(format!("answers/t{i:02}.txt")),
            WORDS[..*k].join(" "),
        )
        .unwrap();
    }
}

/// Runs the suite into the project's own run directories.
pub(crate) fn run(project: &Project) -> Run {
    let r = run_in(project.path(), &["run", "EVAL.yaml"]);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    // Run directories are named by the millisecond they start.
    std::thread::sleep(Duration::from_millis(5));
    r
}

fn json(project: &Project, args: &[&str]) -> Value {
    let r = run_in(project.path(), args);
    assert_eq!(r.code, 0, "{args:?}: {}{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn listed(project: &Project) -> Vec<Value> {
    json(project, &["runs", "list", "--json"])
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn runs_are_indexed_listed_shown_and_removed() {
    let project = scored_project(3);
    answer(&project, &[10, 10, 2]);
    run(&project);
    answer(&project, &[10, 2, 2]);
    run(&project);
    assert!(project.path().join(".evalhost/results.db").is_file());
    let runs = listed(&project);
    assert_eq!(runs.len(), 2);
    // Newest first, with counts from the rows.
    assert_eq!(runs[0]["passed"], 1);
    assert_eq!(runs[1]["passed"], 2);
    assert_eq!(runs[0]["suite"], "scored");
    assert_eq!(runs[0]["status"], "complete");
    let id = runs[0]["id"].as_str().unwrap().to_owned();
    let shown = json(&project, &["runs", "show", &id, "--json"]);
    assert_eq!(shown["rows"].as_array().unwrap().len(), 3);
    // Filters.
    assert_eq!(
        json(&project, &["runs", "list", "--json", "--suite", "other"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        json(&project, &["runs", "list", "--json", "-n", "1"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A prefix names a run when it is unique; an unknown id is an error.
    let r = run_in(project.path(), &["runs", "show", "no-such-run"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no run `no-such-run`"), "{}", r.stderr);
    // rm deletes the directory and the entry.
    let dir = runs[0]["dir"].as_str().unwrap().to_owned();
    let r = run_in(project.path(), &["runs", "rm", &id]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!Path::new(&dir).exists());
    assert_eq!(listed(&project).len(), 1);
}

#[test]
fn a_deleted_or_damaged_index_loses_no_run() {
    let project = scored_project(2);
    answer(&project, &[10, 10]);
    run(&project);
    run(&project);
    let db = project.path().join(".evalhost/results.db");
    // Deleted: the next look rebuilds it from the run directories.
    std::fs::remove_file(&db).unwrap();
    let _ = std::fs::remove_file(project.path().join(".evalhost/results.db-wal"));
    let _ = std::fs::remove_file(project.path().join(".evalhost/results.db-shm"));
    assert_eq!(listed(&project).len(), 2);
    // Damaged: a run still succeeds, says so, and the index is rebuilt
    // with every run, the old file kept aside.
    for side in ["results.db-wal", "results.db-shm"] {
        let _ = std::fs::remove_file(project.path().join(".evalhost").join(side));
    }
    std::fs::write(
        &db,
        b"this is not a database, it is a text file. ".repeat(200),
    )
    .unwrap();
    let r = run(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("moved to"), "{}", r.stderr);
    assert_eq!(listed(&project).len(), 3);
    let aside = std::fs::read_dir(project.path().join(".evalhost"))
        .unwrap()
        .flatten()
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("results.db.damaged-")
        });
    assert!(aside);
}

#[test]
fn a_killed_run_is_restored_by_reindex_with_the_rows_it_finished() {
    let project = Project::with_mock("ok");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: ok, delay_ms: 300}\n",
    )
    .unwrap();
    let mut suite = String::from("name: slow\ntests:\n");
    for i in 0..20 {
        suite.push_str(&format!(
            "  - id: s{i:02}\n    input: hi\n    assertions: [{{type: contains, value: ok}}]\n"
        ));
    }
    project.write("EVAL.yaml", &suite);
    // A whole run first: the index exists.
    let r = run_in(project.path(), &["run", "EVAL.yaml", "-j", "4"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(listed(&project).len(), 1);
    // Then one killed (SIGKILL: no summary, no index entry) after a few rows.
    let mut child = evalhost()
        .current_dir(project.path())
        .args(["run", "EVAL.yaml", "-j", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        listed(&project).len(),
        1,
        "the killed run is not indexed yet"
    );
    let r = run_in(project.path(), &["runs", "reindex"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("indexed 2 run(s)"), "{}", r.stdout);
    let runs = listed(&project);
    assert_eq!(runs.len(), 2);
    let killed = &runs[0];
    assert_eq!(killed["status"], "interrupted");
    let rows = killed["total"].as_u64().unwrap();
    assert!((1..20).contains(&rows), "{killed}");
    assert_eq!(killed["passed"].as_u64().unwrap(), rows);
}

#[test]
fn two_suites_run_at_once_are_both_indexed() {
    let project = Project::with_mock("ok");
    for name in ["alpha", "beta"] {
        let mut suite = format!("name: {name}\ntests:\n");
        for i in 0..15 {
            suite.push_str(&format!(
                "  - id: {name}{i}\n    input: hi\n    assertions: [{{type: contains, value: ok}}]\n"
            ));
        }
        project.write(&format!("{name}.yaml"), &suite);
    }
    for _round in 0..2 {
        let children: Vec<_> = ["alpha.yaml", "beta.yaml"]
            .iter()
            .map(|f| {
                evalhost()
                    .current_dir(project.path())
                    .args(["run", f])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                !String::from_utf8_lossy(&out.stderr).contains("warning"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let runs = listed(&project);
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert_eq!(runs.iter().filter(|r| r["suite"] == "alpha").count(), 2);
    assert_eq!(runs.iter().filter(|r| r["suite"] == "beta").count(), 2);
}

#[test]
fn compare_reports_exactly_the_flips_and_its_interval_is_reproducible() {
    let project = scored_project(12);
    // t05 fails in the base (3 of 10 words); the rest pass fully.
    let mut base = vec![10; 12];
    base[5] = 3;
    answer(&project, &base);
    run(&project);
    // t03, t07 and t11 drop to 2 words (fail), t05 recovers.
    let mut cand = vec![10; 12];
    for i in [3, 7, 11] {
        cand[i] = 2;
    }
    answer(&project, &cand);
    run(&project);
    let c = json(&project, &["compare", "--last", "--json"]);
    let flips: Vec<(String, String)> = c["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["flip"].is_null())
        .map(|t| {
            (
                t["test_id"].as_str().unwrap().to_owned(),
                t["flip"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        flips,
        [
            ("t03".to_owned(), "pass->fail".to_owned()),
            ("t05".to_owned(), "fail->pass".to_owned()),
            ("t07".to_owned(), "pass->fail".to_owned()),
            ("t11".to_owned(), "pass->fail".to_owned()),
        ]
    );
    let s = &c["summary"];
    assert_eq!(s["pass_to_fail"], 3);
    assert_eq!(s["fail_to_pass"], 1);
    assert_eq!(s["matched"], 12);
    // Exact McNemar on 3 vs 1: p = 2 × P(X ≤ 1), X ~ Bin(4, ½) = 0.625.
    assert!((s["flip_p_value"].as_f64().unwrap() - 0.625).abs() < 1e-9);
    let mean = s["mean_delta"].as_f64().unwrap();
    assert!((mean - (3.0 * -0.8 + 0.7) / 12.0).abs() < 1e-9, "{mean}");
    // The interval holds the mean and the same seed gives the same one.
    let (lo, hi) = (
        s["ci"]["low"].as_f64().unwrap(),
        s["ci"]["high"].as_f64().unwrap(),
    );
    assert!(lo <= mean && mean <= hi, "{lo} {mean} {hi}");
    let again = json(&project, &["compare", "--last", "--json"]);
    assert_eq!(again["summary"]["ci"], s["ci"]);
    let other = json(&project, &["compare", "--last", "--json", "--seed", "7"]);
    assert_ne!(other["summary"]["ci"], s["ci"]);
    // The terminal and Markdown forms say the same.
    let r = run_in(project.path(), &["compare", "--last"]);
    assert!(
        r.stdout.contains("t03") && r.stdout.contains("pass->fail"),
        "{}",
        r.stdout
    );
    // A table on lines, not one escaped line.
    assert!(
        r.stdout.lines().count() > 8 && !r.stdout.contains("\\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.lines().any(|l| l.trim_start().starts_with("t07 ")),
        "{}",
        r.stdout
    );
    let r = run_in(project.path(), &["compare", "--last", "--markdown"]);
    assert!(r.stdout.contains("| `t05` |"), "{}", r.stdout);
}

/// Seeded noise: `n` base answers of 3 to 9 words, and a candidate that
/// moves each test by `shift` words plus one word up or down or not at all
/// — as many up as down, shuffled — so with `shift` 0 the true mean change
/// is exactly zero.
fn noisy(n: usize, shift: i64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let base: Vec<usize> = (0..n).map(|_| 3 + (rng.next_u64() % 7) as usize).collect();
    let mut noise: Vec<i64> = (0..n).map(|i| [1, -1, 0][i % 3]).collect();
    // Fisher–Yates, seeded.
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        noise.swap(i, j);
    }
    let cand = base
        .iter()
        .zip(&noise)
        .map(|(b, d)| (*b as i64 + d + shift).clamp(0, 10) as usize)
        .collect();
    (base, cand)
}

#[test]
fn fail_on_regression_exits_1_on_a_real_regression_and_0_on_noise() {
    let n = 30;
    // Noise: every test moves by a word or not at all, as many up as down.
    let project = scored_project(n);
    let (base, cand) = noisy(n, 0, 11);
    answer(&project, &base);
    run(&project);
    answer(&project, &cand);
    run(&project);
    let r = run_in(
        project.path(),
        &["compare", "--last", "--fail-on-regression"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("no significant change"), "{}", r.stdout);
    // A regression: the same noise on top of two words lost per test.
    let project = scored_project(n);
    let (base, cand) = noisy(n, -2, 11);
    answer(&project, &base);
    run(&project);
    answer(&project, &cand);
    run(&project);
    let r = run_in(
        project.path(),
        &["compare", "--last", "--fail-on-regression"],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("regressed:"), "{}", r.stdout);
    assert!(r.stdout.contains("significant"), "{}", r.stdout);
    // A minimum effect larger than the drop: not a failure.
    let r = run_in(
        project.path(),
        &[
            "compare",
            "--last",
            "--fail-on-regression",
            "--min-effect",
            "0.5",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

#[test]
fn tests_in_only_one_run_are_listed_and_trend_follows_the_suite() {
    let project = scored_project(3);
    answer(&project, &[10, 10, 10]);
    run(&project);
    answer(&project, &[10, 2, 10]);
    run(&project);
    answer(&project, &[10, 10, 10]);
    run(&project);
    // A fourth run with a test renamed: t02 gone, t09 new.
    let suite = std::fs::read_to_string(project.path().join("EVAL.yaml"))
        .unwrap()
        .replace("id: t02", "id: t09");
    project.write("EVAL.yaml", &suite);
    std::fs::copy(
        project.path().join("answers/t00.txt"),
        project.path().join("answers/t09.txt"),
    )
    .unwrap();
    run(&project);
    let c = json(&project, &["compare", "--last", "--json"]);
    assert_eq!(c["only_in_base"][0]["test_id"], "t02");
    assert_eq!(c["only_in_candidate"][0]["test_id"], "t09");
    let r = run_in(project.path(), &["compare", "--last"]);
    assert!(
        r.stdout.contains("only in base (1)") && r.stdout.contains("only in candidate (1)"),
        "{}",
        r.stdout
    );
    let t = json(&project, &["trend", "--json"]);
    assert_eq!(t["runs"].as_array().unwrap().len(), 4);
    let t01 = t["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["test_id"] == "t01")
        .unwrap()
        .clone();
    assert_eq!(t01["scores"], serde_json::json!([1.0, 0.2, 1.0, 1.0]));
    assert_eq!(t01["flaps"], 2);
    assert_eq!(t01["flaky"], true);
    let t09 = t["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["test_id"] == "t09")
        .unwrap()
        .clone();
    assert_eq!(t09["scores"], serde_json::json!([null, null, null, 1.0]));
    let r = run_in(project.path(), &["trend"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("flaky (2+ verdict changes): t01"),
        "{}",
        r.stdout
    );
}
