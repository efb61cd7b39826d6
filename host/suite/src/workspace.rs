//! Workspace specs as a suite writes them: the directory a case's agent
//! works in (a `template`, git `repos`), how cases share it, and its
//! lifecycle hooks. Only data: the host materialises them and runs the
//! hooks (`evalhost::workspace`, `evalhost::lifecycle`).

use std::path::PathBuf;
use std::time::Duration;

/// How cases share workspaces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Every case gets its own copy.
    #[default]
    PerTest,
    /// All cases work in one workspace.
    Shared,
}

/// What to reset before or after a case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reset {
    /// Nothing.
    #[default]
    None,
    /// `git reset --hard` to the baseline and `git clean -fd`.
    Fast,
    /// The same with `git clean -fdx` (ignored files too).
    Strict,
}

/// A lifecycle hook.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// Program and arguments (no shell).
    pub argv: Vec<String>,
    /// Or a shell command line.
    pub shell: Option<String>,
    /// Working directory (default: the eval file's directory).
    pub cwd: Option<PathBuf>,
    /// Deadline.
    pub timeout: Option<Duration>,
    /// Reset to run first.
    pub reset: Reset,
}

/// The four hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hooks {
    /// Once, before any case.
    pub before_all: Option<Hook>,
    /// Before each case.
    pub before_each: Option<Hook>,
    /// After each case's agent, before grading.
    pub after_each: Option<Hook>,
    /// Once, after every case.
    pub after_all: Option<Hook>,
}

impl Hooks {
    /// `self`'s hooks, each falling back to `base`'s.
    pub fn over(&self, base: &Self) -> Self {
        Self {
            before_all: self.before_all.clone().or_else(|| base.before_all.clone()),
            before_each: self
                .before_each
                .clone()
                .or_else(|| base.before_each.clone()),
            after_each: self.after_each.clone().or_else(|| base.after_each.clone()),
            after_all: self.after_all.clone().or_else(|| base.after_all.clone()),
        }
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.before_all.is_none()
            && self.before_each.is_none()
            && self.after_each.is_none()
            && self.after_all.is_none()
    }
}

/// A git repository to materialise into the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// Where, relative to the workspace root.
    pub path: String,
    /// A URL, or an absolute local path.
    pub url: String,
    /// What to check out (branch, tag or commit); the default branch when
    /// absent.
    pub reference: Option<String>,
    /// Shallow-clone depth.
    pub depth: Option<u32>,
    /// AgentV's `ancestor: N`: the N-th first-parent ancestor of `reference`
    /// is checked out (0: the reference itself).
    pub ancestor: u32,
}

/// A workspace as written, resolved.
/// A container the suite asks its cases to run in (AgentV's
/// `workspace.docker`, AgentV 5's `environment: {type: docker}`): evalhost
/// runs it only with a working docker or podman, never on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// The image named, when one is.
    pub image: Option<String>,
    /// `memory` (docker's `--memory`, e.g. `2g`).
    pub memory: Option<String>,
    /// `cpus` (docker's `--cpus`).
    pub cpus: Option<String>,
    /// `timeout`, in seconds (AgentV's default: 1800).
    pub timeout_s: Option<u64>,
    /// Where it was written: `file:line` and the key.
    pub place: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spec {
    /// Directory copied into the workspace.
    pub template: Option<PathBuf>,
    /// Repositories.
    pub repos: Vec<Repo>,
    /// Hooks.
    pub hooks: Hooks,
    /// Sharing.
    pub isolation: Isolation,
    /// `mode: static` with `path`: this existing directory is the
    /// workspace, shared by every case and never removed (made from the
    /// template and repos when missing or empty).
    pub static_path: Option<PathBuf>,
    /// Where `path` of a static workspace was written: `file:line` and the
    /// key (for a refusal at run time).
    pub static_place: String,
    /// `env`: what the machine must have before anything runs (checked
    /// once, before `before_all`).
    pub preflight: Option<Preflight>,
    /// A container the cases must run in.
    pub container: Option<Container>,
}

/// `workspace.env` (AgentV's preflight checks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preflight {
    /// Programs that must be on the PATH.
    pub commands: Vec<String>,
    /// Python modules `python3` must import.
    pub python_modules: Vec<String>,
}

impl Spec {
    /// The test's spec over the suite's: fields the test sets replace the
    /// suite's; hooks merge one by one.
    pub fn over(&self, suite: &Self) -> Self {
        Self {
            template: self.template.clone().or_else(|| suite.template.clone()),
            repos: if self.repos.is_empty() {
                suite.repos.clone()
            } else {
                self.repos.clone()
            },
            hooks: self.hooks.over(&suite.hooks),
            isolation: self.isolation,
            static_path: suite.static_path.clone(),
            static_place: suite.static_place.clone(),
            preflight: suite.preflight.clone(),
            container: self.container.clone().or_else(|| suite.container.clone()),
        }
    }

    /// True when nothing needs a workspace directory.
    pub fn needs_directory(&self) -> bool {
        self.template.is_some() || !self.repos.is_empty()
    }
}
