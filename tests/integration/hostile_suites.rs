//! The hostile suite corpus: malformed and malicious suites are refused at
//! load with an error naming file, line and key (exit 2, nothing run, no
//! panic), and no file outside what the format allows is read. The rule
//! (docs/suite-format.md, "Which files a suite may read"): files under the
//! suite's project root — the nearest ancestor with `.git`, else the eval
//! file's directory — after following symlinks, and no bigger than 32 MiB
//! (suite and case files) or 16 MiB (files attached to an input).

use std::path::Path;

use crate::support::{Project, run_in};

/// A project with a `.git` marker (its root) and a secret beside it.
fn project(suite: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("repo");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".evalhost")).unwrap();
    std::fs::write(
        root.join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: hi}\n",
    )
    .unwrap();
    std::fs::write(outer.path().join("secret.txt"), "TOP SECRET OUTSIDE").unwrap();
    std::fs::create_dir_all(outer.path().join("outside-case")).unwrap();
    std::fs::write(
        outer.path().join("outside-case/case.yaml"),
        "input: TOP SECRET OUTSIDE\nassertions: [{type: contains, value: x}]\n",
    )
    .unwrap();
    std::fs::write(root.join("EVAL.yaml"), suite).unwrap();
    (outer, root)
}

/// Validates and runs the suite in `root`: both exit 2 without a panic and
/// print every `needle`; nothing is run, and no secret is echoed.
fn refused(root: &Path, needles: &[&str]) {
    refused_with(root, needles, &[]);
}

/// [`refused`] under `--sandbox strict`: leaving the project root is a
/// strict-mode refusal (a trusted suite may read a file outside, as
/// promptfoo does; it never reads a secret).
fn refused_strict(root: &Path, needles: &[&str]) {
    refused_with(root, needles, &["--sandbox", "strict"]);
}

fn refused_with(root: &Path, needles: &[&str], extra: &[&str]) {
    for base in [
        &["validate", "EVAL.yaml"][..],
        &["run", "EVAL.yaml", "-o", "out"][..],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let args = &args[..];
        let r = run_in(root, args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(!r.stderr.contains("TOP SECRET"), "{}", r.stderr);
        for needle in needles {
            assert!(
                r.stderr.contains(needle),
                "{needle:?} missing from:\n{}",
                r.stderr
            );
        }
        assert!(!root.join("out/results.jsonl").exists());
    }
}

#[test]
fn malformed_yaml_names_its_line() {
    let (_d, root) = project("tests:\n  - id: a\n    input: [unclosed\n    assertions: []\n");
    refused(&root, &["EVAL.yaml:", "error: invalid YAML"]);
    // A NUL byte and a byte that is not UTF-8: named by line and column.
    std::fs::write(
        root.join("EVAL.yaml"),
        b"tests:\n  - id: a\n    input: \"x\0y\"\n",
    )
    .unwrap();
    refused(
        &root,
        &["EVAL.yaml:3:14: error: invalid YAML: the control character U+0000"],
    );
    std::fs::write(
        root.join("EVAL.yaml"),
        b"tests:\n  - id: a\n    input: \"caf\xe9\"\n",
    )
    .unwrap();
    refused(
        &root,
        &["EVAL.yaml:3:16: error: EVAL.yaml is not valid UTF-8"],
    );
}

#[test]
fn wrong_types_at_every_level_name_file_line_and_key() {
    let suite = "\
name: [not, a, string]
execution: 5
workspace: 7
plugins: 9
tests:
  - id: 42
    input: q
    assertions: [{type: contains, value: x}]
  - id: b
    input: 3
    assertions: [{type: contains, value: x}]
  - id: c
    input: [{role: 7, content: hi}]
    metadata: [1, 2]
    assertions:
      - {type: contains, value: x, weight: heavy}
      - {type: contains, value: 12}
      - {type: [contains]}
";
    let (_d, root) = project(suite);
    refused(
        &root,
        &[
            "EVAL.yaml:1:1: error:",
            "--> at `name`",
            "EVAL.yaml:2:",
            "--> at `execution`",
            "--> at `workspace`",
            "--> at `plugins`",
            "EVAL.yaml:6:",
            "--> at `tests[0].id`",
            "EVAL.yaml:10:",
            "--> at `tests[1].input`",
            "--> at `tests[2].input[0].role`",
            "--> at `tests[2].metadata`",
            "--> at `tests[2].assertions[0].weight`",
            "--> at `tests[2].assertions[1].value`",
            "--> at `tests[2].assertions[2].type`",
        ],
    );
}

#[test]
fn a_billion_laughs_alias_bomb_is_refused_unexpanded() {
    let mut suite = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    let mut prev = 'a';
    for name in "bcdefghi".chars() {
        let refs = vec![format!("*{prev}"); 9].join(", ");
        suite.push_str(&format!("{name}: &{name} [{refs}]\n"));
        prev = name;
    }
    suite.push_str(
        "tests:\n  - id: t\n    input: *i\n    assertions: [{type: contains, value: x}]\n",
    );
    let (_d, root) = project(&suite);
    refused(
        &root,
        &[
            // The alias whose expansion goes past the limit (`*d` in `e:`).
            "EVAL.yaml:5:28:",
            "repetition limit exceeded",
            "billion laughs",
        ],
    );
}

#[test]
fn a_one_gigabyte_file_is_refused_unread() {
    let suite = "\
tests:
  - id: attached
    input: [{role: user, content: [{type: file, value: big.bin}]}]
    assertions: [{type: contains, value: x}]
  - id: cases
    input: q
    input_files: [big.bin]
    assertions: [{type: contains, value: x}]
";
    let (_d, root) = project(suite);
    // Sparse: a gigabyte the disk does not hold.
    std::fs::File::create(root.join("big.bin"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    refused(
        &root,
        &[
            "EVAL.yaml:3:",
            "big.bin is 1024 MiB, more than the 16 MiB",
            "--> at `tests[0].input[0].content[0].value`",
            "EVAL.yaml:7:",
            "--> at `tests[1].input_files[0]`",
        ],
    );
    // As a cases file.
    std::fs::rename(root.join("big.bin"), root.join("cases.jsonl")).unwrap();
    std::fs::write(root.join("EVAL.yaml"), "tests: ./cases.jsonl\n").unwrap();
    refused(
        &root,
        &[
            "EVAL.yaml:1:",
            "cases.jsonl is 1024 MiB, more than the 32 MiB",
            "--> at `tests`",
        ],
    );
}

#[test]
fn file_references_cannot_leave_the_project() {
    let suite = "\
tests:
  - id: traversal
    input: [{role: user, content: [{type: file, value: ../secret.txt}]}]
    assertions: [{type: contains, value: x}]
  - id: absolute
    input: q
    expected_output: [{role: assistant, content: [{type: file, value: /etc/passwd}]}]
    assertions: [{type: contains, value: x}]
  - id: tests-file
    input: q
    assertions:
      - {type: llm-grader, prompt: 'file://../secret.txt'}
";
    let (outer, root) = project(suite);
    // A trusted suite reads a file outside its project (promptfoo's
    // `../prompts/x.txt`), never a secret there.
    std::fs::write(
        root.join("EVAL.yaml"),
        "tests:\n  - {id: t, input: [{role: user, content: [{type: file, value: ../secret.txt}]}], assertions: [{type: contains, value: x}]}\n",
    )
    .unwrap();
    let r = run_in(&root, &["validate", "EVAL.yaml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::create_dir_all(outer.path().join("other/.git")).unwrap();
    std::fs::write(outer.path().join("other/.git/config"), "[core]").unwrap();
    std::fs::write(
        root.join("EVAL.yaml"),
        "tests:\n  - {id: t, input: [{role: user, content: [{type: file, value: ../other/.git/config}]}], assertions: [{type: contains, value: x}]}\n",
    )
    .unwrap();
    refused(&root, &["EVAL.yaml:2:", "one of the project's secrets"]);
    std::fs::write(root.join("EVAL.yaml"), suite).unwrap();
    refused_strict(
        &root,
        &[
            "EVAL.yaml:3:",
            "`../secret.txt`: it resolves to",
            "outside the suite's project root",
            "EVAL.yaml:7:",
            "`/etc/passwd`: it resolves to /etc/passwd, outside the suite's project root",
            "EVAL.yaml:12:",
        ],
    );
    std::fs::write(root.join("EVAL.yaml"), "tests:\n  - file://../secret.txt\n").unwrap();
    refused_strict(&root, &["EVAL.yaml:2:", "outside the suite's project root"]);
    // An `include:` template that links out: named as outside, not "not found".
    std::fs::create_dir_all(root.join(".agentv/templates")).unwrap();
    std::os::unix::fs::symlink(
        outer.path().join("secret.txt"),
        root.join(".agentv/templates/evil.yaml"),
    )
    .unwrap();
    std::fs::write(
        root.join("EVAL.yaml"),
        "tests:\n  - {id: t, input: q, assertions: [{include: evil}]}\n",
    )
    .unwrap();
    refused_strict(&root, &["EVAL.yaml:2:", "outside the suite's project root"]);
    // Globs: the walk starts at the literal prefix, which must be inside the
    // project; nothing outside is even listed. (Found by the fuzzer: an
    // absolute glob used to walk the whole file system.)
    std::fs::write(
        root.join("EVAL.yaml"),
        "tests:\n  - file://../outside-case/*.yaml\n  - file:///./*X\n  - file:///etc/**/*.yaml\n",
    )
    .unwrap();
    refused_strict(
        &root,
        &[
            "EVAL.yaml:2:",
            "`../outside-case/*.yaml`: it resolves to",
            "EVAL.yaml:3:",
            "`/./*X`: it resolves to /, outside the suite's project root",
            "EVAL.yaml:4:",
            "`/etc/**/*.yaml`: it resolves to /etc, outside",
        ],
    );
}

#[test]
fn a_workspace_template_cannot_leave_the_project() {
    let (_d, root) = project(
        "workspace: {template: ../}\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    refused_strict(
        &root,
        &[
            "EVAL.yaml:1:",
            "--> at `workspace.template`",
            "outside the suite's project root",
        ],
    );
}

#[cfg(unix)]
#[test]
fn a_case_directory_that_is_a_symlink_out_of_the_project_is_refused() {
    let (outer, root) = project("tests: ./cases/\n");
    std::fs::create_dir_all(root.join("cases/fine")).unwrap();
    std::fs::write(
        root.join("cases/fine/case.yaml"),
        "input: q\nassertions: [{type: contains, value: x}]\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outer.path().join("outside-case"), root.join("cases/evil")).unwrap();
    refused_strict(&root, &["evil", "outside the suite's project root"]);
    // A symlinked cases file too.
    std::fs::remove_file(root.join("cases/evil")).unwrap();
    std::os::unix::fs::symlink(outer.path().join("secret.txt"), root.join("cases.yaml")).unwrap();
    std::fs::write(root.join("EVAL.yaml"), "tests: ./cases.yaml\n").unwrap();
    refused_strict(&root, &["EVAL.yaml:1:", "outside the suite's project root"]);
}

#[test]
fn duplicate_ids_and_include_cycles_name_both_places() {
    let project = Project::with_mock("x");
    project.write(
        "EVAL.yaml",
        "tests:\n  - {id: same, input: q, assertions: [{include: a}]}\n  - {id: same, input: q, assertions: [{type: contains, value: x}]}\n",
    );
    project.write(".agentv/templates/a.yaml", "assertions:\n  - include: b\n");
    project.write(".agentv/templates/b.yaml", "assertions:\n  - include: a\n");
    let r = project.run(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"));
    assert!(r.stderr.contains("EVAL.yaml:3:"), "{}", r.stderr);
    assert!(
        r.stderr.contains("duplicate test id `same`: also used at"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("cycle"), "{}", r.stderr);
}

/// `--sandbox strict` is for suites you did not write: the suite's own
/// commands (workspace hooks) and a `cli` target from a targets file found
/// beside it are refused, and `${{ VAR }}` sees only the suite's `.env`.
#[test]
fn sandbox_strict_refuses_the_suite_s_commands_and_the_operator_s_environment() {
    let hooks = "workspace:\n  template: ./t\n  hooks:\n    before_all: {command: [sh, -c, 'echo pwned > /tmp/evalhost-pwned']}\nexecution:\n  targets:\n    - name: default\n      hooks: {before_each: {command: [sh, -c, 'true']}}\ntests:\n  - id: t\n    input: q\n    workspace:\n      hooks:\n        after_each: {command: [sh, -c, 'true']}\n    assertions: [{type: contains, value: hi}]\n";
    let (_d, root) = project(hooks);
    std::fs::create_dir_all(root.join("t")).unwrap();
    let r = run_in(
        &root,
        &["run", "EVAL.yaml", "-o", "out", "--sandbox", "strict"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    for (line, key) in [
        ("EVAL.yaml:4:", "`workspace.hooks.before_all`"),
        ("EVAL.yaml:8:", "`execution.targets[0].hooks.before_each`"),
        ("EVAL.yaml:14:", "`tests[0].workspace.hooks.after_each`"),
    ] {
        let at = r
            .stderr
            .find(line)
            .unwrap_or_else(|| panic!("{line} missing: {}", r.stderr));
        let block: Vec<&str> = r.stderr[at..].lines().take(2).collect();
        assert!(
            block[0].contains("`--sandbox strict` refuses commands the suite defines")
                && block[1].contains(key),
            "{line} {key}: {}",
            r.stderr
        );
    }
    assert!(!root.join("out/results.jsonl").exists());

    // A cli target found beside the suite: refused; named with --targets: runs.
    let (_d, root) =
        project("tests:\n  - {id: t, input: q, assertions: [{type: contains, value: hi}]}\n");
    std::fs::write(
        root.join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: cli, command: 'echo hi > {OUTPUT_FILE}'}\n",
    )
    .unwrap();
    let r = run_in(
        &root,
        &["run", "EVAL.yaml", "-o", "out", "--sandbox", "strict"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("refuses the command target `default`"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--targets FILE"), "{}", r.stderr);
    let r = run_in(
        &root,
        &[
            "run",
            "EVAL.yaml",
            "-o",
            "out",
            "--sandbox",
            "strict",
            "--targets",
            ".evalhost/targets.yaml",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);

    // ${{ VAR }}: the suite's .env, never the process environment.
    let (_d, root) = project(
        "tests:\n  - {id: t, input: 'key=${{ EVALHOST_TEST_SECRET }} own=${{ SUITE_VAR }}', assertions: [{type: contains, value: x}]}\n",
    );
    std::fs::write(root.join(".env"), "SUITE_VAR=from-dotenv\n").unwrap();
    let out = crate::support::evalhost()
        .current_dir(&root)
        .args(["run", "EVAL.yaml", "-o", "out", "--sandbox", "strict"])
        .env("EVALHOST_TEST_SECRET", "sk-operator-secret")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let results = std::fs::read_to_string(root.join("out/results.jsonl")).unwrap();
    assert!(
        !results.contains("sk-operator-secret"),
        "the operator's secret reached the results"
    );
    assert!(results.contains("own=from-dotenv"), "{results}");
    assert!(
        stderr.contains("EVALHOST_TEST_SECRET"),
        "a warning names the unset variable: {stderr}"
    );
}

/// Found by a red-team review: git options smuggled in as a ref or a
/// source, and repository sources outside the project.
#[test]
fn a_repo_cannot_smuggle_git_options_or_come_from_outside_the_project() {
    let (outer, root) = project(
        "workspace:\n  repos:\n    - path: a\n      source: {type: local, path: .}\n      checkout: {ref: '--upload-pack=touch PWNED; git-upload-pack'}\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: hi}]}\n",
    );
    refused_strict(
        &root,
        &[
            "EVAL.yaml:5:",
            "`workspace.repos[0].checkout.ref`",
            "a git ref cannot start with `-`",
        ],
    );
    assert!(!root.join("PWNED").exists());
    let outside = outer.path().join("outside-case").display().to_string();
    std::fs::write(
        root.join("EVAL.yaml"),
        format!(
            "workspace:\n  repos:\n    - {{path: a, source: {outside}}}\n    - {{path: b, repo: 'file://{outside}'}}\n    - {{path: c, source: {{type: git, url: '-uevil'}}}}\ntests:\n  - {{id: t, input: q, assertions: [{{type: contains, value: hi}}]}}\n"
        ),
    )
    .unwrap();
    refused_strict(
        &root,
        &[
            "EVAL.yaml:3:",
            "outside the suite's project root",
            "EVAL.yaml:4:",
            "EVAL.yaml:5:",
            "a repo source cannot start with `-`",
        ],
    );
}

/// Symbolic links out of the project, wherever a suite names or implies a
/// file: a case's `case.yaml`, its `workspace/`, a JSONL sidecar.
#[test]
fn links_out_of_the_project_are_refused_wherever_a_file_is_implied() {
    let (outer, root) = project("tests: ./cases/\n");
    std::fs::create_dir_all(root.join("cases/c1")).unwrap();
    std::os::unix::fs::symlink(
        outer.path().join("outside-case/case.yaml"),
        root.join("cases/c1/case.yaml"),
    )
    .unwrap();
    refused_strict(&root, &["case.yaml", "outside the suite's project root"]);

    std::fs::remove_file(root.join("cases/c1/case.yaml")).unwrap();
    std::fs::write(
        root.join("cases/c1/case.yaml"),
        "input: q\nassertions: [{type: contains, value: hi}]\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outer.path(), root.join("cases/c1/workspace")).unwrap();
    refused_strict(&root, &["workspace", "outside the suite's project root"]);

    std::fs::write(
        root.join("suite.jsonl"),
        "{\"id\": \"t\", \"input\": \"q\", \"assertions\": [{\"type\": \"contains\", \"value\": \"hi\"}]}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outer.path().join("secret.txt"), root.join("suite.yaml")).unwrap();
    let r = run_in(&root, &["validate", "--sandbox", "strict", "suite.jsonl"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("the JSONL sidecar"), "{}", r.stderr);
    assert!(!r.stderr.contains("TOP SECRET"), "{}", r.stderr);
}

/// A FIFO or a device where a file is expected: refused at once, never read
/// (reading would block, or never end).
#[test]
fn fifos_and_devices_are_not_read() {
    let (_d, root) = project(
        "plugins: [./p.wasm]\ntests:\n  - {id: t, input: q, input_files: [./f], assertions: [{type: contains, value: hi}]}\n",
    );
    let status = std::process::Command::new("mkfifo")
        .arg(root.join("f"))
        .arg(root.join("p.wasm"))
        .status()
        .unwrap();
    assert!(status.success());
    let r = run_in(&root, &["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is not a regular file"), "{}", r.stderr);
    // A device under strict: refused for being outside, and never read.
    std::fs::write(
        root.join("EVAL.yaml"),
        "plugins: [/dev/zero]\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: hi}]}\n",
    )
    .unwrap();
    let r = run_in(
        &root,
        &["run", "EVAL.yaml", "-o", "out", "--sandbox", "strict"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("refuses the plugin /dev/zero"),
        "{}",
        r.stderr
    );
    let r = run_in(&root, &["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is not a regular file"), "{}", r.stderr);
}

/// Under `--sandbox strict` the operator's secrets stay out of reach by
/// every route the red-team review found: a `.env` linked to
/// `/proc/self/environ` or to a file outside, a `.env` in a current
/// directory outside the project, a targets file beside the suite that
/// interpolates `${{ VAR }}`; and the suite cannot forge outputs through a
/// response cache it ships.
#[test]
fn sandbox_strict_keeps_the_operator_s_secrets_and_outputs_honest() {
    const SECRET: &str = "sk-operator-secret-42";
    let (outer, root) = project(
        "execution: {cache: true, cache_path: ./cache}\ntests:\n  - {id: t, input: 'a=${{ OPENAI_API_KEY }} b=${{ LEAKED }}', assertions: [{type: contains, value: hi}]}\n",
    );
    // The suite's own targets file names the operator's key: under strict
    // it sees only the suite's `.env` files, where the key is not, so the
    // target cannot run — refused naming the variable, never filled from
    // the operator's environment.
    std::fs::write(
        root.join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: 'hi key=${{ OPENAI_API_KEY }}'}\n",
    )
    .unwrap();
    let r = crate::support::evalhost()
        .current_dir(&root)
        .args(["run", "EVAL.yaml", "-o", "refused", "--sandbox", "strict"])
        .env("OPENAI_API_KEY", SECRET)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("OPENAI_API_KEY is not set"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
    // The other routes, with a target that runs.
    std::fs::write(
        root.join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: mock, response: 'hi key='}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", root.join(".env")).unwrap();
    std::fs::write(outer.path().join(".env"), format!("LEAKED={SECRET}\n")).unwrap();
    let strict = |cwd: &Path, eval: &str| {
        let out = crate::support::evalhost()
            .current_dir(cwd)
            .args(["run", eval, "-o"])
            .arg(root.join("out"))
            .args(["--sandbox", "strict"])
            .env("OPENAI_API_KEY", SECRET)
            .env("LEAKED", SECRET)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains(SECRET), "{stderr}");
        for file in ["results.jsonl", "summary.json", "report.html"] {
            let text = std::fs::read_to_string(root.join("out").join(file)).unwrap();
            assert!(!text.contains(SECRET), "{file} has the operator's secret");
        }
        std::fs::read_to_string(root.join("out/results.jsonl")).unwrap()
    };
    // From inside the project, and from an outside directory with a .env.
    let rows = strict(&root, "EVAL.yaml");
    assert!(rows.contains("hi key="), "{rows}");
    strict(outer.path(), &root.join("EVAL.yaml").display().to_string());
    // The suite's cache setting is ignored: nothing is written to its cache.
    assert!(!root.join("cache").exists());

    // A targets file beside the suite that is a link out: refused.
    std::fs::remove_file(root.join(".evalhost/targets.yaml")).unwrap();
    std::os::unix::fs::symlink(
        outer.path().join("secret.txt"),
        root.join(".evalhost/targets.yaml"),
    )
    .unwrap();
    let r = run_in(
        &root,
        &["run", "EVAL.yaml", "-o", "out2", "--sandbox", "strict"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("the targets file") && r.stderr.contains("outside"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("TOP SECRET"), "{}", r.stderr);
}

fn git_repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "x",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
}

/// Found by re-checking the fixes: a second repo checked out into the
/// first one's `.git` directory planted hooks that evalhost's own `git
/// commit` (the change baseline) then ran. Refused at load when the path
/// says `.git`, at setup when a link leads there, and git never runs hooks.
#[test]
fn a_repo_cannot_be_checked_out_into_another_repo_s_git_directory() {
    let (_outer, root) = project("");
    let pwned = root.join("PWNED");
    let hook = format!("#!/bin/sh\necho pwned > {}\n", pwned.display());
    git_repo(&root.join("src"), &[("README", "hello")]);
    git_repo(
        &root.join("evil"),
        &[("hooks/pre-commit", &hook), ("hooks/post-checkout", &hook)],
    );
    for path in ["a/.git", "a/.GIT"] {
        std::fs::write(
            root.join("EVAL.yaml"),
            format!("workspace:\n  repos:\n    - {{path: a, source: {{type: local, path: ./src}}}}\n    - {{path: {path}, source: {{type: local, path: ./evil}}}}\ntests:\n  - {{id: t, input: q, assertions: [{{type: contains, value: hi}}]}}\n"),
        )
        .unwrap();
        refused(
            &root,
            &["EVAL.yaml:4:", "cannot be or go through a `.git` directory"],
        );
    }
    // Through a link the template brings: refused when the workspace is set up.
    std::fs::create_dir_all(root.join("t")).unwrap();
    std::os::unix::fs::symlink("a/.git", root.join("t/x")).unwrap();
    std::fs::write(
        root.join("EVAL.yaml"),
        "workspace:\n  template: ./t\n  repos:\n    - {path: a, source: {type: local, path: ./src}}\n    - {path: x, source: {type: local, path: ./evil}}\ntests:\n  - {id: t, input: q, assertions: [{type: contains, value: hi}]}\n",
    )
    .unwrap();
    let r = run_in(&root, &["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 3, "every case is an execution error: {}", r.stderr);
    let rows = std::fs::read_to_string(root.join("out/results.jsonl")).unwrap();
    assert!(
        rows.contains("\"failure_class\":\"workspace\"")
            && (rows.contains("into a `.git` directory")
                || rows.contains("a repository is never made through one")),
        "the row names the refusal: {rows}"
    );
    assert!(!pwned.exists(), "a planted hook ran");
}
