//! [`Matmul`]: cuBLASLt's matmul on `cuda-safe`'s buffers and streams. A [`MatmulPlan`] is made
//! once per [`MatmulDesc`] (its descriptors and the heuristic's algorithm, cached by the
//! `Matmul`), and each [`Matmul::run`] is one `cublasLtMatmul` on the plan.

mod call;
mod operation;
mod plan;
mod plans;

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

pub use call::MatmulCall;
pub use plan::{Epilogue, MatmulDesc, MatmulElement, MatmulPlan};

use crate::blas::error::CublasError;
use crate::blas::error::cublaslt;
use crate::blas::operand::DEFAULT_WORKSPACE;
use crate::operand::workspace_buffer;
use cublaslt_sys::{
    CublasLt, cublasLtHandle_t, cublasLtMatmulAlgo_t, cublasLtMatmulHeuristicResult_t,
    cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
    cublasLtMatrixLayoutAttribute_t, cublasStatus_t, cudaDataType_t,
};
use cuda_safe::Buffer;
use cuda_safe::Stream;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Error, Result};
use operation::{OperationSpec, Operations};
use plan::{Descriptors, layouts, set_layout};
use plans::PlanCache;

/// A cuBLASLt handle bound to a [`Stream`], with its workspace (a [`Buffer`] of this crate)
/// and the plans it made, by description.
///
/// `Send`, not `Sync` (its plan cache is this handle's alone); the plans are `Send` and `Sync`
/// and run on any `Matmul` of their device whose workspace is large enough. cuBLASLt runs its
/// kernels in the context current on the calling thread: each run makes the stream's context
/// current for its duration, as [`Blas`](crate::blas::Blas)'s calls do.
///
/// ```no_run
/// use cuda_safe_libs::blas::{Epilogue, Gemm, Matmul, MatmulCall, MatmulDesc};
/// use cuda_safe::Device;
///
/// let device = Device::new(0)?;
/// device.set_current()?;
/// let stream = device.create_stream(Default::default())?;
/// let pool = device.default_memory_resource()?;
/// let (m, n, k) = (1024, 1024, 1024);
/// // f32 here; half::bf16 (feature `half`) and the FP8 types likewise.
/// let a = pool.allocate_zeroed::<f32>(m * k, &stream)?;
/// let b = pool.allocate_zeroed::<f32>(k * n, &stream)?;
/// let bias = pool.allocate_zeroed::<f32>(m, &stream)?;
/// let mut d = pool.allocate_zeroed::<f32>(m * n, &stream)?;
/// let matmul = Matmul::new(&stream)?;
/// let desc = MatmulDesc::new::<f32, f32, f32>(Gemm::new(m, n, k)).epilogue(Epilogue::GeluBias);
/// let plan = matmul.plan(&desc)?; // the heuristic runs once; later calls hit the cache
/// matmul.run(&plan, MatmulCall::new::<f32, f32, f32>(&a, &b, &mut d)?.bias::<f32>(&bias)?)?;
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[must_use = "a cuBLASLt handle is destroyed when dropped"]
pub struct Matmul {
    inner: Owned<LtHandle>,
    plans: RefCell<PlanCache>,
}

/// What a [`Matmul`] owns.
struct LtHandle {
    raw: cublasLtHandle_t,
    lt: &'static CublasLt,
    stream: Stream,
    workspace: Buffer,
}

// SAFETY: a cuBLASLt handle may be used from any thread; `Matmul` is not `Sync` (its
// `RefCell`), so one thread at a time uses it.
unsafe impl Send for LtHandle {}

impl Matmul {
    /// A handle on `stream` with a 32 MiB workspace from the device's default memory pool
    /// (the size cuBLAS recommends for Hopper).
    ///
    #[doc = cublaslt_sys::api_doc!(cublasLtCreate)]
    /// # Errors
    ///
    /// [`Error::Load`] when cuBLASLt cannot be loaded; cuBLASLt's and the driver's errors.
    #[doc(alias = "cublasLtCreate")]
    pub fn new(stream: &Stream) -> Result<Self> {
        let workspace = stream
            .device()
            .default_memory_resource()?
            .allocate(DEFAULT_WORKSPACE, stream)?;
        Self::with_workspace(stream, workspace)
    }

    /// A handle on `stream` whose workspace is `workspace` (from any memory resource, moved to
    /// `stream`; plans need at most its size, and runs check it).
    ///
    #[doc = cublaslt_sys::api_doc!(cublasLtCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a workspace the GPU cannot reach; as [`new`](Self::new).
    #[doc(alias = "cublasLtCreate")]
    pub fn with_workspace(stream: &Stream, mut workspace: Buffer) -> Result<Self> {
        workspace_buffer(&workspace, stream, "a cuBLASLt workspace")?;
        workspace.set_stream(stream)?;
        let lt = cublaslt_sys::cublaslt()?;
        let _current = stream.context().scoped()?;
        let mut raw: cublasLtHandle_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the stream's context is current.
        unsafe { cublaslt!(lt, cublasLtCreate(&mut raw)) }?;
        Ok(Self {
            inner: Owned::new(LtHandle {
                raw,
                lt,
                stream: stream.clone(),
                workspace,
            }),
            plans: RefCell::new(PlanCache::new(Self::DEFAULT_PLAN_CAPACITY)),
        })
    }

    /// The stream every run is queued on.
    #[inline]
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Moves the handle to `stream`: runs from now on are queued there, after the work queued
    /// on the old stream so far (the workspace moves with it). No cuBLASLt call: cuBLASLt
    /// takes the stream with each matmul.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a stream of another context; the driver's error.
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        if !self.inner.stream.context().same_as(stream.context()) {
            return Err(Error::invalid_argument(
                "a cuBLASLt handle moves only to a stream of its own context",
            ));
        }
        self.inner.workspace.set_stream(stream)?;
        self.inner.stream = stream.clone();
        Ok(())
    }

    /// The workspace buffer.
    pub fn workspace(&self) -> &Buffer {
        &self.inner.workspace
    }

    /// The loaded cuBLASLt's version (`CUBLAS_VERSION`'s encoding).
    ///
    #[doc = cublaslt_sys::api_doc!(cublasLtGetVersion)]
    /// # Errors
    ///
    /// [`Error::Load`] when the entry point is missing.
    #[doc(alias = "cublasLtGetVersion")]
    pub fn version(&self) -> Result<usize> {
        // SAFETY: takes nothing, returns a number.
        Ok(unsafe { self.inner.lt.cublasLtGetVersion() }?)
    }

    /// How many plans a handle keeps unless told otherwise ([`set_plan_capacity`]).
    ///
    /// [`set_plan_capacity`]: Self::set_plan_capacity
    pub const DEFAULT_PLAN_CAPACITY: usize = 1024;

    /// How many plans this handle keeps at most.
    pub fn plan_capacity(&self) -> usize {
        self.plans.borrow().capacity()
    }

    /// Keeps at most `capacity` plans from now on, dropping those used least recently past
    /// it (0: none kept, every [`plan`](Self::plan) makes one). A dropped plan's descriptors
    /// are destroyed once no caller holds it.
    pub fn set_plan_capacity(&self, capacity: usize) {
        self.plans.borrow_mut().set_capacity(capacity);
    }

    /// How many plans this handle keeps now.
    pub fn cached_plans(&self) -> usize {
        self.plans.borrow().len()
    }

    /// The plan for `desc`: made once (descriptors, then cuBLASLt's heuristic asked for its
    /// best algorithm within this handle's workspace), then taken from this handle's cache,
    /// which keeps the [`plan_capacity`](Self::plan_capacity) plans used most recently.
    ///
    #[doc = cublaslt_sys::api_doc!(cublasLtMatmulDescCreate)]
    #[doc = cublaslt_sys::api_doc!(cublasLtMatrixLayoutCreate)]
    #[doc = cublaslt_sys::api_doc!(cublasLtMatmulAlgoGetHeuristic)]
    /// # Errors
    ///
    /// [`CublasError::MatmulRefused`](crate::blas::CublasError::MatmulRefused) (naming the description and the reason) when cuBLASLt finds
    /// no algorithm or refuses a descriptor; [`Error::Unsupported`] for FP8 on a GPU older
    /// than sm_89; [`Error::InvalidArgument`] for a dimension, leading dimension, stride or
    /// count cuBLASLt cannot take.
    #[doc(
        alias = "cublasLtMatmulDescCreate",
        alias = "cublasLtMatrixLayoutCreate",
        alias = "cublasLtMatmulAlgoGetHeuristic"
    )]
    pub fn plan(&self, desc: &MatmulDesc) -> Result<Arc<MatmulPlan>> {
        if let Some(plan) = self.plans.borrow_mut().get(desc) {
            return Ok(plan);
        }
        let plan = Arc::new(self.make_plan(desc)?);
        self.plans
            .borrow_mut()
            .insert(desc.clone(), Arc::clone(&plan));
        Ok(plan)
    }

    /// Makes the plan for `desc` (see [`plan`](Self::plan)).
    fn make_plan(&self, desc: &MatmulDesc) -> Result<MatmulPlan> {
        let device = *self.inner.stream.device();
        if desc.is_fp8() && device.compute_capability()? < (8, 9) {
            let (major, minor) = device.compute_capability()?;
            return Err(Error::unsupported(
                "FP8 matmul",
                format!("needs an sm_89 or newer GPU (Ada, Hopper); this one is sm_{major}{minor}"),
            ));
        }
        let layout = layouts(desc)?;
        let lt = self.inner.lt;
        let refused = |error: Error| refusal(desc, error);
        let mut descriptors = Owned::new(Descriptors {
            lt,
            operations: None,
            layouts: [std::ptr::null_mut(); 3],
        });
        let spec = OperationSpec {
            compute: layout.compute,
            transposes: layout.transposes.map(|transpose| transpose.as_raw().0),
            epilogue: desc.epilogue_kind().as_raw().0,
            bias_type: layout.bias.map(|(_, bias_type)| bias_type),
            aux_ld: layout.aux.map(|(ld, _)| ld),
        };
        let lends = layout.bias.is_some() || layout.aux.is_some() || desc.is_fp8();
        descriptors.operations = Some(Operations::new(lt, spec, lends).map_err(refused)?);
        for (index, &(data_type, rows, cols, ld)) in layout.matrices.iter().enumerate() {
            let mut matrix = std::ptr::null_mut();
            // SAFETY: a valid out-pointer; the sizes were checked against cuBLASLt's types.
            unsafe {
                cublaslt!(
                    lt,
                    cublasLtMatrixLayoutCreate(
                        &mut matrix,
                        cudaDataType_t(data_type),
                        rows,
                        cols,
                        ld
                    )
                )
            }
            .map_err(refused)?;
            descriptors.layouts[index] = matrix;
            if let Some((count, strides)) = layout.batch {
                use cublasLtMatrixLayoutAttribute_t as Layout;
                set_layout(
                    lt,
                    matrix,
                    Layout::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                    &count,
                )
                .and_then(|()| {
                    let offset = Layout::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET;
                    set_layout(lt, matrix, offset, &strides[index])
                })
                .map_err(refused)?;
            }
        }
        let result = self.heuristic(desc, &descriptors)?;
        Ok(MatmulPlan {
            desc: desc.clone(),
            device: device.ordinal(),
            descriptors,
            algo: result.algo,
            workspace: result.workspaceSize,
            spans: layout.spans,
            swap: layout.swap,
            bias: layout.bias,
            aux_bytes: layout.aux.map(|(_, bytes)| bytes),
        })
    }

    /// cuBLASLt's best algorithm for the descriptors, within this handle's workspace and
    /// assuming the description's alignment.
    fn heuristic(
        &self,
        desc: &MatmulDesc,
        descriptors: &Descriptors,
    ) -> Result<cublasLtMatmulHeuristicResult_t> {
        let lt = self.inner.lt;
        let refused = |error: Error| refusal(desc, error);
        let mut preference: cublasLtMatmulPreference_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        unsafe { cublaslt!(lt, cublasLtMatmulPreferenceCreate(&mut preference)) }?;
        let preference = Owned::new(Preference {
            lt,
            raw: preference,
        });
        use cublasLtMatmulPreferenceAttributes_t as Pref;
        let workspace = self.inner.workspace.len();
        let alignment = desc.alignment_bytes();
        preference
            .set(Pref::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace)
            .and_then(|()| {
                [
                    Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                    Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                    Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                ]
                .into_iter()
                .try_for_each(|attribute| preference.set(attribute, &alignment))
            })
            .map_err(refused)?;
        let operation = descriptors
            .operations
            .as_ref()
            .ok_or_else(|| Error::unexpected("cublasLtMatmulAlgoGetHeuristic", "no descriptor"))?
            .shared();
        let [first, second, d] = descriptors.layouts;
        let mut result = cublasLtMatmulHeuristicResult_t::default();
        let mut found = 0;
        // SAFETY: live descriptors and preference; room for one result.
        unsafe {
            cublaslt!(
                lt,
                cublasLtMatmulAlgoGetHeuristic(
                    self.inner.raw,
                    operation,
                    first,
                    second,
                    d,
                    d,
                    preference.raw,
                    1,
                    &mut result,
                    &mut found
                )
            )
        }
        .map_err(refused)?;
        if found < 1 || result.state != cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(CublasError::MatmulRefused {
                shape: desc.to_string().into(),
                reason: format!(
                    "cublasLtMatmulAlgoGetHeuristic found no algorithm within a {workspace}-byte \
                     workspace at {alignment}-byte alignment"
                )
                .into(),
                code: (found >= 1).then_some(cublas_sys::cublasStatus_t(result.state.0)),
            }
            .into());
        }
        Ok(result)
    }

    /// Runs `plan` on `call`'s operands: one `cublasLtMatmul` on this handle's stream and
    /// workspace, after setting the plan's pointer attributes (bias, aux, scales) that differ
    /// from the last run's.
    ///
    #[doc = cublaslt_sys::api_doc!(cublasLtMatmul)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a plan of another device or needing a larger workspace,
    /// operands of other types than the plan's, memory holding fewer elements than the plan
    /// spans or less aligned than it assumes, or a bias, auxiliary output or scale the plan
    /// has no use for (or needs and did not get); cuBLASLt's error.
    #[doc(alias = "cublasLtMatmul")]
    pub fn run(&self, plan: &MatmulPlan, call: MatmulCall<'_>) -> Result<()> {
        let inner = &*self.inner;
        if plan.device != inner.stream.device().ordinal() {
            return Err(Error::invalid_argument(format!(
                "the matmul plan is for device {}, this handle's stream is on device {}",
                plan.device,
                inner.stream.device().ordinal()
            )));
        }
        if plan.workspace > inner.workspace.len() {
            return Err(Error::invalid_argument(format!(
                "the matmul plan needs a {}-byte workspace; this handle has {} bytes",
                plan.workspace,
                inner.workspace.len()
            )));
        }
        let pointers = call.check(plan)?;
        let [a, b, d] = call.matrices();
        let (first, second) = if plan.swap { (b, a) } else { (a, b) };
        let (alpha, beta) = call.scalars();
        let streams = call.streams(&inner.stream)?;
        let descriptors = &*plan.descriptors;
        let [first_layout, second_layout, d_layout] = descriptors.layouts;
        let lt = inner.lt;
        let operations = descriptors
            .operations
            .as_ref()
            .ok_or_else(|| Error::unexpected("cublasLtMatmul", "a plan without descriptors"))?;
        // A call without pointer attributes shares the plan's descriptor (never written); one
        // with them gets a descriptor of its own for the call: no lock is held from here on.
        let lent = match pointers {
            [0, 0, 0, 0, 0, 0] => None,
            _ => Some(operations.lend(pointers)?),
        };
        let operation = lent.as_ref().map_or(operations.shared(), |lent| lent.raw());
        let algo: *const cublasLtMatmulAlgo_t = &plan.algo;
        let (workspace, workspace_size) = (inner.workspace.as_raw(), inner.workspace.len());
        cuda_safe::ordering::ordered(&inner.stream, streams, || {
            // SAFETY: the descriptors are the plan's (the operation's this call's alone or never
            // written, `Operations`); every operand is
            // device memory spanning what the plan computes, of its types and alignment (all
            // checked), D borrowed exclusively; the workspace is this handle's, at least the
            // algorithm's size, ordered on the stream.
            unsafe {
                cublaslt!(
                    lt,
                    cublasLtMatmul(
                        inner.raw,
                        operation,
                        std::ptr::from_ref(&alpha).cast(),
                        first.ptr(),
                        first_layout,
                        second.ptr(),
                        second_layout,
                        std::ptr::from_ref(&beta).cast(),
                        d.ptr(),
                        d_layout,
                        d.ptr_mut(),
                        d_layout,
                        algo,
                        workspace as *mut std::ffi::c_void,
                        workspace_size,
                        inner.stream.as_raw().cast()
                    )
                )
            }
        })
    }

    /// Destroys the handle now, returning cuBLASLt's error, then frees the workspace.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

/// `error` as a refusal of the plan for `desc`, when cuBLASLt refused (an invalid value or
/// an unsupported combination); any other error as it is.
fn refusal(desc: &MatmulDesc, error: Error) -> Error {
    match error.library_error::<CublasError>() {
        Some(&CublasError::Call {
            api, code, name, ..
        }) if matches!(
            code,
            cublas_sys::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED
                | cublas_sys::cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE
        ) =>
        {
            CublasError::MatmulRefused {
                shape: desc.to_string().into(),
                reason: format!("{api} answered {name}").into(),
                code: Some(code),
            }
            .into()
        }
        _ => error,
    }
}

/// A heuristic's preference, destroyed after the query (held in an [`Owned`]).
struct Preference {
    lt: &'static CublasLt,
    raw: cublasLtMatmulPreference_t,
}

impl Preference {
    /// Sets one attribute (`value` of its documented C type).
    fn set<T>(&self, attribute: cublasLtMatmulPreferenceAttributes_t, value: &T) -> Result<()> {
        // SAFETY: a live preference; `value` is read for `size_of::<T>()` bytes.
        unsafe {
            cublaslt!(
                self.lt,
                cublasLtMatmulPreferenceSetAttribute(
                    self.raw,
                    attribute,
                    std::ptr::from_ref(value).cast(),
                    size_of::<T>()
                )
            )
        }
    }
}

impl Release for Preference {
    const WHAT: &'static str = "cuBLASLt matmul preference";

    fn release(&mut self) -> Result<()> {
        // SAFETY: created by cublasLtMatmulPreferenceCreate and destroyed once (by `Owned`).
        unsafe { cublaslt!(self.lt, cublasLtMatmulPreferenceDestroy(self.raw)) }
    }
}

impl Release for LtHandle {
    const WHAT: &'static str = "cuBLASLt handle";

    fn release(&mut self) -> Result<()> {
        // SAFETY: created by cublasLtCreate and destroyed once (by `Owned`); the workspace is
        // freed after, when the fields drop, in order on the stream.
        unsafe { cublaslt!(self.lt, cublasLtDestroy(self.raw)) }
    }
}

impl fmt::Debug for Matmul {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Matmul")
            .field("handle", &self.inner.raw)
            .field("stream", &self.inner.stream)
            .field("workspace", &self.inner.workspace.len())
            .field("plans", &self.plans.borrow().len())
            .field("plan_capacity", &self.plans.borrow().capacity())
            .finish()
    }
}

/// Asserts at compile time that a `Matmul` moves between threads and that plans are shared.
const _: () = {
    const fn assert_send<T: Send>() {}
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send::<Matmul>();
    assert_send_sync::<MatmulPlan>();
};
