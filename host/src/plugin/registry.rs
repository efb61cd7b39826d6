//! Which plugin grades which assertion type: the built-in plugins embedded in
//! the binary, plus the suite's own `.wasm` plugins.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::engine::PluginEngine;
use super::instance::{LoadedPlugin, PluginLoadError, TypeInfo};

include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// The built-in plugins: `(name, component bytes)`, compiled from `plugins/`
/// by the build script.
pub fn builtin_plugins() -> &'static [(&'static str, &'static [u8])] {
    BUILTIN_PLUGINS
}

/// Assertion types and the plugins that grade them.
#[derive(Debug, Default)]
pub struct Registry {
    plugins: Vec<Arc<LoadedPlugin>>,
    types: BTreeMap<String, (usize, usize)>,
}

/// Two plugins claim the same assertion type.
#[derive(Debug, thiserror::Error)]
#[error("assertion type `{type_name}` is provided by both `{first}` and `{second}`")]
pub struct DuplicateType {
    /// The type.
    pub type_name: String,
    /// The plugin registered first.
    pub first: String,
    /// The plugin that clashed.
    pub second: String,
}

impl Registry {
    /// Loads every built-in plugin, in parallel.
    pub fn with_builtins(engine: &Arc<PluginEngine>) -> Result<Self, PluginLoadError> {
        let loaded: Vec<Result<LoadedPlugin, PluginLoadError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = builtin_plugins()
                .iter()
                .map(|(name, wasm)| {
                    scope
                        .spawn(move || LoadedPlugin::load(engine, &format!("builtin:{name}"), wasm))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("plugin loading thread panicked"))
                .collect()
        });
        let mut registry = Self::default();
        for plugin in loaded {
            registry
                .add(plugin?)
                .expect("built-in plugins provide distinct types");
        }
        Ok(registry)
    }

    /// Adds a plugin and its types.
    pub fn add(&mut self, plugin: LoadedPlugin) -> Result<Arc<LoadedPlugin>, DuplicateType> {
        let index = self.plugins.len();
        for ty in &plugin.types {
            if let Some((other, _)) = self.types.get(&ty.name) {
                return Err(DuplicateType {
                    type_name: ty.name.clone(),
                    first: self.plugins[*other].label.clone(),
                    second: plugin.label.clone(),
                });
            }
        }
        for (i, ty) in plugin.types.iter().enumerate() {
            self.types.insert(ty.name.clone(), (index, i));
        }
        let plugin = Arc::new(plugin);
        self.plugins.push(plugin.clone());
        Ok(plugin)
    }

    /// The plugin and type info for a kebab-case type name.
    pub fn resolve(&self, type_name: &str) -> Option<(&Arc<LoadedPlugin>, &TypeInfo)> {
        let (p, t) = self.types.get(type_name)?;
        let plugin = &self.plugins[*p];
        Some((plugin, &plugin.types[*t]))
    }

    /// Every known type name, sorted.
    pub fn type_names(&self) -> impl Iterator<Item = &str> {
        self.types.keys().map(String::as_str)
    }

    /// Every loaded plugin.
    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }
}
