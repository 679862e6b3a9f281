//! The ordering rule of the library calls (`cuda_safe::ordering::ordered`) on the stub's
//! asynchronous GPU (`stub/c/cuda_gpu.c`): a GEMM and a cuRAND fill queued on one stream over
//! operands another stream writes late wait for that stream; each control does the same with
//! the wait removed (the operands on the call's stream, written by a raw fill on the other,
//! which the crate does not see) and reads the wrong data.

use cuda_safe::{Buffer, Stream};
use cuda_safe_libs::blas::{Blas, Gemm, Scalars};
use cuda_safe_libs::rand::{Generator, RngKind};
use cuda_safe_stub::ordering::{LATE, OP_TIME, raw_fill, read_on};

use super::{Case, CaseFn, ensure};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "a GEMM waits for its operands' stream",
        gemm_after_its_operands,
    ),
    ("a GEMM without its wait reads zeros", gemm_without_its_wait),
    (
        "a cuRAND fill waits for its output's stream",
        fill_after_its_output,
    ),
    (
        "a cuRAND fill without its wait is overwritten",
        fill_without_its_wait,
    ),
];

/// The GEMM's sides: `M` x `K` times `K` x `M`.
const M: usize = 8;
const K: usize = 4;

/// Runs `body` with the GPU asynchronous and a second stream (the late writer), which it
/// drains after; the GPU is synchronous again for the next case.
fn on_async_gpu(
    case: &Case,
    body: impl FnOnce(&Stream) -> Result<(), String>,
) -> Result<(), String> {
    let writer = case
        .stream
        .context()
        .create_stream(Default::default())
        .map_err(|e| e.to_string())?;
    case.stub.async_gpu(OP_TIME);
    let verdict = body(&writer);
    let drained = writer.sync().and_then(|()| case.stream.sync());
    case.stub.sync_gpu();
    drained.map_err(|e| e.to_string())?;
    verdict
}

fn zeroed(case: &Case, len: usize, stream: &Stream) -> Result<Buffer, String> {
    case.pool
        .allocate_zeroed::<f32>(len, stream)
        .map_err(|e| e.to_string())
}

/// A GEMM of ones by twos on `case.stream`; `crate_fill` fills the operands through the crate
/// on their own (late) stream, otherwise by raw fills unknown to it. Returns C's values.
fn gemm(case: &Case, writer: &Stream, crate_fill: bool) -> Result<Vec<f32>, String> {
    let home = if crate_fill { writer } else { &case.stream };
    let (mut a, mut b) = (zeroed(case, M * K, home)?, zeroed(case, K * M, home)?);
    let mut c = zeroed(case, M * M, &case.stream)?;
    home.sync().map_err(|e| e.to_string())?;
    case.stub.gpu_delay(writer, LATE);
    if crate_fill {
        a.fill(1.0f32).map_err(|e| e.to_string())?;
        b.fill(2.0f32).map_err(|e| e.to_string())?;
    } else {
        raw_fill(&a, writer, 1.0)?;
        raw_fill(&b, writer, 2.0)?;
    }
    let blas = Blas::new(&case.stream).map_err(|e| e.to_string())?;
    blas.gemm::<f32, f32>(&Gemm::new(M, M, K), Scalars::host(1.0, 0.0), &a, &b, &mut c)
        .map_err(|e| e.to_string())?;
    read_on(&c, &case.stream)
}

/// Each element of C: a row of ones times a column of twos.
const PRODUCT: f32 = 2.0 * K as f32;

fn gemm_after_its_operands(case: &Case) -> Result<(), String> {
    on_async_gpu(case, |writer| {
        let c = gemm(case, writer, true)?;
        ensure(c.iter().all(|&v| v == PRODUCT), || {
            format!("C holds {:?}... instead of {PRODUCT}", &c[..4])
        })
    })
}

fn gemm_without_its_wait(case: &Case) -> Result<(), String> {
    on_async_gpu(case, |writer| {
        let c = gemm(case, writer, false)?;
        ensure(c.iter().any(|&v| v != PRODUCT), || {
            "without the wait C is still right".into()
        })
    })
}

/// Floats the generator fills.
const DRAWN: usize = 256;

/// A uniform fill on `case.stream` of a buffer first set to -1 late on `writer` (through the
/// crate, the buffer on `writer`, or by a raw fill, the buffer on `case.stream`).
fn fill(case: &Case, writer: &Stream, crate_fill: bool) -> Result<Vec<f32>, String> {
    let home = if crate_fill { writer } else { &case.stream };
    let mut out = zeroed(case, DRAWN, home)?;
    home.sync().map_err(|e| e.to_string())?;
    case.stub.gpu_delay(writer, LATE);
    if crate_fill {
        out.fill(-1.0f32).map_err(|e| e.to_string())?;
    } else {
        raw_fill(&out, writer, -1.0)?;
    }
    let mut generator =
        Generator::new(&case.stream, RngKind::Philox4x32_10).map_err(|e| e.to_string())?;
    generator
        .uniform::<f32>(&mut out)
        .map_err(|e| e.to_string())?;
    writer.sync().map_err(|e| e.to_string())?;
    read_on(&out, &case.stream)
}

fn fill_after_its_output(case: &Case) -> Result<(), String> {
    on_async_gpu(case, |writer| {
        let values = fill(case, writer, true)?;
        ensure(values.iter().all(|&v| v > 0.0 && v <= 1.0), || {
            format!("the fill left {:?}...", &values[..4])
        })
    })
}

fn fill_without_its_wait(case: &Case) -> Result<(), String> {
    on_async_gpu(case, |writer| {
        let values = fill(case, writer, false)?;
        ensure(values.iter().all(|&v| v == -1.0), || {
            "without the wait the late fill did not overwrite the numbers".into()
        })
    })
}
