//! The kernels, as PTX the driver compiles at load (`cuModuleLoadData`): cuda-core 0.5.0 loads
//! PTX or CUBIN and has no run-time compiler, where ours compiles the same CUDA C++ with NVRTC.
//!
//! - `empty()` and `spin(ns)` are `bench/floors/async_floor.c`'s PTX, character for character:
//!   the kernels of `async/benches/common/completion_kit.rs`
//!   (`extern "C" __global__ void empty() {}`, and one thread reading `%globaltimer` until `ns`
//!   nanoseconds have passed).
//! - `infer(x, y, a, b, n)` is `async/examples/inference_server.rs`'s kernel written out by
//!   hand: `size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]
//!   + b;` over `unsigned` words.

use std::sync::Arc;

use cuda_core::{Context, Function};

use crate::Result;

/// `empty()` and `spin(unsigned long long ns)`, from `async_floor.c`.
pub const COMPLETION_PTX: &str = "\
.version 7.0
.target sm_52
.address_size 64
.visible .entry empty()
{
  ret;
}
.visible .entry spin(.param .u64 ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
SPIN:
  mov.u64 %rd3, %globaltimer;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p1, %rd4, %rd1;
  @%p1 bra SPIN;
  ret;
}
";

/// `infer(const unsigned* x, unsigned* y, unsigned a, unsigned b, size_t n)`.
pub const INFER_PTX: &str = "\
.version 7.0
.target sm_52
.address_size 64
.visible .entry infer(.param .u64 x, .param .u64 y, .param .u32 a, .param .u32 b, .param .u64 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u32 %r1, [a];
  ld.param.u32 %r2, [b];
  ld.param.u64 %rd3, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mul.wide.u32 %rd4, %r3, %r4;
  cvt.u64.u32 %rd5, %r5;
  add.s64 %rd6, %rd4, %rd5;
  setp.ge.u64 %p1, %rd6, %rd3;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd7, %rd1;
  cvta.to.global.u64 %rd8, %rd2;
  shl.b64 %rd9, %rd6, 2;
  add.s64 %rd10, %rd7, %rd9;
  ld.global.u32 %r6, [%rd10];
  mad.lo.s32 %r7, %r6, %r1, %r2;
  add.s64 %rd11, %rd8, %rd9;
  st.global.u32 [%rd11], %r7;
DONE:
  ret;
}
";

/// The completion benchmarks' kernels, loaded.
#[derive(Debug)]
pub struct Kernels {
    /// `empty()`.
    pub empty: Arc<Function>,
    /// `spin(ns)`.
    pub spin: Arc<Function>,
}

/// Loads `empty` and `spin` into `context` (cuda-core's `load_module_from_ptx_src`).
///
/// # Errors
///
/// The driver's, from loading the PTX or looking a kernel up.
pub fn completion(context: &Arc<Context>) -> Result<Kernels> {
    let module = context.load_module_from_ptx_src(COMPLETION_PTX)?;
    Ok(Kernels {
        empty: Arc::new(module.load_function("empty")?),
        spin: Arc::new(module.load_function("spin")?),
    })
}

/// Loads the server's `infer` into `context`.
///
/// # Errors
///
/// The driver's, from loading the PTX or looking the kernel up.
pub fn infer(context: &Arc<Context>) -> Result<Arc<Function>> {
    let module = context.load_module_from_ptx_src(INFER_PTX)?;
    Ok(Arc::new(module.load_function("infer")?))
}
