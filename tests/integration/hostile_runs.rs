//! Untrusted input beyond the suite file: values that reach a shell through
//! a `cli` target's placeholders, run directories read back by `--resume`
//! and `merge`, shards, caches, and the text that reaches a terminal or a CI
//! log. Each test reproduces an attack that worked before it was closed.

use std::path::{Path, PathBuf};

use crate::support::{evalhost, run_in};

/// An untrusted project (a `.git` marker makes it the project root) and,
/// beside it, the operator's own directory with a trusted targets file.
struct Setup {
    outer: tempfile::TempDir,
}

impl Setup {
    fn new(suite: &str, targets: &str) -> Self {
        let outer = tempfile::tempdir().unwrap();
        let project = outer.path().join("suite");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::write(project.join("EVAL.yaml"), suite).unwrap();
        std::fs::create_dir_all(outer.path().join("operator")).unwrap();
        std::fs::write(outer.path().join("operator/targets.yaml"), targets).unwrap();
        Self { outer }
    }

    fn project(&self) -> PathBuf {
        self.outer.path().join("suite")
    }

    fn targets(&self) -> PathBuf {
        self.outer.path().join("operator/targets.yaml")
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.project().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `evalhost run EVAL.yaml --sandbox strict --targets <operator's> -o out`.
    fn run_strict(&self, extra: &[&str]) -> crate::support::Run {
        let targets = self.targets().display().to_string();
        let mut args = vec![
            "run",
            "EVAL.yaml",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
            "-o",
            "out",
        ];
        args.extend_from_slice(extra);
        run_in(&self.project(), &args)
    }

    fn rows(&self, dir: &str) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.project().join(dir).join("results.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// The operator's `cli` target, as docs/security.md recommends for
/// untrusted suites.
const PRINTF_TARGET: &str = "targets:\n  - name: default\n    provider: cli\n    command: \"printf '%s' {PROMPT} > {OUTPUT_FILE}\"\n    max_retries: 1\n";

fn pwned(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("PWNED"))
        .map(|e| e.path().display().to_string())
        .collect()
}

#[test]
fn a_placeholder_inside_a_prompt_stays_text_and_never_reaches_the_shell() {
    let s = Setup::new(
        concat!(
            "tests:\n",
            "  - id: \"x;touch PWNED-ID;#\"\n",
            "    input: \"quote {EVAL_ID} and {ATTEMPT} and {OUTPUT_FILE} and {FILES}\"\n",
            "    assertions: [{type: contains, value: \"{EVAL_ID}\"}]\n",
            "  - id: files\n",
            "    input:\n",
            "      - role: user\n",
            "        content:\n",
            "          - {type: text, value: \"see {FILES} and {PROMPT_FILE}\"}\n",
            "          - {type: file, value: \"a;touch PWNED-FILE;#.txt\"}\n",
            "    assertions: [{type: contains, value: \"{FILES}\"}]\n",
        ),
        PRINTF_TARGET,
    );
    s.write("a;touch PWNED-FILE;#.txt", "attached\n");
    let r = s.run_strict(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(pwned(s.outer.path()), Vec::<String>::new(), "{}", r.stderr);
    let rows = s.rows("out");
    assert_eq!(
        rows[0]["output"], "quote {EVAL_ID} and {ATTEMPT} and {OUTPUT_FILE} and {FILES}",
        "the prompt reaches the command exactly as written"
    );
    assert!(
        rows[1]["output"]
            .as_str()
            .unwrap()
            .starts_with("see {FILES} and {PROMPT_FILE}"),
        "{}",
        rows[1]["output"]
    );
}

#[test]
fn placeholder_values_are_quoted_where_the_template_puts_them() {
    // {EVAL_ID} and {FILES} used directly in the command: each value is one
    // shell word, whatever characters it holds.
    let s = Setup::new(
        concat!(
            "tests:\n",
            "  - id: \"$(touch PWNED-SUBST)`touch PWNED-TICK`'; touch PWNED-Q; '\"\n",
            "    input:\n",
            "      - role: user\n",
            "        content:\n",
            "          - {type: text, value: hi}\n",
            "          - {type: file, value: \"b$(touch PWNED-F).txt\"}\n",
            "    assertions: [{type: contains, value: PWNED}]\n",
        ),
        "targets:\n  - name: default\n    provider: cli\n    command: \"printf '%s|' {EVAL_ID} {FILES} > {OUTPUT_FILE}\"\n",
    );
    s.write("b$(touch PWNED-F).txt", "attached\n");
    let r = s.run_strict(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(pwned(s.outer.path()), Vec::<String>::new());
    let output = s.rows("out")[0]["output"].as_str().unwrap().to_owned();
    assert!(
        output.starts_with("$(touch PWNED-SUBST)`touch PWNED-TICK`'; touch PWNED-Q; '|"),
        "{output}"
    );
    assert!(output.ends_with("b$(touch PWNED-F).txt|"), "{output}");
}

#[test]
fn placeholders_the_operator_put_inside_quotes_stay_text() {
    // The operator's command quotes the placeholders itself, with double
    // or single quotes; values still cannot end the quote or expand.
    let input = "q $(touch PWNED-P1) `touch PWNED-P2` ' ; touch PWNED-P3 ; ' \\\" $HOME {EVAL_ID}";
    let id = "a$(touch PWNED-I1)`touch PWNED-I2`'\\\";touch PWNED-I3";
    let s = Setup::new(
        &format!(
            "tests:\n  - id: \"{id}\"\n    input: \"{input}\"\n    assertions: [{{type: contains, value: q}}]\n"
        ),
        concat!(
            "targets:\n",
            "  - {name: dq, provider: cli, command: \"printf '%s' \\\"{PROMPT}\\\" > {OUTPUT_FILE}\"}\n",
            "  - {name: dqid, provider: cli, command: \"printf '%s' \\\"id={EVAL_ID}\\\" > {OUTPUT_FILE}\"}\n",
        ),
    );
    let loaded: serde_json::Value = {
        let r = s.run_strict(&["--target", "dq"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        s.rows("out")[0].clone()
    };
    let prompt = loaded["input"][0]["content"].as_str().unwrap().to_owned();
    let test_id = loaded["test_id"].as_str().unwrap().to_owned();
    assert_eq!(loaded["output"], prompt.as_str());
    // Inside single quotes this shell expands nothing: such a command is
    // refused when the targets file is read, naming the key.
    std::fs::write(
        s.targets(),
        "targets:\n  - {name: sq, provider: cli, command: \"printf '%s' '{PROMPT}' > {OUTPUT_FILE}\"}\n",
    )
    .unwrap();
    let r = s.run_strict(&["--target", "sq"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("is inside '…', where the shell expands nothing"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("\"$EVALHOST_PROMPT\""), "{}", r.stderr);
    let (target, expected) = ("dqid", format!("id={test_id}"));
    std::fs::write(
        s.targets(),
        "targets:\n  - {name: dqid, provider: cli, command: \"printf '%s' \\\"id={EVAL_ID}\\\" > {OUTPUT_FILE}\"}\n",
    )
    .unwrap();
    let r = s.run_strict(&["--target", target]);
    assert!(r.code == 0 || r.code == 1, "{target}: {}", r.stderr);
    assert_eq!(s.rows("out")[0]["output"], expected.as_str(), "{target}");
    assert_eq!(pwned(s.outer.path()), Vec::<String>::new());
}

#[test]
fn no_template_shape_lets_a_value_run() {
    // Command substitutions, backquotes, comments holding a quote and
    // heredocs in the operator's command: placeholders are references to
    // variables there, so values are never shell code.
    let templates = [
        r#"printf %s "$(printf %s "{PROMPT}")" > {OUTPUT_FILE}"#,
        r#"printf %s "$(printf %s {PROMPT})" > {OUTPUT_FILE}"#,
        r#"printf %s "`printf %s {PROMPT}`" > {OUTPUT_FILE}"#,
        "# don't\nprintf %s {PROMPT} > {OUTPUT_FILE}",
        "true # say \"hi\nprintf %s {PROMPT} > {OUTPUT_FILE}",
        "cat > {OUTPUT_FILE} <<EOF\n{PROMPT}\nEOF",
        "cat > {OUTPUT_FILE} <<'EOF'\nit's {PROMPT}\nEOF",
        r#"printf %s "$(printf %s id={EVAL_ID})" > {OUTPUT_FILE}"#,
        r#"printf %s "$(printf %s {FILES})" > {OUTPUT_FILE}"#,
        "# user's agent\nprintf %s {FILES} > {OUTPUT_FILE}",
    ];
    let mut targets = String::from("targets:\n");
    for (i, t) in templates.iter().enumerate() {
        targets.push_str(&format!(
            "  - name: t{i}\n    provider: cli\n    max_retries: 0\n    command: {}\n",
            serde_json::to_string(t).unwrap()
        ));
    }
    let s = Setup::new(
        concat!(
            "tests:\n",
            "  - id: \"t;touch PWNED-ID;#\"\n",
            "    input:\n",
            "      - role: user\n",
            "        content:\n",
            "          - {type: text, value: \"x; touch PWNED-P $(touch PWNED-S) `touch PWNED-B`\\nEOF\\ntouch PWNED-H\\n#\"}\n",
            "          - {type: file, value: \"f;touch PWNED-F;.txt\"}\n",
            "    assertions: [{type: contains, value: zzzz}]\n",
        ),
        &targets,
    );
    s.write("f;touch PWNED-F;.txt", "attached\n");
    for (i, template) in templates.iter().enumerate() {
        let target = format!("t{i}");
        let r = s.run_strict(&["--target", &target]);
        let refused = r.code == 2 && r.stderr.contains("where the shell expands nothing");
        assert!(
            r.code == 1 || r.code == 3 || refused,
            "{template}: {}",
            r.stderr
        );
        assert_eq!(pwned(s.outer.path()), Vec::<String>::new(), "{template}");
    }
}

#[test]
fn a_long_prompt_given_by_file_does_not_fill_the_environment() {
    // Only the values a command uses are in its environment: a 200 KB
    // prompt read through {PROMPT_FILE} is not also an environment string.
    let big = "x".repeat(200_000);
    let s = Setup::new(
        &format!(
            "tests:\n  - {{id: t, input: {big}, assertions: [{{type: contains, value: xxx}}]}}\n"
        ),
        "targets:\n  - {name: default, provider: cli, command: \"cat {PROMPT_FILE} > {OUTPUT_FILE}\"}\n",
    );
    let r = s.run_strict(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.rows("out")[0]["output"].as_str().unwrap().len(), 200_000);
}

#[test]
fn a_hook_placeholder_inside_single_quotes_is_refused_at_load() {
    let s = Setup::new(
        "workspace:\n  hooks:\n    before_all: {command: \"sh -c 'echo {{test_id}}'\"}\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: q}]}\n",
        PRINTF_TARGET,
    );
    let r = run_in(&s.project(), &["validate", "EVAL.yaml"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("EVAL.yaml:3:"), "{}", r.stderr);
    assert!(
        r.stderr.contains("\"$EVALHOST_HOOK_TEST_ID\""),
        "{}",
        r.stderr
    );
}

#[test]
fn cli_temp_files_are_private_and_unpredictable() {
    // The command reports where its files are; they live in a fresh 0700
    // directory, and are gone after the call.
    let s = Setup::new(
        "tests:\n  - id: t\n    input: hi\n    assertions: [{type: contains, value: prompt.txt}]\n",
        "targets:\n  - name: default\n    provider: cli\n    command: \"d=$(dirname {PROMPT_FILE}); stat -c '%a %U' \\\"$d\\\" > {OUTPUT_FILE}; echo {PROMPT_FILE} >> {OUTPUT_FILE}\"\n",
    );
    let r = s.run_strict(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let output = s.rows("out")[0]["output"].as_str().unwrap().to_owned();
    let mut lines = output.lines();
    assert!(lines.next().unwrap().starts_with("700 "), "{output}");
    let prompt = PathBuf::from(lines.next().unwrap());
    assert!(!prompt.exists(), "{} was left behind", prompt.display());
    let dir = prompt
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy();
    assert!(dir.starts_with("evalhost-t-"), "{dir}");
    assert!(dir.len() > "evalhost-t-".len() + 4, "{dir}");
}

// ---------------------------------------------------------------------------
// 2. `--resume DIR` treats run.json as untrusted input.

/// A project with a mock target, run once into `out/`; returns it.
fn finished_run() -> crate::support::Project {
    let project = crate::support::Project::with_mock("Paris");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: b, input: q, assertions: [{type: contains, value: Rome}]}\n",
    );
    let r = project.run(&[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    project
}

fn edit_record(project: &crate::support::Project, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = project.path().join("out/run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut record);
    std::fs::write(&path, record.to_string()).unwrap();
    // Resume must have something left to do.
    let results = project.path().join("out/results.jsonl");
    let text = std::fs::read_to_string(&results).unwrap();
    std::fs::write(&results, text.lines().next().unwrap().to_owned() + "\n").unwrap();
}

#[test]
fn resume_checks_every_field_of_run_json_as_the_command_line_would() {
    for (field, value, needle) in [
        (
            "threshold",
            serde_json::json!(-1),
            "`threshold` must be between 0 and 1",
        ),
        (
            "repeat",
            serde_json::json!(4294967295u64),
            "`repeat` must be between 1 and 1000",
        ),
        ("shard", serde_json::json!("5/3"), "`shard`"),
        (
            "eval",
            serde_json::json!("../../elsewhere/EVAL.yaml"),
            "`eval` must be an absolute path",
        ),
        (
            "targets",
            serde_json::json!(["x\u{1b}]0;t\u{7}"]),
            "is not a target name",
        ),
    ] {
        let project = finished_run();
        edit_record(&project, |r| r[field] = value.clone());
        let r = run_in(project.path(), &["run", "--resume", "out"]);
        assert_eq!(r.code, 2, "{field}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{field}: {}", r.stderr);
        assert!(!r.stderr.contains('\u{1b}'), "{}", r.stderr);
    }
    // The eval file named with --resume must be the run's.
    let project = finished_run();
    project.write(
        "OTHER.yaml",
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    let r = run_in(project.path(), &["run", "OTHER.yaml", "--resume", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("was started with"), "{}", r.stderr);
    // Unchanged, it resumes.
    let r = run_in(project.path(), &["run", "--resume", "out"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
}

#[test]
fn under_strict_resume_takes_no_targets_file_and_no_eval_from_run_json() {
    // The suite ships its own targets file with a command, and a run
    // directory whose run.json names it as if the operator had.
    let s = Setup::new(
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: q}]}\n  - {id: b, input: q, assertions: [{type: contains, value: q}]}\n",
        PRINTF_TARGET,
    );
    // The operator's run directory, outside the untrusted project.
    let targets = s.targets().display().to_string();
    let r = run_in(
        &s.project(),
        &[
            "run",
            "EVAL.yaml",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
            "-o",
            "../runs",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    s.write(
        "own-targets.yaml",
        "targets:\n  - name: default\n    provider: cli\n    command: \"touch PWNED-RESUME; echo ${{ SECRET_FOR_TEST }} > {OUTPUT_FILE}\"\n",
    );
    let path = s.outer.path().join("runs/run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["targets_file"] = s
        .project()
        .join("own-targets.yaml")
        .display()
        .to_string()
        .into();
    std::fs::write(&path, record.to_string()).unwrap();
    let results = s.outer.path().join("runs/results.jsonl");
    let first = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(&results, first + "\n").unwrap();
    let resume = |args: &[&str]| {
        evalhost()
            .current_dir(s.project())
            .env("SECRET_FOR_TEST", "TOPSECRET")
            .args(args)
            .output()
            .unwrap()
    };
    let r: crate::support::Run =
        resume(&["run", "--resume", "../runs", "--sandbox", "strict"]).into();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("takes the eval file from the command line"),
        "{}",
        r.stderr
    );
    let r: crate::support::Run = resume(&[
        "run",
        "EVAL.yaml",
        "--resume",
        "../runs",
        "--sandbox",
        "strict",
    ])
    .into();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("pass --targets again"), "{}", r.stderr);
    assert_eq!(pwned(s.outer.path()), Vec::<String>::new());
    // Naming the operator's file does not resume a run.json that names
    // another: they must agree.
    let r: crate::support::Run = resume(&[
        "run",
        "EVAL.yaml",
        "--resume",
        "../runs",
        "--sandbox",
        "strict",
        "--targets",
        &targets,
    ])
    .into();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(pwned(s.outer.path()), Vec::<String>::new());
    record["targets_file"] = s.targets().display().to_string().into();
    std::fs::write(&path, record.to_string()).unwrap();
    // With the operator's file named again, it resumes with that file.
    let r: crate::support::Run = resume(&[
        "run",
        "EVAL.yaml",
        "--resume",
        "../runs",
        "--sandbox",
        "strict",
        "--targets",
        &targets,
    ])
    .into();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(pwned(s.outer.path()), Vec::<String>::new());
    assert!(
        !std::fs::read_to_string(&results)
            .unwrap()
            .contains("TOPSECRET")
    );
}

/// A run of three tests (b fails) into `../runs`, outside the untrusted
/// project, under `--sandbox strict` with the operator's targets file.
fn strict_run() -> (Setup, String) {
    let s = Setup::new(
        concat!(
            "tests:\n",
            "  - {id: a, input: hello, assertions: [{type: contains, value: hello}]}\n",
            "  - {id: b, input: hello, assertions: [{type: contains, value: goodbye}]}\n",
            "  - {id: c, input: hello, assertions: [{type: contains, value: hello}]}\n",
        ),
        PRINTF_TARGET,
    );
    let targets = s.targets().display().to_string();
    let r = run_in(
        &s.project(),
        &[
            "run",
            "EVAL.yaml",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
            "-o",
            "../runs",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    (s, targets)
}

/// Keeps only the first `n` rows of `dir/results.jsonl` and applies `edit`
/// to `dir/run.json` and to each kept row.
fn tamper(
    dir: &Path,
    n: usize,
    edit_record: impl FnOnce(&mut serde_json::Value),
    mut edit_row: impl FnMut(&mut serde_json::Value),
) {
    let path = dir.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit_record(&mut record);
    std::fs::write(&path, record.to_string()).unwrap();
    let results = dir.join("results.jsonl");
    let kept: String = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .take(n)
        .map(|l| {
            let mut row: serde_json::Value = serde_json::from_str(l).unwrap();
            edit_row(&mut row);
            format!("{row}\n")
        })
        .collect();
    std::fs::write(&results, kept).unwrap();
}

#[test]
fn strict_resume_cannot_narrow_the_plan_or_lower_the_threshold() {
    type Edit = fn(&mut serde_json::Value);
    let cases: [(Edit, &str); 5] = [
        (|r| r["threshold"] = 0.0.into(), "`threshold`"),
        (
            |r| r["test_ids"] = serde_json::json!(["a", "c"]),
            "`test_ids`",
        ),
        (|r| r["shard"] = "1/2".into(), "`shard`"),
        (
            |r| r["only"] = serde_json::json!(["a", "c"]),
            "restricts the run",
        ),
        (|r| r["targets"] = serde_json::json!(["other"]), "`targets`"),
    ];
    for (edit, needle) in cases {
        let (s, targets) = strict_run();
        tamper(&s.outer.path().join("runs"), 1, edit, |_| {});
        let r = run_in(
            &s.project(),
            &[
                "run",
                "EVAL.yaml",
                "--resume",
                "../runs",
                "--sandbox",
                "strict",
                "--targets",
                &targets,
            ],
        );
        assert_eq!(r.code, 2, "{needle}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }
    // Untampered, it resumes and b still fails.
    let (s, targets) = strict_run();
    tamper(&s.outer.path().join("runs"), 1, |_| {}, |_| {});
    let r = run_in(
        &s.project(),
        &[
            "run",
            "EVAL.yaml",
            "--resume",
            "../runs",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    // A run directory inside the untrusted project is not read back at all.
    let r = run_in(
        &s.project(),
        &[
            "run",
            "EVAL.yaml",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
            "-o",
            "inside",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    for args in [
        &[
            "run",
            "EVAL.yaml",
            "--resume",
            "inside",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
        ][..],
        &[
            "run",
            "EVAL.yaml",
            "--rerun-failed",
            "inside",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
        ][..],
        &[
            "regrade",
            "inside",
            "--eval",
            "EVAL.yaml",
            "--sandbox",
            "strict",
        ][..],
    ] {
        let r = run_in(&s.project(), args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("inside the suite's project"),
            "{args:?}: {}",
            r.stderr
        );
    }
}

#[test]
fn resume_refuses_rows_that_disagree_with_the_suite() {
    type Edit = fn(&mut serde_json::Value);
    let forged: [(Edit, &str); 4] = [
        // b is not expected to fail in the suite.
        (
            |r| {
                if r["test_id"] == "b" {
                    r["expected_fail"] = true.into();
                    r["status"] = "expected-failed".into();
                }
            },
            "expected_fail",
        ),
        // b's threshold is the default 0.8, not 0.
        (
            |r| {
                if r["test_id"] == "b" {
                    r["threshold"] = 0.0.into();
                    r["status"] = "passed".into();
                    r["execution_status"] = "ok".into();
                    r.as_object_mut().unwrap().remove("failure_class");
                }
            },
            "threshold",
        ),
        // b's score is not the mean of its assertion scores.
        (
            |r| {
                if r["test_id"] == "b" {
                    r["score"] = 1.0.into();
                    r["status"] = "passed".into();
                    r["execution_status"] = "ok".into();
                    r.as_object_mut().unwrap().remove("failure_class");
                }
            },
            "score",
        ),
        // b's scores are not its assertions.
        (
            |r| {
                if r["test_id"] == "b" {
                    r["scores"][0]["name"] = "something-else".into();
                }
            },
            "names",
        ),
    ];
    for (edit, what) in forged {
        let (s, targets) = strict_run();
        tamper(&s.outer.path().join("runs"), 2, |_| {}, edit);
        for strict in [false, true] {
            let mut args = vec![
                "run",
                "EVAL.yaml",
                "--resume",
                "../runs",
                "--targets",
                &targets,
            ];
            if strict {
                args.extend(["--sandbox", "strict"]);
            }
            let r = run_in(&s.project(), &args);
            assert_eq!(r.code, 2, "{what} strict={strict}: {}", r.stderr);
            assert!(
                r.stderr.contains("could not have written"),
                "{what}: {}",
                r.stderr
            );
        }
    }
}

#[test]
fn trial_rows_cannot_change_how_trials_combine() {
    // Three trials of a test combined by `mean` (one passes, two fail): a
    // row claiming `pass_at_k`, or no strategy, is refused on resume and in
    // merge.
    let s = Setup::new(
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: hello}]}\n  - {id: b, input: q, assertions: [{type: contains, value: hello}]}\n",
        "targets:\n  - {name: default, provider: cli, command: \"if [ -f ../first ]; then echo bye; else touch ../first; echo hello; fi > {OUTPUT_FILE}\"}\n",
    );
    let targets = s.targets().display().to_string();
    let r = run_in(
        &s.project(),
        &[
            "run",
            "EVAL.yaml",
            "--targets",
            &targets,
            "--repeat",
            "3",
            "-j",
            "1",
            "-o",
            "../runs",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    for forged in [serde_json::json!("pass_at_k"), serde_json::Value::Null] {
        let dir = s.outer.path().join("runs-copy");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["run.json", "results.jsonl"] {
            std::fs::copy(s.outer.path().join("runs").join(f), dir.join(f)).unwrap();
        }
        tamper(
            &dir,
            2,
            |_| {},
            |row| {
                if forged.is_null() {
                    row.as_object_mut().unwrap().remove("strategy");
                } else {
                    row["strategy"] = forged.clone();
                }
            },
        );
        let r = run_in(
            &s.project(),
            &[
                "run",
                "EVAL.yaml",
                "--targets",
                &targets,
                "--repeat",
                "3",
                "-j",
                "1",
                "--resume",
                "../runs-copy",
            ],
        );
        assert_eq!(r.code, 2, "{forged}: {}", r.stderr);
        assert!(r.stderr.contains("could not have written"), "{}", r.stderr);
        let r = run_in(&s.project(), &["merge", "../runs-copy", "-o", "../merged"]);
        assert_eq!(r.code, 2, "{forged}: {}", r.stderr);
        assert!(r.stderr.contains("trials combine"), "{}", r.stderr);
    }
}

#[test]
fn a_submodule_does_not_move_the_strict_project_boundary() {
    // The suite lives in a submodule (`sub/.git` is a file) of the
    // untrusted checkout: a run directory elsewhere in that checkout is
    // still inside the project.
    let s = Setup::new(
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: q}]}\n",
        PRINTF_TARGET,
    );
    let sub = s.project().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/sub\n").unwrap();
    std::fs::copy(s.project().join("EVAL.yaml"), sub.join("EVAL.yaml")).unwrap();
    let targets = s.targets().display().to_string();
    let r = run_in(
        &sub,
        &[
            "run",
            "EVAL.yaml",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
            "-o",
            "../runs/x",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run_in(
        &sub,
        &[
            "run",
            "EVAL.yaml",
            "--resume",
            "../runs/x",
            "--sandbox",
            "strict",
            "--targets",
            &targets,
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("inside the suite's project"),
        "{}",
        r.stderr
    );
}

#[test]
fn run_json_cannot_point_resume_or_regrade_at_files_it_brought() {
    // A run directory that carries its own suite (with a hook) and targets
    // file (with a command), named by its run.json: nothing of it runs.
    let project = finished_run();
    let evil = project.path().join("out");
    std::fs::write(
        evil.join("EVAL.yaml"),
        "workspace: {hooks: {before_all: {command: \"touch PWNED-HOOK\"}}}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: hello}]}\n",
    )
    .unwrap();
    std::fs::write(
        evil.join("t.yaml"),
        "targets:\n  - {name: default, provider: cli, command: \"touch PWNED-CLI; echo hello > {OUTPUT_FILE}\"}\n",
    )
    .unwrap();
    let path = evil.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["eval"] = evil.join("EVAL.yaml").display().to_string().into();
    std::fs::write(&path, record.to_string()).unwrap();
    for args in [
        &["run", "--resume", "out"][..],
        &["regrade", "out", "-o", "rg"][..],
    ] {
        let r = run_in(project.path(), args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("inside the run directory"),
            "{}",
            r.stderr
        );
    }
    record["eval"] = project
        .path()
        .join("EVAL.yaml")
        .display()
        .to_string()
        .into();
    record["targets_file"] = evil.join("t.yaml").display().to_string().into();
    std::fs::write(&path, record.to_string()).unwrap();
    let r = run_in(project.path(), &["run", "--resume", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("inside the run directory"),
        "{}",
        r.stderr
    );
    assert_eq!(pwned(project.path()), Vec::<String>::new());
    // A targets file that is /dev/zero or a FIFO is refused, not read.
    for special in ["/dev/zero", "fifo"] {
        let target = if special == "fifo" {
            let fifo = project.path().join("targets.fifo");
            let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            fifo.display().to_string()
        } else {
            special.to_owned()
        };
        record["targets_file"] = target.into();
        std::fs::write(&path, record.to_string()).unwrap();
        let r = run_in(project.path(), &["run", "--resume", "out"]);
        assert_eq!(r.code, 2, "{special}: {}", r.stderr);
        assert!(
            r.stderr.contains("is not a regular file"),
            "{special}: {}",
            r.stderr
        );
    }
}

#[test]
fn resume_never_writes_through_a_hard_link() {
    let project = finished_run();
    let victim = project.path().join("victim.txt");
    std::fs::write(&victim, "keep1\nkeep2\nIMPORTANT-no-newline").unwrap();
    let results = project.path().join("out/results.jsonl");
    std::fs::remove_file(&results).unwrap();
    std::fs::hard_link(&victim, &results).unwrap();
    let r = run_in(project.path(), &["run", "--resume", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("hard links"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "keep1\nkeep2\nIMPORTANT-no-newline"
    );
}

#[test]
fn a_suite_cannot_lift_the_plugin_deadline_or_memory_cap() {
    for (limits, needle) in [
        (
            "{timeout_ms: 18446744073709551615}",
            "`timeout_ms` can be at most 600000 ms",
        ),
        (
            "{memory_mb: 18446744073709551615}",
            "`memory_mb` can be at most 4096 MiB",
        ),
    ] {
        let s = Setup::new(
            &format!(
                "tests:\n  - {{id: a, input: q, assertions: [{{type: contains, value: q, limits: {limits}}}]}}\n"
            ),
            PRINTF_TARGET,
        );
        let r = run_in(&s.project(), &["validate", "EVAL.yaml"]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains(needle), "{}", r.stderr);
    }
    // Under strict, not above the defaults.
    let s = Setup::new(
        "execution:\n  limits: {timeout_ms: 60000}\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: q}]}\n",
        PRINTF_TARGET,
    );
    let r = s.run_strict(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("at most at the defaults"), "{}", r.stderr);
}

#[test]
fn a_relative_targets_file_is_recorded_absolute() {
    let s = Setup::new(
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: q}]}\n  - {id: b, input: q, assertions: [{type: contains, value: q}]}\n",
        PRINTF_TARGET,
    );
    for k in 1..=2 {
        let shard = format!("{k}/2");
        let out = format!("s{k}");
        let r = run_in(
            &s.project(),
            &[
                "run",
                "EVAL.yaml",
                "--targets",
                "../operator/targets.yaml",
                "--shard",
                &shard,
                "-o",
                &out,
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let r = run_in(&s.project(), &["merge", "s1", "s2", "-o", "merged"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn resume_refuses_rows_an_honest_run_could_not_have_written() {
    let project = finished_run();
    let results = project.path().join("out/results.jsonl");
    let text = std::fs::read_to_string(&results).unwrap();
    let mut row: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    // Test b failed; a forged row says it passed with a score out of range.
    row["status"] = "passed".into();
    row["execution_status"] = "ok".into();
    row["score"] = 7.into();
    std::fs::write(
        &results,
        format!("{}\n{row}\n", text.lines().next().unwrap()),
    )
    .unwrap();
    let r = run_in(project.path(), &["run", "--resume", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("could not have written"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------
// 3. Run-directory files are never written through links.

#[test]
fn resume_and_merge_never_write_through_links() {
    let project = finished_run();
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let out = project.path().join("out");
    for name in [
        "summary.json",
        "report.html",
        "results.jsonl.tmp",
        "run.json.tmp",
    ] {
        let _ = std::fs::remove_file(out.join(name));
        std::os::unix::fs::symlink(&victim, out.join(name)).unwrap();
    }
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    std::fs::write(
        out.join("results.jsonl"),
        text.lines().next().unwrap().to_owned() + "\n",
    )
    .unwrap();
    let r = run_in(project.path(), &["run", "--resume", "out"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    for name in ["summary.json", "report.html"] {
        assert!(
            !std::fs::symlink_metadata(out.join(name))
                .unwrap()
                .is_symlink(),
            "{name} replaced, not followed"
        );
    }
    // results.jsonl itself a link: refused, not truncated or appended to.
    std::fs::remove_file(out.join("results.jsonl")).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("results.jsonl")).unwrap();
    let r = run_in(project.path(), &["run", "--resume", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("symbolic link"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    // merge -o into a prepared directory.
    let project = finished_run();
    let merged = project.path().join("merged");
    std::fs::create_dir_all(&merged).unwrap();
    for name in ["results.jsonl", "summary.json", "report.html"] {
        std::os::unix::fs::symlink(&victim, merged.join(name)).unwrap();
    }
    let r = run_in(project.path(), &["merge", "out", "-o", "merged"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_to_string(merged.join("results.jsonl"))
            .unwrap()
            .lines()
            .count(),
        2
    );
}

#[test]
fn a_run_directory_under_a_link_inside_the_project_is_refused() {
    let project = crate::support::Project::with_mock("Paris");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: Paris}]}\n",
    );
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), project.path().join(".evalhost/runs")).unwrap();
    let r = run_in(project.path(), &["run", "EVAL.yaml"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is a symbolic link"), "{}", r.stderr);
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    std::os::unix::fs::symlink(elsewhere.path(), project.path().join("out")).unwrap();
    let r = run_in(project.path(), &["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------
// 4. `merge` trusts no shard.

/// Six tests, two failing, run as three shards into shard1..shard3.
fn sharded() -> crate::support::Project {
    let project = crate::support::Project::with_mock("ok");
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    let mut body = String::from("tests:\n");
    for i in 0..6 {
        let check = if i % 3 == 0 { "nope" } else { "ok" };
        body.push_str(&format!(
            "  - {{id: m{i}, input: q, assertions: [{{type: contains, value: {check}}}]}}\n"
        ));
    }
    project.write("EVAL.yaml", &body);
    for k in 1..=3 {
        let out = format!("shard{k}");
        let shard = format!("{k}/3");
        let r = run_in(
            project.path(),
            &["run", "EVAL.yaml", "-o", &out, "--shard", &shard],
        );
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    }
    project
}

fn shard_rows(project: &crate::support::Project, k: u32) -> Vec<serde_json::Value> {
    std::fs::read_to_string(project.path().join(format!("shard{k}/results.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_rows(project: &crate::support::Project, k: u32, rows: &[serde_json::Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(project.path().join(format!("shard{k}/results.jsonl")), text).unwrap();
}

fn merge(project: &crate::support::Project, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["merge", "shard1", "shard2", "shard3", "-o", "merged"];
    args.extend_from_slice(extra);
    run_in(project.path(), &args)
}

#[test]
fn merge_refuses_rows_outside_their_shard_and_extra_trials() {
    let project = sharded();
    assert_eq!(merge(&project, &[]).code, 1, "two tests fail honestly");
    // Shard 2 adds passing trial-2 rows for the failing tests of shard 1.
    let mut rows = shard_rows(&project, 2);
    for mut forged in shard_rows(&project, 1) {
        forged["trial"] = 2.into();
        forged["trials"] = 2.into();
        forged["status"] = "passed".into();
        forged["execution_status"] = "ok".into();
        forged["score"] = 1.0.into();
        rows.push(forged);
    }
    write_rows(&project, 2, &rows);
    let r = merge(&project, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("refused shard2"), "{}", r.stderr);
    assert!(r.stderr.contains("belongs to shard 1/3"), "{}", r.stderr);
    assert!(
        !project.path().join("merged/results.jsonl").exists() || {
            // A merged directory from the honest merge above is left as it was.
            std::fs::read_to_string(project.path().join("merged/results.jsonl"))
                .unwrap()
                .lines()
                .count()
                == 6
        }
    );
    // A second trial of its own test: the run planned one.
    let project = sharded();
    let mut rows = shard_rows(&project, 1);
    let mut extra = rows[0].clone();
    extra["trial"] = 2.into();
    rows.push(extra);
    write_rows(&project, 1, &rows);
    let r = merge(&project, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("planned 1 trial(s)"), "{}", r.stderr);
}

#[test]
fn merge_refuses_impossible_scores_statuses_and_forged_digests() {
    type Forge = fn(&mut serde_json::Value);
    let cases: [(Forge, &str); 5] = [
        (|r| r["score"] = 7.into(), "outside [0, 1]"),
        (|r| r["threshold"] = (-1).into(), "threshold -1"),
        (
            |r| r["scores"][0]["score"] = (-0.5).into(),
            "outside [0, 1]",
        ),
        (
            |r| {
                r["status"] = "passed".into();
                r["execution_status"] = "ok".into();
            },
            "does not follow from",
        ),
        (
            |r| r["scores"][0]["plugin_digest"] = "f".repeat(64).into(),
            "digest",
        ),
    ];
    for (forge, needle) in cases {
        let project = sharded();
        let mut rows = shard_rows(&project, 1);
        // m0 fails honestly: forge its row.
        forge(&mut rows[0]);
        write_rows(&project, 1, &rows);
        let r = merge(&project, &[]);
        assert_eq!(r.code, 2, "{needle}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
        assert!(
            r.stderr.contains("shard1"),
            "names the directory: {}",
            r.stderr
        );
    }
}

#[test]
fn merge_refuses_incomplete_repeated_and_unbounded_shards() {
    let project = sharded();
    let r = run_in(
        project.path(),
        &["merge", "shard1", "shard3", "-o", "merged"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("shard(s) 2 of 3 missing"), "{}", r.stderr);
    let r = run_in(
        project.path(),
        &[
            "merge",
            "shard1",
            "shard3",
            "-o",
            "merged",
            "--allow-partial",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("merged/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["missing_shards"], serde_json::json!([2]));
    assert_eq!(summary["not_run"], 2, "{summary}");
    let r = run_in(
        project.path(),
        &["merge", "shard1", "shard1", "shard2", "-o", "merged"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("appears twice"), "{}", r.stderr);
    // results.jsonl as a link to /dev/zero: refused at once, not read.
    let results = project.path().join("shard2/results.jsonl");
    std::fs::remove_file(&results).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &results).unwrap();
    let r = merge(&project, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("symbolic link"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------
// 5. The response cache keys by everything that decides an answer.

#[test]
fn an_untrusted_run_cannot_plant_a_cached_answer_for_another_project() {
    let cache = tempfile::tempdir().unwrap();
    let suite =
        "tests:\n  - {id: t, input: question, assertions: [{type: contains, value: RIGHT}]}\n";
    let targets = "targets:\n  - name: default\n    provider: cli\n    command: \"./agent.sh > {OUTPUT_FILE}\"\n";
    // The victim's agent answers WRONG; the attacker's answers RIGHT.
    let victim = Setup::new(suite, targets);
    let attacker = Setup::new(suite, targets);
    for (s, answer) in [(&victim, "WRONG"), (&attacker, "RIGHT")] {
        let agent = s.write("agent.sh", &format!("#!/bin/sh\necho {answer}\n"));
        std::os::unix::fs::PermissionsExt::set_mode(
            &mut std::fs::metadata(&agent).unwrap().permissions(),
            0o755,
        );
        std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    let run = |s: &Setup, strict: bool| -> crate::support::Run {
        let targets = s.targets().display().to_string();
        let mut args = vec![
            "run",
            "EVAL.yaml",
            "--cache",
            "--targets",
            &targets,
            "-o",
            "out",
        ];
        if strict {
            args.extend(["--sandbox", "strict"]);
        }
        evalhost()
            .current_dir(s.project())
            .env("EVALHOST_CACHE_DIR", cache.path())
            .env(
                "EVALHOST_COMPILE_CACHE_DIR",
                crate::support::shared_compile_cache(),
            )
            .args(&args)
            .output()
            .unwrap()
            .into()
    };
    assert_eq!(run(&attacker, true).code, 0);
    assert_eq!(run(&attacker, false).code, 0);
    let r = run(&victim, false);
    assert_eq!(
        r.code, 1,
        "the victim's failing test still fails: {}",
        r.stderr
    );
    let row = &victim.rows("out")[0];
    assert_eq!(row["output"], "WRONG\n");
    assert!(row.get("cached").is_none(), "{row}");
    // The victim's own second run does come from the cache.
    let _ = run(&victim, false);
    assert_eq!(victim.rows("out")[0]["cached"], true);
}

#[test]
fn a_fallback_answer_is_never_cached_as_the_primary_s() {
    let cache = tempfile::tempdir().unwrap();
    let s = Setup::new(
        "tests:\n  - {id: t, input: q, assertions: [{type: contains, value: PRIMARY}]}\n",
        "targets:\n  - name: default\n    provider: cli\n    command: \"test -f primary-up && echo PRIMARY > {OUTPUT_FILE}\"\n    max_retries: 0\n    fallback_targets: [backup]\n  - name: backup\n    provider: mock\n    response: FALLBACK\n",
    );
    let run = || -> crate::support::Run {
        let targets = s.targets().display().to_string();
        evalhost()
            .current_dir(s.project())
            .env("EVALHOST_CACHE_DIR", cache.path())
            .args([
                "run",
                "EVAL.yaml",
                "--cache",
                "--targets",
                &targets,
                "-o",
                "out",
            ])
            .output()
            .unwrap()
            .into()
    };
    let r = run();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(s.rows("out")[0]["output"], "FALLBACK");
    s.write("primary-up", "");
    let r = run();
    assert_eq!(
        r.code, 0,
        "the primary is asked, not the fallback's cached answer: {}",
        r.stderr
    );
    assert_eq!(s.rows("out")[0]["output"], "PRIMARY\n");
}

#[test]
fn cache_clear_clears_the_judge_cache_too() {
    let cache = tempfile::tempdir().unwrap();
    for sub in ["responses", "judge", "components"] {
        std::fs::create_dir_all(cache.path().join(sub)).unwrap();
        std::fs::write(cache.path().join(sub).join("x.json"), "{}").unwrap();
    }
    let out = evalhost()
        .env("EVALHOST_CACHE_DIR", cache.path())
        .args(["cache", "clear"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("removed 1 judge answer(s)"), "{stderr}");
    for sub in ["responses", "judge", "components"] {
        assert_eq!(
            std::fs::read_dir(cache.path().join(sub)).unwrap().count(),
            0,
            "{sub}"
        );
    }
}

// ---------------------------------------------------------------------------
// 6. Nothing untrusted drives the terminal or the CI log.

fn assert_inert(what: &str, text: &str) {
    for bad in ['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}'] {
        assert!(!text.contains(bad), "{what} holds {bad:?}:\n{text}");
    }
    for line in text.lines() {
        let trimmed = line.trim_start();
        assert!(
            !trimmed.starts_with("::") || trimmed.starts_with("::error "),
            "{what} has a workflow command line: {line:?}"
        );
    }
}

#[test]
fn escapes_and_workflow_commands_are_inert_in_every_printer() {
    let esc = "\\e]52;c;cHduZWQ=\\a\\e[8mhidden\\r\\n::stop-commands::evil";
    let suite = format!(
        concat!(
            "name: \"suite{esc}\"\n",
            "plugins: [hostile.wasm]\n",
            "tests:\n",
            "  - id: \"id{esc}\"\n",
            "    input: q\n",
            "    assertions:\n",
            "      - {{name: \"name{esc}\", type: contains, value: \"nope{esc}\"}}\n",
            "      - {{type: escapes}}\n",
            "  - id: cli-stderr\n",
            "    input: q\n",
            "    assertions: [{{type: contains, value: x}}]\n",
        ),
        esc = esc
    );
    let s = Setup::new(
        &suite,
        "targets:\n  - name: default\n    provider: cli\n    command: \"sh ./agent.sh {EVAL_ID} {OUTPUT_FILE}\"\n    max_retries: 0\n",
    );
    s.write(
        "agent.sh",
        concat!(
            "printf 'OUT\\033]0;title\\007\\r\\n::add-mask::x\\n' > \"$2\"\n",
            "[ \"$1\" = cli-stderr ] || exit 0\n",
            "printf 'ERR\\033]52;c;Zm9v\\007\\n::error::forged\\n### all passed <!--' >&2\n",
            "exit 3\n",
        ),
    );
    std::fs::copy(crate::support::hostile(), s.project().join("hostile.wasm")).unwrap();
    let summary_md = s.outer.path().join("step-summary.md");
    let targets = s.targets().display().to_string();
    let out = evalhost()
        .current_dir(s.project())
        .env("GITHUB_STEP_SUMMARY", &summary_md)
        .args([
            "run",
            "EVAL.yaml",
            "--targets",
            &targets,
            "-o",
            "out",
            "--reporter",
            "github",
            "--junit",
            "junit.xml",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("ESC-TEXT"),
        "the hostile check text is shown: {stdout}"
    );
    assert!(
        stdout.contains("ERR\\u{1b}]52"),
        "the cli stderr is shown, escaped: {stdout}"
    );
    assert_inert("stderr", &stderr);
    assert_inert("stdout", &stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("::error ")).count(),
        2
    );
    let md = std::fs::read_to_string(&summary_md).unwrap();
    assert_inert("step summary", &md);
    assert!(!md.contains("<!--"), "{md}");
    assert_eq!(md.lines().filter(|l| l.starts_with('#')).count(), 1, "{md}");
    let junit = std::fs::read_to_string(s.project().join("junit.xml")).unwrap();
    assert_inert("junit", &junit);
    // The description of a plugin, printed by `plugin inspect`.
    let r = run_in(&s.project(), &["plugin", "inspect", "hostile.wasm"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("ESC-TEXT"), "{}", r.stdout);
    assert_inert("plugin inspect", &r.stdout);
    let r = run_in(
        &s.project(),
        &["plugin", "inspect", "--json", "hostile.wasm"],
    );
    assert_inert("plugin inspect --json", &r.stdout);
    let _: serde_json::Value = serde_json::from_str(&r.stdout).expect("still JSON");
    // Merged rows, printed again by merge.
    let r = run_in(&s.project(), &["merge", "out", "-o", "merged"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_inert("merge", &r.stderr);
}

#[test]
fn endpoint_error_bodies_are_inert() {
    // The body raw, not JSON-escaped: what a hostile endpoint would send.
    let server = crate::support::FakeServer::start(vec![crate::support::Reply {
        status: 400,
        headers: Vec::new(),
        body: "bad\u{1b}]0;owned\u{7}\r\n::add-mask::x\u{9b}\u{202e}".into(),
        delay: std::time::Duration::ZERO,
    }]);
    let s = Setup::new(
        "tests:\n  - {id: t, input: q, assertions: [{type: contains, value: x}]}\n",
        &format!(
            "targets:\n  - name: default\n    provider: openai\n    base_url: {}\n    model: m\n    max_retries: 0\n",
            server.url
        ),
    );
    let targets = s.targets().display().to_string();
    let r = run_in(
        &s.project(),
        &["run", "EVAL.yaml", "--targets", &targets, "-o", "out"],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.contains("bad\\u{1b}]0;owned"), "{}", r.stdout);
    assert_inert("stderr", &r.stderr);
    assert_inert("stdout", &r.stdout);
}

// ---------------------------------------------------------------------------
// 7. The compile cache runs only native code this user's evalhost wrote.

fn run_with_cache(
    project: &crate::support::Project,
    cache: &Path,
    args: &[&str],
) -> crate::support::Run {
    evalhost()
        .current_dir(project.path())
        .env("EVALHOST_CACHE_DIR", cache)
        .args(args)
        .output()
        .unwrap()
        .into()
}

#[test]
fn a_swapped_or_tampered_compiled_plugin_is_never_loaded() {
    let project = crate::support::Project::with_mock("Paris");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: a\n    input: q\n    assertions: [{type: contains, value: Paris}, {type: regex, value: '^P.r'}]\n",
    );
    let cache = tempfile::tempdir().unwrap();
    let r = run_with_cache(&project, cache.path(), &["run", "EVAL.yaml", "-o", "one"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Swap two artifacts (each a valid wasmtime artifact, for the wrong
    // component), and flip a byte of a third. A command that finds them
    // compiles again and stores good entries, so tamper before each.
    let tamper = || {
        // The compiled artifacts. Beside them each plugin's list of types
        // is removed, so that every built-in loads (a run otherwise loads
        // only the two this suite uses; a tampered list is
        // `compile_cache`'s test).
        for e in std::fs::read_dir(cache.path().join("components")).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|e| e == "types") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(cache.path().join("components"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
            .collect();
        entries.sort();
        assert!(entries.len() >= 3, "{entries:?}");
        let (a, b) = (
            std::fs::read(&entries[0]).unwrap(),
            std::fs::read(&entries[1]).unwrap(),
        );
        std::fs::write(&entries[0], &b).unwrap();
        std::fs::write(&entries[1], &a).unwrap();
        let mut c = std::fs::read(&entries[2]).unwrap();
        let mid = c.len() / 2;
        c[mid] ^= 0x55;
        std::fs::write(&entries[2], &c).unwrap();
    };
    for args in [
        &["validate", "EVAL.yaml"][..],
        &["run", "EVAL.yaml", "-o", "two"][..],
    ] {
        tamper();
        let r = run_with_cache(&project, cache.path(), args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert_eq!(
            r.stderr.matches("failed its authentication check").count(),
            3,
            "{args:?}: {}",
            r.stderr
        );
    }
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("two/summary.json")).unwrap(),
    )
    .unwrap();
    assert!(summary["passed"] == 1, "{summary}");
    // Recompiled and re-tagged: the next run loads from the cache again.
    let r = run_with_cache(&project, cache.path(), &["run", "EVAL.yaml", "-o", "three"]);
    assert!(!r.stderr.contains("authentication"), "{}", r.stderr);
    assert!(r.stdout.contains("(cached)"), "{}", r.stdout);
}

#[test]
fn a_cache_directory_others_can_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt as _;
    let project = crate::support::Project::with_mock("Paris");
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: a, input: q, assertions: [{type: contains, value: Paris}]}\n",
    );
    let cache = tempfile::tempdir().unwrap();
    for sub in ["components", "responses", "judge"] {
        std::fs::create_dir_all(cache.path().join(sub)).unwrap();
        std::fs::set_permissions(
            cache.path().join(sub),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
    }
    let r = run_with_cache(
        &project,
        cache.path(),
        &["run", "EVAL.yaml", "-o", "out", "--cache"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("is writable by others (mode 777)"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("compile cache"), "{}", r.stderr);
    assert!(r.stderr.contains("response cache"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_dir(cache.path().join("components"))
            .unwrap()
            .count(),
        0,
        "nothing written there"
    );
}

// ---------------------------------------------------------------------------
// 8. Numbers from servers and files are range-checked: no panic.

#[test]
fn nan_retry_after_and_huge_timeouts_do_not_abort_the_run() {
    let server = crate::support::FakeServer::start(vec![
        crate::support::Reply {
            status: 429,
            headers: vec![("retry-after-ms".into(), "NaN".into())],
            body: "{}".into(),
            delay: std::time::Duration::ZERO,
        },
        crate::support::Reply {
            status: 429,
            headers: vec![("retry-after".into(), "-1e308".into())],
            body: "{}".into(),
            delay: std::time::Duration::ZERO,
        },
        crate::support::Reply::chat("fine"),
    ]);
    let s = Setup::new(
        "tests:\n  - {id: t, input: q, timeout_ms: 18446744073709551615, assertions: [{type: contains, value: fine}]}\n",
        &format!(
            "targets:\n  - name: default\n    provider: openai\n    base_url: {}\n    model: m\n    max_retries: 2\n    retry_initial_delay_ms: 1\n",
            server.url
        ),
    );
    let targets = s.targets().display().to_string();
    let r = run_in(
        &s.project(),
        &["run", "EVAL.yaml", "--targets", &targets, "-o", "out"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    // A timeout no clock can hold is a config error with its key, in
    // validate as in run.
    for (key, value) in [
        ("timeout_seconds", "1e300"),
        ("timeout_seconds", "-5"),
        ("retry_backoff_factor", "-2"),
        ("retry_max_delay_ms", "18446744073709551615"),
    ] {
        std::fs::write(
            s.targets(),
            format!(
                "targets:\n  - name: default\n    provider: openai\n    base_url: {}\n    model: m\n    {key}: {value}\n",
                server.url
            ),
        )
        .unwrap();
        let r = run_in(
            &s.project(),
            &["run", "EVAL.yaml", "--targets", &targets, "-o", "out2"],
        );
        assert_eq!(r.code, 2, "{key}: {}", r.stderr);
        assert!(r.stderr.contains(key), "{key}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
}
