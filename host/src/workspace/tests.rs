use super::*;

fn sh(cmd: &str, dir: &Path) {
    let out = process::run(&process::Spec {
        shell: Some(cmd),
        cwd: Some(dir),
        ..process::Spec::default()
    })
    .unwrap();
    assert!(out.success(), "{cmd}: {}", out.message());
}

/// Whatever lands in a repository's `.git/hooks`, the git evalhost runs
/// never runs it.
#[test]
fn evalhost_s_git_runs_no_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(&["init", "-q"], repo).unwrap();
    let marker = repo.join("hook-ran");
    let hook = repo.join(".git/hooks/pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(&["commit", "-q", "--allow-empty", "-m", "x"], repo).unwrap();
    assert!(!marker.exists(), "the pre-commit hook ran");
    // The same commit through plain git does run it: the test can fail.
    let ran = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "y",
        ])
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(ran.success());
    assert!(marker.exists(), "plain git should have run the hook");
}

/// A nested `.git` (a directory, or a `gitdir:` file) could bring hooks
/// and config that git would run in the workspace: never copied.
#[test]
fn a_template_s_git_directories_are_skipped_at_every_depth() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("t");
    std::fs::create_dir_all(from.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(from.join("sub/deeper/.git/hooks")).unwrap();
    std::fs::write(
        from.join("sub/deeper/.git/hooks/post-checkout"),
        "#!/bin/sh\n",
    )
    .unwrap();
    std::fs::create_dir_all(from.join("other")).unwrap();
    std::fs::write(from.join("other/.git"), "gitdir: ../evil.git\n").unwrap();
    std::fs::write(from.join("sub/keep.txt"), "kept").unwrap();
    let to = dir.path().join("w");
    copy_tree(&from, &to).unwrap();
    assert_eq!(
        std::fs::read_to_string(to.join("sub/keep.txt")).unwrap(),
        "kept"
    );
    assert!(!to.join(".git").exists());
    assert!(!to.join("sub/deeper/.git").exists());
    assert!(!to.join("other/.git").exists());
    assert!(to.join("sub/deeper").is_dir());
}

#[test]
fn template_repo_changes_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A local repository with two commits.
    let origin = root.join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    sh(
        "git init -q -b main && git config user.email t@t && git config user.name t && echo one > f.txt && git add -A && git commit -qm one && git tag v1 && echo two > f.txt && git commit -qam two",
        &origin,
    );
    let template = root.join("template");
    std::fs::create_dir_all(&template).unwrap();
    std::fs::write(template.join("notes.md"), "hello\n").unwrap();
    let spec = Spec {
        template: Some(template),
        repos: vec![Repo {
            path: "repo".into(),
            url: origin.display().to_string(),
            reference: Some("v1".into()),
            depth: Some(1),
            ancestor: 0,
        }],
        ..Spec::default()
    };
    let mut ws = Workspace::create(&spec, &root.join("ws")).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path.join("repo/f.txt")).unwrap(),
        "one\n",
        "checked out v1"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path.join("notes.md")).unwrap(),
        "hello\n"
    );
    ws.baseline().unwrap();
    std::fs::write(ws.path.join("repo/f.txt"), "changed\n").unwrap();
    std::fs::write(ws.path.join("new.txt"), "new\n").unwrap();
    let diff = ws.changes().unwrap();
    assert!(
        diff.contains("+++ b/repo/f.txt") && diff.contains("+changed"),
        "{diff}"
    );
    assert!(
        diff.contains("+++ b/new.txt") && diff.contains("+new"),
        "{diff}"
    );
    ws.reset(Reset::Strict).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path.join("repo/f.txt")).unwrap(),
        "one\n"
    );
    assert!(!ws.path.join("new.txt").exists());
    assert_eq!(ws.changes().unwrap(), "");
}

#[test]
fn shell_hooks_quote_every_placeholder_and_fill_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let meta: Map<String, Value> =
        serde_json::from_str(r#"{"note": "it's $(echo META)"}"#).unwrap();
    let ctx = HookContext {
        workspace: Some(dir.path()),
        test_id: "x;echo PWNED-ID;#{{case_input}}",
        run_id: "r",
        case_input: Some("`echo PWNED-INPUT` '; echo PWNED-QUOTE; '"),
        case_metadata: Some(&meta),
        base_dir: dir.path(),
        sandbox: None,
    };
    let hook = Hook {
        argv: Vec::new(),
        shell: Some(
            "printf '%s|' {{test_id}} \"{{case_input}}\" \"$(printf %s {{case_metadata}})\"".into(),
        ),
        cwd: None,
        timeout: None,
        reset: Reset::None,
    };
    let run = run_hook(&hook, &ctx, BEFORE_TIMEOUT);
    assert!(run.ok, "{run:?}");
    assert_eq!(
        run.output,
        "x;echo PWNED-ID;#{{case_input}}|`echo PWNED-INPUT` '; echo PWNED-QUOTE; '|{\"note\":\"it's $(echo META)\"}|"
    );
}

#[test]
fn hooks_get_stdin_placeholders_and_fail_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let meta: Map<String, Value> = serde_json::from_str(r#"{"patch": "p.diff"}"#).unwrap();
    let ctx = HookContext {
        workspace: Some(dir.path()),
        test_id: "case-1",
        run_id: "run-9",
        case_input: Some("Fix it"),
        case_metadata: Some(&meta),
        base_dir: dir.path(),
        sandbox: None,
    };
    let hook = Hook {
        argv: vec![
            "sh".into(),
            "-c".into(),
            "cat; echo \" {{test_id}}\"".into(),
        ],
        shell: None,
        cwd: None,
        timeout: None,
        reset: Reset::None,
    };
    let run = run_hook(&hook, &ctx, BEFORE_TIMEOUT);
    assert!(run.ok);
    let (json_part, rest) = run.output.split_once(" case-1").unwrap();
    let payload: Value = serde_json::from_str(json_part).unwrap();
    assert_eq!(payload["case_metadata"]["patch"], "p.diff");
    assert_eq!(payload["workspace_path"], dir.path().display().to_string());
    assert_eq!(rest.trim(), "");
    let failing = Hook {
        argv: Vec::new(),
        shell: Some("echo nope >&2; exit 4".into()),
        ..hook.clone()
    };
    assert_eq!(
        run_hook(&failing, &ctx, BEFORE_TIMEOUT).error.as_deref(),
        Some("Script failed: nope")
    );
    let slow = Hook {
        argv: Vec::new(),
        shell: Some("sleep 5".into()),
        timeout: Some(Duration::from_millis(100)),
        ..hook
    };
    assert_eq!(
        run_hook(&slow, &ctx, BEFORE_TIMEOUT).error.as_deref(),
        Some("Script timed out after 100 ms")
    );
}
