//! The per-user secret key, and keyed tags (MACs) made with it: every
//! cache that holds code (compiled components, the AgentV-assertion
//! toolchain and its components) tags what it wrote, and the results index
//! seals the runs this machine recorded. The key lives outside every cache
//! (`~/.local/share/evalhost/compile-cache.key`, created 0600 on first use;
//! `EVALHOST_CACHE_KEY` supplies one instead).

use std::io::Write;
use std::path::{Path, PathBuf};

/// The length of a tag.
pub const TAG_LEN: usize = 32;

/// The per-user key: `EVALHOST_CACHE_KEY` (64 hex digits), else the key
/// file, created on first use. Every cache that holds code (compiled
/// components, the AgentV-assertion toolchain and its components) tags
/// what it wrote with it.
pub fn secret() -> Result<[u8; 32], String> {
    if let Ok(hex) = std::env::var("EVALHOST_CACHE_KEY") {
        return parse_key(hex.trim())
            .ok_or_else(|| "EVALHOST_CACHE_KEY must be 64 hexadecimal digits".to_owned());
    }
    let path = key_file().ok_or("no home directory for the key file")?;
    read_or_make_key(&path)
}

/// Where the key lives: never inside the cache directory, so that a cache
/// restored from elsewhere does not bring its own key.
pub fn key_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("EVALHOST_CACHE_KEY_FILE") {
        return Some(PathBuf::from(path));
    }
    dirs::data_local_dir().map(|d| d.join("evalhost").join("compile-cache.key"))
}

fn parse_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

fn read_or_make_key(path: &Path) -> Result<[u8; 32], String> {
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    if let Some(dir) = path.parent() {
        crate::safe_fs::check_owned_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let make = || -> std::io::Result<[u8; 32]> {
        let mut key = [0u8; 32];
        rand::fill(&mut key);
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        file.write_all(hex.as_bytes())?;
        file.sync_all()?;
        Ok(key)
    };
    match make() {
        Ok(key) => return Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
    }
    let file = crate::safe_fs::open_read(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} must belong to user {me} and be readable by nobody else (mode 600)",
            path.display()
        ));
    }
    let text = crate::safe_fs::read_text_capped(path, 256).map_err(|e| e.to_string())?;
    parse_key(text.trim()).ok_or_else(|| format!("{} is not a key", path.display()))
}

/// A keyed tag over `parts` under the per-user key, in `domain` (each use
/// its own, so a tag made for one cache is worth nothing in another).
pub fn keyed_tag(domain: &str, parts: &[&[u8]]) -> Result<[u8; TAG_LEN], String> {
    let key = secret()?;
    let mut mac = blake3::Hasher::new_keyed(&key);
    mac.update(domain.as_bytes());
    mac.update(b"\0");
    for p in parts {
        mac.update(&(p.len() as u64).to_le_bytes());
        mac.update(p);
    }
    Ok(*mac.finalize().as_bytes())
}
