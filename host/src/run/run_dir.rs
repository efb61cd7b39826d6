//! Where a run's files go: the project's `.evalhost/runs/<time>`, claimed
//! new for each run.

use std::path::{Path, PathBuf};

use crate::suite;

/// Where runs go by default: `.evalhost/runs/<time>` under the project,
/// whatever the current directory is (see [`runs_base`]). The directory is
/// created here, new: two runs started in the same millisecond (two suites
/// run at once by CI) each get their own, the second `<time>-2`, never one
/// directory whose rows they would both write.
///
/// The directories above it are checked first ([`crate::safe_fs::check_dir`]):
/// nothing is created through a link checked into the project.
pub(super) fn claim_default_run_dir(roots: &suite::roots::Roots) -> std::io::Result<PathBuf> {
    let stamp = jiff::Zoned::now()
        .strftime("%Y-%m-%dT%H-%M-%S%.3f")
        .to_string();
    let base = runs_base(roots);
    let runs = base.join(".evalhost").join("runs");
    crate::safe_fs::check_dir(
        &runs.join(&stamp),
        &[&roots.project_root, &roots.cwd, &base],
    )?;
    std::fs::create_dir_all(&runs)?;
    claim_fresh_dir(&runs, &stamp)
}

/// Creates `<parent>/<name>`, or `<name>-2`, `<name>-3`, … when taken: the
/// first name nobody else created (`mkdir` is atomic, so two processes never
/// claim the same one).
fn claim_fresh_dir(parent: &Path, name: &str) -> std::io::Result<PathBuf> {
    for n in 1u32..1000 {
        let dir = if n == 1 {
            parent.join(name)
        } else {
            parent.join(format!("{name}-{n}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "{}: 999 run directories named {name}-N exist",
            parent.display()
        ),
    ))
}

/// The directory whose `.evalhost/runs` holds a suite's runs: the nearest
/// directory above the eval file holding `.evalhost/` (not above the git
/// root), else the git root, else the eval file's directory. Never the
/// current directory: run from inside `cases/`, a run must not land there.
pub fn runs_base(roots: &suite::roots::Roots) -> PathBuf {
    let in_git = roots.project_root.join(".git").exists();
    roots
        .eval_dir
        .ancestors()
        .take_while(|d| !in_git || d.starts_with(&roots.project_root))
        .find(|d| d.join(".evalhost").is_dir())
        .unwrap_or(&roots.project_root)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::claim_fresh_dir;

    #[test]
    fn a_taken_name_gets_the_next_free_suffix() {
        let root = tempfile::tempdir().unwrap();
        let first = claim_fresh_dir(root.path(), "2026-11-28T00-00-41.808").unwrap();
        let second = claim_fresh_dir(root.path(), "2026-11-28T00-00-41.808").unwrap();
        let third = claim_fresh_dir(root.path(), "2026-11-28T00-00-41.808").unwrap();
        assert_eq!(first, root.path().join("2026-11-28T00-00-41.808"));
        assert_eq!(second, root.path().join("2026-11-28T00-00-41.808-2"));
        assert_eq!(third, root.path().join("2026-11-28T00-00-41.808-3"));
    }

    #[test]
    fn two_threads_claiming_at_once_never_share_a_directory() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().to_path_buf();
        let claimed: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || claim_fresh_dir(&path, "same").unwrap())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let distinct: std::collections::HashSet<_> = claimed.iter().collect();
        assert_eq!(distinct.len(), 8, "{claimed:?}");
    }
}
