//! Which plugin grades which assertion type: the built-in plugins embedded in
//! the binary, plus the suite's own `.wasm` plugins.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::engine::PluginEngine;
use super::instance::{LoadedPlugin, PluginLoadError, TypeInfo};

use crate::builtin::plugins as builtin_plugins;

/// Assertion types and the plugins that grade them.
#[derive(Debug, Default)]
pub struct Registry {
    plugins: Vec<Arc<LoadedPlugin>>,
    types: BTreeMap<String, (usize, usize)>,
    /// Plugins named by single assertions (`wasm:`), by path.
    by_path: BTreeMap<std::path::PathBuf, Arc<LoadedPlugin>>,
    /// Assertions whose config their plugin refused, graded as that
    /// plugin's error without a call (a promptfoo config's assertion
    /// without a `value`, which promptfoo errors while grading), by the
    /// place they were written.
    invalid: std::collections::HashMap<
        (Arc<std::path::PathBuf>, evalhost_suite::source_map::KeyPath),
        Arc<str>,
    >,
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
    /// Marks the assertion written at `loc` as refused by its plugin's
    /// config check with `message`: graded as a plugin error, never called.
    pub fn mark_invalid(&mut self, loc: &crate::suite::Loc, message: &str) {
        self.invalid
            .insert((loc.file.clone(), loc.key.clone()), message.into());
    }

    /// Why the plugin refused `assertion`'s config, when it did
    /// ([`Registry::mark_invalid`]).
    pub fn invalid(&self, assertion: &crate::suite::Assertion) -> Option<&str> {
        if self.invalid.is_empty() {
            return None;
        }
        self.invalid
            .get(&(assertion.loc.file.clone(), assertion.loc.key.clone()))
            .map(|m| &**m)
    }

    /// Loads every built-in plugin: those to compile in parallel (seconds
    /// each), those in the compile cache one after another on this thread
    /// (milliseconds each, and the suite is being read on another core).
    pub fn with_builtins(engine: &Arc<PluginEngine>) -> Result<Self, PluginLoadError> {
        Self::with_builtins_for(engine, None)
    }

    /// The built-in plugins a suite needs: those that provide one of
    /// `needed` (a suite's assertion types), by the types each described
    /// when it was last loaded here (remembered in the compile cache, tagged
    /// like its code). All of them when `needed` is `None`, or when one
    /// built-in's types are not remembered yet (a first run, another
    /// cache), or when one of `needed` is no built-in's (a suite plugin's
    /// or custom type, or a typo the checks report with every known type).
    /// What is remembered only decides what is loaded, never how a type is
    /// graded: every type is still resolved in the plugins' own
    /// descriptions.
    pub fn with_builtins_for(
        engine: &Arc<PluginEngine>,
        needed: Option<&std::collections::HashSet<&str>>,
    ) -> Result<Self, PluginLoadError> {
        let wanted: Vec<bool> = match needed {
            None => vec![true; builtin_plugins().len()],
            Some(needed) => {
                let remembered: Option<Vec<Vec<String>>> = builtin_plugins()
                    .iter()
                    .map(|(_, _, digest)| engine.remembered_types(digest))
                    .collect();
                // A type no built-in provides (a custom type, a typo) loads
                // them all: its checks and hints see every type there is.
                let provided = |types: &Vec<Vec<String>>| {
                    needed
                        .iter()
                        .all(|n| types.iter().flatten().any(|t| t == n))
                };
                match remembered {
                    Some(types) if provided(&types) => types
                        .iter()
                        .map(|t| t.iter().any(|t| needed.contains(t.as_str())))
                        .collect(),
                    _ => vec![true; builtin_plugins().len()],
                }
            }
        };
        let load = |(name, wasm, digest): &(&str, &[u8], &str)| {
            let loaded =
                LoadedPlugin::load_with_digest(engine, &format!("builtin:{name}"), wasm, digest)?;
            if engine.remembered_types(digest).is_none() {
                let types: Vec<&str> = loaded.types.iter().map(|t| &*t.name).collect();
                engine.remember_types(digest, &types);
            }
            Ok(loaded)
        };
        // Every plugin on its own thread: a cached one is read, checked
        // against its keyed tag (a BLAKE3 pass over megabytes of native
        // code) and deserialized; an uncached one compiled. The last on
        // this thread.
        let all: Vec<_> = builtin_plugins()
            .iter()
            .enumerate()
            .filter(|(i, _)| wanted[*i])
            .collect();
        if all.is_empty() {
            return Ok(Self::default());
        }
        let mut loaded: Vec<(usize, Result<LoadedPlugin, PluginLoadError>)> =
            std::thread::scope(|scope| {
                let (last, rest) = all.split_last().expect("there are built-in plugins");
                let handles: Vec<_> = rest
                    .iter()
                    .map(|(i, plugin)| (*i, scope.spawn(move || load(plugin))))
                    .collect();
                let mut loaded = vec![(last.0, load(last.1))];
                loaded.extend(
                    handles
                        .into_iter()
                        .map(|(i, h)| (i, h.join().expect("plugin loading thread panicked"))),
                );
                loaded
            });
        // In the built-in order, whatever finished first.
        loaded.sort_by_key(|(i, _)| *i);
        let loaded = loaded.into_iter().map(|(_, p)| p);
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

    /// Adds a plugin for one assertion type, `alias`: the plugin's type of
    /// that name, else its only type. `Err` names what went wrong.
    pub fn add_as(&mut self, plugin: LoadedPlugin, alias: &str) -> Result<(), String> {
        let ty = match plugin.types.iter().position(|t| t.name == alias) {
            Some(i) => i,
            None if plugin.types.len() == 1 => 0,
            None => {
                let names: Vec<String> = plugin
                    .types
                    .iter()
                    .map(|t| format!("`{}`", t.name))
                    .collect();
                return Err(format!(
                    "plugin `{}` provides the types {}, none named `{alias}`",
                    plugin.label,
                    names.join(", ")
                ));
            }
        };
        if let Some((other, _)) = self.types.get(alias) {
            return Err(DuplicateType {
                type_name: alias.to_owned(),
                first: self.plugins[*other].label.clone(),
                second: plugin.label.clone(),
            }
            .to_string());
        }
        self.types
            .insert(alias.to_owned(), (self.plugins.len(), ty));
        self.plugins.push(Arc::new(plugin));
        Ok(())
    }

    /// Makes `alias` another name of the registered type `existing` (a
    /// custom assertion type graded by the code-grader plugin). False when
    /// `existing` is unknown or `alias` is taken.
    pub fn alias(&mut self, alias: &str, existing: &str) -> bool {
        match (
            self.types.get(existing).copied(),
            self.types.contains_key(alias),
        ) {
            (Some(at), false) => {
                self.types.insert(alias.to_owned(), at);
                true
            }
            _ => false,
        }
    }

    /// The plugin and type info for a kebab-case type name.
    pub fn resolve(&self, type_name: &str) -> Option<(&Arc<LoadedPlugin>, &TypeInfo)> {
        let (p, t) = self.types.get(type_name)?;
        let plugin = &self.plugins[*p];
        Some((plugin, &plugin.types[*t]))
    }

    /// Registers a plugin named by an assertion's `wasm:`.
    pub fn add_for_path(&mut self, path: std::path::PathBuf, plugin: LoadedPlugin) {
        self.by_path.insert(path, Arc::new(plugin));
    }

    /// The plugin named by `path`, if loaded.
    pub fn for_path(&self, path: &std::path::Path) -> Option<&Arc<LoadedPlugin>> {
        self.by_path.get(path)
    }

    /// The plugin and type of an assertion: its `wasm:` plugin (the type of
    /// that name, else its only type), else the type's registered plugin.
    pub fn resolve_for(
        &self,
        assertion: &crate::suite::Assertion,
    ) -> Option<(&Arc<LoadedPlugin>, &TypeInfo)> {
        match assertion.wasm.as_deref() {
            Some((path, _)) => {
                let plugin = self.by_path.get(path)?;
                let ty = plugin
                    .types
                    .iter()
                    .find(|t| *t.name == *assertion.kind)
                    .or_else(|| (plugin.types.len() == 1).then(|| &plugin.types[0]))?;
                Some((plugin, ty))
            }
            None => match &assertion.plugin_type {
                Some(t) => self.resolve(t),
                // A dialect's own types are reached only through its
                // reader (`plugin_type`), never by name in a suite.
                None if is_dialect_type(&assertion.kind) => None,
                None => self.resolve(&assertion.kind),
            },
        }
    }

    /// Every type name a suite may write, sorted (a dialect's own types,
    /// `promptfoo-*`, are left out: its reader names them).
    pub fn type_names(&self) -> impl Iterator<Item = &str> {
        self.types
            .keys()
            .map(String::as_str)
            .filter(|t| !is_dialect_type(t))
    }

    /// Every loaded plugin.
    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }
}

/// A type only a dialect's reader names (`promptfoo-contains` grades
/// promptfoo's `contains`).
pub fn is_dialect_type(name: &str) -> bool {
    name.starts_with("promptfoo-")
}
