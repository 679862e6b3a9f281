//! Strings between Rust and C, for every library the crate calls: fixed-size `char` buffers to
//! `String` (stopping at the first NUL), `&str` to C strings (a NUL inside is the caller's
//! mistake, refused before the call), and the static strings libraries hand out.

use std::ffi::{CStr, CString, c_char};

use crate::error::{Error, Result};

/// The text of a C `char` buffer up to its first NUL (or all of it when there is none), with
/// any invalid UTF-8 replaced.
pub(crate) fn from_c_chars(chars: &[c_char]) -> String {
    // `c_char` is `i8` or `u8` depending on the target; `as u8` keeps the byte either way.
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `text` as a C string, refused before the call with [`Error::InvalidArgument`] naming `what`
/// when it holds a NUL byte.
pub(crate) fn to_c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text)
        .map_err(|_| Error::invalid_argument(format!("{what} {text:?} contains a NUL byte")))
}

/// A `&'static str` view of a library's static C string, or `None` for null or non-UTF-8.
///
/// # Safety
///
/// `text` must be null or point to a NUL-terminated string that is never freed.
pub(crate) unsafe fn static_str(text: *const c_char) -> Option<&'static str> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated and never freed, per the caller.
    unsafe { CStr::from_ptr(text) }.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(bytes: &[u8]) -> Vec<c_char> {
        bytes.iter().map(|&b| b as c_char).collect()
    }

    #[test]
    fn buffers_stop_at_the_first_nul_or_their_end() {
        assert_eq!(from_c_chars(&chars(b"NVIDIA H200\0junk")), "NVIDIA H200");
        assert_eq!(from_c_chars(&chars(b"no terminator")), "no terminator");
        assert_eq!(from_c_chars(&chars(b"\0")), "");
        assert_eq!(from_c_chars(&[]), "");
        assert_eq!(
            from_c_chars(&chars(b"caf\xC3\xA9 \xFF\0")),
            "caf\u{e9} \u{fffd}"
        );
    }

    #[test]
    fn nul_bytes_are_refused_before_the_call() {
        assert_eq!(to_c_string("UUID", "GPU-1").unwrap().as_bytes(), b"GPU-1");
        let error = to_c_string("UUID", "GPU\0-1").unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error:?}");
        assert_eq!(
            error.to_string(),
            "invalid argument: UUID \"GPU\\0-1\" contains a NUL byte"
        );
        let what = String::from("kernel name");
        assert!(to_c_string(&what, "k\0").is_err());
    }

    #[test]
    fn static_strings_are_read_and_null_is_none() {
        // SAFETY: a null pointer is allowed.
        assert_eq!(unsafe { static_str(std::ptr::null()) }, None);
        static TEXT: &[u8] = b"CUDA_ERROR_OUT_OF_MEMORY\0";
        // SAFETY: a NUL-terminated static string.
        let text = unsafe { static_str(TEXT.as_ptr().cast()) };
        assert_eq!(text, Some("CUDA_ERROR_OUT_OF_MEMORY"));
    }
}
