//! On-disk cache of compiled components, so that a second run starts in
//! milliseconds instead of recompiling every plugin.
//!
//! The key is the component's sha256 plus the engine's compatibility hash,
//! which covers the wasmtime version and every engine setting that changes
//! code (epoch interruption, fuel, target). Files are written with an atomic
//! rename; a file that fails to load is removed and the component compiled
//! again. Only files this host wrote into its own cache directory are ever
//! deserialized: plugins ship `.wasm`, never precompiled code.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

/// The compile cache of one engine.
#[derive(Debug)]
pub struct CompileCache {
    dir: PathBuf,
    engine_key: String,
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
    /// A cache in `dir` for artifacts of `engine`.
    pub fn new(dir: PathBuf, engine: &Engine) -> Self {
        let mut hasher = Fnv(0xcbf2_9ce4_8422_2325);
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Self {
            dir,
            engine_key: format!("{:016x}", hasher.finish()),
        }
    }

    fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{}.cwasm", self.engine_key))
    }

    /// The cached component for `digest`, if there is a usable one.
    pub fn load(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let path = self.path(digest);
        if !path.is_file() {
            return None;
        }
        // SAFETY: the file is in this host's own cache directory and was
        // written by `store` from `Engine::precompile_component` output for
        // an engine with the same compatibility hash; wasmtime also checks
        // the artifact's header and refuses a mismatch with an error.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => Some(component),
            Err(_) => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Writes `component`'s compiled code under `digest`.
    pub fn store(&self, component: &Component, digest: &str) -> std::io::Result<()> {
        let bytes = component
            .serialize()
            .map_err(|e| std::io::Error::other(format!("{e}")))?;
        std::fs::create_dir_all(&self.dir)?;
        let path = self.path(digest);
        let tmp = tmp_path(&path);
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &path)
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp{}", std::process::id()));
    path.with_file_name(name)
}

/// The default cache directory: `$EVALHOST_CACHE_DIR`, else the user's cache
/// directory (`~/.cache/evalhost/components` on Linux).
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("EVALHOST_CACHE_DIR") {
        return Some(PathBuf::from(dir).join("components"));
    }
    dirs::cache_dir().map(|d| d.join("evalhost").join("components"))
}
