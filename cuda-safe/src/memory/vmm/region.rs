//! A reserved address range and the physical chunks mapped into it: the one owner of VMM
//! driver objects, torn down in the driver's order (unmap, then release, then free the
//! range), every step tried, every failure logged once and the first returned.

use crate::error::{Error, Result, cu};
use crate::handle::{Release, log_drop_error};
use crate::stream::Stream;
use cuda_sys::{
    CUdeviceptr, CUmemAccessDesc, CUmemAllocationProp, CUmemGenericAllocationHandle, Driver,
};

/// One physical allocation mapped (or about to be mapped) into a [`Region`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Chunk {
    /// The physical allocation (`cuMemCreate` or an import).
    pub(super) handle: CUmemGenericAllocationHandle,
    /// Where it sits in the region, from the base.
    pub(super) offset: usize,
    /// Its size.
    pub(super) size: usize,
    /// Whether `cuMemMap` succeeded for it (so teardown unmaps it).
    mapped: bool,
    /// Whether this region releases the handle (not while another region owns it during a
    /// move).
    owned: bool,
}

/// A reserved address range with physical chunks mapped at increasing offsets from its
/// base, contiguous from offset 0.
pub(super) struct Region {
    driver: &'static Driver,
    base: CUdeviceptr,
    reserved: usize,
    chunks: Vec<Chunk>,
    /// The stream whose queued work may use the memory: drained before the teardown (which
    /// is skipped, leaking the range, when the drain fails).
    stream: Option<Stream>,
}

// SAFETY: the region's handles are plain numbers that any thread may use; the driver's VMM
// calls are thread-safe, and `&mut` guards every change.
unsafe impl Send for Region {}
// SAFETY: `&Region` only reads.
unsafe impl Sync for Region {}

impl Region {
    /// Reserves `size` bytes of address space (`cuMemAddressReserve`).
    pub(super) fn reserve(
        driver: &'static Driver,
        size: usize,
        align: usize,
        hint: CUdeviceptr,
    ) -> Result<Self> {
        let mut base: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; size and alignment were checked by the caller (multiples
        // of the granularity, a power of two or 0); flags must be 0.
        unsafe { cu!(driver, cuMemAddressReserve(&mut base, size, align, hint, 0)) }?;
        Ok(Self {
            driver,
            base,
            reserved: size,
            chunks: Vec::new(),
            stream: None,
        })
    }

    /// Sets the stream drained before the teardown.
    pub(super) fn set_stream(&mut self, stream: Option<Stream>) {
        self.stream = stream;
    }

    /// The base address.
    pub(super) fn base(&self) -> CUdeviceptr {
        self.base
    }

    /// The reserved size.
    pub(super) fn reserved(&self) -> usize {
        self.reserved
    }

    /// The bytes mapped from the base.
    pub(super) fn mapped(&self) -> usize {
        self.chunks
            .last()
            .map_or(0, |chunk| chunk.offset + chunk.size)
    }

    /// The chunks, in address order.
    pub(super) fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// Creates `size` bytes of physical memory (`cuMemCreate`) and maps it at the end of what
    /// is mapped, with `access`: `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`. On failure the
    /// new chunk is undone and the region is as it was.
    pub(super) fn create_and_map(
        &mut self,
        size: usize,
        prop: &CUmemAllocationProp,
        access: &[CUmemAccessDesc],
    ) -> Result<()> {
        let handle = create_handle(self.driver, size, prop)?;
        self.map_at_end(handle, size, true, access)
    }

    /// Maps `handle` (`size` bytes) at the end of what is mapped and sets `access` on it. The
    /// region releases the handle when `owned` (also when this fails); on failure the mapping
    /// is undone.
    pub(super) fn map_at_end(
        &mut self,
        handle: CUmemGenericAllocationHandle,
        size: usize,
        owned: bool,
        access: &[CUmemAccessDesc],
    ) -> Result<()> {
        let offset = self.mapped();
        let end = offset.checked_add(size).filter(|&end| end <= self.reserved);
        if end.is_none() {
            let error = Error::invalid_argument(format!(
                "{size} more bytes do not fit a reservation of {} bytes with {offset} mapped",
                self.reserved
            ));
            if owned {
                self.undo(Chunk {
                    handle,
                    offset,
                    size,
                    mapped: false,
                    owned,
                });
            }
            return Err(error);
        }
        let mut chunk = Chunk {
            handle,
            offset,
            size,
            mapped: false,
            owned,
        };
        let address = self.base + offset as u64;
        // SAFETY: `address..address + size` lies inside this reservation, past every mapped
        // chunk (checked above); `handle` holds at least `size` bytes (the caller's handle
        // of that size); offset 0 into it, flags 0.
        let mapped = unsafe { cu!(self.driver, cuMemMap(address, size, 0, handle, 0)) };
        if let Err(error) = mapped {
            self.undo(chunk);
            return Err(error);
        }
        chunk.mapped = true;
        if let Err(error) = set_access(self.driver, address, size, access) {
            self.undo(chunk);
            return Err(error);
        }
        self.chunks.push(chunk);
        Ok(())
    }

    /// Maps each of `chunks` (owned by another region) at the same offsets here, and sets
    /// `access` on all of them in one call: the first half of a move. The handles stay the
    /// other region's until [`take_handles`](Self::take_handles).
    pub(super) fn map_borrowed(
        &mut self,
        chunks: &[Chunk],
        access: &[CUmemAccessDesc],
    ) -> Result<()> {
        for chunk in chunks {
            let address = self.base + chunk.offset as u64;
            if chunk.offset != self.mapped() || chunk.offset + chunk.size > self.reserved {
                return Err(Error::invalid_argument(
                    "chunks moved into a region must be contiguous and fit it",
                ));
            }
            let mut borrowed = Chunk {
                mapped: false,
                owned: false,
                ..*chunk
            };
            // SAFETY: inside this reservation past every mapped chunk (checked above); the
            // handle is alive (the other region owns it) and holds `size` bytes.
            unsafe {
                cu!(
                    self.driver,
                    cuMemMap(address, chunk.size, 0, chunk.handle, 0)
                )
            }?;
            borrowed.mapped = true;
            self.chunks.push(borrowed);
        }
        let mapped = self.mapped();
        if mapped > 0 {
            set_access(self.driver, self.base, mapped, access)?;
        }
        Ok(())
    }

    /// Makes this region own the handles `other` owned (same chunks, mapped here too), and
    /// `other` own none: the second half of a move.
    pub(super) fn take_handles(&mut self, other: &mut Region) {
        for (mine, theirs) in self.chunks.iter_mut().zip(other.chunks.iter_mut()) {
            mine.owned = theirs.owned;
            theirs.owned = false;
        }
    }

    /// Sets `access` on everything mapped, in one `cuMemSetAccess`.
    pub(super) fn set_access_all(&self, access: &[CUmemAccessDesc]) -> Result<()> {
        let mapped = self.mapped();
        if mapped == 0 {
            return Ok(());
        }
        set_access(self.driver, self.base, mapped, access)
    }

    /// Undoes a chunk that did not make it into the region (unmap if mapped, release if
    /// owned), logging failures: the caller returns the error that caused the undo.
    fn undo(&self, chunk: Chunk) {
        for error in teardown(self.driver, self.base, &[chunk], None) {
            log_drop_error("virtual memory chunk", &error);
        }
    }
}

/// Creates `size` bytes of physical memory (`cuMemCreate`); the caller releases the handle
/// (through a region, or [`release_handle`]).
pub(super) fn create_handle(
    driver: &'static Driver,
    size: usize,
    prop: &CUmemAllocationProp,
) -> Result<CUmemGenericAllocationHandle> {
    let mut handle: CUmemGenericAllocationHandle = 0;
    // SAFETY: valid out-pointer and properties; `size` is a multiple of the granularity
    // (checked by the caller); flags must be 0.
    unsafe { cu!(driver, cuMemCreate(&mut handle, size, prop, 0)) }?;
    Ok(handle)
}

/// Releases a handle that never made it into a region, logging a failure (the caller returns
/// the error that made it give the handle up).
pub(super) fn release_handle(driver: &'static Driver, handle: CUmemGenericAllocationHandle) {
    // SAFETY: the handle is unmapped and owned by the caller, which gives it up here.
    if let Err(error) = unsafe { cu!(driver, cuMemRelease(handle)) } {
        log_drop_error("virtual memory chunk", &error);
    }
}

/// Sets `access` on `address..address + size`.
fn set_access(
    driver: &'static Driver,
    address: CUdeviceptr,
    size: usize,
    access: &[CUmemAccessDesc],
) -> Result<()> {
    // SAFETY: the range is mapped (callers map it first); `access` is a valid array of
    // `access.len()` descriptors.
    unsafe {
        cu!(
            driver,
            cuMemSetAccess(address, size, access.as_ptr(), access.len())
        )
    }
}

/// Unmaps every mapped chunk, then releases every owned handle, then frees the reservation
/// (`Some((base, size))`): each step tried whatever failed before. Returns the failures in
/// order.
fn teardown(
    driver: &'static Driver,
    base: CUdeviceptr,
    chunks: &[Chunk],
    reservation: Option<(CUdeviceptr, usize)>,
) -> Vec<Error> {
    let mut errors = Vec::new();
    for chunk in chunks.iter().filter(|chunk| chunk.mapped) {
        // SAFETY: exactly the range this chunk was mapped at, unmapped once.
        let unmapped = unsafe { cu!(driver, cuMemUnmap(base + chunk.offset as u64, chunk.size)) };
        errors.extend(unmapped.err());
    }
    for chunk in chunks.iter().filter(|chunk| chunk.owned) {
        // SAFETY: the handle is owned here and released once, after its mappings are gone.
        errors.extend(unsafe { cu!(driver, cuMemRelease(chunk.handle)) }.err());
    }
    if let Some((base, size)) = reservation {
        // SAFETY: the reservation made by `Region::reserve`, freed once, after its unmaps.
        errors.extend(unsafe { cu!(driver, cuMemAddressFree(base, size)) }.err());
    }
    errors
}

impl Release for Region {
    const WHAT: &'static str = "virtual memory range";

    /// Drains the region's stream (if any), then unmaps, releases and frees (in that order);
    /// logs every failure but the first, which it returns (so `Drop` logs it once and `close`
    /// returns it).
    fn release(&mut self) -> Result<()> {
        if let Some(stream) = &self.stream {
            stream.drain()?;
        }
        let chunks = std::mem::take(&mut self.chunks);
        let reservation = (self.reserved > 0).then_some((self.base, self.reserved));
        let mut errors = teardown(self.driver, self.base, &chunks, reservation).into_iter();
        let first = errors.next();
        for later in errors {
            log_drop_error(Self::WHAT, &later);
        }
        first.map_or(Ok(()), Err)
    }
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("base", &format_args!("{:#x}", self.base))
            .field("reserved", &self.reserved)
            .field("mapped", &self.mapped())
            .field("chunks", &self.chunks.len())
            .finish()
    }
}
