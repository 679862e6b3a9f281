//! The operations' results against dense references: SpMV (CSR and COO, both operations),
//! SpMM (CSR and blocked ELL, both orders), SDDMM, SpGEMM and the conversions, for `i32` and
//! `i64` indices and `f32` and `f64` values.

use cuda_safe_libs::sparse::{
    DenseMatrix, DenseVector, Operation, Order, SddmmAlg, SpGemmAlg, SpMmAlg, SpMvAlg, Sparse,
    SparseFormat, SparseMatrix,
};

use super::{Case, CaseFn, Index, Real, at, close, data, download, err, sparse_dense};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    ("SpMV (CSR and COO) against the dense product", spmv_all),
    (
        "SpMM (CSR and blocked ELL) against the dense product",
        spmm_all,
    ),
    ("SDDMM against the sampled dense product", sddmm_all),
    ("SpGEMM against the dense product", spgemm_all),
    ("dense to CSR and back", conversions_all),
];

const OPS: [Operation; 2] = [Operation::NonTranspose, Operation::Transpose];

fn spmv_all(case: &Case) -> Result<(), String> {
    spmv::<i32, f32>(case, 1e-5)?;
    spmv::<i64, f64>(case, 1e-12)?;
    spmv::<i32, f64>(case, 1e-12)?;
    spmv::<i64, f32>(case, 1e-5)
}

fn spmv<I: Index, T: Real>(case: &Case, tolerance: f64) -> Result<(), String> {
    let (rows, cols) = (7, 5);
    let dense = sparse_dense(rows, cols, 1);
    let csr = case.csr::<I, T>(&dense, (rows, cols))?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    // The COO arrays of the same matrix.
    let coo_rows: Vec<I> = (0..rows * cols)
        .filter(|&at| dense[at] != 0.0)
        .map(|at| I::of(at / cols))
        .collect();
    let coo_rows = case.upload(&coo_rows)?;
    let shape = (rows, cols, csr.nnz);
    let a =
        SparseMatrix::<I, T>::csr(shape, &csr.offsets, &csr.columns, &csr.values).map_err(err)?;
    let b = SparseMatrix::<I, T>::coo(shape, &coo_rows, &csr.columns, &csr.values).map_err(err)?;
    for op in OPS {
        let (m, k) = if op == Operation::Transpose {
            (cols, rows)
        } else {
            (rows, cols)
        };
        let x_host = data(k, 2);
        let y_host = data(m, 3);
        let x = case.upload_as::<T>(&x_host)?;
        for (format, matrix) in [("CSR", &a), ("COO", &b)] {
            let mut y = case.upload_as::<T>(&y_host)?;
            let xv = DenseVector::<T>::new(&x).map_err(err)?;
            let mut yv = DenseVector::<T>::new(&mut y).map_err(err)?;
            let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
            sparse
                .spmv(op, (alpha, beta), matrix, &xv, &mut yv, SpMvAlg::DEFAULT)
                .map_err(err)?;
            drop((xv, yv));
            let want: Vec<f64> = (0..m)
                .map(|i| {
                    let dot: f64 = (0..k)
                        .map(|l| at(&dense, cols, op == Operation::Transpose, (i, l)) * x_host[l])
                        .sum();
                    1.5 * dot - 0.5 * y_host[i]
                })
                .collect();
            let what = format!("SpMV {format} {op:?} {} {}", I::NAME, T::NAME);
            close(&what, &download::<T>(&y)?, &want, tolerance)?;
        }
    }
    Ok(())
}

fn spmm_all(case: &Case) -> Result<(), String> {
    spmm::<i32, f32>(case, 1e-5)?;
    spmm::<i64, f64>(case, 1e-12)?;
    blocked_ell::<i32, f64>(case)
}

fn spmm<I: Index, T: Real>(case: &Case, tolerance: f64) -> Result<(), String> {
    let (rows, cols, n) = (6, 4, 3);
    let dense = sparse_dense(rows, cols, 4);
    let csr = case.csr::<I, T>(&dense, (rows, cols))?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let shape = (rows, cols, csr.nnz);
    let a =
        SparseMatrix::<I, T>::csr(shape, &csr.offsets, &csr.columns, &csr.values).map_err(err)?;
    for (op_a, order) in [
        (Operation::NonTranspose, Order::RowMajor),
        (Operation::Transpose, Order::ColumnMajor),
    ] {
        let (m, k) = if op_a == Operation::Transpose {
            (cols, rows)
        } else {
            (rows, cols)
        };
        // B is k x n; C is m x n, both in `order`.
        let b_host = data(k * n, 5);
        let c_host = data(m * n, 6);
        let index = |i: usize, j: usize, r: usize, c: usize| match order {
            Order::RowMajor => i * c + j,
            Order::ColumnMajor => i + j * r,
        };
        let b = case.upload_as::<T>(&b_host)?;
        let mut c = case.upload_as::<T>(&c_host)?;
        let bm = DenseMatrix::<T>::new(k, n, order, &b).map_err(err)?;
        let mut cm = DenseMatrix::<T>::new(m, n, order, &mut c).map_err(err)?;
        let ops = (op_a, Operation::NonTranspose);
        let scalars = (T::from_f64(2.0), T::from_f64(1.0));
        sparse
            .spmm(ops, scalars, &a, &bm, &mut cm, SpMmAlg::DEFAULT)
            .map_err(err)?;
        drop((bm, cm));
        let mut want = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k)
                    .map(|l| {
                        at(&dense, cols, op_a == Operation::Transpose, (i, l))
                            * b_host[index(l, j, k, n)]
                    })
                    .sum();
                want[index(i, j, m, n)] = 2.0 * dot + c_host[index(i, j, m, n)];
            }
        }
        let what = format!("SpMM {op_a:?} {order:?} {} {}", I::NAME, T::NAME);
        close(&what, &download::<T>(&c)?, &want, tolerance)?;
    }
    Ok(())
}

/// A 4 x 6 blocked-ELL matrix of 2-blocks, one block row padded, times a dense 6 x 2.
fn blocked_ell<I: Index, T: Real>(case: &Case) -> Result<(), String> {
    let (rows, cols, block, ell_cols) = (4, 6, 2, 4);
    let block_cols: Vec<I> = [0i64, 2, 1, -1].map(I::signed).to_vec();
    let values = data(rows * ell_cols, 7);
    let mut dense = vec![0.0; rows * cols];
    for r in 0..rows {
        for k in 0..ell_cols / block {
            let bc = [[0i64, 2], [1, -1]][r / block][k];
            if bc < 0 {
                continue;
            }
            for j in 0..block {
                dense[r * cols + bc as usize * block + j] = values[r * ell_cols + k * block + j];
            }
        }
    }
    let indices = case.upload(&block_cols)?;
    let vals = case.upload_as::<T>(&values)?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let a = SparseMatrix::<I, T>::blocked_ell((rows, cols), (block, ell_cols), &indices, &vals)
        .map_err(err)?;
    if a.format()
        != (SparseFormat::BlockedEll {
            block_size: 2,
            ell_cols: 4,
        })
    {
        return Err(format!("the format is {:?}", a.format()));
    }
    let n = 2;
    let b_host = data(cols * n, 8);
    let b = case.upload_as::<T>(&b_host)?;
    let mut c = case.upload_as::<T>(&vec![0.0; rows * n])?;
    let bm = DenseMatrix::<T>::new(cols, n, Order::RowMajor, &b).map_err(err)?;
    let mut cm = DenseMatrix::<T>::new(rows, n, Order::RowMajor, &mut c).map_err(err)?;
    let scalars = (T::from_f64(1.0), T::from_f64(0.0));
    let ops = (Operation::NonTranspose, Operation::NonTranspose);
    sparse
        .spmm(ops, scalars, &a, &bm, &mut cm, SpMmAlg::BLOCKED_ELL_ALG1)
        .map_err(err)?;
    drop((bm, cm));
    let want: Vec<f64> = (0..rows * n)
        .map(|at| {
            (0..cols)
                .map(|l| dense[at / n * cols + l] * b_host[l * n + at % n])
                .sum()
        })
        .collect();
    close("SpMM blocked ELL", &download::<T>(&c)?, &want, 1e-12)
}

fn sddmm_all(case: &Case) -> Result<(), String> {
    sddmm::<i32, f32>(case, 1e-5)?;
    sddmm::<i64, f64>(case, 1e-12)
}

fn sddmm<I: Index, T: Real>(case: &Case, tolerance: f64) -> Result<(), String> {
    let (m, k, n) = (5, 3, 4);
    let pattern = sparse_dense(m, n, 9);
    let csr = case.csr::<I, T>(&pattern, (m, n))?;
    let a_host = data(m * k, 10);
    let b_host = data(k * n, 11);
    let (a, b) = (case.upload_as::<T>(&a_host)?, case.upload_as::<T>(&b_host)?);
    let mut values = csr.values;
    let old = download::<T>(&values)?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let am = DenseMatrix::<T>::new(m, k, Order::RowMajor, &a).map_err(err)?;
    let bm = DenseMatrix::<T>::new(k, n, Order::RowMajor, &b).map_err(err)?;
    let mut c = SparseMatrix::<I, T>::csr((m, n, csr.nnz), &csr.offsets, &csr.columns, &mut values)
        .map_err(err)?;
    let ops = (Operation::NonTranspose, Operation::NonTranspose);
    let scalars = (T::from_f64(1.0), T::from_f64(0.5));
    sparse
        .sddmm(ops, scalars, &am, &bm, &mut c, SddmmAlg::DEFAULT)
        .map_err(err)?;
    drop(c);
    let mut want = Vec::new();
    for i in 0..m {
        for j in 0..n {
            if pattern[i * n + j] != 0.0 {
                let dot: f64 = (0..k).map(|l| a_host[i * k + l] * b_host[l * n + j]).sum();
                want.push(dot + 0.5 * old[want.len()]);
            }
        }
    }
    close("SDDMM", &download::<T>(&values)?, &want, tolerance)
}

fn spgemm_all(case: &Case) -> Result<(), String> {
    spgemm::<i32, f32>(case, 1e-5)?;
    spgemm::<i64, f64>(case, 1e-12)
}

fn spgemm<I: Index, T: Real>(case: &Case, tolerance: f64) -> Result<(), String> {
    let (m, k, n) = (6, 5, 4);
    let (a_dense, b_dense) = (sparse_dense(m, k, 12), sparse_dense(k, n, 13));
    let (a_csr, b_csr) = (
        case.csr::<I, T>(&a_dense, (m, k))?,
        case.csr::<I, T>(&b_dense, (k, n))?,
    );
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let a = SparseMatrix::<I, T>::csr(
        (m, k, a_csr.nnz),
        &a_csr.offsets,
        &a_csr.columns,
        &a_csr.values,
    )
    .map_err(err)?;
    let b = SparseMatrix::<I, T>::csr(
        (k, n, b_csr.nnz),
        &b_csr.offsets,
        &b_csr.columns,
        &b_csr.values,
    )
    .map_err(err)?;
    let ops = (Operation::NonTranspose, Operation::NonTranspose);
    let c = sparse
        .spgemm(ops, T::from_f64(2.0), &a, &b, SpGemmAlg::DEFAULT)
        .map_err(err)?;
    // The product, densified by cuSPARSE, against the dense product.
    let mut dense_c = case.upload_as::<T>(&vec![9.0; m * n])?;
    let cm = c.matrix().map_err(err)?;
    let mut dm = DenseMatrix::<T>::new(m, n, Order::RowMajor, &mut dense_c).map_err(err)?;
    sparse.sparse_to_dense(&cm, &mut dm).map_err(err)?;
    drop((cm, dm));
    let want: Vec<f64> = (0..m * n)
        .map(|at| {
            2.0 * (0..k)
                .map(|l| a_dense[at / n * k + l] * b_dense[l * n + at % n])
                .sum::<f64>()
        })
        .collect();
    close("SpGEMM", &download::<T>(&dense_c)?, &want, tolerance)?;
    let offsets: Vec<I> = c.row_offsets().to_vec().map_err(err)?;
    let last = offsets.last().map(|o| o.to_i64());
    if last != Some(c.nnz() as i64) || offsets.len() != m + 1 {
        return Err(format!("SpGEMM's offsets end at {last:?}; nnz {}", c.nnz()));
    }
    Ok(())
}

fn conversions_all(case: &Case) -> Result<(), String> {
    conversions::<i32, f32>(case)?;
    conversions::<i64, f64>(case)
}

fn conversions<I: Index, T: Real>(case: &Case) -> Result<(), String> {
    let (m, n) = (5, 6);
    let dense = sparse_dense(m, n, 14);
    let want_nnz = dense.iter().filter(|v| **v != 0.0).count();
    let host = case.upload_as::<T>(&dense)?;
    let sparse = Sparse::new(&case.stream).map_err(err)?;
    let dm = DenseMatrix::<T>::new(m, n, Order::RowMajor, &host).map_err(err)?;
    let csr = sparse.dense_to_csr::<I, T>(&dm).map_err(err)?;
    if csr.nnz() != want_nnz || csr.shape() != (m, n) {
        return Err(format!("dense to CSR: {csr:?}, want {want_nnz} elements"));
    }
    let reference = case.csr::<I, T>(&dense, (m, n))?;
    let columns: Vec<I> = csr.col_indices().to_vec().map_err(err)?;
    let want_columns: Vec<I> = reference.columns.to_vec().map_err(err)?;
    if bytemuck::cast_slice::<I, u8>(&columns) != bytemuck::cast_slice::<I, u8>(&want_columns) {
        return Err("dense to CSR: other column indices".into());
    }
    // Column-major back, so the order is exercised too.
    let mut back = case.upload_as::<T>(&vec![7.0; m * n])?;
    let mut bm = DenseMatrix::<T>::new(m, n, Order::ColumnMajor, &mut back).map_err(err)?;
    sparse
        .sparse_to_dense(&csr.matrix().map_err(err)?, &mut bm)
        .map_err(err)?;
    drop(bm);
    let got = download::<T>(&back)?;
    let want: Vec<f64> = (0..m * n).map(|at| dense[(at % m) * n + at / m]).collect();
    close("CSR to dense", &got, &want, 1e-6)
}
