//! cuBLAS on a graph arena: the handle's workspace and the GEMM's operands are arena memory, the
//! GEMM is captured from the arena, and each replay with new inputs gives what the same GEMM
//! gives run eagerly.

use cuda_safe::{Buffer, CaptureMode, Error, GraphArena};
use cuda_safe_libs::blas::{Blas, Gemm, Scalars};

use super::{Case, CaseFn, Lcg, ensure};

pub(crate) const CASES: &[(&str, CaseFn)] = &[(
    "a GEMM captured from a graph arena replays with new inputs as run eagerly",
    a_captured_gemm_replays_from_the_arena,
)];

/// The GEMM's shape: A of M x K, B of K x N.
const M: usize = 6;
const N: usize = 5;
const K: usize = 4;
/// Workspace bytes the handle gets from the arena.
const WORKSPACE: usize = 1 << 16;

fn a_captured_gemm_replays_from_the_arena(case: &Case) -> Result<(), String> {
    let text = |e: Error| e.to_string();
    let s = &case.stream;
    let arena = GraphArena::new(s, 4 << 20).map_err(text)?;
    let blas =
        Blas::with_workspace(s, arena.allocate(WORKSPACE, s).map_err(text)?).map_err(text)?;
    let shape = Gemm::new(M, N, K);
    let mut random = Lcg(45);
    let b = arena.static_buffer::<f32>(K * N, s).map_err(text)?;
    b.copy_in(&random.vec(K * N)).map_err(text)?;
    let a = arena.static_buffer::<f32>(M * K, s).map_err(text)?;
    let c = arena.static_buffer::<f32>(M * N, s).map_err(text)?;
    // SAFETY: the GEMM uses the arena's static buffers and its own temporary, and the handle's
    // workspace, which outlives the executable (dropped first, below).
    let graph = unsafe {
        arena.capture(s, CaptureMode::ThreadLocal, |capture| {
            let mut out = arena.allocate_array::<f32>(M * N, capture.stream())?;
            let (a, b): (&Buffer, &Buffer) = (a.buffer(), b.buffer());
            blas.gemm::<f32, f32>(&shape, Scalars::host(1.0, 0.0), a, b, &mut out)?;
            c.copy_in_from(&out)
        })
    }
    .map_err(text)?;
    let exec = graph.instantiate().map_err(text)?;
    for round in 0..3 {
        let input = random.vec(M * K);
        a.copy_in(&input).map_err(text)?;
        exec.launch(s).map_err(text)?;
        let replayed = c.to_vec().map_err(text)?;
        let eager_a = case.pool.allocate_from_host(&input, s).map_err(text)?;
        let mut eager = case.pool.allocate_zeroed::<f32>(M * N, s).map_err(text)?;
        blas.gemm::<f32, f32>(
            &shape,
            Scalars::host(1.0, 0.0),
            &eager_a,
            b.buffer().as_ref(),
            &mut eager,
        )
        .map_err(text)?;
        let expected = eager.to_vec::<f32>().map_err(text)?;
        ensure(
            replayed
                .iter()
                .map(|v| v.to_bits())
                .eq(expected.iter().map(|v| v.to_bits())),
            || format!("replay {round}: {replayed:?} against {expected:?}"),
        )?;
    }
    drop(exec);
    Ok(())
}
