//! `Blas` on the stub cuBLAS.

use cuda_safe::{Buffer, Error};
use cuda_safe_libs::blas::{
    Blas, CublasError, Gemm, GemmBatch, Gemv, Scalar, Scalars, StridedBatch, Vector,
};

use super::{Case, CaseFn, Lcg, ensure, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "gemm matches the CPU, every transpose, both orders",
        gemm_matches_the_cpu,
    ),
    (
        "strided and pointer batches match the CPU",
        batches_match_the_cpu,
    ),
    (
        "gemv, axpy, scal, dot and nrm2 match the CPU",
        vectors_match_the_cpu,
    ),
    (
        "every size check refuses before the call",
        size_checks_refuse_first,
    ),
    (
        "a gemm is one cublasGemmEx, the pointer mode set on change",
        gemm_call_budget,
    ),
    (
        "set_stream binds the stream and the workspace again",
        set_stream_rebinds,
    ),
    (
        "a failed call names cuBLAS's status",
        errors_name_the_status,
    ),
    (
        "the loader took the libraries the variables name",
        loader_found_the_stub,
    ),
];

/// C (m x n) = op(A) op(B) on the CPU, for matrices stored as `order` says.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reference(
    (m, n, k): (usize, usize, usize),
    (ta, tb): (bool, bool),
    row_major: bool,
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
    ldc: usize,
) -> Vec<f32> {
    let at = |r: usize, c: usize, ld: usize| if row_major { r * ld + c } else { c * ld + r };
    let mut c = vec![0.0f32; if row_major { m * ldc } else { ldc * n }];
    for i in 0..m {
        for j in 0..n {
            let mut sum = 0.0f64;
            for p in 0..k {
                let x = if ta {
                    a[at(p, i, lda)]
                } else {
                    a[at(i, p, lda)]
                };
                let y = if tb {
                    b[at(j, p, ldb)]
                } else {
                    b[at(p, j, ldb)]
                };
                sum += f64::from(x) * f64::from(y);
            }
            c[at(i, j, ldc)] = sum as f32;
        }
    }
    c
}

/// Whether two results agree to f32 rounding.
pub(crate) fn close(got: &[f32], want: &[f32]) -> Result<(), String> {
    ensure(got.len() == want.len(), || {
        format!("{} != {} elements", got.len(), want.len())
    })?;
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        ensure((g - w).abs() <= 1e-5 * (1.0 + w.abs()), || {
            format!("element {index}: got {g}, want {w}")
        })?;
    }
    Ok(())
}

fn upload(case: &Case, values: &[f32]) -> Result<Buffer, String> {
    case.pool
        .allocate_from_host(values, &case.stream)
        .map_err(|e| e.to_string())
}

fn gemm_matches_the_cpu(case: &Case) -> Result<(), String> {
    let blas = Blas::new(&case.stream).map_err(|e| e.to_string())?;
    let mut data = Lcg(7);
    let (m, n, k) = (5usize, 3usize, 4usize);
    for row_major in [false, true] {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut shape = if row_major {
                Gemm::row_major(m, n, k)
            } else {
                Gemm::new(m, n, k)
            };
            if ta {
                shape = shape.transpose_a();
            }
            if tb {
                shape = shape.transpose_b();
            }
            // Padded leading dimensions: two more than the runs they stride over.
            let (a_rows, a_cols) = if ta { (k, m) } else { (m, k) };
            let (b_rows, b_cols) = if tb { (n, k) } else { (k, n) };
            let run = |rows: usize, cols: usize| if row_major { cols } else { rows } + 2;
            let (lda, ldb, ldc) = (run(a_rows, a_cols), run(b_rows, b_cols), run(m, n));
            shape = shape.lda(lda).ldb(ldb).ldc(ldc);
            let span = |rows: usize, cols: usize, ld: usize| {
                if row_major { rows * ld } else { cols * ld }
            };
            let a = data.vec(span(a_rows, a_cols, lda));
            let b = data.vec(span(b_rows, b_cols, ldb));
            let (da, db) = (upload(case, &a)?, upload(case, &b)?);
            let mut dc = upload(case, &vec![0.0; span(m, n, ldc)])?;
            blas.gemm::<f32, f32>(&shape, Scalars::host(1.0, 0.0), &da, &db, &mut dc)
                .map_err(|e| format!("{shape}: {e}"))?;
            let want = reference((m, n, k), (ta, tb), row_major, &a, lda, &b, ldb, ldc);
            let got: Vec<f32> = dc.to_vec().map_err(|e| e.to_string())?;
            // Only the matrix's own elements: the padding is whatever was there (zeros).
            close(&got, &want).map_err(|e| format!("{shape}: {e}"))?;
        }
    }
    // f64, and beta accumulating into C.
    let a = [1.0f64, 2.0, 3.0, 4.0];
    let da = case
        .pool
        .allocate_from_host(&a, &case.stream)
        .map_err(|e| e.to_string())?;
    let mut dc = case
        .pool
        .allocate_from_host(&[1.0f64; 4], &case.stream)
        .map_err(|e| e.to_string())?;
    blas.gemm::<f64, f64>(
        &Gemm::new(2, 2, 2),
        Scalars::host(2.0, 1.0),
        &da,
        &da,
        &mut dc,
    )
    .map_err(|e| e.to_string())?;
    let got: Vec<f64> = dc.to_vec().map_err(|e| e.to_string())?;
    // A·A (column-major [[1,3],[2,4]]²) = [7, 10, 15, 22]; 2 A·A + 1.
    ensure(got == [15.0, 21.0, 31.0, 45.0], || {
        format!("f64 gemm: {got:?}")
    })
}

fn batches_match_the_cpu(case: &Case) -> Result<(), String> {
    let blas = Blas::new(&case.stream).map_err(|e| e.to_string())?;
    let mut data = Lcg(11);
    let (m, n, k, count) = (4usize, 3usize, 2usize, 3usize);
    let shape = Gemm::new(m, n, k).transpose_b();
    let batch = StridedBatch::packed(count, &shape).map_err(|e| e.to_string())?;
    let a = data.vec(m * k * count);
    let b = data.vec(n * k * count);
    let (da, db) = (upload(case, &a)?, upload(case, &b)?);
    let mut dc = upload(case, &vec![0.0; m * n * count])?;
    blas.gemm_strided_batched::<f32, f32>(
        &shape,
        &batch,
        Scalars::host(1.0, 0.0),
        &da,
        &db,
        &mut dc,
    )
    .map_err(|e| e.to_string())?;
    let got: Vec<f32> = dc.to_vec().map_err(|e| e.to_string())?;
    for i in 0..count {
        let want = reference(
            (m, n, k),
            (false, true),
            false,
            &a[i * m * k..],
            m,
            &b[i * n * k..],
            n,
            m,
        );
        close(&got[i * m * n..(i + 1) * m * n], &want).map_err(|e| format!("product {i}: {e}"))?;
    }
    // The same products through pointer tables, one buffer per matrix.
    let split = |values: &[f32], size: usize| -> Result<Vec<Buffer>, String> {
        values
            .chunks(size)
            .map(|chunk| upload(case, chunk))
            .collect()
    };
    let (la, lb) = (split(&a, m * k)?, split(&b, n * k)?);
    let mut lc = split(&vec![0.0; m * n * count], m * n)?;
    let mut tables =
        GemmBatch::<f32, f32>::new(&blas, &la, &lb, &mut lc).map_err(|e| e.to_string())?;
    blas.gemm_batched(&shape, Scalars::host(1.0, 0.0), &mut tables)
        .map_err(|e| e.to_string())?;
    drop(tables);
    for (i, c) in lc.iter().enumerate() {
        let got: Vec<f32> = c.to_vec().map_err(|e| e.to_string())?;
        close(
            &got,
            &dc.to_vec::<f32>().map_err(|e| e.to_string())?[i * m * n..(i + 1) * m * n],
        )
        .map_err(|e| format!("pointer batch {i}: {e}"))?;
    }
    Ok(())
}

fn vectors_match_the_cpu(case: &Case) -> Result<(), String> {
    let blas = Blas::new(&case.stream).map_err(|e| e.to_string())?;
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 x 3 column-major
    let da = upload(case, &a)?;
    let x = upload(case, &[1.0, 1.0, 1.0])?;
    let mut y = upload(case, &[0.0, 0.0])?;
    blas.gemv::<f32>(&Gemv::new(2, 3), Scalars::host(1.0, 0.0), &da, &x, &mut y)
        .map_err(|e| e.to_string())?;
    ensure(
        y.to_vec::<f32>().map_err(|e| e.to_string())? == [9.0, 12.0],
        || "gemv".into(),
    )?;
    // The same A read row-major (2 x 3: [[1,2,3],[4,5,6]]).
    blas.gemv::<f32>(
        &Gemv::row_major(2, 3),
        Scalars::host(1.0, 0.0),
        &da,
        &x,
        &mut y,
    )
    .map_err(|e| e.to_string())?;
    ensure(
        y.to_vec::<f32>().map_err(|e| e.to_string())? == [6.0, 15.0],
        || "row-major gemv".into(),
    )?;
    let mut v = upload(case, &[1.0, 2.0, 3.0, 4.0])?;
    let w = upload(case, &[1.0, 1.0, 1.0, 1.0])?;
    blas.axpy::<f32>(&Vector::new(4), 2.0f32, &w, &mut v)
        .map_err(|e| e.to_string())?;
    blas.scal::<f32>(&Vector::new(2).inc_x(2), Scalar::Host(10.0f32), &mut v)
        .map_err(|e| e.to_string())?;
    let got: Vec<f32> = v.to_vec().map_err(|e| e.to_string())?;
    ensure(got == [30.0, 4.0, 50.0, 6.0], || {
        format!("axpy, scal: {got:?}")
    })?;
    let dot = blas
        .dot::<f32>(&Vector::new(4), &v, &w)
        .map_err(|e| e.to_string())?;
    ensure(dot == 90.0, || format!("dot {dot}"))?;
    let mut result = upload(case, &[0.0])?;
    blas.nrm2_into::<f32>(&Vector::new(2).inc_x(2), &v, &mut result)
        .map_err(|e| e.to_string())?;
    let norm = result.to_vec::<f32>().map_err(|e| e.to_string())?[0];
    ensure((norm - 3400f32.sqrt()).abs() < 1e-3, || {
        format!("nrm2 {norm}")
    })
}

/// Runs `call`, expecting `InvalidArgument` whose message holds `needle`, and no library
/// call at all.
fn refused<T: std::fmt::Debug>(
    case: &Case,
    what: &str,
    needle: &str,
    call: impl FnOnce() -> cuda_safe::Result<T>,
) -> Result<(), String> {
    case.stub.take_log();
    match call() {
        Err(Error::InvalidArgument(message)) if message.contains(needle) => {}
        other => {
            return Err(format!(
                "{what}: expected a refusal naming `{needle}`, got {other:?}"
            ));
        }
    }
    let calls = names(case.stub.take_log());
    ensure(calls.is_empty(), || {
        format!("{what}: the refusal called {calls:?}")
    })
}

fn size_checks_refuse_first(case: &Case) -> Result<(), String> {
    let blas = Blas::new(&case.stream).map_err(|e| e.to_string())?;
    let (a, b) = (
        upload(case, &[0.0; 64 * 32])?,
        upload(case, &[0.0; 32 * 16])?,
    );
    let mut c = upload(case, &[0.0; 64 * 16])?;
    let mut small = upload(case, &[0.0; 64 * 16 - 1])?;
    let host = Scalars::host(1.0f32, 0.0);
    let shape = Gemm::new(64, 16, 32);
    refused(
        case,
        "C too small",
        "C (64 x 16, column-major) spans 1024 elements, but its memory holds 1023",
        || blas.gemm::<f32, f32>(&shape, host, &a, &b, &mut small),
    )?;
    refused(case, "A too small", "A (64 x 33", || {
        blas.gemm::<f32, f32>(&Gemm::new(64, 16, 33), host, &a, &b, &mut c)
    })?;
    refused(
        case,
        "a leading dimension below the rows",
        "at least 64",
        || blas.gemm::<f32, f32>(&shape.lda(32), host, &a, &b, &mut c),
    )?;
    refused(
        case,
        "a padded leading dimension past the memory",
        "A (64 x 32",
        || blas.gemm::<f32, f32>(&shape.lda(65), host, &a, &b, &mut c),
    )?;
    refused(
        case,
        "a dimension past cuBLAS's int",
        "does not fit",
        || blas.gemm::<f32, f32>(&Gemm::new(1 << 31, 1, 1), host, &a, &b, &mut c),
    )?;
    refused(
        case,
        "a row-major B too small",
        "B (32 x 17, row-major)",
        || blas.gemm::<f32, f32>(&Gemm::row_major(16, 17, 32), host, &a, &b, &mut c),
    )?;
    let odd = case
        .pool
        .allocate(12, &case.stream)
        .map_err(|e| e.to_string())?;
    refused(
        case,
        "a buffer of no whole number of elements",
        "whole number",
        || {
            blas.gemm::<f64, f64>(
                &Gemm::new(1, 1, 1),
                Scalars::host(1.0, 0.0),
                &odd,
                &odd,
                &mut c,
            )
        },
    )?;
    let batch = StridedBatch::packed(2, &shape).map_err(|e| e.to_string())?;
    refused(case, "a batch past the memory", "the batch of 2 As", || {
        blas.gemm_strided_batched::<f32, f32>(&shape, &batch, host, &a, &b, &mut c)
    })?;
    let overlapping = StridedBatch {
        stride_c: 1000,
        ..batch
    };
    refused(case, "overlapping outputs", "write over each other", || {
        blas.gemm_strided_batched::<f32, f32>(&shape, &overlapping, host, &a, &b, &mut c)
    })?;
    let device_alpha = upload(case, &[])?;
    let empty = device_alpha.as_slice::<f32>().map_err(|e| e.to_string())?;
    refused(case, "an empty device scalar", "holds no element", || {
        blas.gemm::<f32, f32>(&shape, Scalars::device(empty, empty), &a, &b, &mut c)
    })?;
    let eight = upload(case, &[0.0; 8])?;
    refused(
        case,
        "a vector past its memory",
        "x spans 9 elements",
        || blas.axpy::<f32>(&Vector::new(5).inc_x(2), 1.0f32, &eight, &mut c),
    )?;
    refused(case, "a zero increment", "at least 1", || {
        blas.dot::<f32>(&Vector::new(5).inc_y(0), &a, &b)
    })?;
    let mut empty_result = upload(case, &[])?;
    refused(case, "an empty result", "the result spans 1", || {
        blas.nrm2_into::<f32>(&Vector::new(5), &a, &mut empty_result)
    })?;
    let mut short_y = upload(case, &[0.0; 63])?;
    refused(case, "a gemv y too short", "y spans 64", || {
        blas.gemv::<f32>(&Gemv::new(64, 32), host, &a, &b, &mut short_y)
    })?;
    let (one, none): (Vec<Buffer>, Vec<Buffer>) = (vec![upload(case, &[0.0])?], Vec::new());
    let mut outputs = vec![upload(case, &[0.0])?];
    refused(
        case,
        "a batch of unequal lists",
        "as many A, B and C",
        || GemmBatch::<f32, f32>::new(&blas, &one, &none, &mut outputs),
    )?;
    let mut tables =
        GemmBatch::<f32, f32>::new(&blas, &one, &one, &mut outputs).map_err(|e| e.to_string())?;
    refused(
        case,
        "a batch whose matrices are too small",
        "A (2 x 2",
        || blas.gemm_batched(&Gemm::new(2, 2, 2), host, &mut tables),
    )
}

fn gemm_call_budget(case: &Case) -> Result<(), String> {
    let blas = Blas::new(&case.stream).map_err(|e| e.to_string())?;
    let (a, b) = (upload(case, &[1.0; 16])?, upload(case, &[1.0; 16])?);
    let mut c = upload(case, &[0.0; 16])?;
    let scalars = upload(case, &[1.0, 0.0])?;
    let alpha = scalars.as_slice::<f32>().map_err(|e| e.to_string())?;
    let (one, zero) = (
        alpha.slice(0..1).map_err(|e| e.to_string())?,
        alpha.slice(1..2).map_err(|e| e.to_string())?,
    );
    let shape = Gemm::new(4, 4, 4);
    let mut gemm = |scalars: Scalars<'_, f32>| -> Result<Vec<String>, String> {
        case.stub.take_log();
        blas.gemm::<f32, f32>(&shape, scalars, &a, &b, &mut c)
            .map_err(|e| e.to_string())?;
        Ok(names(case.stub.take_log()))
    };
    for _ in 0..3 {
        gemm(Scalars::host(1.0, 0.0))?;
    }
    let expect = |got: Vec<String>, want: &[&str], what: &str| {
        ensure(got == want, || {
            format!("{what}: {got:?}, expected {want:?}")
        })
    };
    expect(
        gemm(Scalars::host(1.0, 0.0))?,
        &["cuCtxGetCurrent", "cublasGemmEx"],
        "a host-scalar gemm (its context already current: one look, no change)",
    )?;
    expect(
        gemm(Scalars::device(one, zero))?,
        &["cublasSetPointerMode_v2", "cuCtxGetCurrent", "cublasGemmEx"],
        "the first device-scalar gemm",
    )?;
    expect(
        gemm(Scalars::device(one, zero))?,
        &["cuCtxGetCurrent", "cublasGemmEx"],
        "the next one",
    )?;
    expect(
        gemm(Scalars::host(1.0, 0.0))?,
        &["cublasSetPointerMode_v2", "cuCtxGetCurrent", "cublasGemmEx"],
        "back to host scalars",
    )
}

fn set_stream_rebinds(case: &Case) -> Result<(), String> {
    let mut blas = Blas::new(&case.stream).map_err(|e| e.to_string())?;
    let other = case
        .stream
        .device()
        .create_stream(Default::default())
        .map_err(|e| e.to_string())?;
    case.stub.take_log();
    blas.set_stream(&other).map_err(|e| e.to_string())?;
    let calls = names(case.stub.take_log());
    let blas_calls: Vec<&String> = calls
        .iter()
        .filter(|name| name.starts_with("cublas"))
        .collect();
    ensure(
        blas_calls == ["cublasSetStream_v2", "cublasSetWorkspace_v2"],
        || format!("set_stream called {calls:?}"),
    )?;
    ensure(blas.workspace().stream().same_as(&other), || {
        "the workspace stayed".into()
    })?;
    blas.set_stream(&other).map_err(|e| e.to_string())?;
    let again = names(case.stub.take_log());
    ensure(again.is_empty(), || {
        format!("setting the same stream called {again:?}")
    })
}

fn errors_name_the_status(case: &Case) -> Result<(), String> {
    let blas = Blas::new(&case.stream).map_err(|e| e.to_string())?;
    let (a, mut c) = (upload(case, &[1.0; 4])?, upload(case, &[0.0; 4])?);
    case.stub.fail("cublasGemmEx", 15, 1);
    let error = blas
        .gemm::<f32, f32>(&Gemm::new(2, 2, 2), Scalars::host(1.0, 0.0), &a, &a, &mut c)
        .unwrap_err();
    ensure(
        matches!(
            error.library_error::<CublasError>(),
            Some(CublasError::Call {
                name: "CUBLAS_STATUS_NOT_SUPPORTED",
                api: "cublasGemmEx",
                ..
            })
        ),
        || format!("{error:?}"),
    )?;
    ensure(error.is_not_supported(), || {
        format!("{error} is not `not supported`")
    })?;
    let version = blas.version().map_err(|e| e.to_string())?;
    ensure(version == 130100, || format!("version {version}"))
}

fn loader_found_the_stub(case: &Case) -> Result<(), String> {
    use cuda_safe_libs::blas::cublas_sys::{self, ENTRY_POINTS};
    let cublas = cublas_sys::cublas().map_err(|e| e.to_string())?;
    ensure(cublas.library().path() == case.path, || {
        "cuBLAS is not the stub".into()
    })?;
    // The stub has none of the entry points newer than the oldest header of the ABI: calling
    // one is the loader's typed error, naming the cuBLAS release that added it.
    let (symbol, release) = if cublas_sys::ABI_MAJOR == 12 {
        (
            "cublasGetEmulationStrategy",
            "introduced in cuBLAS 12.9; update cuBLAS",
        )
    } else {
        (
            "cublasGetEmulationSpecialValuesSupport",
            "introduced in cuBLAS 13.1; update cuBLAS",
        )
    };
    let index = ENTRY_POINTS
        .iter()
        .position(|entry| entry.name() == symbol)
        .ok_or_else(|| format!("{symbol} is no entry point"))?;
    ensure(!cublas.library().has(index), || {
        format!("the stub has {symbol}")
    })?;
    let error: Error = cublas_sys::LoadError::SymbolMissing {
        library: cublas_sys::LIBCUBLAS.name,
        path: case.path.clone(),
        symbol: ENTRY_POINTS[index].name(),
        since: ENTRY_POINTS[index].introduced(),
    }
    .into();
    ensure(error.to_string().contains(release), || format!("{error}"))?;
    ensure(error.is_not_supported(), || {
        format!("{error} is not `not supported`")
    })
}
