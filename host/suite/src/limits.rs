//! The limits every reader holds a suite to, and the assertion keys the
//! host reads: a leaf the readers and `load` import (readers never import
//! `load`, which calls them).

use crate::fields;

/// Largest suite, case or template file read (a bigger one is refused).
pub const MAX_FILE_BYTES: u64 = 32 << 20;
/// Largest file attached to an input (`type: file`, `input_files`).
pub const MAX_INPUT_FILE_BYTES: u64 = 16 << 20;
/// Deepest nesting of `include:` templates (AgentV's limit).
pub const MAX_INCLUDE_DEPTH: usize = 3;

/// Keys of an assertion the host reads (the rest is plugin config).
pub fn host_assertion_keys() -> impl Iterator<Item = &'static str> + Clone {
    fields::names(fields::ASSERTION_HOST)
}
