//! The results reader on arbitrary bytes: parsing rows, repairing a torn
//! tail, sorting a file in place (what `--resume`, `merge` and `regrade`
//! do with a `results.jsonl` that may be damaged). Must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

thread_local! {
    static DIR: tempfile::TempDir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("a temporary directory");
}

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<evalhost::results::ResultRow>(data);
    DIR.with(|dir| {
        let path = dir.path().join("results.jsonl");
        std::fs::write(&path, data).expect("writing the input");
        let _ = evalhost::results::read_rows(&path);
        let _ = evalhost::results::for_each_row(&path, |row| {
            let _ = serde_json::to_string(&row);
        });
        let _ = evalhost::results::repair_torn_tail(&path);
        if let Ok(mut writer) = evalhost::results::ResultsWriter::create(dir.path()) {
            let _ = writer.sort_in_place();
        }
    });
});
