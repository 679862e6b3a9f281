//! The scalars alpha and beta of the BLAS calls, in host or device memory ([`Scalar`],
//! [`Scalars`]), cuBLAS's pointer mode, and the workspace size; the operands themselves are
//! the crate's ([`Input`], [`Output`], [`Operand`]).

use bytemuck::Pod;

use cublas_sys::cublasPointerMode_t;
use cuda_safe::DeviceSlice;
use cuda_safe::Stream;
use cuda_safe::{Error, Result};

pub use crate::operand::{Input, Operand, Output};

/// The workspace [`Blas::new`](super::Blas::new) and [`Matmul::new`](super::Matmul::new)
/// take: 32 MiB, what cuBLAS's documentation recommends for Hopper and later GPUs (4 MiB
/// serve older ones).
pub const DEFAULT_WORKSPACE: usize = 32 << 20;

/// A scalar (alpha, beta) a call reads: a host value, or the first element of device memory
/// (read when the call runs, so it can change between replays of a graph). A call takes all
/// its scalars from one place: cuBLAS's pointer mode is one per handle.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
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

    /// The stream a device scalar's buffer is ordered on, for a call on `stream` (whose
    /// device must reach the memory: [`Operand::on`]).
    pub(crate) fn stream(&self, stream: &Stream) -> Result<Option<&Stream>> {
        match self {
            Self::Host(_) => Ok(None),
            Self::Device(slice) => Ok(Some(Input::<S>::operand(slice)?.on(stream)?)),
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

    /// The streams of device scalars' buffers, for a call on `stream` (see
    /// [`Scalar::stream`]).
    pub(crate) fn streams(&self, stream: &Stream) -> Result<[Option<&Stream>; 2]> {
        Ok([self.alpha.stream(stream)?, self.beta.stream(stream)?])
    }
}
