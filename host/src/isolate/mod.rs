//! `--isolate`: every process evalhost starts for a case runs in its own
//! sandbox, made by Debian's `bubblewrap` (`bwrap`: Linux namespaces, no
//! daemon, no root). What the process sees:
//!
//! - the root filesystem: the host's `/usr` (and the `/bin`, `/lib`, `/sbin`
//!   links into it), `/etc`, read-only — or a root filesystem the operator
//!   names, read-only;
//! - its own `/tmp`, `/proc`, `/dev` (the minimal one bwrap makes);
//! - an empty home (`/home/sandbox`, `HOME` pointing at it): the operator's
//!   home is not there at all;
//! - the case's directories, read-write ([`Confine::writable`]) and the
//!   suite's, read-only ([`Confine::readable`]), at their own paths, so the
//!   paths a suite or a grader names stay true;
//! - an environment of `PATH`, the locale and what the caller passes
//!   (the target's own variables) — nothing else of the operator's;
//! - its own network namespace: no network at all, or egress only to the
//!   hosts the target names through a proxy evalhost runs for it
//!   ([`net`]), or (asked for by name) the host's;
//! - memory and process-count limits on it and everything it starts
//!   ([`limits`]), where the machine's cgroups can be written;
//! - its own PID, IPC and UTS namespaces; it dies with evalhost.
//!
//! Every confined process of a case is recorded in its row
//! ([`begin_case`], [`end_case`]): its network, the connections it asked
//! for, allowed or refused, its limits, its peak memory and what the
//! limits refused.
//!
//! Where `bwrap` is missing or cannot make namespaces (no unprivileged user
//! namespaces), [`Isolation::detect`] says why and the run refuses to start
//! rather than run anything unconfined.

pub mod container;
pub mod limits;
pub mod net;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, RwLock};

use crate::results::usage::{ConfinedRow, ConnectionRow, SandboxRow};
pub use limits::Limits;
pub use net::Network;

/// Where the sandbox's home is, inside it.
pub const SANDBOX_HOME: &str = "/home/sandbox";

/// The operator's environment variables a confined process keeps: the
/// search path and the locale. Everything else is dropped.
const KEPT_ENV: [&str; 5] = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/// A working `bwrap` and the root the sandboxes are made from.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The `bwrap` binary.
    bwrap: PathBuf,
    /// A root filesystem to use instead of the host's `/usr` and `/etc`.
    root: Option<PathBuf>,
    /// The sandbox gets a user namespace of its own in which no other can
    /// be made (`--unshare-user --disable-userns`: a nested namespace would
    /// give its process capabilities again); false where bubblewrap cannot
    /// (a setuid bubblewrap without user namespaces).
    userns: bool,
    /// Files and directories of the root's `/etc` that others may not
    /// read, hidden in the sandbox when evalhost runs as root (its
    /// sandboxed processes are uid 0, the owner of those files:
    /// `/etc/shadow`, ssh host keys, `ssl/private`).
    masked: Vec<(PathBuf, bool)>,
}

/// Why isolation cannot be had here.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// No `bwrap` on PATH.
    #[error(
        "--isolate needs bubblewrap (`bwrap`), which is not on PATH (Debian/Ubuntu: `apt-get install bubblewrap`)"
    )]
    NoBwrap,
    /// `bwrap` is there but cannot make a sandbox.
    #[error(
        "--isolate: bubblewrap cannot make a sandbox here ({0}); unprivileged user namespaces may be off (`sysctl kernel.unprivileged_userns_clone`)"
    )]
    CannotStart(String),
    /// The root filesystem named is not a directory holding `/usr`.
    #[error("--isolate-root {0}: not a directory with usr/ in it (nor a tarball of one)")]
    BadRoot(PathBuf),
    /// A tarball named as the root could not be unpacked.
    #[error("--isolate-root {0}: cannot unpack it: {1}")]
    Unpack(PathBuf, String),
}

/// What one confined process may reach, besides the root.
#[derive(Debug, Clone, Default)]
pub struct Confine {
    /// Directories bound read-write at their own path (the case workspace,
    /// the temporary files of the call).
    pub writable: Vec<PathBuf>,
    /// Directories or files bound read-only at their own path (the suite's
    /// directory, a script).
    pub readable: Vec<PathBuf>,
    /// Read-only binds the target asks for (an agent's own configuration
    /// directory), at their own path.
    pub extra_readable: Vec<PathBuf>,
    /// Binds at another path inside: (outside, inside, writable).
    pub mounts: Vec<(PathBuf, String, bool)>,
    /// Directories inside a readable one that the process must not see
    /// (the run directory, the project's `.evalhost`): an empty `tmpfs`
    /// over each.
    pub hidden: Vec<PathBuf>,
    /// What of the network it reaches.
    pub network: Network,
    /// Its memory and process limits.
    pub limits: Limits,
}

impl Isolation {
    /// Checks that `bwrap` (found on PATH by the caller) can make a sandbox
    /// on this machine (a trivial confined `true`); `root`, when given, is
    /// used as the sandboxes' root filesystem.
    pub fn detect(bwrap: Option<PathBuf>, root: Option<&Path>) -> Result<Self, Unavailable> {
        let bwrap = bwrap.ok_or(Unavailable::NoBwrap)?;
        let root = match root {
            Some(file) if file.is_file() => Some(unpack_root(file)?),
            other => other.map(Path::to_path_buf),
        };
        if let Some(root) = &root
            && !root.join("usr").is_dir()
        {
            return Err(Unavailable::BadRoot(root.clone()));
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root_operator = unsafe { libc::geteuid() } == 0;
        let masked = if root_operator {
            unreadable_by_others(&root.as_deref().unwrap_or(Path::new("/")).join("etc"))
        } else {
            Vec::new()
        };
        let mut isolation = Self {
            bwrap,
            root,
            userns: true,
            masked,
        };
        let probe = |isolation: &Self| {
            isolation
                .command(&Confine::default(), &["true".to_owned()], None, &[], false)
                .output()
                .map_err(|e| Unavailable::CannotStart(e.to_string()))
        };
        let mut out = probe(&isolation)?;
        if !out.status.success() {
            // A bubblewrap that cannot make a user namespace (setuid, on
            // a kernel without unprivileged ones): without one.
            isolation.userns = false;
            out = probe(&isolation)?;
        }
        if !out.status.success() {
            return Err(Unavailable::CannotStart(
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ));
        }
        Ok(isolation)
    }

    /// The root filesystem the sandboxes are made from, when not the
    /// host's.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The `bwrap` arguments that make the sandbox for `confine`, running
    /// in `cwd`, with the environment `env` (besides [`KEPT_ENV`] and
    /// `HOME`), ending with `--` before the program.
    pub fn args(
        &self,
        confine: &Confine,
        cwd: Option<&Path>,
        env: &[(String, String)],
        network: bool,
    ) -> Vec<String> {
        let mut a: Vec<String> = [
            "--unshare-all",
            // No capability inside, even for root: no remounting a
            // read-only bind, no mounting a cgroup file system.
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--dir",
            SANDBOX_HOME,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        if self.userns {
            a.splice(1..1, ["--unshare-user".into(), "--disable-userns".into()]);
        }
        if network {
            // `isolate.network: true`: the host's network, as asked.
            a.insert(1, "--share-net".into());
        }
        let root = self.root.as_deref().unwrap_or(Path::new("/"));
        let mut ro = |from: &Path, to: &str| {
            a.extend(["--ro-bind".into(), path_arg(from), to.to_owned()]);
        };
        ro(&root.join("usr"), "/usr");
        ro(&root.join("etc"), "/etc");
        for (path, dir) in &self.masked {
            let inside = Path::new("/etc").join(path);
            if *dir {
                a.extend(["--tmpfs".into(), path_arg(&inside)]);
            } else {
                a.extend(["--ro-bind".into(), "/dev/null".into(), path_arg(&inside)]);
            }
        }
        // Merged /usr (Debian, Ubuntu, Fedora): /bin, /lib… are links into
        // it; elsewhere they are directories of their own.
        for dir in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
            let host = root.join(dir);
            match std::fs::read_link(&host) {
                Ok(target) => a.extend(["--symlink".into(), path_arg(&target), format!("/{dir}")]),
                Err(_) if host.is_dir() => {
                    a.extend(["--ro-bind".into(), path_arg(&host), format!("/{dir}")]);
                }
                Err(_) => {}
            }
        }
        for dir in confine.readable.iter().chain(&confine.extra_readable) {
            a.extend(["--ro-bind-try".into(), path_arg(dir), path_arg(dir)]);
        }
        for dir in &confine.writable {
            a.extend(["--bind".into(), path_arg(dir), path_arg(dir)]);
        }
        // What is hidden lies inside what is readable: only what is there
        // and under a readable directory (a mount point must be); an empty
        // directory over a directory, an empty device over a file.
        for path in confine
            .hidden
            .iter()
            .filter(|h| confine.readable.iter().any(|r| h.starts_with(r) && *h != r))
        {
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_dir() => a.extend(["--tmpfs".into(), path_arg(path)]),
                Ok(m) if m.is_file() => {
                    a.extend(["--ro-bind".into(), "/dev/null".into(), path_arg(path)]);
                }
                _ => {}
            }
        }
        for (outside, inside, writable) in &confine.mounts {
            let how = if *writable { "--bind" } else { "--ro-bind" };
            a.extend([how.into(), path_arg(outside), inside.clone()]);
        }
        if let Some(cwd) = cwd {
            a.extend(["--chdir".into(), path_arg(cwd)]);
        }
        a.push("--clearenv".into());
        for name in KEPT_ENV {
            if let Ok(value) = std::env::var(name) {
                a.extend(["--setenv".into(), name.to_owned(), value]);
            }
        }
        a.extend(["--setenv".into(), "HOME".into(), SANDBOX_HOME.into()]);
        for (k, v) in env {
            a.extend(["--setenv".into(), k.clone(), v.clone()]);
        }
        a.push("--".into());
        a
    }

    /// A command running `argv` confined (see [`Isolation::args`]).
    pub fn command(
        &self,
        confine: &Confine,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
        network: bool,
    ) -> Command {
        let mut c = Command::new(&self.bwrap);
        // bwrap is the sandbox's PID 1: its own environment is readable
        // inside at /proc/1/environ, so it gets none of evalhost's (what
        // the program gets is in the --setenv arguments).
        c.env_clear();
        c.args(self.args(confine, cwd, env, network)).args(argv);
        c
    }
}

/// Isolation as the run turned it on: every process evalhost starts from
/// then on is confined (see [`activate`]).
#[derive(Debug)]
pub struct Active {
    /// The sandbox maker.
    pub isolation: Isolation,
    /// What every confined process may read besides the root: the project
    /// of the suite running now.
    readable: RwLock<Vec<PathBuf>>,
    /// The suite running now is isolated (a multi-suite run may mix).
    on: AtomicBool,
    /// Where each confined process gets its limits, or why it cannot.
    pub cgroups: Result<limits::Cgroups, String>,
}

impl Active {
    /// The project of the suite running now.
    pub fn readable(&self) -> Vec<PathBuf> {
        self.readable
            .read()
            .map_or_else(|e| e.into_inner().clone(), |r| r.clone())
    }
}

static ACTIVE: OnceLock<Active> = OnceLock::new();

/// Turns isolation on for the rest of the process: `crate::process::run`
/// confines every command of a case from now on; `readable` is the project
/// of the suite about to run (each suite of a multi-suite run sets its own).
pub fn activate(isolation: Isolation, readable: Vec<PathBuf>) -> &'static Active {
    let active = ACTIVE.get_or_init(|| Active {
        isolation,
        readable: RwLock::new(Vec::new()),
        on: AtomicBool::new(false),
        cgroups: limits::Cgroups::detect(),
    });
    match active.readable.write() {
        Ok(mut r) => *r = readable,
        Err(e) => *e.into_inner() = readable,
    }
    active.on.store(true, Ordering::SeqCst);
    active
}

/// Directories no sandbox may see (the run directories of this process).
static HIDDEN: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Hides `dir` from every sandbox made from now on (see
/// [`Confine::hidden`]).
pub fn hide(dir: &Path) {
    let mut hidden = HIDDEN.lock().unwrap_or_else(|e| e.into_inner());
    if !hidden.iter().any(|h| h == dir) {
        hidden.push(dir.to_path_buf());
    }
}

/// What every sandbox hides: the run directories, and each readable
/// project's history (`.evalhost/runs`, the `results.db` index and its
/// side files, the response cache); the rest of `.evalhost` (the targets
/// file, scripts beside it) stays readable.
pub fn hidden(readable: &[PathBuf]) -> Vec<PathBuf> {
    let mut all = HIDDEN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for project in readable {
        let dir = project.join(".evalhost");
        for name in [
            "runs",
            "cache",
            "results.db",
            "results.db-wal",
            "results.db-shm",
            "results.db-journal",
        ] {
            all.push(dir.join(name));
        }
    }
    all
}

/// Turns isolation off for the suite about to run (the next suite of a
/// multi-suite run that is not isolated).
pub fn deactivate() {
    if let Some(active) = ACTIVE.get() {
        active.on.store(false, Ordering::SeqCst);
    }
}

/// Isolation, when the run turned it on.
pub fn active() -> Option<&'static Active> {
    ACTIVE.get().filter(|a| a.on.load(Ordering::SeqCst))
}

/// The files (false) and directories (true) under `etc` that others may
/// not read, relative to it: what a root operator's sandbox hides.
fn unreadable_by_others(etc: &Path) -> Vec<(PathBuf, bool)> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut hidden = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(etc.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            let path = rel.join(entry.file_name());
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                if mode & 0o005 != 0o005 {
                    hidden.push((path, true));
                } else {
                    stack.push(path);
                }
            } else if meta.is_file() && mode & 0o004 == 0 {
                hidden.push((path, false));
            }
        }
    }
    hidden.sort();
    hidden
}

/// A tarball of a root filesystem, unpacked once into evalhost's cache
/// (`~/.cache/evalhost/roots/<sha256 of the tarball>`, made under another
/// name and renamed whole, so that two runs at once never see half of
/// one); its device files are skipped (bubblewrap makes `/dev`). GNU tar
/// reads it, compressed or not.
fn unpack_root(tarball: &Path) -> Result<PathBuf, Unavailable> {
    use sha2::{Digest as _, Sha256};
    use std::io::Read as _;
    let fail = |why: String| Unavailable::Unpack(tarball.to_path_buf(), why);
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(tarball).map_err(|e| fail(e.to_string()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let digest: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let cache = std::env::var_os("EVALHOST_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("evalhost")))
        .ok_or_else(|| fail("no cache directory (set EVALHOST_CACHE_DIR)".into()))?
        .join("roots");
    let done = cache.join(&digest);
    if done.join("usr").exists() {
        return Ok(done);
    }
    std::fs::create_dir_all(&cache).map_err(|e| fail(e.to_string()))?;
    let partial = tempfile::Builder::new()
        .prefix(&format!("{digest}.partial-"))
        .tempdir_in(&cache)
        .map_err(|e| fail(e.to_string()))?;
    let out = Command::new("tar")
        .arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(partial.path())
        .args([
            "--no-same-owner",
            "--no-same-permissions",
            "--exclude=./dev/*",
            "--exclude=dev/*",
        ])
        .output()
        .map_err(|e| fail(format!("tar: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "tar: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    if !partial.path().join("usr").exists() {
        return Err(Unavailable::BadRoot(tarball.to_path_buf()));
    }
    let kept = partial.keep();
    if let Err(e) = std::fs::rename(&kept, &done) {
        // Another run unpacked the same tarball first: use theirs.
        let _ = std::fs::remove_dir_all(&kept);
        if !done.join("usr").exists() {
            return Err(fail(e.to_string()));
        }
    }
    Ok(done)
}

/// A confined process about to start: its command, and what runs beside
/// it (its proxy, its control group) until [`Sandboxed::finish`].
#[derive(Debug)]
pub struct Sandboxed {
    /// The `bwrap` command.
    pub command: Command,
    session: Option<net::Session>,
    group: Option<limits::Group>,
    role: String,
    program: String,
    network: String,
}

impl Active {
    /// The sandbox of one process: `argv` run in `cwd` with `env`, able to
    /// reach what `confine` and `network` say, held to `limits`.
    pub fn sandbox(
        &self,
        role: &str,
        mut confine: Confine,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
    ) -> std::io::Result<Sandboxed> {
        let network = &confine.network.clone();
        let limits = confine.limits;
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
        let (proxy, forwards) = match network {
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
        // In a case, every process joins the case's group (one budget for
        // the case); outside one (a suite's before_all hook), its own.
        let (group, fds) = match &self.cgroups {
            Ok(cgroups) => match case_group(cgroups)? {
                Some(fds) => (None, fds),
                None => {
                    let group = cgroups.create(limits)?;
                    let fds = group.fds();
                    (Some(group), fds)
                }
            },
            Err(_) => (None, Vec::new()),
        };
        let mut command =
            self.isolation
                .command(&confine, &argv, cwd, &env, *network == Network::Host);
        // SAFETY: the closure only calls `write(2)` on descriptors the
        // group keeps open until the process has started, and `fcntl(2)`
        // or `close_range(2)`: async-signal-safe system calls.
        unsafe {
            use std::os::unix::process::CommandExt as _;
            command.pre_exec(move || {
                limits::enter(&fds)?;
                // No descriptor of evalhost's reaches the sandbox (one it
                // inherited without close-on-exec, a pipe of its caller).
                close_on_exec_from(3);
                Ok(())
            });
        }
        Ok(Sandboxed {
            command,
            session,
            group,
            role: role.to_owned(),
            program,
            network: network.describe(),
        })
    }
}

impl Sandboxed {
    /// The process has ended: stops its proxy, reads and removes its
    /// group, and records it for the case's row (as dropping it does).
    pub fn finish(self) {}

    fn record(&mut self) {
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
            for attempt in attempts {
                if !attempt.allowed {
                    row.refused.push(format!(
                        "connection to {}:{} (not in the target's isolate.network)",
                        attempt.host, attempt.port
                    ));
                }
                row.connections.push(ConnectionRow {
                    host: attempt.host,
                    port: attempt.port,
                    allowed: attempt.allowed,
                    note: attempt.note,
                });
            }
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
        CASE.with(|case| {
            if let Some(state) = case.borrow_mut().as_mut() {
                state.processes.push(row);
            }
        });
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

/// The descriptors of the running case's group (made at its first
/// confined process), or none when this thread runs no case.
fn case_group(cgroups: &limits::Cgroups) -> std::io::Result<Option<Vec<i32>>> {
    CASE.with(|case| {
        let mut case = case.borrow_mut();
        let Some(state) = case.as_mut() else {
            return Ok(None);
        };
        if state.group.is_none() {
            state.group = Some(cgroups.create(state.limits)?);
        }
        Ok(state.group.as_ref().map(limits::Group::fds))
    })
}

impl Drop for Sandboxed {
    fn drop(&mut self) {
        self.record();
    }
}

/// Marks every descriptor from `first` up close-on-exec. Between `fork`
/// and `exec`: only system calls.
fn close_on_exec_from(first: u32) {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on
    // descriptors; no memory is touched.
    let done = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    } == 0;
    if !done {
        // Kernels before 5.11: one descriptor at a time.
        for fd in first..4096 {
            // SAFETY: fcntl on a descriptor that may not be open fails
            // harmlessly with EBADF.
            unsafe {
                libc::fcntl(fd as i32, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}

/// The case a thread is running, under `--isolate`.
struct CaseState {
    /// Its confined processes, in order.
    processes: Vec<ConfinedRow>,
    /// Its limits (its target's, else the defaults).
    limits: Limits,
    /// The group all its processes share, once one has started.
    group: Option<limits::Group>,
}

thread_local! {
    /// The case this thread is running.
    static CASE: RefCell<Option<CaseState>> = const { RefCell::new(None) };
}

/// A case starts on this thread: its confined processes are recorded from
/// now on, and share one memory and process budget, `limits` (its
/// target's) or the defaults (when the run is isolated).
pub fn begin_case(limits: Option<Limits>) {
    let state = active().map(|_| CaseState {
        processes: Vec::new(),
        limits: limits.unwrap_or_default(),
        group: None,
    });
    let before = CASE.with(|case| std::mem::replace(&mut *case.borrow_mut(), state));
    // A case left unfinished (a panic): its group removed.
    if let Some(group) = before.and_then(|b| b.group) {
        group.finish();
    }
}

/// The case ends: how its processes were confined, its limits, its peak
/// memory and what the limits refused it, when the run was isolated.
pub fn end_case() -> Option<SandboxRow> {
    let state = CASE.with(|case| case.borrow_mut().take())?;
    let mut row = SandboxRow {
        processes: state.processes,
        ..SandboxRow::default()
    };
    if let Some(group) = state.group {
        let usage = group.finish();
        row.limits = Some(state.limits.describe());
        row.peak_memory_bytes = usage.peak_memory;
        row.refused = refusals(state.limits, &usage);
    }
    Some(row)
}

/// A path as one argument.
fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn isolation() -> Isolation {
        Isolation {
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            root: None,
            userns: true,
            masked: vec![
                (PathBuf::from("shadow"), false),
                (PathBuf::from("ssl/private"), true),
            ],
        }
    }

    #[test]
    fn the_sandbox_has_no_network_no_home_and_only_the_given_env() {
        let confine = Confine {
            writable: vec![PathBuf::from("/w/case-1")],
            readable: vec![PathBuf::from("/w/suite")],
            ..Confine::default()
        };
        let a = isolation().args(
            &confine,
            Some(Path::new("/w/case-1")),
            &[("OPENAI_API_KEY".into(), "k".into())],
            false,
        );
        let joined = a.join(" ");
        assert!(
            joined.starts_with(
                "--unshare-all --unshare-user --disable-userns --cap-drop ALL --die-with-parent"
            ),
            "{joined}"
        );
        assert!(
            joined.contains("--ro-bind /dev/null /etc/shadow"),
            "{joined}"
        );
        assert!(joined.contains("--tmpfs /etc/ssl/private"), "{joined}");
        assert!(joined.contains("--bind /w/case-1 /w/case-1"), "{joined}");
        assert!(
            joined.contains("--ro-bind-try /w/suite /w/suite"),
            "{joined}"
        );
        assert!(joined.contains("--ro-bind /usr /usr"), "{joined}");
        assert!(joined.contains("--tmpfs /tmp"), "{joined}");
        assert!(joined.contains("--chdir /w/case-1"), "{joined}");
        assert!(joined.contains("--clearenv"), "{joined}");
        assert!(joined.contains("--setenv HOME /home/sandbox"), "{joined}");
        assert!(joined.contains("--setenv OPENAI_API_KEY k"), "{joined}");
        assert!(!joined.contains("--share-net"), "{joined}");
        assert_eq!(a.last().map(String::as_str), Some("--"));
        // Nothing of the operator's home is bound.
        if let Some(home) = std::env::var_os("HOME") {
            let home = home.to_string_lossy().into_owned();
            assert!(!a.iter().any(|x| x == &home), "{joined}");
        }
    }
}
