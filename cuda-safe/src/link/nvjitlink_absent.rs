//! The nvJitLink backend of a build without the `nvjitlink` feature: no bindings are compiled,
//! and each call refuses as an nvJitLink that is absent would, naming the feature.
//! [`LinkerBackend::Auto`](crate::LinkerBackend::Auto) never picks it.

use super::Linked;
use super::input::LinkInput;
use crate::code::CodeKind;
use crate::error::{Error, Result};

/// The refusal of every nvJitLink call in this build.
fn absent() -> Error {
    Error::unsupported(
        "linking with nvJitLink",
        "this build of cuda-safe lacks its `nvjitlink` feature",
    )
}

/// nvJitLink's version: refused.
pub(super) fn version() -> Result<String> {
    Err(absent())
}

/// A link with nvJitLink: refused.
pub(super) fn link(inputs: &[LinkInput], flags: &[String], target: CodeKind) -> Result<Linked> {
    let _ = (inputs, flags, target);
    Err(absent())
}
