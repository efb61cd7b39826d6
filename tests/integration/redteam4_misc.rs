//! The fourth red-team pass and code review, the findings outside the
//! sandbox: YAML nesting read in quadratic time, config code re-run per
//! test, the GitHub Action's inputs, completion candidates, `--shard auto`
//! at the edge of u32, non-UTF-8 arguments, the completion variable, and
//! where the caches beside the compile cache live.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Project, Run, evalhost, root, run_in};

/// Runs `command` to its end or `limit`, whichever comes first: `None`
/// when it was still running at `limit` (it is killed then).
fn bounded(mut command: Command, limit: Duration) -> Option<Run> {
    let out = tempfile::tempdir().unwrap();
    let (stdout, stderr) = (out.path().join("stdout"), out.path().join("stderr"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("evalhost starts");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    Some(Run {
        code: status.code().unwrap_or(-1),
        stdout: read(&stdout),
        stderr: read(&stderr),
    })
}

/// Red team 4, finding 5: `[[[[…]]]]` cost the YAML scanner the square of
/// its size before the depth limit fired (n = 200,000: about 160 s for
/// `validate` in a debug build, 80 s for a Tab completion). Refused at the
/// limit now, at once.
#[test]
fn deep_yaml_nesting_is_refused_at_once_by_validate_and_completion() {
    let n = 200_000;
    for (open, close) in [("[", "]"), ("{", "}")] {
        let p = Project::with_mock("hi");
        p.write(
            "EVAL.yaml",
            &format!("tests: {}{}\n", open.repeat(n), close.repeat(n)),
        );
        let mut validate = evalhost();
        validate
            .current_dir(p.path())
            .args(["validate", "EVAL.yaml"]);
        let r = bounded(validate, Duration::from_secs(60))
            .unwrap_or_else(|| panic!("`validate` of {open}×{n} still running after 60 s"));
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("recursion limit exceeded"),
            "{open}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("EVAL.yaml:1:"), "{}", r.stderr);
        // Tab after `--test-id` reads the suite of the directory.
        let mut complete = evalhost();
        complete
            .current_dir(p.path())
            .env("EVALHOST_COMPLETE", "bash")
            .env("_CLAP_IFS", "\u{b}")
            .env("_CLAP_COMPLETE_INDEX", "3")
            .args(["--", "evalhost", "run", "--test-id", ""]);
        let r = bounded(complete, Duration::from_secs(60))
            .unwrap_or_else(|| panic!("completion on {open}×{n} still running after 60 s"));
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
}

fn promptfoo_project(config: &str) -> Project {
    let p = Project::with_mock("hi");
    std::fs::create_dir_all(p.path().join(".git")).unwrap();
    p.write("promptfooconfig.yaml", config);
    p
}

fn tests(n: usize) -> String {
    (1..=n)
        .map(|i| format!("  - vars: {{x: '{i}'}}\n"))
        .collect()
}

/// Red team 4, finding 6: `defaultTest`'s `transformVars` that loops was
/// called again for every test, each call its whole 10 s deadline (8
/// tests: 80 s). It runs once: one deadline, one error at the option.
#[test]
fn a_transform_that_loops_is_run_once_not_once_per_test() {
    let p = promptfoo_project(&format!(
        "prompts: ['hello {{{{x}}}}']\nproviders: [echo]\ndefaultTest:\n  options:\n    transformVars: |\n      while(true){{}}\n      return vars;\ntests:\n{}",
        tests(8)
    ));
    let start = Instant::now();
    let r = run_in(
        p.path(),
        &[
            "run",
            "promptfooconfig.yaml",
            "--sandbox",
            "strict",
            "-o",
            "out",
        ],
    );
    let took = start.elapsed();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr.matches("`transformVars` failed").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("deadline"), "{}", r.stderr);
    assert!(r.stderr.contains("promptfooconfig.yaml:5:"), "{}", r.stderr);
    // One deadline (10 s) and loading; eight were 80 s.
    assert!(took < Duration::from_secs(40), "{took:?}: {}", r.stderr);
}

/// The same for a `file://` var whose function loops: called once per
/// test (6 tests: 60 s), now once; the rows that use it are errors, said
/// once, naming the file.
#[test]
fn a_var_file_that_loops_is_run_once_not_once_per_test() {
    let p = promptfoo_project(&format!(
        "prompts: ['hello {{{{x}}}} {{{{y}}}}']\nproviders: [echo]\ndefaultTest:\n  vars: {{y: 'file://loop.js'}}\ntests:\n{}",
        tests(6)
    ));
    p.write(
        "loop.js",
        "module.exports = function () { while (true) {} };\n",
    );
    let start = Instant::now();
    let r = run_in(p.path(), &["validate", "promptfooconfig.yaml"]);
    let took = start.elapsed();
    assert_eq!(
        r.stderr.matches("Error running file://loop.js").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("deadline"), "{}", r.stderr);
    assert!(took < Duration::from_secs(40), "{took:?}: {}", r.stderr);
}

/// A stand-in `evalhost` that prints each argument on its line and exits 1
/// (a failing run).
fn action(vars: &[(&str, &str)]) -> (Run, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let stand_in = bin.join("evalhost");
    std::fs::write(
        &stand_in,
        "#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &stand_in,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let output = dir.path().join("output");
    std::fs::write(&output, "").unwrap();
    let mut command = Command::new("bash");
    command
        .arg(root().join("scripts/action-run.sh"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("EVALHOST_BIN_DIR", &bin)
        .env("GITHUB_OUTPUT", &output);
    for (k, v) in vars {
        command.env(k, v);
    }
    let r: Run = command.output().unwrap().into();
    let args = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_owned)
        .collect();
    let outputs = std::fs::read_to_string(&output).unwrap();
    (r, args, outputs)
}

/// Red team 4, finding 8, and code review B19: every line of `args` reaches
/// evalhost (`--sandbox strict` on the second line was dropped); a line
/// break in an input cannot forge `exit-code`; `args` are `run`'s, not
/// `merge`'s.
#[test]
fn the_action_splits_every_line_of_args_and_exit_code_cannot_be_forged() {
    let (r, args, outputs) = action(&[
        ("INPUT_SUITE", "evals/EVAL.yaml"),
        ("INPUT_ARGS", "--target gpt\n--sandbox strict\r\n"),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        args,
        [
            "run",
            "evals/EVAL.yaml",
            "--target",
            "gpt",
            "--sandbox",
            "strict",
            "--reporter",
            "github",
            "-o",
            "runs/all"
        ]
    );
    assert!(outputs.ends_with("exit-code=1\n"), "{outputs}");

    for (input, value) in [
        ("INPUT_ARTIFACT_NAME", "evalhost-x\nexit-code=0"),
        ("INPUT_OUTPUT", "runs/x\nexit-code=0"),
        ("INPUT_ARTIFACT_NAME", "evalhost-x\rexit-code=0"),
        ("INPUT_SUITE", "evals/EVAL.yaml\nexit-code=0"),
    ] {
        let mut vars = vec![("INPUT_SUITE", "evals/EVAL.yaml")];
        vars.retain(|(k, _)| *k != input);
        vars.push((input, value));
        let (r, args, outputs) = action(&vars);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let codes: Vec<&str> = outputs
            .lines()
            .filter(|l| l.starts_with("exit-code"))
            .collect();
        assert_eq!(codes, ["exit-code=2"], "{input}: {outputs}");
        assert!(args.is_empty(), "{input}: nothing ran: {args:?}");
        assert!(r.stdout.contains("holds a line break"), "{}", r.stdout);
    }

    // The merge job: `args` (the runs') are not merge's; `merge-args` are.
    let shards = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(shards.path().join("shard-1")).unwrap();
    let glob = format!("{}/shard-*", shards.path().display());
    let (_, args, outputs) = action(&[
        ("INPUT_MERGE", &glob),
        ("INPUT_ARGS", "--sandbox strict"),
        ("INPUT_MERGE_ARGS", "--junit\njunit.xml"),
    ]);
    assert_eq!(args[0], "merge", "{args:?}");
    assert!(!args.contains(&"--sandbox".to_owned()), "{args:?}");
    assert!(
        args.windows(2).any(|w| w == ["--junit", "junit.xml"]),
        "{args:?}"
    );
    assert!(outputs.ends_with("exit-code=1\n"), "{outputs}");
}

/// Red team 4, finding 12: completion candidates from a project's files
/// carried raw escape sequences and newlines to the shell. A test id or
/// target name with a control character is not offered; a provider (the
/// help) is escaped. (`COMPLETE` is set too: the variable evalhost read
/// before; it must not answer to it now.)
#[test]
fn completion_candidates_carry_no_control_characters() {
    let p = Project::with_mock("hi");
    p.write(
        "EVAL.yaml",
        "tests:\n  - {id: plain-id, input: q, assertions: [{type: contains, value: x}]}\n  - {id: \"osc\\e]52;c;SGk=\\aid\", input: q, assertions: [{type: contains, value: x}]}\n  - {id: \"two\\nlines\", input: q, assertions: [{type: contains, value: x}]}\n",
    );
    p.write(
        ".evalhost/targets.yaml",
        "targets:\n  - {name: good, provider: \"mock\\e[2J\"}\n  - {name: \"bad\\e]0;title\\a\", provider: mock}\n",
    );
    let ask = |shell: &str, words: &[&str]| -> String {
        let mut command = evalhost();
        command
            .current_dir(p.path())
            .env("EVALHOST_COMPLETE", shell)
            .env("COMPLETE", shell)
            .env("_CLAP_IFS", "\u{b}")
            .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
            .arg("--")
            .args(words);
        let r: Run = command.output().unwrap().into();
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.stdout
    };
    let ids = ask("bash", &["evalhost", "run", "--test-id", ""]);
    let ids: Vec<&str> = ids.split('\u{b}').map(str::trim_end).collect();
    assert_eq!(ids, ["plain-id"], "{ids:?}");
    let targets = ask("fish", &["evalhost", "run", "--target", ""]);
    assert!(
        !targets
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{targets:?}"
    );
    assert!(targets.contains("good\tmock\\u{1b}[2J"), "{targets:?}");
    assert!(!targets.contains("bad"), "{targets:?}");
}

/// Code review B11: `COMPLETE=bash` (a variable another program's
/// completion may leave set) made every command print a completion script
/// and exit 0 having run nothing. evalhost answers to `EVALHOST_COMPLETE`.
#[test]
fn a_generic_complete_variable_does_not_stop_a_command() {
    let p = Project::with_mock("hi");
    p.write(
        "EVAL.yaml",
        "tests:\n  - {id: t1, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    let r: Run = evalhost()
        .current_dir(p.path())
        .env("COMPLETE", "bash")
        .args(["validate", "EVAL.yaml"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("complete -o"), "{}", r.stdout);
    assert!(!r.stdout.contains("_clap_complete"), "{}", r.stdout);
    assert!(
        format!("{}{}", r.stdout, r.stderr).contains("1 test"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

/// Code review B7: a command-line argument that is not UTF-8 (a Latin-1
/// file name) panicked in `main` (exit 101). It is a file name like any.
#[test]
fn a_non_utf8_argument_is_an_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt as _;
    let p = Project::with_mock("hi");
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.yaml");
    let r: Run = evalhost()
        .current_dir(p.path())
        .arg("validate")
        .arg(name)
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(r.stderr.contains("caf"), "{}", r.stderr);
}

/// Red team 4, finding 13: `--shard auto` with a Slurm array ending at
/// u32::MAX overflowed (a panic, exit 101, in a debug build).
#[test]
fn shard_auto_at_the_edge_of_u32_is_an_error() {
    let p = Project::with_mock("hi");
    p.write(
        "EVAL.yaml",
        "tests:\n  - {id: t1, input: q, assertions: [{type: contains, value: hi}]}\n",
    );
    let r: Run = evalhost()
        .current_dir(p.path())
        .env("SLURM_ARRAY_TASK_ID", "0")
        .env("SLURM_ARRAY_TASK_MAX", "4294967295")
        .env("SLURM_ARRAY_TASK_COUNT", "0")
        .args(["run", "EVAL.yaml", "--shard", "auto", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--shard auto"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

/// Code review B12: `EVALHOST_COMPILE_CACHE_DIR` put the Python runner,
/// pulled plugins and AgentV's toolchain in its *parent* (a shared
/// `$TMPDIR` for `$TMPDIR/evalhost-compiled`). They stay in the cache
/// root: nothing but the compile cache is made beside it.
#[test]
fn the_compile_cache_variable_moves_only_the_compile_cache() {
    let p = promptfoo_project(
        "prompts: ['hi']\nproviders: [echo]\ntests:\n  - assert: [{type: python, value: 'True'}]\n",
    );
    let scratch = tempfile::tempdir().unwrap();
    let (beside, cache_root) = (scratch.path().join("x"), scratch.path().join("root"));
    std::fs::create_dir_all(&beside).unwrap();
    // A componentize-py that has a version and builds nothing: the runner
    // is looked for in its cache, then the build fails.
    let tool = scratch.path().join("componentize-py");
    std::fs::write(
        &tool,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo componentize-py 0.25.1; exit 0; }\necho no build here >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let r: Run = crate::support::evalhost()
        .current_dir(p.path())
        .env("EVALHOST_CACHE_DIR", &cache_root)
        .env("EVALHOST_COMPILE_CACHE_DIR", beside.join("compiled"))
        .env("EVALHOST_COMPONENTIZE_PY", &tool)
        .args(["run", "promptfooconfig.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert!(
        r.stderr.contains("no build here"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    let made: Vec<String> = std::fs::read_dir(&beside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "compiled")
        .collect();
    assert!(made.is_empty(), "made beside the compile cache: {made:?}");
    assert!(cache_root.join("python-runner").is_dir(), "{}", r.stderr);
}
