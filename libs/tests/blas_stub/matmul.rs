//! `Matmul` on the stub cuBLASLt.

use cuda_safe::{Buffer, Error};
use cuda_safe_libs::blas::{CublasError, Epilogue, F8E4M3, Gemm, Matmul, MatmulCall, MatmulDesc};
use half::bf16;

use super::blas::{close, reference};
use super::{Case, CaseFn, Lcg, ensure, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "matmul with bias and ReLU matches the CPU, both orders",
        matmul_matches_the_cpu,
    ),
    (
        "a plan is made once; a run is one cublasLtMatmul",
        plan_once_and_run_budget,
    ),
    (
        "a plan runs on several threads at once, each call with its own bias",
        a_plan_runs_on_several_threads_at_once,
    ),
    (
        "the plan cache keeps the plans used most recently, up to its capacity",
        the_plan_cache_is_bounded,
    ),
    (
        "a plan the heuristic refuses names the shape",
        refused_plans_are_typed,
    ),
    (
        "every run check refuses before the call",
        run_checks_refuse_first,
    ),
];

fn upload(case: &Case, values: &[f32]) -> Result<Buffer, String> {
    case.pool
        .allocate_from_host(values, &case.stream)
        .map_err(|e| e.to_string())
}

fn matmul_matches_the_cpu(case: &Case) -> Result<(), String> {
    let matmul = Matmul::new(&case.stream).map_err(|e| e.to_string())?;
    let mut data = Lcg(3);
    let (m, n, k) = (6usize, 4usize, 5usize);
    for row_major in [false, true] {
        let shape = if row_major {
            Gemm::row_major(m, n, k).transpose_a()
        } else {
            Gemm::new(m, n, k).transpose_a()
        };
        let desc = MatmulDesc::new::<f32, f32, f32>(shape).epilogue(Epilogue::ReluBias);
        let plan = matmul.plan(&desc).map_err(|e| e.to_string())?;
        let (a, b) = (data.vec(k * m), data.vec(k * n));
        // The bias runs along D's rows (column-major) or its columns (row-major).
        let bias = data.vec(if row_major { n } else { m });
        let (da, db, dbias) = (upload(case, &a)?, upload(case, &b)?, upload(case, &bias)?);
        let mut dd = upload(case, &vec![0.0; m * n])?;
        let call = MatmulCall::new::<f32, f32, f32>(&da, &db, &mut dd)
            .and_then(|call| call.bias::<f32>(&dbias))
            .map_err(|e| e.to_string())?;
        matmul
            .run(&plan, call)
            .map_err(|e| format!("{desc}: {e}"))?;
        let (lda, ldb, ldd) = if row_major { (m, n, n) } else { (k, k, m) };
        let mut want = reference((m, n, k), (true, false), row_major, &a, lda, &b, ldb, ldd);
        for i in 0..m {
            for j in 0..n {
                let at = if row_major { i * n + j } else { j * m + i };
                let add = if row_major { bias[j] } else { bias[i] };
                want[at] = (want[at] + add).max(0.0);
            }
        }
        let got: Vec<f32> = dd.to_vec().map_err(|e| e.to_string())?;
        close(&got, &want).map_err(|e| format!("{desc}: {e}"))?;
    }
    // A strided batch of two plain products.
    let shape = Gemm::new(2, 2, 2);
    let desc = MatmulDesc::new::<f32, f32, f32>(shape).batched(2, 4, 0, 4);
    let plan = matmul.plan(&desc).map_err(|e| e.to_string())?;
    let a = upload(case, &[1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0])?;
    let b = upload(case, &[1.0, 2.0, 3.0, 4.0])?;
    let mut d = upload(case, &[0.0; 8])?;
    matmul
        .run(
            &plan,
            MatmulCall::new::<f32, f32, f32>(&a, &b, &mut d).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
    let got: Vec<f32> = d.to_vec().map_err(|e| e.to_string())?;
    ensure(got == [1.0, 2.0, 3.0, 4.0, 2.0, 4.0, 6.0, 8.0], || {
        format!("batched: {got:?}")
    })
}

fn plan_once_and_run_budget(case: &Case) -> Result<(), String> {
    let matmul = Matmul::new(&case.stream).map_err(|e| e.to_string())?;
    let desc = MatmulDesc::new::<f32, f32, f32>(Gemm::new(4, 4, 4)).epilogue(Epilogue::Bias);
    case.stub.take_log();
    let plan = matmul.plan(&desc).map_err(|e| e.to_string())?;
    let made = names(case.stub.take_log());
    ensure(
        made.iter()
            .any(|name| name == "cublasLtMatmulAlgoGetHeuristic"),
        || format!("making the plan called {made:?}"),
    )?;
    let again = matmul.plan(&desc).map_err(|e| e.to_string())?;
    ensure(std::sync::Arc::ptr_eq(&plan, &again), || {
        "the plan was made twice".into()
    })?;
    let cached = names(case.stub.take_log());
    ensure(cached.is_empty(), || {
        format!("a cached plan called {cached:?}")
    })?;
    ensure(plan.workspace_size() == 4096, || {
        "the heuristic's workspace".into()
    })?;
    let (a, b) = (upload(case, &[1.0; 16])?, upload(case, &[1.0; 16])?);
    let (bias, other) = (upload(case, &[1.0; 4])?, upload(case, &[2.0; 4])?);
    let mut d = upload(case, &[0.0; 16])?;
    let mut run = |bias: &Buffer| -> Result<Vec<String>, String> {
        case.stub.take_log();
        let call = MatmulCall::new::<f32, f32, f32>(&a, &b, &mut d)
            .and_then(|call| call.bias::<f32>(bias))
            .map_err(|e| e.to_string())?;
        matmul.run(&plan, call).map_err(|e| e.to_string())?;
        Ok(names(case.stub.take_log()))
    };
    let first = run(&bias)?;
    ensure(
        first
            == [
                "cublasLtMatmulDescSetAttribute",
                "cuCtxGetCurrent",
                "cublasLtMatmul",
            ],
        || format!("the first run: {first:?}"),
    )?;
    let same = run(&bias)?;
    ensure(same == ["cuCtxGetCurrent", "cublasLtMatmul"], || {
        format!("a run with the same bias: {same:?}")
    })?;
    let moved = run(&other)?;
    ensure(
        moved
            == [
                "cublasLtMatmulDescSetAttribute",
                "cuCtxGetCurrent",
                "cublasLtMatmul",
            ],
        || format!("a run with another bias: {moved:?}"),
    )
}

fn refused_plans_are_typed(case: &Case) -> Result<(), String> {
    let matmul = Matmul::new(&case.stream).map_err(|e| e.to_string())?;
    case.blas.refuse_heuristic(true);
    let desc = MatmulDesc::new::<F8E4M3, F8E4M3, f32>(Gemm::new(64, 64, 64));
    let refused = matmul.plan(&desc);
    case.blas.refuse_heuristic(false);
    match refused
        .as_ref()
        .map_err(|error| error.library_error::<CublasError>())
    {
        Err(Some(CublasError::MatmulRefused { shape, reason, .. })) => {
            ensure(
                &**shape == "e4m3 x e4m3 -> f32 64x64x64 (N, N, column-major)",
                || format!("the shape: {shape}"),
            )?;
            ensure(reason.contains("cublasLtMatmulAlgoGetHeuristic"), || {
                format!("{reason}")
            })
        }
        other => Err(format!("expected MatmulRefused, got {other:?}")),
    }
}

fn run_checks_refuse_first(case: &Case) -> Result<(), String> {
    let matmul = Matmul::new(&case.stream).map_err(|e| e.to_string())?;
    let workspace = case
        .pool
        .allocate(1024, &case.stream)
        .map_err(|e| e.to_string())?;
    let tight = Matmul::with_workspace(&case.stream, workspace).map_err(|e| e.to_string())?;
    let plain = matmul
        .plan(&MatmulDesc::new::<f32, f32, f32>(Gemm::new(8, 8, 8)))
        .map_err(|e| e.to_string())?;
    let biased = matmul
        .plan(&MatmulDesc::new::<f32, f32, f32>(Gemm::new(8, 8, 8)).epilogue(Epilogue::GeluBias))
        .map_err(|e| e.to_string())?;
    let (a, bias) = (upload(case, &[0.0; 64])?, upload(case, &[0.0; 8])?);
    let zeros = |len: usize| case.pool.allocate_zeroed::<f32>(len, &case.stream);
    let check = |what: &str, needle: &str, run: &dyn Fn() -> cuda_safe::Result<()>| {
        case.stub.take_log();
        let outcome = run();
        let calls: Vec<String> = names(case.stub.take_log())
            .into_iter()
            .filter(|name| name.starts_with("cublas"))
            .collect();
        match outcome {
            Err(Error::InvalidArgument(message)) if message.contains(needle) => {
                ensure(calls.is_empty(), || {
                    format!("{what}: the refusal called {calls:?}")
                })
            }
            other => Err(format!(
                "{what}: expected a refusal naming `{needle}`, got {other:?}"
            )),
        }
    };
    check("D too small", "D of f32 x f32 -> f32 8x8x8", &|| {
        let mut d = zeros(63)?;
        matmul.run(&plain, MatmulCall::new::<f32, f32, f32>(&a, &a, &mut d)?)
    })?;
    check("a missing bias", "needs a bias", &|| {
        let mut d = zeros(64)?;
        matmul.run(&biased, MatmulCall::new::<f32, f32, f32>(&a, &a, &mut d)?)
    })?;
    check("an unused bias", "takes no a bias", &|| {
        let mut d = zeros(64)?;
        let call = MatmulCall::new::<f32, f32, f32>(&a, &a, &mut d)?.bias::<f32>(&bias)?;
        matmul.run(&plain, call)
    })?;
    check("a bias too short", "the bias spans 8", &|| {
        let mut d = zeros(64)?;
        let short = a.as_slice::<f32>()?.slice(..7)?;
        let call = MatmulCall::new::<f32, f32, f32>(&a, &a, &mut d)?.bias::<f32>(&short)?;
        matmul.run(&biased, call)
    })?;
    check("operands of other types", "element types", &|| {
        let mut d = zeros(64)?;
        matmul.run(
            &plain,
            MatmulCall::new::<F8E4M3, F8E4M3, f32>(&a, &a, &mut d)?,
        )
    })?;
    check("a misaligned operand", "256-byte aligned", &|| {
        let mut d = zeros(65)?;
        let view = a.as_slice::<f32>()?;
        let mut shifted = d.as_mut_slice::<f32>()?;
        let mut shifted = shifted.slice_mut(1..)?;
        matmul.run(
            &plain,
            MatmulCall::new::<f32, f32, f32>(&view, &a, &mut shifted)?,
        )
    })?;
    check("FP8 scales on an f32 plan", "takes no FP8 scale", &|| {
        let mut d = zeros(64)?;
        let call = MatmulCall::new::<f32, f32, f32>(&a, &a, &mut d)?.scale_a(&bias)?;
        matmul.run(&plain, call)
    })?;
    let fp8 = matmul
        .plan(&MatmulDesc::new::<F8E4M3, F8E4M3, bf16>(
            Gemm::new(16, 16, 16).transpose_a(),
        ))
        .map_err(|e| e.to_string())?;
    let (a8, scales) = (
        case.pool
            .allocate_zeroed::<F8E4M3>(256, &case.stream)
            .map_err(|e| e.to_string())?,
        upload(case, &[1.0; 8])?,
    );
    check("a scale 4 bytes into a buffer", "16-byte aligned", &|| {
        let mut d = case.pool.allocate_zeroed::<bf16>(256, &case.stream)?;
        let view = scales.as_slice::<f32>()?;
        let (first, second) = (view.slice(0..1)?, view.slice(1..2)?);
        let call = MatmulCall::new::<F8E4M3, F8E4M3, bf16>(&a8, &a8, &mut d)?
            .scale_a(&first)?
            .scale_b(&second)?;
        matmul.run(&fp8, call)
    })?;
    check(
        "a workspace smaller than the plan's",
        "4096-byte workspace",
        &|| {
            let mut d = zeros(64)?;
            tight.run(&plain, MatmulCall::new::<f32, f32, f32>(&a, &a, &mut d)?)
        },
    )
}

fn a_plan_runs_on_several_threads_at_once(case: &Case) -> Result<(), String> {
    let desc = MatmulDesc::new::<f32, f32, f32>(Gemm::new(4, 4, 4)).epilogue(Epilogue::Bias);
    let before = case.blas.live("lt-descriptor");
    let plan = Matmul::new(&case.stream)
        .and_then(|matmul| matmul.plan(&desc))
        .map_err(|e| e.to_string())?;
    let (a, b) = (upload(case, &[1.0; 16])?, upload(case, &[1.0; 16])?);
    let biases = (0..4)
        .map(|thread| upload(case, &[10.0 * thread as f32; 4]))
        .collect::<Result<Vec<_>, _>>()?;
    let device = *case.stream.device();
    std::thread::scope(|scope| {
        let threads: Vec<_> = biases
            .iter()
            .enumerate()
            .map(|(thread, bias)| {
                let (plan, a, b) = (&plan, &a, &b);
                scope.spawn(move || -> Result<(), String> {
                    device.set_current().map_err(|e| e.to_string())?;
                    let stream = device
                        .create_stream(Default::default())
                        .map_err(|e| e.to_string())?;
                    let matmul = Matmul::new(&stream).map_err(|e| e.to_string())?;
                    let mut d = case
                        .pool
                        .allocate_zeroed::<f32>(16, &stream)
                        .map_err(|e| e.to_string())?;
                    let want = 4.0 + 10.0 * thread as f32;
                    for round in 0..100 {
                        let call = MatmulCall::new::<f32, f32, f32>(a, b, &mut d)
                            .and_then(|call| call.bias::<f32>(bias))
                            .map_err(|e| e.to_string())?;
                        matmul.run(plan, call).map_err(|e| e.to_string())?;
                        let got: Vec<f32> = d.to_vec().map_err(|e| e.to_string())?;
                        ensure(got.iter().all(|&value| value == want), || {
                            format!("thread {thread}, round {round}: {got:?}, not {want}")
                        })?;
                    }
                    Ok(())
                })
            })
            .collect();
        threads
            .into_iter()
            .try_for_each(|thread| thread.join().map_err(|_| "a thread panicked".to_owned())?)
    })?;
    let descriptors = case.blas.live("lt-descriptor") - before;
    // The shared descriptor, three layouts, and one lent descriptor per thread at most.
    ensure((5..=8).contains(&descriptors), || {
        format!("{descriptors} descriptors live for one plan run on 4 threads")
    })?;
    drop(plan);
    let left = case.blas.live("lt-descriptor") - before;
    ensure(left == 0, || {
        format!("{left} descriptors left after the plan")
    })
}

fn the_plan_cache_is_bounded(case: &Case) -> Result<(), String> {
    let matmul = Matmul::new(&case.stream).map_err(|e| e.to_string())?;
    ensure(
        matmul.plan_capacity() == Matmul::DEFAULT_PLAN_CAPACITY,
        || format!("capacity {}", matmul.plan_capacity()),
    )?;
    let before = case.blas.live("lt-descriptor");
    let desc = |n: usize| MatmulDesc::new::<f32, f32, f32>(Gemm::new(n, n, n));
    let plan = |n: usize| -> Result<Vec<String>, String> {
        case.stub.take_log();
        matmul.plan(&desc(n)).map_err(|e| e.to_string())?;
        Ok(names(case.stub.take_log()))
    };
    let made = |calls: &[String]| calls.iter().any(|c| c == "cublasLtMatmulAlgoGetHeuristic");
    matmul.set_plan_capacity(2);
    for n in 1..=3 {
        plan(n)?;
    }
    ensure(matmul.cached_plans() == 2, || {
        format!("{} plans kept", matmul.cached_plans())
    })?;
    // A plain plan holds its operation descriptor and three layouts.
    let live = case.blas.live("lt-descriptor") - before;
    ensure(live == 8, || format!("{live} descriptors for 2 plans kept"))?;
    ensure(plan(3)?.is_empty(), || {
        "the newest plan was made again".into()
    })?;
    ensure(made(&plan(1)?), || "the oldest plan was kept".into())?;
    // 2 was used least recently: 1 took its place.
    ensure(plan(3)?.is_empty(), || "plan 3 was dropped".into())?;
    ensure(made(&plan(2)?), || {
        "plan 2 was kept past the capacity".into()
    })?;
    matmul.set_plan_capacity(0);
    ensure(matmul.cached_plans() == 0, || {
        "capacity 0 kept plans".into()
    })?;
    ensure(made(&plan(3)?), || "capacity 0 kept a plan".into())?;
    let live = case.blas.live("lt-descriptor") - before;
    ensure(live == 0, || {
        format!("{live} descriptors left at capacity 0")
    })?;
    // Many shapes at the default capacity: the descriptors stay bounded.
    matmul.set_plan_capacity(Matmul::DEFAULT_PLAN_CAPACITY);
    for n in 1..=Matmul::DEFAULT_PLAN_CAPACITY + 200 {
        matmul.plan(&desc(n)).map_err(|e| e.to_string())?;
    }
    let live = case.blas.live("lt-descriptor") - before;
    ensure(
        matmul.cached_plans() == Matmul::DEFAULT_PLAN_CAPACITY
            && live == 4 * Matmul::DEFAULT_PLAN_CAPACITY as i64,
        || format!("{} plans, {live} descriptors", matmul.cached_plans()),
    )
}
