//! Workspaces as written: template, repos, isolation and hooks (refused
//! under `--sandbox strict`).

use super::*;

impl Loader {
    /// A `workspace` mapping, or a path to a YAML file holding one.
    pub(super) fn workspace(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
    ) -> Option<crate::workspace::Spec> {
        use crate::workspace::{Isolation, Spec};
        // Paths resolve against the eval file's directory (AgentV: even in a
        // case.yaml), or against the workspace file that holds them.
        // Paths resolve against the eval file's directory (AgentV: even in a
        // case.yaml), or against the workspace file that holds them.
        let (map, wdoc, wat) = self.workspace_map(doc, value, at)?;
        let base = if matches!(value, Value::String(_)) {
            wdoc.dir.clone()
        } else {
            self.roots.eval_dir.clone()
        };
        let doc = &wdoc;
        let at = &wat;
        self.check_keys(doc, &map, fields::WORKSPACE, at, "`workspace`");
        let template = match map.get("template") {
            Some(Value::String(t)) => match self.roots.relative(t, &base) {
                Ok(p) if p.is_dir() => Some(p),
                Ok(p) => {
                    self.error(
                        doc,
                        &at.key("template"),
                        format!("workspace template {} is not a directory", p.display()),
                    );
                    None
                }
                Err(err) => {
                    self.path_error(doc, &at.key("template"), t, &err);
                    None
                }
            },
            None | Some(Value::Null) => None,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("template"),
                    format!("`template` must be a path, got {}", kind(other)),
                );
                None
            }
        };
        let isolation = match map.get("isolation").and_then(Value::as_str) {
            None | Some("per_test") => Isolation::PerTest,
            Some("shared") => Isolation::Shared,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("isolation"),
                    format!("`isolation` must be per_test or shared, got {other:?}"),
                );
                Isolation::PerTest
            }
        };
        let repos = self.workspace_repos(doc, at, &map, &base)?;
        let hooks = self.hooks(doc, map.get("hooks"), &at.key("hooks"));
        let static_path = self.workspace_static_path(doc, at, &map, &base, !repos.is_empty());
        let static_place = {
            let loc = doc.loc(&at.key("path"));
            format!(
                "{}{} `{}`",
                loc.file.display(),
                loc.pos.map(|p| format!(":{}", p.line)).unwrap_or_default(),
                loc.key
            )
        };
        let mut isolation = isolation;
        if static_path.is_some() {
            if map.get("isolation").and_then(Value::as_str) == Some("per_test") {
                self.error(doc, &at.key("isolation"), "static workspace mode is incompatible with isolation: per_test")
                    .hint = Some("a static workspace is one directory every case shares: remove `isolation`, or use `mode: temp`".into());
            }
            isolation = Isolation::Shared;
        }
        let preflight = self.workspace_preflight(doc, at, &map);
        // `docker`: the cases run in a container, or not at all (a run
        // checks for docker or podman; `validate` says so).
        let container = map.get("docker").map(|d| {
            let at = at.key("docker");
            self.warning(
                doc,
                &at,
                "`docker` runs the code graders in a container: `evalhost run` needs a working docker or podman for it and refuses the suite otherwise (never on the host)",
            );
            let loc = doc.loc(&at);
            // A value a run could not use is an error at its key, never a
            // default. AgentV 5 writes the limits under `resources`.
            let mut bad = Vec::new();
            let mut limit = |key: &str| match d
                .get(key)
                .map(|v| (v, at.key(key)))
                .or_else(|| {
                    d.get("resources")
                        .and_then(|r| r.get(key))
                        .map(|v| (v, at.key("resources").key(key)))
                }) {
                None => None,
                Some((Value::String(s), _)) => Some(s.clone()),
                Some((Value::Number(n), _)) => Some(n.to_string()),
                Some((other, key_at)) => {
                    bad.push((key_at, format!("`{key}` must be a string or a number, got {}", kind(other))));
                    None
                }
            };
            let memory = limit("memory");
            let cpus = limit("cpus");
            let image = match d.get("image") {
                Some(Value::String(i)) => Some(i.clone()),
                None => None,
                Some(other) => {
                    bad.push((at.key("image"), format!("`image` must be a string, got {}", kind(other))));
                    None
                }
            };
            let timeout_s = match d.get("timeout") {
                None => None,
                Some(v) if v.as_u64().is_some_and(|t| t > 0) => v.as_u64(),
                Some(other) => {
                    bad.push((at.key("timeout"), format!("`timeout` must be a whole number of seconds above 0, got {other}")));
                    None
                }
            };
            for (key_at, message) in bad {
                self.error(doc, &key_at, message);
            }
            crate::workspace::Container {
                image,
                memory,
                cpus,
                timeout_s,
                place: format!(
                    "{}{} `{}`",
                    loc.file.display(),
                    loc.pos.map(|p| format!(":{}", p.line)).unwrap_or_default(),
                    loc.key
                ),
            }
        });
        Some(Spec {
            template,
            repos,
            hooks,
            isolation,
            static_path,
            static_place,
            preflight,
            container,
        })
    }

    /// The workspace's mapping, its document and key path: the one
    /// written in place, or the one a workspace file holds.
    fn workspace_map(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
    ) -> Option<(Map<String, Value>, Arc<Doc>, KeyPath)> {
        let found = match value {
            Value::Object(m) => (m.clone(), doc.clone(), at.clone()),
            Value::String(path) => {
                let file = match self.roots.relative(path, &doc.dir) {
                    Ok(f) => f,
                    Err(err) => {
                        self.path_error(doc, at, path, &err);
                        return None;
                    }
                };
                let (v, wdoc) = self.read_yaml(&file, Some((doc, at)))?;
                match v {
                    Value::Object(m) if m.contains_key("workspace") && m.len() == 1 => {
                        self.error(&wdoc, &KeyPath::default(), "a workspace file holds the workspace itself, without a `workspace:` wrapper");
                        return None;
                    }
                    Value::Object(m) => (m, wdoc, KeyPath::default()),
                    other => {
                        self.error(
                            &wdoc,
                            &KeyPath::default(),
                            format!("a workspace file must be a mapping, got {}", kind(&other)),
                        );
                        return None;
                    }
                }
            }
            Value::Null => return None,
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "`workspace` must be a mapping or a path to a workspace file, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        Some(found)
    }

    /// `repos`: each a path, a source and how to check it out.
    fn workspace_repos(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        map: &Map<String, Value>,
        base: &Path,
    ) -> Option<Vec<crate::workspace::Repo>> {
        use crate::workspace::Repo;
        let mut repos = Vec::new();
        if let Some(list) = map.get("repos") {
            let Value::Array(items) = list else {
                self.error(doc, &at.key("repos"), "`repos` must be a list");
                return None;
            };
            for (i, item) in items.iter().enumerate() {
                let rat = at.key("repos").index(i);
                let Some(r) = item.as_object() else {
                    self.error(
                        doc,
                        &rat,
                        "a repo must be a mapping with `path` and `source`",
                    );
                    continue;
                };
                self.check_keys(doc, r, fields::REPO, &rat, "a repo");
                let path = r
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or(".")
                    .trim_start_matches("./")
                    .to_owned();
                if path.split('/').any(|c| c == "..") || path.starts_with('/') {
                    self.error(
                        doc,
                        &rat.key("path"),
                        "a repo `path` must stay inside the workspace",
                    );
                    continue;
                }
                if path.split('/').any(|c| c.eq_ignore_ascii_case(".git")) {
                    self.error(
                        doc,
                        &rat.key("path"),
                        format!("a repo `path` cannot be or go through a `.git` directory, got {path:?}"),
                    )
                    .hint = Some("files checked out there would become another repository's hooks and config".into());
                    continue;
                }
                let source = r.get("source");
                let (given, url_at) = match (source, r.get("repo")) {
                    (Some(Value::Object(src)), _) => match (
                        src.get("type").and_then(Value::as_str),
                        src.get("url"),
                        src.get("path"),
                    ) {
                        (Some("git") | None, Some(Value::String(u)), _) => {
                            (Some(u), rat.key("source").key("url"))
                        }
                        (Some("local"), _, Some(Value::String(p))) => {
                            (Some(p), rat.key("source").key("path"))
                        }
                        _ => (None, rat.key("source")),
                    },
                    (Some(Value::String(u)), _) => (Some(u), rat.key("source")),
                    (None, Some(Value::String(u))) => (Some(u), rat.key("repo")),
                    _ => (None, rat.clone()),
                };
                let Some(given) = given else {
                    self.error(doc, &rat, "a repo needs `source: {type: git, url: ...}` or `{type: local, path: ...}`");
                    continue;
                };
                let shorthand = r.get("repo").and_then(Value::as_str) == Some(given.as_str())
                    && is_github_shorthand(given);
                let url = if shorthand {
                    // AgentV's GitHub shorthand: `owner/name`.
                    if base.join(given).is_dir() {
                        self.warning(doc, &url_at, format!("`{given}` is read as GitHub's {given} (https://github.com/{given}.git), as AgentV reads it, not as the local directory of that name"))
                            .hint = Some(format!("write `./{given}` for the local directory"));
                    }
                    format!("https://github.com/{}.git", given.trim())
                } else {
                    let Some(url) = self.repo_source(doc, &url_at, given, base) else {
                        continue;
                    };
                    url
                };
                // AgentV's checkout ref: `base_commit`, else `ref` (its
                // older `checkout:` form), else `commit`; `commit` and
                // `base_commit` must agree when both are given.
                let checkout = r.get("checkout");
                let base_commit = checkout
                    .and_then(|c| c.get("base_commit"))
                    .or(r.get("base_commit"))
                    .and_then(Value::as_str);
                let commit = r.get("commit").and_then(Value::as_str);
                if let (Some(b), Some(c)) = (base_commit, commit)
                    && b != c
                {
                    self.error(
                        doc,
                        &rat.key("base_commit"),
                        format!("`commit` ({c}) and `base_commit` ({b}) must be the same commit, as AgentV requires"),
                    );
                    continue;
                }
                let reference = base_commit
                    .or_else(|| checkout.and_then(|c| c.get("ref")).and_then(Value::as_str))
                    .or(commit)
                    .map(str::to_owned);
                let ancestor_at = if checkout.is_some_and(|c| c.get("ancestor").is_some()) {
                    rat.key("checkout").key("ancestor")
                } else {
                    rat.key("ancestor")
                };
                let ancestor = match checkout
                    .and_then(|c| c.get("ancestor"))
                    .or(r.get("ancestor"))
                {
                    None | Some(Value::Null) => 0,
                    Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                        Some(n) => n,
                        None => {
                            self.error(
                                doc,
                                &ancestor_at,
                                format!("`ancestor` must be a whole number of commits back (0 or more), got {}", show(v)),
                            );
                            continue;
                        }
                    },
                };
                if let Some(reference) = reference.as_deref().filter(|r| r.starts_with('-')) {
                    let key = if r.get("checkout").is_some() {
                        rat.key("checkout").key("ref")
                    } else {
                        rat.key("commit")
                    };
                    self.error(
                        doc,
                        &key,
                        format!("a git ref cannot start with `-`, got {reference:?}"),
                    )
                    .hint =
                        Some("git would read it as an option; name a branch, tag or commit".into());
                    continue;
                }
                let depth = r
                    .get("clone")
                    .and_then(|c| c.get("depth"))
                    .and_then(Value::as_u64)
                    .map(|d| d as u32);
                repos.push(Repo {
                    path,
                    url,
                    reference,
                    depth,
                    ancestor,
                });
            }
        }
        Some(repos)
    }

    /// `mode` and `path`: the directory of a static workspace, if any
    /// (`has_repos`: `mode: static` then needs a path).
    fn workspace_static_path(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        map: &Map<String, Value>,
        base: &Path,
        has_repos: bool,
    ) -> Option<PathBuf> {
        let mode = match map.get("mode") {
            None | Some(Value::Null) => None,
            Some(Value::String(m)) if matches!(m.as_str(), "pooled" | "temp" | "static") => {
                Some(m.as_str())
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("mode"),
                    format!(
                        "workspace `mode` must be pooled, temp or static, got {}",
                        show(other)
                    ),
                );
                None
            }
        };
        let path = match map.get("path") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) if !p.trim().is_empty() => {
                match self.roots.relative_dir(p, base) {
                    Ok(dir) if dir.exists() && !dir.is_dir() => {
                        self.error(
                            doc,
                            &at.key("path"),
                            format!("workspace `path` {} is not a directory", dir.display()),
                        );
                        None
                    }
                    Ok(dir) if inside_git_dir(&dir, &self.roots.project_root) => {
                        self.error(
                            doc,
                            &at.key("path"),
                            format!(
                                "workspace `path` {} is inside a `.git` directory",
                                dir.display()
                            ),
                        )
                        .hint = Some(
                            "a static workspace is where the agent writes; inside `.git` (hooks, config) that would run code on your next git command. Name a directory of the working tree".into(),
                        );
                        None
                    }
                    Ok(dir) => Some(dir),
                    Err(err) => {
                        self.path_error(doc, &at.key("path"), p, &err);
                        None
                    }
                }
            }
            Some(other) => {
                self.error(
                    doc,
                    &at.key("path"),
                    format!("workspace `path` must be a directory, got {}", show(other)),
                );
                None
            }
        };
        match (mode, path) {
            (Some("pooled" | "temp"), Some(_)) => {
                self.error(
                    doc,
                    &at.key("path"),
                    "workspace.path requires workspace.mode=static",
                )
                .hint = Some("remove `mode`, or write `mode: static`".into());
                None
            }
            (Some("static") | None, Some(dir)) => Some(dir),
            (Some("static"), None) if has_repos => {
                self.error(
                    doc,
                    &at.key("mode"),
                    "workspace.mode=static requires workspace.path",
                )
                .hint = Some("name the directory to use with `path:`".into());
                None
            }
            // `static` without a path or repos runs as `temp`, as in AgentV.
            _ => None,
        }
    }

    /// `env`: the commands and Python modules the workspace needs.
    fn workspace_preflight(
        &mut self,
        doc: &Arc<Doc>,
        at: &KeyPath,
        map: &Map<String, Value>,
    ) -> Option<crate::workspace::Preflight> {
        match map.get("env") {
            None | Some(Value::Null) => None,
            Some(Value::Object(env)) => {
                for key in env.keys().filter(|k| {
                    !matches!(k.as_str(), "required_commands" | "required_python_modules")
                }) {
                    self.warning(
                        doc,
                        &at.key("env").key(key),
                        format!("unknown key `{key}` in `env`; it is ignored"),
                    )
                    .hint = Some("its keys: required_commands, required_python_modules".into());
                }
                let mut list = |key: &str, valid: fn(&str) -> bool, what: &str| -> Vec<String> {
                    match env.get(key) {
                        None | Some(Value::Null) => Vec::new(),
                        Some(Value::Array(items)) => items
                            .iter()
                            .enumerate()
                            .filter_map(|(i, item)| match item.as_str() {
                                Some(s) if valid(s) => Some(s.to_owned()),
                                _ => {
                                    self.error(
                                        doc,
                                        &at.key("env").key(key).index(i),
                                        format!(
                                            "each of `{key}` must be {what}, got {}",
                                            show(item)
                                        ),
                                    );
                                    None
                                }
                            })
                            .collect(),
                        Some(other) => {
                            self.error(
                                doc,
                                &at.key("env").key(key),
                                format!("`{key}` must be a list, got {}", kind(other)),
                            );
                            Vec::new()
                        }
                    }
                };
                let commands = list(
                    "required_commands",
                    |s| !s.is_empty() && !s.starts_with('-') && !s.contains(char::is_whitespace),
                    "a program name",
                );
                let python_modules = list(
                    "required_python_modules",
                    |s| {
                        !s.is_empty()
                            && s.split('.').all(|p| {
                                p.chars()
                                    .next()
                                    .is_some_and(|c| c.is_alphabetic() || c == '_')
                                    && p.chars().all(|c| c.is_alphanumeric() || c == '_')
                            })
                    },
                    "a module name (`yaml`, `pandas.io`)",
                );
                (!commands.is_empty() || !python_modules.is_empty()).then_some(
                    crate::workspace::Preflight {
                        commands,
                        python_modules,
                    },
                )
            }
            Some(other) => {
                self.error(doc, &at.key("env"), format!("`env` must be a mapping with `required_commands` and `required_python_modules`, got {}", kind(other)));
                None
            }
        }
    }

    /// A `hooks` mapping (a workspace's or a matrix target's): its keys
    /// checked, each hook read; `enabled: false` turns them all off.
    pub(super) fn hooks(
        &mut self,
        doc: &Arc<Doc>,
        value: Option<&Value>,
        at: &KeyPath,
    ) -> crate::workspace::Hooks {
        match value {
            Some(Value::Object(h)) => {
                self.check_keys(doc, h, fields::HOOKS, at, "`hooks`");
                if matches!(h.get("enabled"), Some(Value::Bool(false))) {
                    return crate::workspace::Hooks::default();
                }
                let mut hook =
                    |name: &str| h.get(name).and_then(|v| self.hook(doc, v, &at.key(name)));
                crate::workspace::Hooks {
                    before_all: hook("before_all"),
                    before_each: hook("before_each"),
                    after_each: hook("after_each"),
                    after_all: hook("after_all"),
                }
            }
            None | Some(Value::Null) => crate::workspace::Hooks::default(),
            Some(other) => {
                self.error(
                    doc,
                    at,
                    format!("`hooks` must be a mapping, got {}", kind(other)),
                );
                crate::workspace::Hooks::default()
            }
        }
    }

    pub(super) fn hook(
        &mut self,
        doc: &Arc<Doc>,
        value: &Value,
        at: &KeyPath,
    ) -> Option<crate::workspace::Hook> {
        use crate::workspace::{Hook, Reset};
        if self.untrusted {
            self.error(doc, at, "`--sandbox strict` refuses commands the suite defines: this hook would run on the host")
                .hint = Some("grade an untrusted suite without its hooks, or without --sandbox strict on a machine you can lose".into());
            return None;
        }
        let map = match value {
            Value::Object(m) => m.clone(),
            Value::String(_) | Value::Array(_) => {
                let mut m = Map::new();
                m.insert("command".into(), value.clone());
                m
            }
            other => {
                self.error(
                    doc,
                    at,
                    format!(
                        "a hook must be a mapping with `command`, got {}",
                        kind(other)
                    ),
                );
                return None;
            }
        };
        self.check_keys(doc, &map, fields::HOOK, at, "a hook");
        let command = map.get("command").or(map.get("script"));
        let (argv, shell) = match command {
            Some(Value::String(s)) if !s.trim().is_empty() => {
                // A placeholder where the hook's shell would not expand a
                // reference to its value is refused here, with its key.
                if let Err(e) = crate::shell_template::check(
                    s,
                    "{{",
                    "}}",
                    |n| HOOK_PLACEHOLDERS.contains(&n),
                    |n| format!("EVALHOST_HOOK_{}", n.to_ascii_uppercase()),
                    |_| false,
                ) {
                    let key = if map.contains_key("command") {
                        "command"
                    } else {
                        "script"
                    };
                    self.error(doc, &at.key(key), e);
                }
                (Vec::new(), Some(s.clone()))
            }
            Some(Value::Array(items))
                if !items.is_empty()
                    && items
                        .iter()
                        .all(|i| i.as_str().is_some_and(|s| !s.is_empty())) =>
            {
                (
                    items
                        .iter()
                        .filter_map(|i| i.as_str().map(str::to_owned))
                        .collect(),
                    None,
                )
            }
            None if map.contains_key("reset") => (Vec::new(), None),
            _ => {
                self.error(doc, &at.key("command"), "a hook's `command` must be a non-empty list of arguments or a shell command line");
                return None;
            }
        };
        let reset = match map.get("reset").and_then(Value::as_str) {
            None | Some("none") => Reset::None,
            Some("fast") => Reset::Fast,
            Some("strict") => Reset::Strict,
            Some(other) => {
                self.error(
                    doc,
                    &at.key("reset"),
                    format!("`reset` must be none, fast or strict, got {other:?}"),
                );
                Reset::None
            }
        };
        let timeout = self
            .positive_int(
                doc,
                map.get("timeout_ms").or(map.get("timeoutMs")),
                at,
                "timeout_ms",
            )
            .map(std::time::Duration::from_millis);
        let cwd = map
            .get("cwd")
            .and_then(Value::as_str)
            .map(|c| self.roots.eval_dir.join(c));
        Some(Hook {
            argv,
            shell,
            cwd,
            timeout,
            reset,
        })
    }

    /// A repo's source as git will get it: a remote URL as given; a local
    /// path or `file://` URL only inside the project root (resolved); never
    /// something git would read as an option. `None` when refused (reported).
    pub(super) fn repo_source(
        &mut self,
        doc: &Doc,
        at: &KeyPath,
        given: &str,
        base: &Path,
    ) -> Option<String> {
        if given.starts_with('-') {
            self.error(
                doc,
                at,
                format!("a repo source cannot start with `-`, got {given:?}"),
            )
            .hint = Some("git would read it as an option; give a URL or a path".into());
            return None;
        }
        // `user@host:path` (scp-like) is remote; so is any URL but file://.
        let scp_like = given
            .find(':')
            .is_some_and(|i| i > 1 && !given[..i].contains('/'));
        let local = match given.strip_prefix("file://") {
            Some(path) => path,
            None if given.contains("://") || scp_like => return Some(given.to_owned()),
            None => given,
        };
        match self.roots.relative(local, base) {
            Ok(found) => Some(found.display().to_string()),
            Err(err) => {
                self.path_error(doc, at, given, &err);
                None
            }
        }
    }
}

/// AgentV's GitHub shorthand, `owner/name` (letters, digits, `_`, `.`,
/// `-`; not `.` or `..`).
fn is_github_shorthand(value: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    };
    matches!(value.trim().split_once('/'), Some((owner, name)) if part(owner) && part(name))
}

/// The placeholders of a hook's command.
const HOOK_PLACEHOLDERS: &[&str] = &[
    "workspace_path",
    "test_id",
    "eval_run_id",
    "case_input",
    "case_metadata",
];

/// Whether `dir` is `.git` or inside one, below `root`.
fn inside_git_dir(dir: &std::path::Path, root: &std::path::Path) -> bool {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    rel.components()
        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
}
