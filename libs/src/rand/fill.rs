//! What a generator fills ([`Fill`]: `cuda-safe`'s buffers and views), with what ([`Real`]:
//! the f32 and f64 distributions), and the checks cuRAND would otherwise fail on.

use bytemuck::Pod;

use super::{Generator, MAX_POISSON_LAMBDA};
use crate::operand::{Operand, Output};
use crate::rand::error::curand;
use cuda_safe::ordering;
use cuda_safe::{Buffer, DeviceSliceMut};
use cuda_safe::{Error, Result};
use curand_sys::{Curand, curandGenerator_t};

/// Keeps [`Fill`] and [`Real`] to the types this module knows.
mod sealed {
    use cuda_safe::{Buffer, DeviceSliceMut};

    pub trait Fill<T> {}

    impl<T: bytemuck::Pod> Fill<T> for DeviceSliceMut<'_, T> {}
    impl<T: bytemuck::Pod> Fill<T> for Buffer {}

    use cuda_safe::Result;
    use curand_sys::{Curand, curandGenerator_t};

    /// The distributions' calls of one floating-point type.
    pub trait Real: Sized {
        /// Uniform in (0, 1].
        ///
        /// # Safety
        ///
        /// A live generator, `n` elements of this type in device memory at `out`.
        unsafe fn uniform(
            curand: &Curand,
            raw: curandGenerator_t,
            out: u64,
            n: usize,
        ) -> Result<()>;

        /// Normal.
        ///
        /// # Safety
        ///
        /// As [`uniform`](Self::uniform).
        unsafe fn normal(
            curand: &Curand,
            raw: curandGenerator_t,
            out: u64,
            n: usize,
            mean: Self,
            stddev: Self,
        ) -> Result<()>;

        /// Log-normal.
        ///
        /// # Safety
        ///
        /// As [`uniform`](Self::uniform).
        unsafe fn log_normal(
            curand: &Curand,
            raw: curandGenerator_t,
            out: u64,
            n: usize,
            mean: Self,
            stddev: Self,
        ) -> Result<()>;
    }
}

/// Device memory a generator fills with `T`s: a [`DeviceSliceMut`] or a [`Buffer`] (whose
/// byte size must hold whole, aligned `T`s) that the generator's device can reach, as the
/// other libraries' outputs. Sealed.
pub trait Fill<T: Pod>: sealed::Fill<T> {
    /// The memory filled: its address, its number of elements, its stream and device.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a buffer that does not hold whole, aligned `T`s, or
    /// memory that no GPU can reach (its resource says so).
    fn target(&mut self) -> Result<Operand<'_>>;
}

impl<T: Pod> Fill<T> for DeviceSliceMut<'_, T> {
    #[inline]
    fn target(&mut self) -> Result<Operand<'_>> {
        Output::<T>::operand_mut(self)
    }
}

impl<T: Pod> Fill<T> for Buffer {
    #[inline]
    fn target(&mut self) -> Result<Operand<'_>> {
        Output::<T>::operand_mut(self)
    }
}

/// A floating-point type cuRAND's distributions fill: f32 (`curandGenerateUniform` and the
/// others) or f64 (`curandGenerateUniformDouble` and the others). Sealed.
pub trait Real: Pod + sealed::Real {}

impl Real for f32 {}
impl Real for f64 {}

macro_rules! reals {
    ($($real:ty => $uniform:ident, $normal:ident, $log_normal:ident;)*) => {$(
        impl sealed::Real for $real {
            unsafe fn uniform(
                curand: &Curand,
                raw: curandGenerator_t,
                out: u64,
                n: usize,
            ) -> Result<()> {
                // SAFETY: the caller's: a live generator, `n` elements of device memory at `out`.
                unsafe { curand!(curand, $uniform(raw, out as *mut $real, n)) }
            }

            unsafe fn normal(
                curand: &Curand,
                raw: curandGenerator_t,
                out: u64,
                n: usize,
                mean: Self,
                stddev: Self,
            ) -> Result<()> {
                // SAFETY: as in `uniform`.
                unsafe { curand!(curand, $normal(raw, out as *mut $real, n, mean, stddev)) }
            }

            unsafe fn log_normal(
                curand: &Curand,
                raw: curandGenerator_t,
                out: u64,
                n: usize,
                mean: Self,
                stddev: Self,
            ) -> Result<()> {
                // SAFETY: as in `uniform`.
                unsafe { curand!(curand, $log_normal(raw, out as *mut $real, n, mean, stddev)) }
            }
        }
    )*};
}

reals! {
    f32 => curandGenerateUniform, curandGenerateNormal, curandGenerateLogNormal;
    f64 => curandGenerateUniformDouble, curandGenerateNormalDouble, curandGenerateLogNormalDouble;
}

/// What a generation needs of its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Any number (uniform, bits, Poisson on a pseudorandom generator).
    Any,
    /// Pairs from a pseudorandom generator (Box-Muller: normal, log-normal).
    Pairs,
}

impl Generator {
    /// Checks the length of `target` for cuRAND (whole points of a quasirandom generator's
    /// dimensions, pairs for a pseudorandom generator's normal numbers) and that the
    /// generator's device reaches it, and queues `generate` ordered with the memory's stream.
    #[inline]
    fn generate(
        &mut self,
        target: Operand<'_>,
        shape: Shape,
        generate: impl FnOnce(&Curand, curandGenerator_t) -> Result<()>,
    ) -> Result<()> {
        let inner = &*self.inner;
        let len = target.len();
        if inner.kind.is_quasi() {
            let dimensions = inner.dimensions as usize;
            if !len.is_multiple_of(dimensions) {
                return Err(Error::invalid_argument(format!(
                    "a {:?} generator of {dimensions} dimensions fills whole points: {len} is \
                     not a multiple of {dimensions}",
                    inner.kind
                )));
            }
        } else if shape == Shape::Pairs && !len.is_multiple_of(2) {
            return Err(Error::invalid_argument(format!(
                "normal numbers from a pseudorandom generator come in pairs: {len} is odd"
            )));
        }
        if len == 0 {
            return Ok(());
        }
        let stream = target.on(&inner.stream)?;
        let (curand, raw) = (inner.curand, inner.raw);
        ordering::ordered(&inner.stream, [Some(stream)], || generate(curand, raw))
    }

    /// Fills `out` with numbers uniform in (0, 1].
    ///
    #[doc = curand_sys::api_doc!(curandGenerateUniform)]
    #[doc = curand_sys::api_doc!(curandGenerateUniformDouble)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a length a quasirandom generator cannot fill (not whole
    /// points); cuRAND's error.
    #[doc(alias = "curandGenerateUniform", alias = "curandGenerateUniformDouble")]
    pub fn uniform<T: Real>(&mut self, out: &mut impl Fill<T>) -> Result<()> {
        let out = out.target()?;
        let (ptr, len) = (out.as_raw(), out.len());
        self.generate(out, Shape::Any, |curand, raw| {
            // SAFETY: a live generator; `len` elements of device memory at `ptr`, borrowed
            // exclusively, ordered with the generator's stream.
            unsafe { <T as sealed::Real>::uniform(curand, raw, ptr, len) }
        })
    }

    /// Fills `out` with normal numbers of `mean` and `stddev`.
    ///
    #[doc = curand_sys::api_doc!(curandGenerateNormal)]
    #[doc = curand_sys::api_doc!(curandGenerateNormalDouble)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an odd length from a pseudorandom generator (they come in
    /// pairs), or one a quasirandom generator cannot fill; cuRAND's error.
    #[doc(alias = "curandGenerateNormal", alias = "curandGenerateNormalDouble")]
    pub fn normal<T: Real>(&mut self, out: &mut impl Fill<T>, mean: T, stddev: T) -> Result<()> {
        let out = out.target()?;
        let (ptr, len) = (out.as_raw(), out.len());
        self.generate(out, Shape::Pairs, |curand, raw| {
            // SAFETY: as in `uniform`.
            unsafe { <T as sealed::Real>::normal(curand, raw, ptr, len, mean, stddev) }
        })
    }

    /// Fills `out` with log-normal numbers: `exp` of normal numbers of `mean` and `stddev`.
    ///
    #[doc = curand_sys::api_doc!(curandGenerateLogNormal)]
    #[doc = curand_sys::api_doc!(curandGenerateLogNormalDouble)]
    /// # Errors
    ///
    /// As [`normal`](Self::normal).
    #[doc(
        alias = "curandGenerateLogNormal",
        alias = "curandGenerateLogNormalDouble"
    )]
    pub fn log_normal<T: Real>(
        &mut self,
        out: &mut impl Fill<T>,
        mean: T,
        stddev: T,
    ) -> Result<()> {
        let out = out.target()?;
        let (ptr, len) = (out.as_raw(), out.len());
        self.generate(out, Shape::Pairs, |curand, raw| {
            // SAFETY: as in `uniform`.
            unsafe { <T as sealed::Real>::log_normal(curand, raw, ptr, len, mean, stddev) }
        })
    }

    /// Fills `out` with Poisson numbers of mean `lambda` (more than 0, at most
    /// [`MAX_POISSON_LAMBDA`]). cuRAND builds the distribution's tables for the call, with an
    /// allocation of its own: keep it out of graph captures.
    ///
    #[doc = curand_sys::api_doc!(curandGeneratePoisson)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a lambda out of range, or a length a quasirandom
    /// generator cannot fill; cuRAND's error.
    #[doc(alias = "curandGeneratePoisson")]
    pub fn poisson(&mut self, out: &mut impl Fill<u32>, lambda: f64) -> Result<()> {
        if !(lambda > 0.0 && lambda <= MAX_POISSON_LAMBDA) {
            return Err(Error::invalid_argument(format!(
                "a Poisson lambda must be more than 0 and at most {MAX_POISSON_LAMBDA}, not \
                 {lambda}"
            )));
        }
        let out = out.target()?;
        let (ptr, len) = (out.as_raw(), out.len());
        self.generate(out, Shape::Any, |curand, raw| {
            // SAFETY: as in `uniform`.
            unsafe {
                curand!(
                    curand,
                    curandGeneratePoisson(raw, ptr as *mut u32, len, lambda)
                )
            }
        })
    }

    /// Fills `out` with 32-bit numbers, every bit random (any generator but the 64-bit Sobol
    /// ones).
    ///
    #[doc = curand_sys::api_doc!(curandGenerate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a 64-bit generator, or a length a quasirandom generator
    /// cannot fill; cuRAND's error.
    #[doc(alias = "curandGenerate")]
    pub fn bits(&mut self, out: &mut impl Fill<u32>) -> Result<()> {
        if self.inner.kind.is_64_bit() {
            return Err(Error::invalid_argument(
                "a 64-bit Sobol generator makes 64-bit numbers: use bits64",
            ));
        }
        let out = out.target()?;
        let (ptr, len) = (out.as_raw(), out.len());
        self.generate(out, Shape::Any, |curand, raw| {
            // SAFETY: as in `uniform`.
            unsafe { curand!(curand, curandGenerate(raw, ptr as *mut u32, len)) }
        })
    }

    /// Fills `out` with 64-bit numbers (64-bit Sobol generators only).
    ///
    #[doc = curand_sys::api_doc!(curandGenerateLongLong)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for any other generator, or a length it cannot fill (whole
    /// points); cuRAND's error.
    #[doc(alias = "curandGenerateLongLong")]
    pub fn bits64(&mut self, out: &mut impl Fill<u64>) -> Result<()> {
        if !self.inner.kind.is_64_bit() {
            return Err(Error::invalid_argument(format!(
                "only a 64-bit Sobol generator makes 64-bit numbers, not {:?}",
                self.inner.kind
            )));
        }
        let out = out.target()?;
        let (ptr, len) = (out.as_raw(), out.len());
        self.generate(out, Shape::Any, |curand, raw| {
            // SAFETY: as in `uniform`.
            unsafe { curand!(curand, curandGenerateLongLong(raw, ptr as *mut u64, len)) }
        })
    }
}
