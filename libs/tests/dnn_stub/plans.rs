//! Plans: made once per graph and cached (least recently used out first), the heuristics'
//! refusals passed over (a failed query too), an engine by index, a workspace limit, the stream
//! binding, capture, a plan keeping its handle past its `Dnn`.

use cuda_safe::{CaptureMode, Error};
use cuda_safe_libs::dnn::{
    CudnnError, CudnnRefusal, DataType, Dnn, EngineChoice, Graph, Pointwise, TensorDesc,
    VariantPack,
};

use super::{Case, CaseFn, count, ensure, err, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "a handle is bound to its stream and a plan made once per graph",
        binding_and_caching,
    ),
    (
        "the heuristics' refusals are passed over, and an engine is chosen by index",
        engines,
    ),
    (
        "a workspace limit refuses a plan needing more",
        workspace_limit,
    ),
    (
        "a capture records a cached plan's execution and refuses a miss",
        capture,
    ),
    (
        "a plan runs only on the handle that made it, not on a later one at the same address",
        plans_keep_their_handle,
    ),
    (
        "a failed heuristics query falls back to the next mode; every mode failing is NoEngine \
         with the last status",
        failed_heuristics_fall_back,
    ),
    (
        "a plan made by make_plan outlives its Dnn: the plan is destroyed first, then the handle",
        plan_outlives_its_dnn,
    ),
];

/// `y = op(x)` over `dims`, f32.
fn unary(op: Pointwise, dims: &[i64]) -> Result<Graph, String> {
    let mut graph = Graph::new();
    let x = graph
        .tensor(TensorDesc::packed(DataType::F32, dims))
        .map_err(err)?;
    let y = graph.pointwise(op, x, None).map_err(err)?;
    graph.output(y, DataType::F32).map_err(err)?;
    Ok(graph)
}

fn execute(case: &Case, dnn: &mut Dnn, graph: &Graph) -> Result<(), Error> {
    let mut tensors = graph.tensors();
    let ((tx, xd), (ty, _)) = tensors
        .next()
        .zip(tensors.next())
        .ok_or_else(|| Error::invalid_argument("two tensors"))?;
    let len = xd.span()?;
    let x = case.pool.allocate_zeroed::<f32>(len, &case.stream)?;
    let mut y = case.pool.allocate_zeroed::<f32>(len, &case.stream)?;
    let mut pack = VariantPack::new();
    pack.input::<f32>(tx, &x)?.output::<f32>(ty, &mut y)?;
    dnn.execute(graph, &pack)
}

fn binding_and_caching(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let calls = names(case.stub.take_log());
    ensure(
        count(&calls, "cudnnCreate") == 1 && count(&calls, "cudnnSetStream") == 1,
        || format!("a handle was made by {calls:?}"),
    )?;
    let [a, b, c] = [1, 2, 3].map(|n| unary(Pointwise::Relu, &[1, 1, n]));
    let (a, b, c) = (a?, b?, c?);
    execute(case, &mut dnn, &a).map_err(err)?;
    let first = names(case.stub.take_log());
    execute(case, &mut dnn, &a).map_err(err)?;
    let second = names(case.stub.take_log());
    ensure(
        count(&first, "cudnnBackendFinalize") > 4 && count(&second, "cudnnBackendFinalize") == 1,
        || format!("a second execution finalized {second:?}"),
    )?;
    ensure(dnn.cached() == 1 && dnn.workspace_bytes() >= 4096, || {
        format!("{dnn:?}")
    })?;
    dnn.set_capacity(2).map_err(err)?;
    execute(case, &mut dnn, &b).map_err(err)?;
    execute(case, &mut dnn, &a).map_err(err)?; // a is the more recent
    execute(case, &mut dnn, &c).map_err(err)?; // evicts b
    ensure(
        dnn.contains(&a) && dnn.contains(&c) && !dnn.contains(&b),
        || "the least recently used plan stayed".into(),
    )?;
    ensure(dnn.set_capacity(0).is_err(), || "a capacity of 0".into())?;
    dnn.clear();
    ensure(dnn.cached() == 0, || "clear kept plans".into())?;
    dnn.close().map_err(err)
}

fn engines(case: &Case) -> Result<(), String> {
    let graph = unary(Pointwise::Tanh, &[1, 2, 2])?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    case.dnn.engines(3, 1);
    let plan = dnn.plan(&graph).map_err(err)?;
    ensure(plan.config_index() == 1 && !plan.is_fallback(), || {
        format!("with the first engine refused, {plan:?}")
    })?;
    let plan = dnn
        .set_engine(&graph, EngineChoice::Config(2))
        .map_err(err)?;
    ensure(plan.config_index() == 2, || format!("{plan:?}"))?;
    match dnn.set_engine(&graph, EngineChoice::Config(3)) {
        Err(Error::InvalidArgument(message)) if message.contains("no configuration 3") => {}
        other => return Err(format!("a configuration past the list: {other:?}")),
    }
    case.dnn.engines(2, 2);
    let other = unary(Pointwise::Sigmoid, &[1, 2, 2])?;
    let error = dnn
        .plan(&other)
        .err()
        .ok_or("no error with every engine refused")?;
    let failure = error
        .library_error::<CudnnError>()
        .ok_or_else(|| error.to_string())?;
    ensure(
        failure.refusal == CudnnRefusal::NoEngine { tried: 4 }
            && failure.code.0 == 3000
            && error.is_not_supported()
            && error
                .to_string()
                .contains("the graph [pointwise operation]"),
        || format!("every engine refused gave {error}"),
    )
}

fn workspace_limit(case: &Case) -> Result<(), String> {
    let graph = unary(Pointwise::Exp, &[1, 2, 2])?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    case.dnn.work_size(1 << 20);
    dnn.set_workspace_limit(Some(1024));
    let error = dnn.plan(&graph).err().ok_or("no error past the limit")?;
    let refusal = error
        .library_error::<CudnnError>()
        .map(|e| e.refusal.clone());
    ensure(
        refusal
            == Some(CudnnRefusal::WorkspaceTooSmall {
                needed: 1 << 20,
                limit: 1024,
            }),
        || format!("past the limit: {error}"),
    )?;
    dnn.set_workspace_limit(None);
    let plan = dnn.plan(&graph).map_err(err)?;
    ensure(plan.workspace_size() == 1 << 20, || format!("{plan:?}"))?;
    ensure(dnn.workspace_bytes() >= 1 << 20, || "no workspace".into())
}

fn capture(case: &Case) -> Result<(), String> {
    let cached = unary(Pointwise::Relu, &[1, 4, 4])?;
    let missing = unary(Pointwise::Neg, &[1, 4, 4])?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    dnn.plan(&cached).map_err(err)?;
    let x = case
        .pool
        .allocate_zeroed::<f32>(16, &case.stream)
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<f32>(16, &case.stream)
        .map_err(err)?;
    let (tx, ty) = (
        cached.tensors().next().map(|(t, _)| t).ok_or("x")?,
        cached.tensors().nth(1).map(|(t, _)| t).ok_or("y")?,
    );
    case.stub.take_log();
    // SAFETY: the buffers and the handle outlive the graph (dropped at the end of this
    // function, never launched); nothing is allocated on the stream while it captures.
    let graph = unsafe {
        cuda_safe::Graph::capture(&case.stream, CaptureMode::ThreadLocal, |_| {
            let mut pack = VariantPack::new();
            pack.input::<f32>(tx, &x)?.output::<f32>(ty, &mut y)?;
            dnn.execute(&cached, &pack)
        })
    }
    .map_err(err)?;
    drop(graph);
    let calls = names(case.stub.take_log());
    ensure(count(&calls, "cudnnBackendExecute") == 1, || {
        format!("a captured execution called {calls:?}")
    })?;
    // SAFETY: as above.
    let refused = unsafe {
        cuda_safe::Graph::capture(&case.stream, CaptureMode::ThreadLocal, |_| {
            dnn.plan(&missing).map(drop)
        })
    };
    match refused {
        Err(Error::InvalidArgument(message)) if message.contains("before the capture") => Ok(()),
        other => Err(format!("planning inside a capture: {other:?}")),
    }
}

fn plans_keep_their_handle(case: &Case) -> Result<(), String> {
    let graph = unary(Pointwise::Tanh, &[1, 2, 2])?;
    let first = Dnn::new(&case.stream).map_err(err)?;
    let plan = first
        .make_plan(&graph, EngineChoice::Heuristics)
        .map_err(err)?;
    drop(first);
    // The stub's allocator may hand the freed handle's memory back: the same raw address.
    let mut second = Dnn::new(&case.stream).map_err(err)?;
    match second.run(&plan, &VariantPack::new()) {
        Err(Error::InvalidArgument(message)) if message.contains("another cuDNN handle") => Ok(()),
        other => Err(format!("a plan of a destroyed handle ran: {other:?}")),
    }
}

/// The first `cudnnBackendGetAttribute` of a plan is mode A's count of configurations.
fn failed_heuristics_fall_back(case: &Case) -> Result<(), String> {
    let graph = unary(Pointwise::Relu, &[1, 2, 2])?;
    let dnn = Dnn::new(&case.stream).map_err(err)?;
    case.stub.fail("cudnnBackendGetAttribute", 3000, 1);
    let plan = dnn
        .make_plan(&graph, EngineChoice::Heuristics)
        .map_err(|e| format!("mode A's query failing: {e}"))?;
    ensure(plan.is_fallback() && plan.config_index() == 0, || {
        format!("with mode A's query failed, {plan:?}")
    })?;
    case.stub.fail("cudnnBackendGetAttribute", 3000, 1);
    case.stub.fail("cudnnBackendGetAttribute", 4000, 2);
    let error = dnn
        .make_plan(&graph, EngineChoice::Heuristics)
        .err()
        .ok_or("no error with both queries failed")?;
    let failure = error
        .library_error::<CudnnError>()
        .ok_or_else(|| error.to_string())?;
    ensure(
        failure.refusal == CudnnRefusal::NoEngine { tried: 0 }
            && failure.code.0 == 4000
            && failure.api == "cudnnBackendGetAttribute",
        || format!("both queries failed gave {error}"),
    )
}

/// The stub notes a misuse when a handle is destroyed before a plan made with it.
fn plan_outlives_its_dnn(case: &Case) -> Result<(), String> {
    let graph = unary(Pointwise::Tanh, &[1, 2, 2])?;
    let dnn = Dnn::new(&case.stream).map_err(err)?;
    let plan = dnn
        .make_plan(&graph, EngineChoice::Heuristics)
        .map_err(err)?;
    case.stub.take_log();
    drop(dnn);
    let calls = names(case.stub.take_log());
    ensure(count(&calls, "cudnnDestroy") == 0, || {
        format!("dropping the Dnn before its plan called {calls:?}")
    })?;
    drop(plan);
    let calls = names(case.stub.take_log());
    let destroyed = calls.iter().position(|call| call == "cudnnDestroy");
    let last_descriptor = calls
        .iter()
        .rposition(|call| call == "cudnnBackendDestroyDescriptor");
    ensure(
        count(&calls, "cudnnDestroy") == 1
            && last_descriptor.is_some()
            && last_descriptor < destroyed,
        || format!("dropping the plan then called {calls:?}"),
    )?;
    let (misuses, last) = case.stub.misuse();
    ensure(misuses == 0, || format!("the stub saw {last}"))
}
