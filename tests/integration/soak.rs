//! Concurrency soak: 20,000 cases on 8 workers with a mix of passing,
//! failing and hostile assertions and code graders that start processes.
//! The run must give exactly the expected counts, leave no process behind,
//! and stay within a memory bound (its peak RSS is printed).

use std::os::unix::process::ExitStatusExt as _;

use crate::support::{Project, hostile};

const CASES: usize = 20_000;

/// What case `i` does, and how it must end.
fn case(i: usize, marker: &str) -> (String, &'static str) {
    let id = format!("c{i:05}");
    let (assertions, status) = if i % 500 == 7 {
        // A runaway plugin: stopped at its deadline, an execution error.
        (
            "[{type: loop-forever, limits: {timeout_ms: 50}}]".to_owned(),
            "error",
        )
    } else if i % 100 == 3 {
        ("[{type: panic}]".to_owned(), "error")
    } else if i % 50 == 1 {
        // A code grader: a real process per case.
        (
            format!(
                "[{{type: code-grader, command: [sh, -c, 'echo {marker} >/dev/null; echo \"{{\\\"score\\\": 1}}\"']}}]"
            ),
            "passed",
        )
    } else if i % 10 == 9 {
        ("[{type: contains, value: nope}]".to_owned(), "failed")
    } else if i % 10 == 8 {
        ("[{type: score, score: 7}]".to_owned(), "error")
    } else {
        (
            "[{type: contains, value: soak}, {type: regex, value: '^s'}]".to_owned(),
            "passed",
        )
    };
    (
        format!(
            "{{\"id\": \"{id}\", \"input\": \"q{i}\", \"assertions\": {}}}",
            yaml_to_json(&assertions)
        ),
        status,
    )
}

/// The flow-YAML assertion lists above, as JSON for the cases file.
fn yaml_to_json(flow: &str) -> String {
    let value: serde_json::Value = yaml_serde::from_str(flow).expect("valid flow YAML");
    value.to_string()
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && !cmd.contains("cargo") {
                found.push(format!("{}: {cmd}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

#[test]
fn twenty_thousand_cases_on_eight_workers_count_right_and_leak_nothing() {
    let marker = format!("evalhost-soak-{}", std::process::id());
    let project = Project::with_mock("soak output");
    let mut lines = String::new();
    let mut expected = std::collections::BTreeMap::new();
    for i in 0..CASES {
        let (line, status) = case(i, &marker);
        lines.push_str(&line);
        lines.push('\n');
        *expected.entry(status).or_insert(0usize) += 1;
    }
    project.write("cases.jsonl", &lines);
    project.write(
        "EVAL.yaml",
        &format!(
            "plugins: ['{}']\ntests: ./cases.jsonl\n",
            hostile().display()
        ),
    );
    // Reaped below with wait4, which also gives its peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = crate::support::evalhost()
        .current_dir(project.path())
        .args([
            "run",
            "EVAL.yaml",
            "-o",
            "out",
            "-j",
            "8",
            "--grader-workers",
            "8",
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        // To a file: `-q` still prints every failing test, more than a
        // pipe nobody reads would hold.
        .stderr(std::fs::File::create(project.path().join("stderr.txt")).unwrap())
        .spawn()
        .unwrap();
    // wait4: the exit status and the child's peak RSS.
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `status` and `usage` are valid.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    let code = std::process::ExitStatus::from_raw(status).code();
    let peak_mib = usage.ru_maxrss as f64 / 1024.0;
    eprintln!("soak: {CASES} cases, 8 workers: exit {code:?}, peak RSS {peak_mib:.1} MiB");
    assert_eq!(code, Some(1));

    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["total"], CASES);
    assert_eq!(summary["passed"], expected["passed"]);
    assert_eq!(summary["failed"], expected["failed"]);
    assert_eq!(summary["errors"], expected["error"]);
    let by_class = &summary["failures_by_class"];
    assert_eq!(by_class["plugin_timeout"], CASES / 500);
    assert_eq!(by_class["plugin_trap"], CASES / 100);
    assert_eq!(by_class["plugin_bad_output"], CASES / 10);
    assert_eq!(by_class["assertion"], CASES / 10);
    let mut rows = 0;
    evalhost::results::for_each_row(&project.path().join("out/results.jsonl"), |_| rows += 1)
        .unwrap();
    assert_eq!(rows, CASES);
    let left = processes_with(&marker);
    assert!(left.is_empty(), "processes left behind: {left:?}");
    assert!(peak_mib < 1024.0, "peak RSS {peak_mib:.1} MiB");
}
