//! One `nvrtcProgram`: created, compiled, read and destroyed within a single compile.

use std::ffi::{CStr, CString, c_char, c_int};

use super::pch::PchStatus;
use crate::code::CodeKind;
use crate::error::{Error, Result, nvrtc};
use crate::handle::{Owned, Release};
use nvrtc_sys::{Nvrtc, nvrtcProgram, nvrtcResult};

/// An `nvrtcProgram`, held in an [`Owned`] that destroys it, so every path out of a compile
/// frees it.
///
/// The strings it was created from must outlive it (declare them before the guard).
pub(super) struct NvrtcProgram {
    raw: nvrtcProgram,
    nvrtc: &'static Nvrtc,
}

impl NvrtcProgram {
    /// A program for `source`, named `name`, with in-memory `(name, contents)` headers.
    pub(super) fn create(
        nvrtc: &'static Nvrtc,
        source: &CStr,
        name: &CStr,
        headers: &[(CString, CString)],
    ) -> Result<Owned<Self>> {
        let count = c_int_count(headers.len(), "in-memory headers")?;
        let names: Vec<*const c_char> = headers.iter().map(|(name, _)| name.as_ptr()).collect();
        let contents: Vec<*const c_char> = headers
            .iter()
            .map(|(_, contents)| contents.as_ptr())
            .collect();
        let mut raw: nvrtcProgram = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; `source` and `name` are NUL-terminated; `names`
        // and `contents` hold `count` pointers to NUL-terminated strings, all alive for the call.
        unsafe {
            nvrtc!(
                nvrtc,
                nvrtcCreateProgram(
                    &mut raw,
                    source.as_ptr(),
                    name.as_ptr(),
                    count,
                    contents.as_ptr(),
                    names.as_ptr(),
                )
            )
        }?;
        Ok(Owned::new(Self { raw, nvrtc }))
    }

    /// Registers a name expression, to be lowered by the compile.
    pub(super) fn add_name_expression(&self, expression: &CStr) -> Result<()> {
        // SAFETY: the program is live and not yet compiled; the expression is NUL-terminated.
        unsafe {
            nvrtc!(
                self.nvrtc,
                nvrtcAddNameExpression(self.raw, expression.as_ptr())
            )
        }
    }

    /// Compiles with `options`; a compile error is [`Error::Nvrtc`] without the log (the
    /// caller reads it from the program and attaches it).
    pub(super) fn compile(&self, options: &[CString]) -> Result<()> {
        let count = c_int_count(options.len(), "compile options")?;
        let pointers: Vec<*const c_char> = options.iter().map(|option| option.as_ptr()).collect();
        // SAFETY: the program is live; `pointers` holds `count` NUL-terminated strings, alive
        // for the call.
        unsafe {
            nvrtc!(
                self.nvrtc,
                nvrtcCompileProgram(self.raw, count, pointers.as_ptr())
            )
        }
    }

    /// The compile log, without its NUL terminator (non-UTF-8 bytes replaced).
    pub(super) fn log(&self) -> Result<String> {
        let mut size = 0usize;
        // SAFETY: the program is live; `size` is a valid out-pointer.
        unsafe { nvrtc!(self.nvrtc, nvrtcGetProgramLogSize(self.raw, &mut size)) }?;
        if size == 0 {
            return Ok(String::new());
        }
        let mut log = vec![0u8; size];
        // SAFETY: `log` holds the `size` bytes NVRTC asked for, terminator included.
        unsafe {
            nvrtc!(
                self.nvrtc,
                nvrtcGetProgramLog(self.raw, log.as_mut_ptr().cast::<c_char>())
            )
        }?;
        let end = log.iter().position(|&byte| byte == 0).unwrap_or(log.len());
        log.truncate(end);
        Ok(String::from_utf8(log)
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned()))
    }

    /// The compiled code of kind `kind`, exactly as NVRTC returns it (PTX keeps its NUL).
    pub(super) fn code(&self, kind: CodeKind) -> Result<Vec<u8>> {
        let (nvrtc, raw) = (self.nvrtc, self.raw);
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; `size` is a valid out-pointer.
        unsafe {
            match kind {
                CodeKind::Ptx => nvrtc!(nvrtc, nvrtcGetPTXSize(raw, &mut size)),
                CodeKind::Cubin => nvrtc!(nvrtc, nvrtcGetCUBINSize(raw, &mut size)),
                CodeKind::LtoIr => nvrtc!(nvrtc, nvrtcGetLTOIRSize(raw, &mut size)),
                CodeKind::Fatbin => super::arch::nvrtc_output(kind),
            }
        }?;
        let mut code = vec![0u8; size];
        if size == 0 {
            return Ok(code);
        }
        let out = code.as_mut_ptr().cast::<c_char>();
        // SAFETY: `out` points to the `size` bytes NVRTC reported for this output.
        unsafe {
            match kind {
                CodeKind::Ptx => nvrtc!(nvrtc, nvrtcGetPTX(raw, out)),
                CodeKind::Cubin => nvrtc!(nvrtc, nvrtcGetCUBIN(raw, out)),
                CodeKind::LtoIr => nvrtc!(nvrtc, nvrtcGetLTOIR(raw, out)),
                CodeKind::Fatbin => super::arch::nvrtc_output(kind),
            }
        }?;
        Ok(code)
    }

    /// The lowered (mangled) name of a name expression added before the compile.
    pub(super) fn lowered_name(&self, expression: &CStr) -> Result<String> {
        let mut lowered: *const c_char = std::ptr::null();
        // SAFETY: the program is live and compiled; the expression is NUL-terminated;
        // `lowered` is a valid out-pointer.
        unsafe {
            nvrtc!(
                self.nvrtc,
                nvrtcGetLoweredName(self.raw, expression.as_ptr(), &mut lowered)
            )
        }?;
        if lowered.is_null() {
            return Err(Error::unexpected(
                "nvrtcGetLoweredName",
                "success with a null lowered name",
            ));
        }
        // SAFETY: NVRTC set `lowered` to a NUL-terminated string owned by the program, which
        // lives until the program is destroyed; it is copied here, before that.
        let name = unsafe { CStr::from_ptr(lowered) };
        Ok(name.to_string_lossy().into_owned())
    }
}

impl NvrtcProgram {
    /// What became of the PCH this compiled program was to create (`nvrtcGetPCHCreateStatus`,
    /// and for a heap too small `nvrtcGetPCHHeapSizeRequired`).
    pub(super) fn pch_status(&self) -> Result<PchStatus> {
        // SAFETY: the program is live and compiled.
        let error = match unsafe { nvrtc!(self.nvrtc, nvrtcGetPCHCreateStatus(self.raw)) } {
            Ok(()) => return Ok(PchStatus::Created),
            Err(error) => error,
        };
        let Error::Nvrtc { code, .. } = &error else {
            return Err(error);
        };
        Ok(match *code {
            nvrtcResult::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED => PchStatus::NotAttempted,
            nvrtcResult::NVRTC_ERROR_PCH_CREATE => PchStatus::Failed,
            nvrtcResult::NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED => {
                let mut required = 0usize;
                // SAFETY: as above; `required` is a valid place for a size_t.
                unsafe {
                    nvrtc!(
                        self.nvrtc,
                        nvrtcGetPCHHeapSizeRequired(self.raw, &mut required)
                    )
                }?;
                PchStatus::HeapExhausted { required }
            }
            _ => return Err(error),
        })
    }
}

impl Release for NvrtcProgram {
    const WHAT: &'static str = "NVRTC program";

    fn release(&mut self) -> Result<()> {
        // SAFETY: `raw` came from nvrtcCreateProgram; `Owned` releases it once.
        unsafe { nvrtc!(self.nvrtc, nvrtcDestroyProgram(&mut self.raw)) }
    }
}

fn c_int_count(count: usize, what: &str) -> Result<c_int> {
    c_int::try_from(count)
        .map_err(|_| Error::invalid_argument(format!("{count} {what}: more than NVRTC takes")))
}
