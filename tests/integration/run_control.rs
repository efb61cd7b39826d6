//! Scoring precedence, gates, expected failures, filters, timeouts, trials,
//! fail-fast, interruption, resume, re-runs, reporters, sharding and merge.
//! Each test names its worked example.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{Project, evalhost, hostile, run_in};

/// A project whose suite uses the hostile plugin's `score` type, which
/// returns the configured score: the easiest way to get exact fractions.
fn scored(response: &str, suite_body: &str) -> Project {
    let project = Project::with_mock(response);
    project.write(
        "EVAL.yaml",
        &format!("plugins: [{}]\n{suite_body}", hostile().display()),
    );
    project
}

fn run(project: &Project, out: &str, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["run", "EVAL.yaml", "-o", out];
    args.extend_from_slice(extra);
    run_in(project.path(), &args)
}

fn rows(project: &Project, out: &str) -> Vec<Value> {
    std::fs::read_to_string(project.path().join(out).join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn summary(project: &Project, out: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(project.path().join(out).join("summary.json")).unwrap(),
    )
    .unwrap()
}

fn status_of(rows: &[Value], id: &str) -> String {
    rows.iter().find(|r| r["test_id"] == id).unwrap()["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn threshold_precedence_test_then_cli_then_suite_then_default() {
    // Every test scores 0.75. Suite threshold 0.9; `own` sets 0.5.
    let body = "execution:\n  threshold: 0.9\ntests:\n  - id: own\n    input: q\n    execution: {threshold: 0.5}\n    assertions: [{type: score, score: 0.75}]\n  - id: inherits\n    input: q\n    assertions: [{type: score, score: 0.75}]\n";
    let project = scored("x", body);
    // No --threshold: own 0.75 ≥ 0.5 passes; inherits 0.75 < 0.9 (suite) fails.
    let r = run(&project, "a", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let a = rows(&project, "a");
    assert_eq!(
        (status_of(&a, "own"), status_of(&a, "inherits")),
        ("passed".into(), "failed".into())
    );
    assert_eq!(a[1]["threshold"], 0.9);
    // --threshold 0.7 beats the suite's 0.9 (0.75 ≥ 0.7) but not the test's own 0.5.
    let r = run(&project, "b", &["--threshold", "0.7"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = rows(&project, "b");
    assert_eq!(
        (b[0]["threshold"].as_f64(), b[1]["threshold"].as_f64()),
        (Some(0.5), Some(0.7))
    );
    // No thresholds anywhere: the default 0.8 fails 0.75.
    let project = scored(
        "x",
        "tests:\n  - id: plain\n    input: q\n    assertions: [{type: score, score: 0.75}]\n",
    );
    let r = run(&project, "c", &[]);
    assert_eq!(r.code, 1);
    assert_eq!(rows(&project, "c")[0]["threshold"], 0.8);
}

#[test]
fn required_gates_use_min_score_then_the_number_then_the_test_threshold() {
    // Each test: a required assertion scoring 0.6 plus one scoring 1 (mean 0.8).
    let body = "tests:
  - id: gate-at-threshold-fails
    input: q
    assertions: [{type: score, score: 0.6, required: true}, {type: score, score: 1}]
  - id: gate-at-lowered-threshold-passes
    input: q
    execution: {threshold: 0.5}
    assertions: [{type: score, score: 0.6, required: true}, {type: score, score: 1}]
  - id: gate-at-min-score-passes
    input: q
    assertions: [{type: score, score: 0.6, required: true, min_score: 0.5}, {type: score, score: 1}]
  - id: gate-at-deprecated-number-fails
    input: q
    assertions: [{type: score, score: 0.6, required: 0.7}, {type: score, score: 1}]
";
    let project = scored("x", body);
    let r = run(&project, "out", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("`required: <number>` is deprecated"),
        "{}",
        r.stderr
    );
    let rows = rows(&project, "out");
    // 0.6 < 0.8 (the test threshold): the gate zeroes the test.
    assert_eq!(
        (rows[0]["score"].as_f64(), rows[0]["status"].as_str()),
        (Some(0.0), Some("failed"))
    );
    // 0.6 ≥ 0.5 (lowered threshold): mean 0.8 ≥ 0.5 passes.
    assert_eq!(rows[1]["status"], "passed");
    // min_score 0.5 is the gate: 0.6 passes it; mean 0.8 ≥ 0.8 passes.
    assert_eq!(rows[2]["status"], "passed");
    // required: 0.7 gates at 0.7: 0.6 fails it.
    assert_eq!(
        (rows[3]["score"].as_f64(), rows[3]["status"].as_str()),
        (Some(0.0), Some("failed"))
    );
}

#[test]
fn expected_failures_pass_unexpected_passes_fail_and_errors_are_never_masked() {
    let body = "tests:
  - id: fails-as-expected
    input: q
    expected_fail: true
    assertions: [{type: contains, value: absent}]
  - id: passes
    input: q
    assertions: [{type: contains, value: here}]
";
    let project = scored("here", body);
    let r = run(&project, "a", &[]);
    assert_eq!(
        r.code, 0,
        "an expected failure counts as passing: {}",
        r.stderr
    );
    let a = rows(&project, "a");
    assert_eq!(status_of(&a, "fails-as-expected"), "expected-failed");
    assert!(r.stdout.contains("XFAIL"), "{}", r.stdout);

    let body = "tests:
  - id: passes-unexpectedly
    input: q
    expected_fail: true
    assertions: [{type: contains, value: here}]
  - id: crashes
    input: q
    expected_fail: true
    assertions: [{type: panic}]
";
    let project = scored("here", body);
    let r = run(&project, "b", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let b = rows(&project, "b");
    let unexpected = b
        .iter()
        .find(|r| r["test_id"] == "passes-unexpectedly")
        .unwrap();
    assert_eq!(
        (
            unexpected["status"].as_str(),
            unexpected["failure_class"].as_str()
        ),
        (Some("unexpected-passed"), Some("unexpected_pass"))
    );
    // A crash is an infrastructure failure: expected_fail does not hide it.
    let crash = b.iter().find(|r| r["test_id"] == "crashes").unwrap();
    assert_eq!(
        (crash["status"].as_str(), crash["failure_class"].as_str()),
        (Some("error"), Some("plugin_trap"))
    );
    let s = summary(&project, "b");
    assert_eq!(s["failures_by_class"]["unexpected_pass"], 1);
    assert_eq!(s["failures_by_class"]["plugin_trap"], 1);
    assert!(
        r.stdout
            .contains("failures by class: plugin_trap: 1, unexpected_pass: 1"),
        "{}",
        r.stdout
    );
}

#[test]
fn filters_select_by_glob_and_tag() {
    let body = "tags: [suite-wide]
tests:
  - {id: auth-login, input: q, tags: [smoke], assertions: [{type: is-json}]}
  - {id: auth-logout, input: q, assertions: [{type: is-json}]}
  - {id: billing, input: q, tags: [slow], assertions: [{type: is-json}]}
";
    let project = scored("{}", body);
    let ids = |out: &str| {
        rows(&project, out)
            .iter()
            .map(|r| r["test_id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(run(&project, "a", &["--test-id", "auth-*"]).code, 0);
    assert_eq!(ids("a"), ["auth-login", "auth-logout"]);
    assert_eq!(
        run(
            &project,
            "b",
            &["--test-id", "billing", "--test-id", "*-logout"]
        )
        .code,
        0
    );
    assert_eq!(ids("b"), ["auth-logout", "billing"]);
    assert_eq!(
        run(&project, "c", &["--tag", "smoke", "--tag", "slow"]).code,
        0
    );
    assert_eq!(ids("c"), ["auth-login", "billing"]);
    // Suite tags apply to every case.
    assert_eq!(run(&project, "d", &["--tag", "suite-wide"]).code, 0);
    assert_eq!(ids("d").len(), 3);
    let r = run(&project, "e", &["--test-id", "nothing*"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("no test matches --test-id nothing*"),
        "{}",
        r.stderr
    );
    // Issue 16.13: a filter that matches nothing says what it may have meant.
    let r = run(&project, "f", &["--test-id", "auth-logot"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("hint: did you mean --test-id auth-logout?"),
        "{}",
        r.stderr
    );
    let r = run(&project, "g", &["--test-id", "auth"]);
    assert!(
        r.stderr.contains("--test-id '*auth*' matches 2 test(s)"),
        "{}",
        r.stderr
    );
    let r = run(&project, "h", &["--tag", "smok"]);
    assert!(
        r.stderr.contains("hint: did you mean --tag smoke?"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("hint: the suite's tags: "),
        "{}",
        r.stderr
    );
}

#[test]
fn a_case_timeout_stops_the_target_or_the_graders() {
    let project = Project::with_mock("slow answer");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: slow answer, delay_ms: 400}\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins: [{}]\ntests:\n  - id: target-too-slow\n    input: q\n    timeout_ms: 100\n    assertions: [{{type: contains, value: slow}}]\n  - id: grader-too-slow\n    input: q\n    timeout_ms: 700\n    assertions: [{{type: loop-forever}}, {{type: contains, value: slow}}]\n  - id: in-time\n    input: q\n    timeout_ms: 5000\n    assertions: [{{type: contains, value: slow}}]\n",
            hostile().display()
        ),
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let rows = project.rows();
    assert_eq!(
        (
            rows[0]["status"].as_str(),
            rows[0]["failure_class"].as_str()
        ),
        (Some("error"), Some("case_timeout"))
    );
    let second = &rows[1];
    assert_eq!(second["failure_class"], "case_timeout");
    assert_eq!(second["scores"][0]["failure_class"], "case_timeout");
    assert_eq!(
        second["scores"][1]["failure_class"], "case_timeout",
        "no time left for the second assertion"
    );
    assert_eq!(rows[2]["status"], "passed");
}

#[test]
fn trials_combine_by_strategy_and_repeat_runs_every_trial() {
    let body = "execution:\n  trials: {count: 3, strategy: pass_at_k}\ntests:\n  - {id: steady, input: q, assertions: [{type: contains, value: ok}]}\n  - {id: broken, input: q, assertions: [{type: contains, value: nope}]}\n";
    let project = scored("ok", body);
    let r = run(&project, "a", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let a = rows(&project, "a");
    // pass_at_k stops after the first passing trial; a failing test runs all 3.
    let steady: Vec<_> = a.iter().filter(|r| r["test_id"] == "steady").collect();
    let broken: Vec<_> = a.iter().filter(|r| r["test_id"] == "broken").collect();
    assert_eq!((steady.len(), broken.len()), (1, 3));
    assert_eq!(broken[2]["trial"], 3);
    assert_eq!(broken[2]["trials"], 3);
    let s = summary(&project, "a");
    assert_eq!(s["tests"][0]["trials"], 1);
    assert_eq!(s["tests"][1]["trials"], 3);
    assert_eq!(s["tests"][1]["strategy"], "pass_at_k");
    // --repeat runs every trial (no early stop), with the suite's strategy.
    let r = run(&project, "b", &["--repeat", "2", "--test-id", "steady"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = rows(&project, "b");
    assert_eq!(b.len(), 2);
    assert_eq!(b[0]["strategy"], "pass_at_k");
    // Without suite trials, --repeat combines by the mean: 2 of 4 trials
    // pass → mean 0.5 < 0.8 fails even though some trials passed.
    let flaky = scored(
        "ok",
        "tests:\n  - {id: half, input: q, assertions: [{type: contains, value: ok}, {type: contains, value: nope}]}\n",
    );
    let r = run(&flaky, "c", &["--repeat", "4"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let s = summary(&flaky, "c");
    assert_eq!(
        (
            s["tests"][0]["strategy"].as_str(),
            s["tests"][0]["score"].as_f64()
        ),
        (Some("mean"), Some(0.5))
    );
}

#[test]
fn fail_fast_stops_scheduling_after_the_first_failure() {
    let mut body = String::from(
        "tests:\n  - {id: t00, input: q, assertions: [{type: contains, value: nope}]}\n",
    );
    for i in 1..10 {
        body.push_str(&format!(
            "  - {{id: t{i:02}, input: q, assertions: [{{type: contains, value: ok}}]}}\n"
        ));
    }
    let project = scored("ok", &body);
    let r = run(&project, "out", &["--fail-fast", "-j", "1"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(rows(&project, "out").len(), 1);
    let s = summary(&project, "out");
    assert_eq!(s["not_run"], 9);
    assert!(r.stdout.contains("9 not run"), "{}", r.stdout);
}

#[test]
fn workers_do_not_change_the_order_of_results() {
    let mut body = String::from("tests:\n");
    for i in 0..24 {
        body.push_str(&format!(
            "  - {{id: case-{i:02}, input: q, assertions: [{{type: contains, value: ok}}]}}\n"
        ));
    }
    let project = scored("ok", &body);
    assert_eq!(
        run(&project, "out", &["-j", "4", "--grader-workers", "1"]).code,
        0
    );
    let ids: Vec<String> = rows(&project, "out")
        .iter()
        .map(|r| r["test_id"].as_str().unwrap().to_owned())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert_eq!(ids.len(), 24);
}

/// A slow suite: 12 cases of 250 ms each, run one at a time.
fn slow_project() -> Project {
    let project = Project::with_mock("ok");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: ok, delay_ms: 250}\n",
    )
    .unwrap();
    let mut body = String::from("tests:\n");
    for i in 0..12 {
        let check = if i % 3 == 0 { "nope" } else { "ok" };
        body.push_str(&format!("  - {{id: s{i:02}, input: q, assertions: [{{type: contains, value: {check}}}, {{type: regex, value: '^o'}}]}}\n"));
    }
    project.write("EVAL.yaml", &body);
    project
}

/// The rows with what varies from run to run removed.
fn normalized(project: &Project, out: &str) -> Vec<Value> {
    rows(project, out)
        .into_iter()
        .map(|mut r| {
            let o = r.as_object_mut().unwrap();
            for key in ["timestamp", "wall_ms", "duration_ms"] {
                o.remove(key);
            }
            for s in o.get_mut("scores").unwrap().as_array_mut().unwrap() {
                s.as_object_mut().unwrap().remove("duration_us");
            }
            r
        })
        .collect()
}

/// Waits until `out/results.jsonl` has at least `lines` lines (30 s at most).
fn wait_for_rows(project: &Project, out: &str, lines: usize) {
    let path = project.path().join(out).join("results.jsonl");
    for _ in 0..600 {
        let count = std::fs::read_to_string(&path)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if count >= lines {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never reached {lines} rows", path.display());
}

fn spawn_run(project: &Project, out: &str) -> std::process::Child {
    evalhost()
        .current_dir(project.path())
        .args(["run", "EVAL.yaml", "-o", out, "-j", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Like [`spawn_run`], with stdout and stderr written to `log` in the
/// project (as `> log 2>&1` would).
fn spawn_run_logged(project: &Project, out: &str, log: &str) -> std::process::Child {
    let file = std::fs::File::create(project.path().join(log)).unwrap();
    evalhost()
        .current_dir(project.path())
        .args(["run", "EVAL.yaml", "-o", out, "-j", "1"])
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap()
}

#[test]
fn sigkill_then_resume_gives_the_same_rows_as_an_uninterrupted_run() {
    let project = slow_project();
    assert_eq!(run(&project, "whole", &["-j", "1"]).code, 1);
    let expected = normalized(&project, "whole");
    assert_eq!(expected.len(), 12);

    let mut child = spawn_run(&project, "killed");
    wait_for_rows(&project, "killed", 3);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let partial =
        std::fs::read_to_string(project.path().join("killed/results.jsonl")).unwrap_or_default();
    let partial_rows = partial.lines().count();
    assert!(
        partial_rows > 0 && partial_rows < 12,
        "killed mid-way: {partial_rows} rows"
    );
    // A crash can leave a torn last line: simulate one.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(project.path().join("killed/results.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut file, b"{\"timestamp\":\"2026-").unwrap();
    drop(file);

    let r = run_in(project.path(), &["run", "--resume", "killed", "-j", "1"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("dropped a torn last line"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout
            .contains(&format!("resuming: {partial_rows} row(s) already done")),
        "{}",
        r.stdout
    );
    let resumed = normalized(&project, "killed");
    assert_eq!(resumed.len(), expected.len());
    for (got, want) in resumed.iter().zip(&expected) {
        assert_eq!(got, want, "row {} differs after resume", want["test_id"]);
    }
}

/// Every line of a results file parses, except perhaps a torn last one
/// (written without its newline when the process died).
fn check_not_corrupt(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    for (n, line) in complete.lines().enumerate() {
        assert!(
            serde_json::from_str::<Value>(line).is_ok(),
            "line {} of {} is corrupt: {line}",
            n + 1,
            path.display()
        );
    }
    complete.lines().count()
}

#[test]
fn sigkills_at_random_points_never_corrupt_results_and_resume_finishes() {
    let project = slow_project();
    assert_eq!(run(&project, "whole", &["-j", "1"]).code, 1);
    let expected = normalized(&project, "whole");
    // A seed printed on failure, so a failing sequence can be replayed.
    let seed = std::env::var("EVALHOST_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        });
    let mut state = seed | 1;
    let mut next = || {
        // xorshift64
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let results = project.path().join("killed/results.jsonl");
    let mut kills = 0;
    for round in 0..5 {
        let mut args = vec!["run", "-j", "1"];
        // A kill before the run recorded itself (run.json, written
        // atomically) leaves nothing to resume: start it again.
        let started = project.path().join("killed/run.json").exists();
        if round == 0 || !started {
            args.extend(["EVAL.yaml", "-o", "killed"]);
        } else {
            args.extend(["--resume", "killed"]);
        }
        let mut child = evalhost()
            .current_dir(project.path())
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Anywhere from start-up to well into the run.
        std::thread::sleep(Duration::from_millis(20 + next() % 700));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        child.wait().unwrap();
        let rows = check_not_corrupt(&results);
        assert!(rows <= 12, "seed {seed}: {rows} rows after round {round}");
    }
    let r = if project.path().join("killed/run.json").exists() {
        run_in(project.path(), &["run", "--resume", "killed", "-j", "1"])
    } else {
        run_in(
            project.path(),
            &["run", "EVAL.yaml", "-o", "killed", "-j", "1"],
        )
    };
    assert!(r.code == 1, "seed {seed}: {}", r.stderr);
    let resumed = normalized(&project, "killed");
    assert_eq!(resumed.len(), expected.len(), "seed {seed}");
    for (got, want) in resumed.iter().zip(&expected) {
        assert_eq!(got, want, "seed {seed}: row {} differs", want["test_id"]);
    }
    assert!(kills >= 3, "seed {seed}: only {kills} kills landed");
    eprintln!("sigkill: seed {seed}: {kills} kills survived, --resume finished the run");
}

#[test]
fn ctrl_c_writes_the_summary_of_what_finished_and_resume_completes_it() {
    let project = slow_project();
    let mut child = spawn_run_logged(&project, "out", "log.txt");
    wait_for_rows(&project, "out", 2);
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // Issue 16.13: no verdict for a run that did not finish.
    let log = std::fs::read_to_string(project.path().join("log.txt")).unwrap();
    assert!(log.contains("RESULT: INTERRUPTED  "), "{log}");
    assert!(log.contains(" finished · mean score"), "{log}");
    assert!(
        !log.contains("RESULT: FAIL") && !log.contains("RESULT: PASS"),
        "{log}"
    );
    let s = summary(&project, "out");
    assert_eq!(s["interrupted"], true);
    let finished = s["total"].as_u64().unwrap();
    assert!(finished > 0 && finished < 12, "{finished}");
    assert_eq!(s["not_run"].as_u64().unwrap(), 12 - finished);
    assert_eq!(rows(&project, "out").len() as u64, finished);
    let r = run_in(project.path(), &["run", "--resume", "out"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(rows(&project, "out").len(), 12);
    assert_eq!(summary(&project, "out")["interrupted"], false);
}

#[test]
fn rerun_failed_runs_only_what_did_not_pass() {
    let body = "tests:\n  - {id: good, input: q, assertions: [{type: contains, value: ok}]}\n  - {id: bad, input: q, assertions: [{type: contains, value: nope}]}\n";
    let project = scored("ok", body);
    assert_eq!(run(&project, "first", &[]).code, 1);
    let r = run_in(
        project.path(),
        &["run", "--rerun-failed", "first", "-o", "second"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let second = rows(&project, "second");
    assert_eq!(second.len(), 1);
    assert_eq!(second[0]["test_id"], "bad");
}

/// Validates `xml` against `tests/data/junit.xsd` with the `xmlschema`
/// package (XSD 1.0, pinned in `support::PYTHON_TOOLS`).
fn xmllint(xml: &Path) -> (bool, String) {
    let schema = crate::support::root().join("tests/data/junit.xsd");
    let out = crate::support::python()
        .args([
            "-c",
            "import sys, xmlschema; xmlschema.XMLSchema10(sys.argv[1]).validate(sys.argv[2])",
        ])
        .arg(&schema)
        .arg(xml)
        .output()
        .expect("python3 runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn junit_output_validates_against_the_junit_schema() {
    let body = "tests:
  - {id: ok, input: q, assertions: [{type: contains, value: ok}]}
  - {id: quality, input: q, assertions: [{type: contains, value: 'nope <&> \"quoted\"'}]}
  - {id: crash, input: q, assertions: [{type: panic}]}
  - {id: xfail, input: q, expected_fail: true, assertions: [{type: contains, value: nope}]}
";
    let project = scored("ok", body);
    let r = run(&project, "out", &["--junit", "junit.xml"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let xml_path = project.path().join("junit.xml");
    let (valid, message) = xmllint(&xml_path);
    assert!(valid, "{message}");
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    assert!(xml.contains("tests=\"4\""), "{xml}");
    assert!(
        xml.contains("failures=\"1\"") && xml.contains("errors=\"1\""),
        "failures apart from errors: {xml}"
    );
    assert!(
        xml.contains("<failure message=\"contains-nope &lt;&amp;&gt;"),
        "{xml}"
    );
    assert!(xml.contains("type=\"plugin_trap\""), "{xml}");
    // The schema can fail: a negative count is refused.
    let bad = project.write("bad.xml", &xml.replacen("tests=\"4\"", "tests=\"-4\"", 1));
    assert!(!xmllint(&bad).0);
}

#[test]
fn github_reporter_annotates_the_failing_case_line_and_writes_a_step_summary() {
    let body = "tests:\n  - {id: ok, input: q, assertions: [{type: contains, value: ok}]}\n  - id: bad\n    input: q\n    assertions: [{type: contains, value: nope}]\n";
    let project = scored("ok", body);
    let step = project.path().join("step-summary.md");
    let out = evalhost()
        .current_dir(project.path())
        .env("GITHUB_STEP_SUMMARY", &step)
        .args(["run", "EVAL.yaml", "-o", "out", "--reporter", "github"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("::error file=EVAL.yaml,line=4,title=bad failed [assertion]::score 0.00"),
        "{stdout}"
    );
    assert!(!stdout.contains("title=ok"), "{stdout}");
    let md = std::fs::read_to_string(step).unwrap();
    assert!(
        md.contains("| 1 | 1 | 0 | 0 | 0 | 0 | 50% | 0.50 |"),
        "{md}"
    );
    assert!(md.contains("| bad | failed | assertion | 0.00 |"), "{md}");
}

#[test]
fn the_html_report_embeds_every_test_safely() {
    let project = scored(
        "</script><img src=x onerror=alert(1)>",
        "tests:\n  - {id: xss, input: q, assertions: [{type: contains, value: nope}]}\n",
    );
    assert_eq!(run(&project, "out", &[]).code, 1);
    let html = std::fs::read_to_string(project.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("\\u003c/script>\\u003cimg"),
        "the output is escaped inside the data block"
    );
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's own script tags close"
    );
    assert!(html.contains("\"test_id\":\"xss\""));
}

#[test]
fn shards_then_merge_equal_the_unsharded_run() {
    let mut body = String::from("tests:\n");
    for i in 0..10 {
        let check = if i % 4 == 0 { "nope" } else { "ok" };
        body.push_str(&format!(
            "  - {{id: m{i}, input: q, assertions: [{{type: contains, value: {check}}}]}}\n"
        ));
    }
    let project = scored("ok", &body);
    assert_eq!(run(&project, "whole", &[]).code, 1);
    let mut shard_counts = Vec::new();
    for k in 1..=3 {
        let out = format!("shard{k}");
        let r = run(&project, &out, &["--shard", &format!("{k}/3")]);
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
        shard_counts.push(rows(&project, &out).len());
    }
    assert_eq!(shard_counts, [4, 3, 3], "disjoint slices covering the plan");
    let r = run_in(
        project.path(),
        &[
            "merge",
            "shard1",
            "shard2",
            "shard3",
            "-o",
            "merged",
            "--junit",
            "merged.xml",
        ],
    );
    assert_eq!(r.code, 1, "merge exits like the run: {}", r.stderr);
    assert_eq!(
        normalized(&project, "merged"),
        normalized(&project, "whole")
    );
    let (whole, merged) = (summary(&project, "whole"), summary(&project, "merged"));
    for key in [
        "total",
        "passed",
        "failed",
        "planned",
        "pass_rate",
        "failures_by_class",
    ] {
        assert_eq!(whole[key], merged[key], "{key}");
    }
    assert!(project.path().join("merged/report.html").is_file());
    assert!(xmllint(&project.path().join("merged.xml")).0);
}

#[test]
fn exit_code_3_when_nothing_could_be_graded() {
    // Every test's only grader crashes: no result is a real grade.
    let body = "tests:\n  - {id: a, input: q, assertions: [{type: panic}]}\n  - {id: b, input: q, assertions: [{type: exit}]}\n";
    let project = scored("x", body);
    let r = run(&project, "out", &[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    // One real failure among errors is exit 1, not 3.
    let body = "tests:\n  - {id: a, input: q, assertions: [{type: panic}]}\n  - {id: b, input: q, assertions: [{type: contains, value: nope}]}\n";
    let project = scored("x", body);
    assert_eq!(run(&project, "out", &[]).code, 1);
}

#[test]
fn the_header_counts_trials_a_reused_run_directory_is_named_and_quiet_is_quiet() {
    let project = crate::support::Project::with_mock("Paris");
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: b, input: q, assertions: [{type: contains, value: Lyon}]}\n  - {id: c, input: q, assertions: [{type: contains, value: Paris}]}\n",
    );
    // `--repeat 3` over 3 tests: 9 trials, said so.
    let first = project.run(&["--repeat", "3"]);
    assert!(
        first.stdout.contains("· 3 test(s), 9 trial(s) ·"),
        "{}",
        first.stdout
    );
    assert!(!first.stderr.contains("held the run"), "{}", first.stderr);
    // The same -o again: the run that was there is named, then replaced.
    let second = project.run(&["-q"]);
    assert!(
        second
            .stderr
            .contains("warning: out held the run started 20")
            && second
                .stderr
                .contains("it is replaced (use --resume out to continue it instead)"),
        "{}",
        second.stderr
    );
    // -q: no header, no plugin lines; the failing test and the summary.
    let both = format!("{}{}", second.stdout, second.stderr);
    assert!(!both.contains("plugin evalhost-"), "{both}");
    assert!(!both.contains("evalhost 0."), "{both}");
    assert!(second.stdout.contains("FAIL  b"), "{both}");
    assert!(second.stdout.contains("RESULT: FAIL  2/3 passed"), "{both}");
    assert!(!both.contains("PASS  a"), "{both}");
}

/// Issue 16.13: a run says which targets file it read (in the header and in
/// `run.json`, marked as found), a regrade says it is one, and a resumed run
/// whose suite changed warns that it mixes two gradings.
#[test]
fn a_run_names_its_targets_file_regrades_say_so_and_resume_notices_edits() {
    let project = Project::with_mock("open on Saturday");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: a\n    input: q\n    assertions: [{type: contains, value: Saturday}]\n  - id: b\n    input: q\n    assertions: [{type: contains, value: open}]\n",
    );
    let r = run(&project, "first", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("\n  targets from .evalhost/targets.yaml\n"),
        "{}",
        r.stdout
    );
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("first/run.json")).unwrap(),
    )
    .unwrap();
    let file = std::fs::canonicalize(project.path().join(".evalhost/targets.yaml")).unwrap();
    assert_eq!(
        std::fs::canonicalize(record["targets_file"].as_str().expect("recorded")).unwrap(),
        file
    );
    assert_eq!(record["targets_file_found"], true);
    assert!(
        record["suite_digest"]
            .as_str()
            .is_some_and(|d| d.len() == 64)
    );

    let r = run_in(project.path(), &["regrade", "first", "-o", "again"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains(" · regrade of first · "), "{}", r.stdout);
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("again/run.json")).unwrap(),
    )
    .unwrap();
    assert!(
        record["regrade_of"]
            .as_str()
            .is_some_and(|d| d.ends_with("first")),
        "{record}"
    );

    // Resuming after an edit warns; resuming an unchanged suite does not.
    let r = run(&project, "third", &["--test-id", "a"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let resume = |project: &Project| run_in(project.path(), &["run", "--resume", "third"]);
    let r = resume(&project);
    assert!(!r.stderr.contains("the suite changed"), "{}", r.stderr);
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: a\n    input: q\n    assertions: [{type: contains, value: Saturday}]\n  - id: b\n    input: q\n    assertions: [{type: contains, value: closed}]\n",
    );
    let r = resume(&project);
    assert!(
        r.stderr
            .contains("warning: the suite changed since third was started"),
        "{}",
        r.stderr
    );
}

/// Issue 16.5: under each test that did not pass the terminal shows the
/// output (its first 200 characters, all of it with --full-output) and, for
/// `equals`, expected against actual; results and the summary are on stdout
/// (what `> out.txt` and `| tee` keep), diagnostics on stderr.
#[test]
fn a_failure_shows_what_was_answered_on_stdout() {
    let long = format!("We open at 9 on Saturday. {}", "More detail. ".repeat(30));
    let project = Project::with_mock(&long);
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: exact\n    input: q\n    assertions:\n      - {type: equals, value: We open at 10 on Saturday}\n  - id: fine\n    input: q\n    assertions: [{type: contains, value: Saturday}]\n  - id: multi\n    input: q\n    assertions:\n      - {type: equals, value: \"line one\\nline two\\n\"}\n    metadata: {colour: blue}\n    bogus_key: 1\n",
    );
    let r = run(&project, "out", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let out = &r.stdout;
    assert!(out.contains("  FAIL  exact"), "{out}");
    assert!(
        out.contains("          expected: \"We open at 10 on Saturday\""),
        "{out}"
    );
    assert!(
        out.contains("        output: We open at 9 on Saturday. More detail."),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "({} characters; --full-output shows all)",
            long.chars().count()
        )),
        "{out}"
    );
    // A multi-line expectation gets a unified diff.
    assert!(out.contains("          --- expected"), "{out}");
    assert!(out.contains("          -line one"), "{out}");
    // A passing test shows no output.
    assert_eq!(out.matches("output: ").count(), 2, "{out}");
    assert!(out.contains("RESULT: FAIL  1/3 passed"), "{out}");
    // stderr: the warning about the unknown key, never a result.
    assert!(r.stderr.contains("bogus_key"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("RESULT") && !r.stderr.contains("FAIL  "),
        "{}",
        r.stderr
    );

    let r = run(&project, "full", &["--full-output"]);
    assert!(
        r.stdout.contains(&format!("          {}", long.trim_end())),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("--full-output shows all"),
        "{}",
        r.stdout
    );
}

/// Issue 16.6: paths do not depend on the current directory. The default
/// run directory is under the project (the directory holding `.evalhost/`),
/// never where the command ran (here: inside `cases/`); GitHub annotations
/// name the file relative to `$GITHUB_WORKSPACE` (else the git root), so
/// GitHub attaches them wherever evalhost ran.
#[test]
fn run_directories_and_annotations_do_not_depend_on_the_current_directory() {
    let project = Project::with_mock("Paris");
    project.write("evals/EVAL.yaml", "tests: cases\n");
    project.write(
        "evals/cases/capital/case.yaml",
        "input: q\nassertions: [{type: contains, value: Lyon}]\n",
    );
    let cases = project.path().join("evals/cases");
    let r = crate::support::run_in(&cases, &["run", "../EVAL.yaml", "--reporter", "github"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let runs = project.path().join(".evalhost/runs");
    assert_eq!(
        std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0),
        1,
        "the run is under the project's .evalhost/runs: {}",
        r.stdout
    );
    assert!(
        !cases.join(".evalhost").exists(),
        "nothing is written inside cases/"
    );
    // No git, no GITHUB_WORKSPACE: relative to the current directory.
    let ann = |r: &crate::support::Run| {
        r.stdout
            .lines()
            .find(|l| l.starts_with("::error "))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let workspace = std::fs::canonicalize(project.path()).unwrap();
    let in_workspace = |cwd: &std::path::Path, eval: &str| {
        crate::support::evalhost()
            .current_dir(cwd)
            .env("GITHUB_WORKSPACE", &workspace)
            .args(["run", eval, "--reporter", "github", "-q"])
            .output()
            .unwrap()
    };
    for (cwd, eval) in [
        (cases.clone(), "../EVAL.yaml"),
        (project.path().to_path_buf(), "evals/EVAL.yaml"),
        (project.path().join("evals"), "EVAL.yaml"),
    ] {
        let r: crate::support::Run = in_workspace(&cwd, eval).into();
        assert!(
            ann(&r).starts_with("::error file=evals/cases/capital/case.yaml,line="),
            "from {}: {}",
            cwd.display(),
            r.stdout
        );
    }
    // A git root stands in for GITHUB_WORKSPACE.
    std::fs::create_dir(project.path().join(".git")).unwrap();
    let r = crate::support::run_in(
        &cases,
        &["run", "../EVAL.yaml", "--reporter", "github", "-q"],
    );
    assert!(
        ann(&r).starts_with("::error file=evals/cases/capital/case.yaml,line="),
        "{}",
        r.stdout
    );
}

/// Issue 17.2: `depends_on` runs a test after its dependencies (even when
/// written before them, on 4 workers); a dependency that ends in an
/// execution error makes its dependents `dependency_failed` rows without
/// running them (`skip`, `fail`), or runs them anyway (`run`); a low score
/// is not a failure; shards keep a dependency group together and merge.
#[test]
fn depends_on_orders_tests_and_a_failed_dependency_is_not_run() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - name: default\n    provider: cli\n    command: \"echo start {EVAL_ID} >> log.txt; case {EVAL_ID} in broken) exit 3;; setup) sleep 0.3;; esac; echo end {EVAL_ID} >> log.txt; echo Paris > {OUTPUT_FILE}\"\n    max_retries: 0\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: summary, depends_on: [setup], input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: setup, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: broken, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: skipped, depends_on: [broken], input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: failed, depends_on: [skipped], on_dependency_failure: fail, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: anyway, depends_on: [broken], on_dependency_failure: run, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: low, input: q, assertions: [{type: contains, value: Lyon}]}\n  - {id: after-low, depends_on: [low], input: q, assertions: [{type: contains, value: Paris}]}\n",
    );
    let r = run(&project, "out", &["-j", "4"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let log = std::fs::read_to_string(project.path().join("log.txt")).unwrap();
    let at = |line: &str| {
        log.lines()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("{line} in {log}"))
    };
    assert!(at("end setup") < at("start summary"), "{log}");
    assert!(
        !log.contains("start skipped") && !log.contains("start failed"),
        "not run: {log}"
    );
    assert!(log.contains("start anyway"), "{log}");
    let all = rows(&project, "out");
    let row = |id: &str| all.iter().find(|r| r["test_id"] == id).unwrap().clone();
    assert_eq!(row("summary")["status"], "passed");
    assert_eq!(row("skipped")["failure_class"], "dependency_failed");
    assert_eq!(
        row("skipped")["error"],
        "Skipped: dependency failed (broken)"
    );
    assert_eq!(row("skipped")["status"], "error");
    assert_eq!(
        row("failed")["error"],
        "Failed: dependency failed (skipped)"
    );
    assert_eq!(row("anyway")["status"], "passed");
    assert_eq!(
        row("after-low")["status"],
        "passed",
        "a low score is not a failed dependency"
    );
    // Rows stay in suite order.
    let ids: Vec<&str> = all.iter().map(|r| r["test_id"].as_str().unwrap()).collect();
    assert_eq!(ids[..3], ["summary", "setup", "broken"]);

    // Shards: each dependency group lands in one shard; merge accepts them.
    for k in 1..=3 {
        let r = run(
            &project,
            &format!("shard-{k}"),
            &["--shard", &format!("{k}/3")],
        );
        assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    }
    let m = run_in(
        project.path(),
        &["merge", "shard-1", "shard-2", "shard-3", "-o", "merged"],
    );
    assert_eq!(m.code, 1, "{}{}", m.stdout, m.stderr);
    let merged = rows(&project, "merged");
    assert_eq!(merged.len(), 8);
    let status = |id: &str| merged.iter().find(|r| r["test_id"] == id).unwrap()["status"].clone();
    assert_eq!(status("summary"), "passed");
    assert_eq!(status("skipped"), "error");
    assert_eq!(status("failed"), "error");
}

/// Issue 17.2: a cycle is refused at load with every place in it named; a
/// dependency left out by `--test-id` is refused before anything runs.
#[test]
fn a_dependency_cycle_is_refused_with_its_places() {
    let project = Project::with_mock("Paris");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: a\n    depends_on: [b]\n    input: q\n    assertions: [{type: contains, value: Paris}]\n  - id: b\n    depends_on: [a]\n    input: q\n    assertions: [{type: contains, value: Paris}]\n  - id: c\n    depends_on: [setpu]\n    input: q\n    assertions: [{type: contains, value: Paris}]\n  - id: setup\n    input: q\n    assertions: [{type: contains, value: Paris}]\n",
    );
    let r = run_in(project.path(), &["validate", "EVAL.yaml"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("EVAL.yaml:3:5: error: circular dependency: a → b → a")
            && r.stderr
                .contains("the other `depends_on` in the cycle: `b` at EVAL.yaml:7"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("EVAL.yaml:11:5: error: test `c` depends on `setpu`, but no test of this suite has that id")
            && r.stderr.contains("did you mean `setup`?"),
        "{}",
        r.stderr
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: a, depends_on: [b], input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: b, input: q, assertions: [{type: contains, value: Paris}]}\n",
    );
    let r = run(&project, "out", &["--test-id", "a"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("test `a` depends on `b`, which --test-id/--tag leave out"),
        "{}",
        r.stderr
    );
}

/// Issue 17.8: the suite's `execution.workers` is honoured, and `-j`
/// overrides it.
#[test]
fn execution_workers_is_honoured_and_j_overrides_it() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - name: default\n    provider: cli\n    command: \"echo start >> log.txt; sleep 0.3; echo end >> log.txt; echo ok > {OUTPUT_FILE}\"\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "execution: {workers: 1}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: ok}]}\n  - {id: b, input: q, assertions: [{type: contains, value: ok}]}\n  - {id: c, input: q, assertions: [{type: contains, value: ok}]}\n",
    );
    let overlapped = |project: &Project| {
        let log = std::fs::read_to_string(project.path().join("log.txt")).unwrap();
        std::fs::remove_file(project.path().join("log.txt")).unwrap();
        log.contains("start\nstart")
    };
    let r = run(&project, "one", &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        !r.stderr.contains("workers"),
        "no longer ignored: {}",
        r.stderr
    );
    assert!(!overlapped(&project), "workers: 1 runs one test at a time");
    let r = run(&project, "three", &["-j", "3"]);
    assert_eq!(r.code, 0);
    assert!(overlapped(&project), "-j 3 overrides the suite");
}

/// Issue 17.8: `execution.budget_usd` stops starting tests once the
/// targets' reported cost reaches it; the rest are `budget_exceeded` rows
/// saying how much was spent.
#[test]
fn budget_usd_stops_starting_tests_once_spent() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - name: default\n    provider: cli\n    command: \"echo call >> calls.txt; printf '%s' '{\\\"text\\\": \\\"ok\\\", \\\"cost_usd\\\": 0.6}' > {OUTPUT_FILE}\"\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "execution: {budget_usd: 1.0, workers: 1}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: ok}]}\n  - {id: b, input: q, assertions: [{type: contains, value: ok}]}\n  - {id: c, input: q, assertions: [{type: contains, value: ok}]}\n  - {id: d, input: q, assertions: [{type: contains, value: ok}]}\n",
    );
    let r = run(&project, "out", &[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let all = rows(&project, "out");
    let class: Vec<Value> = all.iter().map(|r| r["failure_class"].clone()).collect();
    assert_eq!(
        class,
        [
            Value::Null,
            Value::Null,
            "budget_exceeded".into(),
            "budget_exceeded".into()
        ]
    );
    assert_eq!(all[2]["error"], "Suite budget exceeded ($1.2000 / $1.0000)");
    let calls = std::fs::read_to_string(project.path().join("calls.txt")).unwrap();
    assert_eq!(calls.lines().count(), 2);
}

#[test]
fn trials_cost_limit_usd_stops_a_tests_trials_once_spent() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - name: default\n    provider: cli\n    command: \"echo {EVAL_ID} >> calls.txt; printf '%s' '{\\\"text\\\": \\\"nope\\\", \\\"cost_usd\\\": 0.4}' > {OUTPUT_FILE}\"\n",
    )
    .unwrap();
    // 5 trials each; at $0.40 a trial, the third reaches $1.00.
    project.write(
        "EVAL.yaml",
        "execution: {trials: {count: 5, strategy: mean, cost_limit_usd: 1.0}, workers: 1}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: ok}]}\n  - {id: b, input: q, assertions: [{type: contains, value: ok}]}\n",
    );
    let r = run(&project, "out", &[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let calls = std::fs::read_to_string(project.path().join("calls.txt")).unwrap();
    assert_eq!(
        calls, "a\na\na\nb\nb\nb\n",
        "each test stops after 3 trials"
    );

    project.write(
        "EVAL.yaml",
        "execution: {trials: {count: 2, cost_limit_usd: -1}}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: ok}]}\n",
    );
    let r = run(&project, "bad", &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("`cost_limit_usd` must be a positive number"),
        "{}",
        r.stderr
    );
}
