//! Workspaces: the directory a case's agent works in, built from a
//! `template` (copied, `.git` skipped) and `repos` (git, from a URL or a
//! local path, checked out at a ref, optionally shallow), with lifecycle
//! `hooks`. Each case gets its own copy (`isolation: per_test`, evalhost's
//! default) or all share one (`isolation: shared`). After the agent runs,
//! a unified diff of what it changed is recorded as `file_changes`; failed
//! cases' workspaces are kept and listed, the others removed.
//!
//! Hooks (`before_all`, `before_each`, `after_each`, `after_all`) get JSON on
//! stdin (`workspace_path`, `test_id`, `eval_run_id`, `case_input`,
//! `case_metadata`) and `{{workspace_path}}`-style placeholders in their
//! arguments. A failing `before_*` hook fails its case(s) with
//! `failure_class: workspace`; `after_*` failures are recorded, not fatal.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::process;

mod copy;
pub use copy::copy_tree;
use copy::{copy_tree_with_git, is_git_dir_name};

/// Default deadline of `before_*` hooks (AgentV's).
pub const BEFORE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default deadline of `after_*` hooks (AgentV's).
pub const AFTER_TIMEOUT: Duration = Duration::from_secs(30);
/// Deadline of git commands that materialise repos.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(600);

pub use evalhost_suite::workspace::{Hook, Hooks, Isolation, Repo, Reset, Spec};

/// Why a workspace could not be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError(pub String);

/// Settings every git command evalhost runs gets: no hooks, no fsmonitor
/// command, whatever a checked-out file or the suite put in a repository.
const GIT_SAFETY: &[&str] = &[
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
];

/// Removes a directory a case's processes wrote, however deep: `rm -rf`
/// (GNU rm walks any depth without recursing on the stack; the standard
/// library's removal recurses, and a target that made 30 000 nested
/// directories overflowed a worker's stack and aborted the run), else the
/// standard library's.
fn remove_tree(path: &Path) {
    if !path.exists() {
        return;
    }
    let argv = [
        "rm".to_owned(),
        "-rf".to_owned(),
        "--one-file-system".to_owned(),
        "--".to_owned(),
        path.display().to_string(),
    ];
    let removed = process::run(&process::Spec {
        argv: &argv,
        ..process::Spec::default()
    })
    .is_ok_and(|o| o.success());
    if !removed {
        let _ = std::fs::remove_dir_all(path);
    }
}

fn git(args: &[&str], cwd: &Path) -> Result<String, SetupError> {
    git_confined(args, cwd, None)
}

/// `git` in a case's workspace. Under `--isolate` (`confined`: the case's
/// sandbox, the workspace and its baseline writable) it runs in a sandbox
/// like the case's own processes: the workspace's repositories hold
/// configuration the target could write (`diff.external`, filters,
/// `core.sshCommand`), which must not run anything on the host.
fn git_confined(
    args: &[&str],
    cwd: &Path,
    confined: Option<&crate::isolate::Confined>,
) -> Result<String, SetupError> {
    let argv: Vec<String> = std::iter::once("git")
        .chain(GIT_SAFETY.iter().copied())
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect();
    let env = [
        ("GIT_TERMINAL_PROMPT".to_owned(), "0".to_owned()),
        // Only transports that move data: never `ext::` (runs a command)
        // whatever the user's git config says.
        (
            "GIT_ALLOW_PROTOCOL".to_owned(),
            "file:git:http:https:ssh".to_owned(),
        ),
        ("GIT_AUTHOR_NAME".to_owned(), "evalhost".to_owned()),
        (
            "GIT_AUTHOR_EMAIL".to_owned(),
            "evalhost@localhost".to_owned(),
        ),
        ("GIT_COMMITTER_NAME".to_owned(), "evalhost".to_owned()),
        (
            "GIT_COMMITTER_EMAIL".to_owned(),
            "evalhost@localhost".to_owned(),
        ),
    ];
    let out = process::run(&process::Spec {
        argv: &argv,
        cwd: Some(cwd),
        timeout: Some(GIT_TIMEOUT),
        env: &env,
        sandbox: confined,
        ..process::Spec::default()
    })
    .map_err(|e| SetupError(format!("git could not start: {e}")))?;
    if out.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(SetupError(format!(
            "`git {}` failed: {}",
            args.join(" "),
            out.message()
        )))
    }
}

/// Clones `repo` into `root`.
fn materialise(repo: &Repo, root: &Path) -> Result<(), SetupError> {
    // The loader refuses these; never let git read a value as an option.
    if repo.url.starts_with('-')
        || repo
            .reference
            .as_deref()
            .is_some_and(|r| r.starts_with('-'))
    {
        return Err(SetupError(format!(
            "refusing repo {:?} at {:?}: a value starting with `-` would be a git option",
            repo.url, repo.reference
        )));
    }
    let dest = root.join(&repo.path);
    // No directory is made through a link: every part of the path that
    // exists must be a real directory (a link the template brought could
    // point anywhere on the host, and `create_dir_all` would follow it).
    let mut at = root.to_path_buf();
    for part in Path::new(&repo.path).components() {
        match part {
            std::path::Component::Normal(name) => at.push(name),
            std::path::Component::CurDir => continue,
            _ => {
                return Err(SetupError(format!(
                    "refusing repo path `{}`: only plain names inside the workspace",
                    repo.path
                )));
            }
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(SetupError(format!(
                    "refusing repo path `{}`: {} is a link (a repository is never made through one)",
                    repo.path,
                    at.display()
                )));
            }
            Ok(m) if !m.is_dir() => {
                return Err(SetupError(format!(
                    "refusing repo path `{}`: {} is not a directory",
                    repo.path,
                    at.display()
                )));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    std::fs::create_dir_all(&dest)
        .map_err(|e| SetupError(format!("cannot create {}: {e}", dest.display())))?;
    // Where it really lands (through any link the template brought) must be
    // inside the workspace and not inside a `.git` directory, where files
    // would become another repository's hooks and config.
    let inside = match (dest.canonicalize(), root.canonicalize()) {
        (Ok(real), Ok(real_root)) => real
            .strip_prefix(&real_root)
            .is_ok_and(|rel| !rel.components().any(|c| is_git_dir_name(c.as_os_str()))),
        _ => false,
    };
    if !inside {
        return Err(SetupError(format!(
            "refusing repo path `{}`: it resolves outside the workspace or into a `.git` directory",
            repo.path
        )));
    }
    // file:// makes --depth work for local repository directories; a git
    // bundle (a file) is fetched from by its plain path.
    let url = if Path::new(&repo.url).is_dir() {
        format!("file://{}", repo.url)
    } else {
        repo.url.clone()
    };
    git(&["init", "-q"], &dest)?;
    git(&["remote", "add", "origin", &url], &dest)?;
    let wanted = repo.reference.clone().unwrap_or_else(|| "HEAD".into());
    let depth = repo.depth.map(|d| format!("--depth={d}"));
    let mut fetch = vec!["fetch", "-q"];
    if let Some(d) = &depth {
        fetch.push(d);
    }
    fetch.extend(["origin", wanted.as_str()]);
    if git(&fetch, &dest).is_ok() {
        git(&["checkout", "-q", "--detach", "FETCH_HEAD"], &dest)?;
    } else {
        // A commit the server will not serve by name: fetch everything, then
        // check it out.
        git(
            &[
                "fetch",
                "-q",
                "--tags",
                "origin",
                "+refs/heads/*:refs/remotes/origin/*",
            ],
            &dest,
        )
        .map_err(|e| {
            SetupError(format!(
                "cannot fetch repo `{}` from {}: {}",
                repo.path, repo.url, e.0
            ))
        })?;
        git(&["checkout", "-q", "--detach", &wanted], &dest).map_err(|e| {
            SetupError(format!(
                "cannot check out `{wanted}` of {}: {}",
                repo.url, e.0
            ))
        })?;
    }
    // AgentV's `ancestor: N`: the N-th ancestor of what was checked out.
    if repo.ancestor > 0 {
        let back = format!("HEAD~{}", repo.ancestor);
        git(&["checkout", "-q", "--detach", &back], &dest).map_err(|e| {
            SetupError(format!(
                "Cannot resolve ancestor {} of ref '{wanted}' in repo `{}`{}: {}",
                repo.ancestor,
                repo.path,
                if repo.depth.is_some() {
                    " (a shallow clone: `clone.depth` leaves too little history)"
                } else {
                    ""
                },
                e.0
            ))
        })?;
    }
    Ok(())
}

/// AgentV's preflight checks (`workspace.env`): each command must be on
/// the PATH (looked up without a shell) and each Python module importable
/// by `python3 -I` (isolated: no module from the current directory or
/// `PYTHONPATH` is run). `Err` is AgentV's message listing what is missing.
pub fn preflight(checks: &evalhost_suite::workspace::Preflight) -> Result<(), String> {
    let on_path = |program: &str| {
        if program.contains('/') {
            return Path::new(program).is_file();
        }
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
    };
    let mut missing: Vec<String> = checks
        .commands
        .iter()
        .filter(|c| !on_path(c))
        .map(|c| format!("command: {c}"))
        .collect();
    let neutral = std::env::temp_dir();
    for module in &checks.python_modules {
        let argv = [
            "python3".to_owned(),
            "-I".to_owned(),
            "-c".to_owned(),
            "import importlib, sys; importlib.import_module(sys.argv[1])".to_owned(),
            module.clone(),
        ];
        let ok = process::run(&process::Spec {
            argv: &argv,
            cwd: Some(&neutral),
            timeout: Some(Duration::from_secs(60)),
            ..process::Spec::default()
        })
        .is_ok_and(|o| o.success());
        if !ok {
            missing.push(format!("python module: {module}"));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "Preflight checks failed — missing dependencies:\n{}\n\nInstall the missing dependencies before running this eval.",
        missing
            .iter()
            .map(|m| format!("  • {m}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

/// A materialised workspace with its change baseline.
#[derive(Debug)]
pub struct Workspace {
    /// The directory.
    pub path: PathBuf,
    repos: Vec<String>,
    snapshot: Option<PathBuf>,
    /// A static workspace: the user's directory, never removed; its
    /// baseline lives here instead of beside it.
    static_baseline: Option<PathBuf>,
    /// Under `--isolate`, the sandbox of the case using it now (evalhost's
    /// own git in it runs there).
    pub sandbox: Option<crate::isolate::CaseSandbox>,
}

impl Workspace {
    /// Builds a workspace at `path` from `spec`.
    pub fn create(spec: &Spec, path: &Path) -> Result<Self, SetupError> {
        std::fs::create_dir_all(path)
            .map_err(|e| SetupError(format!("cannot create {}: {e}", path.display())))?;
        if let Some(template) = &spec.template {
            if !template.is_dir() {
                return Err(SetupError(format!(
                    "workspace template {} is not a directory",
                    template.display()
                )));
            }
            copy_tree(template, path).map_err(|e| {
                SetupError(format!("cannot copy template {}: {e}", template.display()))
            })?;
        }
        for repo in &spec.repos {
            materialise(repo, path)?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            repos: spec.repos.iter().map(|r| r.path.clone()).collect(),
            snapshot: None,
            static_baseline: None,
            sandbox: None,
        })
    }

    /// A static workspace (`mode: static`, `path`): `dir` itself, made from
    /// the template and repos when missing or empty, else used as it is
    /// (a repo whose directory is missing is cloned, as AgentV does). Its
    /// change baseline is kept at `baseline`, not beside it.
    pub fn open_static(spec: &Spec, dir: &Path, baseline: &Path) -> Result<Self, SetupError> {
        let empty = match std::fs::read_dir(dir) {
            Ok(mut entries) => entries.next().is_none(),
            Err(_) => true,
        };
        if empty {
            let mut ws = Self::create(spec, dir)?;
            ws.static_baseline = Some(baseline.to_path_buf());
            return Ok(ws);
        }
        for repo in &spec.repos {
            if !dir.join(&repo.path).exists() {
                materialise(repo, dir)?;
            }
        }
        Ok(Self {
            path: dir.to_path_buf(),
            repos: spec.repos.iter().map(|r| r.path.clone()).collect(),
            snapshot: None,
            static_baseline: Some(baseline.to_path_buf()),
            sandbox: None,
        })
    }

    /// True for a static workspace (the user's directory).
    pub fn is_static(&self) -> bool {
        self.static_baseline.is_some()
    }

    /// A copy of `base` at `path` (for per-test isolation of a prepared
    /// base).
    pub fn copy_of(base: &Self, path: &Path) -> Result<Self, SetupError> {
        copy_tree_with_git(&base.path, path)
            .map_err(|e| SetupError(format!("cannot copy the workspace: {e}")))?;
        Ok(Self {
            path: path.to_path_buf(),
            repos: base.repos.clone(),
            snapshot: None,
            static_baseline: None,
            sandbox: None,
        })
    }

    fn snapshot_dir(&self) -> PathBuf {
        if let Some(dir) = &self.static_baseline {
            return dir.clone();
        }
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.path.with_file_name(format!(".{name}.baseline.git"))
    }

    fn root_git(&self, args: &[&str]) -> Result<String, SetupError> {
        let git_dir = format!("--git-dir={}", self.snapshot_dir().display());
        let work_tree = format!("--work-tree={}", self.path.display());
        let mut all = vec![git_dir.as_str(), work_tree.as_str()];
        all.extend_from_slice(args);
        git_confined(&all, &self.path, self.confined().as_ref())
    }

    /// Under `--isolate` (the workspace has a sandbox), evalhost's git in
    /// it, confined: it may write the workspace and its baseline; else
    /// none, and git runs as evalhost's own command.
    fn confined(&self) -> Option<crate::isolate::Confined> {
        self.sandbox
            .as_ref()
            .map(|s| s.git(&[self.path.clone(), self.snapshot_dir()]))
    }

    /// `git` in one of the workspace's repositories (see [`git_confined`]).
    fn repo_git(&self, args: &[&str], dir: &Path) -> Result<String, SetupError> {
        git_confined(args, dir, self.confined().as_ref())
    }

    /// Records the baseline that [`Workspace::changes`] and resets compare
    /// against: the files outside repos, and each repo's state.
    pub fn baseline(&mut self) -> Result<(), SetupError> {
        let dir = self.snapshot_dir();
        if !dir.exists() {
            git(
                &["init", "-q", "--bare", &dir.display().to_string()],
                &self.path,
            )?;
            let mut exclude = String::from(".git\n");
            for repo in &self.repos {
                exclude.push_str(&format!(
                    "/{}/\n",
                    repo.trim_start_matches("./").trim_end_matches('/')
                ));
            }
            std::fs::create_dir_all(dir.join("info")).ok();
            std::fs::write(dir.join("info/exclude"), exclude)
                .map_err(|e| SetupError(e.to_string()))?;
        }
        self.root_git(&["add", "-A"])?;
        self.root_git(&["commit", "-q", "--allow-empty", "-m", "baseline"])?;
        self.root_git(&["tag", "-f", "evalhost-baseline"])?;
        for repo in &self.repos {
            let dir = self.path.join(repo);
            self.repo_git(&["add", "-A"], &dir)?;
            self.repo_git(
                &["commit", "-q", "--allow-empty", "-m", "evalhost baseline"],
                &dir,
            )?;
            self.repo_git(&["tag", "-f", "evalhost-baseline"], &dir)?;
        }
        self.snapshot = Some(dir);
        Ok(())
    }

    /// A unified diff of everything changed since the baseline.
    pub fn changes(&self) -> Result<String, SetupError> {
        if self.snapshot.is_none() {
            return Ok(String::new());
        }
        let mut diff = String::new();
        self.root_git(&["add", "-A"])?;
        diff.push_str(&self.root_git(&[
            "diff",
            "--cached",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "evalhost-baseline",
        ])?);
        for repo in &self.repos {
            let dir = self.path.join(repo);
            self.repo_git(&["add", "-A"], &dir)?;
            let prefix_a = format!(
                "--src-prefix=a/{}/",
                repo.trim_start_matches("./").trim_end_matches('/')
            );
            let prefix_b = format!(
                "--dst-prefix=b/{}/",
                repo.trim_start_matches("./").trim_end_matches('/')
            );
            diff.push_str(&self.repo_git(
                &[
                    "diff",
                    "--cached",
                    "--no-color",
                    // The diff as git makes it, whatever the repository's
                    // configuration (which the target could write) says.
                    "--no-ext-diff",
                    "--no-textconv",
                    &prefix_a,
                    &prefix_b,
                    "evalhost-baseline",
                ],
                &dir,
            )?);
        }
        Ok(diff)
    }

    /// Puts the workspace back to its baseline.
    pub fn reset(&self, reset: Reset) -> Result<(), SetupError> {
        if reset == Reset::None || self.snapshot.is_none() {
            return Ok(());
        }
        let clean = if reset == Reset::Strict {
            "-fdx"
        } else {
            "-fd"
        };
        self.root_git(&["reset", "-q", "--hard", "evalhost-baseline"])?;
        self.root_git(&["clean", "-q", clean])?;
        for repo in &self.repos {
            let dir = self.path.join(repo);
            self.repo_git(&["reset", "-q", "--hard", "evalhost-baseline"], &dir)?;
            self.repo_git(&["clean", "-q", clean], &dir)?;
        }
        Ok(())
    }

    /// Removes the workspace and its baseline.
    pub fn remove(&self) {
        if !self.is_static() {
            remove_tree(&self.path);
        }
        remove_tree(&self.snapshot_dir());
    }
}

/// What a hook is told about its case.
#[derive(Debug, Clone)]
pub struct HookContext<'a> {
    /// The workspace, if any.
    pub workspace: Option<&'a Path>,
    /// The test id (or `__before_all__` / `__after_all__`).
    pub test_id: &'a str,
    /// The run's id.
    pub run_id: &'a str,
    /// The case's input as text.
    pub case_input: Option<&'a str>,
    /// The case's metadata.
    pub case_metadata: Option<&'a Map<String, Value>>,
    /// Default working directory (the eval file's directory).
    pub base_dir: &'a Path,
    /// Under `--isolate`, the sandbox the hook runs in.
    pub sandbox: Option<&'a crate::isolate::CaseSandbox>,
}

/// What a hook did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// True when it exited 0 in time.
    pub ok: bool,
    /// stdout.
    pub output: String,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// Runs `hook` with `ctx`; `default_timeout` when the hook sets none.
pub fn run_hook(hook: &Hook, ctx: &HookContext<'_>, default_timeout: Duration) -> HookRun {
    let workspace = ctx
        .workspace
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let metadata_json = ctx
        .case_metadata
        .map(|m| Value::Object(m.clone()).to_string())
        .unwrap_or_default();
    // One pass over each argument. In a `shell:` line a placeholder becomes
    // a reference to an environment variable holding its value: a test id,
    // an input or metadata is data, never shell code.
    let value = |name: &str| -> Option<String> {
        Some(
            match name {
                "workspace_path" => workspace.as_str(),
                "test_id" => ctx.test_id,
                "eval_run_id" => ctx.run_id,
                "case_input" => ctx.case_input.unwrap_or(""),
                "case_metadata" => metadata_json.as_str(),
                _ => return None,
            }
            .to_owned(),
        )
    };
    let argv: Vec<String> = hook
        .argv
        .iter()
        .map(|a| process::fill_placeholders(a, "{{", "}}", value))
        .collect();
    let shell = hook.shell.as_deref().map(|line| {
        process::fill_shell_template(line, "{{", "}}", |name| {
            Some(process::ShellRef::Var(match name {
                "workspace_path" => "EVALHOST_HOOK_WORKSPACE_PATH",
                "test_id" => "EVALHOST_HOOK_TEST_ID",
                "eval_run_id" => "EVALHOST_HOOK_EVAL_RUN_ID",
                "case_input" => "EVALHOST_HOOK_CASE_INPUT",
                "case_metadata" => "EVALHOST_HOOK_CASE_METADATA",
                _ => return None,
            }))
        })
    });
    let stdin = json!({
        "workspace_path": ctx.workspace.map(|p| p.display().to_string()),
        "test_id": ctx.test_id,
        "eval_run_id": ctx.run_id,
        "case_input": ctx.case_input,
        "case_metadata": ctx.case_metadata,
    })
    .to_string();
    let cwd = hook
        .cwd
        .clone()
        .unwrap_or_else(|| ctx.base_dir.to_path_buf());
    let mut env = Vec::new();
    if shell.is_some() {
        for (name, var) in [
            ("workspace_path", "EVALHOST_HOOK_WORKSPACE_PATH"),
            ("test_id", "EVALHOST_HOOK_TEST_ID"),
            ("eval_run_id", "EVALHOST_HOOK_EVAL_RUN_ID"),
            ("case_input", "EVALHOST_HOOK_CASE_INPUT"),
            ("case_metadata", "EVALHOST_HOOK_CASE_METADATA"),
        ] {
            env.push((var.to_owned(), value(name).unwrap_or_default()));
        }
    }
    if let Some(ws) = ctx.workspace {
        env.push((
            "EVALHOST_WORKSPACE_PATH".to_owned(),
            ws.display().to_string(),
        ));
        env.push(("AGENTV_WORKSPACE_PATH".to_owned(), ws.display().to_string()));
    }
    let timeout = hook.timeout.unwrap_or(default_timeout);
    // Under --isolate the hook writes only the case's workspace, and
    // starts only inside it or the project.
    let confined = match ctx.sandbox.map(|s| s.hook(Some(&cwd))).transpose() {
        Ok(c) => c,
        Err(refused) => {
            return HookRun {
                ok: false,
                output: String::new(),
                error: Some(format!("Script refused: {refused}")),
            };
        }
    };
    let outcome = process::run(&process::Spec {
        argv: &argv,
        shell: shell.as_deref(),
        cwd: Some(&cwd),
        stdin: stdin.as_bytes(),
        timeout: Some(timeout),
        env: &env,
        shell_args: &[],
        env_remove: &[],
        sandbox: confined.as_ref(),
        clear_env: false,
    });
    match outcome {
        Ok(o) => {
            let output = String::from_utf8_lossy(&o.stdout).into_owned();
            let error = if o.timed_out {
                Some(format!("Script timed out after {} ms", timeout.as_millis()))
            } else if o.code != Some(0) {
                let stderr = String::from_utf8_lossy(&o.stderr).trim().to_owned();
                Some(if stderr.is_empty() {
                    format!(
                        "Script failed: Process exited with code {}",
                        o.code.unwrap_or(-1)
                    )
                } else {
                    format!("Script failed: {stderr}")
                })
            } else {
                None
            };
            HookRun {
                ok: error.is_none(),
                output,
                error,
            }
        }
        Err(e) => HookRun {
            ok: false,
            output: String::new(),
            error: Some(format!("Script failed: could not start: {e}")),
        },
    }
}

#[cfg(test)]
mod tests;
