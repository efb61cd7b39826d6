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

pub mod case;
pub mod container;
pub mod limits;
pub mod net;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use case::{CaseSandbox, Confined, Refused, RunSandbox, Sandboxed};
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
    /// What the process must not see, inside what it may (the run
    /// directory, the project's `.evalhost`, `.env` files, git
    /// configuration): an empty `tmpfs` over a directory, an empty file
    /// over a file — over the writable binds too.
    pub hidden: Vec<PathBuf>,
    /// The program, named by its path outside the root: its file (links
    /// resolved) bound read-only at the path named, after what is hidden
    /// (the target's own script).
    pub program: Option<(PathBuf, PathBuf)>,
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
            let argv = isolation.argv(&Confine::default(), &["true".to_owned()], None, &[], false);
            Command::new(&argv[0])
                .args(&argv[1..])
                .env_clear()
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
        for dir in &confine.readable {
            a.extend(["--ro-bind-try".into(), path_arg(dir), path_arg(dir)]);
        }
        for dir in &confine.writable {
            a.extend(["--bind".into(), path_arg(dir), path_arg(dir)]);
        }
        // What is hidden lies inside what is bound: only what is there and
        // under a bound directory (a mount point must be); an empty
        // directory over a directory, an empty file over a file. Over the
        // writable binds too: a workspace inside the project does not make
        // the project's secrets visible again.
        let bound = |h: &PathBuf| {
            confine
                .readable
                .iter()
                .chain(&confine.writable)
                .any(|r| h.starts_with(r) && h != r)
        };
        for path in confine.hidden.iter().filter(|h| bound(h)) {
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_dir() => a.extend(["--tmpfs".into(), path_arg(path)]),
                Ok(_) => {
                    a.extend(["--ro-bind".into(), "/dev/null".into(), path_arg(path)]);
                }
                Err(_) => {}
            }
        }
        // What the target's own `isolate.read` grants, and its program,
        // after what is hidden: the operator's grant wins.
        for dir in &confine.extra_readable {
            a.extend(["--ro-bind-try".into(), path_arg(dir), path_arg(dir)]);
        }
        if let Some((file, named)) = &confine.program {
            a.extend(["--ro-bind-try".into(), path_arg(file), path_arg(named)]);
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

    /// The command line running `argv` confined (see [`Isolation::args`]):
    /// `bwrap` first. bwrap is the sandbox's PID 1: its own environment is
    /// readable inside at /proc/1/environ, so the caller starts it with an
    /// empty one (what the program gets is in the --setenv arguments).
    pub fn argv(
        &self,
        confine: &Confine,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
        network: bool,
    ) -> Vec<String> {
        let mut line = vec![path_arg(&self.bwrap)];
        line.extend(self.args(confine, cwd, env, network));
        line.extend(argv.iter().cloned());
        line
    }
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
    let cache = crate::safe_fs::cache_root()
        .ok_or_else(|| fail("no cache directory (set EVALHOST_CACHE_DIR)".into()))?
        .join("roots");
    // Like every cache of evalhost's: this user's, writable by nobody else
    // (a root planted by another user would be used as is).
    crate::safe_fs::check_owned_dir(&cache)
        .map_err(|e| fail(format!("the roots cache {}: {e}", cache.display())))?;
    let done = cache.join(&digest);
    if done.join("usr").exists() {
        return Ok(done);
    }
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
    // GNU tar has no switch that skips device nodes outside `dev/` (nor
    // FIFOs and sockets): anything that is not a file, a directory or a
    // link is removed before the root is used.
    remove_special_files(partial.path()).map_err(|e| fail(e.to_string()))?;
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

/// Removes every entry under `dir` that is not a regular file, a
/// directory or a symbolic link (device nodes, FIFOs, sockets).
fn remove_special_files(dir: &Path) -> std::io::Result<()> {
    for entry in walkdir::WalkDir::new(dir).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        let kind = entry.file_type();
        if !(kind.is_file() || kind.is_dir() || kind.is_symlink()) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Between `fork` and `exec` of a confined process: it enters its control
/// group (`fds`), and no descriptor of evalhost's reaches the sandbox (one
/// it inherited without close-on-exec, a pipe of its caller). Only system
/// calls: async-signal-safe.
pub fn enter_child(fds: &[i32]) -> std::io::Result<()> {
    limits::enter(fds)?;
    close_on_exec_from(3);
    Ok(())
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
