//! What the solver refuses before calling cuSOLVER, the `info` outputs as typed errors, the
//! workspaces, cuSOLVER's statuses and the loader.

use cuda_safe::{Buffer, Error};
use cuda_safe_libs::solver::cusolver_sys::cusolverStatus_t;
use cuda_safe_libs::solver::{CusolverError, Fill, Layout, Side, Solver, SvdVectors, Transpose};

use super::factor::spd;
use super::{Case, CaseFn, ensure};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "every size check refuses before the call",
        size_checks_refuse_first,
    ),
    (
        "a singular matrix is Singular naming the pivot",
        singular_names_the_pivot,
    ),
    (
        "a matrix that is not positive definite names the minor",
        not_positive_definite_names_the_minor,
    ),
    (
        "no convergence names the matrix of a batch",
        no_convergence_names_the_matrix,
    ),
    (
        "the workspace is sized by the query, grown once and reused",
        workspace_is_reused,
    ),
    (
        "a failed call names cuSOLVER's status",
        errors_name_the_status,
    ),
    (
        "the loader took the library the variable names",
        loader_found_the_stub,
    ),
];

fn zeros(case: &Case, len: usize) -> Result<Buffer, String> {
    case.upload::<f64>(&vec![0.0; len])
}

/// Whether `result` is an `InvalidArgument` whose message holds `needle`.
fn refused<T>(what: &str, result: cuda_safe::Result<T>, needle: &str) -> Result<(), String> {
    match result {
        Err(Error::InvalidArgument(message)) if message.contains(needle) => Ok(()),
        Err(other) => Err(format!("{what}: refused with {other}, not for {needle:?}")),
        Ok(_) => Err(format!("{what}: accepted")),
    }
}

fn size_checks_refuse_first(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    case.stub.take_log();
    let (mut a, mut small) = (zeros(case, 16)?, zeros(case, 15)?);
    let mut pivots = case
        .pool
        .allocate_zeroed::<i64>(3, &case.stream)
        .map_err(|e| e.to_string())?;
    let mut w = zeros(case, 4)?;
    let (tau, mut s) = (zeros(case, 4)?, zeros(case, 4)?);
    let (mut u, mut vt) = (zeros(case, 16)?, zeros(case, 16)?);
    let square = Layout::square(4);
    refused(
        "ld < rows",
        solver.getrf::<f64>(&Layout::square(4).ld(3), &mut a, &mut pivots),
        "at least 4",
    )?;
    refused(
        "A too small",
        solver.getrf::<f64>(&square, &mut small, &mut pivots),
        "spans 16 elements, but its memory holds 15",
    )?;
    refused(
        "3 pivots for 4",
        solver.getrf::<f64>(&square, &mut a, &mut pivots),
        "the pivots spans 4",
    )?;
    refused(
        "getrs on a non-square A",
        solver.getrs::<f64>(
            Transpose::No,
            &Layout::new(4, 3),
            &a,
            &pivots,
            &Layout::new(4, 1),
            &mut w,
        ),
        "square",
    )?;
    refused(
        "B's rows",
        solver.getrs::<f64>(
            Transpose::No,
            &square,
            &a,
            &pivots,
            &Layout::new(3, 1),
            &mut w,
        ),
        "must have the 4 rows",
    )?;
    refused(
        "potrf on a non-square A",
        solver.potrf::<f64>(Fill::Lower, &Layout::new(4, 3), &mut a),
        "square",
    )?;
    refused(
        "potrs B too small",
        solver.potrs::<f64>(Fill::Lower, &square, &a, &Layout::new(4, 2), &mut w),
        "spans 8 elements",
    )?;
    refused(
        "tau too small",
        solver.geqrf::<f64>(&Layout::new(5, 3), &mut a, &mut zeros(case, 2)?),
        "tau spans 3",
    )?;
    refused(
        "reflectors' rows",
        solver.ormqr::<f64>(
            Side::Left,
            Transpose::No,
            &Layout::new(3, 3),
            &a,
            &tau,
            &Layout::new(4, 4),
            &mut u,
        ),
        "must have 4 rows",
    )?;
    refused(
        "reflectors past the order",
        solver.ormqr::<f64>(
            Side::Right,
            Transpose::No,
            &Layout::new(2, 3),
            &a,
            &tau,
            &Layout::new(4, 2),
            &mut u,
        ),
        "at most 2 columns",
    )?;
    refused(
        "ormqr past int",
        solver.ormqr::<f64>(
            Side::Left,
            Transpose::No,
            &Layout::new(4, 1),
            &a,
            &tau,
            &Layout::new(4, 1usize << 40).ld(4),
            &mut u,
        ),
        "spans",
    )?;
    refused(
        "syevd w too small",
        solver.syevd::<f64>(Fill::Lower, true, &square, &mut a, &mut zeros(case, 3)?),
        "the eigenvalues spans 4",
    )?;
    refused(
        "gesvd on a wide A",
        solver.gesvd::<f64>(
            SvdVectors::All,
            &Layout::new(3, 4),
            &mut a,
            &mut s,
            &mut u,
            &mut vt,
        ),
        "factor its transpose",
    )?;
    refused(
        "gesvd U too small",
        solver.gesvd::<f64>(
            SvdVectors::All,
            &Layout::new(5, 3),
            &mut a,
            &mut s,
            &mut small,
            &mut vt,
        ),
        "U (5 x 5",
    )?;
    refused(
        "gesvdj past 32",
        solver.gesvdj_batched::<f64>(&Layout::new(33, 2), 1, &mut a, &mut s, &mut u, &mut vt),
        "at most 32 x 32",
    )?;
    refused(
        "gesvdj empty batch",
        solver.gesvdj_batched::<f64>(&Layout::square(2), 0, &mut a, &mut s, &mut u, &mut vt),
        "at least one",
    )?;
    refused(
        "gesvdj batch of As",
        solver.gesvdj_batched::<f64>(&Layout::square(2), 5, &mut a, &mut s, &mut u, &mut vt),
        "the batch of 5 As spans 20",
    )?;
    refused(
        "gesvdj batch of Vs",
        solver.gesvdj_batched::<f64>(
            &Layout::square(2),
            4,
            &mut a,
            &mut zeros(case, 8)?,
            &mut u,
            &mut small,
        ),
        "the batch of 4 Vs spans 16",
    )?;
    let calls: Vec<String> = case
        .stub
        .take_log()
        .into_iter()
        .map(|call| call.name)
        .filter(|name| name.starts_with("cusolver"))
        .collect();
    ensure(calls.is_empty(), || {
        format!("cuSOLVER was called: {calls:?}")
    })
}

fn singular_names_the_pivot(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    // Column 3 is twice column 1: U(3, 3) is zero.
    let a = [1.0, 2.0, 3.0, 0.0, 1.0, 4.0, 2.0, 4.0, 6.0];
    let mut da = case.upload::<f64>(&a)?;
    let mut pivots = case
        .pool
        .allocate_zeroed::<i64>(3, &case.stream)
        .map_err(|e| e.to_string())?;
    let info = solver
        .getrf::<f64>(&Layout::square(3), &mut da, &mut pivots)
        .map_err(|e| e.to_string())?;
    ensure(info.api() == "cusolverDnXgetrf", || info.api().to_owned())?;
    let error = info.check().err().ok_or("a singular matrix passed")?;
    match error.library_error::<CusolverError>() {
        Some(CusolverError::Singular {
            pivot: 3,
            matrix: None,
            ..
        }) => {}
        other => return Err(format!("{other:?}: {error}")),
    }
    ensure(error.to_string().contains("U(3, 3) is zero"), || {
        error.to_string()
    })
}

fn not_positive_definite_names_the_minor(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    let mut a = spd(4, 9);
    a[2 + 2 * 4] = -100.0;
    let mut da = case.upload::<f32>(&a)?;
    let error = solver
        .potrf::<f32>(Fill::Lower, &Layout::square(4), &mut da)
        .and_then(|info| info.check())
        .err()
        .ok_or("a matrix that is not positive definite passed")?;
    match error.library_error::<CusolverError>() {
        Some(CusolverError::NotPositiveDefinite {
            minor: 3,
            api: "cusolverDnXpotrf",
            ..
        }) => Ok(()),
        other => Err(format!("{other:?}: {error}")),
    }
}

fn no_convergence_names_the_matrix(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    let mut a = case.upload::<f32>(&spd(2, 1).repeat(3))?;
    let (mut s, mut u, mut v) = (
        case.upload::<f32>(&[0.0; 6])?,
        case.upload::<f32>(&[0.0; 12])?,
        case.upload::<f32>(&[0.0; 12])?,
    );
    case.solver.force_info(3);
    let error = solver
        .gesvdj_batched::<f32>(&Layout::square(2), 3, &mut a, &mut s, &mut u, &mut v)
        .and_then(|info| info.check())
        .err()
        .ok_or("no convergence passed")?;
    match error.library_error::<CusolverError>() {
        Some(CusolverError::NoConvergence {
            count: 3,
            matrix: Some(0),
            api: "cusolverDnSgesvdjBatched",
        }) => {}
        other => return Err(format!("{other:?}: {error}")),
    }
    let mut w = case.upload::<f64>(&[0.0; 2])?;
    let mut a = case.upload::<f64>(&spd(2, 1))?;
    case.solver.force_info(-4);
    let error = solver
        .syevd::<f64>(Fill::Lower, true, &Layout::square(2), &mut a, &mut w)
        .and_then(|info| info.check())
        .err()
        .ok_or("a refused parameter passed")?;
    match error.library_error::<CusolverError>() {
        Some(CusolverError::InvalidParameter {
            parameter: 4,
            matrix: None,
            ..
        }) => Ok(()),
        other => Err(format!("{other:?}: {error}")),
    }
}

fn workspace_is_reused(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    ensure(solver.workspace_bytes() == (0, 0), || {
        format!("{:?}", solver.workspace_bytes())
    })?;
    let run = |n: usize| -> Result<(), String> {
        let mut a = case.upload::<f64>(&spd(n, 4))?;
        let mut pivots = case
            .pool
            .allocate_zeroed::<i64>(n, &case.stream)
            .map_err(|e| e.to_string())?;
        solver
            .getrf::<f64>(&Layout::square(n), &mut a, &mut pivots)
            .and_then(|info| info.check())
            .map_err(|e| e.to_string())
    };
    run(8)?;
    let grown = solver.workspace_bytes();
    // The stub asks for 64 elements a column and 64 host bytes.
    ensure(grown == (8 * 64 * 8, 64), || format!("{grown:?}"))?;
    case.stub.take_log();
    run(4)?;
    let log: Vec<String> = case
        .stub
        .take_log()
        .into_iter()
        .map(|call| call.name)
        .collect();
    let solver_calls: Vec<&String> = log
        .iter()
        .filter(|name| name.starts_with("cusolver"))
        .collect();
    ensure(
        solver_calls == ["cusolverDnXgetrf_bufferSize", "cusolverDnXgetrf"],
        || format!("{solver_calls:?}"),
    )?;
    ensure(solver.workspace_bytes() == grown, || {
        "the workspace shrank or grew".into()
    })?;
    solver.reserve(1 << 20, 256).map_err(|e| e.to_string())?;
    ensure(solver.workspace_bytes() == (1 << 20, 256), || {
        format!("{:?}", solver.workspace_bytes())
    })?;
    solver.close().map_err(|e| e.to_string())
}

fn errors_name_the_status(case: &Case) -> Result<(), String> {
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    let mut a = case.upload::<f64>(&spd(3, 2))?;
    case.stub.fail("cusolverDnXpotrf", 9, 1);
    let error = solver
        .potrf::<f64>(Fill::Lower, &Layout::square(3), &mut a)
        .err()
        .ok_or("the injected status passed")?;
    ensure(error.is_not_supported(), || error.to_string())?;
    ensure(
        error
            .library_error::<CusolverError>()
            .and_then(CusolverError::code)
            == Some(cusolverStatus_t::CUSOLVER_STATUS_NOT_SUPPORTED),
        || error.to_string(),
    )?;
    ensure(
        error
            .to_string()
            .starts_with("cusolverDnXpotrf failed: CUSOLVER_STATUS_NOT_SUPPORTED"),
        || error.to_string(),
    )
}

fn loader_found_the_stub(case: &Case) -> Result<(), String> {
    let library = cuda_safe_libs::solver::cusolver_sys::cusolver().map_err(|e| e.to_string())?;
    ensure(library.library().path() == case.path, || {
        format!("{:?}", library.library().path())
    })?;
    let solver = Solver::new(&case.stream).map_err(|e| e.to_string())?;
    ensure(
        solver.version().map_err(|e| e.to_string())? == 11700,
        || "the stub's version".into(),
    )?;
    ensure(case.solver.live("cusolver") >= 1, || {
        "no live handle".into()
    })?;
    drop(solver);
    ensure(case.solver.live("cusolver") == 0, || {
        "the handle outlived its owner".into()
    })
}
