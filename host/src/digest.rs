//! Content digests shared by the stages that key caches and pins by
//! content (plugins, the judge cache, the response cache).

use sha2::{Digest as _, Sha256};

/// sha256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}
