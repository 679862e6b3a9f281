//! `GrowableBuffer`: device memory that grows without copying.

use std::fmt;

use bytemuck::Pod;

use super::options::{VmmAccess, plan_growth};
use super::region::{Region, create_handle, release_handle};
use super::resource::{VirtualMemoryResource, grant_descs};
use crate::error::Result;
use crate::handle::{Owned, assert_send_sync, log_drop_error};
use crate::memory::{DeviceSlice, DeviceSliceMut, Placement, element_count};
use crate::ordering;
use crate::stream::Stream;
use cuda_sys::{CUdeviceptr, CUmemAccessDesc};

/// Device memory that grows in place, without copying: a large address reservation whose
/// mapped part is extended by mapping new physical chunks at its end
/// ([`VirtualMemoryResource::growable`]).
///
/// While the reservation holds the new size, [`grow`](Self::grow) maps one chunk and the
/// address never changes; kernels may keep using the start meanwhile. Past the reservation,
/// it reserves a larger range (at least twice as large) and maps the same physical chunks into
/// it: still no data is copied, but **the base address changes** (`grow` returns
/// [`Growth::Moved`]) and work queued with the old address must be finished, so it waits for
/// the buffer's stream first. Reserve generously up front: address space is cheap.
///
/// Operations (views, copies) are ordered on the buffer's stream; dropping it (or
/// [`close`](Self::close)) waits for that stream, then unmaps, releases and frees.
#[must_use = "a growable buffer is unmapped when dropped"]
pub struct GrowableBuffer {
    region: Owned<Region>,
    resource: VirtualMemoryResource,
    /// The access every chunk gets: the resource's, plus grants made since.
    access: Vec<CUmemAccessDesc>,
    stream: Stream,
}

/// What [`GrowableBuffer::grow`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Growth {
    /// The buffer already held the size: nothing was done.
    Unchanged,
    /// New memory was mapped at the end; the address is the same.
    InPlace,
    /// The reservation was full: the memory moved (without copying) to a larger one, at a new
    /// address; `from` was the old one.
    Moved {
        /// The address before the move.
        from: CUdeviceptr,
    },
}

impl GrowableBuffer {
    pub(super) fn from_parts(
        region: Owned<Region>,
        resource: VirtualMemoryResource,
        stream: &Stream,
    ) -> Self {
        Self {
            region,
            access: resource.inner.access.clone(),
            resource,
            stream: stream.clone(),
        }
    }

    /// The base address (it changes only when a [`grow`](Self::grow) moves the buffer).
    #[inline]
    pub fn as_raw(&self) -> CUdeviceptr {
        self.region.base()
    }

    /// The bytes mapped (a multiple of the granularity).
    pub fn len(&self) -> usize {
        self.region.mapped()
    }

    /// Whether nothing is mapped (never: a growable buffer maps at least one chunk).
    pub fn is_empty(&self) -> bool {
        self.region.mapped() == 0
    }

    /// The bytes reserved: how far the buffer grows without moving.
    pub fn capacity(&self) -> usize {
        self.region.reserved()
    }

    /// The number of physical chunks mapped (one per growth step).
    pub fn chunk_count(&self) -> usize {
        self.region.chunks().len()
    }

    /// The resource that made it.
    pub fn resource(&self) -> &VirtualMemoryResource {
        &self.resource
    }

    /// The stream the buffer's operations and its release are ordered on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Moves the buffer to another stream: work queued there from now on (and the release)
    /// comes after everything queued on the old stream so far; as
    /// [`Buffer::set_stream`](crate::Buffer::set_stream), nothing is queued when the old stream
    /// has finished its work.
    ///
    /// # Errors
    ///
    /// The driver's error from querying or ordering the streams; the buffer then stays on its
    /// stream.
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        if !self.stream.same_as(stream) {
            ordering::hand_over(stream, &self.stream)?;
            self.stream = stream.clone();
            self.region.set_stream(Some(stream.clone()));
        }
        Ok(())
    }

    /// Grows the buffer to hold at least `size` bytes (rounded up to the granularity) by
    /// mapping one new chunk at the end; see the type's documentation for when it moves.
    ///
    #[doc = cuda_sys::api_doc!(cuMemCreate)]
    #[doc = cuda_sys::api_doc!(cuMemMap)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) past the resource's
    /// `max_size` or on overflow; the driver's (out of memory). On error the buffer holds
    /// what it held; only a failure to map after a move leaves it at its new address.
    #[doc(alias = "cuMemCreate", alias = "cuMemMap")]
    pub fn grow(&mut self, size: usize) -> Result<Growth> {
        let inner = self.resource.inner.clone();
        let Some(plan) = plan_growth(
            self.region.mapped(),
            self.region.reserved(),
            size,
            inner.granularity,
            inner.options.max_size,
        )?
        else {
            return Ok(Growth::Unchanged);
        };
        let more = plan.mapped - self.region.mapped();
        // The physical memory first: when it runs out, nothing has moved.
        let handle = create_handle(inner.driver, more, &inner.prop)?;
        let growth = match plan.reserve {
            None => Growth::InPlace,
            Some(reserve) => {
                let from = self.region.base();
                if let Err(error) = self.move_to(reserve) {
                    release_handle(inner.driver, handle);
                    return Err(error);
                }
                Growth::Moved { from }
            }
        };
        self.region.map_at_end(handle, more, true, &self.access)?;
        Ok(growth)
    }

    /// Maps the buffer's chunks into a new reservation of `reserve` bytes and gives up the old
    /// one (after the stream drains: work queued with the old address must be done).
    fn move_to(&mut self, reserve: usize) -> Result<()> {
        let inner = &self.resource.inner;
        let mut moved = Owned::new(Region::reserve(
            inner.driver,
            reserve,
            inner.align,
            inner.options.addr_hint,
        )?);
        moved.map_borrowed(self.region.chunks(), &self.access)?;
        self.stream.drain()?;
        moved.take_handles(&mut self.region);
        moved.set_stream(Some(self.stream.clone()));
        std::mem::swap(&mut self.region, &mut moved);
        // The stream was drained just above: the old range's release need not wait for it
        // again (a second wait would cost a driver call, and its failure would leak the range).
        moved.set_stream(None);
        // The old range now owns no handle: closing it unmaps its mappings and frees it. The
        // buffer is whole in its new range whatever happens here, so a failure is logged.
        if let Err(error) = moved.close() {
            log_drop_error("virtual memory range left by a move", &error);
        }
        Ok(())
    }

    /// Grants devices access to the whole buffer now and to every chunk it grows by later, in
    /// one `cuMemSetAccess` (a device listed again gets the new access).
    ///
    #[doc = cuda_sys::api_doc!(cuMemSetAccess)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an empty list; the
    /// driver's.
    #[doc(alias = "cuMemSetAccess")]
    pub fn set_access(&mut self, grants: &[(crate::device::Device, VmmAccess)]) -> Result<()> {
        let descs = grant_descs(grants)?;
        self.region.set_access_all(&descs)?;
        for desc in descs {
            let same = |known: &CUmemAccessDesc| {
                known.location.type_ == desc.location.type_
                    && crate::abi::location_id(&known.location)
                        == crate::abi::location_id(&desc.location)
            };
            match self.access.iter_mut().find(|known| same(known)) {
                Some(known) => *known = desc,
                None => self.access.push(desc),
            }
        }
        Ok(())
    }

    /// A typed view of the whole buffer.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the size is not a whole
    /// number of `T`s.
    pub fn as_slice<T: Pod>(&self) -> Result<DeviceSlice<'_, T>> {
        let len = element_count::<T>(self.as_raw(), self.len())?;
        Ok(DeviceSlice::from_parts(
            self.as_raw(),
            len,
            &self.stream,
            Placement {
                home: Some(*self.resource.device()),
                needs_context: true,
                device_accessible: true,
            },
        ))
    }

    /// An exclusive typed view of the whole buffer.
    ///
    /// # Errors
    ///
    /// As [`as_slice`](Self::as_slice).
    pub fn as_mut_slice<T: Pod>(&mut self) -> Result<DeviceSliceMut<'_, T>> {
        let len = element_count::<T>(self.as_raw(), self.len())?;
        Ok(DeviceSliceMut::from_parts(
            self.as_raw(),
            len,
            &self.stream,
            Placement {
                home: Some(*self.resource.device()),
                needs_context: true,
                device_accessible: true,
            },
        ))
    }

    /// Waits for the stream, then unmaps, releases and frees now, returning the first error
    /// (each later one is logged).
    pub fn close(self) -> Result<()> {
        self.region.close()
    }

    pub(super) fn region(&self) -> &Region {
        &self.region
    }

    pub(super) fn vmm_inner(&self) -> &super::resource::VmmInner {
        &self.resource.inner
    }
}

impl fmt::Debug for GrowableBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrowableBuffer")
            .field("region", &*self.region)
            .field("device", &self.resource.inner.device.ordinal())
            .finish()
    }
}

assert_send_sync!(GrowableBuffer);
