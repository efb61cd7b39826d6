//! Code a suite runs while it is read: promptfoo's `transformVars`, vars
//! computed by a `.js`/`.py` file, prompt functions and `nunjucksFilters`.
//! The reader says what to call ([`CodeCall`]); the host runs it in its
//! sandboxed engines (the JavaScript plugin's Boa, the Python runner's
//! CPython, both WebAssembly components with no files, network,
//! environment or clock) through a [`CodeRunner`]. A reader given no runner
//! refuses such a config at the key, naming what it would have run.

use std::sync::Arc;

use serde_json::Value;

/// The language of a [`CodeCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Run by the JavaScript plugin (Boa).
    JavaScript,
    /// Run by the Python runner (CPython, built with componentize-py).
    Python,
}

/// Where the called function comes from.
#[derive(Debug, Clone)]
pub enum Code {
    /// An inline JavaScript snippet: a function of `params` (`process` is
    /// appended after the arguments when it is the last name), its body the
    /// snippet when it has several lines, else `return <snippet>`.
    Inline {
        /// The snippet.
        text: String,
        /// The function's parameter names.
        params: Vec<String>,
    },
    /// A file's function: `function` when given (a JavaScript module's own
    /// export; for Python required), else the module itself when it is a
    /// function, else its default export.
    File {
        /// `file://…` as written, for messages.
        reference: String,
        /// The file's text, read by the reader (inside the project).
        source: String,
        /// The function to call.
        function: Option<String>,
        /// JavaScript: evaluated as an ES module.
        esm: bool,
        /// Python: the whole file run as a script (`sys.argv[1]` the first
        /// argument as JSON), its printed text the result — promptfoo's
        /// legacy prompt scripts.
        script: bool,
    },
}

/// One call the reader asks the host to make.
#[derive(Debug, Clone)]
pub struct CodeCall {
    /// The engine that runs it.
    pub language: Language,
    /// The function.
    pub code: Code,
    /// Its arguments, as JSON.
    pub args: Vec<Value>,
    /// The argument that is a provider (`{id, label, config}`): in
    /// JavaScript its `id` is a method returning the id, as promptfoo's
    /// provider objects have it.
    pub provider_arg: Option<usize>,
}

/// Runs a suite's code in the host's sandbox.
pub trait CodeRunner: Send + Sync {
    /// The function's result (a promise awaited) as JSON — `undefined` and
    /// `None` as `null` — or why it could not run or threw, in the
    /// engine's words.
    fn call(&self, call: &CodeCall) -> Result<Value, String>;
}

/// A shared [`CodeRunner`] in [`crate::dialect::ReadOptions`].
#[derive(Clone)]
pub struct Runner(pub Arc<dyn CodeRunner>);

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Runner")
    }
}

impl std::ops::Deref for Runner {
    type Target = dyn CodeRunner;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}
