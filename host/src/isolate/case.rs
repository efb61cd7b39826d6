//! The sandbox as a value: the run's [`RunSandbox`] (how processes are
//! confined, what of the project no process sees) and each case's
//! [`CaseSandbox`] (its workspace, its shared budget, its record), made by
//! the trial and carried to every place that starts a process for the case.
//! One constructor per role — [`CaseSandbox::target`],
//! [`CaseSandbox::session`], [`CaseSandbox::hook`],
//! [`CaseSandbox::grader`], [`CaseSandbox::preprocessor`],
//! [`CaseSandbox::git`] — turns it into a [`Confined`] that
//! `crate::process` starts the process in. Nothing here is read from a
//! global or a thread-local: a process is confined exactly when its spec
//! carries a [`Confined`].
//!
//! A path a suite names (a `cwd`, a program) is bound only when, links
//! resolved, it lies inside the case workspace, the read-only project or
//! a path the target's own `isolate.read` grants; anything else is refused
//! with [`Refused`] before a process starts.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Confine, Isolation, Limits, Network, limits, net};
use crate::results::usage::{ConfinedRow, ConnectionRow, SandboxRow};

/// At most this many connection attempts are listed one by one in a
/// process's row; past them they are counted per host.
pub const LISTED_ATTEMPTS: usize = 100;

/// The longest host name a row keeps.
const MAX_HOST: usize = 253;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why a process of a case is not started.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    /// A directory the suite or target names lies outside what the process
    /// may see.
    #[error(
        "{role}: `{what}` {path} is outside the case workspace and the project ({reason}); under --isolate a process starts only inside them — {hint}"
    )]
    Outside {
        /// The process's role.
        role: String,
        /// Which setting (`cwd`, `program`).
        what: String,
        /// The path as written.
        path: String,
        /// Why (resolved elsewhere, hidden, missing).
        reason: String,
        /// What to do instead.
        hint: String,
    },
}

/// What a refused process's author can do instead.
fn hint_for(role: &str) -> &'static str {
    match role {
        "target" | "healthcheck" => {
            "use a path inside the suite's project, or grant it read-only in the target's `isolate.read` (the operator's targets file)"
        }
        _ => {
            "use a path inside the suite's project or the case workspace (a relative `cwd` is relative to the eval file)"
        }
    }
}

/// The run's sandbox: the confinement every isolated process of the run
/// gets, and what of the suite's project it never sees.
#[derive(Debug)]
pub struct RunSandbox {
    isolation: Isolation,
    /// Where each confined process gets its limits, or why it cannot.
    cgroups: Result<limits::Cgroups, String>,
    /// The suite's project, read-only to every process (its own path).
    project: PathBuf,
    /// The project with its links resolved.
    project_real: PathBuf,
    /// What no process sees: the project's secrets and history, the run
    /// directory.
    hidden: Mutex<Vec<PathBuf>>,
    /// The project was too large to search for secrets whole.
    secrets_incomplete: bool,
}

impl RunSandbox {
    /// The run's sandbox for a suite whose project is `project`.
    pub fn new(isolation: Isolation, project: &Path) -> Self {
        let project = std::path::absolute(project).unwrap_or_else(|_| project.to_path_buf());
        let project_real = project.canonicalize().unwrap_or_else(|_| project.clone());
        let (secrets, secrets_incomplete) = project_secrets(&project);
        Self {
            hidden: Mutex::new(secrets),
            secrets_incomplete,
            isolation,
            cgroups: limits::Cgroups::detect(),
            project,
            project_real,
        }
    }

    /// Where limits come from, or why there are none.
    pub fn cgroups(&self) -> Result<&limits::Cgroups, &str> {
        self.cgroups.as_ref().map_err(String::as_str)
    }

    /// The root filesystem the sandboxes are made from, when not the host's.
    pub fn root(&self) -> Option<&Path> {
        self.isolation.root()
    }

    /// The suite's project, read-only inside.
    pub fn project(&self) -> &Path {
        &self.project
    }

    /// Whether the project was too large to be searched for its secrets
    /// whole (the run header says so).
    pub fn secrets_incomplete(&self) -> bool {
        self.secrets_incomplete
    }

    /// Hides `path` (the run directory) from every process made from now on.
    pub fn hide(&self, path: &Path) {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut hidden = lock(&self.hidden);
        if !hidden.contains(&path) {
            hidden.push(path);
        }
    }

    /// What no process sees.
    pub fn hidden(&self) -> Vec<PathBuf> {
        lock(&self.hidden).clone()
    }

    /// `path` is, or lies under, something hidden.
    fn is_hidden(&self, path: &Path) -> bool {
        lock(&self.hidden)
            .iter()
            .any(|h| path.starts_with(h) || real(h).is_some_and(|r| path.starts_with(r)))
    }

    /// Whether `path`, a static workspace (the user's own directory, bound
    /// writable), may be given to the case's processes: not the project
    /// itself or a directory above it, and nothing holding a `.git`,
    /// `.evalhost` or `.env` file — what a process writes there would run
    /// on the host later (a git filter or hook, a targets file) or read a
    /// secret.
    pub fn check_static_workspace(&self, path: &Path) -> Result<(), String> {
        let resolved = real(path).unwrap_or_else(|| path.to_path_buf());
        if self.project_real.starts_with(&resolved) {
            return Err(format!(
                "under --isolate a static workspace is writable to the target, and this one is the project {} itself (its .git, .evalhost and .env with it); use a subdirectory, or a `template` copied per case",
                self.project.display()
            ));
        }
        let entries = std::fs::read_dir(&resolved).map_err(|e| e.to_string())?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.eq_ignore_ascii_case(".git")
                || name == ".evalhost"
                || name == ".env"
                || name.starts_with(".env.")
            {
                return Err(format!(
                    "under --isolate a static workspace is writable to the target, and this one holds `{name}` (what it wrote there would run on the host, or a secret it would read); use a `template` copied per case"
                ));
            }
        }
        Ok(())
    }

    /// The sandbox of one case: all its processes share one control group
    /// with `limits` (its target's, else the defaults) and are recorded for
    /// its row.
    pub fn case(self: &Arc<Self>, limits: Option<Limits>) -> CaseSandbox {
        CaseSandbox::make(self, limits, true)
    }

    /// The sandbox of processes outside any case (a suite's `before_all`
    /// hook, a judge's command, a health check): each gets a control group
    /// of its own; nothing is recorded.
    pub fn outside(self: &Arc<Self>) -> CaseSandbox {
        CaseSandbox::make(self, None, false)
    }
}

/// At most this many entries of a project are looked at for its secrets.
pub const SECRETS_SEARCH_LIMIT: usize = 200_000;

/// The project's files no process may read, found in one walk of it (at
/// most [`SECRETS_SEARCH_LIMIT`] entries; `true` beside them when it
/// stopped there): every `.git` (a directory: git's configuration, its
/// modules' and worktrees', credentials, hooks; a file: a worktree's
/// pointer), every `.evalhost` directory (targets file, history, caches —
/// a suite in a subdirectory keeps its own), every `.env` and `.env.*`
/// file, `.netrc` and `.git-credentials` — the names
/// `evalhost_suite::roots::is_secret` refuses to a suite too.
fn project_secrets(project: &Path) -> (Vec<PathBuf>, bool) {
    let mut hidden = Vec::new();
    let mut seen = 0usize;
    let mut walk = walkdir::WalkDir::new(project)
        .follow_links(false)
        .into_iter();
    while let Some(entry) = walk.next() {
        seen += 1;
        if seen > SECRETS_SEARCH_LIMIT {
            return (hidden, true);
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        if evalhost_suite::roots::is_secret(Path::new(name.as_ref())) {
            if entry.file_type().is_dir() {
                walk.skip_current_dir();
            }
            hidden.push(entry.into_path());
        }
    }
    (hidden, false)
}

/// `path` with its links resolved, when it exists.
fn real(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok()
}

/// The sandbox of one case, shared by everything that starts a process for
/// it (the target, the hooks, the graders on any thread, evalhost's git in
/// its workspace). Cloning it shares it.
#[derive(Debug, Clone)]
pub struct CaseSandbox {
    inner: Arc<CaseInner>,
}

#[derive(Debug)]
struct CaseInner {
    run: Arc<RunSandbox>,
    /// The case's workspace, once made: writable to its processes.
    workspace: Mutex<Option<PathBuf>>,
    /// The case's budget.
    limits: Limits,
    /// A case (one group, recorded) or processes outside one.
    in_case: bool,
    /// The group all its processes share, once one has started.
    group: Mutex<Option<limits::Group>>,
    /// Its confined processes, in order.
    processes: Mutex<Vec<ConfinedRow>>,
    /// A private working directory for a session agent without a workspace.
    scratch: Mutex<Option<tempfile::TempDir>>,
}

impl CaseSandbox {
    fn make(run: &Arc<RunSandbox>, limits: Option<Limits>, in_case: bool) -> Self {
        Self {
            inner: Arc::new(CaseInner {
                run: run.clone(),
                workspace: Mutex::new(None),
                limits: limits.unwrap_or_default(),
                in_case,
                group: Mutex::new(None),
                processes: Mutex::new(Vec::new()),
                scratch: Mutex::new(None),
            }),
        }
    }

    /// The run's sandbox this case belongs to.
    pub fn run(&self) -> &RunSandbox {
        &self.inner.run
    }

    /// The case's workspace is `path` (writable to its processes).
    pub fn set_workspace(&self, path: Option<&Path>) {
        *lock(&self.inner.workspace) = path.map(Path::to_path_buf);
    }

    fn workspace(&self) -> Option<PathBuf> {
        lock(&self.inner.workspace).clone()
    }

    /// `path` (links resolved) is inside one of `roots` (links resolved)
    /// and nothing hidden: the path to bind and start in.
    fn contained(
        &self,
        role: &str,
        what: &str,
        path: &Path,
        roots: &[PathBuf],
    ) -> Result<PathBuf, Refused> {
        let refuse = |reason: &str| Refused::Outside {
            role: role.to_owned(),
            what: what.to_owned(),
            path: path.display().to_string(),
            reason: reason.to_owned(),
            hint: hint_for(role).to_owned(),
        };
        let resolved = real(path).ok_or_else(|| refuse("it does not exist"))?;
        let inside = roots
            .iter()
            .filter_map(|r| real(r))
            .any(|r| resolved.starts_with(&r));
        if !inside {
            return Err(refuse(&if resolved == path {
                "not inside them".to_owned()
            } else {
                format!("it resolves to {}", resolved.display())
            }));
        }
        if self.inner.run.is_hidden(&resolved) {
            return Err(refuse("it is hidden from the case's processes"));
        }
        Ok(resolved)
    }

    /// The places a process of this case may start in: its workspace, the
    /// project, and `more`.
    fn roots(&self, more: &[PathBuf]) -> Vec<PathBuf> {
        self.workspace()
            .into_iter()
            .chain(std::iter::once(self.inner.run.project_real.clone()))
            .chain(more.iter().cloned())
            .collect()
    }

    fn confined(
        &self,
        role: &'static str,
        cwd: Option<&Path>,
        cwd_roots: &[PathBuf],
        confine: Confine,
    ) -> Result<Confined, Refused> {
        let cwd = match cwd {
            Some(dir) => match self.contained(role, "cwd", dir, &self.roots(cwd_roots)) {
                Ok(dir) => Some(dir),
                Err(refused) => {
                    // Not started: said in the row's sandbox record too.
                    self.record(ConfinedRow {
                        role: role.to_owned(),
                        network: "none (not started)".to_owned(),
                        refused: vec![refused.to_string()],
                        ..ConfinedRow::default()
                    });
                    return Err(refused);
                }
            },
            None => None,
        };
        Ok(Confined {
            case: self.clone(),
            role,
            cwd,
            confine,
        })
    }

    /// A target's process (a `cli` command, a one-shot agent): its
    /// workspace and `scratch` (the call's temporary files) writable, the
    /// target's `read` grants readable, on `network`.
    pub fn target(
        &self,
        cwd: Option<&Path>,
        scratch: &[PathBuf],
        read: &[PathBuf],
        network: Network,
    ) -> Result<Confined, Refused> {
        let mut roots = scratch.to_vec();
        roots.extend(read.iter().cloned());
        self.confined(
            "target",
            cwd,
            &roots,
            Confine {
                writable: self
                    .workspace()
                    .into_iter()
                    .chain(scratch.iter().cloned())
                    .collect(),
                extra_readable: read.to_vec(),
                network,
                ..Confine::default()
            },
        )
    }

    /// A target's health check command.
    pub fn healthcheck(&self, cwd: Option<&Path>) -> Result<Confined, Refused> {
        self.confined("healthcheck", cwd, &[], Confine::default())
    }

    /// A private empty directory of the case, made at the first call:
    /// where a session agent without a workspace or a `cwd` of its own runs
    /// (never evalhost's own directory).
    pub fn private_dir(&self) -> std::io::Result<PathBuf> {
        let mut scratch = lock(&self.inner.scratch);
        if scratch.is_none() {
            *scratch = Some(
                tempfile::Builder::new()
                    .prefix("evalhost-session-")
                    .tempdir()?,
            );
        }
        Ok(scratch
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_default())
    }

    /// A session agent (Claude's SDK mode, Copilot over ACP or its SDK)
    /// running in `cwd`: its workspace, or the case's private directory,
    /// writable; a target's own `cwd` elsewhere only readable.
    pub fn session(
        &self,
        cwd: &Path,
        read: &[PathBuf],
        network: Network,
    ) -> Result<Confined, Refused> {
        let scratch: Vec<PathBuf> = lock(&self.inner.scratch)
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .into_iter()
            .collect();
        let mut roots = read.to_vec();
        roots.extend(scratch.iter().cloned());
        let mut confined = self.confined(
            "target",
            Some(cwd),
            &roots,
            Confine {
                writable: self
                    .workspace()
                    .into_iter()
                    .chain(scratch.iter().cloned())
                    .collect(),
                extra_readable: read.to_vec(),
                network,
                ..Confine::default()
            },
        )?;
        if let Some(dir) = confined.cwd.clone() {
            confined.confine.readable.push(dir);
        }
        Ok(confined)
    }

    /// A workspace hook (`before_each`, `after_each`, a suite's
    /// `before_all`): its workspace writable, no network.
    pub fn hook(&self, cwd: Option<&Path>) -> Result<Confined, Refused> {
        self.confined(
            "hook",
            cwd,
            &[],
            Confine {
                writable: self.workspace().into_iter().collect(),
                ..Confine::default()
            },
        )
    }

    /// A code grader's command: its workspace writable, `files` (the
    /// answer written to a file, `output_path`) readable, on `network`
    /// (none, or the judge proxy's loopback port).
    pub fn grader(
        &self,
        cwd: Option<&Path>,
        files: &[PathBuf],
        network: Network,
    ) -> Result<Confined, Refused> {
        self.confined(
            "code-grader",
            cwd,
            files,
            Confine {
                writable: self.workspace().into_iter().collect(),
                readable: files.to_vec(),
                network,
                ..Confine::default()
            },
        )
    }

    /// A preprocessor or prompt script (`role`): reads the case's
    /// workspace and `files` (the file it converts), writes nothing.
    pub fn preprocessor(
        &self,
        role: &'static str,
        cwd: Option<&Path>,
        files: &[PathBuf],
    ) -> Result<Confined, Refused> {
        self.confined(
            role,
            cwd,
            files,
            Confine {
                readable: self
                    .workspace()
                    .into_iter()
                    .chain(files.iter().cloned())
                    .collect(),
                ..Confine::default()
            },
        )
    }

    /// evalhost's own git in a workspace (`writable`: the workspace and its
    /// baseline): confined like the case's processes, since the
    /// repositories hold configuration the target could write.
    pub fn git(&self, writable: &[PathBuf]) -> Confined {
        Confined {
            case: self.clone(),
            role: "git",
            cwd: None,
            confine: Confine {
                writable: writable.to_vec(),
                ..Confine::default()
            },
        }
    }

    /// The descriptors of the control group a process joins: the case's
    /// (made at its first process), or one of its own (`own`, outside a
    /// case).
    fn group_fds(&self, limits: Limits) -> std::io::Result<(Vec<i32>, Option<limits::Group>)> {
        let Ok(cgroups) = &self.inner.run.cgroups else {
            return Ok((Vec::new(), None));
        };
        if !self.inner.in_case {
            let group = cgroups.create(limits)?;
            return Ok((group.fds(), Some(group)));
        }
        let mut group = lock(&self.inner.group);
        if group.is_none() {
            *group = Some(cgroups.create(self.inner.limits)?);
        }
        Ok((
            group.as_ref().map(limits::Group::fds).unwrap_or_default(),
            None,
        ))
    }

    fn record(&self, row: ConfinedRow) {
        if self.inner.in_case {
            lock(&self.inner.processes).push(row);
        }
    }

    /// The case ends: how its processes were confined, its limits, its peak
    /// memory and what the limits refused it.
    pub fn finish(&self) -> SandboxRow {
        let mut row = SandboxRow {
            processes: std::mem::take(&mut *lock(&self.inner.processes)),
            ..SandboxRow::default()
        };
        if let Some(group) = lock(&self.inner.group).take() {
            let usage = group.finish();
            row.limits = Some(self.inner.limits.describe());
            row.peak_memory_bytes = usage.peak_memory;
            row.refused = refusals(self.inner.limits, &usage);
        }
        row
    }
}

impl Drop for CaseInner {
    fn drop(&mut self) {
        // A case left unfinished (a panic): its group removed.
        if let Some(group) = lock(&self.group).take() {
            group.finish();
        }
    }
}

/// What the limits refused a group, in the row's sentences.
fn refusals(held: Limits, usage: &limits::Usage) -> Vec<String> {
    let mut refused = Vec::new();
    if usage.oom_kills > 0 {
        refused.push(format!(
            "memory: {} process(es) killed at the limit of {}",
            usage.oom_kills,
            limits::bytes(held.memory)
        ));
    }
    if usage.forks_refused > 0 {
        refused.push(format!(
            "processes: {} fork(s) refused at the limit of {}",
            usage.forks_refused, held.processes
        ));
    }
    refused
}

/// One process's confinement, made by a role constructor of
/// [`CaseSandbox`]: `crate::process` starts a spec that carries one in its
/// sandbox.
#[derive(Debug, Clone)]
pub struct Confined {
    case: CaseSandbox,
    role: &'static str,
    /// The working directory, checked (links resolved).
    cwd: Option<PathBuf>,
    confine: Confine,
}

impl Confined {
    /// The checked working directory, when one was named.
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The role the row names the process by.
    pub fn role(&self) -> &str {
        self.role
    }

    /// The sandbox of `argv` run in `cwd` with `env`: the `bwrap` command
    /// line (program first) and what runs beside it until the process ends.
    pub fn sandbox(
        &self,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
    ) -> std::io::Result<Sandboxed> {
        let run = &self.case.inner.run;
        let mut confine = self.confine.clone();
        confine.readable.push(run.project.clone());
        if run.project_real != run.project {
            confine.readable.push(run.project_real.clone());
        }
        confine.hidden = run.hidden();
        // A program named by its path outside the sandbox's root (a script
        // in the suite, an agent's executable) is bound read-only where it
        // is: only an executable regular file, links resolved, and nothing
        // hidden (never a way to read a file of the operator's).
        let in_root = |p: &Path| {
            ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"]
                .iter()
                .any(|r| p.starts_with(r))
        };
        if let Some(program) = argv
            .first()
            .map(Path::new)
            .filter(|p| p.is_absolute() && !in_root(p))
        {
            confine.program = Some((
                self.program(program).map_err(std::io::Error::other)?,
                program.to_path_buf(),
            ));
        }
        let cwd = self.cwd.as_deref().or(cwd);
        let network = confine.network.clone();
        let program = argv
            .first()
            .map(|p| {
                Path::new(p)
                    .file_name()
                    .map_or_else(|| p.clone(), |n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        let mut env = env.to_vec();
        let mut argv = argv.to_vec();
        let (proxy, forwards) = match &network {
            Network::Hosts(hosts) => (Some(hosts.clone()), Vec::new()),
            Network::Loopback(port) => (None, vec![*port]),
            Network::None | Network::Host => (None, Vec::new()),
        };
        let session = if proxy.is_some() || !forwards.is_empty() {
            let session = net::Session::start(proxy.clone(), &forwards)?;
            let exe = std::env::current_exe()?;
            let bridge = "/run/evalhost-bridge".to_owned();
            confine
                .mounts
                .push((session.dir().to_path_buf(), net::SANDBOX_RUN.into(), false));
            confine.mounts.push((exe, bridge.clone(), false));
            let mut front = vec![bridge, net::BRIDGE_ARG.to_owned()];
            if proxy.is_some() {
                front.push("--proxy".into());
                env.extend(net::proxy_env());
            }
            for port in &forwards {
                front.extend(["--forward".into(), port.to_string()]);
            }
            front.push("--".into());
            argv.splice(0..0, front);
            Some(session)
        } else {
            None
        };
        let (fds, group) = self.case.group_fds(confine.limits)?;
        let line = run
            .isolation
            .argv(&confine, &argv, cwd, &env, network == Network::Host);
        Ok(Sandboxed {
            argv: line,
            fds,
            session,
            group,
            case: self.case.clone(),
            role: self.role.to_owned(),
            program,
            network: network.describe(),
        })
    }
}

impl Confined {
    /// `program`, checked: an executable regular file once its links are
    /// resolved, and not hidden.
    fn program(&self, program: &Path) -> Result<PathBuf, Refused> {
        use std::os::unix::fs::PermissionsExt as _;
        let refuse = |reason: &str| Refused::Outside {
            role: self.role.to_owned(),
            what: "program".to_owned(),
            path: program.display().to_string(),
            reason: reason.to_owned(),
            hint: hint_for(self.role).to_owned(),
        };
        let resolved = real(program).ok_or_else(|| refuse("it does not exist"))?;
        let meta = std::fs::metadata(&resolved).map_err(|_| refuse("it cannot be read"))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(refuse("it is not an executable file"));
        }
        if self.case.inner.run.is_hidden(&resolved) {
            return Err(refuse("it is hidden from the case's processes"));
        }
        Ok(resolved)
    }
}

/// A confined process about to start: its `bwrap` command line, the
/// control group it enters, and what runs beside it (its proxy, its own
/// group) until it is dropped, which records it for the case's row.
#[derive(Debug)]
pub struct Sandboxed {
    /// The `bwrap` command line, the program first.
    pub argv: Vec<String>,
    /// The control group's descriptors the process writes itself into
    /// between fork and exec.
    pub fds: Vec<i32>,
    session: Option<net::Session>,
    group: Option<limits::Group>,
    case: CaseSandbox,
    role: String,
    program: String,
    network: String,
}

impl Drop for Sandboxed {
    fn drop(&mut self) {
        let mut row = ConfinedRow {
            role: std::mem::take(&mut self.role),
            program: std::mem::take(&mut self.program),
            network: std::mem::take(&mut self.network),
            ..ConfinedRow::default()
        };
        if let Some(session) = self.session.take() {
            let (attempts, dropped) = session.finish();
            if dropped > 0 {
                row.refused.push(format!(
                    "proxy: {dropped} connection(s) closed unserved (more than {} at once, or no whole request within 10 s)",
                    net::CONNECTIONS_AT_ONCE
                ));
            }
            record_attempts(&mut row, attempts);
        }
        if let Some(group) = self.group.take() {
            // A process outside a case: its own group, read and removed.
            group.finish();
        }
        // evalhost's own git in the workspace, confined, is recorded only
        // when the sandbox refused it something.
        if row.role == "git" && row.refused.is_empty() {
            return;
        }
        self.case.record(row);
    }
}

/// The proxy's attempts into `row`: the first [`LISTED_ATTEMPTS`] one by
/// one, the rest counted per host and verdict (a process that retries a
/// refused host without end must not grow its row without end).
fn record_attempts(row: &mut ConfinedRow, attempts: Vec<net::Attempt>) {
    let mut counted: std::collections::BTreeMap<(String, u16, bool), u64> = Default::default();
    let mut refused_listed = 0usize;
    for mut attempt in attempts {
        // A host name is at most 253 characters; a longer one is cut (a
        // process cannot grow the row with its names either).
        if attempt.host.len() > MAX_HOST {
            let mut cut = MAX_HOST;
            while !attempt.host.is_char_boundary(cut) {
                cut -= 1;
            }
            attempt.host.truncate(cut);
            attempt.host.push('…');
        }
        if row.connections.len() >= LISTED_ATTEMPTS {
            // Counted per host, for at most as many hosts again; past them
            // all in one count.
            let key = (attempt.host, attempt.port, attempt.allowed);
            if counted.len() < LISTED_ATTEMPTS || counted.contains_key(&key) {
                *counted.entry(key).or_default() += 1;
            } else {
                *counted
                    .entry(("(other hosts)".to_owned(), 0, attempt.allowed))
                    .or_default() += 1;
            }
            continue;
        }
        if !attempt.allowed {
            refused_listed += 1;
            if refused_listed <= 10 {
                row.refused.push(format!(
                    "connection to {}:{} (not in the target's isolate.network)",
                    attempt.host, attempt.port
                ));
            }
        }
        row.connections.push(ConnectionRow {
            host: attempt.host,
            port: attempt.port,
            allowed: attempt.allowed,
            note: attempt.note,
        });
    }
    if refused_listed > 10 {
        row.refused.push(format!(
            "{} more refused connection(s), listed in the connections",
            refused_listed - 10
        ));
    }
    for ((host, port, allowed), count) in counted {
        if !allowed {
            row.refused.push(format!(
                "{count} more connection(s) to {host}:{port} refused (counted, not listed)"
            ));
        }
        row.connections.push(ConnectionRow {
            host,
            port,
            allowed,
            note: Some(format!("{count} more attempt(s), counted, not listed")),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_past_the_list_are_counted_per_host() {
        let mut row = ConfinedRow::default();
        let attempts = (0..10_000)
            .map(|i| net::Attempt {
                host: if i % 2 == 0 {
                    "evil.example"
                } else {
                    "other.example"
                }
                .into(),
                port: 443,
                allowed: false,
                note: None,
            })
            .collect();
        record_attempts(&mut row, attempts);
        assert_eq!(row.connections.len(), LISTED_ATTEMPTS + 2);
        assert!(row.refused.len() <= 13, "{:?}", row.refused);
        assert!(
            row.refused
                .iter()
                .any(|r| r.contains("4950 more connection(s) to evil.example:443")),
            "{:?}",
            row.refused
        );
        // Every attempt to a host of its own, with a long name: the row
        // stays bounded all the same.
        let mut row = ConfinedRow::default();
        let attempts = (0..10_000)
            .map(|i| net::Attempt {
                host: format!("h{i}-{}.example.com", "x".repeat(30_000)),
                port: 443,
                allowed: false,
                note: None,
            })
            .collect();
        record_attempts(&mut row, attempts);
        assert!(row.connections.len() <= 2 * LISTED_ATTEMPTS + 1);
        let size = serde_json::to_string(&row).unwrap().len();
        assert!(size < 200_000, "{size} bytes");
        assert!(
            row.refused.iter().any(|r| r.contains("(other hosts)")),
            "{:?}",
            row.refused
        );
    }
}
