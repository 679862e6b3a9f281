//! Static buffers: the inputs and outputs of a captured region, made in an arena before the
//! capture, at one address for every replay; the host copies new inputs in and results out
//! between replays.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use bytemuck::Pod;

use super::GraphArena;
use crate::error::{Error, Result};
use crate::launch::KernelArg;
use crate::memory::{Buffer, DeviceSliceMut, Placement};
use crate::stream::Stream;
use cuda_sys::CUdeviceptr;

/// `len` values of `T` in a [`GraphArena`], shared by the host and the graphs captured in the
/// arena after it was made (each keeps it alive): a captured region's input or output.
///
/// Its copies are ordered on its stream and wait for their end; launch the replays on that
/// stream too (or order the two), so that a copy never meets a replay using the memory.
/// Cloning is cheap and shares the buffer.
pub struct StaticBuffer<T> {
    buffer: Arc<Buffer>,
    len: usize,
    _elements: PhantomData<fn() -> T>,
}

impl GraphArena {
    /// A static buffer of `len` values of `T` on `stream`, for the work captured from now on
    /// (contents as the memory held). Make it before the capture that uses it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `stream` is being captured or on overflow; as
    /// [`allocate`](Self::allocate).
    pub fn static_buffer<T: Pod>(&self, len: usize, stream: &Stream) -> Result<StaticBuffer<T>> {
        if self.inner.capture_of(stream)? != 0 {
            return Err(Error::invalid_argument(
                "a static buffer is made before the capture that uses it, on a stream that is \
                 not being captured",
            ));
        }
        let buffer = Arc::new(self.allocate_array::<T>(len, stream)?);
        self.inner.lock().statics.push(Arc::downgrade(&buffer));
        Ok(StaticBuffer {
            buffer,
            len,
            _elements: PhantomData,
        })
    }

    /// The static buffers still alive (forgetting the others).
    pub(super) fn live_statics(&self) -> Vec<Arc<Buffer>> {
        let mut state = self.inner.lock();
        state.statics.retain(|weak| weak.strong_count() > 0);
        state
            .statics
            .iter()
            .filter_map(|weak| weak.upgrade())
            .collect()
    }
}

impl<T: Pod> StaticBuffer<T> {
    /// The buffer (to pass to a launch, a copy or a library call).
    pub fn buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address (the same for every replay).
    pub fn as_raw(&self) -> CUdeviceptr {
        self.buffer.as_raw()
    }

    /// The stream its copies are ordered on.
    pub fn stream(&self) -> &Stream {
        Buffer::stream(&self.buffer)
    }

    /// Copies `values` (exactly [`len`](Self::len) of them) in, after the work queued on its
    /// stream so far, and waits for the copy.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for another number of values; the driver's error.
    #[doc(alias = "cuMemcpyAsync")]
    pub fn copy_in(&self, values: &[T]) -> Result<()> {
        self.view()?.copy_from_host(values)
    }

    /// Copies the device buffer `src` (exactly the same size) in, ordered after the work
    /// queued on `src`'s stream and on this buffer's; queued, not waited for.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for another size, or a source overlapping this buffer (the
    /// buffer itself: a copy over itself); the driver's error.
    #[doc(alias = "cuMemcpyAsync")]
    pub fn copy_in_from(&self, src: &Buffer) -> Result<()> {
        let (start, end) = (self.buffer.as_raw(), self.buffer.as_raw() + self.bytes());
        let src_end = src.as_raw() + src.len() as u64;
        if src.as_raw() < end && start < src_end {
            return Err(Error::invalid_argument(format!(
                "the source {:#x}..{src_end:#x} overlaps the static buffer {start:#x}..{end:#x}: \
                 a copy cannot read memory it writes",
                src.as_raw()
            )));
        }
        self.view()?.copy_from(&src.as_slice::<T>()?)
    }

    /// Its size in bytes.
    fn bytes(&self) -> u64 {
        self.buffer.len() as u64
    }

    /// Copies the values out into `out` (exactly [`len`](Self::len) of them), after the work
    /// queued on its stream so far (a replay launched there), and waits for the copy.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for another number of values; the driver's error.
    #[doc(alias = "cuMemcpyAsync")]
    pub fn copy_out(&self, out: &mut [T]) -> Result<()> {
        self.buffer.as_slice::<T>()?.copy_to_host(out)
    }

    /// The values, copied out into a new vector, as [`copy_out`](Self::copy_out) does.
    ///
    /// # Errors
    ///
    /// The driver's error.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.buffer.to_vec()
    }

    /// A writable view of the memory. The buffer is shared with the graphs that replay into
    /// it; the host writes only through these copies, ordered on its stream as the replays
    /// launched there are.
    fn view(&self) -> Result<DeviceSliceMut<'_, T>> {
        let len = self.buffer.as_slice::<T>()?.len();
        let resource = self.buffer.memory_resource();
        Ok(DeviceSliceMut::from_parts(
            self.buffer.as_raw(),
            len,
            Buffer::stream(&self.buffer),
            Placement {
                home: resource.device(),
                needs_context: resource.copies_need_current_context(),
                device_accessible: resource.is_device_accessible(),
            },
        ))
    }
}

impl<T> Clone for StaticBuffer<T> {
    fn clone(&self) -> Self {
        Self {
            buffer: Arc::clone(&self.buffer),
            len: self.len,
            _elements: PhantomData,
        }
    }
}

impl<T> fmt::Debug for StaticBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticBuffer")
            .field("buffer", &self.buffer)
            .field("len", &self.len)
            .finish()
    }
}

/// A static buffer is passed by its address, ordered on its stream, and kept alive by a
/// graph node made with it.
impl<T: Pod> KernelArg for &StaticBuffer<T> {
    type Repr = CUdeviceptr;

    #[inline(always)]
    fn to_repr(&self) -> CUdeviceptr {
        self.buffer.as_raw()
    }

    #[inline(always)]
    fn stream(&self) -> Option<&Stream> {
        Some(Buffer::stream(&self.buffer))
    }

    fn keep_alive(&self) -> Option<Box<dyn Any + Send>> {
        let buffer: Arc<Buffer> = Arc::clone(&self.buffer);
        Some(Box::new(buffer))
    }
}
