//! Memory and process-count limits of a confined process and everything it
//! starts, by a control group of its own (Linux cgroups: v2 where evalhost's
//! group is delegated, else the v1 `memory` and `pids` hierarchies where
//! they are writable). The process joins the group between `fork` and
//! `exec`, so nothing it starts escapes; the group is read and removed when
//! it ends: how much memory it used at most, whether it was killed for
//! memory, how many forks were refused.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The limits of one confined process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of memory (RAM; the kernel kills inside the group past it).
    pub memory: u64,
    /// Processes and threads at once.
    pub processes: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory: 4 << 30,
            processes: 512,
        }
    }
}

impl Limits {
    /// How the header and the row say it.
    pub fn describe(&self) -> String {
        format!(
            "memory {}, {} processes",
            bytes(self.memory),
            self.processes
        )
    }
}

/// `4 GiB`, `512 MiB`.
pub fn bytes(n: u64) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} B")
    }
}

/// Parses `4GiB`, `512 MiB`, `2G`, `1000000` (bytes).
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    let value = number * scale as f64;
    (value.is_finite() && value >= 1.0).then_some(value as u64)
}

/// Where groups can be made on this machine.
#[derive(Debug, Clone)]
pub enum Cgroups {
    /// cgroup v2: evalhost's group, with `memory` and `pids` delegated to
    /// its children.
    V2(PathBuf),
    /// cgroup v1: evalhost's groups in the `memory` and `pids` hierarchies.
    V1 { memory: PathBuf, pids: PathBuf },
}

/// A group made for one process.
#[derive(Debug)]
pub struct Group {
    dirs: Vec<PathBuf>,
    procs: Vec<File>,
    v2: bool,
    limits: Limits,
}

/// What a group saw, read when its process ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// The most memory in use at once, when the kernel says.
    pub peak_memory: Option<u64>,
    /// Processes killed for memory.
    pub oom_kills: u64,
    /// Forks refused at the process limit.
    pub forks_refused: u64,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Whether `dir`'s `cgroup.subtree_control` hands `memory` and `pids` to
/// its children.
fn delegates(dir: &Path) -> bool {
    let text = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    let words: Vec<&str> = text.split_whitespace().collect();
    words.contains(&"memory") && words.contains(&"pids")
}

/// The cgroup v2 group the case groups are made in, from `own` (evalhost's
/// group). The kernel lets a group hand controllers to its children only
/// while it holds no process itself, and evalhost is in `own`: so evalhost
/// moves itself into a leaf of its own (`own/evalhost-<pid>/supervisor`),
/// and turns `memory` and `pids` on in `own/evalhost-<pid>`, whose other
/// children are the case groups — the usual delegation. Where `own` itself
/// cannot hand them on (not delegated to this user), it says how to run
/// evalhost so that it can.
pub fn delegate_v2(own: &Path, pid: u32) -> Result<PathBuf, String> {
    if delegates(own) && !holds_processes(own) {
        return Ok(own.to_path_buf());
    }
    let advice = "run evalhost in a delegated cgroup, e.g. `systemd-run --user --scope -p Delegate=yes evalhost …`, or as root";
    let available = std::fs::read_to_string(own.join("cgroup.controllers")).unwrap_or_default();
    let available: Vec<&str> = available.split_whitespace().collect();
    if !(available.contains(&"memory") && available.contains(&"pids")) {
        return Err(format!(
            "cgroup v2 group {} has no memory and pids controllers to hand on ({advice})",
            own.display()
        ));
    }
    let base = own.join(format!("evalhost-{pid}"));
    let supervisor = base.join("supervisor");
    let fail = |what: &str, e: std::io::Error| {
        format!(
            "cgroup v2: cannot {what} under {} ({e}); {advice}",
            own.display()
        )
    };
    std::fs::create_dir_all(&supervisor).map_err(|e| fail("make evalhost's group", e))?;
    std::fs::write(supervisor.join("cgroup.procs"), "0")
        .map_err(|e| fail("move evalhost into its own leaf", e))?;
    // Now that evalhost left it, its group may hand the controllers on.
    if !delegates(own) {
        std::fs::write(own.join("cgroup.subtree_control"), "+memory +pids")
            .map_err(|e| fail("hand memory and pids to evalhost's group", e))?;
    }
    std::fs::write(base.join("cgroup.subtree_control"), "+memory +pids")
        .map_err(|e| fail("turn memory and pids on for the case groups", e))?;
    Ok(base)
}

/// Whether a cgroup v2 group holds processes of its own.
fn holds_processes(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|t| !t.trim().is_empty())
}

impl Cgroups {
    /// Finds where groups can be made, or says why none can.
    pub fn detect() -> Result<Self, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let path_of = |controller: &str| -> Option<String> {
            own.lines().find_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
                names
                    .split(',')
                    .any(|n| n == controller)
                    .then(|| path.trim_start_matches('/').to_owned())
            })
        };
        let root = Path::new("/sys/fs/cgroup");
        if let (Some(memory), Some(pids)) = (path_of("memory"), path_of("pids")) {
            let memory = root.join("memory").join(memory);
            let pids = root.join("pids").join(pids);
            let c = Self::V1 { memory, pids };
            return c.probe().map(|()| c);
        }
        let unified = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .map(|p| root.join(p.trim_start_matches('/')))
            .ok_or("no cgroup v1 memory/pids hierarchy and no cgroup v2 group")?;
        let c = Self::V2(delegate_v2(&unified, std::process::id())?);
        c.probe().map(|()| c)
    }

    /// Makes and removes a group, to know it can be done.
    fn probe(&self) -> Result<(), String> {
        let group = self
            .create(Limits::default())
            .map_err(|e| format!("cannot make a cgroup: {e}"))?;
        group.finish();
        Ok(())
    }

    /// Makes a group with `limits`.
    pub fn create(&self, limits: Limits) -> std::io::Result<Group> {
        let name = format!(
            "evalhost-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let mut group = Group {
            dirs: Vec::new(),
            procs: Vec::new(),
            v2: matches!(self, Self::V2(_)),
            limits,
        };
        let settings: Vec<(PathBuf, Vec<(&str, String)>)> = match self {
            Self::V2(dir) => vec![(
                dir.join(&name),
                vec![
                    ("memory.max", limits.memory.to_string()),
                    ("memory.swap.max", "0".into()),
                    ("pids.max", limits.processes.to_string()),
                ],
            )],
            Self::V1 { memory, pids } => vec![
                (
                    memory.join(&name),
                    vec![("memory.limit_in_bytes", limits.memory.to_string())],
                ),
                (
                    pids.join(&name),
                    vec![("pids.max", limits.processes.to_string())],
                ),
            ],
        };
        for (dir, values) in settings {
            std::fs::create_dir(&dir)?;
            group.dirs.push(dir.clone());
            for (file, value) in values {
                let written = std::fs::write(dir.join(file), &value);
                // Swap accounting is often off: the memory limit stands.
                if file != "memory.swap.max" {
                    written?;
                }
            }
            group.procs.push(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join("cgroup.procs"))?,
            );
        }
        Ok(group)
    }
}

impl Group {
    /// The descriptors the child writes `0` to between `fork` and `exec`
    /// (see [`enter`]).
    pub fn fds(&self) -> Vec<i32> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// The limits it holds.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Reads what the group saw and removes it (waiting briefly for its
    /// last processes to be gone).
    pub fn finish(self) -> Usage {
        let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file)).ok();
        let field = |text: &Option<String>, key: &str| -> u64 {
            text.as_deref()
                .and_then(|t| {
                    t.lines().find_map(|l| {
                        l.strip_prefix(key)
                            .and_then(|v| v.trim().parse::<u64>().ok())
                    })
                })
                .unwrap_or(0)
        };
        let mut usage = Usage::default();
        for dir in &self.dirs {
            if self.v2 {
                usage.peak_memory = read(dir, "memory.peak").and_then(|t| t.trim().parse().ok());
                usage.oom_kills = field(&read(dir, "memory.events"), "oom_kill ");
                usage.forks_refused = field(&read(dir, "pids.events"), "max ");
            } else if dir.join("memory.limit_in_bytes").exists() {
                usage.peak_memory =
                    read(dir, "memory.max_usage_in_bytes").and_then(|t| t.trim().parse().ok());
                usage.oom_kills = field(&read(dir, "memory.oom_control"), "oom_kill ");
            } else {
                usage.forks_refused = field(&read(dir, "pids.events"), "max ");
            }
        }
        drop(self.procs);
        for dir in &self.dirs {
            for _ in 0..100 {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        }
        usage
    }
}

/// Between `fork` and `exec`: moves the calling process into the groups
/// whose `cgroup.procs` are open as `fds` (writing `0` means "me").
/// Only `write(2)`, as a forked child of a threaded parent may do.
pub fn enter(fds: &[i32]) -> std::io::Result<()> {
    for fd in fds {
        // SAFETY: `fd` is an open descriptor the parent owns for the whole
        // spawn; `write` is async-signal-safe.
        let n = unsafe { libc::write(*fd, b"0\n".as_ptr().cast(), 2) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_bytes("4GiB"), Some(4 << 30));
        assert_eq!(parse_bytes("512 MiB"), Some(512 << 20));
        assert_eq!(parse_bytes("2G"), Some(2 << 30));
        assert_eq!(parse_bytes("1.5g"), Some(3 << 29));
        assert_eq!(parse_bytes("100000"), Some(100_000));
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(parse_bytes("4 parsecs"), None);
        assert_eq!(bytes(4 << 30), "4 GiB");
        assert_eq!(bytes(512 << 20), "512 MiB");
    }

    /// A cgroup v2 tree as the kernel shows a systemd user's delegated
    /// scope: evalhost in it, memory and pids available but not handed on.
    #[test]
    fn v2_delegation_moves_evalhost_into_a_leaf_and_hands_the_controllers_on() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("user.slice/evalhost.scope");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
        std::fs::write(own.join("cgroup.subtree_control"), "").unwrap();
        std::fs::write(own.join("cgroup.procs"), "4242\n").unwrap();
        let base = delegate_v2(&own, 4242).unwrap();
        assert_eq!(base, own.join("evalhost-4242"));
        // evalhost moved itself into a leaf, and the controllers are on
        // where the case groups are made (the old code refused here).
        assert_eq!(
            std::fs::read_to_string(base.join("supervisor/cgroup.procs")).unwrap(),
            "0"
        );
        assert_eq!(
            std::fs::read_to_string(base.join("cgroup.subtree_control")).unwrap(),
            "+memory +pids"
        );
        assert_eq!(
            std::fs::read_to_string(own.join("cgroup.subtree_control")).unwrap(),
            "+memory +pids"
        );
        // Without the controllers, it says how to run evalhost.
        std::fs::write(own.join("cgroup.controllers"), "cpu io\n").unwrap();
        let why = delegate_v2(&own, 1).unwrap_err();
        assert!(why.contains("Delegate=yes"), "{why}");
    }
}
