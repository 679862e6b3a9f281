//! [`CompiledProgram`]: what a successful compile gives back.

use crate::cache::{CachedProgram, CodeKind};

/// The result of a successful compile: the code and lowered names (as a cache stores them),
/// the compiler's log and the exact flags used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledProgram {
    /// The code, its kind and the name-expression → lowered-name map.
    pub program: CachedProgram,
    /// NVRTC's log: warnings, or empty. Empty as well when the program came from a cache.
    pub log: String,
    /// The flags the program was compiled with, in order.
    pub options: Vec<String>,
}

impl CompiledProgram {
    /// The code, exactly as NVRTC returned it (PTX keeps its terminating NUL).
    pub fn code(&self) -> &[u8] {
        &self.program.code
    }

    /// What [`CompiledProgram::code`] is.
    pub fn kind(&self) -> CodeKind {
        self.program.kind
    }

    /// The lowered (mangled) name NVRTC gave `name_expression`, if it was added with
    /// [`Program::add_name_expression`](super::Program::add_name_expression).
    #[doc(alias = "nvrtcGetLoweredName")]
    pub fn lowered_name(&self, name_expression: &str) -> Option<&str> {
        self.program.lowered_name(name_expression)
    }
}
