//! The workspace lifecycle of a run: the suite's workspace prepared once
//! (template and repos, then `before_all`), a workspace per case (a copy of
//! the prepared one, or the case's own), `before_each` / `after_each`
//! around the agent, the diff of what changed, and `after_all` at the end.
//!
//! Order, as AgentV: template → repos → `before_all` → per case [baseline →
//! `before_each` → agent → changes → `after_each` → grading] → `after_all`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::suite::{Suite, TestCase};
use crate::workspace::{
    AFTER_TIMEOUT, BEFORE_TIMEOUT, HookContext, HookRun, Isolation, Spec, Workspace, run_hook,
};

pub use crate::results::usage::HookRow;

impl From<HookRun> for HookRow {
    fn from(run: HookRun) -> Self {
        Self {
            output: run.output,
            error: run.error,
        }
    }
}

/// The workspaces of one run.
pub struct Lifecycle {
    root: PathBuf,
    run_id: String,
    suite_spec: Option<Spec>,
    base_dir: PathBuf,
    shared: Option<Mutex<Workspace>>,
    base: Option<Workspace>,
    keep_all: bool,
    /// Why every case fails (a failed suite setup or `before_all`).
    pub setup_error: Option<String>,
    /// `before_all`'s run, for the first result.
    pub before_all: Option<HookRow>,
    kept: Mutex<Vec<PathBuf>>,
    counter: AtomicU64,
    /// Under `--isolate`, the run's sandbox: the suite's hooks run in one
    /// made for them, each case's processes in the case's.
    sandbox: Option<std::sync::Arc<crate::isolate::RunSandbox>>,
}

/// A case's workspace while it runs.
pub struct CaseWorkspace<'a> {
    lifecycle: &'a Lifecycle,
    workspace: Option<Workspace>,
    shared: Option<std::sync::MutexGuard<'a, Workspace>>,
    spec: Spec,
    /// Hook runs so far, by hook name.
    pub hooks: BTreeMap<String, HookRow>,
    /// Under `--isolate`, the case's sandbox.
    sandbox: Option<crate::isolate::CaseSandbox>,
}

impl Lifecycle {
    /// Prepares the suite's workspace, if the suite or any case has one.
    /// `None` when nothing needs a workspace.
    pub fn prepare(
        suite: &Suite,
        run_id: &str,
        keep_all: bool,
        sandbox: Option<std::sync::Arc<crate::isolate::RunSandbox>>,
    ) -> Option<Self> {
        if suite.workspace.is_none() && suite.tests.iter().all(|t| t.workspace.is_none()) {
            return None;
        }
        // The run's workspaces: a directory only this user can enter, with a
        // name nobody can guess (`$TMPDIR` is shared with every user).
        let root = match tempfile::Builder::new()
            .prefix(&format!("evalhost-workspaces-{run_id}-"))
            .tempdir()
        {
            Ok(dir) => {
                use std::os::unix::fs::PermissionsExt as _;
                let dir = dir.keep();
                let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
                dir
            }
            Err(_) => std::env::temp_dir()
                .join("evalhost-workspaces")
                .join(run_id),
        };
        let outside = sandbox.as_ref().map(crate::isolate::RunSandbox::outside);
        let mut lifecycle = Self {
            root,
            run_id: run_id.to_owned(),
            suite_spec: suite.workspace.clone(),
            base_dir: suite.dir.clone(),
            shared: None,
            base: None,
            keep_all,
            setup_error: None,
            before_all: None,
            kept: Mutex::new(Vec::new()),
            counter: AtomicU64::new(0),
            sandbox,
        };
        if let Some(spec) = &suite.workspace {
            let mut prepared = if let Some(dir) = &spec.static_path {
                match Workspace::open_static(spec, dir, &lifecycle.root.join("static.baseline.git"))
                {
                    Ok(ws) => Some(ws),
                    Err(e) => {
                        lifecycle.setup_error = Some(format!("workspace setup failed: {}", e.0));
                        None
                    }
                }
            } else if spec.needs_directory() {
                let dir = lifecycle.root.join(if spec.isolation == Isolation::Shared {
                    "shared"
                } else {
                    "base"
                });
                match Workspace::create(spec, &dir) {
                    Ok(ws) => Some(ws),
                    Err(e) => {
                        lifecycle.setup_error = Some(format!("workspace setup failed: {}", e.0));
                        None
                    }
                }
            } else {
                None
            };
            if lifecycle.setup_error.is_none()
                && let Some(preflight) = &spec.preflight
                && let Err(missing) = crate::workspace::preflight(preflight)
            {
                lifecycle.setup_error = Some(missing);
            }
            if let Some(ws) = prepared.as_mut() {
                ws.sandbox.clone_from(&outside);
            }
            if let Some(outside) = &outside {
                outside.set_workspace(prepared.as_ref().map(|w| w.path.as_path()));
            }
            if lifecycle.setup_error.is_none()
                && let Some(hook) = &spec.hooks.before_all
            {
                let run = run_hook(
                    hook,
                    &HookContext {
                        workspace: prepared.as_ref().map(|w| w.path.as_path()),
                        test_id: "__before_all__",
                        run_id,
                        case_input: None,
                        case_metadata: None,
                        base_dir: &suite.dir,
                        sandbox: outside.as_ref(),
                    },
                    BEFORE_TIMEOUT,
                );
                if let Some(error) = &run.error {
                    lifecycle.setup_error = Some(format!("before_all hook: {error}"));
                }
                lifecycle.before_all = Some(run.into());
            }
            match (spec.isolation, prepared) {
                (Isolation::Shared, Some(ws)) => lifecycle.shared = Some(Mutex::new(ws)),
                (_, ws) => lifecycle.base = ws,
            }
        }
        Some(lifecycle)
    }

    /// True when cases share one workspace (they must then run one at a
    /// time).
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Sets up the workspace of one case (trial).
    pub fn for_case(
        &self,
        test: &TestCase,
        trial: u32,
        sandbox: Option<&crate::isolate::CaseSandbox>,
    ) -> Result<CaseWorkspace<'_>, Box<(String, CaseWorkspace<'_>)>> {
        let spec = match (&test.workspace, &self.suite_spec) {
            (Some(own), Some(suite)) => own.over(suite),
            (Some(own), None) => (**own).clone(),
            (None, Some(suite)) => suite.clone(),
            (None, None) => Spec::default(),
        };
        let mut case = CaseWorkspace {
            lifecycle: self,
            workspace: None,
            shared: None,
            spec: spec.clone(),
            hooks: BTreeMap::new(),
            sandbox: sandbox.cloned(),
        };
        if let Some(error) = &self.setup_error {
            return Err(Box::new((error.clone(), case)));
        }
        let own_files = test.workspace.as_deref().is_some_and(Spec::needs_directory);
        if let Some(shared) = &self.shared
            && !own_files
        {
            case.shared = Some(shared.lock().unwrap_or_else(|e| e.into_inner()));
        } else if spec.needs_directory() || !spec.hooks.is_empty() {
            let n = self.counter.fetch_add(1, Ordering::Relaxed);
            let safe: String = test
                .id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(60)
                .collect();
            let dir = self.root.join(format!("{safe}-{trial}-{n}"));
            let made = match (&self.base, own_files) {
                (Some(base), false) => Workspace::copy_of(base, &dir),
                _ => Workspace::create(&spec, &dir),
            };
            match made {
                Ok(ws) => case.workspace = Some(ws),
                Err(e) => return Err(Box::new((format!("workspace setup failed: {}", e.0), case))),
            }
        }
        // Under --isolate: the case's sandbox holds its workspace (writable
        // to its processes), and evalhost's git in it runs there.
        if let Some(ws) = case.workspace_mut() {
            ws.sandbox = sandbox.cloned();
        }
        if let Some(sandbox) = sandbox {
            sandbox.set_workspace(case.path());
        }
        if let Some(ws) = case.workspace_mut()
            && let Err(e) = ws.baseline()
        {
            return Err(Box::new((
                format!("workspace baseline failed: {}", e.0),
                case,
            )));
        }
        if let Some(hook) = case.spec.hooks.before_each.clone() {
            if let Some(ws) = case.workspace_ref()
                && let Err(e) = ws.reset(hook.reset)
            {
                return Err(Box::new((
                    format!("before_each reset failed: {}", e.0),
                    case,
                )));
            }
            if !hook.argv.is_empty() || hook.shell.is_some() {
                let run = run_hook(&hook, &case.context(test), BEFORE_TIMEOUT);
                let error = run.error.clone();
                case.hooks.insert("before_each".into(), run.into());
                if let Some(error) = error {
                    return Err(Box::new((format!("before_each hook: {error}"), case)));
                }
            }
        }
        Ok(case)
    }

    /// Runs `after_all` and removes the prepared workspace (unless kept).
    /// Returns the hook's run, if there was one.
    pub fn finish(self) -> (Option<HookRow>, Vec<PathBuf>) {
        let mut after = None;
        if self.setup_error.is_none()
            && let Some(hook) = self
                .suite_spec
                .as_ref()
                .and_then(|s| s.hooks.after_all.clone())
        {
            let shared = self
                .shared
                .as_ref()
                .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).path.clone());
            let path = shared.or_else(|| self.base.as_ref().map(|b| b.path.clone()));
            let outside = self
                .sandbox
                .as_ref()
                .map(crate::isolate::RunSandbox::outside);
            if let Some(outside) = &outside {
                outside.set_workspace(path.as_deref());
            }
            let run = run_hook(
                &hook,
                &HookContext {
                    workspace: path.as_deref(),
                    test_id: "__after_all__",
                    run_id: &self.run_id,
                    case_input: None,
                    case_metadata: None,
                    base_dir: &self.base_dir,
                    sandbox: outside.as_ref(),
                },
                AFTER_TIMEOUT,
            );
            after = Some(run.into());
        }
        let mut kept = self.kept.into_inner().unwrap_or_else(|e| e.into_inner());
        if self.keep_all {
            if let Some(shared) = self.shared {
                kept.push(shared.into_inner().unwrap_or_else(|e| e.into_inner()).path);
            }
        } else {
            if let Some(base) = &self.base {
                base.remove();
            }
            if let Some(shared) = &self.shared {
                let ws = shared.lock().unwrap_or_else(|e| e.into_inner());
                ws.remove();
            }
        }
        if kept.is_empty() && !self.keep_all {
            let _ = std::fs::remove_dir(&self.root);
        }
        (after, kept)
    }
}

impl CaseWorkspace<'_> {
    fn workspace_ref(&self) -> Option<&Workspace> {
        self.workspace.as_ref().or(self.shared.as_deref())
    }

    fn workspace_mut(&mut self) -> Option<&mut Workspace> {
        match (&mut self.workspace, &mut self.shared) {
            (Some(ws), _) => Some(ws),
            (None, Some(guard)) => Some(&mut **guard),
            (None, None) => None,
        }
    }

    /// The workspace directory, when the case has one.
    pub fn path(&self) -> Option<&Path> {
        self.workspace_ref().map(|w| w.path.as_path())
    }

    fn context<'b>(&'b self, test: &'b TestCase) -> HookContext<'b> {
        HookContext {
            workspace: self.path(),
            test_id: &test.id,
            run_id: &self.lifecycle.run_id,
            case_input: test
                .input
                .iter()
                .rev()
                .find(|m| m.role == "user")
                .map(|m| m.content.as_str()),
            case_metadata: Some(&test.metadata),
            base_dir: &self.lifecycle.base_dir,
            sandbox: self.sandbox.as_ref(),
        }
    }

    /// The diff of what changed since the baseline, then `after_each` (its
    /// reset first). Returns the diff.
    pub fn after_agent(&mut self, test: &TestCase) -> Option<String> {
        let changes = match self
            .workspace_ref()
            .map(crate::workspace::Workspace::changes)
        {
            Some(Ok(diff)) => Some(diff).filter(|d| !d.is_empty()),
            Some(Err(e)) => {
                // Said in the row, not taken for "nothing changed".
                self.hooks.insert(
                    "file_changes".into(),
                    HookRow {
                        output: String::new(),
                        error: Some(format!(
                            "the workspace's changes could not be read, so no diff is recorded: {}",
                            e.0
                        )),
                    },
                );
                None
            }
            None => None,
        };
        if let Some(hook) = self.spec.hooks.after_each.clone() {
            if let Some(ws) = self.workspace_ref()
                && let Err(e) = ws.reset(hook.reset)
            {
                self.hooks.insert(
                    "after_each".into(),
                    HookRow {
                        output: String::new(),
                        error: Some(format!("reset failed: {}", e.0)),
                    },
                );
            }
            if !hook.argv.is_empty() || hook.shell.is_some() {
                let run = run_hook(&hook, &self.context(test), AFTER_TIMEOUT);
                self.hooks.insert("after_each".into(), run.into());
            }
        }
        changes
    }

    /// Removes the case's own workspace when it passed (and not
    /// `--keep-workspaces`); otherwise keeps it and returns its path.
    pub fn finish(self, passed: bool) -> Option<PathBuf> {
        let ws = self.workspace?;
        if passed && !self.lifecycle.keep_all {
            ws.remove();
            None
        } else {
            self.lifecycle
                .kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(ws.path.clone());
            Some(ws.path)
        }
    }
}
