//! nvJitLink: the linked LTO-IR getters (`nvJitLinkGetLinkedLTOIRSize`,
//! `nvJitLinkGetLinkedLTOIR`, nvJitLink 13.3), declared by the CUDA 13 headers and not by the
//! CUDA 12.9 ones the 12 ABI's bindings come from.

use crate::error::Result;
use nvjitlink_sys::{NvJitLink, nvJitLinkHandle};

/// Whether this build's nvJitLink bindings declare the linked LTO-IR getters (the 13 ABI).
pub(crate) const NVJITLINK_HAS_LINKED_LTOIR: bool = nvjitlink_sys::ABI_MAJOR >= 13;

/// The LTO-IR an `-lto` link kept, in nvJitLink's LTO-IR container format.
///
/// The caller checks [`NVJITLINK_HAS_LINKED_LTOIR`] first: under the 12 ABI this is
/// [`Error::Unsupported`](crate::Error::Unsupported).
///
/// # Safety
///
/// `handle` must be a live nvJitLink handle whose link completed.
pub(crate) unsafe fn linked_ltoir(
    library: &'static NvJitLink,
    handle: nvJitLinkHandle,
) -> Result<Vec<u8>> {
    let _ = (library, handle);
    nvjitlink_sys::if_abi12! {
        return Err(crate::error::Error::unsupported(
            "LTO-IR link output (nvJitLinkGetLinkedLTOIR)",
            "this build's CUDA 12 bindings do not declare it: build cuda-safe with the cuda-13 \
             feature",
        ));
    }
    nvjitlink_sys::if_abi13! {
        let mut size = 0usize;
        // SAFETY: the handle is the caller's promise; `size` is a valid out-pointer.
        unsafe {
            crate::error::nvjitlink!(library, nvJitLinkGetLinkedLTOIRSize(handle, &mut size))
        }?;
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` holds the `size` bytes nvJitLink said the LTO-IR needs.
        unsafe {
            crate::error::nvjitlink!(
                library,
                nvJitLinkGetLinkedLTOIR(handle, bytes.as_mut_ptr().cast::<std::ffi::c_void>())
            )
        }?;
        return Ok(bytes);
    }
    #[allow(unreachable_code)]
    Err(crate::error::Error::unexpected(
        "nvjitlink-sys",
        "no ABI selected",
    ))
}
