//! The builder's and the variant pack's checks, refusing before cuDNN is called; cuDNN's
//! failures carrying its status and the operation.

use cuda_safe::Error;
use cuda_safe_libs::dnn::{
    Convolution, CudnnError, CudnnRefusal, DataType, Dnn, Graph, Pointwise, TensorDesc, VariantPack,
};

use super::{Case, CaseFn, count, ensure, err, names, relu};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "the builder refuses what cuDNN cannot take, calling nothing",
        builder_refuses,
    ),
    (
        "a variant pack that does not fit its graph is refused before cuDNN",
        pack_refuses,
    ),
    (
        "cuDNN's failures carry the status and the operation",
        failures_carry_the_status,
    ),
];

fn invalid(result: Result<impl std::fmt::Debug, Error>, what: &str) -> Result<(), String> {
    match result {
        Err(Error::InvalidArgument(_)) => Ok(()),
        other => Err(format!("{what}: {other:?}")),
    }
}

fn builder_refuses(case: &Case) -> Result<(), String> {
    let mut graph = Graph::new();
    let f32 = DataType::F32;
    invalid(graph.tensor(TensorDesc::new(f32, &[2, 3], &[3])), "strides")?;
    invalid(graph.tensor(TensorDesc::nchw(f32, [1, 0, 2, 2])), "a 0 dim")?;
    invalid(graph.tensor(TensorDesc::packed(f32, &[1; 9])), "9 dims")?;
    invalid(
        graph.tensor(TensorDesc::packed(f32, &[4]).alignment(2)),
        "alignment below an element",
    )?;
    let x = graph
        .tensor(TensorDesc::nchw(f32, [1, 4, 8, 8]))
        .map_err(err)?;
    invalid(graph.output(x, f32), "an input made an output")?;
    let w = graph
        .tensor(TensorDesc::nchw(f32, [8, 3, 3, 3]))
        .map_err(err)?;
    let conv = Convolution::new(2).padding([1, 1]);
    invalid(graph.conv_forward(x, w, &conv), "channels")?;
    invalid(graph.conv_forward(x, w, &conv.clone().groups(3)), "groups")?;
    let w2 = graph
        .tensor(TensorDesc::nchw(f32, [8, 4, 9, 9]))
        .map_err(err)?;
    invalid(
        graph.conv_forward(x, w2, &Convolution::new(2)),
        "an empty output",
    )?;
    invalid(graph.conv_forward(x, w2, &Convolution::new(3)), "ranks")?;
    let b = graph
        .tensor(TensorDesc::nchw(f32, [1, 3, 1, 1]))
        .map_err(err)?;
    invalid(graph.pointwise(Pointwise::Add, x, Some(b)), "a broadcast")?;
    invalid(
        graph.pointwise(Pointwise::Add, x, None),
        "a missing operand",
    )?;
    invalid(
        graph.pointwise(Pointwise::Relu, x, Some(x)),
        "an extra operand",
    )?;
    let mut larger = Graph::new();
    let mut foreign = x;
    for _ in 0..20 {
        foreign = larger.tensor(TensorDesc::packed(f32, &[1])).map_err(err)?;
    }
    invalid(
        graph.pointwise(Pointwise::Relu, foreign, None),
        "a foreign tensor",
    )?;
    let w3 = graph
        .tensor(TensorDesc::nchw(f32, [8, 4, 3, 3]))
        .map_err(err)?;
    let dy = graph
        .tensor(TensorDesc::nchw(f32, [1, 8, 8, 8]))
        .map_err(err)?;
    invalid(
        graph.conv_backward_data(dy, w3, &Convolution::new(2), &[1, 4, 8, 8]),
        "a gradient of another shape",
    )?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    case.stub.take_log();
    invalid(dnn.plan(&Graph::new()), "an empty graph")?;
    let mut virtual_only = Graph::new();
    let v = virtual_only
        .tensor(TensorDesc::nchw(f32, [1, 1, 2, 2]).set_virtual(true))
        .map_err(err)?;
    virtual_only
        .pointwise(Pointwise::Relu, v, None)
        .map_err(err)?;
    invalid(dnn.plan(&virtual_only), "no memory")?;
    let calls = names(case.stub.take_log());
    ensure(calls.iter().all(|call| !call.starts_with("cudnn")), || {
        format!("refusals called {calls:?}")
    })
}

fn pack_refuses(case: &Case) -> Result<(), String> {
    let (graph, x, y) = relu()?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    dnn.plan(&graph).map_err(err)?;
    let alloc = |len| case.pool.allocate_zeroed::<f32>(len, &case.stream);
    let (xs, mut ys, short) = (
        alloc(16).map_err(err)?,
        alloc(16).map_err(err)?,
        alloc(15).map_err(err)?,
    );
    let wide = case
        .pool
        .allocate_zeroed::<f64>(16, &case.stream)
        .map_err(err)?;
    case.stub.take_log();
    let mut pack = VariantPack::new();
    pack.input::<f32>(x, &xs).map_err(err)?;
    invalid(dnn.execute(&graph, &pack), "an unbound output")?;
    pack.output::<f32>(y, &mut ys).map_err(err)?;
    pack.input::<f32>(x, &short).map_err(err)?;
    invalid(dnn.execute(&graph, &pack), "a tensor bound twice")?;
    let mut pack = VariantPack::new();
    let mut ys = alloc(16).map_err(err)?;
    pack.input::<f32>(x, &short)
        .map_err(err)?
        .output::<f32>(y, &mut ys)
        .map_err(err)?;
    invalid(dnn.execute(&graph, &pack), "a short buffer")?;
    let mut pack = VariantPack::new();
    let mut ys = alloc(16).map_err(err)?;
    pack.input::<f64>(x, &wide)
        .map_err(err)?
        .output::<f32>(y, &mut ys)
        .map_err(err)?;
    invalid(dnn.execute(&graph, &pack), "another type")?;
    let long = alloc(17).map_err(err)?;
    let whole = long.as_slice::<f32>().map_err(err)?;
    let view = whole.slice(1..17).map_err(err)?;
    let mut pack = VariantPack::new();
    let mut ys = alloc(16).map_err(err)?;
    pack.input::<f32>(x, &view)
        .map_err(err)?
        .output::<f32>(y, &mut ys)
        .map_err(err)?;
    invalid(dnn.execute(&graph, &pack), "a misaligned view")?;
    // The graph writes its result: memory lent for reading may not hold it.
    let (xs2, ys_read) = (alloc(16).map_err(err)?, alloc(16).map_err(err)?);
    let mut pack = VariantPack::new();
    pack.input::<f32>(x, &xs2)
        .map_err(err)?
        .input::<f32>(y, &ys_read)
        .map_err(err)?;
    invalid(dnn.execute(&graph, &pack), "a result bound with `input`")?;
    let calls = names(case.stub.take_log());
    ensure(count(&calls, "cudnnBackendExecute") == 0, || {
        format!("refused packs called {calls:?}")
    })
}

fn failures_carry_the_status(case: &Case) -> Result<(), String> {
    let mut graph = Graph::new();
    let x = graph
        .tensor(TensorDesc::packed(DataType::F32, &[1, 2, 2]))
        .map_err(err)?;
    let y = graph.pointwise(Pointwise::Exp, x, None).map_err(err)?;
    graph.output(y, DataType::F32).map_err(err)?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let xs = case
        .pool
        .allocate_zeroed::<f32>(4, &case.stream)
        .map_err(err)?;
    let mut ys = case
        .pool
        .allocate_zeroed::<f32>(4, &case.stream)
        .map_err(err)?;
    let mut pack = VariantPack::new();
    pack.input::<f32>(x, &xs)
        .map_err(err)?
        .output::<f32>(y, &mut ys)
        .map_err(err)?;
    case.stub.fail("cudnnBackendExecute", 5000, 1);
    let error = dnn.execute(&graph, &pack).err().ok_or("no error")?;
    let failure = error
        .library_error::<CudnnError>()
        .ok_or_else(|| error.to_string())?;
    ensure(
        failure.code.0 == 5000
            && failure.name == "CUDNN_STATUS_EXECUTION_FAILED"
            && failure.api == "cudnnBackendExecute"
            && failure.refusal == CudnnRefusal::Status
            && failure
                .operation
                .as_deref()
                .is_some_and(|op| op.contains("pointwise")),
        || format!("the error was {error}"),
    )?;
    // A descriptor cuDNN refuses names the tensor.
    case.stub.fail("cudnnBackendFinalize", 3003, 1);
    let mut other = Graph::new();
    let t = other
        .tensor(TensorDesc::packed(DataType::BF16, &[1, 2, 2]))
        .map_err(err)?;
    let u = other.pointwise(Pointwise::Neg, t, None).map_err(err)?;
    other.output(u, DataType::BF16).map_err(err)?;
    let error = dnn.plan(&other).err().ok_or("no error")?;
    ensure(
        error.is_not_supported() && error.to_string().contains("the tensor 1"),
        || format!("a refused tensor gave {error}"),
    )
}
