//! nvFatbin's result codes: their names from `nvFatbin.h`, their messages from
//! `nvFatbinGetErrorString`, and the errors built from them.

use nvfatbin_sys::nvFatbinResult;

use super::Error;
use crate::ffi::static_str;

/// The name of an nvFatbin result code, as `nvFatbin.h` gives it (both majors' headers list
/// the same codes).
pub(super) fn nvfatbin_name(code: nvFatbinResult) -> &'static str {
    match code.0 {
        0 => "NVFATBIN_SUCCESS",
        1 => "NVFATBIN_ERROR_INTERNAL",
        2 => "NVFATBIN_ERROR_ELF_ARCH_MISMATCH",
        3 => "NVFATBIN_ERROR_ELF_SIZE_MISMATCH",
        4 => "NVFATBIN_ERROR_MISSING_PTX_VERSION",
        5 => "NVFATBIN_ERROR_NULL_POINTER",
        6 => "NVFATBIN_ERROR_COMPRESSION_FAILED",
        7 => "NVFATBIN_ERROR_COMPRESSED_SIZE_EXCEEDED",
        8 => "NVFATBIN_ERROR_UNRECOGNIZED_OPTION",
        9 => "NVFATBIN_ERROR_INVALID_ARCH",
        10 => "NVFATBIN_ERROR_INVALID_NVVM",
        11 => "NVFATBIN_ERROR_EMPTY_INPUT",
        12 => "NVFATBIN_ERROR_MISSING_PTX_ARCH",
        13 => "NVFATBIN_ERROR_PTX_ARCH_MISMATCH",
        14 => "NVFATBIN_ERROR_MISSING_FATBIN",
        15 => "NVFATBIN_ERROR_INVALID_INDEX",
        16 => "NVFATBIN_ERROR_IDENTIFIER_REUSE",
        17 => "NVFATBIN_ERROR_INTERNAL_PTX_OPTION",
        _ => "an unknown nvFatbin result code",
    }
}

impl Error {
    /// Builds [`Error::NvFatbin`]: the code's name from the header, its message from
    /// `nvFatbinGetErrorString` (when nvFatbin loads).
    #[cfg_attr(docsrs, doc(cfg(feature = "fatbin")))]
    #[cold]
    #[inline(never)]
    pub fn nvfatbin(api: &'static str, code: nvFatbinResult) -> Self {
        let message = nvfatbin_sys::nvfatbin()
            .ok()
            // SAFETY: nvFatbinGetErrorString accepts any code and returns a static string (or
            // null, for success).
            .and_then(|nvfatbin| unsafe { nvfatbin.nvFatbinGetErrorString(code) }.ok())
            // SAFETY: a non-null answer is static and NUL-terminated; null gives `None`.
            .and_then(|text| unsafe { static_str(text) });
        Self::NvFatbin {
            api,
            code,
            message: message.unwrap_or("no message from nvFatbin"),
            detail: None,
        }
    }

    /// This error with `detail` saying what its nvFatbin call was doing; other errors are
    /// returned as they are.
    pub(crate) fn with_fatbin_detail(self, detail: impl FnOnce() -> String) -> Self {
        match self {
            Self::NvFatbin {
                api, code, message, ..
            } => Self::NvFatbin {
                api,
                code,
                message,
                detail: Some(detail().into_boxed_str()),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fatbin_errors_name_the_code_and_what_the_call_was_doing() {
        let error = Error::nvfatbin(
            "nvFatbinAddCubin",
            nvFatbinResult::NVFATBIN_ERROR_ELF_ARCH_MISMATCH,
        )
        .with_fatbin_detail(|| "adding the CUBIN \"k.cubin\" for sm_80".to_owned());
        let text = error.to_string();
        assert!(
            text.starts_with("nvFatbinAddCubin failed: NVFATBIN_ERROR_ELF_ARCH_MISMATCH ("),
            "{text}"
        );
        assert!(
            text.ends_with("), adding the CUBIN \"k.cubin\" for sm_80"),
            "{text}"
        );
        let unknown = Error::nvfatbin("nvFatbinGet", nvFatbinResult(77));
        assert!(unknown.to_string().contains("unknown"), "{unknown}");
        assert!(matches!(
            unknown,
            Error::NvFatbin {
                code: nvFatbinResult(77),
                detail: None,
                ..
            }
        ));
        for code in 0..18 {
            assert!(nvfatbin_name(nvFatbinResult(code)).starts_with("NVFATBIN_"));
        }
        // Another error keeps what it says.
        let other = Error::invalid_argument("x").with_fatbin_detail(|| "y".to_owned());
        assert_eq!(other.to_string(), "invalid argument: x");
    }
}
