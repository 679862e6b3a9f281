//! The eigensolver and the SVDs on the stub cuSOLVER, checked by reconstruction.

use cuda_safe_libs::solver::{Fill, Layout, Solver, SvdVectors};

use super::factor::spd;
use super::{Case, CaseFn, Lcg, Real, at, close, ensure, product};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "syevd gives V Λ Vᵀ = A, ascending, from either triangle",
        eigen_reconstructs,
    ),
    (
        "gesvd gives U Σ Vᵀ = A (all, thin and no vectors)",
        svd_reconstructs,
    ),
    (
        "gesvdj_batched gives U Σ Vᵀ = A for each matrix (square, tall, wide)",
        batched_svd_reconstructs,
    ),
];

/// The transpose of an m x n packed matrix.
fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut t = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            t[j + i * n] = a[i + j * m];
        }
    }
    t
}

/// U diag(s) Vᵀ, U m x k (ld ldu), V given as Vᵀ (k x n, ld ldvt).
fn usvt(
    u: &[f64],
    ldu: usize,
    s: &[f64],
    vt: &[f64],
    ldvt: usize,
    (m, n, k): (usize, usize, usize),
) -> Vec<f64> {
    let mut us = vec![0.0; m * k];
    for j in 0..k {
        for i in 0..m {
            us[i + j * m] = at(u, ldu, i, j) * s[j];
        }
    }
    product(&us, m, vt, ldvt, (m, n, k))
}

fn eigen_case<T: Real>(case: &Case, solver: &Solver, fill: Fill) -> Result<(), String> {
    let n = 6;
    let a = spd(n, 3);
    let mut da = case.upload::<T>(&a)?;
    let mut dw = case.upload::<T>(&vec![0.0; n])?;
    let layout = Layout::square(n);
    solver
        .syevd::<T>(fill, true, &layout, &mut da, &mut dw)
        .and_then(|info| info.check())
        .map_err(|e| e.to_string())?;
    let (v, w) = (case.download::<T>(&da)?, case.download::<T>(&dw)?);
    ensure(w.windows(2).all(|p| p[0] <= p[1]), || {
        format!("not ascending: {w:?}")
    })?;
    let vlvt = usvt(&v, n, &w, &transpose(&v, n, n), n, (n, n, n));
    close(
        &format!("{fill:?}: V Λ Vᵀ"),
        &vlvt,
        n,
        &a,
        n,
        (n, n),
        T::TOLERANCE * 10.0,
    )?;
    // Without vectors: the same values.
    let mut da = case.upload::<T>(&a)?;
    let mut dw2 = case.upload::<T>(&vec![0.0; n])?;
    solver
        .syevd::<T>(fill, false, &layout, &mut da, &mut dw2)
        .and_then(|info| info.check())
        .map_err(|e| e.to_string())?;
    close(
        "values alone",
        &case.download::<T>(&dw2)?,
        n,
        &w,
        n,
        (n, 1),
        T::TOLERANCE,
    )
}

fn eigen_reconstructs(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    for fill in [Fill::Lower, Fill::Upper] {
        eigen_case::<f64>(case, &solver, fill)?;
        eigen_case::<f32>(case, &solver, fill)?;
    }
    Ok(())
}

fn svd_case<T: Real>(
    case: &Case,
    solver: &Solver,
    (m, n): (usize, usize),
    vectors: SvdVectors,
) -> Result<(), String> {
    let ld = m + 1;
    let a = Lcg(m as u64 + 100 * n as u64).vec(ld * n);
    let ucols = if vectors == SvdVectors::All { m } else { n };
    let mut da = case.upload::<T>(&a)?;
    let mut ds = case.upload::<T>(&vec![0.0; n])?;
    let (u_len, vt_len) = if vectors == SvdVectors::None {
        (0, 0)
    } else {
        (m * ucols, n * n)
    };
    let mut du = case.upload::<T>(&vec![0.0; u_len])?;
    let mut dvt = case.upload::<T>(&vec![0.0; vt_len])?;
    solver
        .gesvd::<T>(
            vectors,
            &Layout::new(m, n).ld(ld),
            &mut da,
            &mut ds,
            &mut du,
            &mut dvt,
        )
        .and_then(|info| info.check())
        .map_err(|e| format!("{m} x {n} {vectors:?}: {e}"))?;
    let s = case.download::<T>(&ds)?;
    ensure(
        s.windows(2).all(|p| p[0] >= p[1]) && s.iter().all(|&v| v >= 0.0),
        || format!("not descending and non-negative: {s:?}"),
    )?;
    let want: Vec<f64> = a.iter().map(|&v| T::of(v).value()).collect();
    if vectors == SvdVectors::None {
        // Σ s² = ‖A‖²_F.
        let frobenius: f64 = (0..n)
            .flat_map(|j| (0..m).map(move |i| (i, j)))
            .map(|(i, j)| at(&want, ld, i, j).powi(2))
            .sum();
        let squares: f64 = s.iter().map(|v| v * v).sum();
        return ensure(
            (frobenius - squares).abs() <= T::TOLERANCE * 10.0 * frobenius,
            || format!("Σ s² = {squares}, ‖A‖² = {frobenius}"),
        );
    }
    let (u, vt) = (case.download::<T>(&du)?, case.download::<T>(&dvt)?);
    let rebuilt = usvt(&u, m, &s, &vt, n, (m, n, n));
    close(
        &format!("{m} x {n} {vectors:?}: U Σ Vᵀ"),
        &rebuilt,
        m,
        &want,
        ld,
        (m, n),
        T::TOLERANCE * 10.0,
    )?;
    if vectors == SvdVectors::All {
        let utu = product(&transpose(&u, m, m), m, &u, m, (m, m, m));
        let identity: Vec<f64> = (0..m * m)
            .map(|i| f64::from(u8::from(i % (m + 1) == 0)))
            .collect();
        close("Uᵀ U", &utu, m, &identity, m, (m, m), T::TOLERANCE * 10.0)?;
    }
    Ok(())
}

fn svd_reconstructs(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    for vectors in [SvdVectors::All, SvdVectors::Thin, SvdVectors::None] {
        for shape in [(5, 5), (7, 4)] {
            svd_case::<f64>(case, &solver, shape, vectors)?;
            svd_case::<f32>(case, &solver, shape, vectors)?;
        }
    }
    Ok(())
}

fn batched_case<T: Real>(
    case: &Case,
    solver: &Solver,
    (m, n): (usize, usize),
) -> Result<(), String> {
    let (batch, k) = (5, m.min(n));
    let a = Lcg(m as u64 * 13 + n as u64).vec(m * n * batch);
    let mut da = case.upload::<T>(&a)?;
    let mut ds = case.upload::<T>(&vec![0.0; k * batch])?;
    let mut du = case.upload::<T>(&vec![0.0; m * m * batch])?;
    let mut dv = case.upload::<T>(&vec![0.0; n * n * batch])?;
    solver
        .gesvdj_batched::<T>(
            &Layout::new(m, n),
            batch,
            &mut da,
            &mut ds,
            &mut du,
            &mut dv,
        )
        .and_then(|info| info.check())
        .map_err(|e| format!("{m} x {n}: {e}"))?;
    let (s, u, v) = (
        case.download::<T>(&ds)?,
        case.download::<T>(&du)?,
        case.download::<T>(&dv)?,
    );
    for b in 0..batch {
        let one = &a[b * m * n..(b + 1) * m * n];
        let want: Vec<f64> = one.iter().map(|&x| T::of(x).value()).collect();
        let ub = &u[b * m * m..(b + 1) * m * m];
        let vt = transpose(&v[b * n * n..(b + 1) * n * n], n, n);
        let rebuilt = usvt(ub, m, &s[b * k..(b + 1) * k], &vt, n, (m, n, k));
        close(
            &format!("matrix {b} of {m} x {n}: U Σ Vᵀ"),
            &rebuilt,
            m,
            &want,
            m,
            (m, n),
            T::TOLERANCE * 10.0,
        )?;
    }
    Ok(())
}

fn batched_svd_reconstructs(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    for shape in [(4, 4), (6, 3), (3, 5), (32, 32)] {
        batched_case::<f32>(case, &solver, shape)?;
        batched_case::<f64>(case, &solver, shape)?;
    }
    Ok(())
}
