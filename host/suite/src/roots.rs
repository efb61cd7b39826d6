//! Where a suite may read files from, and how relative paths are found.
//!
//! **The rule:** under `--sandbox strict` a suite reads files only inside
//! its *project root* — the nearest ancestor of the eval file that contains
//! `.git`, or, outside a repository, the eval file's own directory. Every
//! referenced path (test files, `file://` entries, case directories, input
//! files, templates, plugins) is resolved with symlinks followed and
//! refused when it lands outside, so `../../etc/passwd` or a case directory
//! that is a symlink out of the suite is an error, not a read. A trusted
//! suite (no `--sandbox strict`: it may run commands on the host anyway)
//! reads a file outside too (`../prompts/x.txt` of a config outside a git
//! checkout, as promptfoo reads it), [`Roots::confined`] false. The
//! project's secrets are never read, wherever they are; a directory the run
//! creates (a static workspace) stays inside the project in both modes.
//!
//! Relative paths are searched as AgentV does (§1.9): the eval file's
//! directory, then each ancestor up to the project root, then the current
//! directory (when it is inside the project root).

use std::path::{Component, Path, PathBuf};

/// The roots of one suite.
#[derive(Debug, Clone)]
pub struct Roots {
    /// The eval file's directory (absolute).
    pub eval_dir: PathBuf,
    /// The project root (absolute, canonical).
    pub project_root: PathBuf,
    /// The current directory.
    pub cwd: PathBuf,
    /// True when files outside the project root are refused
    /// (`--sandbox strict`); else only secrets are.
    pub confined: bool,
}

/// Why a path could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// Nothing exists at any searched place.
    NotFound {
        /// Every place tried.
        tried: Vec<PathBuf>,
    },
    /// It exists, but outside the project root.
    Outside {
        /// Where it resolved to.
        resolved: PathBuf,
        /// The root it escapes.
        root: PathBuf,
    },
    /// It is one of the project's secrets (see [`is_secret`]): never read
    /// for a suite, as no sandboxed process sees it either.
    Secret {
        /// Where it resolved to.
        resolved: PathBuf,
    },
}

/// Whether `relative` (a path inside a project) names one of the files
/// evalhost keeps from a suite and from every sandboxed process: anything
/// under a `.git` or `.evalhost` directory (git's configuration and
/// credentials, evalhost's targets file and history), a `.env` or `.env.*`
/// file (where the operator keeps keys), `.netrc`, `.git-credentials`.
pub fn is_secret(relative: &Path) -> bool {
    relative.components().any(|c| {
        let name = c.as_os_str().to_string_lossy();
        name.eq_ignore_ascii_case(".git")
            || name == ".evalhost"
            || name == ".env"
            || name.starts_with(".env.")
            || name == ".netrc"
            || name == ".git-credentials"
    })
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound { tried } => {
                write!(f, "not found (tried: ")?;
                for (i, p) in tried.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", p.display())?;
                }
                write!(f, ")")
            }
            Self::Outside { resolved, root } => write!(
                f,
                "it resolves to {}, outside the suite's project root {}",
                resolved.display(),
                root.display()
            ),
            Self::Secret { resolved } => write!(
                f,
                "it is {}, one of the project's secrets (git's files, `.evalhost/`, `.env` files, credentials), which a suite may not read",
                resolved.display()
            ),
        }
    }
}

impl Roots {
    /// Roots for the eval file at `eval`.
    pub fn for_eval(eval: &Path) -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let absolute = if eval.is_absolute() {
            eval.to_path_buf()
        } else {
            cwd.join(eval)
        };
        let eval_dir = absolute
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| cwd.clone());
        let eval_dir = eval_dir.canonicalize().unwrap_or(eval_dir);
        let project_root = eval_dir
            .ancestors()
            .find(|d| d.join(".git").exists())
            .unwrap_or(&eval_dir)
            .to_path_buf();
        Self {
            eval_dir,
            project_root,
            cwd: cwd.canonicalize().unwrap_or(cwd),
            confined: true,
        }
    }

    /// The directories searched for a relative path, nearest first.
    pub fn search_dirs(&self, first: Option<&Path>) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(first) = first {
            dirs.push(first.to_path_buf());
        }
        for dir in self.eval_dir.ancestors() {
            dirs.push(dir.to_path_buf());
            if dir == self.project_root {
                break;
            }
        }
        if self.cwd.starts_with(&self.project_root) {
            dirs.push(self.cwd.clone());
        }
        let mut seen = Vec::new();
        dirs.retain(|d| {
            let new = !seen.contains(d);
            seen.push(d.clone());
            new
        });
        dirs
    }

    /// Finds `value` through the search roots and checks it stays inside
    /// the project root. As AgentV resolves it: an absolute value is tried
    /// as it is, then (leading `/` stripped) under each search root, so
    /// `/plugins/x.md` names `<repo>/plugins/x.md`. An absolute path that
    /// exists outside the project is passed over for the roots, and refused
    /// only when no root has the file either.
    pub fn find(&self, value: &str, first: Option<&Path>) -> Result<PathBuf, PathError> {
        let path = Path::new(value);
        let trimmed = value.trim_start_matches(['/', '\\']);
        let mut candidates: Vec<PathBuf> = Vec::new();
        if path.is_absolute() {
            candidates.push(path.to_path_buf());
        }
        candidates.extend(self.search_dirs(first).into_iter().map(|d| d.join(trimmed)));
        let mut outside = None;
        for candidate in &candidates {
            if candidate.exists() {
                match self.contain(candidate) {
                    Ok(found) => return Ok(found),
                    Err(e @ PathError::Outside { .. })
                        if path.is_absolute() && outside.is_none() =>
                    {
                        outside = Some(e);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Err(outside.unwrap_or(PathError::NotFound { tried: candidates }))
    }

    /// `value` relative to `base` (no search), checked to stay inside the
    /// project root.
    pub fn relative(&self, value: &str, base: &Path) -> Result<PathBuf, PathError> {
        let path = base.join(value);
        if path.exists() {
            self.contain(&path)
        } else {
            // Refuse escapes even for paths that do not exist.
            let absolute = if path.is_absolute() {
                path.clone()
            } else {
                self.cwd.join(&path)
            };
            let lexical = normalize(&absolute);
            if self.confined && !lexical.starts_with(&self.project_root) {
                return Err(PathError::Outside {
                    resolved: lexical,
                    root: self.project_root.clone(),
                });
            }
            Err(PathError::NotFound { tried: vec![path] })
        }
    }

    /// A directory the run may create (a static workspace's `path`):
    /// `value` against `base`, existing or not, refused when it (or its
    /// nearest existing ancestor, links resolved) leaves the project root.
    pub fn relative_dir(&self, value: &str, base: &Path) -> Result<PathBuf, PathError> {
        let path = base.join(value);
        if path.exists() {
            // Confined in every mode: the run creates and writes here.
            let confined = Self {
                confined: true,
                ..self.clone()
            };
            return confined.contain(&path);
        }
        let absolute = if path.is_absolute() {
            path
        } else {
            self.cwd.join(&path)
        };
        let lexical = normalize(&absolute);
        let mut existing = lexical.as_path();
        let mut rest = Vec::new();
        while !existing.exists() {
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_owned());
                    existing = parent;
                }
                _ => break,
            }
        }
        let mut resolved = existing
            .canonicalize()
            .unwrap_or_else(|_| existing.to_path_buf());
        for name in rest.iter().rev() {
            resolved.push(name);
        }
        if resolved.starts_with(&self.project_root) {
            Ok(resolved)
        } else {
            Err(PathError::Outside {
                resolved,
                root: self.project_root.clone(),
            })
        }
    }

    /// The canonical form of an existing `path` evalhost reads for itself
    /// (the targets file beside a suite, in `.evalhost/` or `.agentv/`), if
    /// inside the project root: the project's secrets are not refused.
    pub fn contain_own(&self, path: &Path) -> Result<PathBuf, PathError> {
        match self.contain(path) {
            Err(PathError::Secret { resolved }) => Ok(resolved),
            other => other,
        }
    }

    /// The canonical form of an existing `path`, if inside the project root
    /// and not one of its secrets ([`is_secret`]).
    pub fn contain(&self, path: &Path) -> Result<PathBuf, PathError> {
        let resolved = path.canonicalize().map_err(|_| PathError::NotFound {
            tried: vec![path.to_path_buf()],
        })?;
        match resolved.strip_prefix(&self.project_root) {
            Ok(relative) if is_secret(relative) => Err(PathError::Secret { resolved }),
            Ok(_) => Ok(resolved),
            // A trusted suite's file outside the project: read, unless it
            // is a secret of wherever it is (another checkout's `.git/`,
            // `.env`).
            Err(_) if !self.confined => {
                if is_secret(&resolved) {
                    Err(PathError::Secret { resolved })
                } else {
                    Ok(resolved)
                }
            }
            Err(_) => Err(PathError::Outside {
                resolved,
                root: self.project_root.clone(),
            }),
        }
    }
}

/// Removes `.` and `..` components without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Reads `path` as text if it is a regular file of at most `cap` bytes
/// (not a FIFO, a device or `/dev/zero` behind a link, which would block
/// or never end).
pub fn read_regular_text(path: &Path, cap: u64) -> Result<String, String> {
    use std::io::Read as _;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > cap {
        return Err(format!("larger than {} MiB", cap >> 20));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(|e| e.to_string())?
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(format!("larger than {} MiB", cap >> 20));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_through_ancestors_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("repo/.git")).unwrap();
        std::fs::create_dir_all(root.join("repo/evals/sub")).unwrap();
        std::fs::write(root.join("repo/shared.txt"), "x").unwrap();
        std::fs::write(root.join("outside.txt"), "secret").unwrap();
        let roots = Roots::for_eval(&root.join("repo/evals/sub/EVAL.yaml"));
        assert_eq!(roots.project_root, root.join("repo"));
        assert_eq!(
            roots.find("shared.txt", None).unwrap(),
            root.join("repo/shared.txt")
        );
        assert!(matches!(
            roots.find("../../../outside.txt", None),
            Err(PathError::Outside { .. })
        ));
        assert!(matches!(
            roots.find(root.join("outside.txt").to_str().unwrap(), None),
            Err(PathError::Outside { .. })
        ));
        assert!(matches!(
            roots.find("missing.txt", None),
            Err(PathError::NotFound { .. })
        ));
        // AgentV's `/plugins/...`: a leading `/` is tried under each root.
        assert_eq!(
            roots.find("/shared.txt", None).unwrap(),
            root.join("repo/shared.txt")
        );
        // An absolute path outside with no file of that name in a root:
        // still refused, never read.
        assert!(matches!(
            roots.find("/etc/passwd", None),
            Err(PathError::Outside { .. })
        ));
        assert!(matches!(
            roots.relative("../../../nope", &roots.eval_dir),
            Err(PathError::Outside { .. })
        ));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("outside.txt"), root.join("repo/evals/link.txt"))
                .unwrap();
            assert!(matches!(
                roots.find("link.txt", None),
                Err(PathError::Outside { .. })
            ));
        }
    }

    #[test]
    fn a_missing_path_below_a_relative_base_is_not_found_not_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let roots = Roots {
            eval_dir: root.clone(),
            project_root: root.clone(),
            cwd: root,
            confined: true,
        };
        assert!(matches!(
            roots.relative("missing.yaml", Path::new("")),
            Err(PathError::NotFound { .. })
        ));
        assert!(matches!(
            roots.relative("../missing.yaml", Path::new("")),
            Err(PathError::Outside { .. })
        ));
    }
}
