//! Batched hints: one driver call that prefetches, discards, or discards and then prefetches
//! many managed buffers or ranges (`cuMemPrefetchBatchAsync`, `cuMemDiscardBatchAsync`,
//! `cuMemDiscardAndPrefetchBatchAsync`, CUDA 13), as `cuda.core.utils`' `prefetch_batch`,
//! `discard_batch` and `discard_prefetch_batch`.
//!
//! ```no_run
//! use cuda_safe::managed::{discard_prefetch_batch, prefetch_batch};
//! use cuda_safe::{Device, ManagedMemoryResource, MemoryLocation};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let managed = ManagedMemoryResource::new(&device)?;
//! let weights = managed.allocate_from_host(&[0.5f32; 1 << 20], &stream)?;
//! let bias = managed.allocate_from_host(&[0.0f32; 1 << 10], &stream)?;
//! let mut scratch = managed.allocate_zeroed::<f32>(1 << 20, &stream)?;
//! // Both inputs to the GPU in one call; one location applies to every buffer.
//! prefetch_batch(&stream, &[&weights, &bias], &[MemoryLocation::from(&device)])?;
//! // The scratch buffer's old contents are not wanted: drop them instead of migrating them.
//! discard_prefetch_batch(&stream, &[&mut scratch], &[MemoryLocation::from(&device)])?;
//! stream.sync()?;
//! assert_eq!(weights.last_prefetch_location()?, Some(MemoryLocation::Device(0)));
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! A batch runs on the stream it is given, after the work queued so far on every buffer's own
//! stream, and the buffers' later work (their frees) waits for it. Zero-size buffers and ranges
//! are left out. The batched entry points are in the CUDA 13 header only: under the CUDA 12
//! ABI a prefetch batch is one `cuMemPrefetchAsync` per range, and a discard is
//! [`Error::Unsupported`].
//!
//! Discarding drops a range's contents: until it is written again, what a read finds is
//! indeterminate (any value of the element type). So the safe discards take each buffer by
//! `&mut`, as a write does.

use super::{MemoryLocation, attribute_i32, managed};
use crate::abi::{self, BatchHint, HintBatch};
use crate::error::{Error, Result};
use crate::memory::Buffer;
use crate::ordering;
use crate::stream::Stream;
use cuda_sys::{CUdeviceptr, CUmem_range_attribute};

/// Checks `buffers` (managed memory only) and queues `hint` over them on `stream`, ordered
/// with their own streams.
fn buffers_hint<'a>(
    stream: &Stream,
    hint: BatchHint,
    buffers: impl ExactSizeIterator<Item = &'a Buffer> + Clone,
    locations: &[MemoryLocation],
    what: &str,
) -> Result<()> {
    abi::hint_batch_supported(hint)?;
    for buffer in buffers.clone() {
        managed(buffer, what)?;
    }
    let ranges = buffers
        .clone()
        .map(|buffer| (buffer.as_raw(), buffer.len()));
    let mut batch = plan(ranges, locations, hint)?;
    if batch.ptrs.is_empty() {
        return Ok(());
    }
    ordering::among_streams(stream, buffers.map(Buffer::stream), || {
        // SAFETY: each range is a live managed buffer, freed only on its own stream, which
        // waits for this batch; a discard's buffers are borrowed mutably by the caller.
        unsafe { abi::mem_hint_batch(stream.driver(), hint, &mut batch, stream.as_raw()) }
    })
}

/// Queues `hint` over raw ranges on `stream`.
///
/// # Safety
///
/// As the public range functions.
unsafe fn ranges_hint(
    stream: &Stream,
    hint: BatchHint,
    ranges: &[(CUdeviceptr, usize)],
    locations: &[MemoryLocation],
) -> Result<()> {
    abi::hint_batch_supported(hint)?;
    let mut batch = plan(ranges.iter().copied(), locations, hint)?;
    if batch.ptrs.is_empty() {
        return Ok(());
    }
    // SAFETY: the ranges are the caller's promise; the stream is alive.
    unsafe { abi::mem_hint_batch(stream.driver(), hint, &mut batch, stream.as_raw()) }
}

/// The driver's form of a batch: the non-empty ranges, and for a prefetch the distinct runs of
/// locations (one for every range, or one per range given) with the first range of each.
fn plan(
    ranges: impl ExactSizeIterator<Item = (CUdeviceptr, usize)>,
    locations: &[MemoryLocation],
    hint: BatchHint,
) -> Result<HintBatch> {
    let count = ranges.len();
    let located = hint != BatchHint::Discard;
    if located && count > 0 && locations.len() != 1 && locations.len() != count {
        return Err(Error::invalid_argument(format!(
            "{} locations for a batch of {count}: give one location for every range, or one \
             per range",
            locations.len()
        )));
    }
    if !located && !locations.is_empty() {
        return Err(Error::invalid_argument(
            "a discard batch takes no locations",
        ));
    }
    let mut batch = HintBatch {
        ptrs: Vec::with_capacity(count),
        sizes: Vec::with_capacity(count),
        locations: Vec::new(),
        first_range: Vec::new(),
    };
    let mut last: Option<MemoryLocation> = None;
    for (index, (ptr, bytes)) in ranges.enumerate() {
        if bytes == 0 {
            continue;
        }
        if located {
            let to = locations[if locations.len() == 1 { 0 } else { index }];
            if last != Some(to) {
                batch.locations.push(to.raw()?);
                batch.first_range.push(batch.ptrs.len());
                last = Some(to);
            }
        }
        batch.ptrs.push(ptr);
        batch.sizes.push(bytes);
    }
    Ok(batch)
}

/// Queues on `stream` a prefetch of every buffer to its location, in one driver call (one per
/// non-empty buffer under the CUDA 12 ABI): `locations` holds one location for all of them or
/// one per buffer. Managed memory only.
///
/// Calls [`cuMemPrefetchBatchAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html#group__CUDA__UNIFIED_1g97fe632183ff5ff791813c3174fc5121) (CUDA 13 header and driver).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a buffer that is not managed memory, a count of locations
/// that is neither 1 nor the buffers', or a location out of range (a host NUMA node past
/// `i32::MAX`); the driver's (a device without concurrent managed access, for one).
#[doc(alias = "cuMemPrefetchBatchAsync")]
pub fn prefetch_batch(
    stream: &Stream,
    buffers: &[&Buffer],
    locations: &[MemoryLocation],
) -> Result<()> {
    let each = buffers.iter().copied();
    buffers_hint(stream, BatchHint::Prefetch, each, locations, "prefetching")
}

/// Queues, in one driver call on `stream`, a discard of every buffer's contents: their pages
/// are released without migrating what they held, and until a buffer is written again what it
/// reads is indeterminate. Managed memory only; needs the CUDA 13 ABI.
///
/// Calls [`cuMemDiscardBatchAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html#group__CUDA__UNIFIED_1gf517eb7d44e9bae70cf6a1ec8d9ece4e) (CUDA 13 header and driver).
///
/// # Errors
///
/// [`Error::Unsupported`] under the CUDA 12 ABI; [`Error::InvalidArgument`] for a buffer that
/// is not managed memory; the driver's.
#[doc(alias = "cuMemDiscardBatchAsync")]
pub fn discard_batch(stream: &Stream, buffers: &[&mut Buffer]) -> Result<()> {
    let each = buffers.iter().map(|buffer| &**buffer);
    buffers_hint(stream, BatchHint::Discard, each, &[], "discarding")
}

/// Queues, in one driver call on `stream`, a discard of every buffer's contents followed by a
/// prefetch of its pages to its location (one location for all, or one per buffer): the pages
/// are made where they will be written, with nothing migrated. Managed memory only; needs the
/// CUDA 13 ABI.
///
/// Calls [`cuMemDiscardAndPrefetchBatchAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html#group__CUDA__UNIFIED_1g2a8dbb3c95608cff2269226298fd8f28) (CUDA 13 header and driver).
///
/// # Errors
///
/// As [`discard_batch`] and [`prefetch_batch`].
#[doc(alias = "cuMemDiscardAndPrefetchBatchAsync")]
pub fn discard_prefetch_batch(
    stream: &Stream,
    buffers: &[&mut Buffer],
    locations: &[MemoryLocation],
) -> Result<()> {
    let each = buffers.iter().map(|buffer| &**buffer);
    let hint = BatchHint::DiscardAndPrefetch;
    buffers_hint(stream, hint, each, locations, "discarding")
}

/// [`prefetch_batch`] over raw `(address, bytes)` ranges, with no ordering beyond `stream`.
///
/// Calls [`cuMemPrefetchBatchAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html#group__CUDA__UNIFIED_1g97fe632183ff5ff791813c3174fc5121) (CUDA 13 header and driver).
///
/// # Safety
///
/// Every range must be managed memory (or memory the driver can migrate) that stays allocated
/// until `stream` has passed the batch.
///
/// # Errors
///
/// As [`prefetch_batch`].
#[doc(alias = "cuMemPrefetchBatchAsync")]
pub unsafe fn prefetch_range_batch(
    ranges: &[(CUdeviceptr, usize)],
    locations: &[MemoryLocation],
    stream: &Stream,
) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { ranges_hint(stream, BatchHint::Prefetch, ranges, locations) }
}

/// [`discard_batch`] over raw `(address, bytes)` ranges, with no ordering beyond `stream`.
///
/// Calls [`cuMemDiscardBatchAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html#group__CUDA__UNIFIED_1gf517eb7d44e9bae70cf6a1ec8d9ece4e) (CUDA 13 header and driver).
///
/// # Safety
///
/// As [`prefetch_range_batch`]; and nothing may read or write the ranges unless ordered
/// after the discard on `stream` (the driver leaves a read or write alongside it undefined).
///
/// # Errors
///
/// As [`discard_batch`].
#[doc(alias = "cuMemDiscardBatchAsync")]
pub unsafe fn discard_range_batch(ranges: &[(CUdeviceptr, usize)], stream: &Stream) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { ranges_hint(stream, BatchHint::Discard, ranges, &[]) }
}

/// [`discard_prefetch_batch`] over raw `(address, bytes)` ranges, with no ordering beyond
/// `stream`.
///
/// Calls [`cuMemDiscardAndPrefetchBatchAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html#group__CUDA__UNIFIED_1g2a8dbb3c95608cff2269226298fd8f28) (CUDA 13 header and driver).
///
/// # Safety
///
/// As [`discard_range_batch`].
///
/// # Errors
///
/// As [`discard_prefetch_batch`].
#[doc(alias = "cuMemDiscardAndPrefetchBatchAsync")]
pub unsafe fn discard_prefetch_range_batch(
    ranges: &[(CUdeviceptr, usize)],
    locations: &[MemoryLocation],
    stream: &Stream,
) -> Result<()> {
    let hint = BatchHint::DiscardAndPrefetch;
    // SAFETY: the caller's promise.
    unsafe { ranges_hint(stream, hint, ranges, locations) }
}

impl Buffer {
    /// Queues a discard of the buffer's contents on its stream (see [`discard_batch`]).
    /// Managed memory only; a zero-size buffer does nothing; needs the CUDA 13 ABI.
    ///
    /// Calls [`cuMemDiscardBatchAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html#group__CUDA__UNIFIED_1gf517eb7d44e9bae70cf6a1ec8d9ece4e) (CUDA 13 header and driver).
    ///
    /// # Errors
    ///
    /// As [`discard_batch`].
    #[doc(alias = "cuMemDiscardBatchAsync")]
    pub fn discard(&mut self) -> Result<()> {
        let stream = self.stream().clone();
        discard_batch(&stream, &[self])
    }

    /// Queues a discard of the buffer's contents and a prefetch of its pages to `to` on its
    /// stream (see [`discard_prefetch_batch`]). Managed memory only; needs the CUDA 13 ABI.
    ///
    /// Calls [`cuMemDiscardAndPrefetchBatchAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html#group__CUDA__UNIFIED_1g2a8dbb3c95608cff2269226298fd8f28) (CUDA 13 header and driver).
    ///
    /// # Errors
    ///
    /// As [`discard_prefetch_batch`].
    #[doc(alias = "cuMemDiscardAndPrefetchBatchAsync")]
    pub fn discard_prefetch(&mut self, to: MemoryLocation) -> Result<()> {
        let stream = self.stream().clone();
        discard_prefetch_batch(&stream, &[self], &[to])
    }

    /// Where the whole buffer was last prefetched to, if anywhere and all to one place (as
    /// `cuda.core`'s `last_prefetch_location`): the one attribute of
    /// [`range_attributes`](Self::range_attributes), in two queries. Managed memory only.
    ///
    #[doc = cuda_sys::api_doc!(cuMemRangeGetAttribute)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for memory that is not managed, or an empty buffer; the
    /// driver's.
    #[doc(alias = "cuMemRangeGetAttribute")]
    pub fn last_prefetch_location(&self) -> Result<Option<MemoryLocation>> {
        use CUmem_range_attribute as A;
        managed(self, "range attributes")?;
        if self.is_empty() {
            return Err(Error::invalid_argument(
                "an empty buffer has no range attributes",
            ));
        }
        let (ptr, bytes) = (self.as_raw(), self.len());
        Ok(MemoryLocation::from_parts(
            attribute_i32(
                ptr,
                bytes,
                A::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
            )?,
            attribute_i32(
                ptr,
                bytes,
                A::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
            )?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEVICE0: MemoryLocation = MemoryLocation::Device(0);
    const HOST: MemoryLocation = MemoryLocation::Host;

    #[test]
    fn one_location_applies_to_every_range_and_runs_are_merged() {
        let ranges = [(0x1000, 16), (0x2000, 0), (0x3000, 32), (0x4000, 8)];
        let batch = plan(ranges.into_iter(), &[DEVICE0], BatchHint::Prefetch).unwrap();
        assert_eq!(
            batch.ptrs,
            [0x1000, 0x3000, 0x4000],
            "the empty range is left out"
        );
        assert_eq!(batch.sizes, [16, 32, 8]);
        assert_eq!(batch.first_range, [0]);
        assert_eq!(batch.locations.len(), 1);

        let per_range = [DEVICE0, HOST, HOST, DEVICE0];
        let batch = plan(
            ranges.into_iter(),
            &per_range,
            BatchHint::DiscardAndPrefetch,
        )
        .unwrap();
        assert_eq!(
            batch.first_range,
            [0, 1, 2],
            "host for ranges 1.., device from 2"
        );
        let ids: Vec<i32> = batch.locations.iter().map(abi::location_id).collect();
        assert_eq!(ids, [0, 0, 0]);
        let kinds: Vec<u32> = batch.locations.iter().map(|l| l.type_.0).collect();
        assert_eq!(kinds, [1, 2, 1], "device, host, device");
    }

    #[test]
    fn location_counts_that_fit_no_rule_are_refused() {
        let ranges = [(0x1000, 16), (0x2000, 16), (0x3000, 16)];
        let error = plan(ranges.into_iter(), &[DEVICE0, HOST], BatchHint::Prefetch)
            .map(drop)
            .unwrap_err();
        assert!(
            error.to_string().contains("2 locations for a batch of 3"),
            "{error}"
        );
        assert!(plan(ranges.into_iter(), &[], BatchHint::Prefetch).is_err());
        assert!(plan(ranges.into_iter(), &[HOST], BatchHint::Discard).is_err());
        let batch = plan(ranges.into_iter(), &[], BatchHint::Discard).unwrap();
        assert!(batch.locations.is_empty() && batch.first_range.is_empty());
        let bad = MemoryLocation::HostNuma(u32::MAX);
        assert!(plan(ranges.into_iter(), &[bad], BatchHint::Prefetch).is_err());
    }

    #[test]
    fn an_empty_batch_is_empty() {
        let batch = plan([(0x1000, 0)].into_iter(), &[HOST], BatchHint::Prefetch).unwrap();
        assert!(batch.ptrs.is_empty() && batch.locations.is_empty());
        let none: [(CUdeviceptr, usize); 0] = [];
        assert!(plan(none.into_iter(), &[], BatchHint::Prefetch).is_ok());
    }
}
