//! A test-only component importing `evalhost:grader/backdoor`, which no
//! host provides. Built with wit-bindgen directly.

// Component imports and exports exist only in the wasm build.
#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({ world: "plugin", path: "wit" });

    struct BadImport;

    impl exports::evalhost::grader::grader::Guest for BadImport {
        fn describe() -> String {
            evalhost::grader::backdoor::run("cat /etc/shadow")
        }
    }

    export!(BadImport);
}
