//! The dialect boundary: each suite format has one reader, and every reader
//! produces the one canonical [`crate::model::Suite`]. Nothing downstream
//! asks which dialect a suite was written in; what a dialect means by a
//! shared name (a threshold, a pass rule) is carried in the model.
//!
//! Today one dialect is read, AgentV 4.42 ([`crate::agentv4`]). AgentV 5 and
//! promptfoo configs get a variant here, a reader module beside `agentv4/`,
//! and a rule in [`Dialect::of`] (keys only one dialect has, the file name,
//! promptfoo's `$schema`, or `--dialect` to force one); an ambiguous file is
//! an error naming what pointed each way, never a guess.

use std::path::Path;

use crate::diag::Diagnostic;
use crate::env::Env;
use crate::roots::Roots;

/// A suite format evalhost reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// AgentV 4.42's `EVAL.yaml` (and `.jsonl`) format.
    AgentV4,
}

impl Dialect {
    /// Its name, as printed and recorded.
    pub fn name(self) -> &'static str {
        match self {
            Self::AgentV4 => "agentv4",
        }
    }

    /// The dialect of the suite at `path`.
    pub fn of(_path: &Path) -> Result<Self, Box<Diagnostic>> {
        Ok(Self::AgentV4)
    }
}

/// What every reader is given besides the path.
#[derive(Debug)]
pub struct ReadOptions {
    /// Which files the suite may read.
    pub roots: Roots,
    /// What `${{ VAR }}` sees.
    pub env: Env,
    /// `--sandbox strict`: commands the suite defines are refused where
    /// they are written.
    pub untrusted: bool,
}
