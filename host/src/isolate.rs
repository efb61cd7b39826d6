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
//! - no network (its own network namespace: not even the host's loopback);
//! - its own PID, IPC and UTS namespaces; it dies with evalhost.
//!
//! Where `bwrap` is missing or cannot make namespaces (no unprivileged user
//! namespaces), [`Isolation::detect`] says why and the run refuses to start
//! rather than run anything unconfined.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, RwLock};

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
    #[error("--isolate-root {0}: not a directory with usr/ in it")]
    BadRoot(PathBuf),
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
}

impl Isolation {
    /// Checks that `bwrap` (found on PATH by the caller) can make a sandbox
    /// on this machine (a trivial confined `true`); `root`, when given, is
    /// used as the sandboxes' root filesystem.
    pub fn detect(bwrap: Option<PathBuf>, root: Option<&Path>) -> Result<Self, Unavailable> {
        let bwrap = bwrap.ok_or(Unavailable::NoBwrap)?;
        if let Some(root) = root
            && !root.join("usr").is_dir()
        {
            return Err(Unavailable::BadRoot(root.to_path_buf()));
        }
        let isolation = Self {
            bwrap,
            root: root.map(Path::to_path_buf),
        };
        let probe = isolation
            .command(&Confine::default(), &["true".to_owned()], None, &[], false)
            .output()
            .map_err(|e| Unavailable::CannotStart(e.to_string()))?;
        if !probe.status.success() {
            return Err(Unavailable::CannotStart(
                String::from_utf8_lossy(&probe.stderr).trim().to_owned(),
            ));
        }
        Ok(isolation)
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
        if network {
            // A process that must reach the host's loopback (the judge
            // proxy of a code grader) or a model API keeps the host's
            // network; everything else stays confined.
            a.insert(1, "--share-net".into());
        }
        let root = self.root.as_deref().unwrap_or(Path::new("/"));
        let mut ro = |from: &Path, to: &str| {
            a.extend(["--ro-bind".into(), path_arg(from), to.to_owned()]);
        };
        ro(&root.join("usr"), "/usr");
        ro(&root.join("etc"), "/etc");
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
    });
    match active.readable.write() {
        Ok(mut r) => *r = readable,
        Err(e) => *e.into_inner() = readable,
    }
    active.on.store(true, Ordering::SeqCst);
    active
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
        }
    }

    #[test]
    fn the_sandbox_has_no_network_no_home_and_only_the_given_env() {
        let confine = Confine {
            writable: vec![PathBuf::from("/w/case-1")],
            readable: vec![PathBuf::from("/w/suite")],
            extra_readable: vec![],
        };
        let a = isolation().args(
            &confine,
            Some(Path::new("/w/case-1")),
            &[("OPENAI_API_KEY".into(), "k".into())],
            false,
        );
        let joined = a.join(" ");
        assert!(
            joined.starts_with("--unshare-all --die-with-parent"),
            "{joined}"
        );
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
