//! The suite loader on arbitrary bytes, as an `EVAL.yaml` and as a `.jsonl`
//! suite: it must return diagnostics, never panic, hang or read outside the
//! suite's directory.
#![no_main]

use libfuzzer_sys::fuzz_target;

thread_local! {
    static DIR: tempfile::TempDir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("a temporary directory");
}

fuzz_target!(|data: &[u8]| {
    DIR.with(|dir| {
        for name in ["EVAL.yaml", "EVAL.jsonl"] {
            let path = dir.path().join(name);
            std::fs::write(&path, data).expect("writing the input");
            let (_suite, diags) = evalhost_suite::load(&path);
            // Rendering every diagnostic must not panic either.
            for d in &diags.0 {
                let _ = d.to_string();
            }
        }
    });
});
