//! Memory of another device than the handle's: refused before cuSPARSE until the handle's
//! device is granted access to its pool (a dense vector's and a matrix's arrays alike); a work
//! area resource of another device is refused.

use std::sync::Arc;

use cuda_safe::{Device, Error, MemoryResource};
use cuda_safe_libs::sparse::{DenseVector, Operation, SpMvAlg, Sparse, SparseMatrix};

use super::{Case, CaseFn, ensure, err, sparse_calls};

pub(crate) const CASES: &[(&str, CaseFn)] = &[(
    "device 1's memory is refused before cuSPARSE until its pool grants device 0 access; a \
     work area resource of device 1 is refused",
    another_device,
)];

fn another_device(case: &Case) -> Result<(), String> {
    let (first, second) = (*case.stream.device(), Device::new(1).map_err(err)?);
    let stream = second.create_stream(Default::default()).map_err(err)?;
    let pool = second.default_memory_resource().map_err(err)?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let near = case.upload(&[2.0f64, 3.0])?;
    let far = pool
        .allocate_from_host(&[2.0f64, 3.0], &stream)
        .map_err(err)?;
    let (offsets, columns) = (case.upload(&[0i64, 1, 2])?, case.upload(&[1i64, 0])?);
    let mut y = case.upload(&[0.0f64; 2])?;
    let near_a = SparseMatrix::<i64, f64>::csr((2, 2, 2), &offsets, &columns, &near);
    let far_a = SparseMatrix::<i64, f64>::csr((2, 2, 2), &offsets, &columns, &far);
    let (near_a, far_a) = (near_a.map_err(err)?, far_a.map_err(err)?);
    let (near_x, far_x) = (
        DenseVector::new(&near).map_err(err)?,
        DenseVector::new(&far),
    );
    let far_x = far_x.map_err(err)?;
    let mut yv = DenseVector::new(&mut y).map_err(err)?;
    let n = Operation::NonTranspose;
    case.stub.take_log();
    for (what, a, x) in [("x", &near_a, &far_x), ("A's values", &far_a, &near_x)] {
        match sparse.spmv(n, (1.0, 0.0), a, x, &mut yv, SpMvAlg::DEFAULT) {
            Err(Error::InvalidArgument(why)) if why.contains("device 1's") => {}
            other => {
                return Err(format!(
                    "device 1's {what} for a device 0 handle: {other:?}"
                ));
            }
        }
    }
    let calls = sparse_calls(case.stub.take_log());
    ensure(!calls.iter().any(|call| call == "cusparseSpMV"), || {
        format!("the refused products called {calls:?}")
    })?;
    pool.grant_access(&first).map_err(err)?;
    let granted = sparse.spmv(n, (1.0, 0.0), &far_a, &far_x, &mut yv, SpMvAlg::DEFAULT);
    pool.revoke_access(&first).map_err(err)?;
    granted.map_err(|e| format!("with access granted: {e}"))?;
    drop((near_a, far_a, near_x, far_x, yv));
    let resource: Arc<dyn MemoryResource> = Arc::new(pool);
    match Sparse::with_memory_resource(&case.stream, resource) {
        Err(Error::InvalidArgument(why)) if why.contains("device 1's memory") => Ok(()),
        other => Err(format!("a work area of device 1: {other:?}")),
    }
}
