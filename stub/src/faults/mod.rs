//! Fault injection over the stub: every call an operation makes, failed in turn with each code
//! of its library, checked for the error it returns, what it leaks and what it logs. The core's
//! `fault_injection` test and the annex crates' own run their operations through it.
//!
//! `case` runs one case of an operation (the [`Op`]s and their faults), `check` checks a
//! faulted run against the clean one, `matrix` runs an operation's matrix of faults
//! ([`Runner`] reports them), and [`fixtures`] makes what operations work on.

mod case;
mod check;
pub mod fixtures;
mod matrix;

pub use case::*;
pub use check::*;
pub use matrix::*;
