//! The copies themselves: every pair of sides goes through [`enqueue`], which checks the
//! extents against both sides and makes one `cuMemcpy2DAsync` or `cuMemcpy3DAsync`.

use std::ffi::c_void;

use bytemuck::Pod;

use super::array::CudaArray;
use super::extent::{Copy3d, Shape, check};
use super::views::{HostPitched, HostPitchedMut, Pitched, PitchedMut};
use crate::error::{Result, cu};
use crate::ordering::across_streams;
use crate::stream::Stream;
use cuda_sys::{CUDA_MEMCPY2D, CUDA_MEMCPY3D, CUarray, CUdeviceptr, CUmemorytype};

/// Where one side's bytes are.
#[derive(Clone, Copy)]
enum Memory {
    Device(CUdeviceptr),
    /// A unified address (device, pinned or managed memory): a graph copy node's buffer.
    Unified(CUdeviceptr),
    Host(*const c_void),
    HostMut(*mut c_void),
    Array(CUarray),
}

/// One side of a copy: where, and its shape.
#[derive(Clone, Copy)]
struct Side {
    memory: Memory,
    shape: Shape,
    /// An array with slices, which only the 3-D call reaches.
    layered: bool,
}

impl Side {
    fn linear(memory: Memory, shape: Shape) -> Self {
        Self {
            memory,
            shape,
            layered: false,
        }
    }

    fn array(array: &CudaArray) -> Self {
        Self {
            memory: Memory::Array(array.as_raw()),
            shape: array.shape(),
            layered: array.is_3d(),
        }
    }

    /// The pitch and rows per slice of linear memory (arrays have none).
    fn layout(&self) -> (usize, usize) {
        match self.shape {
            Shape::Linear { pitch, rows, .. } => (pitch, rows),
            Shape::Array { .. } => (0, 0),
        }
    }
}

/// The 2-D call's description of `copy`.
fn params_2d(copy: &Copy3d, src: &Side, dst: &Side) -> CUDA_MEMCPY2D {
    let mut params = CUDA_MEMCPY2D {
        srcXInBytes: copy.src.x_bytes,
        srcY: copy.src.y,
        srcPitch: src.layout().0,
        dstXInBytes: copy.dst.x_bytes,
        dstY: copy.dst.y,
        dstPitch: dst.layout().0,
        WidthInBytes: copy.width_bytes,
        Height: copy.height,
        ..Default::default()
    };
    match src.memory {
        Memory::Device(ptr) => {
            params.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
            params.srcDevice = ptr;
        }
        Memory::Unified(ptr) => {
            params.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_UNIFIED;
            params.srcDevice = ptr;
        }
        Memory::Host(ptr) => {
            params.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
            params.srcHost = ptr;
        }
        Memory::HostMut(ptr) => {
            params.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
            params.srcHost = ptr.cast_const();
        }
        Memory::Array(array) => {
            params.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_ARRAY;
            params.srcArray = array;
        }
    }
    match dst.memory {
        Memory::Device(ptr) => {
            params.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
            params.dstDevice = ptr;
        }
        Memory::Unified(ptr) => {
            params.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_UNIFIED;
            params.dstDevice = ptr;
        }
        Memory::Host(ptr) => {
            params.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
            params.dstHost = ptr.cast_mut();
        }
        Memory::HostMut(ptr) => {
            params.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
            params.dstHost = ptr;
        }
        Memory::Array(array) => {
            params.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_ARRAY;
            params.dstArray = array;
        }
    }
    params
}

/// The 3-D call's description of `copy` (the 2-D one's fields, plus slices).
fn params_3d(copy: &Copy3d, src: &Side, dst: &Side) -> CUDA_MEMCPY3D {
    let flat = params_2d(copy, src, dst);
    CUDA_MEMCPY3D {
        srcXInBytes: flat.srcXInBytes,
        srcY: flat.srcY,
        srcZ: copy.src.z,
        srcMemoryType: flat.srcMemoryType,
        srcHost: flat.srcHost,
        srcDevice: flat.srcDevice,
        srcArray: flat.srcArray,
        srcPitch: flat.srcPitch,
        srcHeight: src.layout().1,
        dstXInBytes: flat.dstXInBytes,
        dstY: flat.dstY,
        dstZ: copy.dst.z,
        dstMemoryType: flat.dstMemoryType,
        dstHost: flat.dstHost,
        dstDevice: flat.dstDevice,
        dstArray: flat.dstArray,
        dstPitch: flat.dstPitch,
        dstHeight: dst.layout().1,
        WidthInBytes: copy.width_bytes,
        Height: copy.height,
        Depth: copy.depth,
        ..Default::default()
    }
}

/// A 1-D copy's description between two unified addresses (a graph's copy node).
pub(crate) fn linear_description(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
) -> CUDA_MEMCPY3D {
    CUDA_MEMCPY3D {
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_UNIFIED,
        srcDevice: src,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_UNIFIED,
        dstDevice: dst,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
        ..Default::default()
    }
}

/// One side of a graph's 3-D copy node: memory seen as rows at a unified address, or a CUDA
/// array.
#[derive(Clone, Copy)]
pub(crate) struct NodeSide(Side);

impl NodeSide {
    /// The memory of `view` (device, pinned or managed) as its rows.
    pub(crate) fn rows<T: Pod>(view: &Pitched<'_, T>) -> Self {
        Self(Side::linear(Memory::Unified(view.ptr), view.shape()))
    }

    /// `array`, as a whole.
    pub(crate) fn array(array: &CudaArray) -> Self {
        Self(Side::array(array))
    }
}

/// A graph copy node's description of `copy` from `src` into `dst` (`CUDA_MEMCPY3D`, what
/// every copy node takes), checked against both sides.
///
/// # Errors
///
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the side and the extent
/// that does not fit, or for a copy of nothing (a node copies at least one byte).
pub(crate) fn node_description(
    copy: &Copy3d,
    src: &NodeSide,
    dst: &NodeSide,
) -> Result<CUDA_MEMCPY3D> {
    if !check(copy, &src.0.shape, &dst.0.shape)? {
        return Err(crate::error::Error::invalid_argument(format!(
            "a copy node copies at least one byte, not {} x {} x {}",
            copy.width_bytes, copy.height, copy.depth
        )));
    }
    Ok(params_3d(copy, &src.0, &dst.0))
}

/// Checks `copy` against both sides, then queues it on `stream` (the 2-D call when it is one
/// slice at slice 0 on both sides and no side is an array with slices). Returns whether
/// anything was queued.
fn enqueue(stream: &Stream, copy: &Copy3d, src: &Side, dst: &Side) -> Result<bool> {
    if !check(copy, &src.shape, &dst.shape)? {
        return Ok(false);
    }
    // A host side may be pageable memory, which the driver stages through the current
    // context: make it the stream's (as the linear copies do).
    let host = |side: &Side| matches!(side.memory, Memory::Host(_) | Memory::HostMut(_));
    let _current = if host(src) || host(dst) {
        Some(stream.context().scoped()?)
    } else {
        None
    };
    if copy.is_2d() && !src.layered && !dst.layered {
        let params = params_2d(copy, src, dst);
        // SAFETY: every extent was checked against both sides, which the callers hold alive
        // (device memory and arrays until the stream passes the copy; host memory as their
        // contracts say).
        unsafe {
            cu!(
                stream.driver(),
                cuMemcpy2DAsync_v2(&params, stream.as_raw())
            )
        }?;
    } else {
        let params = params_3d(copy, src, dst);
        // SAFETY: as above.
        unsafe {
            cu!(
                stream.driver(),
                cuMemcpy3DAsync_v2(&params, stream.as_raw())
            )
        }?;
    }
    Ok(true)
}

/// Queues the copy, then waits for it when one was queued.
fn enqueue_and_wait(stream: &Stream, copy: &Copy3d, src: &Side, dst: &Side) -> Result<()> {
    if enqueue(stream, copy, src, dst)? {
        stream.drain()?;
    }
    Ok(())
}

fn device(view_ptr: CUdeviceptr, shape: Shape) -> Side {
    Side::linear(Memory::Device(view_ptr), shape)
}

impl<T: Pod> PitchedMut<'_, T> {
    /// Queues a 2-D/3-D copy from device memory, ordered after the work already queued on
    /// the source's stream (and the source's later work after it).
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpy2DAsync)]
    #[doc = cuda_sys::api_doc!(cuMemcpy3DAsync)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the side and the
    /// extent that does not fit; the driver's.
    #[doc(alias = "cuMemcpy2DAsync", alias = "cuMemcpy3DAsync")]
    pub fn copy_from(&mut self, src: &Pitched<'_, T>, copy: &Copy3d) -> Result<()> {
        let (from, to) = (device(src.ptr, src.shape()), device(self.ptr, self.shape()));
        across_streams(self.stream, src.stream, || {
            enqueue(self.stream, copy, &from, &to).map(drop)
        })
    }

    /// Copies from a host slice and waits for the copy.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpy2DAsync)]
    #[doc = cuda_sys::api_doc!(cuMemcpy3DAsync)]
    /// # Errors
    ///
    /// As [`copy_from`](Self::copy_from).
    #[doc(alias = "cuMemcpy2DAsync", alias = "cuMemcpy3DAsync")]
    pub fn copy_from_host(&mut self, src: &HostPitched<'_, T>, copy: &Copy3d) -> Result<()> {
        let from = Side::linear(Memory::Host(src.data.as_ptr().cast()), src.shape());
        enqueue_and_wait(self.stream, copy, &from, &device(self.ptr, self.shape()))
    }

    /// Queues a copy from a host slice without waiting.
    ///
    /// # Safety
    ///
    /// `src` must stay alive and unmodified until the stream has passed this point; pinned
    /// memory makes the copy truly asynchronous.
    ///
    /// # Errors
    ///
    /// As [`copy_from`](Self::copy_from).
    pub unsafe fn copy_from_host_async(
        &mut self,
        src: &HostPitched<'_, T>,
        copy: &Copy3d,
    ) -> Result<()> {
        let from = Side::linear(Memory::Host(src.data.as_ptr().cast()), src.shape());
        enqueue(self.stream, copy, &from, &device(self.ptr, self.shape())).map(drop)
    }

    /// Queues a copy from a CUDA array, ordered after the array's stream's queued work.
    ///
    /// # Errors
    ///
    /// As [`copy_from`](Self::copy_from).
    pub fn copy_from_array(&mut self, src: &CudaArray, copy: &Copy3d) -> Result<()> {
        let (from, to) = (Side::array(src), device(self.ptr, self.shape()));
        across_streams(self.stream, src.stream(), || {
            enqueue(self.stream, copy, &from, &to).map(drop)
        })
    }
}

impl<T: Pod> Pitched<'_, T> {
    /// Copies into a host slice and waits for the copy.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpy2DAsync)]
    #[doc = cuda_sys::api_doc!(cuMemcpy3DAsync)]
    /// # Errors
    ///
    /// As [`PitchedMut::copy_from`].
    #[doc(alias = "cuMemcpy2DAsync", alias = "cuMemcpy3DAsync")]
    pub fn copy_to_host(&self, dst: &mut HostPitchedMut<'_, T>, copy: &Copy3d) -> Result<()> {
        let to = Side::linear(Memory::HostMut(dst.data.as_mut_ptr().cast()), dst.shape());
        enqueue_and_wait(self.stream, copy, &device(self.ptr, self.shape()), &to)
    }

    /// Queues a copy into a host slice without waiting.
    ///
    /// # Safety
    ///
    /// `dst` must stay alive and untouched by the host until the stream has passed this
    /// point; pinned memory makes the copy truly asynchronous.
    ///
    /// # Errors
    ///
    /// As [`PitchedMut::copy_from`].
    pub unsafe fn copy_to_host_async(
        &self,
        dst: &mut HostPitchedMut<'_, T>,
        copy: &Copy3d,
    ) -> Result<()> {
        let to = Side::linear(Memory::HostMut(dst.data.as_mut_ptr().cast()), dst.shape());
        enqueue(self.stream, copy, &device(self.ptr, self.shape()), &to).map(drop)
    }
}

impl CudaArray {
    /// Queues a copy from device memory into the array, ordered after the source's stream's
    /// queued work.
    ///
    #[doc = cuda_sys::api_doc!(cuMemcpy2DAsync)]
    #[doc = cuda_sys::api_doc!(cuMemcpy3DAsync)]
    /// # Errors
    ///
    /// As [`PitchedMut::copy_from`].
    #[doc(alias = "cuMemcpy2DAsync", alias = "cuMemcpy3DAsync")]
    pub fn copy_from<T: Pod>(&mut self, src: &Pitched<'_, T>, copy: &Copy3d) -> Result<()> {
        let (from, to) = (device(src.ptr, src.shape()), Side::array(self));
        across_streams(self.stream(), src.stream, || {
            enqueue(self.stream(), copy, &from, &to).map(drop)
        })
    }

    /// Copies from a host slice into the array and waits for the copy.
    ///
    /// # Errors
    ///
    /// As [`PitchedMut::copy_from`].
    pub fn copy_from_host<T: Pod>(
        &mut self,
        src: &HostPitched<'_, T>,
        copy: &Copy3d,
    ) -> Result<()> {
        let from = Side::linear(Memory::Host(src.data.as_ptr().cast()), src.shape());
        enqueue_and_wait(self.stream(), copy, &from, &Side::array(self))
    }

    /// Copies from the array into a host slice and waits for the copy.
    ///
    /// # Errors
    ///
    /// As [`PitchedMut::copy_from`].
    pub fn copy_to_host<T: Pod>(
        &self,
        dst: &mut HostPitchedMut<'_, T>,
        copy: &Copy3d,
    ) -> Result<()> {
        let to = Side::linear(Memory::HostMut(dst.data.as_mut_ptr().cast()), dst.shape());
        enqueue_and_wait(self.stream(), copy, &Side::array(self), &to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_copies_are_one_dimensional_between_unified_addresses() {
        let params = linear_description(0x2000, 0x1000, 64);
        assert_eq!((params.dstDevice, params.srcDevice), (0x2000, 0x1000));
        assert_eq!(
            (params.WidthInBytes, params.Height, params.Depth),
            (64, 1, 1)
        );
        assert_eq!(params.srcMemoryType, CUmemorytype::CU_MEMORYTYPE_UNIFIED);
        assert_eq!(params.dstMemoryType, CUmemorytype::CU_MEMORYTYPE_UNIFIED);
    }

    #[test]
    fn a_copy_is_described_to_the_driver_as_checked() {
        let src = Side::linear(
            Memory::Device(0x1000),
            Shape::Linear {
                len: 4096,
                pitch: 128,
                rows: 8,
                element: 4,
            },
        );
        let mut host = [0u8; 4096];
        let dst = Side::linear(
            Memory::HostMut(host.as_mut_ptr().cast()),
            Shape::Linear {
                len: 4096,
                pitch: 64,
                rows: 16,
                element: 1,
            },
        );
        let copy = Copy3d::boxed(32, 4, 2)
            .from_offset(8, 1, 1)
            .to_offset(4, 2, 0);
        let flat = params_2d(&copy, &src, &dst);
        assert_eq!(flat.srcMemoryType, CUmemorytype::CU_MEMORYTYPE_DEVICE);
        assert_eq!(flat.srcDevice, 0x1000);
        assert_eq!((flat.srcXInBytes, flat.srcY, flat.srcPitch), (8, 1, 128));
        assert_eq!(flat.dstMemoryType, CUmemorytype::CU_MEMORYTYPE_HOST);
        assert_eq!((flat.dstXInBytes, flat.dstY, flat.dstPitch), (4, 2, 64));
        assert_eq!((flat.WidthInBytes, flat.Height), (32, 4));
        let full = params_3d(&copy, &src, &dst);
        assert_eq!((full.srcZ, full.srcHeight), (1, 8));
        assert_eq!((full.dstZ, full.dstHeight), (0, 16));
        assert_eq!(full.Depth, 2);
        assert!(!copy.is_2d());
    }

    #[test]
    fn node_sides_are_unified_addresses_checked_against_both_shapes() {
        let shape = Shape::Linear {
            len: 64 * 4 * 2,
            pitch: 64,
            rows: 4,
            element: 4,
        };
        let src = NodeSide(Side::linear(Memory::Unified(0x1000), shape));
        let dst = NodeSide(Side::linear(Memory::Unified(0x9000), shape));
        let copy = Copy3d::boxed(32, 2, 2).from_offset(32, 2, 0);
        let params = node_description(&copy, &src, &dst).unwrap();
        assert_eq!(params.srcMemoryType, CUmemorytype::CU_MEMORYTYPE_UNIFIED);
        assert_eq!(params.dstMemoryType, CUmemorytype::CU_MEMORYTYPE_UNIFIED);
        assert_eq!((params.srcDevice, params.dstDevice), (0x1000, 0x9000));
        assert_eq!(
            (params.srcXInBytes, params.srcY, params.srcHeight),
            (32, 2, 4)
        );
        assert_eq!(
            (params.WidthInBytes, params.Height, params.Depth),
            (32, 2, 2)
        );
        let past = node_description(&Copy3d::boxed(32, 2, 3), &src, &dst).unwrap_err();
        assert!(past.to_string().contains("source"), "{past}");
        let empty = node_description(&Copy3d::boxed(0, 2, 2), &src, &dst).unwrap_err();
        assert!(empty.to_string().contains("at least one byte"), "{empty}");
    }
}
