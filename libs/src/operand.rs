//! What the libraries' calls read and write: `cuda-safe`'s buffers and views of `T`s
//! ([`Input`], [`Output`]), seen as [`Operand`]s (address, length, stream). cuBLAS's, cuFFT's
//! and cuSOLVER's calls take them; their streams are ordered with the call's as a kernel launch orders
//! its buffers.

use bytemuck::Pod;

use cuda_safe::Stream;
use cuda_safe::{Buffer, DeviceSlice, DeviceSliceMut};
use cuda_safe::{Error, Result};

/// Device memory a call reads or writes: its address, its length in elements, and the stream
/// its buffer is ordered on.
#[derive(Debug, Clone, Copy)]
pub struct Operand<'a> {
    ptr: u64,
    len: usize,
    stream: &'a Stream,
}

impl<'a> Operand<'a> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn as_raw(&self) -> u64 {
        self.ptr
    }

    /// The stream its buffer is ordered on.
    pub fn stream(&self) -> &'a Stream {
        self.stream
    }

    /// The address as the libraries' `const void *`.
    #[cfg(feature = "blas")]
    pub(crate) fn ptr(&self) -> *const std::ffi::c_void {
        self.ptr as *const std::ffi::c_void
    }

    /// The address as the libraries' `void *`.
    pub(crate) fn ptr_mut(&self) -> *mut std::ffi::c_void {
        self.ptr as *mut std::ffi::c_void
    }

    /// The address as a typed pointer (cuSOLVER's legacy API's `float *`, `int64_t *`).
    #[cfg(feature = "solver")]
    pub(crate) fn typed<U>(&self) -> *mut U {
        self.ptr as *mut U
    }
}

/// Keeps [`Input`] and [`Output`] to `cuda-safe`'s memory types: an operand's length counts
/// elements of the `T` it was made for, so an outside implementation returning another type's
/// length would let a library read or write past the memory.
mod sealed {
    use cuda_safe::{Buffer, DeviceSlice, DeviceSliceMut};

    pub trait Input<T> {}

    impl<T: bytemuck::Pod> Input<T> for DeviceSlice<'_, T> {}
    impl<T: bytemuck::Pod> Input<T> for DeviceSliceMut<'_, T> {}
    impl<T: bytemuck::Pod> Input<T> for Buffer {}

    pub trait Output<T> {}

    impl<T: bytemuck::Pod> Output<T> for DeviceSliceMut<'_, T> {}
    impl<T: bytemuck::Pod> Output<T> for Buffer {}
}

/// Memory a call reads: a [`DeviceSlice`], a [`DeviceSliceMut`] or a [`Buffer`] of `T`s (whose
/// byte size must hold whole, aligned elements). Its stream orders it as a kernel launch orders
/// its buffers: the call waits for the stream's queued work, and the stream's later work (the
/// buffer's free) waits for the call. The trait is sealed.
pub trait Input<T: Pod>: sealed::Input<T> {
    /// The operand the call reads.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a buffer that does not hold whole, aligned `T`s, or
    /// that the GPU cannot reach.
    fn operand(&self) -> Result<Operand<'_>>;
}

/// Memory a call writes (and may read): a [`DeviceSliceMut`] or a [`Buffer`] (sealed, as
/// [`Input`]).
pub trait Output<T: Pod>: Input<T> + sealed::Output<T> {
    /// The operand the call writes.
    ///
    /// # Errors
    ///
    /// As [`Input::operand`].
    fn operand_mut(&mut self) -> Result<Operand<'_>>;
}

impl<T: Pod> Input<T> for DeviceSlice<'_, T> {
    #[inline]
    fn operand(&self) -> Result<Operand<'_>> {
        Ok(Operand {
            ptr: self.as_raw(),
            len: self.len(),
            stream: self.stream(),
        })
    }
}

impl<T: Pod> Input<T> for DeviceSliceMut<'_, T> {
    #[inline]
    fn operand(&self) -> Result<Operand<'_>> {
        Ok(Operand {
            ptr: self.as_raw(),
            len: self.len(),
            stream: self.stream(),
        })
    }
}

impl<T: Pod> Output<T> for DeviceSliceMut<'_, T> {
    #[inline]
    fn operand_mut(&mut self) -> Result<Operand<'_>> {
        Input::<T>::operand(self)
    }
}

impl<T: Pod> Input<T> for Buffer {
    #[inline]
    fn operand(&self) -> Result<Operand<'_>> {
        if !self.is_device_accessible() {
            return Err(Error::invalid_argument(
                "the libraries work on memory the GPU can reach; this buffer's cannot",
            ));
        }
        let len = self.as_slice::<T>()?.len();
        Ok(Operand {
            ptr: self.as_raw(),
            len,
            stream: self.stream(),
        })
    }
}

impl<T: Pod> Output<T> for Buffer {
    #[inline]
    fn operand_mut(&mut self) -> Result<Operand<'_>> {
        Input::<T>::operand(self)
    }
}
