//! [`CompiledProgram`]: what a successful compile gives back.

use crate::code::{CodeKind, CompiledCode};
use crate::error::Result;
use crate::module::ObjectCode;

/// The result of a successful compile: the [`CompiledCode`] (as a cache stores it and a load
/// takes it), the compiler's log and the exact flags used. It loads in one step:
/// [`load`](Self::load).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledProgram {
    code: CompiledCode,
    log: String,
    options: Vec<String>,
}

impl CompiledProgram {
    /// A compile's result from its parts.
    pub(super) fn new(code: CompiledCode, log: String, options: Vec<String>) -> Self {
        Self { code, log, options }
    }

    /// The compiled code: bytes, kind and name map.
    pub fn code(&self) -> &CompiledCode {
        &self.code
    }

    /// The compiled code, taken out.
    pub fn into_code(self) -> CompiledCode {
        self.code
    }

    /// The bytes, exactly as NVRTC returned them (PTX keeps its terminating NUL).
    pub fn bytes(&self) -> &[u8] {
        self.code.bytes()
    }

    /// What [`CompiledProgram::bytes`] are.
    pub fn kind(&self) -> CodeKind {
        self.code.kind()
    }

    /// The lowered (mangled) name NVRTC gave `name_expression`, if it was added with
    /// [`Program::add_name_expression`](super::Program::add_name_expression).
    #[doc(alias = "nvrtcGetLoweredName")]
    pub fn lowered_name(&self, name_expression: &str) -> Option<&str> {
        self.code.lowered_name(name_expression)
    }

    /// NVRTC's log: warnings, or empty. Empty as well when the program came from a cache.
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The flags the program was compiled with, in order.
    pub fn options(&self) -> &[String] {
        &self.options
    }

    /// Loads the code ([`ObjectCode::from_compiled`]), keeping its name map.
    ///
    /// # Errors
    ///
    /// As [`ObjectCode::from_compiled`].
    #[doc(alias = "cuLibraryLoadData")]
    pub fn load(&self) -> Result<ObjectCode> {
        ObjectCode::from_compiled(&self.code)
    }
}
