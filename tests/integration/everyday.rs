//! Everyday use (issue 37): several suites in one invocation, completions
//! and the man page, the terminal during a run.

use serde_json::Value;

use crate::support::{Project, run_in};

/// A project with three suites under `evals/`: one passing, one failing, one
/// (promptfoo's default name) passing.
fn three_suites() -> Project {
    let p = Project::with_mock("The capital of France is Paris.");
    p.write(
        "evals/qa/EVAL.yaml",
        "name: qa\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: b, input: q, assertions: [{type: contains, value: France}]}\n",
    );
    p.write(
        "evals/tools/tools.eval.yaml",
        "name: tools\ntests:\n  - {id: a, input: q, assertions: [{type: contains, value: Berlin}]}\n",
    );
    p.write(
        "evals/pf/promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: Paris}\n    assert: [{type: icontains, value: paris}]\n",
    );
    // Not a suite: a targets-like file and a case list are not picked up.
    p.write("evals/notes.yaml", "just: notes\n");
    p
}

/// `evalhost run evals/` runs every suite there, each into its own run
/// directory, with a combined summary, a combined JUnit file and one exit
/// code; the same suites named one by one, or by a quoted glob, are the
/// same run.
#[test]
fn run_a_directory_runs_every_suite_there() {
    let p = three_suites();
    let r = run_in(
        p.path(),
        &[
            "run",
            "evals/",
            "-o",
            "out",
            "--junit",
            "out/junit.xml",
            "--export",
            "promptfoo-json",
            "out/pf.json",
        ],
    );
    assert_eq!(r.code, 1, "one suite fails: {}{}", r.stdout, r.stderr);
    for (dir, rows) in [("out/qa", 2), ("out/tools", 1), ("out/pf", 1)] {
        let text = std::fs::read_to_string(p.path().join(dir).join("results.jsonl"))
            .unwrap_or_else(|e| panic!("{dir}: {e}\n{}{}", r.stdout, r.stderr));
        assert_eq!(text.lines().count(), rows, "{dir}");
        assert!(p.path().join(dir).join("report.html").is_file());
    }
    assert!(
        r.stderr
            .contains("── suite 1 of 3: evals/pf/promptfooconfig.yaml ──"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("\nSuites\n"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("2 of 3 suites passed; 3 of 4 tests passed"),
        "{}",
        r.stdout
    );
    let combined: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("out/suites.json")).unwrap())
            .unwrap();
    assert_eq!(combined["exit_code"], 1);
    let suites = combined["suites"].as_array().unwrap();
    assert_eq!(suites.len(), 3);
    let tools = suites
        .iter()
        .find(|s| s["eval"] == "evals/tools/tools.eval.yaml")
        .unwrap();
    assert_eq!(tools["exit_code"], 1);
    assert_eq!(tools["run_dir"], "out/tools");
    assert_eq!(tools["tally"]["failed"], 1);
    // One export per suite, named after it.
    for name in ["pf", "qa", "tools"] {
        let export: Value = serde_json::from_str(
            &std::fs::read_to_string(p.path().join(format!("out/pf-{name}.json"))).unwrap(),
        )
        .unwrap();
        assert!(export["results"].is_object(), "{name}: {export}");
    }
    assert!(!p.path().join("out/pf.json").exists());
    let junit = std::fs::read_to_string(p.path().join("out/junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<testsuites name="evalhost" tests="4""#),
        "{junit}"
    );
    assert!(junit.contains(r#"failures="1""#), "{junit}");
    for name in ["qa", "tools"] {
        assert!(
            junit.contains(&format!(r#"<testsuite name="{name}""#)),
            "{junit}"
        );
    }

    // Named one by one, and by a glob the shell did not expand: the same.
    let r = run_in(
        p.path(),
        &[
            "run",
            "evals/qa/EVAL.yaml",
            "evals/tools/tools.eval.yaml",
            "-o",
            "two",
        ],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(p.path().join("two/qa/results.jsonl").is_file());
    assert!(r.stdout.contains("1 of 2 suites passed"), "{}", r.stdout);
    let r = run_in(p.path(), &["run", "evals/**/EVAL.yaml", "-o", "glob"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(p.path().join("glob/qa/results.jsonl").is_file());
    assert!(
        r.stdout
            .contains("1 of 1 suites passed; 2 of 2 tests passed"),
        "{}",
        r.stdout
    );

    // A single file keeps the single-suite layout: out/ is its run directory.
    let r = run_in(p.path(), &["run", "evals/qa/EVAL.yaml", "-o", "single"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(p.path().join("single/results.jsonl").is_file());
    assert!(!r.stdout.contains("Suites"), "{}", r.stdout);
}

/// Every suite is checked before any runs: an error in one means none run
/// (no run directory, no target call), every error printed with file, line
/// and key. `--deny-warnings` refuses on a warning the same way.
#[test]
fn a_broken_suite_among_several_stops_them_all_before_any_runs() {
    let p = three_suites();
    p.write(
        "evals/zz.eval.yaml",
        "tests:\n  - id: one\n    input: hi\n    assertions:\n      - type: contians\n        value: x\n",
    );
    let r = run_in(p.path(), &["run", "evals", "-o", "out"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("evals/zz.eval.yaml:5:") && r.stderr.contains("did you mean `contains`?"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("1 of 4 suites have errors; no suite was run"),
        "{}",
        r.stderr
    );
    assert!(!p.path().join("out").exists(), "nothing ran");

    // A warning, denied.
    std::fs::remove_file(p.path().join("evals/zz.eval.yaml")).unwrap();
    p.write(
        "evals/zz.eval.yaml",
        "tests:\n  - id: one\n    input: hi\n    expected_outcome: hi\n    assertions: [{type: contains, value: Paris}]\n",
    );
    let r = run_in(p.path(), &["run", "evals", "-o", "out", "--deny-warnings"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("evals/zz.eval.yaml:4:5: warning:"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("--deny-warnings; no suite was run"),
        "{}",
        r.stderr
    );
    assert!(!p.path().join("out").exists(), "nothing ran");
    // validate, the same.
    let r = run_in(p.path(), &["validate", "evals", "--deny-warnings"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("4 of 4 eval file(s) valid (5 tests); 1 warning(s)"),
        "{}",
        r.stderr
    );
    let r = run_in(p.path(), &["validate", "evals"]);
    assert_eq!(
        r.code, 0,
        "without --deny-warnings a warning passes: {}",
        r.stderr
    );
    // One file with --deny-warnings: checked, then run as one suite.
    let r = run_in(
        p.path(),
        &["run", "evals/qa/EVAL.yaml", "-o", "one", "--deny-warnings"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(p.path().join("one/results.jsonl").is_file());

    // A path that finds nothing is named, with the others.
    let r = run_in(p.path(), &["run", "evals/*.none", "nothing/", "-o", "x"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("`evals/*.none`: no file matches"),
        "{}",
        r.stderr
    );
    let r = run_in(p.path(), &["validate", ".evalhost"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no suite files here"), "{}", r.stderr);
}

/// `evalhost completions bash` loads in bash and completes subcommands,
/// options, the targets file's names and the suite's test ids (asked of the
/// binary as the user types); every shell's script is written; the man
/// page renders.
#[test]
fn completions_load_in_bash_and_complete_names_from_the_project() {
    let p = Project::with_mock("Paris");
    p.write(
        "EVAL.yaml",
        "tests:\n  - {id: capital-city, input: q, assertions: [{type: contains, value: Paris}]}\n  - {id: currency, input: q, assertions: [{type: contains, value: euro}]}\n",
    );
    let script = run_in(p.path(), &["completions", "bash"]);
    assert_eq!(script.code, 0, "{}", script.stderr);
    p.write("completion.bash", &script.stdout);
    // What bash does on Tab: COMP_WORDS and COMP_CWORD set, the function
    // called with the command, the word and the previous word.
    let ask = |words: &[&str]| -> Vec<String> {
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let cword = words.len() - 1;
        let script = format!(
            "source ./completion.bash\ncomplete -p evalhost >/dev/null || exit 9\nCOMP_WORDS=({})\nCOMP_CWORD={cword}\n_clap_complete_evalhost evalhost '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
            quoted.join(" "),
            words[cword],
            words[cword.saturating_sub(1)]
        );
        let out = std::process::Command::new("bash")
            .current_dir(p.path())
            .args(["--norc", "--noprofile", "-c", &script])
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let subcommands = ask(&["evalhost", "r"]);
    assert_eq!(subcommands, ["run", "regrade", "runs"], "{subcommands:?}");
    let all = ask(&["evalhost", ""]);
    for sub in [
        "validate",
        "compare",
        "view",
        "completions",
        "man",
        "plugin",
    ] {
        assert!(all.contains(&sub.to_owned()), "{sub}: {all:?}");
    }
    let options = ask(&["evalhost", "run", "--re"]);
    for opt in ["--repeat", "--resume", "--rerun-failed", "--reporter"] {
        assert!(options.contains(&opt.to_owned()), "{opt}: {options:?}");
    }
    assert_eq!(
        ask(&["evalhost", "run", "EVAL.yaml", "--target", ""]),
        ["default"]
    );
    assert_eq!(
        ask(&["evalhost", "run", "EVAL.yaml", "--test-id", "c"]),
        ["capital-city", "currency"]
    );
    assert!(ask(&["evalhost", "run", "--dialect", "a"]).contains(&"agentv4".to_owned()));
    // The suite named on the line, not the one in the directory.
    p.write(
        "evals/other.eval.yaml",
        "tests:\n  - {id: elsewhere, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    assert_eq!(
        ask(&["evalhost", "run", "evals/other.eval.yaml", "--test-id", ""]),
        ["elsewhere"]
    );
    assert_eq!(
        ask(&["evalhost", "doctor", "EVAL.yaml", "--target", ""]),
        ["default"]
    );

    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let r = run_in(p.path(), &["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        assert!(
            r.stdout.contains("EVALHOST_COMPLETE"),
            "{shell}: {}",
            r.stdout
        );
    }
    let r = run_in(p.path(), &["completions", "tcsh"]);
    assert_eq!(r.code, 2, "{}", r.stderr);

    let man = run_in(p.path(), &["man"]);
    assert_eq!(man.code, 0, "{}", man.stderr);
    assert!(man.stdout.contains(".TH evalhost 1"), "{}", man.stdout);
    let r = run_in(p.path(), &["man", "--dir", "man"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let run_page = std::fs::read_to_string(p.path().join("man/evalhost-run.1")).unwrap();
    assert!(run_page.contains("deny\\-warnings"), "{run_page}");
}

/// On a terminal (a pseudo-terminal from `script`), the progress bar shows
/// the rate, the time left and the passes and failures so far; the plugins
/// are one header line; without a terminal each test has its line.
#[test]
fn a_long_run_on_a_terminal_shows_rate_eta_and_counts() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("everyday: no `script` (util-linux) here; the terminal is not checked");
        return;
    }
    let p = Project::with_mock("Paris");
    let targets = "targets:\n  - {name: default, provider: mock, response: Paris, delay_ms: 60}\n";
    p.write(".evalhost/targets.yaml", targets);
    let mut suite = String::from("tests:\n");
    for i in 0..30 {
        let value = if i % 10 == 9 { "Rome" } else { "Paris" };
        suite.push_str(&format!(
            "  - {{id: t{i:02}, input: q, assertions: [{{type: contains, value: {value}}}, {{type: regex, value: 'P.r'}}]}}\n"
        ));
    }
    p.write("EVAL.yaml", &suite);
    let bin = env!("CARGO_BIN_EXE_evalhost");
    let out = std::process::Command::new("script")
        .current_dir(p.path())
        .env("EVALHOST_CACHE_DIR", crate::support::shared_cache())
        .env("TERM", "xterm")
        .env_remove("NO_COLOR")
        .args([
            "-qefc",
            &format!("'{bin}' run EVAL.yaml -o out -j 2"),
            "/dev/null",
        ])
        .output()
        .expect("script runs");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{screen}");
    assert!(screen.contains("ETA"), "{screen}");
    assert!(screen.contains("/s"), "the rate: {screen}");
    assert!(screen.contains(" ✓") && screen.contains(" ✗"), "{screen}");
    // The counts never run ahead of the position: on every frame, passes
    // and failures add up to the tests done.
    let mut frames = 0;
    for (at, _) in screen.match_indices("/30 ") {
        let done: String = screen[..at]
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let rest = &screen[at..];
        let number_after = |mark: char| -> Option<u32> {
            let from = rest.find(mark)? + mark.len_utf8();
            rest[from..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        };
        let line_end = rest.find(['\r', '\n']).unwrap_or(rest.len());
        let (Ok(done), Some(pass), Some(fail)) =
            (done.parse::<u32>(), number_after('✓'), number_after('✗'))
        else {
            continue;
        };
        if rest.find('✗').is_some_and(|x| x < line_end) {
            assert_eq!(done, pass + fail, "{}", &rest[..line_end]);
            frames += 1;
        }
    }
    assert!(frames > 0, "{screen}");
    assert!(
        screen.contains("FAIL"),
        "failures still get their lines: {screen}"
    );
    // The plugins on one line.
    let plugin_lines = screen.lines().filter(|l| l.contains("plugin")).count();
    assert_eq!(plugin_lines, 1, "{screen}");
    assert!(screen.contains("plugins: evalhost-"), "{screen}");

    // Not a terminal: a line per test, no bar.
    let r = run_in(p.path(), &["run", "EVAL.yaml", "-o", "out2", "-j", "8"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout.matches("PASS  t").count(), 27, "{}", r.stdout);
    assert!(!r.stderr.contains("ETA"), "{}", r.stderr);
}

/// Two suites of one name (two `EVAL.yaml` without `name:`) are said
/// before they run, and their JUnit suites are told apart; a path that is
/// not there is named; resuming the directory of several suites points at
/// one suite's directory.
#[test]
fn suites_sharing_a_name_are_said_and_kept_apart() {
    let p = Project::with_mock("Paris");
    for dir in ["a", "b"] {
        p.write(
            &format!("evals/{dir}/EVAL.yaml"),
            "tests:\n  - {id: t, input: q, assertions: [{type: contains, value: Paris}]}\n",
        );
    }
    let r = run_in(
        p.path(),
        &["run", "evals", "-o", "out", "--junit", "out/junit.xml"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("warning: evals/a/EVAL.yaml, evals/b/EVAL.yaml are all suite `EVAL`")
            && r.stderr.contains("give each its own `name:`"),
        "{}",
        r.stderr
    );
    let junit = std::fs::read_to_string(p.path().join("out/junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<testsuite name="EVAL (a)""#)
            && junit.contains(r#"<testsuite name="EVAL (b)""#),
        "{junit}"
    );
    let r = run_in(p.path(), &["run", "evals", "-o", "out2", "--deny-warnings"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!p.path().join("out2").exists());

    let r = run_in(p.path(), &["run", "nope/"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("`nope/`: no such file or directory"),
        "{}",
        r.stderr
    );

    let r = run_in(p.path(), &["run", "--resume", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("holds the runs of several suites")
            && r.stderr.contains("evalhost run --resume out/"),
        "{}",
        r.stderr
    );
}
