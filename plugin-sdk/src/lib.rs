//! Write [evalhost] grader plugins in Rust.
//!
//! A plugin is a WebAssembly component that grades one or more assertion
//! types. You implement [`Grader`] and export it with [`export_grader!`];
//! everything else — the WIT bindings, the conversions, the component ABI —
//! stays inside this crate.
//!
//! ```no_run
//! use evalhost_plugin_sdk::{export_grader, json, AssertionType, Check, Config, Grade, GradeError, Grader, Plugin, Request};
//!
//! struct Shouting;
//!
//! impl Grader for Shouting {
//!     fn describe() -> Plugin {
//!         Plugin::new("shouting", "0.1.0").assertion_type(
//!             AssertionType::new("is-shouting", "Output is written in capitals")
//!                 .schema(json!({"type": "object", "properties": {"min_letters": {"type": "integer"}}})),
//!         )
//!     }
//!
//!     fn check_config(_type: &str, config: &Config) -> Result<(), String> {
//!         config.optional_u64("min_letters").map(|_| ())
//!     }
//!
//!     fn grade(request: &Request) -> Result<Grade, GradeError> {
//!         let min = request.config.optional_u64("min_letters")?.unwrap_or(1);
//!         let letters: Vec<char> = request.output.chars().filter(|c| c.is_alphabetic()).collect();
//!         let loud = letters.len() as u64 >= min && letters.iter().all(|c| c.is_uppercase());
//!         Ok(Grade::from_check(Check::new(loud, "Output is in capitals")))
//!     }
//! }
//!
//! export_grader!(Shouting);
//! ```
//!
//! Build it with `cargo build --target wasm32-wasip2 --release` (crate type
//! `cdylib`); the `.wasm` file is the plugin. Because the trait's functions
//! are plain Rust, unit-test them natively with [`Request::new`].
//!
//! [evalhost]: https://example.invalid/evalhost

#![deny(missing_docs)]

mod capability;
mod request;
mod response;
pub mod testing;

pub use capability::{
    Command, Completion, CompletionRequest, Embedding, EmbeddingRequest, ExecError, ExecOutput,
    LlmError, complete, embed, run_command, write_temp_file,
};
pub use request::{Config, Message, Request, TokenUsage, ToolCall, Trace};
pub use response::{AssertionType, Capability, Check, Grade, Plugin};
pub use serde_json::{Value, json};

/// The version of the WIT package (`evalhost:grader`) this SDK targets.
pub const API_VERSION: &str = "0.2.0";

/// A grader plugin. Implement it on a unit struct and pass the struct to
/// [`export_grader!`].
///
/// Only [`describe`](Grader::describe) and [`grade`](Grader::grade) are
/// required.
pub trait Grader {
    /// Describes the plugin: its name, version and the assertion types it
    /// grades. Called once when the host loads the plugin.
    fn describe() -> Plugin;

    /// Checks an assertion's config when the suite is loaded, before anything
    /// runs. Return `Err` with a message for the user; the host adds the file,
    /// test and assertion. The default accepts every config.
    fn check_config(assertion_type: &str, config: &Config) -> Result<(), String> {
        let _ = (assertion_type, config);
        Ok(())
    }

    /// Grades one case for one assertion. `Err` fails the assertion with the
    /// reason; it does not stop the run. A `String` error converts into
    /// [`GradeError::Failed`]; use [`GradeError::Judge`] when an LLM judge
    /// failed.
    fn grade(request: &Request) -> Result<Grade, GradeError>;
}

/// Why a grader could not give a grade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GradeError {
    /// The grader could not grade this case: the assertion fails with this
    /// reason (`plugin_error`).
    Failed(String),
    /// What the grader read to decide could not be used, such as a grader
    /// command's output that is not a verdict (`plugin_bad_output`).
    BadOutput(String),
    /// The LLM judge failed or its reply was unusable.
    Judge(String),
}

impl GradeError {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Self::Failed(m) | Self::BadOutput(m) | Self::Judge(m) => m,
        }
    }
}

impl std::fmt::Display for GradeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl From<String> for GradeError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for GradeError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

/// Exports a [`Grader`] as the plugin's implementation of the
/// `evalhost:grader/grader` interface. Use it once per plugin crate.
#[macro_export]
macro_rules! export_grader {
    ($grader:ty) => {
        #[doc(hidden)]
        #[allow(dead_code)]
        pub struct __EvalhostGraderExport;

        impl $crate::__private::GuestGrader for __EvalhostGraderExport {
            fn describe() -> $crate::__private::WitPluginInfo {
                $crate::__private::describe::<$grader>()
            }
            fn check_config(
                assertion_type: ::std::string::String,
                config_json: ::std::string::String,
            ) -> ::std::result::Result<(), ::std::string::String> {
                $crate::__private::check_config::<$grader>(&assertion_type, &config_json)
            }
            fn grade(
                request: $crate::__private::WitGradeRequest,
            ) -> ::std::result::Result<$crate::__private::WitGradeResult, $crate::__private::WitGradeError> {
                $crate::__private::grade::<$grader>(request)
            }
        }

        // The component exports exist only in the wasm build: native builds
        // (unit tests of a grader) call the trait directly, and their linkers
        // cannot take WIT export names.
        #[cfg(target_arch = "wasm32")]
        $crate::__private::bindings::__export_plugin!(__EvalhostGraderExport with_types_in $crate::__private::bindings);
    };
}

#[doc(hidden)]
pub mod __private {
    //! Plumbing for [`export_grader!`](crate::export_grader). Not part of the
    //! API.

    // Generated code documents itself from the WIT; not every item has docs.
    #[allow(missing_docs)]
    pub mod bindings {
        wit_bindgen::generate!({
            world: "plugin",
            path: "wit",
            pub_export_macro: true,
            export_macro_name: "__export_plugin",
            default_bindings_module: "evalhost_plugin_sdk::__private::bindings",
        });
    }

    pub use bindings::evalhost::grader::types::{
        GradeRequest as WitGradeRequest, GradeResult as WitGradeResult, PluginInfo as WitPluginInfo,
    };
    pub use bindings::exports::evalhost::grader::grader::{
        GradeError as WitGradeError, Guest as GuestGrader,
    };

    use crate::{Config, Grader, Request};

    pub fn describe<G: Grader>() -> WitPluginInfo {
        G::describe().into_wit()
    }

    pub fn check_config<G: Grader>(assertion_type: &str, config_json: &str) -> Result<(), String> {
        let config = Config::from_json(config_json)?;
        G::check_config(assertion_type, &config)
    }

    pub fn grade<G: Grader>(request: WitGradeRequest) -> Result<WitGradeResult, WitGradeError> {
        let request = Request::from_wit(request).map_err(WitGradeError::Failed)?;
        G::grade(&request)
            .map(|grade| grade.into_wit())
            .map_err(|e| match e {
                crate::GradeError::Failed(m) => WitGradeError::Failed(m),
                crate::GradeError::BadOutput(m) => WitGradeError::BadOutput(m),
                crate::GradeError::Judge(m) => WitGradeError::Judge(m),
            })
    }
}
