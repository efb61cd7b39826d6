//! Suites: loading AgentV-style eval files ([`load`]), their positions
//! ([`source_map`]), the resolved model ([`model`]) and the checks that need
//! plugins ([`check`]).

pub mod check;
pub mod env;
pub mod fields;
pub mod load;
pub mod model;
pub mod roots;
pub mod source_map;

pub use check::check_assertions;
pub use load::load;
pub use model::{Assertion, LimitOverrides, Loc, Message, PluginRef, Required, Suite, TestCase};
