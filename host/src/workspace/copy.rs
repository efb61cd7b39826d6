//! Copying a workspace's template and the case copies of a workspace:
//! `.git` skipped at every depth (it could carry hooks and config git would
//! run) or kept, links copied as links, special files refused.

use std::path::Path;

/// Copies `from` into `to` recursively, skipping `.git` at every depth (a
/// nested `.git` could carry hooks and config git would run); symbolic
/// links are copied as links.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in walkdir::WalkDir::new(from).min_depth(1).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        let rel = entry
            .path()
            .strip_prefix(from)
            .map_err(std::io::Error::other)?;
        if rel.components().any(|c| is_git_dir_name(c.as_os_str())) {
            continue;
        }
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(entry.path())?;
            std::os::unix::fs::symlink(target, &dest)?;
        } else {
            copy_regular(entry.path(), &dest)?;
        }
    }
    Ok(())
}

/// Copies one file of a tree: only a regular file (a FIFO, a socket or a
/// device is refused by name without being opened — opening a FIFO blocks
/// until a writer comes), opened without following a link, checked again
/// once open.
fn copy_regular(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let refuse = |what: &str| {
        std::io::Error::other(format!(
            "{} is {what}, not a regular file: a workspace holds only files, directories and links",
            from.display()
        ))
    };
    let meta = std::fs::symlink_metadata(from)?;
    if !meta.is_file() {
        return Err(refuse(file_kind(&meta)));
    }
    let mut source = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)?;
    let opened = source.metadata()?;
    if !opened.is_file() {
        return Err(refuse(file_kind(&opened)));
    }
    let mut dest = std::fs::File::create(to)?;
    std::io::copy(&mut source, &mut dest)?;
    dest.set_permissions(opened.permissions())?;
    Ok(())
}

/// What a file that is not a regular one is, for a message.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// `.git` in any case (`.GIT` is `.git` on a case-insensitive file system).
pub(super) fn is_git_dir_name(name: &std::ffi::OsStr) -> bool {
    name.eq_ignore_ascii_case(".git")
}

/// [`copy_tree`], `.git` directories included (a case's copy of a
/// workspace that is itself a checkout).
pub(super) fn copy_tree_with_git(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in walkdir::WalkDir::new(from).min_depth(1).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        let rel = entry
            .path()
            .strip_prefix(from)
            .map_err(std::io::Error::other)?;
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &dest)?;
        } else {
            copy_regular(entry.path(), &dest)?;
        }
    }
    Ok(())
}
