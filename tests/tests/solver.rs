//! cuSOLVER on a real GPU (feature `solver`), each factorization checked by reconstruction
//! against the input on the CPU: ‖P A − L U‖, ‖A − L Lᵀ‖, ‖A − Q R‖, ‖A − V Λ Vᵀ‖ and
//! ‖A − U Σ Vᵀ‖, relative to ‖A‖ (max norms), at most `n · ε · 100` (ε of the type: about 2e-16
//! for f64, 1.2e-7 for f32), in f32 and f64; the typed errors of a singular matrix and of one
//! that is not positive definite; batched Jacobi SVDs; a factorization and solve captured into a
//! graph and replayed.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Buffer, CaptureMode, Device, DeviceMemoryResource, Graph, Stream};
use cuda_safe_libs::solver::{
    CusolverError, Fill, Layout, Side, Solver, SolverElement, SvdVectors, Transpose,
};

struct Setup {
    device: Device,
    stream: Stream,
    pool: DeviceMemoryResource,
}

fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    Setup {
        device,
        stream,
        pool,
    }
}

/// The element types, their machine epsilon and conversions.
trait Real: SolverElement + std::fmt::Debug {
    const EPSILON: f64;
    fn of(value: f64) -> Self;
    fn value(self) -> f64;
}

impl Real for f32 {
    const EPSILON: f64 = f32::EPSILON as f64;
    fn of(value: f64) -> Self {
        value as f32
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    const EPSILON: f64 = f64::EPSILON;
    fn of(value: f64) -> Self {
        value
    }
    fn value(self) -> f64 {
        self
    }
}

/// `n` values in [-1, 1) from `seed` (xorshift), as the type rounds them.
fn random<T: Real>(n: usize, mut seed: u64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            T::of((seed >> 11) as f64 / (1u64 << 52) as f64 - 1.0).value()
        })
        .collect()
}

fn upload<T: Real>(s: &Setup, values: &[f64]) -> Buffer {
    let typed: Vec<T> = values.iter().map(|&v| T::of(v)).collect();
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

/// The packed column-major product of `a` (m x k) and `b` (k x n).
fn product(a: &[f64], b: &[f64], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for j in 0..n {
        for p in 0..k {
            let y = b[p + j * k];
            for i in 0..m {
                c[i + j * m] += a[i + p * m] * y;
            }
        }
    }
    c
}

fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut t = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            t[j + i * n] = a[i + j * m];
        }
    }
    t
}

/// Asserts max|got − want| ≤ n ε 100 max|want|.
fn assert_close<T: Real>(what: &str, got: &[f64], want: &[f64], n: usize) {
    let scale = want.iter().fold(1e-30f64, |max, v| max.max(v.abs()));
    let worst = got
        .iter()
        .zip(want)
        .fold(0.0f64, |max, (g, w)| max.max((g - w).abs()));
    let bound = n as f64 * T::EPSILON * 100.0;
    assert!(
        worst / scale <= bound,
        "{what}: relative error {:.3e} over {bound:.3e}",
        worst / scale
    );
}

/// A symmetric positive definite n x n matrix: B Bᵀ + n I.
fn spd<T: Real>(n: usize, seed: u64) -> Vec<f64> {
    let b = random::<T>(n * n, seed);
    let mut a = product(&b, &transpose(&b, n, n), (n, n, n));
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    a.into_iter().map(|v| T::of(v).value()).collect()
}

fn lu<T: Real>(m: usize, n: usize) {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let a = random::<T>(m * n, 3 + m as u64);
    let mut da = upload::<T>(&s, &a);
    let k = m.min(n);
    let mut pivots = s.pool.allocate_zeroed::<i64>(k, &s.stream).unwrap();
    solver
        .getrf::<T>(&Layout::new(m, n), &mut da, &mut pivots)
        .unwrap()
        .check()
        .unwrap();
    let f = download::<T>(&da);
    let pivots: Vec<i64> = pivots.to_vec().unwrap();
    let mut pa = a.clone();
    for (row, &pivot) in pivots.iter().enumerate() {
        for col in 0..n {
            pa.swap(row + col * m, pivot as usize - 1 + col * m);
        }
    }
    let mut l = vec![0.0; m * k];
    let mut u = vec![0.0; k * n];
    for j in 0..k {
        l[j + j * m] = 1.0;
        for i in j + 1..m {
            l[i + j * m] = f[i + j * m];
        }
    }
    for j in 0..n {
        for i in 0..k.min(j + 1) {
            u[i + j * k] = f[i + j * m];
        }
    }
    assert_close::<T>("P A = L U", &product(&l, &u, (m, n, k)), &pa, m.max(n));
}

fn lu_reconstructs_in_f32_and_f64() {
    lu::<f64>(256, 256);
    lu::<f32>(256, 256);
    lu::<f64>(300, 200);
    lu::<f32>(130, 257);
}

fn lu_solves_a_system_with_both_transposes() {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let n = 200;
    let a = random::<f64>(n * n, 17);
    let x = random::<f64>(n * 3, 19);
    for trans in [Transpose::No, Transpose::Yes] {
        let op = match trans {
            Transpose::No => a.clone(),
            Transpose::Yes => transpose(&a, n, n),
        };
        let mut da = upload::<f64>(&s, &a);
        let mut db = upload::<f64>(&s, &product(&op, &x, (n, 3, n)));
        let mut pivots = s.pool.allocate_zeroed::<i64>(n, &s.stream).unwrap();
        let layout = Layout::square(n);
        solver
            .getrf::<f64>(&layout, &mut da, &mut pivots)
            .unwrap()
            .check()
            .unwrap();
        solver
            .getrs::<f64>(trans, &layout, &da, &pivots, &Layout::new(n, 3), &mut db)
            .unwrap()
            .check()
            .unwrap();
        // The solution's error grows with the condition number: a looser bound.
        assert_close::<f32>(&format!("{trans:?}: x"), &download::<f64>(&db), &x, n);
    }
}

fn cholesky<T: Real>(fill: Fill) {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let n = 192;
    let a = spd::<T>(n, 5);
    let mut da = upload::<T>(&s, &a);
    let layout = Layout::square(n);
    solver
        .potrf::<T>(fill, &layout, &mut da)
        .unwrap()
        .check()
        .unwrap();
    let f = download::<T>(&da);
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        for i in j..n {
            l[i + j * n] = match fill {
                Fill::Lower => f[i + j * n],
                Fill::Upper => f[j + i * n],
            };
        }
    }
    let llt = product(&l, &transpose(&l, n, n), (n, n, n));
    assert_close::<T>(&format!("{fill:?}: L Lᵀ = A"), &llt, &a, n);
    let x = random::<T>(n, 23);
    let mut db = upload::<T>(&s, &product(&a, &x, (n, 1, n)));
    solver
        .potrs::<T>(fill, &layout, &da, &Layout::new(n, 1), &mut db)
        .unwrap()
        .check()
        .unwrap();
    assert_close::<T>("potrs x", &download::<T>(&db), &x, n);
}

fn cholesky_reconstructs_both_triangles() {
    for fill in [Fill::Lower, Fill::Upper] {
        cholesky::<f64>(fill);
        cholesky::<f32>(fill);
    }
}

fn qr<T: Real>(m: usize, n: usize) {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let a = random::<T>(m * n, 29);
    let k = m.min(n);
    let mut da = upload::<T>(&s, &a);
    let mut tau = s.pool.allocate_zeroed::<T>(k, &s.stream).unwrap();
    solver
        .geqrf::<T>(&Layout::new(m, n), &mut da, &mut tau)
        .unwrap()
        .check()
        .unwrap();
    let identity: Vec<f64> = (0..m * m)
        .map(|i| f64::from(u8::from(i % (m + 1) == 0)))
        .collect();
    let mut dq = upload::<T>(&s, &identity);
    solver
        .ormqr::<T>(
            Side::Left,
            Transpose::No,
            &Layout::new(m, k),
            &da,
            &tau,
            &Layout::square(m),
            &mut dq,
        )
        .unwrap()
        .check()
        .unwrap();
    let (f, q) = (download::<T>(&da), download::<T>(&dq));
    let mut r = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m.min(j + 1) {
            r[i + j * m] = f[i + j * m];
        }
    }
    assert_close::<T>("Q R = A", &product(&q, &r, (m, n, m)), &a, m);
    assert_close::<T>(
        "Qᵀ Q = I",
        &product(&transpose(&q, m, m), &q, (m, m, m)),
        &identity,
        m,
    );
}

fn qr_reconstructs_in_f32_and_f64() {
    qr::<f64>(160, 96);
    qr::<f32>(160, 96);
    qr::<f64>(64, 100);
}

fn eigen<T: Real>() {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let n = 128;
    let a = spd::<T>(n, 31);
    let mut da = upload::<T>(&s, &a);
    let mut dw = s.pool.allocate_zeroed::<T>(n, &s.stream).unwrap();
    let layout = Layout::square(n);
    solver
        .syevd::<T>(Fill::Lower, true, &layout, &mut da, &mut dw)
        .unwrap()
        .check()
        .unwrap();
    let (v, w) = (download::<T>(&da), download::<T>(&dw));
    assert!(w.windows(2).all(|p| p[0] <= p[1]), "not ascending");
    let mut vl = v.clone();
    for j in 0..n {
        for i in 0..n {
            vl[i + j * n] *= w[j];
        }
    }
    let rebuilt = product(&vl, &transpose(&v, n, n), (n, n, n));
    assert_close::<T>("V Λ Vᵀ = A", &rebuilt, &a, n);
    let mut da = upload::<T>(&s, &a);
    let mut dw2 = s.pool.allocate_zeroed::<T>(n, &s.stream).unwrap();
    solver
        .syevd::<T>(Fill::Upper, false, &layout, &mut da, &mut dw2)
        .unwrap()
        .check()
        .unwrap();
    assert_close::<T>("values alone", &download::<T>(&dw2), &w, n);
}

fn syevd_reconstructs_in_f32_and_f64() {
    eigen::<f64>();
    eigen::<f32>();
}

fn svd<T: Real>(m: usize, n: usize, vectors: SvdVectors) {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let a = random::<T>(m * n, 37);
    let ucols = if vectors == SvdVectors::All { m } else { n };
    let mut da = upload::<T>(&s, &a);
    let mut ds = s.pool.allocate_zeroed::<T>(n, &s.stream).unwrap();
    let mut du = s.pool.allocate_zeroed::<T>(m * ucols, &s.stream).unwrap();
    let mut dvt = s.pool.allocate_zeroed::<T>(n * n, &s.stream).unwrap();
    solver
        .gesvd::<T>(
            vectors,
            &Layout::new(m, n),
            &mut da,
            &mut ds,
            &mut du,
            &mut dvt,
        )
        .unwrap()
        .check()
        .unwrap();
    let (sv, u, vt) = (download::<T>(&ds), download::<T>(&du), download::<T>(&dvt));
    assert!(sv.windows(2).all(|p| p[0] >= p[1]), "not descending");
    let mut us = u[..m * n].to_vec();
    for j in 0..n {
        for i in 0..m {
            us[i + j * m] *= sv[j];
        }
    }
    assert_close::<T>("U Σ Vᵀ = A", &product(&us, &vt, (m, n, n)), &a, m);
}

fn gesvd_reconstructs_in_f32_and_f64() {
    svd::<f64>(150, 100, SvdVectors::All);
    svd::<f32>(150, 100, SvdVectors::Thin);
    svd::<f64>(96, 96, SvdVectors::Thin);
}

fn batched<T: Real>(m: usize, n: usize, batch: usize) {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let k = m.min(n);
    let a = random::<T>(m * n * batch, 41);
    let mut da = upload::<T>(&s, &a);
    let mut ds = s.pool.allocate_zeroed::<T>(k * batch, &s.stream).unwrap();
    let mut du = s
        .pool
        .allocate_zeroed::<T>(m * m * batch, &s.stream)
        .unwrap();
    let mut dv = s
        .pool
        .allocate_zeroed::<T>(n * n * batch, &s.stream)
        .unwrap();
    solver
        .gesvdj_batched::<T>(
            &Layout::new(m, n),
            batch,
            &mut da,
            &mut ds,
            &mut du,
            &mut dv,
        )
        .unwrap()
        .check()
        .unwrap();
    let (sv, u, v) = (download::<T>(&ds), download::<T>(&du), download::<T>(&dv));
    for b in (0..batch).step_by((batch / 10).max(1)) {
        let mut us = u[b * m * m..b * m * m + m * k].to_vec();
        for j in 0..k {
            for i in 0..m {
                us[i + j * m] *= sv[b * k + j];
            }
        }
        let vb = &v[b * n * n..(b + 1) * n * n];
        let vt = transpose(&vb[..n * k], n, k);
        let rebuilt = product(&us, &vt, (m, n, k));
        // Jacobi stops at cuSOLVER's default tolerance (the type's ε): a looser bound.
        assert_close::<f32>(
            &format!("matrix {b}: U Σ Vᵀ = A"),
            &rebuilt,
            &a[b * m * n..(b + 1) * m * n],
            m.max(n) * 10,
        );
    }
}

fn gesvdj_batched_reconstructs_each_matrix() {
    batched::<f32>(32, 32, 1000);
    batched::<f64>(12, 7, 50);
    batched::<f32>(5, 9, 64);
}

fn a_singular_matrix_names_its_pivot() {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let n = 64;
    let mut a = random::<f64>(n * n, 43);
    // Column 40 is zero: it stays zero under the elimination's row operations, so the 41st
    // pivot is exactly zero (two equal columns would leave a tiny, not a zero, pivot).
    a[40 * n..41 * n].fill(0.0);
    let mut da = upload::<f64>(&s, &a);
    let mut pivots = s.pool.allocate_zeroed::<i64>(n, &s.stream).unwrap();
    let error = solver
        .getrf::<f64>(&Layout::square(n), &mut da, &mut pivots)
        .unwrap()
        .check()
        .unwrap_err();
    match error.library_error::<CusolverError>() {
        Some(CusolverError::Singular { pivot, .. }) => assert_eq!(*pivot, 41, "{error}"),
        other => panic!("{other:?}: {error}"),
    }
    // The zero matrix: the first pivot.
    let mut zero = s.pool.allocate_zeroed::<f32>(16, &s.stream).unwrap();
    let error = solver
        .getrf::<f32>(&Layout::square(4), &mut zero, &mut pivots)
        .unwrap()
        .check()
        .unwrap_err();
    assert!(
        matches!(
            error.library_error::<CusolverError>(),
            Some(CusolverError::Singular { pivot: 1, .. })
        ),
        "{error}"
    );
}

fn a_matrix_that_is_not_positive_definite_names_its_minor() {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let n = 32;
    let mut a = spd::<f64>(n, 47);
    a[9 + 9 * n] = -1e6;
    let mut da = upload::<f64>(&s, &a);
    let error = solver
        .potrf::<f64>(Fill::Lower, &Layout::square(n), &mut da)
        .unwrap()
        .check()
        .unwrap_err();
    assert!(
        matches!(
            error.library_error::<CusolverError>(),
            Some(CusolverError::NotPositiveDefinite { minor: 10, .. })
        ),
        "{error}"
    );
}

fn a_captured_factorization_replays() {
    let s = setup();
    let solver = Solver::new(&s.stream).unwrap();
    let n = 96;
    let a = spd::<f64>(n, 53);
    let x = random::<f64>(n, 59);
    let b = product(&a, &x, (n, 1, n));
    let (a0, b0) = (upload::<f64>(&s, &a), upload::<f64>(&s, &b));
    let (mut da, mut db) = (upload::<f64>(&s, &a), upload::<f64>(&s, &b));
    let layout = Layout::square(n);
    // Once outside the capture, so the workspace has its size.
    solver
        .potrf::<f64>(Fill::Lower, &layout, &mut da)
        .unwrap()
        .check()
        .unwrap();
    // SAFETY: the solver and the buffers outlive the graph and its executable.
    let graph = unsafe {
        Graph::capture(&s.stream, CaptureMode::ThreadLocal, |_| {
            da.copy_from(&a0)?;
            db.copy_from(&b0)?;
            drop(solver.potrf::<f64>(Fill::Lower, &layout, &mut da)?);
            drop(solver.potrs::<f64>(Fill::Lower, &layout, &da, &Layout::new(n, 1), &mut db)?);
            Ok(())
        })
    }
    .unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&s.stream).unwrap();
        s.stream.sync().unwrap();
        assert_close::<f32>("the replay's x", &download::<f64>(&db), &x, n);
    }
    println!(
        "cuSOLVER {} on {}",
        solver.version().unwrap(),
        s.device.name().unwrap()
    );
}

pub(crate) const FILE: GpuFile = gpu_file![
    lu_reconstructs_in_f32_and_f64,
    lu_solves_a_system_with_both_transposes,
    cholesky_reconstructs_both_triangles,
    qr_reconstructs_in_f32_and_f64,
    syevd_reconstructs_in_f32_and_f64,
    gesvd_reconstructs_in_f32_and_f64,
    gesvdj_batched_reconstructs_each_matrix,
    a_singular_matrix_names_its_pivot,
    a_matrix_that_is_not_positive_definite_names_its_minor,
    a_captured_factorization_replays,
];
