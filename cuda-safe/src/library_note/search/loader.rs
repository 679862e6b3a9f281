//! The dynamic loader's own records, on 64-bit Linux with glibc: the objects loaded
//! (`dl_iterate_phdr`), the file a symbol lives in (`dladdr`) and the device and inode mapped
//! there (`/proc/self/maps`).

use std::ffi::{CStr, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use cuda_sys::LibrarySpec;

/// `DT_NULL`, `DT_RPATH` and `DT_RUNPATH` of the ELF specification.
const DT_NULL: i64 = 0;
const DT_RPATH: i64 = 15;
const DT_RUNPATH: i64 = 29;
/// More dynamic entries than any object has: a walk stops there.
const MAX_DYNAMIC_ENTRIES: usize = 4096;

/// What a walk of the loaded objects is looking for and has found.
struct Walk<'a> {
    /// The start of each candidate's file name up to `.so` (`libnvrtc.so`).
    stems: &'a [Vec<u8>],
    /// An address inside this crate's code, to find the object that holds it.
    own_code: usize,
    /// Objects seen so far (the first is the executable).
    seen: usize,
    /// A reason the loader's search does not decide alone.
    unclean: bool,
}

/// Whether the loader's search alone decides which file opens for `spec` in this process:
/// not set-user-id, no run paths in the executable or the object holding this code, and no
/// library of the spec loaded yet.
pub(super) fn clean(spec: &LibrarySpec) -> bool {
    // SAFETY: `getauxval` reads the process's auxiliary vector; it has no preconditions.
    if unsafe { libc::getauxval(libc::AT_SECURE) } != 0 {
        return false;
    }
    let stems: Vec<Vec<u8>> = spec
        .file_names
        .iter()
        .map(|name| match name.find(".so") {
            Some(at) => name.as_bytes()[..at + 3].to_vec(),
            None => name.as_bytes().to_vec(),
        })
        .collect();
    let mut walk = Walk {
        stems: &stems,
        own_code: clean as fn(&LibrarySpec) -> bool as usize,
        seen: 0,
        unclean: false,
    };
    // SAFETY: the callback matches the signature `dl_iterate_phdr` calls, and `data` points
    // to `walk`, alive and not otherwise used until the call returns.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut walk).cast::<c_void>()) };
    walk.seen > 0 && !walk.unclean
}

/// One loaded object: a spec's library (by file name) makes the walk unclean, and so do run
/// paths in the executable (the first object) or in the object holding this code.
unsafe extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `dl_iterate_phdr` passes the `data` given to it (a live `Walk`) and a valid
    // `info` for the duration of the call.
    let (walk, info) = unsafe { (&mut *data.cast::<Walk<'_>>(), &*info) };
    let first = walk.seen == 0;
    walk.seen += 1;
    if !info.dlpi_name.is_null() {
        // SAFETY: a non-null `dlpi_name` is the object's NUL-terminated path.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
        let file = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
        if walk.stems.iter().any(|stem| file.starts_with(stem)) {
            walk.unclean = true;
        }
    }
    // SAFETY: `dlpi_phdr` points to the object's `dlpi_phnum` program headers, mapped.
    let headers =
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    let holds_own_code = headers.iter().any(|header| {
        let start = (info.dlpi_addr as usize).wrapping_add(header.p_vaddr as usize);
        header.p_type == libc::PT_LOAD
            && (start..start.wrapping_add(header.p_memsz as usize)).contains(&walk.own_code)
    });
    if first || holds_own_code {
        for header in headers.iter().filter(|h| h.p_type == libc::PT_DYNAMIC) {
            let dynamic = (info.dlpi_addr as usize).wrapping_add(header.p_vaddr as usize);
            // SAFETY: the loader mapped the object's dynamic section at this address (it
            // relocated the object from it), an array of (tag, value) pairs ending in DT_NULL,
            // no longer than the segment.
            if unsafe { has_run_path(dynamic as *const [i64; 2], header.p_memsz as usize) } {
                walk.unclean = true;
            }
        }
    }
    0
}

/// Whether the dynamic section at `dynamic` (`bytes` long) has `DT_RPATH` or `DT_RUNPATH`.
///
/// # Safety
///
/// `dynamic` is a mapped dynamic section of at least `bytes` bytes.
unsafe fn has_run_path(dynamic: *const [i64; 2], bytes: usize) -> bool {
    let count = (bytes / size_of::<[i64; 2]>()).min(MAX_DYNAMIC_ENTRIES);
    for index in 0..count {
        // SAFETY: within the section, as the caller promises.
        let [tag, _] = unsafe { dynamic.add(index).read_unaligned() };
        match tag {
            DT_NULL => return false,
            DT_RPATH | DT_RUNPATH => return true,
            _ => {}
        }
    }
    false
}

/// The file the symbol at `symbol` was loaded from, as the loader named it, if the file at
/// that path now is the one mapped (same device and inode).
pub(super) fn file_of(symbol: *const c_void) -> Option<PathBuf> {
    // SAFETY: an all-zero `Dl_info` is valid (null pointers); `dladdr` fills it.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid place; `dladdr` only looks `symbol` up.
    if unsafe { libc::dladdr(symbol, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a non-null `dli_fname` is the object's NUL-terminated path, which the loader
    // keeps while the object is loaded (it is: `symbol` is in it).
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    if !path.is_absolute() {
        return None;
    }
    let metadata = std::fs::metadata(&path).ok()?;
    let mapped = mapping_of(symbol as usize)?;
    let device = (libc::major(metadata.dev()), libc::minor(metadata.dev()));
    (mapped == (device, metadata.ino())).then_some(path)
}

/// The device (major, minor) and inode of the file mapped at `address`, from
/// `/proc/self/maps` (`start-end perms offset major:minor inode path`).
fn mapping_of(address: usize) -> Option<((u32, u32), u64)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        if !(start..end).contains(&address) {
            return None;
        }
        let (_perms, _offset) = (fields.next()?, fields.next()?);
        let (major, minor) = fields.next()?.split_once(':')?;
        let device = (
            u32::from_str_radix(major, 16).ok()?,
            u32::from_str_radix(minor, 16).ok()?,
        );
        Some((device, fields.next()?.parse().ok()?))
    })
}
