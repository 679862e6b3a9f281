//! Hints for managed memory: prefetching it to a device or the host on a stream
//! (`cuMemPrefetchAsync`), advice on where it should live and who reads it (`cuMemAdvise`),
//! and the range attributes that show what the driver holds (`cuMemRangeGetAttribute`).
//!
//! ```no_run
//! use cuda_safe::{Advice, Device, ManagedMemoryResource, MemoryLocation};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let managed = ManagedMemoryResource::new(&device)?;
//! let table = managed.allocate_from_host(&[1.0f32; 1 << 20], &stream)?;
//! table.advise(Advice::SetReadMostly)?; // read copies on every processor that reads it
//! table.advise(Advice::SetPreferredLocation(MemoryLocation::from(&device)))?;
//! table.prefetch(MemoryLocation::from(&device))?; // queued on the buffer's stream
//! stream.sync()?;
//! let attributes = table.range_attributes()?;
//! assert!(attributes.read_mostly);
//! assert_eq!(attributes.last_prefetch_location, Some(MemoryLocation::Device(0)));
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! [`prefetch_batch`], [`discard_batch`] and [`discard_prefetch_batch`] do the same for many
//! buffers in one driver call (CUDA 13), and [`Buffer::discard`] drops a buffer's contents
//! without migrating them.
//!
//! The CUDA 12 and 13 headers differ here (a `CUdevice` against a `CUmemLocation`); `abi`
//! picks the entry point, so the same code builds for both. Host NUMA nodes need a CUDA 12.2
//! driver, as do the range attributes (which read locations by type and id).

mod batch;

use std::ffi::c_void;

use crate::abi;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::memory::Buffer;
use crate::stream::Stream;
use cuda_sys::{
    CUdeviceptr, CUmem_advise, CUmem_range_attribute, CUmemLocation, CUmemLocationType,
};

pub use batch::{
    discard_batch, discard_prefetch_batch, discard_prefetch_range_batch, discard_range_batch,
    prefetch_batch, prefetch_range_batch,
};

/// A place managed memory can live or be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryLocation {
    /// A device, by ordinal.
    Device(usize),
    /// The host (`CU_DEVICE_CPU` for the calls that take a device).
    Host,
    /// A host NUMA node, by id (CUDA 12.2 drivers).
    HostNuma(u32),
}

impl From<&Device> for MemoryLocation {
    fn from(device: &Device) -> Self {
        Self::Device(device.ordinal())
    }
}

impl MemoryLocation {
    /// The driver's form.
    fn raw(self) -> Result<CUmemLocation> {
        let (kind, id) = match self {
            Self::Device(ordinal) => (
                CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                i32::try_from(ordinal).ok(),
            ),
            Self::Host => (CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, Some(0)),
            Self::HostNuma(node) => (
                CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST_NUMA,
                i32::try_from(node).ok(),
            ),
        };
        let id = id.ok_or_else(|| Error::invalid_argument(format!("{self:?} is out of range")))?;
        Ok(abi::location(kind, id))
    }

    /// The location a range attribute names by type and id, `None` for none (invalid).
    fn from_parts(kind: i32, id: i32) -> Option<Self> {
        let kind = CUmemLocationType(u32::try_from(kind).ok()?);
        match kind {
            CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE => {
                usize::try_from(id).ok().map(Self::Device)
            }
            CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST
            | CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT => Some(Self::Host),
            CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST_NUMA => {
                u32::try_from(id).ok().map(Self::HostNuma)
            }
            _ => None,
        }
    }

    /// The location the `ACCESSED_BY` attribute names by device id (`-1` the host, `-2`
    /// none).
    fn from_device_id(id: i32) -> Option<Self> {
        match id {
            cuda_sys::CU_DEVICE_CPU => Some(Self::Host),
            id => usize::try_from(id).ok().map(Self::Device),
        }
    }
}

/// Advice about a range of managed memory (`cuMemAdvise`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Advice {
    /// Mostly read: each processor that reads it gets a read-only copy; a write invalidates
    /// the others.
    SetReadMostly,
    /// Undoes [`SetReadMostly`](Self::SetReadMostly).
    UnsetReadMostly,
    /// Prefer to keep the pages at this location (they migrate away only when they must).
    SetPreferredLocation(MemoryLocation),
    /// Undoes [`SetPreferredLocation`](Self::SetPreferredLocation).
    UnsetPreferredLocation,
    /// This location will access the memory: keep it mapped there, wherever the pages are.
    SetAccessedBy(MemoryLocation),
    /// Undoes [`SetAccessedBy`](Self::SetAccessedBy) for this location.
    UnsetAccessedBy(MemoryLocation),
}

impl Advice {
    /// The driver's advice and location (the host where the advice ignores it).
    fn raw(self) -> Result<(CUmem_advise, CUmemLocation)> {
        let ignored = MemoryLocation::Host;
        let (advice, location) = match self {
            Self::SetReadMostly => (CUmem_advise::CU_MEM_ADVISE_SET_READ_MOSTLY, ignored),
            Self::UnsetReadMostly => (CUmem_advise::CU_MEM_ADVISE_UNSET_READ_MOSTLY, ignored),
            Self::SetPreferredLocation(at) => {
                (CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, at)
            }
            Self::UnsetPreferredLocation => (
                CUmem_advise::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
                ignored,
            ),
            Self::SetAccessedBy(by) => (CUmem_advise::CU_MEM_ADVISE_SET_ACCESSED_BY, by),
            Self::UnsetAccessedBy(by) => (CUmem_advise::CU_MEM_ADVISE_UNSET_ACCESSED_BY, by),
        };
        Ok((advice, location.raw()?))
    }
}

/// What the driver holds about a range of managed memory (`cuMemRangeGetAttribute`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RangeAttributes {
    /// Whether the whole range is advised read-mostly.
    pub read_mostly: bool,
    /// The preferred location of the whole range, if it has one.
    pub preferred_location: Option<MemoryLocation>,
    /// Where the whole range was last prefetched to, if anywhere (and all to one place).
    pub last_prefetch_location: Option<MemoryLocation>,
    /// The devices (and the host) advised to access the whole range.
    pub accessed_by: Vec<MemoryLocation>,
}

/// Queues a prefetch of `ptr..ptr + bytes` to `to` on `stream`.
///
#[doc = cuda_sys::api_doc!(cuMemPrefetchAsync)]
#[doc = cuda_sys::api_doc!(cuMemPrefetchAsync_v2)]
/// # Safety
///
/// The range must be managed memory (or memory the driver can migrate) that stays allocated
/// until the stream has passed the prefetch.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a location out of range; the driver's.
#[doc(alias = "cuMemPrefetchAsync", alias = "cuMemPrefetchAsync_v2")]
pub unsafe fn prefetch_range(
    ptr: CUdeviceptr,
    bytes: usize,
    to: MemoryLocation,
    stream: &Stream,
) -> Result<()> {
    let location = to.raw()?;
    // SAFETY: the range is the caller's promise; the stream is alive.
    unsafe { abi::mem_prefetch(stream.driver(), ptr, bytes, location, stream.as_raw()) }
}

/// Gives the driver `advice` about `ptr..ptr + bytes`.
///
#[doc = cuda_sys::api_doc!(cuMemAdvise)]
#[doc = cuda_sys::api_doc!(cuMemAdvise_v2)]
/// # Safety
///
/// The range must be managed memory.
///
/// # Errors
///
/// As [`prefetch_range`].
#[doc(alias = "cuMemAdvise", alias = "cuMemAdvise_v2")]
pub unsafe fn advise_range(ptr: CUdeviceptr, bytes: usize, advice: Advice) -> Result<()> {
    let (advice, location) = advice.raw()?;
    let driver = cuda_sys::driver()?;
    // SAFETY: the range is the caller's promise.
    unsafe { abi::mem_advise(driver, ptr, bytes, advice, location) }
}

/// One `i32` attribute of a range.
fn attribute_i32(ptr: CUdeviceptr, bytes: usize, attribute: CUmem_range_attribute) -> Result<i32> {
    let driver = cuda_sys::driver()?;
    let mut value = 0i32;
    // SAFETY: `value` holds the 4 bytes these attributes write; the driver checks the range.
    unsafe {
        cu!(
            driver,
            cuMemRangeGetAttribute(
                (&raw mut value).cast::<c_void>(),
                size_of::<i32>(),
                attribute,
                ptr,
                bytes,
            )
        )
    }?;
    Ok(value)
}

/// What the driver holds about `ptr..ptr + bytes` (managed memory).
///
#[doc = cuda_sys::api_doc!(cuMemRangeGetAttribute)]
/// # Errors
///
/// The driver's (memory that is not managed, or a driver older than 12.2).
#[doc(alias = "cuMemRangeGetAttribute")]
pub fn range_attributes(ptr: CUdeviceptr, bytes: usize) -> Result<RangeAttributes> {
    use CUmem_range_attribute as A;
    let location = |kind, id| -> Result<Option<MemoryLocation>> {
        Ok(MemoryLocation::from_parts(
            attribute_i32(ptr, bytes, kind)?,
            attribute_i32(ptr, bytes, id)?,
        ))
    };
    let slots = Device::count()? + 1;
    let mut ids = vec![cuda_sys::CU_DEVICE_INVALID; slots];
    let driver = cuda_sys::driver()?;
    // SAFETY: `ids` holds `slots` ints, as many bytes as passed; the driver fills what it
    // has and leaves the rest invalid.
    unsafe {
        cu!(
            driver,
            cuMemRangeGetAttribute(
                ids.as_mut_ptr().cast::<c_void>(),
                size_of_val(ids.as_slice()),
                A::CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
                ptr,
                bytes,
            )
        )
    }?;
    Ok(RangeAttributes {
        read_mostly: attribute_i32(ptr, bytes, A::CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY)? != 0,
        preferred_location: location(
            A::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
            A::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
        )?,
        last_prefetch_location: location(
            A::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
            A::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
        )?,
        accessed_by: ids
            .into_iter()
            .filter_map(MemoryLocation::from_device_id)
            .collect(),
    })
}

/// Errors unless `buffer` is managed memory.
fn managed(buffer: &Buffer, what: &str) -> Result<()> {
    if buffer.memory_resource().is_managed() {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "{what} applies to managed memory (ManagedMemoryResource) only; this buffer is \
             from {:?}",
            buffer.memory_resource()
        )))
    }
}

impl Buffer {
    /// Queues a prefetch of the whole buffer to `to` on the buffer's stream: later work on
    /// the stream finds the pages there. Managed memory only; a zero-size buffer does nothing.
    ///
    #[doc = cuda_sys::api_doc!(cuMemPrefetchAsync)]
    #[doc = cuda_sys::api_doc!(cuMemPrefetchAsync_v2)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for memory that is not managed; the driver's.
    #[doc(alias = "cuMemPrefetchAsync", alias = "cuMemPrefetchAsync_v2")]
    pub fn prefetch(&self, to: MemoryLocation) -> Result<()> {
        managed(self, "prefetching")?;
        if self.is_empty() {
            return Ok(());
        }
        // SAFETY: the buffer's own managed memory, freed only after its stream passes this.
        unsafe { prefetch_range(self.as_raw(), self.len(), to, self.stream()) }
    }

    /// Gives the driver `advice` about the whole buffer. Managed memory only; a zero-size
    /// buffer does nothing.
    ///
    #[doc = cuda_sys::api_doc!(cuMemAdvise)]
    #[doc = cuda_sys::api_doc!(cuMemAdvise_v2)]
    /// # Errors
    ///
    /// As [`prefetch`](Self::prefetch).
    #[doc(alias = "cuMemAdvise", alias = "cuMemAdvise_v2")]
    pub fn advise(&self, advice: Advice) -> Result<()> {
        managed(self, "memory advice")?;
        if self.is_empty() {
            return Ok(());
        }
        // SAFETY: the buffer's own managed memory.
        unsafe { advise_range(self.as_raw(), self.len(), advice) }
    }

    /// What the driver holds about the whole buffer: read-mostly, preferred location, last
    /// prefetch location, accessed-by. Managed memory only.
    ///
    #[doc = cuda_sys::api_doc!(cuMemRangeGetAttribute)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for memory that is not managed, or an empty buffer; the
    /// driver's.
    #[doc(alias = "cuMemRangeGetAttribute")]
    pub fn range_attributes(&self) -> Result<RangeAttributes> {
        managed(self, "range attributes")?;
        if self.is_empty() {
            return Err(Error::invalid_argument(
                "an empty buffer has no range attributes",
            ));
        }
        range_attributes(self.as_raw(), self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_convert_to_the_drivers_form_and_back() {
        for location in [
            MemoryLocation::Device(1),
            MemoryLocation::Host,
            MemoryLocation::HostNuma(3),
        ] {
            let raw = location.raw().unwrap();
            let back =
                MemoryLocation::from_parts(raw.type_.0 as i32, abi::location_id(&raw)).unwrap();
            assert_eq!(back, location);
        }
        assert!(MemoryLocation::HostNuma(u32::MAX).raw().is_err());
        assert_eq!(MemoryLocation::from_parts(0, 0), None, "invalid: none");
        assert_eq!(MemoryLocation::from_parts(-5, 0), None);
        assert_eq!(
            MemoryLocation::from_device_id(-1),
            Some(MemoryLocation::Host)
        );
        assert_eq!(
            MemoryLocation::from_device_id(2),
            Some(MemoryLocation::Device(2))
        );
        assert_eq!(MemoryLocation::from_device_id(-2), None);
    }

    #[test]
    fn advice_names_its_location_or_the_ignored_host() {
        let (advice, location) = Advice::SetAccessedBy(MemoryLocation::Device(2))
            .raw()
            .unwrap();
        assert_eq!(advice, CUmem_advise::CU_MEM_ADVISE_SET_ACCESSED_BY);
        assert_eq!(abi::location_id(&location), 2);
        let (advice, location) = Advice::UnsetReadMostly.raw().unwrap();
        assert_eq!(advice, CUmem_advise::CU_MEM_ADVISE_UNSET_READ_MOSTLY);
        assert_eq!(location.type_, CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST);
    }
}
