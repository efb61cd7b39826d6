//! On-disk cache of compiled components, so that a second run starts in
//! milliseconds instead of recompiling every plugin.
//!
//! The key is the component's sha256 plus the engine's compatibility hash,
//! which covers the wasmtime version and every engine setting that changes
//! code (epoch interruption, fuel, target). Files are written with an atomic
//! rename; a file that fails to load is removed and the component compiled
//! again.
//!
//! A cached artifact is native code that runs unchecked once loaded, so the
//! cache trusts nothing it did not write itself:
//! - the directory must belong to the user running evalhost and be writable
//!   by nobody else, or it is not used at all (a warning says why);
//! - every artifact carries a keyed BLAKE3 tag (a MAC) over its name and
//!   bytes, made with a per-user secret key kept outside the cache directory
//!   (`~/.local/share/evalhost/compile-cache.key`, created 0600 on first
//!   use; `EVALHOST_CACHE_KEY` supplies one instead). The tag is checked on
//!   the bytes in memory, and those same bytes are deserialized: an
//!   artifact someone else wrote, renamed or changed is removed and
//!   compiled again, never run.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::user_key::{TAG_LEN, keyed_tag, secret};

/// The largest artifact read back.
const MAX_ARTIFACT: u64 = 1 << 30;

/// The compile cache of one engine.
#[derive(Debug)]
pub struct CompileCache {
    dir: PathBuf,
    engine_key: String,
    secret: [u8; 32],
}

/// Why the cache directory or key cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum UntrustedCache {
    /// The directory is someone else's, or others may write to it.
    #[error("the compile cache {dir} {why}; it is not used (compiling instead)")]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// No key could be read or made.
    #[error("no compile-cache key ({0}); the compile cache is not used")]
    Key(String),
}

/// A stable 64-bit hasher (FNV-1a): `DefaultHasher` is not guaranteed to be
/// stable across Rust releases, and the key outlives the process.
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl CompileCache {
    /// A cache in `dir` for artifacts of `engine`, or why `dir` cannot be
    /// trusted with native code.
    pub fn new(dir: PathBuf, engine: &Engine) -> Result<Self, UntrustedCache> {
        crate::safe_fs::check_owned_dir(&dir).map_err(|why| UntrustedCache::Directory {
            dir: dir.clone(),
            why,
        })?;
        let secret = secret().map_err(UntrustedCache::Key)?;
        let mut hasher = Fnv(0xcbf2_9ce4_8422_2325);
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(Self {
            dir,
            engine_key: format!("{:016x}", hasher.finish()),
            secret,
        })
    }

    fn name(&self, digest: &str) -> String {
        format!("{digest}-{}.cwasm", self.engine_key)
    }

    /// The artifact's tag: BLAKE3 keyed with the user's secret (a MAC; it
    /// runs over megabytes on every start, so the fast one).
    fn tag(&self, name: &str, code: &[u8]) -> [u8; TAG_LEN] {
        let mut mac = blake3::Hasher::new_keyed(&self.secret);
        mac.update(b"evalhost-compile-cache-v2\0");
        mac.update(name.as_bytes());
        mac.update(b"\0");
        mac.update(code);
        *mac.finalize().as_bytes()
    }

    /// The cached component for `digest`, if there is one this host wrote.
    /// `Err` says an entry was there but failed its check (it is removed).
    /// True when a compiled artifact for `digest` is present (not yet
    /// checked: [`Self::load`] checks it).
    pub fn contains(&self, digest: &str) -> bool {
        std::fs::symlink_metadata(self.dir.join(self.name(digest))).is_ok()
    }

    pub fn load(&self, engine: &Engine, digest: &str) -> Result<Option<Component>, String> {
        let name = self.name(digest);
        let path = self.dir.join(&name);
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        let bytes = match crate::safe_fs::read_capped(&path, MAX_ARTIFACT) {
            Ok(b) => b,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(format!("{e}"));
            }
        };
        let authentic = bytes.len() > TAG_LEN && {
            let (code, tag) = bytes.split_at(bytes.len() - TAG_LEN);
            // `blake3::Hash` compares in constant time.
            blake3::Hash::from(self.tag(&name, code))
                == blake3::Hash::from_slice(tag).unwrap_or(blake3::Hash::from([0; 32]))
        };
        if !authentic {
            let _ = std::fs::remove_file(&path);
            return Err(format!(
                "{} failed its authentication check (not written by this user's evalhost, or changed since); removed and compiled again",
                path.display()
            ));
        }
        let code = &bytes[..bytes.len() - TAG_LEN];
        // SAFETY: `code` carries a valid MAC under this user's secret key
        // over this very name (sha256 of the component and the engine's
        // compatibility hash) and these very bytes, checked in memory just
        // now: `store` wrote it from `Component::serialize` output of an
        // engine with the same compatibility hash. wasmtime also checks the
        // artifact's header and refuses a mismatch with an error.
        match unsafe { Component::deserialize(engine, code) } {
            Ok(component) => Ok(Some(component)),
            Err(_) => {
                let _ = std::fs::remove_file(&path);
                Ok(None)
            }
        }
    }

    fn types_name(&self, digest: &str) -> String {
        format!("{digest}-{}.types", self.engine_key)
    }

    /// The assertion types the component of `digest` described when it
    /// was last loaded, if this user's evalhost wrote them (so that a run
    /// loads only the built-in plugins its suite uses). A list that fails
    /// its check is ignored (and removed): the plugins are then all loaded.
    pub fn load_types(&self, digest: &str) -> Option<Vec<String>> {
        let name = self.types_name(digest);
        let path = self.dir.join(&name);
        let bytes = crate::safe_fs::read_capped(&path, 1 << 20).ok()?;
        let authentic = bytes.len() > TAG_LEN && {
            let (text, tag) = bytes.split_at(bytes.len() - TAG_LEN);
            blake3::Hash::from(self.tag(&name, text))
                == blake3::Hash::from_slice(tag).unwrap_or(blake3::Hash::from([0; 32]))
        };
        if !authentic {
            let _ = std::fs::remove_file(&path);
            return None;
        }
        let text = std::str::from_utf8(&bytes[..bytes.len() - TAG_LEN]).ok()?;
        Some(text.lines().map(str::to_owned).collect())
    }

    /// Writes the assertion types of the component of `digest`, tagged.
    pub fn store_types(&self, digest: &str, types: &[&str]) -> std::io::Result<()> {
        let name = self.types_name(digest);
        let text = types.join("\n");
        let tag = self.tag(&name, text.as_bytes());
        let mut file = crate::safe_fs::AtomicFile::create(&self.dir.join(&name))?;
        file.write_all(text.as_bytes())?;
        file.write_all(&tag)?;
        file.commit()
    }

    /// Writes `component`'s compiled code under `digest`, with its tag.
    pub fn store(&self, component: &Component, digest: &str) -> std::io::Result<()> {
        let bytes = component
            .serialize()
            .map_err(|e| std::io::Error::other(format!("{e}")))?;
        let name = self.name(digest);
        let tag = self.tag(&name, &bytes);
        let mut file = crate::safe_fs::AtomicFile::create(&self.dir.join(&name))?;
        file.write_all(&bytes)?;
        file.write_all(&tag)?;
        file.commit()
    }
}

/// The default cache directory: `$EVALHOST_COMPILE_CACHE_DIR`, else
/// `components` in the cache root ([`crate::safe_fs::cache_root`]:
/// `$EVALHOST_CACHE_DIR`, else `~/.cache/evalhost` on Linux).
///
/// `EVALHOST_COMPILE_CACHE_DIR` keeps compiled code apart from the answers
/// cached under `EVALHOST_CACHE_DIR` (judge verdicts, target responses):
/// a CI job can keep one between jobs and start the other empty. It moves
/// only this directory: the Python runner, AgentV's TypeScript bundles and
/// pulled plugins stay in the cache root (they were once kept beside it,
/// in its parent: `$TMPDIR/evalhost-compiled` put them in the shared
/// `$TMPDIR`).
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("EVALHOST_COMPILE_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    crate::safe_fs::cache_root().map(|d| d.join("components"))
}

/// The bytes of a component another cache keeps (`domain`), when its tag
/// checks out: written by this user's evalhost under this very name. An
/// entry that fails is removed (`Ok(None)`, as for a missing one); the
/// directory must be this user's and writable by nobody else.
pub(crate) fn read_tagged(path: &Path, domain: &str, cap: u64) -> Result<Option<Vec<u8>>, String> {
    if let Some(dir) = path.parent() {
        crate::safe_fs::check_owned_dir(dir).map_err(|why| format!("{}: {why}", dir.display()))?;
    }
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stored =
        crate::safe_fs::read_capped(path, cap.saturating_add(TAG_LEN as u64)).unwrap_or_default();
    if stored.len() > TAG_LEN {
        let (code, tag) = stored.split_at(stored.len() - TAG_LEN);
        // `blake3::Hash` compares in constant time.
        if blake3::Hash::from(keyed_tag(domain, &[name.as_bytes(), code])?)
            == blake3::Hash::from_slice(tag).unwrap_or(blake3::Hash::from([0; 32]))
        {
            return Ok(Some(code.to_vec()));
        }
    }
    let _ = std::fs::remove_file(path);
    Ok(None)
}

/// Stores `code` at `path` with its tag (see [`read_tagged`]), atomically.
pub(crate) fn write_tagged(path: &Path, domain: &str, code: &[u8]) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tag = keyed_tag(domain, &[name.as_bytes(), code])?;
    let mut file =
        crate::safe_fs::AtomicFile::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(code)
        .and_then(|()| file.write_all(&tag))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.commit()
        .map_err(|e| format!("{}: {e}", path.display()))
}
