//! `PitchedBuffer`: device memory with the driver's row pitch (`cuMemAllocPitch`).

use std::fmt;

use bytemuck::Pod;

use super::views::{Pitched, PitchedMut};
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, Release, assert_send_sync};
use crate::memory::element_count;
use crate::stream::Stream;
use cuda_sys::CUdeviceptr;

/// Device memory for `depth` slices of `height` rows of `width_bytes` bytes, each row starting
/// at a multiple of the pitch the driver chose for fast access (`cuMemAllocPitch`). Its copies
/// are ordered on its stream; dropping it waits for that stream, then frees it.
#[must_use = "a pitched buffer is freed when dropped"]
pub struct PitchedBuffer {
    inner: Owned<PitchedAllocation>,
}

struct PitchedAllocation {
    ptr: CUdeviceptr,
    pitch: usize,
    width_bytes: usize,
    height: usize,
    depth: usize,
    stream: Stream,
}

/// The element sizes `cuMemAllocPitch` accepts.
const ELEMENT_SIZES: [u32; 3] = [4, 8, 16];

impl PitchedBuffer {
    /// Allocates `depth` slices of `height` rows of `width_bytes` bytes on `stream`'s device;
    /// `element_size` (4, 8 or 16 bytes) is the size of the accesses kernels will make, which
    /// the driver aligns rows for.
    ///
    #[doc = cuda_sys::api_doc!(cuMemAllocPitch)]
    #[doc = cuda_sys::api_doc!(cuMemAllocPitch_v2)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a zero extent, another element size, or rows that
    /// overflow; the driver's (out of memory, or a row wider than the device allows).
    #[doc(alias = "cuMemAllocPitch", alias = "cuMemAllocPitch_v2")]
    pub fn allocate(
        stream: &Stream,
        width_bytes: usize,
        height: usize,
        depth: usize,
        element_size: u32,
    ) -> Result<Self> {
        if width_bytes == 0 || height == 0 || depth == 0 {
            return Err(Error::invalid_argument(format!(
                "a pitched allocation of {width_bytes} bytes x {height} rows x {depth} slices \
                 holds nothing"
            )));
        }
        if !ELEMENT_SIZES.contains(&element_size) {
            return Err(Error::invalid_argument(format!(
                "cuMemAllocPitch takes element sizes of 4, 8 or 16 bytes, not {element_size}"
            )));
        }
        let rows = height.checked_mul(depth).ok_or_else(|| {
            Error::invalid_argument(format!("{height} rows x {depth} slices overflow usize"))
        })?;
        let context = stream.context();
        let _current = context.scoped()?;
        let (mut ptr, mut pitch): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid out-pointers; the stream's context is current.
        unsafe {
            cu!(
                stream.driver(),
                cuMemAllocPitch_v2(&mut ptr, &mut pitch, width_bytes, rows, element_size)
            )
        }?;
        let allocation = PitchedAllocation {
            ptr,
            pitch,
            width_bytes,
            height,
            depth,
            stream: stream.clone(),
        };
        if pitch < width_bytes || pitch.checked_mul(rows).is_none() {
            let detail = format!("a pitch of {pitch} bytes for rows of {width_bytes}");
            drop(Owned::new(allocation));
            return Err(Error::unexpected("cuMemAllocPitch_v2", detail));
        }
        Ok(Self {
            inner: Owned::new(allocation),
        })
    }

    /// The pitch the driver chose, in bytes (at least the width).
    pub fn pitch(&self) -> usize {
        self.inner.pitch
    }

    /// The bytes of each row that hold data.
    pub fn width_bytes(&self) -> usize {
        self.inner.width_bytes
    }

    /// The rows per slice.
    pub fn height(&self) -> usize {
        self.inner.height
    }

    /// The slices.
    pub fn depth(&self) -> usize {
        self.inner.depth
    }

    /// The device address of the first row.
    pub fn as_raw(&self) -> CUdeviceptr {
        self.inner.ptr
    }

    /// The stream its copies and its free are ordered on.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// The bytes allocated: pitch x rows x slices.
    pub fn len(&self) -> usize {
        self.inner.pitch * self.inner.height * self.inner.depth
    }

    /// Whether it holds no byte (never: every extent is at least 1).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A shared view for copies, with the driver's pitch and the allocation's rows per slice.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the pitch is not whole `T`s.
    pub fn view<T: Pod>(&self) -> Result<Pitched<'_, T>> {
        element_count::<T>(self.inner.ptr, self.inner.pitch)?;
        Ok(Pitched::from_parts(
            self.inner.ptr,
            self.len(),
            self.inner.pitch,
            self.inner.height,
            &self.inner.stream,
        ))
    }

    /// An exclusive view, the destination of copies.
    ///
    /// # Errors
    ///
    /// As [`view`](Self::view).
    pub fn view_mut<T: Pod>(&mut self) -> Result<PitchedMut<'_, T>> {
        element_count::<T>(self.inner.ptr, self.inner.pitch)?;
        let len = self.len();
        Ok(PitchedMut::from_parts(
            self.inner.ptr,
            len,
            self.inner.pitch,
            self.inner.height,
            &self.inner.stream,
        ))
    }

    /// Waits for the stream, then frees the memory now, returning the driver's error.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

impl Release for PitchedAllocation {
    const WHAT: &'static str = "pitched buffer";

    fn release(&mut self) -> Result<()> {
        // Not stream-ordered: wait until nothing queued can touch the memory.
        self.stream.drain()?;
        let _current = self.stream.context().scoped()?;
        // SAFETY: the allocation from cuMemAllocPitch, freed once, after its stream drained.
        unsafe { cu!(self.stream.driver(), cuMemFree_v2(self.ptr)) }
    }
}

impl fmt::Debug for PitchedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PitchedBuffer")
            .field("ptr", &format_args!("{:#x}", self.inner.ptr))
            .field("pitch", &self.inner.pitch)
            .field("width_bytes", &self.inner.width_bytes)
            .field("height", &self.inner.height)
            .field("depth", &self.inner.depth)
            .finish()
    }
}

assert_send_sync!(PitchedBuffer);
