//! The matrix-vector product (GEMV) and the vector operations AXPY, SCAL, DOT and NRM2, the
//! latter four through cuBLAS's mixed-precision `...Ex` functions (f32, f64, f16, bf16).

use std::fmt;

use super::Blas;
use crate::blas::elements::{BlasElement, VectorElement};
use crate::blas::error::cublas;
use crate::blas::layout::{Stored, Transpose, c_int, holds, vector_extent};
use crate::blas::operand::{Input, Output, PointerMode, Scalar, Scalars};
use cublas_sys::{Cublas, cublasHandle_t};
use cuda_safe::Result;
use cuda_safe::ordering::ordered;

/// The vectors of an AXPY, SCAL, DOT or NRM2: `n` elements, `x`'s `inc_x` apart and `y`'s
/// `inc_y` apart (1, contiguous, unless set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Vector {
    n: usize,
    inc_x: usize,
    inc_y: usize,
}

impl Vector {
    /// `n` contiguous elements.
    pub const fn new(n: usize) -> Self {
        Self {
            n,
            inc_x: 1,
            inc_y: 1,
        }
    }

    /// `x`'s elements `inc` apart.
    pub const fn inc_x(mut self, inc: usize) -> Self {
        self.inc_x = inc;
        self
    }

    /// `y`'s elements `inc` apart.
    pub const fn inc_y(mut self, inc: usize) -> Self {
        self.inc_y = inc;
        self
    }

    /// The checked `n`, `incx`, `incy` as `int`s, and the spans of x and y.
    fn call(&self) -> Result<([i32; 3], [usize; 2])> {
        let spans = [
            vector_extent("x", self.n, self.inc_x)?,
            vector_extent("y", self.n, self.inc_y)?,
        ];
        Ok((
            [
                c_int("n", self.n)?,
                c_int("inc_x", self.inc_x)?,
                c_int("inc_y", self.inc_y)?,
            ],
            spans,
        ))
    }
}

impl fmt::Display for Vector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} elements", self.n)
    }
}

/// The shape of a GEMV, `y = alpha op(A) x + beta y`: A is stored `m x n` (column-major unless
/// [`row_major`](Self::row_major)); x has `n` elements and y `m` (the other way round when A is
/// transposed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gemv {
    m: usize,
    n: usize,
    trans: Transpose,
    lda: Option<usize>,
    row_major: bool,
    vector: Vector,
}

impl Gemv {
    /// A column-major `m x n` A, as stored, vectors contiguous.
    pub const fn new(m: usize, n: usize) -> Self {
        Self {
            m,
            n,
            trans: Transpose::No,
            lda: None,
            row_major: false,
            vector: Vector::new(0),
        }
    }

    /// A row-major `m x n` A (row stride `lda >= n`).
    pub const fn row_major(m: usize, n: usize) -> Self {
        let mut shape = Self::new(m, n);
        shape.row_major = true;
        shape
    }

    /// op(A) = Aᵀ.
    pub const fn transpose(mut self) -> Self {
        self.trans = match self.trans {
            Transpose::No => Transpose::Yes,
            Transpose::Yes => Transpose::No,
        };
        self
    }

    /// A's leading dimension.
    pub const fn lda(mut self, lda: usize) -> Self {
        self.lda = Some(lda);
        self
    }

    /// x's elements `inc` apart.
    pub const fn inc_x(mut self, inc: usize) -> Self {
        self.vector.inc_x = inc;
        self
    }

    /// y's elements `inc` apart.
    pub const fn inc_y(mut self, inc: usize) -> Self {
        self.vector.inc_y = inc;
        self
    }
}

/// Keeps [`GemvElement`] to the types whose GEMV this module calls.
mod sealed {
    use cublas_sys::{Cublas, cublasHandle_t, cublasOperation_t};
    use cuda_safe::Result;
    use std::ffi::c_void;

    /// The arguments of one column-major GEMV, checked.
    #[derive(Debug, Clone, Copy)]
    pub struct GemvArgs {
        pub trans: cublasOperation_t,
        pub m: i32,
        pub n: i32,
        pub lda: i32,
        pub incx: i32,
        pub incy: i32,
    }

    pub trait Gemv {
        /// The typed GEMV on `raw`.
        ///
        /// # Safety
        ///
        /// As the C function: valid handle, device memory for `a`, `x`, `y` spanning what
        /// `args` says, scalars of the handle's pointer mode.
        #[allow(clippy::too_many_arguments)]
        unsafe fn gemv(
            cublas: &Cublas,
            raw: cublasHandle_t,
            args: GemvArgs,
            alpha: *const c_void,
            a: *const c_void,
            x: *const c_void,
            beta: *const c_void,
            y: *mut c_void,
        ) -> Result<()>;
    }
}

/// An element type of [`Blas::gemv`]: f32 (`cublasSgemv`) and f64 (`cublasDgemv`).
pub trait GemvElement: BlasElement + sealed::Gemv {}

macro_rules! gemv_elements {
    ($($rust:ty => $function:ident;)*) => {$(
        impl sealed::Gemv for $rust {
            unsafe fn gemv(
                cublas: &Cublas,
                raw: cublasHandle_t,
                args: GemvArgs,
                alpha: *const std::ffi::c_void,
                a: *const std::ffi::c_void,
                x: *const std::ffi::c_void,
                beta: *const std::ffi::c_void,
                y: *mut std::ffi::c_void,
            ) -> Result<()> {
                // SAFETY: the caller's contract, with the pointers of this element type.
                unsafe {
                    cublas!(
                        cublas,
                        $function(
                            raw,
                            args.trans,
                            args.m,
                            args.n,
                            alpha.cast(),
                            a.cast(),
                            args.lda,
                            x.cast(),
                            args.incx,
                            beta.cast(),
                            y.cast(),
                            args.incy
                        )
                    )
                }
            }
        }

        impl GemvElement for $rust {}
    )*};
}

use sealed::GemvArgs;

gemv_elements! {
    f32 => cublasSgemv_v2;
    f64 => cublasDgemv_v2;
}

impl Blas {
    /// `y = alpha op(A) x + beta y` (see [`Gemv`]).
    ///
    #[doc = cublas_sys::api_doc!(cublasSgemv_v2)]
    #[doc = cublas_sys::api_doc!(cublasDgemv_v2)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument) for a dimension, leading
    /// dimension or increment cuBLAS cannot take, or memory holding fewer elements than the
    /// shape spans; cuBLAS's error.
    #[doc(alias = "cublasSgemv_v2", alias = "cublasDgemv_v2")]
    pub fn gemv<T: GemvElement>(
        &self,
        shape: &Gemv,
        scalars: Scalars<'_, T>,
        a: &impl Input<T>,
        x: &impl Input<T>,
        y: &mut impl Output<T>,
    ) -> Result<()> {
        let stored = Stored::new("A", (shape.m, shape.n), shape.lda, shape.row_major);
        let extent = stored.extent()?;
        let (x_len, y_len) = match shape.trans {
            Transpose::No => (shape.n, shape.m),
            Transpose::Yes => (shape.m, shape.n),
        };
        let x_span = vector_extent("x", x_len, shape.vector.inc_x)?;
        let y_span = vector_extent("y", y_len, shape.vector.inc_y)?;
        let (a, x, y) = (a.operand()?, x.operand()?, y.operand_mut()?);
        holds(&stored, extent, a.len())?;
        holds(&"x", x_span, x.len())?;
        holds(&"y", y_span, y.len())?;
        // A row-major A is the column-major n x m Aᵀ: the call transposes it back.
        let (rows, cols, trans) = if shape.row_major {
            (shape.n, shape.m, shape.trans.flipped().as_raw())
        } else {
            (shape.m, shape.n, shape.trans.as_raw())
        };
        let args = GemvArgs {
            trans,
            m: c_int("m", rows)?,
            n: c_int("n", cols)?,
            lda: c_int("lda", stored.ld)?,
            incx: c_int("inc_x", shape.vector.inc_x)?,
            incy: c_int("inc_y", shape.vector.inc_y)?,
        };
        let (alpha, beta) = scalars.addresses()?;
        self.set_mode(scalars.mode())?;
        let (library, raw) = self.parts();
        let [alpha_stream, beta_stream] = scalars.streams(self.stream())?;
        let streams = [
            Some(a.on(self.stream())?),
            Some(x.on(self.stream())?),
            Some(y.on(self.stream())?),
            alpha_stream,
            beta_stream,
        ];
        ordered(self.stream(), streams, || {
            // SAFETY: A, x and y are device memory spanning what the checked shape says, y
            // borrowed exclusively; the scalars are of the pointer mode just set.
            unsafe {
                T::gemv(
                    library,
                    raw,
                    args,
                    alpha,
                    a.ptr(),
                    x.ptr(),
                    beta,
                    y.ptr_mut(),
                )
            }
        })
    }

    /// `y = alpha x + y`.
    ///
    #[doc = cublas_sys::api_doc!(cublasAxpyEx)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument) for an increment of 0, `n` or
    /// an increment past cuBLAS's `int`, or memory holding fewer elements than the vectors
    /// span; cuBLAS's error.
    #[doc(alias = "cublasAxpyEx")]
    pub fn axpy<'s, T: VectorElement>(
        &self,
        vector: &Vector,
        alpha: impl Into<Scalar<'s, T::Scalar>>,
        x: &impl Input<T>,
        y: &mut impl Output<T>,
    ) -> Result<()> {
        let ([n, incx, incy], [x_span, y_span]) = vector.call()?;
        let (x, y) = (x.operand()?, y.operand_mut()?);
        holds(&"x", x_span, x.len())?;
        holds(&"y", y_span, y.len())?;
        let alpha = alpha.into();
        let alpha_ptr = alpha.address("alpha")?;
        self.set_mode(alpha.mode())?;
        let (library, raw) = self.parts();
        let on = self.stream();
        let streams = [Some(x.on(on)?), Some(y.on(on)?), alpha.stream(on)?];
        ordered(self.stream(), streams, || {
            // SAFETY: x and y are device memory spanning the checked vectors, y borrowed
            // exclusively; alpha is of the execution type and the pointer mode just set.
            unsafe {
                cublas!(
                    library,
                    cublasAxpyEx(
                        raw,
                        n,
                        alpha_ptr,
                        T::EXECUTION,
                        x.ptr(),
                        T::DATA_TYPE,
                        incx,
                        y.ptr_mut(),
                        T::DATA_TYPE,
                        incy,
                        T::EXECUTION
                    )
                )
            }
        })
    }

    /// `x = alpha x`.
    ///
    #[doc = cublas_sys::api_doc!(cublasScalEx)]
    /// # Errors
    ///
    /// As [`axpy`](Self::axpy).
    #[doc(alias = "cublasScalEx")]
    pub fn scal<'s, T: VectorElement>(
        &self,
        vector: &Vector,
        alpha: impl Into<Scalar<'s, T::Scalar>>,
        x: &mut impl Output<T>,
    ) -> Result<()> {
        let ([n, incx, _], [x_span, _]) = vector.call()?;
        let x = x.operand_mut()?;
        holds(&"x", x_span, x.len())?;
        let alpha = alpha.into();
        let alpha_ptr = alpha.address("alpha")?;
        self.set_mode(alpha.mode())?;
        let (library, raw) = self.parts();
        let streams = [Some(x.on(self.stream())?), alpha.stream(self.stream())?];
        ordered(self.stream(), streams, || {
            // SAFETY: x is device memory spanning the checked vector, borrowed exclusively;
            // alpha is of the execution type and the pointer mode just set.
            unsafe {
                cublas!(
                    library,
                    cublasScalEx(
                        raw,
                        n,
                        alpha_ptr,
                        T::EXECUTION,
                        x.ptr_mut(),
                        T::DATA_TYPE,
                        incx,
                        T::EXECUTION
                    )
                )
            }
        })
    }

    /// The dot product of x and y, returned to the host: cuBLAS waits for it (use
    /// [`dot_into`](Self::dot_into) to keep it on the device and the stream running).
    ///
    #[doc = cublas_sys::api_doc!(cublasDotEx)]
    /// # Errors
    ///
    /// As [`axpy`](Self::axpy).
    #[doc(alias = "cublasDotEx")]
    pub fn dot<T: VectorElement>(
        &self,
        vector: &Vector,
        x: &impl Input<T>,
        y: &impl Input<T>,
    ) -> Result<T> {
        let mut result = T::zeroed();
        self.dot_to(vector, x, y, Target::Host(&mut result))?;
        Ok(result)
    }

    /// The dot product of x and y, written to `result`'s first element when the call runs.
    ///
    #[doc = cublas_sys::api_doc!(cublasDotEx)]
    /// # Errors
    ///
    /// As [`axpy`](Self::axpy), and for an empty `result`.
    #[doc(alias = "cublasDotEx")]
    pub fn dot_into<T: VectorElement>(
        &self,
        vector: &Vector,
        x: &impl Input<T>,
        y: &impl Input<T>,
        result: &mut impl Output<T>,
    ) -> Result<()> {
        self.dot_to(vector, x, y, Target::Device(result.operand_mut()?))
    }

    fn dot_to<T: VectorElement>(
        &self,
        vector: &Vector,
        x: &impl Input<T>,
        y: &impl Input<T>,
        result: Target<'_, '_, T>,
    ) -> Result<()> {
        let ([n, incx, incy], [x_span, y_span]) = vector.call()?;
        let (x, y) = (x.operand()?, y.operand()?);
        holds(&"x", x_span, x.len())?;
        holds(&"y", y_span, y.len())?;
        let mode = result.mode();
        let (result_ptr, result_stream) = result.address(self.stream())?;
        self.set_mode(mode)?;
        let (library, raw) = self.parts();
        let streams = [
            Some(x.on(self.stream())?),
            Some(y.on(self.stream())?),
            result_stream,
        ];
        ordered(self.stream(), streams, || {
            // SAFETY: x and y are device memory spanning the checked vectors; the result is a
            // place for one element of the pointer mode just set (a host one lives until
            // cuBLAS, which waits for a host result, returns).
            unsafe {
                cublas!(
                    library,
                    cublasDotEx(
                        raw,
                        n,
                        x.ptr(),
                        T::DATA_TYPE,
                        incx,
                        y.ptr(),
                        T::DATA_TYPE,
                        incy,
                        result_ptr,
                        T::DATA_TYPE,
                        T::EXECUTION
                    )
                )
            }
        })
    }

    /// The Euclidean norm of x, returned to the host: cuBLAS waits for it.
    ///
    #[doc = cublas_sys::api_doc!(cublasNrm2Ex)]
    /// # Errors
    ///
    /// As [`axpy`](Self::axpy).
    #[doc(alias = "cublasNrm2Ex")]
    pub fn nrm2<T: VectorElement>(&self, vector: &Vector, x: &impl Input<T>) -> Result<T> {
        let mut result = T::zeroed();
        self.nrm2_to(vector, x, Target::Host(&mut result))?;
        Ok(result)
    }

    /// The Euclidean norm of x, written to `result`'s first element when the call runs.
    ///
    #[doc = cublas_sys::api_doc!(cublasNrm2Ex)]
    /// # Errors
    ///
    /// As [`dot_into`](Self::dot_into).
    #[doc(alias = "cublasNrm2Ex")]
    pub fn nrm2_into<T: VectorElement>(
        &self,
        vector: &Vector,
        x: &impl Input<T>,
        result: &mut impl Output<T>,
    ) -> Result<()> {
        self.nrm2_to(vector, x, Target::Device(result.operand_mut()?))
    }

    fn nrm2_to<T: VectorElement>(
        &self,
        vector: &Vector,
        x: &impl Input<T>,
        result: Target<'_, '_, T>,
    ) -> Result<()> {
        let ([n, incx, _], [x_span, _]) = vector.call()?;
        let x = x.operand()?;
        holds(&"x", x_span, x.len())?;
        let mode = result.mode();
        let (result_ptr, result_stream) = result.address(self.stream())?;
        self.set_mode(mode)?;
        let (library, raw) = self.parts();
        let streams = [Some(x.on(self.stream())?), result_stream];
        ordered(self.stream(), streams, || {
            // SAFETY: as in `dot_to`, for one vector.
            unsafe {
                cublas!(
                    library,
                    cublasNrm2Ex(
                        raw,
                        n,
                        x.ptr(),
                        T::DATA_TYPE,
                        incx,
                        result_ptr,
                        T::DATA_TYPE,
                        T::EXECUTION
                    )
                )
            }
        })
    }
}

/// Where a DOT or NRM2 writes its one result.
enum Target<'r, 'o, T> {
    /// A host value, written before cuBLAS returns.
    Host(&'r mut T),
    /// Device memory's first element.
    Device(crate::blas::operand::Operand<'o>),
}

impl<'o, T> Target<'_, 'o, T> {
    fn mode(&self) -> PointerMode {
        match self {
            Self::Host(_) => PointerMode::Host,
            Self::Device(_) => PointerMode::Device,
        }
    }

    /// The address written, and a device result's stream, for a call on `stream` (whose
    /// device must reach the memory).
    fn address(
        self,
        stream: &cuda_safe::Stream,
    ) -> Result<(*mut std::ffi::c_void, Option<&'o cuda_safe::Stream>)> {
        match self {
            Self::Host(value) => Ok((std::ptr::from_mut::<T>(value).cast(), None)),
            Self::Device(operand) => {
                holds(&"the result", 1, operand.len())?;
                Ok((operand.ptr_mut(), Some(operand.on(stream)?)))
            }
        }
    }
}
