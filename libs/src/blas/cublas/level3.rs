//! The GEMMs: one product, a strided batch of them, and a batch of separate matrices through
//! device arrays of pointers ([`GemmBatch`]). Each is `cublasGemmEx` or one of its batched
//! forms, for every type pair of [`GemmInput`].

use std::fmt;
use std::marker::PhantomData;

use super::Blas;
use crate::blas::elements::{BlasElement, GemmInput};
use crate::blas::error::cublas;
use crate::blas::layout::{Gemm, GemmCall, StridedBatch, c_int, holds};
use crate::blas::operand::{Input, Output, Scalars};
use cublas_sys::{cublasComputeType_t, cublasGemmAlgo_t};
use cuda_safe::Buffer;
use cuda_safe::Stream;
use cuda_safe::ordering::ordered;
use cuda_safe::{Error, Result};

impl Blas {
    /// The compute type of an `A` into `D` GEMM on this handle: TF32 for f32 when allowed.
    #[inline(always)]
    fn compute<A: GemmInput<D>, D: BlasElement>(&self) -> cublasComputeType_t {
        if A::TF32_ELIGIBLE && self.inner.tf32 {
            cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
        } else {
            A::COMPUTE
        }
    }

    /// `C = alpha op(A) op(B) + beta C` (see [`Gemm`] for the shape and the column-major
    /// convention), for every input and output type pair of [`GemmInput`]: f32, f64, f16 and
    /// bf16 (in f32 compute, with 16-bit or f32 outputs).
    ///
    /// ```no_run
    /// use cuda_safe_libs::blas::{Blas, Gemm, Scalars};
    /// use cuda_safe::Device;
    ///
    /// let device = Device::new(0)?;
    /// device.set_current()?;
    /// let stream = device.create_stream(Default::default())?;
    /// let pool = device.default_memory_resource()?;
    /// let blas = Blas::new(&stream)?;
    /// let a = pool.allocate_from_host(&[1.0f32; 64 * 32], &stream)?;
    /// let b = pool.allocate_from_host(&[2.0f32; 32 * 16], &stream)?;
    /// let mut c = pool.allocate_zeroed::<f32>(64 * 16, &stream)?;
    /// blas.gemm::<f32, f32>(&Gemm::new(64, 16, 32), Scalars::host(1.0, 0.0), &a, &b, &mut c)?;
    /// assert_eq!(c.to_vec::<f32>()?[0], 64.0);
    /// # Ok::<(), cuda_safe::Error>(())
    /// ```
    ///
    #[doc = cublas_sys::api_doc!(cublasGemmEx)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dimension or leading dimension cuBLAS cannot take, or
    /// an operand whose memory holds fewer elements than the shape spans (checked before the
    /// call); cuBLAS's error.
    #[doc(alias = "cublasGemmEx")]
    #[inline]
    pub fn gemm<A: GemmInput<D>, D: BlasElement>(
        &self,
        shape: &Gemm,
        scalars: Scalars<'_, A::Scalar>,
        a: &impl Input<A>,
        b: &impl Input<A>,
        c: &mut impl Output<D>,
    ) -> Result<()> {
        let call = shape.call()?;
        let (a, b, c) = (a.operand()?, b.operand()?, c.operand_mut()?);
        let [stored_a, stored_b, stored_c] = shape.stored();
        holds(&stored_a, call.extents[0], a.len())?;
        holds(&stored_b, call.extents[1], b.len())?;
        holds(&stored_c, call.extents[2], c.len())?;
        let (alpha, beta) = scalars.addresses()?;
        self.set_mode(scalars.mode())?;
        let (first, second) = if call.swap { (b, a) } else { (a, b) };
        let compute = self.compute::<A, D>();
        let (library, raw) = self.parts();
        let [alpha_stream, beta_stream] = scalars.streams(self.stream())?;
        let streams = [
            Some(a.on(self.stream())?),
            Some(b.on(self.stream())?),
            Some(c.on(self.stream())?),
            alpha_stream,
            beta_stream,
        ];
        ordered(self.stream(), streams, || {
            let GemmCall {
                transa,
                transb,
                m,
                n,
                k,
                lda,
                ldb,
                ldc,
                ..
            } = call;
            // SAFETY: every operand is device memory holding the elements the checked shape
            // spans, of the types named; the scalars' addresses live for the call and are of
            // the pointer mode just set; C is borrowed exclusively; the operands' streams are
            // ordered with the handle's.
            unsafe {
                cublas!(
                    library,
                    cublasGemmEx(
                        raw,
                        transa,
                        transb,
                        m,
                        n,
                        k,
                        alpha,
                        first.ptr(),
                        A::DATA_TYPE,
                        lda,
                        second.ptr(),
                        A::DATA_TYPE,
                        ldb,
                        beta,
                        c.ptr_mut(),
                        D::DATA_TYPE,
                        ldc,
                        compute,
                        cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT
                    )
                )
            }
        })
    }

    /// `batch.count` GEMMs of one shape, the i-th on the matrices `i * stride` elements into A,
    /// B and C (see [`StridedBatch`]).
    ///
    #[doc = cublas_sys::api_doc!(cublasGemmStridedBatchedEx)]
    /// # Errors
    ///
    /// As [`gemm`](Self::gemm), the memory checked against the whole batch, and
    /// [`Error::InvalidArgument`] for a count or stride cuBLAS cannot take, or C's products
    /// overlapping.
    #[doc(alias = "cublasGemmStridedBatchedEx")]
    pub fn gemm_strided_batched<A: GemmInput<D>, D: BlasElement>(
        &self,
        shape: &Gemm,
        batch: &StridedBatch,
        scalars: Scalars<'_, A::Scalar>,
        a: &impl Input<A>,
        b: &impl Input<A>,
        c: &mut impl Output<D>,
    ) -> Result<()> {
        let call = shape.call()?;
        let spans = batch.extents(&call)?;
        let (a, b, c) = (a.operand()?, b.operand()?, c.operand_mut()?);
        let count_ = batch.count;
        holds(
            &format_args!("the batch of {count_} As of {shape}"),
            spans[0],
            a.len(),
        )?;
        holds(
            &format_args!("the batch of {count_} Bs of {shape}"),
            spans[1],
            b.len(),
        )?;
        holds(
            &format_args!("the batch of {count_} Cs of {shape}"),
            spans[2],
            c.len(),
        )?;
        let count = c_int("batch count", batch.count)?;
        let strides = [batch.stride_a, batch.stride_b, batch.stride_c].map(|s| s as i64);
        let (alpha, beta) = scalars.addresses()?;
        self.set_mode(scalars.mode())?;
        let ((first, first_stride), (second, second_stride)) = if call.swap {
            ((b, strides[1]), (a, strides[0]))
        } else {
            ((a, strides[0]), (b, strides[1]))
        };
        let compute = self.compute::<A, D>();
        let (library, raw) = self.parts();
        let [alpha_stream, beta_stream] = scalars.streams(self.stream())?;
        let streams = [
            Some(a.on(self.stream())?),
            Some(b.on(self.stream())?),
            Some(c.on(self.stream())?),
            alpha_stream,
            beta_stream,
        ];
        ordered(self.stream(), streams, || {
            // SAFETY: as in `gemm`, each operand holding the whole batch's span (checked).
            unsafe {
                cublas!(
                    library,
                    cublasGemmStridedBatchedEx(
                        raw,
                        call.transa,
                        call.transb,
                        call.m,
                        call.n,
                        call.k,
                        alpha,
                        first.ptr(),
                        A::DATA_TYPE,
                        call.lda,
                        first_stride,
                        second.ptr(),
                        A::DATA_TYPE,
                        call.ldb,
                        second_stride,
                        beta,
                        c.ptr_mut(),
                        D::DATA_TYPE,
                        call.ldc,
                        strides[2],
                        count,
                        compute,
                        cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT
                    )
                )
            }
        })
    }

    /// The GEMMs of `batch` (separate matrices, one shape), in one call.
    ///
    #[doc = cublas_sys::api_doc!(cublasGemmBatchedEx)]
    /// # Errors
    ///
    /// As [`gemm`](Self::gemm), each matrix checked; [`Error::InvalidArgument`] for a batch
    /// made on another stream than the handle's.
    #[doc(alias = "cublasGemmBatchedEx")]
    pub fn gemm_batched<A: GemmInput<D>, D: BlasElement>(
        &self,
        shape: &Gemm,
        scalars: Scalars<'_, A::Scalar>,
        batch: &mut GemmBatch<'_, A, D>,
    ) -> Result<()> {
        let call = shape.call()?;
        if !batch.stream.same_as(self.stream()) {
            return Err(Error::invalid_argument(
                "the GEMM batch's matrices are on another stream than the cuBLAS handle's",
            ));
        }
        let [stored_a, stored_b, stored_c] = shape.stored();
        holds(&stored_a, call.extents[0], batch.shortest[0])?;
        holds(&stored_b, call.extents[1], batch.shortest[1])?;
        holds(&stored_c, call.extents[2], batch.shortest[2])?;
        let (alpha, beta) = scalars.addresses()?;
        self.set_mode(scalars.mode())?;
        let pointers = batch.pointers.as_raw();
        let table =
            |index: u64| (pointers + index * batch.count as u64 * 8) as *mut *mut std::ffi::c_void;
        let (first, second) = if call.swap {
            (table(1), table(0))
        } else {
            (table(0), table(1))
        };
        let count = c_int("batch count", batch.count)?;
        let compute = self.compute::<A, D>();
        let (library, raw) = self.parts();
        let [alpha_stream, beta_stream] = scalars.streams(self.stream())?;
        ordered(self.stream(), [alpha_stream, beta_stream], || {
            // SAFETY: the pointer tables are device memory the batch owns, holding `count`
            // addresses each of matrices the batch borrows (C's exclusively), each holding at
            // least the elements the checked shape spans, on the handle's stream.
            unsafe {
                cublas!(
                    library,
                    cublasGemmBatchedEx(
                        raw,
                        call.transa,
                        call.transb,
                        call.m,
                        call.n,
                        call.k,
                        alpha,
                        first as *const *const std::ffi::c_void,
                        A::DATA_TYPE,
                        call.lda,
                        second as *const *const std::ffi::c_void,
                        A::DATA_TYPE,
                        call.ldb,
                        beta,
                        table(2) as *const *mut std::ffi::c_void,
                        D::DATA_TYPE,
                        call.ldc,
                        count,
                        compute,
                        cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT
                    )
                )
            }
        })
    }
}

/// The matrices of a batched GEMM ([`Blas::gemm_batched`]): the A, B and C of each product,
/// borrowed (C exclusively) for as long as the batch lives, and the device arrays of their
/// addresses cuBLAS reads, uploaded once when the batch is made (so replaying a captured
/// batched GEMM reads them too). Every matrix is on the handle's stream.
pub struct GemmBatch<'a, A, D> {
    pointers: Buffer,
    count: usize,
    /// The fewest elements of any A, any B and any C.
    shortest: [usize; 3],
    stream: Stream,
    _borrows: PhantomData<(&'a [A], &'a mut [D])>,
}

impl<'a, A: BlasElement, D: BlasElement> GemmBatch<'a, A, D> {
    /// A batch of `a.len()` products (the three slices of one length, at least one), their
    /// addresses copied to the device on `blas`'s stream (waiting for the copy).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for slices of different or zero lengths, more products than
    /// cuBLAS's `int`, or a matrix on another stream than `blas`'s; the driver's error from the
    /// allocation or the copy.
    pub fn new<IA: Input<A>, IB: Input<A>, OD: Output<D>>(
        blas: &Blas,
        a: &'a [IA],
        b: &'a [IB],
        c: &'a mut [OD],
    ) -> Result<Self> {
        let count = a.len();
        if count == 0 || b.len() != count || c.len() != count {
            return Err(Error::invalid_argument(format!(
                "a GEMM batch needs as many A, B and C matrices, at least one; got {}, {} and {}",
                count,
                b.len(),
                c.len()
            )));
        }
        c_int("batch count", count)?;
        let stream = blas.stream();
        let mut addresses = vec![0u64; 3 * count];
        let mut shortest = [usize::MAX; 3];
        let mut take = |table: usize, index: usize, operand: crate::blas::operand::Operand<'_>| {
            if !operand.on(stream)?.same_as(stream) {
                return Err(Error::invalid_argument(
                    "every matrix of a GEMM batch must be on the cuBLAS handle's stream",
                ));
            }
            addresses[table * count + index] = operand.as_raw();
            shortest[table] = shortest[table].min(operand.len());
            Ok(())
        };
        for (index, matrix) in a.iter().enumerate() {
            take(0, index, matrix.operand()?)?;
        }
        for (index, matrix) in b.iter().enumerate() {
            take(1, index, matrix.operand()?)?;
        }
        for (index, matrix) in c.iter_mut().enumerate() {
            take(2, index, matrix.operand_mut()?)?;
        }
        let pointers = stream
            .device()
            .default_memory_resource()?
            .allocate_from_host(&addresses, stream)?;
        Ok(Self {
            pointers,
            count,
            shortest,
            stream: stream.clone(),
            _borrows: PhantomData,
        })
    }

    /// The number of products.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the batch holds no product (never: one is made with at least one).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl<A, D> fmt::Debug for GemmBatch<'_, A, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GemmBatch")
            .field("count", &self.count)
            .field("shortest", &self.shortest)
            .finish()
    }
}
