//! Memory locations (the id moved into a union in CUDA 13) and the managed-memory hints that
//! take them (`cuMemPrefetchAsync`, `cuMemAdvise`: a `CUdevice` under 12, a location under 13).

use crate::error::{Result, cu};
use cuda_sys::{
    CUdeviceptr, CUmem_advise, CUmemLocation, CUmemLocationType, CUstream, Driver, if_abi12,
    if_abi13,
};

/// A device location (`CU_MEM_LOCATION_TYPE_DEVICE`, `ordinal`): the id moved into a union in
/// CUDA 13.
pub(crate) fn device_location(ordinal: i32) -> CUmemLocation {
    location(CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, ordinal)
}

/// A location of any type with its id (a device ordinal, a host NUMA node, or 0 for the
/// host): the id moved into a union in CUDA 13.
pub(crate) fn location(kind: CUmemLocationType, id: i32) -> CUmemLocation {
    #[allow(unused_mut)]
    let mut location = CUmemLocation {
        type_: kind,
        ..Default::default()
    };
    if_abi12! { location.id = id; }
    if_abi13! { location.__bindgen_anon_1.id = id; }
    location
}

/// The id of a location (its device ordinal or NUMA node), in either layout.
pub(crate) fn location_id(location: &CUmemLocation) -> i32 {
    if_abi12! { return location.id; }
    // SAFETY: every location the crate builds or the driver returns sets the `id` variant
    // (the `localized` one is the same four bytes seen as two bytes and padding).
    if_abi13! { return unsafe { location.__bindgen_anon_1.id }; }
    #[allow(unreachable_code)]
    0
}

/// Under the CUDA 12 ABI, the `CUdevice` the plain (pre-12.2) entry points take for a location
/// they can name: a device's ordinal, or `CU_DEVICE_CPU` for the host; `None` for locations
/// only the `_v2` entry points know (host NUMA nodes).
#[cfg_attr(not(test), allow(dead_code))]
pub(super) fn legacy_device(location: &CUmemLocation) -> Option<cuda_sys::CUdevice> {
    match location.type_ {
        CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE => Some(location_id(location)),
        CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST => Some(cuda_sys::CU_DEVICE_CPU),
        _ => None,
    }
}

/// Queues a prefetch of managed memory to `location` on `stream`. Under 12 the plain
/// `cuMemPrefetchAsync` (every CUDA 12 driver) takes a device or the host, and
/// `cuMemPrefetchAsync_v2` (12.2) is used only for host NUMA nodes; under 13 the header names
/// only the `CUmemLocation` form (`cuMemPrefetchAsync_v2`).
///
/// # Safety
///
/// `ptr..ptr + bytes` must be memory the driver can prefetch (managed memory) and `stream`
/// valid.
pub(crate) unsafe fn mem_prefetch(
    driver: &'static Driver,
    ptr: CUdeviceptr,
    bytes: usize,
    location: CUmemLocation,
    stream: CUstream,
) -> Result<()> {
    if_abi12! {
        if let Some(device) = legacy_device(&location) {
            // SAFETY: the range and stream are the caller's promise.
            return unsafe { cu!(driver, cuMemPrefetchAsync(ptr, bytes, device, stream)) };
        }
    }
    // SAFETY: as above; no flags are defined.
    unsafe {
        cu!(
            driver,
            cuMemPrefetchAsync_v2(ptr, bytes, location, 0, stream)
        )
    }
}

/// Gives the driver `advice` about managed memory, for `location` (ignored by the read-mostly
/// advice): the plain `cuMemAdvise` under 12 where it can name the location, else
/// `cuMemAdvise_v2` (as for [`mem_prefetch`]).
///
/// # Safety
///
/// `ptr..ptr + bytes` must be managed memory.
pub(crate) unsafe fn mem_advise(
    driver: &'static Driver,
    ptr: CUdeviceptr,
    bytes: usize,
    advice: CUmem_advise,
    location: CUmemLocation,
) -> Result<()> {
    if_abi12! {
        if let Some(device) = legacy_device(&location) {
            // SAFETY: the range is the caller's promise.
            return unsafe { cu!(driver, cuMemAdvise(ptr, bytes, advice, device)) };
        }
    }
    // SAFETY: as above.
    unsafe { cu!(driver, cuMemAdvise_v2(ptr, bytes, advice, location)) }
}

/// One batch of managed-memory ranges for the batched hints: the ranges, and for a prefetch
/// the distinct target locations with the index of the first range each applies to (each
/// applies up to the next one's first range).
pub(crate) struct HintBatch {
    /// The ranges' start addresses.
    pub(crate) ptrs: Vec<CUdeviceptr>,
    /// The ranges' lengths in bytes, none zero.
    pub(crate) sizes: Vec<usize>,
    /// The target locations (empty for a discard).
    pub(crate) locations: Vec<CUmemLocation>,
    /// For each location, the index of the first range it applies to (the first is 0).
    pub(crate) first_range: Vec<usize>,
}

/// What a batched hint does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchHint {
    /// `cuMemPrefetchBatchAsync`.
    Prefetch,
    /// `cuMemDiscardBatchAsync`.
    Discard,
    /// `cuMemDiscardAndPrefetchBatchAsync`.
    DiscardAndPrefetch,
}

/// Whether this ABI has `hint`: every one under 13; under 12 (whose header has no batched entry
/// points) a prefetch only, made one call per range, and a discard [`Error::Unsupported`].
///
/// [`Error::Unsupported`]: crate::error::Error::Unsupported
pub(crate) fn hint_batch_supported(hint: BatchHint) -> Result<()> {
    if_abi12! {
        if hint != BatchHint::Prefetch {
            return Err(crate::error::Error::unsupported(
                "discarding managed memory",
                "cuMemDiscardBatchAsync and cuMemDiscardAndPrefetchBatchAsync are in the CUDA \
                 13 header only; build with the cuda-13 feature (needs a CUDA 13 driver)",
            ));
        }
    }
    let _ = hint;
    Ok(())
}

if_abi12! {
    /// Queues `batch` on `stream`: under 12 a prefetch is one `cuMemPrefetchAsync` per range
    /// (what the batch means, in as many calls); see [`hint_batch_supported`].
    ///
    /// # Safety
    ///
    /// Every range must be memory the driver can migrate (managed memory) that stays allocated
    /// until `stream` has passed the hint, and `stream` valid; a discard's ranges must not be
    /// read or written by anything not ordered with it.
    pub(crate) unsafe fn mem_hint_batch(
        driver: &'static Driver,
        hint: BatchHint,
        batch: &mut HintBatch,
        stream: CUstream,
    ) -> Result<()> {
        hint_batch_supported(hint)?;
        let mut location = 0;
        for (index, (&ptr, &bytes)) in batch.ptrs.iter().zip(&batch.sizes).enumerate() {
            while batch.first_range.get(location + 1).is_some_and(|&first| first <= index) {
                location += 1;
            }
            let Some(&to) = batch.locations.get(location) else {
                return Err(crate::error::Error::invalid_argument(
                    "a prefetch batch needs a location",
                ));
            };
            // SAFETY: the range and stream are the caller's promise.
            unsafe { mem_prefetch(driver, ptr, bytes, to, stream) }?;
        }
        Ok(())
    }
}

if_abi13! {
    /// Queues `batch` as one batched hint on `stream`: `cuMemPrefetchBatchAsync`,
    /// `cuMemDiscardBatchAsync` or `cuMemDiscardAndPrefetchBatchAsync` (CUDA 13).
    ///
    /// # Safety
    ///
    /// Every range must be memory the driver can migrate (managed memory) that stays allocated
    /// until `stream` has passed the hint, and `stream` valid; a discard's ranges must not be
    /// read or written by anything not ordered with it.
    pub(crate) unsafe fn mem_hint_batch(
        driver: &'static Driver,
        hint: BatchHint,
        batch: &mut HintBatch,
        stream: CUstream,
    ) -> Result<()> {
        let HintBatch {
            ptrs,
            sizes,
            locations,
            first_range,
        } = batch;
        let (count, located) = (ptrs.len(), locations.len());
        let (ptrs, sizes) = (ptrs.as_mut_ptr(), sizes.as_mut_ptr());
        let (locations, first_range) = (locations.as_mut_ptr(), first_range.as_mut_ptr());
        // SAFETY: `ptrs` and `sizes` hold `count` entries, `locations` and `first_range`
        // `located` (the driver only reads them); no flags are defined; the ranges and the
        // stream are the caller's promise.
        unsafe {
            match hint {
                BatchHint::Discard => {
                    cu!(driver, cuMemDiscardBatchAsync(ptrs, sizes, count, 0, stream))
                }
                BatchHint::Prefetch => cu!(
                    driver,
                    cuMemPrefetchBatchAsync(
                        ptrs, sizes, count, locations, first_range, located, 0, stream
                    )
                ),
                BatchHint::DiscardAndPrefetch => cu!(
                    driver,
                    cuMemDiscardAndPrefetchBatchAsync(
                        ptrs, sizes, count, locations, first_range, located, 0, stream
                    )
                ),
            }
        }
    }
}
