//! LU, Cholesky and QR on the stub cuSOLVER, checked by reconstruction.

use cuda_safe_libs::solver::{Fill, Layout, Side, Solver, Transpose};

use super::{Case, CaseFn, Lcg, Real, at, close, ensure, product};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "getrf gives P A = L U (square, tall, wide, padded), f32 and f64",
        lu_reconstructs,
    ),
    ("getrs solves A x = b and Aᵀ x = b", lu_solves),
    (
        "potrf gives L Lᵀ = A and Uᵀ U = A; potrs solves",
        cholesky_reconstructs_and_solves,
    ),
    (
        "geqrf and ormqr give Q R = A, Qᵀ Q = I, on both sides",
        qr_reconstructs,
    ),
];

/// L (m x k, unit lower) and U (k x n, upper) out of getrf's packed factors.
fn split_lu(f: &[f64], ld: usize, (m, n): (usize, usize)) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let mut l = vec![0.0; m * k];
    let mut u = vec![0.0; k * n];
    for j in 0..k {
        for i in 0..m {
            l[i + j * m] = match i.cmp(&j) {
                std::cmp::Ordering::Greater => at(f, ld, i, j),
                std::cmp::Ordering::Equal => 1.0,
                std::cmp::Ordering::Less => 0.0,
            };
        }
    }
    for j in 0..n {
        for i in 0..k.min(j + 1) {
            u[i + j * k] = at(f, ld, i, j);
        }
    }
    (l, u)
}

fn lu_case<T: Real>(
    case: &Case,
    solver: &Solver,
    (m, n, ld): (usize, usize, usize),
) -> Result<(), String> {
    let a = Lcg(m as u64 * 31 + n as u64).vec(ld * n);
    let mut da = case.upload::<T>(&a)?;
    let mut pivots = case
        .pool
        .allocate_zeroed::<i64>(m.min(n), &case.stream)
        .map_err(|e| e.to_string())?;
    let layout = Layout::new(m, n).ld(ld);
    solver
        .getrf::<T>(&layout, &mut da, &mut pivots)
        .and_then(|info| info.check())
        .map_err(|e| format!("{m} x {n}: {e}"))?;
    let factors = case.download::<T>(&da)?;
    let pivots: Vec<i64> = pivots.to_vec().map_err(|e| e.to_string())?;
    // P A: the rows of A swapped in the pivots' order.
    let mut pa: Vec<f64> = a.iter().map(|&v| T::of(v).value()).collect();
    for (row, &pivot) in pivots.iter().enumerate() {
        let other = usize::try_from(pivot - 1).map_err(|_| format!("pivot {pivot}"))?;
        ensure(other < m, || format!("pivot {pivot} past {m} rows"))?;
        for col in 0..n {
            pa.swap(row + col * ld, other + col * ld);
        }
    }
    let (l, u) = split_lu(&factors, ld, (m, n));
    let k = m.min(n);
    let lu = product(&l, m, &u, k, (m, n, k));
    close(
        &format!("L U of {m} x {n}"),
        &lu,
        m,
        &pa,
        ld,
        (m, n),
        T::TOLERANCE * 10.0,
    )?;
    // The padding rows below the matrix are untouched.
    for j in 0..n {
        for i in m..ld {
            ensure(factors[i + j * ld] == T::of(a[i + j * ld]).value(), || {
                format!("the padding at ({i}, {j}) was written")
            })?;
        }
    }
    Ok(())
}

fn lu_reconstructs(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    for shape in [(4, 4, 4), (6, 3, 8), (3, 5, 3), (7, 7, 9)] {
        lu_case::<f64>(case, &solver, shape)?;
        lu_case::<f32>(case, &solver, shape)?;
    }
    Ok(())
}

fn lu_solves(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    let n = 5;
    let a = Lcg(5).vec(n * n);
    let x: Vec<f64> = (0..n * 2).map(|i| i as f64 - 3.0).collect();
    for trans in [Transpose::No, Transpose::Yes] {
        // B = op(A) X, two right-hand sides with a padded leading dimension of 7.
        let op_a: Vec<f64> = match trans {
            Transpose::No => a.clone(),
            Transpose::Yes => (0..n * n).map(|i| a[(i / n) + (i % n) * n]).collect(),
        };
        let b = product(&op_a, n, &x, n, (n, 2, n));
        let mut padded = vec![0.0; 7 * 2];
        for j in 0..2 {
            padded[j * 7..j * 7 + n].copy_from_slice(&b[j * n..j * n + n]);
        }
        let mut da = case.upload::<f64>(&a)?;
        let mut db = case.upload::<f64>(&padded)?;
        let mut pivots = case
            .pool
            .allocate_zeroed::<i64>(n, &case.stream)
            .map_err(|e| e.to_string())?;
        let layout = Layout::square(n);
        solver
            .getrf::<f64>(&layout, &mut da, &mut pivots)
            .and_then(|info| info.check())
            .and_then(|()| {
                solver.getrs::<f64>(
                    trans,
                    &layout,
                    &da,
                    &pivots,
                    &Layout::new(n, 2).ld(7),
                    &mut db,
                )
            })
            .and_then(|info| info.check())
            .map_err(|e| e.to_string())?;
        let got = case.download::<f64>(&db)?;
        close(&format!("{trans:?}: X"), &got, 7, &x, n, (n, 2), 1e-10)?;
    }
    Ok(())
}

/// A symmetric positive definite n x n matrix: B Bᵀ + n I.
pub(crate) fn spd(n: usize, seed: u64) -> Vec<f64> {
    let b = Lcg(seed).vec(n * n);
    let mut bt = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            bt[j + i * n] = b[i + j * n];
        }
    }
    let mut a = product(&b, n, &bt, n, (n, n, n));
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    a
}

fn cholesky_case<T: Real>(case: &Case, solver: &Solver, fill: Fill) -> Result<(), String> {
    let (n, ld) = (6, 8);
    let packed = spd(n, 11);
    let mut a = vec![7.0; ld * n];
    for j in 0..n {
        a[j * ld..j * ld + n].copy_from_slice(&packed[j * n..j * n + n]);
    }
    let layout = Layout::square(n).ld(ld);
    let mut da = case.upload::<T>(&a)?;
    solver
        .potrf::<T>(fill, &layout, &mut da)
        .and_then(|info| info.check())
        .map_err(|e| format!("{fill:?}: {e}"))?;
    let f = case.download::<T>(&da)?;
    // L (lower) or Uᵀ (upper), as a packed lower triangle.
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        for i in j..n {
            l[i + j * n] = match fill {
                Fill::Lower => at(&f, ld, i, j),
                Fill::Upper => at(&f, ld, j, i),
            };
        }
    }
    let mut lt = vec![0.0; n * n];
    for j in 0..n {
        for i in 0..n {
            lt[i + j * n] = l[j + i * n];
        }
    }
    let llt = product(&l, n, &lt, n, (n, n, n));
    close(
        &format!("{fill:?}: L Lᵀ"),
        &llt,
        n,
        &packed,
        n,
        (n, n),
        T::TOLERANCE * 10.0,
    )?;
    // The other triangle is untouched.
    for j in 0..n {
        for i in 0..n {
            let other = match fill {
                Fill::Lower => i < j,
                Fill::Upper => i > j,
            };
            if other {
                ensure(f[i + j * ld] == T::of(a[i + j * ld]).value(), || {
                    format!("{fill:?}: ({i}, {j}) of the other triangle was written")
                })?;
            }
        }
    }
    // A x = b for x = 1, 2, ...
    let x: Vec<f64> = (1..=n).map(|v| v as f64).collect();
    let b = product(&packed, n, &x, n, (n, 1, n));
    let mut db = case.upload::<T>(&b)?;
    solver
        .potrs::<T>(fill, &layout, &da, &Layout::new(n, 1), &mut db)
        .and_then(|info| info.check())
        .map_err(|e| e.to_string())?;
    close(
        &format!("{fill:?}: x"),
        &case.download::<T>(&db)?,
        n,
        &x,
        n,
        (n, 1),
        T::TOLERANCE * 100.0,
    )
}

fn cholesky_reconstructs_and_solves(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    for fill in [Fill::Lower, Fill::Upper] {
        cholesky_case::<f64>(case, &solver, fill)?;
        cholesky_case::<f32>(case, &solver, fill)?;
    }
    Ok(())
}

fn qr_case<T: Real>(case: &Case, solver: &Solver, (m, n): (usize, usize)) -> Result<(), String> {
    let a = Lcg(m as u64 * 7 + n as u64).vec(m * n);
    let k = m.min(n);
    let layout = Layout::new(m, n);
    let mut da = case.upload::<T>(&a)?;
    let mut tau = case.upload::<T>(&vec![0.0; k])?;
    solver
        .geqrf::<T>(&layout, &mut da, &mut tau)
        .and_then(|info| info.check())
        .map_err(|e| e.to_string())?;
    let f = case.download::<T>(&da)?;
    // Q (m x m) = Q I, from the left.
    let identity: Vec<f64> = (0..m * m)
        .map(|i| f64::from(u8::from(i % (m + 1) == 0)))
        .collect();
    let mut dq = case.upload::<T>(&identity)?;
    let reflectors = Layout::new(m, k);
    solver
        .ormqr::<T>(
            Side::Left,
            Transpose::No,
            &reflectors,
            &da,
            &tau,
            &Layout::square(m),
            &mut dq,
        )
        .and_then(|info| info.check())
        .map_err(|e| e.to_string())?;
    let q = case.download::<T>(&dq)?;
    let mut r = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m.min(j + 1) {
            r[i + j * m] = at(&f, m, i, j);
        }
    }
    let qr = product(&q, m, &r, m, (m, n, m));
    let want: Vec<f64> = a.iter().map(|&v| T::of(v).value()).collect();
    close(
        &format!("Q R of {m} x {n}"),
        &qr,
        m,
        &want,
        m,
        (m, n),
        T::TOLERANCE * 10.0,
    )?;
    // Qᵀ Q = I: Qᵀ applied from the left to Q.
    let mut dqtq = case.upload::<T>(&q)?;
    solver
        .ormqr::<T>(
            Side::Left,
            Transpose::Yes,
            &reflectors,
            &da,
            &tau,
            &Layout::square(m),
            &mut dqtq,
        )
        .and_then(|info| info.check())
        .map_err(|e| e.to_string())?;
    close(
        "Qᵀ Q",
        &case.download::<T>(&dqtq)?,
        m,
        &identity,
        m,
        (m, m),
        T::TOLERANCE * 10.0,
    )?;
    // From the right: I Q = Q, and Q Qᵀ = I.
    let mut dright = case.upload::<T>(&identity)?;
    solver
        .ormqr::<T>(
            Side::Right,
            Transpose::No,
            &reflectors,
            &da,
            &tau,
            &Layout::square(m),
            &mut dright,
        )
        .and_then(|info| info.check())
        .map_err(|e| e.to_string())?;
    close(
        "I Q",
        &case.download::<T>(&dright)?,
        m,
        &q,
        m,
        (m, m),
        T::TOLERANCE * 10.0,
    )?;
    solver
        .ormqr::<T>(
            Side::Right,
            Transpose::Yes,
            &reflectors,
            &da,
            &tau,
            &Layout::square(m),
            &mut dright,
        )
        .and_then(|info| info.check())
        .map_err(|e| e.to_string())?;
    close(
        "Q Qᵀ",
        &case.download::<T>(&dright)?,
        m,
        &identity,
        m,
        (m, m),
        T::TOLERANCE * 10.0,
    )
}

fn qr_reconstructs(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    for shape in [(5, 5), (7, 4), (3, 6)] {
        qr_case::<f64>(case, &solver, shape)?;
        qr_case::<f32>(case, &solver, shape)?;
    }
    Ok(())
}
