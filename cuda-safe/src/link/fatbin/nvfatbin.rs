//! Building with nvFatbin: one `nvFatbinHandle` per build, created, fed, read and destroyed
//! inside [`build`].

use std::ffi::{CString, c_char, c_void};

use super::{Entry, EntryKind};
use crate::error::{Error, Result, nvfatbin};
use crate::ffi::to_c_string;
use crate::handle::{Owned, Release};
use nvfatbin_sys::{NvFatbin, nvFatbinHandle};

/// An `nvFatbinHandle`, destroyed exactly once through [`Owned`].
struct Handle {
    raw: nvFatbinHandle,
    library: &'static NvFatbin,
}

impl Release for Handle {
    const WHAT: &'static str = "nvFatbin handle";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the handle came from nvFatbinCreate and is destroyed only here, once.
        unsafe { nvfatbin!(self.library, nvFatbinDestroy(&mut self.raw)) }
    }
}

/// Builds a fatbin of `entries` with `flags`; PTX entries get `ptx_options` and LTO-IR entries
/// `ltoir_options` as their JIT options. A failed call says which entry (or the options) it
/// was given.
pub(super) fn build(
    entries: &[Entry],
    flags: &[String],
    ptx_options: &str,
    ltoir_options: &str,
) -> Result<Vec<u8>> {
    let library = nvfatbin_sys::nvfatbin()?;
    let c_flags = flags
        .iter()
        .map(|flag| to_c_string("fatbin option", flag))
        .collect::<Result<Vec<CString>>>()?;
    let ptx_options = to_c_string("PTX JIT option", ptx_options)?;
    let ltoir_options = to_c_string("LTO-IR JIT option", ltoir_options)?;
    let mut pointers: Vec<*const c_char> = c_flags.iter().map(|flag| flag.as_ptr()).collect();
    let mut raw: nvFatbinHandle = std::ptr::null_mut();
    // SAFETY: `raw` is a valid out-pointer; `pointers` holds `pointers.len()` NUL-terminated
    // options that live until the call returns.
    let created = unsafe {
        nvfatbin!(
            library,
            nvFatbinCreate(&mut raw, pointers.as_mut_ptr(), pointers.len())
        )
    };
    // nvFatbin hands out its handle even when it refuses an option: destroyed either way.
    let handle = (!raw.is_null()).then(|| Owned::new(Handle { raw, library }));
    created.map_err(|error| error.with_fatbin_detail(|| format!("given the options {flags:?}")))?;
    let Some(handle) = handle else {
        return Err(Error::unexpected(
            "nvFatbinCreate",
            "it succeeded without a handle",
        ));
    };
    for entry in entries {
        add(&handle, entry, &ptx_options, &ltoir_options)
            .map_err(|error| error.with_fatbin_detail(|| format!("adding {}", entry.describe())))?;
    }
    let mut size = 0usize;
    // SAFETY: the handle is live; `size` is a valid out-pointer.
    unsafe { nvfatbin!(library, nvFatbinSize(handle.raw, &mut size)) }?;
    let mut bytes = vec![0u8; size];
    // SAFETY: `bytes` holds the `size` bytes nvFatbinSize said the fatbin needs, asked just
    // before on the same handle.
    unsafe {
        nvfatbin!(
            library,
            nvFatbinGet(handle.raw, bytes.as_mut_ptr().cast::<c_void>())
        )
    }?;
    Ok(bytes)
}

/// Adds one entry.
fn add(
    handle: &Handle,
    entry: &Entry,
    ptx_options: &CString,
    ltoir_options: &CString,
) -> Result<()> {
    let (library, raw) = (handle.library, handle.raw);
    let (code, size) = (entry.bytes.as_ptr(), entry.bytes.len());
    let (arch, name) = (entry.arch.as_ptr(), entry.name.as_ptr());
    match entry.kind {
        // SAFETY: the handle is live; the code is `size` bytes (PTX with its NUL terminator
        // counted), the architecture, name and options are NUL-terminated, and all live until
        // the call returns (nvFatbin copies what it keeps).
        EntryKind::Ptx => unsafe {
            nvfatbin!(
                library,
                nvFatbinAddPTX(
                    raw,
                    code.cast::<c_char>(),
                    size,
                    arch,
                    name,
                    ptx_options.as_ptr()
                )
            )
        },
        // SAFETY: as above.
        EntryKind::Cubin => unsafe {
            nvfatbin!(
                library,
                nvFatbinAddCubin(raw, code.cast::<c_void>(), size, arch, name)
            )
        },
        // SAFETY: as above.
        EntryKind::LtoIr => unsafe {
            nvfatbin!(
                library,
                nvFatbinAddLTOIR(
                    raw,
                    code.cast::<c_void>(),
                    size,
                    arch,
                    name,
                    ltoir_options.as_ptr()
                )
            )
        },
        // SAFETY: the handle is live; the object is `size` bytes that live until the call
        // returns.
        EntryKind::Reloc => unsafe {
            nvfatbin!(library, nvFatbinAddReloc(raw, code.cast::<c_void>(), size))
        },
    }
}
