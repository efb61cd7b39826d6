//! Files evalhost writes and reads back (run directories, caches) when the
//! directory they live in may have been prepared by someone else: a run
//! directory checked into an untrusted project, a shard downloaded from
//! another CI job, a cache restored from a shared store.
//!
//! - Nothing is opened through a symbolic link: reads and appends use
//!   `O_NOFOLLOW`, and whole files are written to a fresh temporary file
//!   (created new, unpredictable name) and renamed over the old name, which
//!   replaces a link instead of writing through it.
//! - Only regular files are read, and never more than a cap: a FIFO, a
//!   device or `/dev/zero` behind a name is refused, not read until memory
//!   runs out.
//! - A run directory that is, or sits under, a link inside the project is
//!   refused ([`check_dir`]).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Component, Path, PathBuf};

/// evalhost's cache root: `$EVALHOST_CACHE_DIR`, else the user's cache
/// directory's `evalhost` (`~/.cache/evalhost` on Linux). Every cache is a
/// directory in it (judge verdicts, target responses, pulled plugins, the
/// Python runner, AgentV's TypeScript bundles, and compiled plugins unless
/// `EVALHOST_COMPILE_CACHE_DIR` puts those elsewhere): one rule, here.
pub fn cache_root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("EVALHOST_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    dirs::cache_dir().map(|d| d.join("evalhost"))
}

/// Why a file was refused.
fn refused(path: &Path, why: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{}: {why}", path.display()),
    )
}

/// Maps the `ELOOP` of `O_NOFOLLOW` to a message that says what happened.
fn no_link(path: &Path, e: std::io::Error) -> std::io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        refused(
            path,
            "is a symbolic link; evalhost does not follow links in run directories and caches",
        )
    } else {
        e
    }
}

/// Opens `path` for reading: not through a link, a regular file only.
pub fn open_read(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| no_link(path, e))?;
    if !file.metadata()?.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    Ok(file)
}

/// Reads at most `cap` bytes of `path` (see [`open_read`]); a larger file is
/// an error, not a truncated read.
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    read_all_capped(open_read(path)?, path, cap)
}

/// Everything `file` holds, at most `cap` bytes (more is an error).
fn read_all_capped(file: File, path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    // Sized from the file's length (the file may still grow or shrink:
    // the cap is checked on what was read).
    let len = file.metadata().map_or(0, |m| m.len()).min(cap);
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(refused(
            path,
            &format!("is larger than the {} limit", human(cap)),
        ));
    }
    Ok(bytes)
}

/// [`read_capped`] as UTF-8 text.
pub fn read_text_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    String::from_utf8(read_capped(path, cap)?).map_err(|_| refused(path, "is not valid UTF-8"))
}

/// Refuses a file to be written in place that is not a regular file, or
/// that has other hard links (writing would change a file elsewhere).
fn writable_in_place(path: &Path, file: &File) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    if meta.nlink() > 1 {
        return Err(refused(
            path,
            "has other hard links; evalhost does not write a file that is also elsewhere",
        ));
    }
    Ok(())
}

/// Opens `path` for appending, creating it: not through a link, and only
/// when what is there is a regular file with no other hard link.
pub fn open_append(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| no_link(path, e))?;
    writable_in_place(path, &file)?;
    Ok(file)
}

/// Reads at most `cap` bytes of `path` as UTF-8, following links (a file
/// the operator points at may be one) but only from a regular file.
pub fn read_regular_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(refused(path, "is not a regular file"));
    }
    String::from_utf8(read_all_capped(file, path, cap)?)
        .map_err(|_| refused(path, "is not valid UTF-8"))
}

/// Opens `path` for writing in place (to cut a torn tail): not through a
/// link, a regular file only.
pub fn open_write(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| no_link(path, e))?;
    writable_in_place(path, &file)?;
    Ok(file)
}

/// A file written whole: bytes go to a fresh temporary file beside `path`
/// (created new, unpredictable name), which [`AtomicFile::commit`] syncs
/// and renames over `path`. Dropped without a commit, nothing changes.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    temp: tempfile::NamedTempFile,
}

impl AtomicFile {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path.file_name().map_or_else(
            || ".evalhost".into(),
            |n| format!(".{}", n.to_string_lossy()),
        );
        use std::os::unix::fs::PermissionsExt as _;
        let temp = tempfile::Builder::new()
            .prefix(&name)
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o644))
            .tempfile_in(dir)?;
        Ok(Self {
            path: path.to_path_buf(),
            temp,
        })
    }

    /// Syncs and renames the file into place (replacing a link, never
    /// writing through it).
    pub fn commit(self) -> std::io::Result<()> {
        self.temp.as_file().sync_all()?;
        self.temp
            .persist(&self.path)
            .map(|_| ())
            .map_err(|e| e.error)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.temp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.temp.flush()
    }
}

/// Writes `bytes` to `path` whole ([`AtomicFile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// Refuses a directory that is a link, or that sits under a link below any
/// of `roots` (the project root, the working directory): a link checked
/// into a project would send a run's files wherever it points. Components
/// above the roots are the machine's own (`/tmp` may be a link) and are
/// not judged. A directory that does not exist yet is fine as long as none
/// of its existing ancestors below a root is a link.
pub fn check_dir(dir: &Path, roots: &[&Path]) -> std::io::Result<()> {
    let absolute = std::path::absolute(dir)?;
    let mut normal = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    let roots: Vec<PathBuf> = roots
        .iter()
        .filter_map(|r| std::path::absolute(r).ok())
        .collect();
    let mut at = PathBuf::new();
    for c in normal.components() {
        at.push(c);
        let judged = at == normal || roots.iter().any(|r| at.starts_with(r) && at != *r);
        if !judged {
            continue;
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refused(
                    dir,
                    &format!(
                        "{} is a symbolic link; a run directory must not be, or sit under, a link inside the project",
                        at.display()
                    ),
                ));
            }
            Ok(m) if !m.is_dir() => {
                return Err(refused(
                    dir,
                    &format!("{} is not a directory", at.display()),
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Checks that `dir` exists (creating it 0700), belongs to this user and is
/// not writable by group or others.
pub fn check_owned_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    let meta = std::fs::metadata(dir).map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_dir() {
        return Err("is not a directory".to_owned());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "belongs to user {} (evalhost runs as {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "is writable by others (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_and_oversized_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "precious\n").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = open_append(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(open_read(&link).is_err());
        assert!(open_write(&link).is_err());
        // Writing whole replaces the link; the file it pointed at is intact.
        write_atomic(&link, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // A FIFO is not read (and does not hang).
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(
            read_capped(&fifo, 10)
                .unwrap_err()
                .to_string()
                .contains("not a regular file")
        );
        // Over the cap is an error.
        assert!(
            read_capped(&target, 4)
                .unwrap_err()
                .to_string()
                .contains("limit")
        );
        assert_eq!(read_capped(&target, 9).unwrap(), b"precious\n");
        // A hard link is not written in place.
        let hard = dir.path().join("hard");
        std::fs::hard_link(&target, &hard).unwrap();
        assert!(
            open_append(&hard)
                .unwrap_err()
                .to_string()
                .contains("hard links")
        );
        assert!(open_write(&hard).is_err());
        assert!(read_regular_capped(&fifo, 10).is_err());
    }

    #[test]
    fn run_directories_under_links_inside_the_project_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("real/runs")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.path().join(".evalhost")).unwrap();
        let r = [root.path()];
        assert!(check_dir(&root.path().join("real/runs/x"), &r).is_ok());
        let e = check_dir(&root.path().join(".evalhost/runs/x"), &r).unwrap_err();
        assert!(
            e.to_string().contains(".evalhost is a symbolic link"),
            "{e}"
        );
        std::os::unix::fs::symlink(elsewhere.path(), root.path().join("real/out")).unwrap();
        assert!(check_dir(&root.path().join("real/out"), &r).is_err());
        // Outside the roots only the directory itself is judged.
        assert!(check_dir(&elsewhere.path().join("x"), &r).is_ok());
        assert!(check_dir(&root.path().join("real/out"), &[]).is_err());
    }
}
