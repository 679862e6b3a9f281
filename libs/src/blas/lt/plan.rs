//! What a cuBLASLt matmul computes ([`MatmulDesc`]: shape, transposes, types, epilogue,
//! batch) and its plan ([`MatmulPlan`]): the descriptors cuBLASLt takes and the algorithm its
//! heuristic chose, found once.

use std::fmt;

use crate::blas::elements::{BlasElement, F8E4M3, F8E5M2};
use crate::blas::error::cublaslt;
use crate::blas::layout::{Gemm, Stored, Transpose, c_int, c_long};
use cublaslt_sys::{
    CublasLt, cublasComputeType_t, cublasLtEpilogue_t, cublasLtMatmulAlgo_t, cublasLtMatmulDesc_t,
    cublasLtMatmulDescAttributes_t, cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
    cudaDataType_t,
};
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Error, Result};

use super::operation::Operations;

/// An element type of a cuBLASLt matmul: f32, f16, bf16 and the FP8 formats as inputs, f32,
/// f16 and bf16 as outputs; the scalars are f32 throughout (f32 compute).
pub trait MatmulElement: BlasElement {}

impl MatmulElement for f32 {}
impl MatmulElement for F8E4M3 {}
impl MatmulElement for F8E5M2 {}
#[cfg(feature = "half")]
impl MatmulElement for half::f16 {}
#[cfg(feature = "half")]
impl MatmulElement for half::bf16 {}

/// What cuBLASLt applies to the product before it writes D (`CUBLASLT_EPILOGUE_*`): a bias
/// (one per row of column-major D, `m` elements; one per column, `n`, for a row-major
/// shape, as a linear layer's `x Wᵀ + b` has it), ReLU or GELU (tanh approximation), and the
/// auxiliary outputs a backward pass needs: ReLU's bit mask (one bit per element of D) or
/// GELU's input (the pre-activation values, D's type).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Epilogue {
    /// D as computed (`CUBLASLT_EPILOGUE_DEFAULT`).
    #[default]
    None,
    /// ReLU.
    Relu,
    /// ReLU, and its bit mask as the auxiliary output.
    ReluAux,
    /// Bias.
    Bias,
    /// Bias, then ReLU.
    ReluBias,
    /// Bias, then ReLU, and the bit mask.
    ReluAuxBias,
    /// GELU.
    Gelu,
    /// GELU, and its input as the auxiliary output.
    GeluAux,
    /// Bias, then GELU.
    GeluBias,
    /// Bias, then GELU, and GELU's input.
    GeluAuxBias,
}

/// What an epilogue's auxiliary output holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Aux {
    /// ReLU's bit mask: bits, its leading dimension a multiple of 128.
    Mask,
    /// GELU's input, of D's type: its leading dimension a multiple of 8.
    Values,
}

impl Epilogue {
    /// The `cublasLtEpilogue_t`.
    pub const fn as_raw(self) -> cublasLtEpilogue_t {
        match self {
            Self::None => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT,
            Self::Relu => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU,
            Self::ReluAux => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_AUX,
            Self::Bias => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
            Self::ReluBias => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_BIAS,
            Self::ReluAuxBias => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_AUX_BIAS,
            Self::Gelu => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU,
            Self::GeluAux => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_AUX,
            Self::GeluBias => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
            Self::GeluAuxBias => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
        }
    }

    /// Whether it adds a bias.
    pub const fn has_bias(self) -> bool {
        matches!(
            self,
            Self::Bias | Self::ReluBias | Self::ReluAuxBias | Self::GeluBias | Self::GeluAuxBias
        )
    }

    /// Its auxiliary output, if any.
    pub(crate) const fn aux(self) -> Option<Aux> {
        match self {
            Self::ReluAux | Self::ReluAuxBias => Some(Aux::Mask),
            Self::GeluAux | Self::GeluAuxBias => Some(Aux::Values),
            _ => None,
        }
    }

    /// Whether it writes an auxiliary output.
    pub const fn has_aux(self) -> bool {
        self.aux().is_some()
    }
}

/// A matmul cuBLASLt computes, `D = alpha op(A) op(B) + beta D` with an epilogue: the shape
/// (a [`Gemm`]: dimensions, transposes, leading dimensions, column- or row-major), the element
/// types, the epilogue, an optional strided batch, and what the plan may assume. The key a
/// [`Matmul`](super::Matmul) caches its plans by.
///
/// ```
/// use cuda_safe_libs::blas::{Epilogue, F8E4M3, Gemm, MatmulDesc};
///
/// // bf16 8192³ with a bias and GELU.
/// # #[cfg(feature = "half")]
/// let layer = MatmulDesc::new::<half::bf16, half::bf16, half::bf16>(Gemm::new(8192, 8192, 8192))
///     .epilogue(Epilogue::GeluBias);
/// // FP8 on Hopper: A transposed (TN), f32 out.
/// let fp8 = MatmulDesc::new::<F8E4M3, F8E4M3, f32>(Gemm::new(4096, 4096, 4096).transpose_a());
/// assert!(fp8.to_string().contains("e4m3"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MatmulDesc {
    shape: Gemm,
    types: [u32; 3],
    names: [&'static str; 3],
    epilogue: Epilogue,
    bias_type: Option<(u32, &'static str)>,
    aux_ld: Option<usize>,
    batch: Option<(usize, [usize; 3])>,
    tf32: bool,
    alignment: u32,
}

impl MatmulDesc {
    /// `shape` with `A` and `B` inputs and `D` output (C is D: beta scales D's old values).
    pub fn new<A: MatmulElement, B: MatmulElement, D: MatmulElement>(shape: Gemm) -> Self {
        Self {
            shape,
            types: [A::DATA_TYPE.0, B::DATA_TYPE.0, D::DATA_TYPE.0],
            names: [A::NAME, B::NAME, D::NAME],
            epilogue: Epilogue::None,
            bias_type: None,
            aux_ld: None,
            batch: None,
            tf32: false,
            alignment: 256,
        }
    }

    /// The epilogue (by default none). A bias is of D's type unless
    /// [`bias_type`](Self::bias_type) says otherwise.
    pub fn epilogue(mut self, epilogue: Epilogue) -> Self {
        self.epilogue = epilogue;
        self
    }

    /// The bias's element type.
    pub fn bias_type<T: MatmulElement>(mut self) -> Self {
        self.bias_type = Some((T::DATA_TYPE.0, T::NAME));
        self
    }

    /// The auxiliary output's leading dimension, in elements (bits for ReLU's mask): by
    /// default D's rows (of the column-major computation), rounded up to a multiple of 8
    /// (GELU) or 128 (ReLU), as cuBLASLt needs.
    pub fn aux_ld(mut self, ld: usize) -> Self {
        self.aux_ld = Some(ld);
        self
    }

    /// `count` products, the i-th on A, B and D `i * stride` elements in (strides in elements;
    /// D's products may not overlap).
    pub fn batched(
        mut self,
        count: usize,
        stride_a: usize,
        stride_b: usize,
        stride_d: usize,
    ) -> Self {
        self.batch = Some((count, [stride_a, stride_b, stride_d]));
        self
    }

    /// f32 inputs computed with TF32 tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    pub fn tf32(mut self) -> Self {
        self.tf32 = true;
        self
    }

    /// The alignment in bytes the plan may assume of every operand's address (256, cuBLASLt's
    /// default, unless set; a smaller one excludes the algorithms that need more). Every call
    /// checks its operands against it.
    pub fn alignment(mut self, bytes: u32) -> Self {
        self.alignment = bytes;
        self
    }

    /// The shape.
    pub fn shape(&self) -> &Gemm {
        &self.shape
    }

    /// The epilogue.
    pub fn epilogue_kind(&self) -> Epilogue {
        self.epilogue
    }

    /// Whether the inputs are FP8.
    pub fn is_fp8(&self) -> bool {
        let fp8 = [F8E4M3::DATA_TYPE.0, F8E5M2::DATA_TYPE.0];
        fp8.contains(&self.types[0]) || fp8.contains(&self.types[1])
    }

    /// The raw data types of A, B and D.
    pub(crate) fn types(&self) -> [u32; 3] {
        self.types
    }

    /// The assumed alignment.
    pub(crate) fn alignment_bytes(&self) -> u32 {
        self.alignment
    }
}

impl fmt::Display for MatmulDesc {
    /// `bf16 x bf16 -> bf16 8192x8192x8192 (N, N, column-major), GELU+bias`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, d] = self.names;
        write!(f, "{a} x {b} -> {d} {}", self.shape)?;
        if self.epilogue != Epilogue::None {
            write!(f, ", epilogue {:?}", self.epilogue)?;
        }
        if let Some((count, _)) = self.batch {
            write!(f, ", batch of {count}")?;
        }
        if self.tf32 {
            f.write_str(", TF32")?;
        }
        Ok(())
    }
}

/// cuBLASLt's descriptors of a plan, destroyed together.
pub(crate) struct Descriptors {
    pub(crate) lt: &'static CublasLt,
    /// The operation descriptors (see [`Operations`]); `None` until made.
    pub(crate) operations: Option<Operations>,
    /// The layouts of the call's first and second operands and of C (= D).
    pub(crate) layouts: [cublasLtMatrixLayout_t; 3],
}

// SAFETY: the layouts are host memory cuBLASLt reads during a call, never written after the
// plan is made; the operation descriptors are `Send` and `Sync` (see `Operations`).
unsafe impl Send for Descriptors {}
// SAFETY: as above.
unsafe impl Sync for Descriptors {}

impl Release for Descriptors {
    const WHAT: &'static str = "cuBLASLt matmul plan";

    fn release(&mut self) -> Result<()> {
        let lt = self.lt;
        let mut outcome = Ok(());
        for layout in self.layouts {
            if !layout.is_null() {
                // SAFETY: created by cublasLtMatrixLayoutCreate, destroyed once here.
                let destroyed = unsafe { cublaslt!(lt, cublasLtMatrixLayoutDestroy(layout)) };
                outcome = outcome.and(destroyed);
            }
        }
        if let Some(operations) = self.operations.as_mut() {
            outcome = outcome.and(operations.destroy());
        }
        outcome
    }
}

/// A plan for one [`MatmulDesc`]: cuBLASLt's descriptors and the algorithm its heuristic chose
/// for them (queried once, when the plan is made), with what every call is checked against.
/// `Send` and `Sync`, and reusable from any [`Matmul`](super::Matmul) of its device, by
/// several at once: a call that sets pointer attributes (bias, aux, scales) sets them on an
/// operation descriptor of its own, lent for the call (only those that differ from that
/// descriptor's last), and no lock is held across a matmul.
pub struct MatmulPlan {
    pub(crate) desc: MatmulDesc,
    pub(crate) device: usize,
    pub(crate) descriptors: Owned<Descriptors>,
    pub(crate) algo: cublasLtMatmulAlgo_t,
    /// The workspace the algorithm needs.
    pub(crate) workspace: usize,
    /// The elements the caller's A, B and D span (the whole batch).
    pub(crate) spans: [usize; 3],
    /// Whether the call's first operand is the caller's B (row-major).
    pub(crate) swap: bool,
    /// The bias's elements and type, when the epilogue adds one.
    pub(crate) bias: Option<(usize, u32)>,
    /// The auxiliary output's bytes, when there is one.
    pub(crate) aux_bytes: Option<usize>,
}

// SAFETY: `algo` is plain data the heuristic filled in (no pointer into anything); the
// descriptors are `Send` and `Sync` (see `Descriptors`).
unsafe impl Send for MatmulPlan {}
// SAFETY: as above; the plan is never written after it is made, but for the operation
// descriptors lent to calls (see `Operations`).
unsafe impl Sync for MatmulPlan {}

impl MatmulPlan {
    /// What it computes.
    pub fn desc(&self) -> &MatmulDesc {
        &self.desc
    }

    /// The workspace its algorithm needs, in bytes.
    pub fn workspace_size(&self) -> usize {
        self.workspace
    }
}

impl fmt::Debug for MatmulPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatmulPlan")
            .field("desc", &format_args!("{}", self.desc))
            .field("device", &self.device)
            .field("workspace", &self.workspace)
            .finish()
    }
}

/// The parts of a plan worked out from its description before cuBLASLt sees it.
pub(crate) struct Layouts {
    /// (type, rows, cols, ld) of the call's first and second operand and of D, column-major.
    pub(crate) matrices: [(u32, u64, u64, i64); 3],
    pub(crate) transposes: [Transpose; 2],
    pub(crate) swap: bool,
    pub(crate) spans: [usize; 3],
    pub(crate) batch: Option<(i32, [i64; 3])>,
    pub(crate) bias: Option<(usize, u32)>,
    pub(crate) aux: Option<(i64, usize)>,
    pub(crate) compute: cublasComputeType_t,
}

/// Works out `desc`'s layouts and checks every dimension, leading dimension, stride and
/// count as cuBLASLt takes them.
pub(crate) fn layouts(desc: &MatmulDesc) -> Result<Layouts> {
    let shape = &desc.shape;
    let call = shape.call()?;
    let [a, b, d] = shape.stored();
    let (m, n, _) = shape.dims();
    let (transa, transb) = shape.transposes();
    let [type_a, type_b, type_d] = desc.types;
    // The column-major problem: for a row-major shape, Dᵀ = op(B)ᵀ op(A)ᵀ.
    let (first, second, first_type, second_type, transposes, rows_d, cols_d) = if call.swap {
        (b, a, type_b, type_a, [transb, transa], n, m)
    } else {
        (a, b, type_a, type_b, [transa, transb], m, n)
    };
    let column = |stored: &Stored, data: u32| -> Result<(u32, u64, u64, i64)> {
        let (rows, cols) = if stored.row_major {
            (stored.cols, stored.rows)
        } else {
            (stored.rows, stored.cols)
        };
        Ok((
            data,
            rows as u64,
            cols as u64,
            c_long("a leading dimension", stored.ld)?,
        ))
    };
    let matrices = [
        column(&first, first_type)?,
        column(&second, second_type)?,
        column(&d, type_d)?,
    ];
    let mut spans = call.extents;
    let batch = match desc.batch {
        None => None,
        Some((count, strides)) => {
            let batch = crate::blas::layout::StridedBatch {
                count,
                stride_a: strides[0],
                stride_b: strides[1],
                stride_c: strides[2],
            };
            spans = batch.extents(&call)?;
            let mut raw = strides.map(|stride| stride as i64);
            if call.swap {
                raw.swap(0, 1);
            }
            Some((c_int("batch count", count)?, raw))
        }
    };
    let bias = desc.epilogue.has_bias().then(|| {
        let (code, _) = desc.bias_type.unwrap_or((type_d, ""));
        (rows_d, code)
    });
    let aux = match desc.epilogue.aux() {
        None => None,
        Some(kind) => {
            if desc.batch.is_some() {
                return Err(Error::invalid_argument(
                    "a batched matmul's epilogue cannot write an auxiliary output here",
                ));
            }
            let multiple = if kind == Aux::Mask { 128 } else { 8 };
            let ld = desc
                .aux_ld
                .unwrap_or(rows_d.next_multiple_of(multiple).max(multiple));
            if ld < rows_d || !ld.is_multiple_of(multiple) {
                return Err(Error::invalid_argument(format!(
                    "the auxiliary output's leading dimension is {ld}: it must be a multiple of \
                     {multiple} and at least D's {rows_d} rows"
                )));
            }
            let elements = ld.checked_mul(cols_d).ok_or_else(|| {
                Error::invalid_argument("the auxiliary output overflows the address space")
            })?;
            let bytes = match kind {
                Aux::Mask => elements.div_ceil(8),
                Aux::Values => elements.checked_mul(element_size(type_d)).ok_or_else(|| {
                    Error::invalid_argument("the auxiliary output overflows the address space")
                })?,
            };
            Some((c_long("the auxiliary leading dimension", ld)?, bytes))
        }
    };
    let compute = if desc.tf32 {
        cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
    } else {
        cublasComputeType_t::CUBLAS_COMPUTE_32F
    };
    Ok(Layouts {
        matrices,
        transposes,
        swap: call.swap,
        spans,
        batch,
        bias,
        aux,
        compute,
    })
}

/// The bytes of one element of a matmul data type.
pub(crate) fn element_size(data_type: u32) -> usize {
    match cudaDataType_t(data_type) {
        cudaDataType_t::CUDA_R_32F => 4,
        cudaDataType_t::CUDA_R_16F | cudaDataType_t::CUDA_R_16BF => 2,
        _ => 1,
    }
}

/// Sets one attribute of a layout (`value` of its documented C type).
pub(crate) fn set_layout<T>(
    lt: &CublasLt,
    layout: cublasLtMatrixLayout_t,
    attribute: cublasLtMatrixLayoutAttribute_t,
    value: &T,
) -> Result<()> {
    // SAFETY: a live layout; `value` is the attribute's C type, read for `size_of::<T>()`
    // bytes during the call.
    unsafe {
        cublaslt!(
            lt,
            cublasLtMatrixLayoutSetAttribute(
                layout,
                attribute,
                std::ptr::from_ref(value).cast(),
                size_of::<T>()
            )
        )
    }
}

/// Sets one attribute of an operation descriptor (`value` of its documented C type).
pub(crate) fn set_operation<T>(
    lt: &CublasLt,
    operation: cublasLtMatmulDesc_t,
    attribute: cublasLtMatmulDescAttributes_t,
    value: &T,
) -> Result<()> {
    // SAFETY: a live descriptor; `value` is the attribute's C type, read for
    // `size_of::<T>()` bytes during the call.
    unsafe {
        cublaslt!(
            lt,
            cublasLtMatmulDescSetAttribute(
                operation,
                attribute,
                std::ptr::from_ref(value).cast(),
                size_of::<T>()
            )
        )
    }
}
