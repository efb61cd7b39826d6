//! A test-only component that exports `evalhost:grader/grader@0.2.0`, a
//! version this host does not implement. Built with wit-bindgen directly,
//! not the SDK, as a plugin written for a future evalhost would be.

// Component exports exist only in the wasm build; native linkers cannot
// take WIT export names (`cargo test --workspace` builds this crate too).
#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({ world: "plugin", path: "wit" });

    struct Future;

    impl exports::evalhost::grader::grader::Guest for Future {
        fn describe() -> String {
            "from the future".into()
        }
    }

    export!(Future);
}
