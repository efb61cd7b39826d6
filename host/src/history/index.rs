//! The results index: `.evalhost/results.db`, an SQLite database (WAL
//! mode, so parallel runs and a viewer share it) with a row per run: what
//! `runs`, `compare --last`, `trend` and the viewer's run list look up. A
//! run's rows stay in its `results.jsonl`, read from there when they are
//! shown (the index held a copy of every row, which doubled the disk a run
//! takes and made recording a large run cost more than running it). Built
//! from the run directories and rebuilt from them at will; a missing or
//! damaged database never costs a run: the run is on disk, and `evalhost
//! runs reindex` puts it back.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::{RunInfo, read_run_info, run_dirs};

/// The schema's version (`PRAGMA user_version`). 2: a run's info counts
/// its tests (`tests`) beside its rows; 3: no copy of the rows.
const SCHEMA_VERSION: i64 = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    dir TEXT NOT NULL,
    info TEXT NOT NULL,
    suite TEXT NOT NULL,
    targets TEXT NOT NULL,
    started_at TEXT NOT NULL,
    status TEXT NOT NULL,
    tags TEXT NOT NULL,
    indexed_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_suite ON runs(suite, started_at);
";

/// Why the index could not be used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// SQLite refused (a damaged file, a full disk, a lock held too long).
    #[error("the results index {path}: {source}")]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// Another process holds the database's lock longer than the wait
    /// (15 s): nothing is wrong with it, and nothing was changed.
    #[error(
        "the results index {path} is busy (another evalhost, or another program, held its lock for 15 s)"
    )]
    Busy {
        /// The database.
        path: PathBuf,
    },
    /// A newer evalhost's index: left as it is.
    #[error(
        "the results index {path} was written by a newer evalhost (schema {version}; this one reads {SCHEMA_VERSION}); it is left as it is"
    )]
    Newer {
        /// The database.
        path: PathBuf,
        /// Its schema version.
        version: i64,
    },
    /// The directory for it could not be made.
    #[error("the results index {path}: {source}")]
    Io {
        /// The database.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}

impl IndexError {
    /// SQLite's error on `path`, told apart: a lock held too long is
    /// [`IndexError::Busy`], never damage.
    fn of(path: &Path, source: rusqlite::Error) -> Self {
        match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                Self::Busy {
                    path: path.to_path_buf(),
                }
            }
            _ => Self::Sqlite {
                path: path.to_path_buf(),
                source,
            },
        }
    }

    /// True when the file itself is damaged (not a database, corrupt, or
    /// holding what evalhost's index never holds): the only case where it
    /// is moved aside and rebuilt.
    pub fn is_damage(&self) -> bool {
        matches!(self, Self::Sqlite { source, .. } if matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
        ))
    }
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this suite.
    pub suite: Option<String>,
    /// Only runs with this target.
    pub target: Option<String>,
    /// Only runs started at or after this (RFC 3339 or a date).
    pub since: Option<String>,
    /// Only runs with this tag.
    pub tag: Option<String>,
    /// At most this many (the newest).
    pub limit: Option<usize>,
}

impl Filter {
    fn keeps(&self, info: &RunInfo) -> bool {
        self.suite.as_ref().is_none_or(|s| &info.suite == s)
            && self
                .target
                .as_ref()
                .is_none_or(|t| info.targets.contains(t))
            && self.tag.as_ref().is_none_or(|t| info.tags.contains(t))
            && self.since.as_ref().is_none_or(|s| {
                // Compared as instants, not as text: "…:35Z" and "…:35.5Z"
                // sort the wrong way round as strings, and a date is its
                // midnight (UTC).
                match (parse_since(s), parse_since(&info.started_at)) {
                    (Ok(since), Ok(started)) => started >= since,
                    _ => info.started_at.as_str() >= s.as_str(),
                }
            })
    }
}

/// A `--since` value (or a run's `started_at`) as an instant: RFC 3339
/// (`2026-11-01T09:00:00Z`, an offset), or a date (`2026-11-01`, its
/// midnight UTC).
pub fn parse_since(s: &str) -> Result<jiff::Timestamp, String> {
    if let Ok(t) = s.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    s.parse::<jiff::civil::Date>()
        .map_err(|e| e.to_string())
        .and_then(|d| {
            d.to_zoned(jiff::tz::TimeZone::UTC)
                .map(|z| z.timestamp())
                .map_err(|e| e.to_string())
        })
        .map_err(|_| {
            format!("`{s}` is not a date (2026-11-01) or an RFC 3339 time (2026-11-01T09:00:00Z)")
        })
}

/// Why `file` is not one the index may open: a link, not a regular file,
/// or a file with other hard links. `None` when it is fine or absent.
fn not_our_file(file: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::symlink_metadata(file).ok()?;
    if meta.file_type().is_symlink() {
        Some(format!("{} is a symbolic link", file.display()))
    } else if !meta.is_file() {
        Some(format!("{} is not a regular file", file.display()))
    } else if meta.nlink() > 1 {
        Some(format!("{} has other hard links", file.display()))
    } else {
        None
    }
}

/// The index of one project.
pub struct Index {
    conn: Connection,
    path: PathBuf,
    /// The project's run directories (`.evalhost/runs`).
    pub runs_dir: PathBuf,
}

impl Index {
    /// The database of `project` (the directory holding `.evalhost/`).
    pub fn path_for(project: &Path) -> PathBuf {
        project.join(".evalhost").join("results.db")
    }

    /// Opens the index of `project`; a missing one is created and filled
    /// from the run directories (so deleting it loses nothing).
    pub fn open(project: &Path) -> Result<Self, IndexError> {
        let (mut index, rebuild) = Self::open_only(project)?;
        if rebuild {
            index.reindex()?;
        }
        Ok(index)
    }

    /// The index of a directory that holds no `.evalhost/`: empty, in
    /// memory. Reading the history creates no state (a later run below
    /// would otherwise record into this directory).
    pub fn empty(project: &Path) -> Result<Self, IndexError> {
        let path = Self::path_for(project);
        let conn = Connection::open_in_memory().map_err(|e| IndexError::of(&path, e))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| IndexError::of(&path, e))?;
        Ok(Self {
            conn,
            path,
            runs_dir: project.join(".evalhost").join("runs"),
        })
    }

    /// Opens (or creates) the database; true when it must be filled from
    /// the run directories (new, or an older evalhost's schema).
    fn open_only(project: &Path) -> Result<(Self, bool), IndexError> {
        let path = Self::path_for(project);
        let fresh = !path.exists();
        let sqlite = |source| IndexError::of(&path, source);
        if let Some(dir) = path.parent() {
            // `.evalhost` itself must not be a link out of the project.
            crate::safe_fs::check_dir(dir, &[project]).map_err(|source| IndexError::Io {
                path: path.clone(),
                source,
            })?;
            std::fs::create_dir_all(dir).map_err(|source| IndexError::Io {
                path: path.clone(),
                source,
            })?;
        }
        // The database and its side files must be regular files of their
        // own, not links (a link checked into a project would make evalhost
        // rewrite another SQLite file) nor hard links; SQLite is also told
        // not to follow a link itself.
        for name in [
            "results.db",
            "results.db-wal",
            "results.db-shm",
            "results.db-journal",
        ] {
            let file = path.with_file_name(name);
            if let Some(why) = not_our_file(&file) {
                return Err(IndexError::Io {
                    path: file,
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!(
                            "{why}; evalhost does not open the results index through it (remove it, then `evalhost runs reindex`)"
                        ),
                    ),
                });
            }
        }
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(sqlite)?;
        // evalhost's schema has tables and indexes only: a trigger or a
        // view in the file (one planted to rewrite what a run records) makes
        // it not ours — moved aside and rebuilt like a damaged one.
        let foreign: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type NOT IN ('table', 'index')",
                [],
                |r| r.get(0),
            )
            .map_err(sqlite)?;
        if foreign > 0 {
            return Err(IndexError::Sqlite {
                path: path.clone(),
                source: rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
                    Some("it holds triggers or views, which evalhost's index never has".into()),
                ),
            });
        }
        conn.busy_timeout(Duration::from_secs(15)).map_err(sqlite)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sqlite)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sqlite)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sqlite)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sqlite)?;
        if version > SCHEMA_VERSION {
            // A newer evalhost's index: neither read nor rewritten (two
            // versions sharing a project would empty it in turns).
            return Err(IndexError::Newer { path, version });
        }
        let mut older = version < SCHEMA_VERSION;
        if older {
            // An older evalhost's index (or a new file): ours, built again
            // from the run directories, which hold everything it did. In
            // one write transaction, the version read again inside it: two
            // runs starting at once on a new index must not both drop the
            // tables (the second dropping what the first had just made and
            // was writing to).
            conn.execute_batch("BEGIN IMMEDIATE").map_err(sqlite)?;
            let migrated = (|| {
                let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
                if version >= SCHEMA_VERSION {
                    return Ok(false);
                }
                conn.execute_batch("DROP TABLE IF EXISTS rows; DROP TABLE IF EXISTS runs;")?;
                conn.execute_batch(SCHEMA)?;
                conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
                Ok(true)
            })();
            match migrated {
                Ok(m) => {
                    conn.execute_batch("COMMIT").map_err(sqlite)?;
                    older = m;
                }
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    return Err(sqlite(e));
                }
            }
        }
        Ok((
            Self {
                conn,
                path,
                runs_dir: project.join(".evalhost").join("runs"),
            },
            fresh || older,
        ))
    }

    /// Opens the index; a damaged file ([`IndexError::is_damage`]) is moved
    /// aside (`results.db.damaged-<time>`), a fresh index built from the run
    /// directories, and the move said in the returned note. A busy index, a
    /// newer evalhost's, or any other failure is returned untouched.
    pub fn open_or_rebuild(project: &Path) -> Result<(Self, Option<String>), IndexError> {
        match Self::open(project) {
            Ok(index) => Ok((index, None)),
            Err(e) if !e.is_damage() => Err(e),
            Err(IndexError::Sqlite { path, source }) => {
                let aside = path.with_file_name(format!(
                    "results.db.damaged-{}",
                    jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S")
                ));
                std::fs::rename(&path, &aside).map_err(|e| IndexError::Io {
                    path: path.clone(),
                    source: e,
                })?;
                for side in ["results.db-wal", "results.db-shm"] {
                    let _ = std::fs::remove_file(path.with_file_name(side));
                }
                let (mut index, _) = Self::open_only(project)?;
                let n = index.reindex()?.indexed;
                Ok((
                    index,
                    Some(format!(
                        "the results index could not be read ({source}); it was moved to {} and rebuilt from {n} run director{}",
                        aside.display(),
                        if n == 1 { "y" } else { "ies" }
                    )),
                ))
            }
            Err(e) => Err(e),
        }
    }

    fn sqlite(&self) -> impl Fn(rusqlite::Error) -> IndexError + '_ {
        |source| IndexError::of(&self.path, source)
    }

    /// Records (or re-records) a run read from its directory.
    pub fn record(&mut self, info: &RunInfo) -> Result<(), IndexError> {
        let path = self.path.clone();
        let sqlite = move |source| IndexError::of(&path, source);
        self.conn
            .execute(
                "INSERT OR REPLACE INTO runs (id, dir, info, suite, targets, started_at, status, tags, indexed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    info.id,
                    info.dir,
                    serde_json::to_string(info).unwrap_or_default(),
                    info.suite,
                    serde_json::to_string(&info.targets).unwrap_or_default(),
                    info.started_at,
                    info.status,
                    serde_json::to_string(&info.tags).unwrap_or_default(),
                    jiff::Timestamp::now().to_string(),
                ],
            )
            .map_err(&sqlite)?;
        Ok(())
    }

    /// Rebuilds the index from the run directories: every directory under
    /// `.evalhost/runs`, and every directory already indexed elsewhere that
    /// still exists; entries whose directory is gone are dropped.
    pub fn reindex(&mut self) -> Result<Reindexed, IndexError> {
        let mut dirs = run_dirs(&self.runs_dir);
        let known: Vec<(String, String)> = {
            let mut stmt = self
                .conn
                .prepare("SELECT id, dir FROM runs")
                .map_err(self.sqlite())?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(self.sqlite())?
                .filter_map(Result::ok)
                .collect()
        };
        for (_, dir) in &known {
            let p = PathBuf::from(dir);
            if p.join("run.json").is_file() && !dirs.contains(&p) {
                dirs.push(p);
            }
        }
        let mut out = Reindexed::default();
        let mut seen: Vec<String> = Vec::new();
        for dir in &dirs {
            match read_run_info(dir, &self.runs_dir) {
                Ok(mut info) => {
                    seen.push(info.id.clone());
                    // A run this machine recorded keeps its seal when the
                    // directory still says the same (id, place, start).
                    if let Ok(Some(before)) = self.find(&info.id) {
                        info.seal = before.seal;
                        if !info.sealed() {
                            info.seal = None;
                        }
                    }
                    self.record(&info)?;
                    out.indexed += 1;
                }
                Err(e) => out.skipped.push(e.to_string()),
            }
        }
        for (id, _) in known {
            if !seen.contains(&id) {
                self.conn
                    .execute("DELETE FROM runs WHERE id = ?1", params![id])
                    .map_err(self.sqlite())?;
                out.dropped += 1;
            }
        }
        Ok(out)
    }

    /// The runs kept by `filter`, newest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunInfo>, IndexError> {
        let mut stmt = self
            .conn
            .prepare("SELECT info FROM runs ORDER BY started_at DESC, id DESC")
            .map_err(self.sqlite())?;
        let infos: Vec<RunInfo> = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(self.sqlite())?
            .filter_map(Result::ok)
            .filter_map(|text| info_from_json(&text))
            .filter(|i| filter.keeps(i))
            .take(filter.limit.unwrap_or(usize::MAX))
            .collect();
        Ok(infos)
    }

    /// One run, by id or by a unique prefix of its id.
    pub fn find(&self, id: &str) -> Result<Option<RunInfo>, IndexError> {
        let exact: Option<String> = self
            .conn
            .query_row("SELECT info FROM runs WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.sqlite())?;
        if let Some(text) = exact {
            return Ok(info_from_json(&text));
        }
        let mut stmt = self
            .conn
            .prepare("SELECT info FROM runs WHERE id LIKE ?1 || '%' ESCAPE '\\'")
            .map_err(self.sqlite())?;
        let escaped = id
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        let found: Vec<String> = stmt
            .query_map(params![escaped], |r| r.get(0))
            .map_err(self.sqlite())?
            .filter_map(Result::ok)
            .collect();
        Ok(match found.as_slice() {
            [one] => info_from_json(one),
            _ => None,
        })
    }

    /// Forgets a run (its directory is the caller's business).
    pub fn remove(&mut self, id: &str) -> Result<bool, IndexError> {
        let n = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", params![id])
            .map_err(self.sqlite())?;
        Ok(n > 0)
    }
}

fn info_from_json(text: &str) -> Option<RunInfo> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let strs = |k: &str| -> Vec<String> {
        v[k].as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let s = |k: &str| v[k].as_str().map(str::to_owned);
    Some(RunInfo {
        id: s("id")?,
        dir: s("dir")?,
        suite: s("suite").unwrap_or_default(),
        eval: s("eval"),
        dialect: s("dialect"),
        targets: strs("targets"),
        started_at: s("started_at").unwrap_or_default(),
        duration_ms: v["duration_ms"].as_u64(),
        status: s("status").unwrap_or_default(),
        git_commit: s("git_commit"),
        git_dirty: v["git_dirty"].as_bool(),
        evalhost_version: s("evalhost_version"),
        plugins: strs("plugins"),
        total: v["total"].as_u64().unwrap_or(0),
        tests: v["tests"].as_u64().unwrap_or(0),
        partial: strs("partial"),
        passed: v["passed"].as_u64().unwrap_or(0),
        failed: v["failed"].as_u64().unwrap_or(0),
        errors: v["errors"].as_u64().unwrap_or(0),
        pass_rate: v["pass_rate"].as_f64(),
        mean_score: v["mean_score"].as_f64(),
        cost_usd: v["cost_usd"].as_f64(),
        tokens_in: v["tokens_in"].as_u64(),
        tokens_out: v["tokens_out"].as_u64(),
        tags: strs("tags"),
        seal: s("seal"),
    })
}

/// What a reindex did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reindexed {
    /// Runs (re)recorded.
    pub indexed: usize,
    /// Entries whose directory is gone.
    pub dropped: usize,
    /// Directories that could not be read, with why.
    pub skipped: Vec<String>,
}

/// Records the run in `run_dir` in `project`'s index at the end of a run.
/// Never fails the run: a problem is returned as a warning to print.
pub fn record_run(project: &Path, run_dir: &Path) -> Option<String> {
    let runs_dir = project.join(".evalhost").join("runs");
    let mut info = match read_run_info(run_dir, &runs_dir) {
        Ok(r) => r,
        Err(e) => return Some(format!("the run was not indexed: {e}")),
    };
    info.seal();
    let result = Index::open_or_rebuild(project).and_then(|(mut index, note)| {
        index.record(&info)?;
        Ok(note)
    });
    match result {
        Ok(note) => note,
        Err(e @ (IndexError::Busy { .. } | IndexError::Newer { .. })) => Some(format!(
            "{e}: this run is not in it yet; it is on disk in {} — `evalhost runs reindex` adds it{}",
            run_dir.display(),
            if matches!(e, IndexError::Newer { .. }) {
                " (with the newer evalhost)"
            } else {
                " once the other process is done"
            }
        )),
        Err(e) => Some(format!(
            "{e}; the run is on disk in {} — `evalhost runs reindex` adds it to the index",
            run_dir.display()
        )),
    }
}
