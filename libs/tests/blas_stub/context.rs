//! The libraries' calls on a handle of another device than the thread's current context.

use cuda_safe::Error;
use cuda_safe_libs::blas::{Blas, Gemm, Scalars};

use super::{Case, CaseFn, ensure};

pub(crate) const CASES: &[(&str, CaseFn)] = &[(
    "cuBLAS, cuBLASLt and cuRAND on device 1 run in its context from a thread bound to device 0's",
    calls_make_their_context_current,
)];

/// The libraries launch into the calling thread's current context (the stub refuses a call
/// whose stream's context is not current): each call makes its handle's context current and
/// gives the thread back the context it had.
fn calls_make_their_context_current(case: &Case) -> Result<(), String> {
    use cuda_safe::Device;
    use cuda_safe_libs::blas::{Matmul, MatmulCall, MatmulDesc};
    use cuda_safe_libs::rand::{Generator, RngKind};
    let text = |e: Error| e.to_string();
    let other = Device::new(1).map_err(text)?;
    let stream = other.create_stream(Default::default()).map_err(text)?;
    let pool = other.default_memory_resource().map_err(text)?;
    let blas = Blas::new(&stream).map_err(text)?;
    let matmul = Matmul::new(&stream).map_err(text)?;
    let mut generator = Generator::new(&stream, RngKind::Philox4x32_10).map_err(text)?;
    let a = pool
        .allocate_from_host(&[1.0f32; 4], &stream)
        .map_err(text)?;
    let b = pool
        .allocate_from_host(&[2.0f32; 4], &stream)
        .map_err(text)?;
    let mut c = pool.allocate_zeroed::<f32>(4, &stream).map_err(text)?;
    let first = *case.stream.device();
    first.set_current().map_err(text)?;
    let (misuses_before, _) = case.stub.misuse();
    let still_first = || -> Result<(), String> {
        let current = Device::current().map_err(text)?;
        ensure(current == Some(first), || {
            format!("the thread was left on {current:?}")
        })
    };
    blas.gemm::<f32, f32>(
        &Gemm::row_major(2, 2, 2),
        Scalars::host(1.0, 0.0),
        &a,
        &b,
        &mut c,
    )
    .map_err(|e| format!("gemm on device 1: {e}"))?;
    still_first()?;
    let plan = matmul
        .plan(&MatmulDesc::new::<f32, f32, f32>(Gemm::row_major(2, 2, 2)))
        .map_err(text)?;
    let call = MatmulCall::new::<f32, f32, f32>(&a, &b, &mut c).map_err(text)?;
    matmul
        .run(&plan, call)
        .map_err(|e| format!("matmul on device 1: {e}"))?;
    still_first()?;
    generator
        .uniform::<f32>(&mut c)
        .map_err(|e| format!("a fill on device 1: {e}"))?;
    still_first()?;
    let (misuses, last) = case.stub.misuse();
    ensure(misuses == misuses_before, || format!("the stub saw {last}"))
}
