//! The built-in plugins compiled into the binary: each one's name, its
//! component bytes and their sha256, made by the build script from
//! `plugins/`. A leaf: `merge` checks digests against this table without
//! linking the plugin host.

include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// The built-in plugins: `(name, component bytes, sha256)`.
pub fn plugins() -> &'static [(&'static str, &'static [u8], &'static str)] {
    BUILTIN_PLUGINS
}
