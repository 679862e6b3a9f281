//! A checked SpMV with `cuda_safe_libs::sparse`: the 1-D Laplacian (2 on the diagonal, -1 beside
//! it) of 100,000 points in CSR, times a smooth vector, on the GPU; then the same product
//! preprocessed once and repeated. Checks every element against the product computed on the
//! CPU in f64; exits non-zero on a mismatch.
//!
//! ```text
//! cargo run -p cuda-safe-libs --example sparse_laplacian
//! ```

use std::process::ExitCode;

use cuda_safe::{Device, Result};
use cuda_safe_libs::sparse::{DenseVector, Operation, SpMvAlg, Sparse, SparseMatrix};

/// Points of the grid.
const N: usize = 100_000;

/// The Laplacian's CSR arrays: row offsets, column indices, values.
fn laplacian() -> (Vec<i32>, Vec<i32>, Vec<f64>) {
    let (mut offsets, mut columns, mut values) = (vec![0i32], Vec::new(), Vec::new());
    for row in 0..N {
        for (column, value) in [(row.wrapping_sub(1), -1.0), (row, 2.0), (row + 1, -1.0)] {
            if column < N {
                columns.push(column as i32);
                values.push(value);
            }
        }
        offsets.push(columns.len() as i32);
    }
    (offsets, columns, values)
}

fn run() -> Result<bool> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let sparse = Sparse::new(&stream)?;
    let (offsets, columns, values) = laplacian();
    let nnz = values.len();
    let x: Vec<f64> = (0..N).map(|i| (i as f64 / N as f64 * 6.0).sin()).collect();
    let d_offsets = pool.allocate_from_host(&offsets, &stream)?;
    let d_columns = pool.allocate_from_host(&columns, &stream)?;
    let d_values = pool.allocate_from_host(&values, &stream)?;
    let d_x = pool.allocate_from_host(&x, &stream)?;
    let mut d_y = pool.allocate_zeroed::<f64>(N, &stream)?;
    // The checked constructor copies the indices back and checks every one.
    let mut a = SparseMatrix::<i32, f64>::csr((N, N, nnz), &d_offsets, &d_columns, &d_values)?;
    let x_vec = DenseVector::new(&d_x)?;
    let mut y_vec = DenseVector::new(&mut d_y)?;
    let op = Operation::NonTranspose;
    sparse.spmv(op, (1.0, 0.0), &a, &x_vec, &mut y_vec, SpMvAlg::DEFAULT)?;
    // Preprocessed once, the matrix keeps its analysis for every later SpMV (y = A x + y twice
    // more: 3 A x in all).
    sparse.spmv_preprocess(op, (1.0, 1.0), &mut a, &x_vec, &mut y_vec, SpMvAlg::DEFAULT)?;
    for _ in 0..2 {
        sparse.spmv(op, (1.0, 1.0), &a, &x_vec, &mut y_vec, SpMvAlg::DEFAULT)?;
    }
    drop((y_vec, x_vec, a));
    let got = d_y.to_vec::<f64>()?;
    let mut worst: f64 = 0.0;
    for row in 0..N {
        let start = offsets[row] as usize;
        let end = offsets[row + 1] as usize;
        let want: f64 = 3.0
            * (start..end)
                .map(|e| values[e] * x[columns[e] as usize])
                .sum::<f64>();
        worst = worst.max((got[row] - want).abs());
    }
    println!("3 A x of the {N}-point Laplacian: worst error {worst:.3e}");
    Ok(worst <= 1e-12)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("the SpMV does not match the CPU");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
