//! The libraries' calls on a handle of another device than the thread's current context, and
//! on memory of another device than the handle's.

use cuda_safe::Error;
use cuda_safe_libs::blas::{Blas, Gemm, Scalars};

use super::{Case, CaseFn, ensure, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "cuBLAS, cuBLASLt and cuRAND on device 1 run in its context from a thread bound to \
         device 0's",
        calls_make_their_context_current,
    ),
    (
        "device 1's memory is refused before cuBLAS, cuBLASLt and cuRAND of device 0 until its \
         pool grants device 0 access",
        another_devices_memory,
    ),
];

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

/// An operand of device 1 for each library of device 0: refused, typed, with no library call;
/// once device 0 may access device 1's pool, a GEMM reads it.
fn another_devices_memory(case: &Case) -> Result<(), String> {
    use cuda_safe::Device;
    use cuda_safe_libs::blas::{Matmul, MatmulCall, MatmulDesc};
    use cuda_safe_libs::rand::{Generator, RngKind};
    let text = |e: Error| e.to_string();
    let (first, second) = (*case.stream.device(), Device::new(1).map_err(text)?);
    let stream = second.create_stream(Default::default()).map_err(text)?;
    let pool = second.default_memory_resource().map_err(text)?;
    let blas = Blas::new(&case.stream).map_err(text)?;
    let matmul = Matmul::new(&case.stream).map_err(text)?;
    let mut generator = Generator::new(&case.stream, RngKind::Philox4x32_10).map_err(text)?;
    let plan = matmul
        .plan(&MatmulDesc::new::<f32, f32, f32>(Gemm::row_major(2, 2, 2)))
        .map_err(text)?;
    let mut far = pool
        .allocate_from_host(&[1.0f32; 4], &stream)
        .map_err(text)?;
    let near = case
        .pool
        .allocate_from_host(&[2.0f32; 4], &case.stream)
        .map_err(text)?;
    let mut c = case
        .pool
        .allocate_zeroed::<f32>(4, &case.stream)
        .map_err(text)?;
    let gemm = Gemm::row_major(2, 2, 2);
    case.stub.take_log();
    let refused = |what: &str, result: Result<(), Error>| match result {
        Err(Error::InvalidArgument(why)) if why.contains("device 1's") => Ok(()),
        other => Err(format!(
            "device 1's memory for {what} of device 0: {other:?}"
        )),
    };
    let scalars = Scalars::host(1.0, 0.0);
    refused(
        "a GEMM",
        blas.gemm::<f32, f32>(&gemm, scalars, &far, &near, &mut c),
    )?;
    let call = MatmulCall::new::<f32, f32, f32>(&far, &near, &mut c).map_err(text)?;
    refused("a cuBLASLt matmul", matmul.run(&plan, call))?;
    refused("a cuRAND fill", generator.uniform::<f32>(&mut far))?;
    let calls = names(case.stub.take_log());
    ensure(
        !calls
            .iter()
            .any(|call| call.starts_with("cublas") || call.starts_with("curand")),
        || format!("the refused calls called {calls:?}"),
    )?;
    pool.grant_access(&first).map_err(text)?;
    let granted = blas.gemm::<f32, f32>(&gemm, scalars, &far, &near, &mut c);
    pool.revoke_access(&first).map_err(text)?;
    granted.map_err(|e| format!("with access granted: {e}"))?;
    let product = c.to_vec::<f32>().map_err(text)?;
    ensure(product == [4.0; 4], || format!("the GEMM gave {product:?}"))
}
