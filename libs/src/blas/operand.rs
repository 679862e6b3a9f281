//! What the BLAS calls read and write: `cuda-safe`'s buffers and views of `T`s ([`Input`],
//! [`Output`]), seen as [`Operand`]s (address, length, stream), the scalars alpha and beta in
//! host or device memory ([`Scalar`], [`Scalars`]), and the cross-stream order every call
//! keeps.

use bytemuck::Pod;

use cublas_sys::cublasPointerMode_t;
use cuda_safe::Stream;
use cuda_safe::{Buffer, DeviceSlice, DeviceSliceMut};
use cuda_safe::{Error, Result};

/// The workspace [`Blas::new`](super::Blas::new) and [`Matmul::new`](super::Matmul::new)
/// take: 32 MiB, what cuBLAS's documentation recommends for Hopper and later GPUs (4 MiB
/// serve older ones).
pub const DEFAULT_WORKSPACE: usize = 32 << 20;

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
    pub(crate) fn ptr(&self) -> *const std::ffi::c_void {
        self.ptr as *const std::ffi::c_void
    }

    /// The address as the libraries' `void *`.
    pub(crate) fn ptr_mut(&self) -> *mut std::ffi::c_void {
        self.ptr as *mut std::ffi::c_void
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
                "cuBLAS and cuRAND work on memory the GPU can reach; this buffer's cannot",
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

/// A scalar (alpha, beta) a call reads: a host value, or the first element of device memory
/// (read when the call runs, so it can change between replays of a graph). A call takes all
/// its scalars from one place: cuBLAS's pointer mode is one per handle.
#[derive(Debug, Clone, Copy)]
pub enum Scalar<'a, S> {
    /// A value on the host, read when the call is made.
    Host(S),
    /// The first element of device memory, read when the call runs on the GPU.
    Device(DeviceSlice<'a, S>),
}

impl<S: Pod> From<S> for Scalar<'_, S> {
    fn from(value: S) -> Self {
        Self::Host(value)
    }
}

impl<'a, S: Pod> From<DeviceSlice<'a, S>> for Scalar<'a, S> {
    fn from(slice: DeviceSlice<'a, S>) -> Self {
        Self::Device(slice)
    }
}

/// Where a call's scalars live, as cuBLAS's pointer mode says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PointerMode {
    /// Host memory (`CUBLAS_POINTER_MODE_HOST`).
    Host,
    /// Device memory (`CUBLAS_POINTER_MODE_DEVICE`).
    Device,
}

impl PointerMode {
    /// The `cublasPointerMode_t`.
    pub(crate) const fn as_raw(self) -> cublasPointerMode_t {
        match self {
            Self::Host => cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST,
            Self::Device => cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE,
        }
    }
}

impl<S: Pod> Scalar<'_, S> {
    /// Where the scalar lives.
    pub(crate) fn mode(&self) -> PointerMode {
        match self {
            Self::Host(_) => PointerMode::Host,
            Self::Device(_) => PointerMode::Device,
        }
    }

    /// The address the library reads, after checking a device scalar holds an element; a host
    /// value's address is `value`'s, which the caller keeps alive for the call.
    pub(crate) fn address(&self, what: &str) -> Result<*const std::ffi::c_void> {
        match self {
            Self::Host(value) => Ok(std::ptr::from_ref(value).cast()),
            Self::Device(slice) if slice.is_empty() => Err(Error::invalid_argument(format!(
                "the device scalar {what} holds no element"
            ))),
            Self::Device(slice) => Ok(slice.as_raw() as *const std::ffi::c_void),
        }
    }

    /// The stream a device scalar's buffer is ordered on.
    pub(crate) fn stream(&self) -> Option<&Stream> {
        match self {
            Self::Host(_) => None,
            Self::Device(slice) => Some(slice.stream()),
        }
    }
}

/// The scalars alpha and beta of a GEMM or GEMV (`C = alpha op(A) op(B) + beta C`), both on
/// the host or both in device memory.
#[derive(Debug, Clone, Copy)]
pub struct Scalars<'a, S> {
    alpha: Scalar<'a, S>,
    beta: Scalar<'a, S>,
}

impl<'a, S: Pod> Scalars<'a, S> {
    /// Host values.
    pub fn host(alpha: S, beta: S) -> Self {
        Self {
            alpha: Scalar::Host(alpha),
            beta: Scalar::Host(beta),
        }
    }

    /// The first elements of two device views, read when the call runs.
    pub fn device(alpha: DeviceSlice<'a, S>, beta: DeviceSlice<'a, S>) -> Self {
        Self {
            alpha: Scalar::Device(alpha),
            beta: Scalar::Device(beta),
        }
    }

    /// Where both live.
    pub(crate) fn mode(&self) -> PointerMode {
        self.alpha.mode()
    }

    /// alpha's and beta's addresses (see [`Scalar::address`]).
    pub(crate) fn addresses(&self) -> Result<(*const std::ffi::c_void, *const std::ffi::c_void)> {
        Ok((self.alpha.address("alpha")?, self.beta.address("beta")?))
    }

    /// The streams of device scalars' buffers.
    pub(crate) fn streams(&self) -> [Option<&Stream>; 2] {
        [self.alpha.stream(), self.beta.stream()]
    }
}
