//! A plan's operation descriptors (`cublasLtMatmulDesc_t`): made from the plan's
//! [`OperationSpec`], shared by the runs that set no pointer attribute, and lent one per run
//! to those that do (bias, auxiliary output, FP8 scales), so no lock is held across a matmul
//! and two runs of one plan never write one descriptor.

use std::sync::{Mutex, PoisonError};

use cublaslt_sys::{
    CublasLt, cublasComputeType_t, cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
    cudaDataType_t,
};
use cuda_safe::Result;

use super::plan::set_operation;
use crate::blas::error::cublaslt;

/// The attributes of a plan's operation descriptor other than its pointers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OperationSpec {
    pub(crate) compute: cublasComputeType_t,
    /// `CUBLASLT_MATMUL_DESC_TRANSA` and `_TRANSB` (`cublasOperation_t` values).
    pub(crate) transposes: [u32; 2],
    /// `CUBLASLT_MATMUL_DESC_EPILOGUE` (a `cublasLtEpilogue_t` value).
    pub(crate) epilogue: u32,
    /// `CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE`, when the epilogue adds a bias.
    pub(crate) bias_type: Option<u32>,
    /// `CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD`, when the epilogue writes an auxiliary output.
    pub(crate) aux_ld: Option<i64>,
}

/// An operation descriptor and the addresses its pointer attributes hold.
pub(crate) struct Bound {
    pub(crate) raw: cublasLtMatmulDesc_t,
    /// Bias, aux, A scale, B scale, D scale, D amax: as last set (0 for none).
    pointers: [u64; 6],
}

/// The pointer attributes of [`Bound::pointers`], in order.
const POINTER_ATTRIBUTES: [cublasLtMatmulDescAttributes_t; 6] = [
    cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
    cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
    cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
    cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
    cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
    cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,
];

/// A plan's operation descriptors: the one the heuristic saw and pointerless runs share
/// (never written after it is made), and the ones lent to runs that set pointers.
pub(crate) struct Operations {
    lt: &'static CublasLt,
    spec: OperationSpec,
    shared: cublasLtMatmulDesc_t,
    /// Descriptors no run holds now, each with the pointers last set on it.
    idle: Mutex<Vec<Bound>>,
}

// SAFETY: the descriptors are host memory cuBLASLt reads during a call. `shared` is only read
// after it is made; a lent descriptor is written by the one run that holds it, the idle ones
// only under the lock.
unsafe impl Send for Operations {}
// SAFETY: as above.
unsafe impl Sync for Operations {}

impl Operations {
    /// The descriptors of a plan of `spec`: the shared one, and one to lend when the plan's
    /// calls set pointers (`lends`), so that a first call makes none.
    pub(crate) fn new(lt: &'static CublasLt, spec: OperationSpec, lends: bool) -> Result<Self> {
        let mut operations = Self {
            lt,
            spec,
            shared: create(lt, &spec)?,
            idle: Mutex::new(Vec::new()),
        };
        if lends {
            match create(lt, &spec) {
                Ok(raw) => operations
                    .idle
                    .get_mut()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Bound {
                        raw,
                        pointers: [0; 6],
                    }),
                Err(error) => {
                    // The shared descriptor is destroyed again; the refusal is what counts.
                    let _ = operations.destroy();
                    return Err(error);
                }
            }
        }
        Ok(operations)
    }

    /// The descriptor pointerless runs and the heuristic use.
    pub(crate) fn shared(&self) -> cublasLtMatmulDesc_t {
        self.shared
    }

    /// A descriptor holding `pointers`, this caller's alone until the returned value drops:
    /// an idle one that holds them already, else any idle one with those that differ set,
    /// else a new one. No lock is held once it returns.
    pub(crate) fn lend(&self, pointers: [u64; 6]) -> Result<Lent<'_>> {
        let taken = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            match idle.iter().position(|bound| bound.pointers == pointers) {
                Some(index) => Some(idle.swap_remove(index)),
                None => idle.pop(),
            }
        };
        let bound = match taken {
            Some(bound) => bound,
            None => Bound {
                raw: create(self.lt, &self.spec)?,
                pointers: [0; 6],
            },
        };
        let mut lent = Lent {
            operations: self,
            bound: Some(bound),
        };
        lent.bind(pointers)?;
        Ok(lent)
    }

    /// Destroys every descriptor (when the plan is released), returning the first error.
    pub(crate) fn destroy(&mut self) -> Result<()> {
        let lt = self.lt;
        let idle = self.idle.get_mut().unwrap_or_else(PoisonError::into_inner);
        let raws = idle.drain(..).map(|bound| bound.raw);
        let mut outcome = Ok(());
        for raw in std::iter::once(self.shared).chain(raws) {
            // SAFETY: made by cublasLtMatmulDescCreate (`create`), destroyed once here: the
            // plan is being released, so no run holds one.
            outcome = outcome.and(unsafe { cublaslt!(lt, cublasLtMatmulDescDestroy(raw)) });
        }
        self.shared = std::ptr::null_mut();
        outcome
    }
}

/// A descriptor lent to one run; given back to its plan's idle ones when dropped.
pub(crate) struct Lent<'a> {
    operations: &'a Operations,
    bound: Option<Bound>,
}

impl Lent<'_> {
    /// The descriptor.
    pub(crate) fn raw(&self) -> cublasLtMatmulDesc_t {
        self.bound.as_ref().map_or(std::ptr::null_mut(), |b| b.raw)
    }

    /// Sets the pointer attributes that differ from those last set.
    fn bind(&mut self, pointers: [u64; 6]) -> Result<()> {
        let lt = self.operations.lt;
        let Some(bound) = self.bound.as_mut() else {
            return Ok(());
        };
        for (index, attribute) in POINTER_ATTRIBUTES.into_iter().enumerate() {
            if bound.pointers[index] != pointers[index] {
                let value = pointers[index] as *const std::ffi::c_void;
                set_operation(lt, bound.raw, attribute, &value)?;
                bound.pointers[index] = pointers[index];
            }
        }
        Ok(())
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(bound) = self.bound.take() {
            let mut idle = self
                .operations
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            idle.push(bound);
        }
    }
}

/// A new operation descriptor of `spec`, its pointers unset (destroyed again if an attribute
/// is refused).
fn create(lt: &'static CublasLt, spec: &OperationSpec) -> Result<cublasLtMatmulDesc_t> {
    use cublasLtMatmulDescAttributes_t as Attribute;
    let mut raw = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the compute and scale types are cuBLASLt's.
    unsafe {
        cublaslt!(
            lt,
            cublasLtMatmulDescCreate(&mut raw, spec.compute, cudaDataType_t::CUDA_R_32F)
        )
    }?;
    let [transa, transb] = spec.transposes;
    let set = set_operation(lt, raw, Attribute::CUBLASLT_MATMUL_DESC_TRANSA, &transa)
        .and_then(|()| set_operation(lt, raw, Attribute::CUBLASLT_MATMUL_DESC_TRANSB, &transb))
        .and_then(|()| {
            let epilogue = spec.epilogue;
            set_operation(lt, raw, Attribute::CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue)
        })
        .and_then(|()| match spec.bias_type {
            Some(bias) => set_operation(
                lt,
                raw,
                Attribute::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                &bias,
            ),
            None => Ok(()),
        })
        .and_then(|()| match spec.aux_ld {
            Some(ld) => set_operation(
                lt,
                raw,
                Attribute::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                &ld,
            ),
            None => Ok(()),
        });
    if let Err(error) = set {
        // SAFETY: made just above and not handed out.
        let _ = unsafe { cublaslt!(lt, cublasLtMatmulDescDestroy(raw)) };
        return Err(error);
    }
    Ok(raw)
}
