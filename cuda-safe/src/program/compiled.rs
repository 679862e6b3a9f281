//! [`CompiledProgram`]: what a successful compile or link gives back.

use super::pch::PchStatus;
use crate::code::{CodeKind, CompiledCode};

/// The tool that produced a [`CompiledProgram`] (for a cache hit, the one that would have).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Toolchain {
    /// NVRTC: [`Program::compile`](crate::Program::compile).
    Nvrtc,
    /// nvJitLink: [`Linker::link`](crate::Linker::link) through `libnvJitLink`.
    NvJitLink,
    /// The driver's linker (`cuLink*`): [`Linker::link`](crate::Linker::link) without
    /// nvJitLink.
    DriverLinker,
    /// nvFatbin: `FatbinBuilder::build` (feature `fatbin`) through `libnvfatbin`.
    NvFatbin,
}

/// The result of a successful compile ([`Program::compile`](crate::Program::compile)) or link
/// ([`Linker::link`](crate::Linker::link)): the [`CompiledCode`] (as a cache stores it and a
/// load takes it), the tool's log, the exact flags used, which tool made it and whether it
/// came from a cache. It loads in one step: [`load`](Self::load).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledProgram {
    code: CompiledCode,
    log: String,
    options: Vec<String>,
    toolchain: Toolchain,
    from_cache: bool,
    pch: Option<PchStatus>,
}

impl CompiledProgram {
    /// What `toolchain` made with `options`, logging `log`.
    pub(crate) fn made(
        code: CompiledCode,
        log: String,
        options: Vec<String>,
        toolchain: Toolchain,
    ) -> Self {
        Self {
            code,
            log,
            options,
            toolchain,
            from_cache: false,
            pch: None,
        }
    }

    /// This compile's PCH status (for one that was to create a PCH).
    pub(crate) fn with_pch(mut self, status: Option<PchStatus>) -> Self {
        self.pch = status;
        self
    }

    /// What a cache held for a build by `toolchain` with `options`: no log.
    pub(crate) fn cached(code: CompiledCode, options: Vec<String>, toolchain: Toolchain) -> Self {
        Self {
            code,
            log: String::new(),
            options,
            toolchain,
            from_cache: true,
            pch: None,
        }
    }

    /// The compiled code: bytes, kind and name map.
    pub fn code(&self) -> &CompiledCode {
        &self.code
    }

    /// The compiled code, taken out.
    pub fn into_code(self) -> CompiledCode {
        self.code
    }

    /// The bytes, exactly as the tool returned them (PTX keeps its terminating NUL).
    pub fn bytes(&self) -> &[u8] {
        self.code.bytes()
    }

    /// What [`CompiledProgram::bytes`] are.
    pub fn kind(&self) -> CodeKind {
        self.code.kind()
    }

    /// The lowered (mangled) name NVRTC gave `name_expression`, if it was added with
    /// [`Program::add_name_expression`](crate::Program::add_name_expression) (a link keeps
    /// the names of the compiled inputs it was given).
    #[doc = nvrtc_sys::api_doc!(nvrtcGetLoweredName)]
    #[doc(alias = "nvrtcGetLoweredName")]
    pub fn lowered_name(&self, name_expression: &str) -> Option<&str> {
        self.code.lowered_name(name_expression)
    }

    /// The tool's log: NVRTC's warnings, or the linker's info log (filled with
    /// [`LinkerOptions::verbose`](crate::LinkerOptions::verbose) or `time`); empty when there
    /// was nothing to say and when the code came from a cache.
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The flags of the compile or link, in order.
    pub fn options(&self) -> &[String] {
        &self.options
    }

    /// The tool that made the code (for a cache hit, the one that would have).
    pub fn toolchain(&self) -> Toolchain {
        self.toolchain
    }

    /// Whether the code came from a cache without compiling or linking.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// What became of the precompiled header the compile was to create
    /// ([`Pch::Automatic`](crate::Pch::Automatic) or [`Pch::Create`](crate::Pch::Create)):
    /// `None` for a compile that was to create none, a cache hit and a link.
    #[doc = nvrtc_sys::api_doc!(nvrtcGetPCHCreateStatus)]
    #[doc = nvrtc_sys::api_doc!(nvrtcGetPCHHeapSizeRequired)]
    #[doc(
        alias = "nvrtcGetPCHCreateStatus",
        alias = "nvrtcGetPCHHeapSizeRequired"
    )]
    pub fn pch_status(&self) -> Option<PchStatus> {
        self.pch
    }
}
