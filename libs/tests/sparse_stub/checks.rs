//! Every check refusing before cuSPARSE is called, what a repeated operation calls, the work
//! area, preprocessing, and cuSPARSE's failures.

use cuda_safe::Error;
use cuda_safe_libs::sparse::{
    CusparseError, DenseMatrix, DenseVector, Operation, Order, SddmmAlg, SpGemmAlg, SpMmAlg,
    SpMvAlg, Sparse, SparseMatrix,
};

use super::{Case, CaseFn, ensure, err, sparse_calls};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "every check refuses before cuSPARSE is called",
        checks_refuse_first,
    ),
    ("a repeated SpMV is one cuSPARSE call", spmv_budget),
    ("the work area comes from the pool and grows", work_area),
    ("a preprocessed matrix keeps its buffer", preprocessing),
    (
        "cuSPARSE's failures carry its status",
        failures_carry_the_status,
    ),
];

/// Runs `run`, which must be refused naming `needle` with no cuSPARSE call.
fn refused(
    case: &Case,
    what: &str,
    needle: &str,
    run: impl FnOnce() -> cuda_safe::Result<()>,
) -> Result<(), String> {
    case.stub.take_log();
    let outcome = run();
    let calls = sparse_calls(case.stub.take_log());
    match outcome {
        Err(Error::InvalidArgument(message)) if message.contains(needle) => {
            ensure(calls.is_empty(), || {
                format!("{what}: the refusal called {calls:?}")
            })
        }
        other => Err(format!(
            "{what}: expected a refusal naming {needle:?}, got {other:?}"
        )),
    }
}

fn checks_refuse_first(case: &Case) -> Result<(), String> {
    // [[1, 0, 2], [0, 3, 0]]
    let offsets = case.upload(&[0i32, 2, 3])?;
    let columns = case.upload(&[0i32, 2, 1])?;
    let bad_columns = case.upload(&[0i32, 3, 1])?;
    let bad_offsets = case.upload(&[0i32, 3, 2])?;
    let values = case.upload(&[1.0f32, 2.0, 3.0])?;
    let short = case.upload(&[1.0f32, 2.0])?;
    let (x3, x2) = (case.upload(&[1.0f32; 3])?, case.upload(&[1.0f32; 2])?);
    let mut y2 = case.upload(&[0.0f32; 2])?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let csr = |cols: &cuda_safe::Buffer, offsets: &cuda_safe::Buffer| {
        SparseMatrix::<i32, f32>::csr((2, 3, 3), offsets, cols, &values).map(drop)
    };
    refused(
        case,
        "short values",
        "its values needs 3 elements; the memory holds 2",
        || SparseMatrix::<i32, f32>::csr((2, 3, 3), &offsets, &columns, &short).map(drop),
    )?;
    refused(case, "short offsets", "its row offsets needs 4", || {
        SparseMatrix::<i32, f32>::csr((3, 3, 3), &offsets, &columns, &values).map(drop)
    })?;
    refused(
        case,
        "a column past n",
        "a CSR column index (element 1) is 3",
        || csr(&bad_columns, &offsets),
    )?;
    refused(case, "decreasing offsets", "CSR row offset 2 is 2", || {
        csr(&columns, &bad_offsets)
    })?;
    refused(
        case,
        "a dimension past i32",
        "more than an i32 index holds",
        || SparseMatrix::<i32, f32>::csr((1 << 31, 3, 3), &offsets, &columns, &values).map(drop),
    )?;
    refused(
        case,
        "a COO row past m",
        "a COO row index (element 2) is 2",
        || {
            let rows = case.pool.allocate_from_host(&[0i32, 0, 2], &case.stream)?;
            SparseMatrix::<i32, f32>::coo((2, 3, 3), &rows, &columns, &values).map(drop)
        },
    )?;
    refused(
        case,
        "a blocked ELL of odd blocks",
        "multiples of a non-zero block size",
        || SparseMatrix::<i32, f32>::blocked_ell((3, 4), (2, 2), &columns, &values).map(drop),
    )?;
    refused(
        case,
        "a block column past the blocks",
        "a block column index",
        || {
            let blocks = case.pool.allocate_from_host(&[5i32], &case.stream)?;
            let vals = case.pool.allocate_from_host(&[0.0f32; 4], &case.stream)?;
            SparseMatrix::<i32, f32>::blocked_ell((2, 4), (2, 2), &blocks, &vals).map(drop)
        },
    )?;
    refused(
        case,
        "a small leading dimension",
        "a leading dimension of at least 3",
        || DenseMatrix::<f32>::with_ld(2, 3, 2, Order::RowMajor, &values).map(drop),
    )?;
    refused(
        case,
        "a short dense matrix",
        "a 2 x 2 dense matrix needs 4 elements",
        || DenseMatrix::<f32>::new(2, 2, Order::ColumnMajor, &values).map(drop),
    )?;
    let a = SparseMatrix::<i32, f32>::csr((2, 3, 3), &offsets, &columns, &values).map_err(err)?;
    let mut c_values = case.upload(&[1.0f32, 2.0, 3.0])?;
    let xv3 = DenseVector::<f32>::new(&x3).map_err(err)?;
    let xv2 = DenseVector::<f32>::new(&x2).map_err(err)?;
    let read_only = DenseVector::<f32>::new(&x2).map_err(err)?;
    let mut yv2 = DenseVector::<f32>::new(&mut y2).map_err(err)?;
    let n = Operation::NonTranspose;
    let nn = (n, n);
    refused(
        case,
        "an SpMV's x of op(A)ᵀ",
        "takes x of 3 and y of 2 elements; x has 2",
        || sparse.spmv(n, (1.0, 0.0), &a, &xv2, &mut yv2, SpMvAlg::DEFAULT),
    )?;
    let mut read_only = read_only;
    refused(case, "a read-only y", "the SpMV's y is written", || {
        sparse.spmv(n, (1.0, 0.0), &a, &xv3, &mut read_only, SpMvAlg::DEFAULT)
    })?;
    let b32 = case.upload(&[0.0f32; 6])?;
    let mut c22 = case.upload(&[0.0f32; 4])?;
    let bm = DenseMatrix::<f32>::new(3, 2, Order::RowMajor, &b32).map_err(err)?;
    let bm_wrong = DenseMatrix::<f32>::new(2, 3, Order::RowMajor, &b32).map_err(err)?;
    let mut cm = DenseMatrix::<f32>::new(2, 2, Order::RowMajor, &mut c22).map_err(err)?;
    refused(
        case,
        "an SpMM of other inner dimensions",
        "op(B) 2 x 3",
        || sparse.spmm(nn, (1.0, 0.0), &a, &bm_wrong, &mut cm, SpMmAlg::DEFAULT),
    )?;
    let mut c_read_only = DenseMatrix::<f32>::new(2, 2, Order::RowMajor, &b32).map_err(err)?;
    refused(case, "a read-only C", "the SpMM's C is written", || {
        sparse.spmm(nn, (1.0, 0.0), &a, &bm, &mut c_read_only, SpMmAlg::DEFAULT)
    })?;
    let a2 = DenseMatrix::<f32>::new(2, 2, Order::RowMajor, &b32).map_err(err)?;
    let b23 = DenseMatrix::<f32>::new(2, 3, Order::RowMajor, &b32).map_err(err)?;
    let mut c_shared =
        SparseMatrix::<i32, f32>::csr((2, 3, 3), &offsets, &columns, &values).map_err(err)?;
    refused(
        case,
        "an SDDMM into read-only values",
        "the SDDMM's C is written",
        || sparse.sddmm(nn, (1.0, 0.0), &a2, &b23, &mut c_shared, SddmmAlg::DEFAULT),
    )?;
    let rows = case.upload(&[0i32, 0, 1])?;
    let mut c_coo =
        SparseMatrix::<i32, f32>::coo((2, 3, 3), &rows, &columns, &mut c_values).map_err(err)?;
    refused(
        case,
        "an SDDMM into COO",
        "the SDDMM's C must be a CSR matrix",
        || sparse.sddmm(nn, (1.0, 0.0), &a2, &b23, &mut c_coo, SddmmAlg::DEFAULT),
    )?;
    refused(case, "an SpGEMM of other shapes", "op(B) 2 x 3", || {
        sparse.spgemm(nn, 1.0, &a, &a, SpGemmAlg::DEFAULT).map(drop)
    })?;
    refused(
        case,
        "a sparse-to-dense of another shape",
        "cannot be written into",
        || sparse.sparse_to_dense(&a, &mut cm),
    )?;
    drop((xv3, xv2, read_only, yv2, bm, bm_wrong, cm, a, c_read_only));
    drop((a2, b23, c_shared, c_coo));
    Ok(())
}

fn spmv_budget(case: &Case) -> Result<(), String> {
    let offsets = case.upload(&[0i64, 1, 2])?;
    let columns = case.upload(&[1i64, 0])?;
    let values = case.upload(&[2.0f64, 3.0])?;
    let x = case.upload(&[1.0f64, 1.0])?;
    let mut y = case.upload(&[0.0f64; 2])?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let a = SparseMatrix::<i64, f64>::csr((2, 2, 2), &offsets, &columns, &values).map_err(err)?;
    let xv = DenseVector::new(&x).map_err(err)?;
    let mut yv = DenseVector::new(&mut y).map_err(err)?;
    let n = Operation::NonTranspose;
    sparse
        .spmv(n, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
        .map_err(err)?;
    case.stub.take_log();
    sparse
        .spmv(n, (1.0, 1.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
        .map_err(err)?;
    let calls = case.stub.take_log();
    let names: Vec<&str> = calls.iter().map(|call| call.name.as_str()).collect();
    ensure(sparse_calls(calls.clone()) == ["cusparseSpMV"], || {
        format!("a repeated SpMV called {names:?}")
    })?;
    ensure(!names.contains(&"cuMemAllocFromPoolAsync"), || {
        format!("a repeated SpMV allocated: {names:?}")
    })?;
    drop((xv, yv, a));
    let got: Vec<f64> = y.to_vec().map_err(err)?;
    ensure(got == [4.0, 6.0], || format!("2 A x is {got:?}"))
}

fn work_area(case: &Case) -> Result<(), String> {
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    ensure(sparse.workspace_bytes() == 0, || {
        "a new handle holds a work area".into()
    })?;
    sparse.reserve(1000).map_err(err)?;
    ensure(sparse.workspace_bytes() >= 1000, || {
        "reserve did not grow it".into()
    })?;
    let version = sparse.version().map_err(err)?;
    ensure(version == 12500, || format!("version {version}"))?;
    // An operation asking for no work area is given none (a null pointer, checked by the stub).
    case.sparse.set_buffer_size(Some(0));
    let offsets = case.upload(&[0i32, 1])?;
    let columns = case.upload(&[0i32])?;
    let values = case.upload(&[5.0f32])?;
    let x = case.upload(&[2.0f32])?;
    let mut y = case.upload(&[0.0f32])?;
    let fresh = Sparse::new(&case.stream).map_err(err)?;
    let a = SparseMatrix::<i32, f32>::csr((1, 1, 1), &offsets, &columns, &values).map_err(err)?;
    let xv = DenseVector::new(&x).map_err(err)?;
    let mut yv = DenseVector::new(&mut y).map_err(err)?;
    let n = Operation::NonTranspose;
    fresh
        .spmv(n, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::CSR_ALG1)
        .map_err(err)?;
    ensure(fresh.workspace_bytes() == 0, || {
        "an empty work area was allocated".into()
    })?;
    drop((xv, yv, a));
    fresh.close().map_err(err)?;
    let got: Vec<f32> = y.to_vec().map_err(err)?;
    ensure(got == [10.0], || format!("A x is {got:?}"))
}

fn preprocessing(case: &Case) -> Result<(), String> {
    let offsets = case.upload(&[0i32, 1, 2])?;
    let columns = case.upload(&[0i32, 1])?;
    let values = case.upload(&[2.0f32, 4.0])?;
    let x = case.upload(&[1.0f32, 1.0])?;
    let mut y = case.upload(&[0.0f32; 2])?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let mut a =
        SparseMatrix::<i32, f32>::csr((2, 2, 2), &offsets, &columns, &values).map_err(err)?;
    let xv = DenseVector::new(&x).map_err(err)?;
    let mut yv = DenseVector::new(&mut y).map_err(err)?;
    let n = Operation::NonTranspose;
    sparse
        .spmv_preprocess(n, (1.0, 0.0), &mut a, &xv, &mut yv, SpMvAlg::DEFAULT)
        .map_err(err)?;
    // The later SpMVs pass the matrix's buffer (the stub checks) and ask no size.
    case.stub.take_log();
    for _ in 0..2 {
        sparse
            .spmv(n, (1.0, 1.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
            .map_err(err)?;
    }
    let calls = sparse_calls(case.stub.take_log());
    ensure(calls == ["cusparseSpMV", "cusparseSpMV"], || {
        format!("called {calls:?}")
    })?;
    refused(
        case,
        "another algorithm",
        "preprocessed for cusparseSpMV with other",
        || sparse.spmv(n, (1.0, 1.0), &a, &xv, &mut yv, SpMvAlg::CSR_ALG2),
    )?;
    refused(
        case,
        "a second preprocessing",
        "was preprocessed for cusparseSpMV already",
        || sparse.spmv_preprocess(n, (1.0, 1.0), &mut a, &xv, &mut yv, SpMvAlg::DEFAULT),
    )?;
    drop((xv, yv, a));
    let got: Vec<f32> = y.to_vec().map_err(err)?;
    ensure(got == [4.0, 8.0], || format!("2 A x is {got:?}"))?;
    // Preprocessed by a handle on another stream, the matrix's buffer is ordered as an operand:
    // an SpMV on this stream waits for that stream, and that stream's later work (the buffer's
    // free) waits for the SpMV.
    let other = case
        .stream
        .device()
        .create_stream(Default::default())
        .map_err(err)?;
    let elsewhere = Sparse::new(&other).map_err(err)?;
    let mut b =
        SparseMatrix::<i32, f32>::csr((2, 2, 2), &offsets, &columns, &values).map_err(err)?;
    let xv = DenseVector::new(&x).map_err(err)?;
    let mut yv = DenseVector::new(&mut y).map_err(err)?;
    elsewhere
        .spmv_preprocess(n, (1.0, 0.0), &mut b, &xv, &mut yv, SpMvAlg::DEFAULT)
        .map_err(err)?;
    case.stub.take_log();
    sparse
        .spmv(n, (1.0, 0.0), &b, &xv, &mut yv, SpMvAlg::DEFAULT)
        .map_err(err)?;
    let calls: Vec<String> = case.stub.take_log().into_iter().map(|c| c.name).collect();
    let waits = calls.iter().filter(|c| *c == "cuStreamWaitEvent").count();
    ensure(waits >= 2, || {
        format!("an SpMV after another stream's preprocessing ordered nothing: {calls:?}")
    })
}

fn failures_carry_the_status(case: &Case) -> Result<(), String> {
    let offsets = case.upload(&[0i32, 1])?;
    let columns = case.upload(&[0i32])?;
    let values = case.upload(&[1.0f64])?;
    let x = case.upload(&[1.0f64])?;
    let mut y = case.upload(&[0.0f64])?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let a = SparseMatrix::<i32, f64>::csr((1, 1, 1), &offsets, &columns, &values).map_err(err)?;
    let xv = DenseVector::new(&x).map_err(err)?;
    let mut yv = DenseVector::new(&mut y).map_err(err)?;
    case.stub.fail("cusparseSpMV", 6, 1);
    let n = Operation::NonTranspose;
    let error = sparse
        .spmv(n, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
        .err()
        .ok_or("the injected failure was lost")?;
    let inner = error
        .library_error::<CusparseError>()
        .ok_or_else(|| format!("not a cuSPARSE error: {error:?}"))?;
    ensure(
        inner.api == "cusparseSpMV"
            && inner.code.0 == 6
            && inner.name == "CUSPARSE_STATUS_EXECUTION_FAILED",
        || format!("{inner:?}"),
    )?;
    case.stub.fail("cusparseSpMV_bufferSize", 10, 1);
    let fresh = Sparse::new(&case.stream).map_err(err)?;
    let error = fresh
        .spmv(n, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
        .err()
        .ok_or("the injected failure was lost")?;
    ensure(error.is_not_supported(), || format!("{error}"))
}
