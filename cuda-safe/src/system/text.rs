//! Strings in and out of C: fixed-size `char` buffers to `String`, `&str` to C strings.
//!
//! [`from_c_chars`] and [`to_c_string`] are crate-wide helpers (any C API's `char` buffers and
//! string arguments); [`read_string`] is NVML's buffer-and-length protocol.

use std::ffi::{CString, c_char, c_uint};

use crate::error::check_nvml;
use crate::nvml_sys::{LoadError, nvmlReturn_t};
use crate::{Error, Result};

/// The text of a C `char` buffer up to its first NUL (or all of it when there is none),
/// with any invalid UTF-8 replaced.
pub(crate) fn from_c_chars(chars: &[c_char]) -> String {
    // `c_char` is `i8` or `u8` depending on the target; `as u8` keeps the byte either way.
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Calls `fill` with an `N`-byte buffer and its length, and returns the string it wrote.
pub(crate) fn read_string<const N: usize>(
    api: &'static str,
    fill: impl FnOnce(*mut c_char, c_uint) -> Result<nvmlReturn_t, LoadError>,
) -> Result<String> {
    let mut buffer: [c_char; N] = [0; N];
    let length = c_uint::try_from(N).unwrap_or(c_uint::MAX);
    check_nvml(api, fill(buffer.as_mut_ptr(), length))?;
    Ok(from_c_chars(&buffer))
}

/// `text` as a C string, refused before the call with [`Error::InvalidArgument`] naming `what`
/// when it holds a NUL byte.
pub(crate) fn to_c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text)
        .map_err(|_| Error::invalid_argument(format!("{what} {text:?} contains a NUL byte")))
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
    fn read_string_passes_the_buffer_and_maps_failure() {
        let text = read_string::<16>("nvmlDeviceGetName", |buffer, length| {
            assert_eq!(length, 16);
            for (i, &b) in b"GPU\0".iter().enumerate() {
                // SAFETY: the buffer holds 16 chars; i < 4.
                unsafe { *buffer.add(i) = b as c_char };
            }
            Ok(nvmlReturn_t::NVML_SUCCESS)
        });
        assert_eq!(text.unwrap(), "GPU");

        let error = read_string::<8>("nvmlDeviceGetSerial", |_, _| {
            Ok(nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED)
        })
        .unwrap_err();
        assert!(error.is_not_supported(), "{error:?}");
        assert!(error.to_string().starts_with("nvmlDeviceGetSerial failed"));
    }

    #[test]
    fn nul_bytes_are_refused_before_nvml() {
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
}
