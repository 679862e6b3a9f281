//! Typed views of a buffer's memory, and the copies between host and device.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use bytemuck::Pod;

use super::fill;
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::ordering::across_streams;
use crate::stream::Stream;
use cuda_sys::CUdeviceptr;

/// A shared, typed view of part of a [`Buffer`](crate::Buffer): `len` elements of `T`.
///
/// Its operations are queued on the buffer's stream. Launch arguments take it as the device
/// pointer of its first element.
#[derive(Debug, Clone, Copy)]
pub struct DeviceSlice<'a, T> {
    span: Span<'a>,
    _elements: PhantomData<&'a [T]>,
}

/// An exclusive, typed view of part of a [`Buffer`](crate::Buffer).
#[derive(Debug)]
pub struct DeviceSliceMut<'a, T> {
    span: Span<'a>,
    _elements: PhantomData<&'a mut [T]>,
}

/// What a view is, shared or exclusive: where its elements start, how many there are, the
/// stream its operations are queued on, and where the memory lives.
#[derive(Debug, Clone, Copy)]
struct Span<'a> {
    ptr: CUdeviceptr,
    len: usize,
    stream: &'a Stream,
    placement: Placement,
}

impl Span<'_> {
    /// Elements `range` of this span's `element`-byte elements.
    fn narrowed(self, range: impl RangeBounds<usize>, element: usize) -> Result<Self> {
        let (start, end) = bounds(range, self.len)?;
        Ok(Self {
            ptr: self.ptr + (start * element) as u64,
            len: end - start,
            ..self
        })
    }

    /// Queues a copy of `bytes` bytes from `src` to `dst`, one of them this span's memory and
    /// the other host memory, on the span's stream.
    fn copy_with_host(&self, dst: CUdeviceptr, src: CUdeviceptr, bytes: usize) -> Result<()> {
        in_context(self.stream, &[self.placement, HOST], || {
            copy_async(self.stream, dst, src, bytes)
        })
    }
}

/// The accessors both views have, over their [`Span`].
macro_rules! span_accessors {
    ($($view:ident),+) => {$(
        impl<'a, T: Pod> $view<'a, T> {
            /// A view of `len` elements at `ptr`, whose operations are queued on `stream`, of
            /// memory placed as `placement` says.
            pub(crate) fn from_parts(
                ptr: CUdeviceptr,
                len: usize,
                stream: &'a Stream,
                placement: Placement,
            ) -> Self {
                Self {
                    span: Span {
                        ptr,
                        len,
                        stream,
                        placement,
                    },
                    _elements: PhantomData,
                }
            }

            /// The number of elements.
            pub fn len(&self) -> usize {
                self.span.len
            }

            /// Whether the view holds no element.
            pub fn is_empty(&self) -> bool {
                self.span.len == 0
            }

            /// The device address of the first element.
            #[inline]
            pub fn as_raw(&self) -> CUdeviceptr {
                self.span.ptr
            }

            /// The stream the view's operations are queued on.
            pub fn stream(&self) -> &'a Stream {
                self.span.stream
            }

            /// The device whose memory the view is (`None` for host-accessible memory).
            pub fn home(&self) -> Option<Device> {
                self.span.placement.home
            }

            /// Whether kernels can read and write the memory, as its buffer's resource says
            /// (device memory; pinned and managed host memory).
            pub fn is_device_accessible(&self) -> bool {
                self.span.placement.device_accessible
            }
        }
    )+};
}

span_accessors!(DeviceSlice, DeviceSliceMut);

/// Checks that `bytes` holds whole `T`s and that `ptr` is aligned for `T`; returns the count.
pub(crate) fn element_count<T>(ptr: CUdeviceptr, bytes: usize) -> Result<usize> {
    let size = size_of::<T>();
    if size == 0 {
        return Err(Error::invalid_argument(
            "zero-sized element types have no device layout",
        ));
    }
    if !bytes.is_multiple_of(size) {
        return Err(Error::invalid_argument(format!(
            "a buffer of {bytes} bytes does not hold a whole number of {size}-byte elements"
        )));
    }
    if !ptr.is_multiple_of(align_of::<T>() as u64) {
        return Err(Error::invalid_argument(format!(
            "address {ptr:#x} is not aligned to {} bytes",
            align_of::<T>()
        )));
    }
    Ok(bytes / size)
}

/// The start and end of `range` within `0..len`, or an error naming both.
fn bounds(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&start) => start,
        Bound::Excluded(&start) => start.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&end) => end.saturating_add(1),
        Bound::Excluded(&end) => end,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        return Err(Error::invalid_argument(format!(
            "range {start}..{end} is out of bounds of a slice of {len} elements"
        )));
    }
    Ok((start, end))
}

/// Errors unless a copy moves between slices of the same length.
fn same_length(what: &str, destination: usize, source: usize) -> Result<()> {
    if destination == source {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "{what}: the destination holds {destination} elements, the source {source}"
        )))
    }
}

/// Queues `bytes` bytes from `src` to `dst` (any unified addresses) on `stream`.
fn copy_async(stream: &Stream, dst: CUdeviceptr, src: CUdeviceptr, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the callers pass ranges they checked against live allocations (or host slices
    // they keep alive until the stream passes this point).
    unsafe {
        cu!(
            stream.driver(),
            cuMemcpyAsync(dst, src, bytes, stream.as_raw())
        )
    }
}

/// `device`'s primary context, for naming the device's memory in a peer copy: the one its
/// buffers keep alive, looked up without pinning it again (a copy must not undo
/// [`Device::release_primary_context`]); retained only when nothing holds it.
fn primary_of(device: &Device) -> Result<Context> {
    Context::live_primary(device).map_or_else(|| device.context(), Ok)
}

/// Where a view's memory lives, as its buffer's resource says: what copies need to know.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Placement {
    /// The device whose memory it is (`None` for host memory): copies between two devices'
    /// memory are peer copies.
    pub(crate) home: Option<Device>,
    /// Whether copies and fills need the stream's context current
    /// ([`MemoryResource::copies_need_current_context`](super::MemoryResource::copies_need_current_context)).
    pub(crate) needs_context: bool,
    /// Whether kernels can read and write it
    /// ([`MemoryResource::is_device_accessible`](super::MemoryResource::is_device_accessible)).
    pub(crate) device_accessible: bool,
}

/// The host side of a copy: host memory the caller passes may be pageable, and the driver
/// stages a pageable copy through the current context. With another device's context current
/// (as NCCL's initialisation leaves one) or none, `cuMemcpyAsync` answers
/// `CUDA_ERROR_INVALID_VALUE` for some memory: seen on the H200 with pool memory of another
/// device's context and with virtual memory and no context.
const HOST: Placement = Placement {
    home: None,
    needs_context: true,
    device_accessible: false,
};

/// Runs `copy` with `stream`'s context current when one of `placements` needs it, else
/// straight (no extra driver call).
fn in_context(
    stream: &Stream,
    placements: &[Placement],
    copy: impl FnOnce() -> Result<()>,
) -> Result<()> {
    if placements.iter().any(|placement| placement.needs_context) {
        let _current = stream.context().scoped()?;
        copy()
    } else {
        copy()
    }
}

/// Queues `bytes` bytes from `src`'s memory on its device to `dst`'s on another, on `stream`.
fn peer_copy_async(
    stream: &Stream,
    (dst, dst_device): (CUdeviceptr, &Device),
    (src, src_device): (CUdeviceptr, &Device),
    bytes: usize,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let (dst_context, src_context) = (primary_of(dst_device)?, primary_of(src_device)?);
    // SAFETY: the callers pass ranges they checked against live allocations of those devices,
    // whose primary contexts are held for the call.
    unsafe {
        cu!(
            stream.driver(),
            cuMemcpyPeerAsync(
                dst,
                dst_context.as_raw(),
                src,
                src_context.as_raw(),
                bytes,
                stream.as_raw()
            )
        )
    }
}

impl<'a, T: Pod> DeviceSlice<'a, T> {
    /// A narrower view.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a range past the end, or one that starts after it ends.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        Ok(Self {
            span: self.span.narrowed(range, size_of::<T>())?,
            _elements: PhantomData,
        })
    }

    /// Copies the elements into `dst` (of the same length) and waits for the copy.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the lengths differ; the driver's error.
    #[doc(alias = "cuMemcpyAsync")]
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        // SAFETY: `dst` is borrowed for this call, which waits for the copy before returning.
        unsafe { self.copy_to_host_async(dst) }?;
        if !dst.is_empty() {
            self.span.stream.drain()?;
        }
        Ok(())
    }

    /// The elements, copied into a new vector.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut host = vec![T::zeroed(); self.span.len];
        self.copy_to_host(&mut host)?;
        Ok(host)
    }

    /// Queues a copy of the elements into `dst` without waiting.
    ///
    /// # Safety
    ///
    /// `dst` must stay alive and untouched by the host until the stream has passed this point
    /// (synchronize the stream or an event recorded after it). For a truly asynchronous copy,
    /// `dst` must be pinned memory; pageable memory makes the driver stage the copy.
    ///
    /// # Errors
    ///
    /// As [`copy_to_host`](Self::copy_to_host).
    pub unsafe fn copy_to_host_async(&self, dst: &mut [T]) -> Result<()> {
        same_length("device-to-host copy", dst.len(), self.span.len)?;
        let bytes = size_of_val(dst);
        self.span
            .copy_with_host(dst.as_mut_ptr() as CUdeviceptr, self.span.ptr, bytes)
    }
}

impl<'a, T: Pod> DeviceSliceMut<'a, T> {
    /// A shared view of the same elements.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            span: self.span,
            _elements: PhantomData,
        }
    }

    /// A narrower exclusive view.
    ///
    /// # Errors
    ///
    /// As [`DeviceSlice::slice`].
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        Ok(DeviceSliceMut {
            span: self.span.narrowed(range, size_of::<T>())?,
            _elements: PhantomData,
        })
    }

    /// Copies `src` (of the same length) into the elements and waits for the copy.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the lengths differ; the driver's error.
    #[doc(alias = "cuMemcpyAsync")]
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        // SAFETY: `src` is borrowed for this call, which waits for the copy before returning.
        unsafe { self.copy_from_host_async(src) }?;
        if !src.is_empty() {
            self.span.stream.drain()?;
        }
        Ok(())
    }

    /// Queues a copy of `src` into the elements without waiting.
    ///
    /// # Safety
    ///
    /// `src` must stay alive and unmodified until the stream has passed this point. For a
    /// truly asynchronous copy, `src` must be pinned memory.
    ///
    /// # Errors
    ///
    /// As [`copy_from_host`](Self::copy_from_host).
    pub unsafe fn copy_from_host_async(&mut self, src: &[T]) -> Result<()> {
        same_length("host-to-device copy", self.span.len, src.len())?;
        let bytes = size_of_val(src);
        self.span
            .copy_with_host(self.span.ptr, src.as_ptr() as CUdeviceptr, bytes)
    }

    /// Queues setting every element to `value` (see [`Buffer::fill`](crate::Buffer::fill) for
    /// the memsets it takes).
    #[doc = cuda_sys::api_doc!(cuMemsetD32Async)]
    #[doc = cuda_sys::api_doc!(cuMemsetD2D32Async)]
    #[doc(alias = "cuMemsetD32Async", alias = "cuMemsetD2D32Async")]
    pub fn fill(&mut self, value: T) -> Result<()> {
        let Span {
            ptr,
            len,
            stream,
            placement,
        } = self.span;
        if len == 0 {
            return Ok(());
        }
        in_context(stream, &[placement], || {
            // SAFETY: `len` values of `T` start at `ptr`, inside the buffer this view borrows
            // exclusively, aligned for `T` (checked when the view was made).
            unsafe {
                fill::fill(
                    stream.driver(),
                    stream.as_raw(),
                    ptr,
                    bytemuck::bytes_of(&value),
                    len,
                )
            }
        })
    }

    /// Queues a copy from another view of the same length (device, pinned or managed memory),
    /// ordered after the work already queued on the source's stream. Between the memory of two
    /// devices it is a peer copy (`cuMemcpyPeerAsync`), direct where the devices can reach each
    /// other, staged by the driver through the host where they cannot.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpyAsync)]
    #[doc = cuda_sys::api_doc!(cuMemcpyPeerAsync)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the lengths differ; the driver's error.
    #[doc(alias = "cuMemcpyAsync", alias = "cuMemcpyPeerAsync")]
    pub fn copy_from(&mut self, src: &DeviceSlice<'_, T>) -> Result<()> {
        let (dst, src) = (self.span, src.span);
        same_length("device copy", dst.len, src.len)?;
        let bytes = dst.len * size_of::<T>();
        across_streams(dst.stream, src.stream, || {
            in_context(dst.stream, &[dst.placement, src.placement], || {
                match (dst.placement.home, src.placement.home) {
                    (Some(to), Some(from)) if to != from => {
                        peer_copy_async(dst.stream, (dst.ptr, &to), (src.ptr, &from), bytes)
                    }
                    _ => copy_async(dst.stream, dst.ptr, src.ptr, bytes),
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_counts_need_whole_aligned_elements() {
        assert_eq!(element_count::<f32>(256, 4096).unwrap(), 1024);
        assert_eq!(element_count::<u8>(3, 7).unwrap(), 7);
        assert!(element_count::<f32>(256, 6).is_err());
        assert!(element_count::<f64>(4, 16).is_err());
        assert!(element_count::<()>(0, 0).is_err());
        assert_eq!(element_count::<u64>(0, 0).unwrap(), 0);
    }

    #[test]
    fn bounds_are_checked() {
        assert_eq!(bounds(.., 10).unwrap(), (0, 10));
        assert_eq!(bounds(2..5, 10).unwrap(), (2, 5));
        assert_eq!(bounds(2..=5, 10).unwrap(), (2, 6));
        assert_eq!(bounds(10.., 10).unwrap(), (10, 10));
        assert!(bounds(5..11, 10).is_err());
        let (start, end) = (6, 5);
        assert!(bounds(start..end, 10).is_err());
        assert!(bounds(..=usize::MAX, 10).is_err());
    }

    #[test]
    fn lengths_must_match() {
        assert!(same_length("copy", 4, 4).is_ok());
        let error = same_length("host-to-device copy", 4, 5).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("destination holds 4 elements, the source 5")
        );
    }
}
