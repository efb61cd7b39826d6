//! Reading a suite into the canonical [`Suite`], whatever its dialect.
//! Today one dialect: AgentV 4.42 ([`crate::agentv4`]); AgentV 5 and
//! promptfoo readers plug in at [`crate::dialect::Dialect`].

use std::path::Path;

use crate::diag::Diagnostics;
use crate::dialect::{Dialect, ReadOptions};
use crate::env::Env;
use crate::model::Suite;
use crate::roots::Roots;

pub use crate::agentv4::{content_text, kind, merge_metadata, parse_yaml};
pub use crate::vars::substitute_vars;

pub use crate::limits::{
    MAX_FILE_BYTES, MAX_INCLUDE_DEPTH, MAX_INPUT_FILE_BYTES, host_assertion_keys,
};

/// Reads and checks the eval file at `path`. Returns the suite as far as it
/// could be read (check the diagnostics for errors before running it), and
/// every diagnostic.
pub fn load(path: &Path) -> (Option<Suite>, Diagnostics) {
    let roots = Roots::for_eval(path);
    let env = Env::load(&roots.eval_dir, &roots.project_root, &roots.cwd);
    load_with(path, roots, env, false)
}

/// [`load`] for an untrusted suite (`--sandbox strict`): `${{ VAR }}` sees
/// only the suite's `.env` files, never the process environment.
pub fn load_untrusted(path: &Path) -> (Option<Suite>, Diagnostics) {
    let roots = Roots::for_eval(path);
    let env = Env::load_files_only(&roots.eval_dir, &roots.project_root, &roots.cwd);
    load_with(path, roots, env, true)
}

/// [`load`] (or [`load_untrusted`]) in the dialect `forced`, when given.
pub fn load_as(
    path: &Path,
    untrusted: bool,
    forced: Option<Dialect>,
) -> (Option<Suite>, Diagnostics) {
    load_as_with(path, untrusted, forced, None)
}

/// [`load_as`], with `code` running what the suite computes while it is
/// read (in the host's sandbox).
pub fn load_as_with(
    path: &Path,
    untrusted: bool,
    forced: Option<Dialect>,
    code: Option<crate::code::Runner>,
) -> (Option<Suite>, Diagnostics) {
    let mut roots = Roots::for_eval(path);
    // Outside `--sandbox strict`, a suite reads files outside its project
    // root too (never a secret).
    roots.confined = untrusted;
    let env = if untrusted {
        Env::load_files_only(&roots.eval_dir, &roots.project_root, &roots.cwd)
    } else {
        Env::load(&roots.eval_dir, &roots.project_root, &roots.cwd)
    };
    load_dialect(
        path,
        ReadOptions {
            roots,
            env,
            untrusted,
            code,
        },
        forced,
    )
}

/// [`load`] with explicit roots and environment; `untrusted` as
/// [`load_untrusted`]. The dialect is chosen by [`Dialect::of`], and its
/// reader produces the suite.
pub fn load_with(
    path: &Path,
    roots: Roots,
    env: Env,
    untrusted: bool,
) -> (Option<Suite>, Diagnostics) {
    let options = ReadOptions {
        roots,
        env,
        untrusted,
        code: None,
    };
    load_dialect(path, options, None)
}

/// [`load_with`] in the dialect `forced` (`--dialect`), else the one
/// [`Dialect::of`] tells.
pub fn load_dialect(
    path: &Path,
    options: ReadOptions,
    forced: Option<Dialect>,
) -> (Option<Suite>, Diagnostics) {
    let dialect = match forced {
        Some(d) => Ok(d),
        None => Dialect::of(path),
    };
    let chosen = dialect.as_ref().ok().copied();
    let (mut suite, mut diags) = match dialect {
        Ok(Dialect::AgentV4) => crate::agentv4::read(path, options),
        Ok(Dialect::Promptfoo) => crate::promptfoo::read(path, options),
        Ok(Dialect::AgentV5) => crate::agentv5::read(path, options),
        Err(diagnostic) => (None, Diagnostics(vec![*diagnostic])),
    };
    Dialect::forget_parse();
    if let Some(suite) = &mut suite {
        suite.dialect = chosen.unwrap_or(Dialect::AgentV4);
        suite.tests.shrink_to_fit();
    }
    diags.dedup();
    (suite, diags)
}
