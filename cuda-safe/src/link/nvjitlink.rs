//! Linking with nvJitLink: one `nvJitLinkHandle` per link, created, fed, completed, read (CUBIN,
//! PTX or LTO-IR) and destroyed inside [`link`].

use std::ffi::{CString, c_char, c_void};

use super::input::LinkInput;
use super::{Linked, failure_log};
use crate::abi;
use crate::code::CodeKind;
use crate::error::{Error, Result, nvjitlink};
use crate::ffi::to_c_string;
use crate::handle::{Owned, Release};
use nvjitlink_sys::{NvJitLink, nvJitLinkHandle};

/// The loaded nvJitLink's version, `(major, minor)` (`(13, 0)`), asked of it each time.
///
/// An incremental link ([`LinkerOptions::incremental`](crate::LinkerOptions::incremental))
/// needs 13.2 and LTO-IR output 13.3; `$CUDA_SAFE_LIBNVJITLINK` names a newer library than the
/// toolkit's (a `nvidia-nvjitlink` wheel's `nvidia/cu13/lib/libnvJitLink.so.13`).
///
/// ```no_run
/// let (major, minor) = cuda_safe::nvjitlink_version()?;
/// println!("nvJitLink {major}.{minor}");
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[doc = nvjitlink_sys::api_doc!(nvJitLinkVersion)]
/// # Errors
///
/// [`Error::Load`] when nvJitLink cannot be loaded, or lacks its plain entry points (12.0 to
/// 12.2).
#[doc(alias = "nvJitLinkVersion")]
pub fn nvjitlink_version() -> Result<(u32, u32)> {
    let library = nvjitlink_sys::nvjitlink()?;
    let (mut major, mut minor) = (0u32, 0u32);
    // SAFETY: both are valid places for an unsigned int.
    unsafe { nvjitlink!(library, nvJitLinkVersion(&mut major, &mut minor)) }?;
    Ok((major, minor))
}

/// nvJitLink's version as a cache key spells it (`"13.0"`), or the error loading it.
pub(super) fn version() -> Result<String> {
    let (major, minor) = nvjitlink_version()?;
    Ok(format!("{major}.{minor}"))
}

/// An `nvJitLinkHandle`, destroyed exactly once through [`Owned`].
struct Handle {
    raw: nvJitLinkHandle,
    library: &'static NvJitLink,
}

impl Release for Handle {
    const WHAT: &'static str = "nvJitLink handle";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the handle came from nvJitLinkCreate and is destroyed only here, once.
        unsafe { nvjitlink!(self.library, nvJitLinkDestroy(&mut self.raw)) }
    }
}

/// Links `inputs` to `target` with `flags`; a failure after the handle exists carries the
/// error and info logs and the flags ([`Error::Link`]).
pub(super) fn link(inputs: &[LinkInput], flags: &[String], target: CodeKind) -> Result<Linked> {
    let library = nvjitlink_sys::nvjitlink()?;
    let c_flags = flags
        .iter()
        .map(|flag| to_c_string("link option", flag))
        .collect::<Result<Vec<CString>>>()?;
    let names = inputs
        .iter()
        .map(|input| to_c_string("link input name", input.name()))
        .collect::<Result<Vec<CString>>>()?;
    let mut pointers: Vec<*const c_char> = c_flags.iter().map(|flag| flag.as_ptr()).collect();
    let count = u32::try_from(pointers.len())
        .map_err(|_| Error::invalid_argument("more than u32::MAX link options"))?;
    let mut raw: nvJitLinkHandle = std::ptr::null_mut();
    // SAFETY: `raw` is a valid out-pointer; `pointers` holds `count` NUL-terminated flags that
    // live until the call returns.
    let created = unsafe {
        nvjitlink!(
            library,
            nvJitLinkCreate(&mut raw, count, pointers.as_mut_ptr())
        )
    };
    if let Err(error) = created {
        // An unrecognised option fails here; the handle, if any, holds the log.
        let log = if raw.is_null() {
            failure_log("", "", flags)
        } else {
            let handle = Owned::new(Handle { raw, library });
            logs(&handle, flags)
        };
        return Err(Error::Link {
            source: Box::new(error),
            log: log.into_boxed_str(),
        });
    }
    let handle = Owned::new(Handle { raw, library });
    let outcome = add_and_complete(&handle, inputs, &names).and_then(|()| output(&handle, target));
    match outcome {
        Ok(bytes) => Ok(Linked {
            bytes,
            info_log: read_log(&handle, LogKind::Info).unwrap_or_default(),
        }),
        Err(error) => Err(Error::Link {
            source: Box::new(error),
            log: logs(&handle, flags).into_boxed_str(),
        }),
    }
}

/// Adds every input, then completes the link.
fn add_and_complete(handle: &Handle, inputs: &[LinkInput], names: &[CString]) -> Result<()> {
    for (input, name) in inputs.iter().zip(names) {
        // SAFETY: the handle is live; the bytes and the NUL-terminated name live until the
        // call returns (nvJitLink copies what it keeps).
        unsafe {
            nvjitlink!(
                handle.library,
                nvJitLinkAddData(
                    handle.raw,
                    input.kind().nvjitlink(),
                    input.bytes().as_ptr().cast::<c_void>(),
                    input.bytes().len(),
                    name.as_ptr(),
                )
            )
        }?;
    }
    // SAFETY: the handle is live.
    unsafe { nvjitlink!(handle.library, nvJitLinkComplete(handle.raw)) }
}

/// The linked CUBIN, PTX (with its NUL terminator) or LTO-IR.
fn output(handle: &Handle, target: CodeKind) -> Result<Vec<u8>> {
    let mut size = 0usize;
    let library = handle.library;
    let mut bytes;
    if target == CodeKind::LtoIr {
        // SAFETY: the handle is live and its link completed.
        bytes = unsafe { abi::linked_ltoir(library, handle.raw) }?;
        if bytes.is_empty() {
            return Err(Error::unexpected(
                "nvJitLinkGetLinkedLTOIRSize",
                "a completed -lto link kept no LTO-IR",
            ));
        }
    } else if target == CodeKind::Ptx {
        // SAFETY: the handle is live and completed; `size` is a valid out-pointer.
        unsafe { nvjitlink!(library, nvJitLinkGetLinkedPtxSize(handle.raw, &mut size)) }?;
        bytes = vec![0u8; size];
        // SAFETY: `bytes` holds the `size` bytes the linker said it needs.
        unsafe {
            nvjitlink!(
                library,
                nvJitLinkGetLinkedPtx(handle.raw, bytes.as_mut_ptr().cast::<c_char>())
            )
        }?;
    } else {
        // SAFETY: as above.
        unsafe { nvjitlink!(library, nvJitLinkGetLinkedCubinSize(handle.raw, &mut size)) }?;
        bytes = vec![0u8; size];
        // SAFETY: as above.
        unsafe {
            nvjitlink!(
                library,
                nvJitLinkGetLinkedCubin(handle.raw, bytes.as_mut_ptr().cast::<c_void>())
            )
        }?;
    }
    Ok(bytes)
}

/// Which of the handle's two logs.
#[derive(Clone, Copy)]
enum LogKind {
    Error,
    Info,
}

/// One of the handle's logs, without its NUL terminator (non-UTF-8 bytes replaced).
fn read_log(handle: &Handle, kind: LogKind) -> Result<String> {
    let library = handle.library;
    let mut size = 0usize;
    match kind {
        // SAFETY: the handle is live; `size` is a valid out-pointer.
        LogKind::Error => unsafe {
            nvjitlink!(library, nvJitLinkGetErrorLogSize(handle.raw, &mut size))
        },
        // SAFETY: as above.
        LogKind::Info => unsafe {
            nvjitlink!(library, nvJitLinkGetInfoLogSize(handle.raw, &mut size))
        },
    }?;
    if size == 0 {
        return Ok(String::new());
    }
    let mut text = vec![0u8; size];
    let place = text.as_mut_ptr().cast::<c_char>();
    match kind {
        // SAFETY: `text` holds the `size` bytes the linker said the log needs.
        LogKind::Error => unsafe { nvjitlink!(library, nvJitLinkGetErrorLog(handle.raw, place)) },
        // SAFETY: as above.
        LogKind::Info => unsafe { nvjitlink!(library, nvJitLinkGetInfoLog(handle.raw, place)) },
    }?;
    let end = text
        .iter()
        .position(|&byte| byte == 0)
        .unwrap_or(text.len());
    text.truncate(end);
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// The error log, the info log and the flags, as a failed link reports them.
fn logs(handle: &Handle, flags: &[String]) -> String {
    let unreadable = |error: Error| format!("(the log could not be read: {error})");
    let error_log = read_log(handle, LogKind::Error).unwrap_or_else(unreadable);
    let info_log = read_log(handle, LogKind::Info).unwrap_or_else(unreadable);
    failure_log(&error_log, &info_log, flags)
}
