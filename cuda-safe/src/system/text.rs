//! NVML's string protocol: a caller's buffer and its length, filled by the call.

use std::ffi::{c_char, c_uint};

use crate::error::Result;
use crate::ffi::from_c_chars;

/// Calls `fill` (one NVML call, through `nvml!`) with an `N`-byte buffer and its length, and
/// returns the string it wrote.
pub(super) fn read_string<const N: usize>(
    fill: impl FnOnce(*mut c_char, c_uint) -> Result<()>,
) -> Result<String> {
    let mut buffer: [c_char; N] = [0; N];
    let length = c_uint::try_from(N).unwrap_or(c_uint::MAX);
    fill(buffer.as_mut_ptr(), length)?;
    Ok(from_c_chars(&buffer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::check_nvml;
    use nvml_sys::nvmlReturn_t;

    #[test]
    fn read_string_passes_the_buffer_and_maps_failure() {
        let text = read_string::<16>(|buffer, length| {
            assert_eq!(length, 16);
            for (i, &b) in b"GPU\0".iter().enumerate() {
                // SAFETY: the buffer holds 16 chars; i < 4.
                unsafe { *buffer.add(i) = b as c_char };
            }
            Ok(())
        });
        assert_eq!(text.unwrap(), "GPU");

        let error = read_string::<8>(|_, _| {
            check_nvml(
                "nvmlDeviceGetSerial",
                Ok(nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED),
            )
        })
        .unwrap_err();
        assert!(error.is_not_supported(), "{error:?}");
        assert!(error.to_string().starts_with("nvmlDeviceGetSerial failed"));
    }
}
