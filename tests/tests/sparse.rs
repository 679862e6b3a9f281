//! cuSPARSE on a real GPU (feature `sparse`), every result against a dense product computed on
//! the CPU in f64: SpMV (CSR and COO, both operations, preprocessed or not), SpMM (CSR and
//! blocked ELL), SDDMM, SpGEMM and the conversions, in f32 and f64 with `i32` and `i64`
//! indices (SpGEMM with `i32`, which every cuSPARSE takes); a column index past `n` refused
//! before cuSPARSE sees it; an SpMV captured into a graph and replayed on new inputs.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Buffer, CaptureMode, Device, DeviceMemoryResource, Error, Graph, Stream};
use cuda_safe_libs::sparse::{
    DenseMatrix, DenseVector, Operation, Order, SddmmAlg, SpGemmAlg, SpMmAlg, SpMvAlg, Sparse,
    SparseIndex, SparseMatrix, SparseValue,
};

struct Setup {
    stream: Stream,
    pool: DeviceMemoryResource,
}

fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    Setup { stream, pool }
}

/// The value types, their tolerance and conversions.
trait Real: SparseValue<Scalar = Self> + Copy {
    const TOLERANCE: f64;
    fn of(value: f64) -> Self;
    fn value(self) -> f64;
}

impl Real for f32 {
    const TOLERANCE: f64 = 1e-5;
    fn of(value: f64) -> Self {
        value as f32
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    const TOLERANCE: f64 = 1e-12;
    fn of(value: f64) -> Self {
        value
    }
    fn value(self) -> f64 {
        self
    }
}

/// The index types.
trait Index: SparseIndex + TryFrom<i64> {
    fn of(value: usize) -> Self {
        Self::try_from(value as i64).ok().unwrap()
    }
}

impl Index for i32 {}
impl Index for i64 {}

/// `n` values in [-1, 1) from `seed` (an LCG).
fn random(n: usize, mut seed: u64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// A row-major `rows` x `cols` matrix, about one element in four non-zero.
fn sparse_dense(rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    let mask = random(rows * cols, seed ^ 0x55);
    random(rows * cols, seed)
        .into_iter()
        .zip(mask)
        .map(|(v, m)| if m > 0.5 { v } else { 0.0 })
        .collect()
}

fn upload<T: Real>(s: &Setup, host: &[f64]) -> Buffer {
    let typed: Vec<T> = host.iter().map(|&v| T::of(v)).collect();
    s.pool.allocate_from_host(&typed, &s.stream).unwrap()
}

fn download<T: Real>(buffer: &Buffer) -> Vec<f64> {
    buffer
        .to_vec::<T>()
        .unwrap()
        .into_iter()
        .map(T::value)
        .collect()
}

/// Asserts `got` is `want` within the type's tolerance times the largest magnitude.
fn check<T: Real>(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        let tolerance = T::TOLERANCE * scale * 10.0;
        assert!(
            (g - w).abs() <= tolerance,
            "{what}: {index}: got {g}, want {w}"
        );
    }
}

/// The CSR arrays of a row-major dense matrix, uploaded, and its nnz.
fn csr<I: Index, T: Real>(
    s: &Setup,
    dense: &[f64],
    cols: usize,
) -> (Buffer, Buffer, Buffer, usize) {
    let (mut offsets, mut columns, mut values) = (vec![I::of(0)], Vec::new(), Vec::new());
    for (at, &v) in dense.iter().enumerate() {
        if v != 0.0 {
            columns.push(I::of(at % cols));
            values.push(v);
        }
        if at % cols == cols - 1 {
            offsets.push(I::of(columns.len()));
        }
    }
    let offsets = s.pool.allocate_from_host(&offsets, &s.stream).unwrap();
    let columns = s.pool.allocate_from_host(&columns, &s.stream).unwrap();
    (offsets, columns, upload::<T>(s, &values), values.len())
}

/// y = 1.5 op(A) x - 0.5 y for CSR and COO, both operations, and preprocessed.
fn spmv_case<I: Index, T: Real>() {
    let s = setup();
    let (rows, cols) = (300, 200);
    let dense = sparse_dense(rows, cols, 1);
    let (offsets, columns, values, nnz) = csr::<I, T>(&s, &dense, cols);
    let coo_rows: Vec<I> = (0..rows * cols)
        .filter(|&at| dense[at] != 0.0)
        .map(|at| I::of(at / cols))
        .collect();
    let coo_rows = s.pool.allocate_from_host(&coo_rows, &s.stream).unwrap();
    let sparse = Sparse::new(&s.stream).unwrap();
    let shape = (rows, cols, nnz);
    let mut a = SparseMatrix::<I, T>::csr(shape, &offsets, &columns, &values).unwrap();
    let mut b = SparseMatrix::<I, T>::coo(shape, &coo_rows, &columns, &values).unwrap();
    for (op, preprocess) in [
        (Operation::NonTranspose, false),
        (Operation::Transpose, false),
        (Operation::NonTranspose, true),
    ] {
        let t = op == Operation::Transpose;
        let (m, k) = if t { (cols, rows) } else { (rows, cols) };
        let (x_host, y_host) = (random(k, 2), random(m, 3));
        let want: Vec<f64> = (0..m)
            .map(|i| {
                let dot: f64 = (0..k)
                    .map(|l| if t { dense[l * cols + i] } else { dense[i * cols + l] } * x_host[l])
                    .sum();
                1.5 * dot - 0.5 * y_host[i]
            })
            .collect();
        let x = upload::<T>(&s, &x_host);
        for format in ["CSR", "COO"] {
            let mut y = upload::<T>(&s, &y_host);
            let xv = DenseVector::<T>::new(&x).unwrap();
            let mut yv = DenseVector::<T>::new(&mut y).unwrap();
            let scalars = (T::of(1.5), T::of(-0.5));
            let matrix = if format == "CSR" { &mut a } else { &mut b };
            // cuSPARSE's SpMV preprocessing is for CSR.
            if preprocess && format == "CSR" {
                sparse
                    .spmv_preprocess(op, scalars, matrix, &xv, &mut yv, SpMvAlg::DEFAULT)
                    .unwrap();
            }
            sparse
                .spmv(op, scalars, matrix, &xv, &mut yv, SpMvAlg::DEFAULT)
                .unwrap();
            drop((xv, yv));
            let what = format!(
                "SpMV {format} {op:?} preprocessed {preprocess} {} {}",
                I::NAME,
                T::NAME
            );
            check::<T>(&what, &download::<T>(&y), &want);
        }
    }
}

fn spmv_matches_the_dense_product() {
    spmv_case::<i32, f32>();
    spmv_case::<i64, f32>();
    spmv_case::<i32, f64>();
    spmv_case::<i64, f64>();
}

fn spmm_case<I: Index, T: Real>(order: Order) {
    let s = setup();
    let (m, k, n) = (256, 192, 64);
    let dense = sparse_dense(m, k, 4);
    let (offsets, columns, values, nnz) = csr::<I, T>(&s, &dense, k);
    let a = SparseMatrix::<I, T>::csr((m, k, nnz), &offsets, &columns, &values).unwrap();
    let index = |i: usize, j: usize, r: usize, c: usize| match order {
        Order::RowMajor => i * c + j,
        Order::ColumnMajor => i + j * r,
    };
    let b_host = random(k * n, 5);
    let b = upload::<T>(&s, &b_host);
    let mut c = upload::<T>(&s, &vec![0.0; m * n]);
    let sparse = Sparse::new(&s.stream).unwrap();
    let bm = DenseMatrix::<T>::new(k, n, order, &b).unwrap();
    let mut cm = DenseMatrix::<T>::new(m, n, order, &mut c).unwrap();
    let nn = (Operation::NonTranspose, Operation::NonTranspose);
    sparse
        .spmm(
            nn,
            (T::of(1.0), T::of(0.0)),
            &a,
            &bm,
            &mut cm,
            SpMmAlg::DEFAULT,
        )
        .unwrap();
    drop((bm, cm));
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            want[index(i, j, m, n)] = (0..k)
                .map(|l| dense[i * k + l] * b_host[index(l, j, k, n)])
                .sum();
        }
    }
    check::<T>(
        &format!("SpMM {order:?} {} {}", I::NAME, T::NAME),
        &download::<T>(&c),
        &want,
    );
}

fn spmm_matches_the_dense_product() {
    spmm_case::<i32, f32>(Order::RowMajor);
    spmm_case::<i64, f64>(Order::ColumnMajor);
    spmm_case::<i32, f64>(Order::RowMajor);
    spmm_case::<i64, f32>(Order::ColumnMajor);
}

fn sddmm_and_spgemm_match_the_dense_products() {
    let s = setup();
    let sparse = Sparse::new(&s.stream).unwrap();
    let (m, k, n) = (64, 32, 48);
    // SDDMM, f32, i32: C = A B sampled at C's pattern.
    let pattern = sparse_dense(m, n, 6);
    let (offsets, columns, mut values, nnz) = csr::<i32, f32>(&s, &pattern, n);
    let (a_host, b_host) = (random(m * k, 7), random(k * n, 8));
    let (a, b) = (upload::<f32>(&s, &a_host), upload::<f32>(&s, &b_host));
    let am = DenseMatrix::<f32>::new(m, k, Order::RowMajor, &a).unwrap();
    let bm = DenseMatrix::<f32>::new(k, n, Order::RowMajor, &b).unwrap();
    let mut c =
        SparseMatrix::<i32, f32>::csr((m, n, nnz), &offsets, &columns, &mut values).unwrap();
    let nn = (Operation::NonTranspose, Operation::NonTranspose);
    sparse
        .sddmm(nn, (1.0, 0.0), &am, &bm, &mut c, SddmmAlg::DEFAULT)
        .unwrap();
    drop(c);
    let want: Vec<f64> = (0..m * n)
        .filter(|&at| pattern[at] != 0.0)
        .map(|at| {
            (0..k)
                .map(|l| a_host[at / n * k + l] * b_host[l * n + at % n])
                .sum()
        })
        .collect();
    check::<f32>("SDDMM", &download::<f32>(&values), &want);
    // SpGEMM, f64, i32: C = 2 A B, then densified.
    let (a_dense, b_dense) = (sparse_dense(m, k, 9), sparse_dense(k, n, 10));
    let (ao, ac, av, an) = csr::<i32, f64>(&s, &a_dense, k);
    let (bo, bc, bv, bn) = csr::<i32, f64>(&s, &b_dense, n);
    let a = SparseMatrix::<i32, f64>::csr((m, k, an), &ao, &ac, &av).unwrap();
    let b = SparseMatrix::<i32, f64>::csr((k, n, bn), &bo, &bc, &bv).unwrap();
    let product = sparse.spgemm(nn, 2.0, &a, &b, SpGemmAlg::DEFAULT).unwrap();
    let mut dense_c = upload::<f64>(&s, &vec![5.0; m * n]);
    let mut dm = DenseMatrix::<f64>::new(m, n, Order::RowMajor, &mut dense_c).unwrap();
    sparse
        .sparse_to_dense(&product.matrix().unwrap(), &mut dm)
        .unwrap();
    drop(dm);
    let want: Vec<f64> = (0..m * n)
        .map(|at| {
            2.0 * (0..k)
                .map(|l| a_dense[at / n * k + l] * b_dense[l * n + at % n])
                .sum::<f64>()
        })
        .collect();
    check::<f64>("SpGEMM", &download::<f64>(&dense_c), &want);
    // Dense to CSR and back, i64 and f32.
    let dense = sparse_dense(m, n, 11);
    let host = upload::<f32>(&s, &dense);
    let source = DenseMatrix::<f32>::new(m, n, Order::RowMajor, &host).unwrap();
    let converted = sparse.dense_to_csr::<i64, f32>(&source).unwrap();
    assert_eq!(converted.nnz(), dense.iter().filter(|v| **v != 0.0).count());
    let mut back = upload::<f32>(&s, &vec![3.0; m * n]);
    let mut bm = DenseMatrix::<f32>::new(m, n, Order::RowMajor, &mut back).unwrap();
    sparse
        .sparse_to_dense(&converted.matrix().unwrap(), &mut bm)
        .unwrap();
    drop(bm);
    check::<f32>("dense to CSR and back", &download::<f32>(&back), &dense);
}

fn a_column_past_n_is_refused() {
    let s = setup();
    let offsets = s.pool.allocate_from_host(&[0i32, 1, 2], &s.stream).unwrap();
    let columns = s.pool.allocate_from_host(&[0i32, 2], &s.stream).unwrap();
    let values = s
        .pool
        .allocate_from_host(&[1.0f32, 1.0], &s.stream)
        .unwrap();
    let refused = SparseMatrix::<i32, f32>::csr((2, 2, 2), &offsets, &columns, &values);
    assert!(
        matches!(refused, Err(Error::InvalidArgument(_))),
        "{refused:?}"
    );
}

fn a_captured_spmv_replays_on_new_inputs() {
    let s = setup();
    let n = 4096;
    // The 1-D Laplacian.
    let mut dense = vec![0.0; n * n];
    for i in 0..n {
        dense[i * n + i] = 2.0;
        if i > 0 {
            dense[i * n + i - 1] = -1.0;
        }
        if i + 1 < n {
            dense[i * n + i + 1] = -1.0;
        }
    }
    let (offsets, columns, values, nnz) = csr::<i32, f32>(&s, &dense, n);
    let a = SparseMatrix::<i32, f32>::csr((n, n, nnz), &offsets, &columns, &values).unwrap();
    let mut x = upload::<f32>(&s, &vec![0.0; n]);
    let mut y = upload::<f32>(&s, &vec![0.0; n]);
    let sparse = Sparse::new(&s.stream).unwrap();
    let op = Operation::NonTranspose;
    {
        let xv = DenseVector::<f32>::new(&x).unwrap();
        let mut yv = DenseVector::<f32>::new(&mut y).unwrap();
        // Once before the capture, so the work area is there.
        sparse
            .spmv(op, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
            .unwrap();
        s.stream.sync().unwrap();
        // SAFETY: the matrix, the vectors, their buffers and the handle (with its work area)
        // outlive the graph and its executable (dropped at the end of this block); nothing is
        // allocated on the stream while it captures.
        let graph = unsafe {
            Graph::capture(&s.stream, CaptureMode::ThreadLocal, |_| {
                sparse.spmv(op, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)
            })
        }
        .unwrap();
        let exec = graph.instantiate().unwrap();
        drop((xv, yv));
        for seed in [31u64, 32] {
            let x_host: Vec<f64> = random(n, seed);
            let typed: Vec<f32> = x_host.iter().map(|&v| v as f32).collect();
            x.copy_from_host(&typed).unwrap();
            exec.launch(&s.stream).unwrap();
            s.stream.sync().unwrap();
            let want: Vec<f64> = (0..n)
                .map(|i| {
                    (0..n)
                        .filter(|&j| j + 1 >= i && j <= i + 1)
                        .map(|j| dense[i * n + j] * f64::from(typed[j]))
                        .sum()
                })
                .collect();
            check::<f32>(&format!("replay {seed}"), &download::<f32>(&y), &want);
        }
    }
    println!("cuSPARSE {}", sparse.version().unwrap());
}

pub(crate) const FILE: GpuFile = gpu_file![
    spmv_matches_the_dense_product,
    spmm_matches_the_dense_product,
    sddmm_and_spgemm_match_the_dense_products,
    a_column_past_n_is_refused,
    a_captured_spmv_replays_on_new_inputs,
];
