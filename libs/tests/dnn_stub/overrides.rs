//! A matmul's size overrides (the sequence lengths of a padded attention): inputs the caller
//! binds, only through the unsafe `VariantPack::sizes` (a constant, a virtual tensor or an
//! operation's result refused when the matmul is added), `input` refusing them before cuDNN;
//! lowered with a padding value of 0; and a value past the dim it overrides refused by the stub
//! rather than clamped.

use cuda_safe::Buffer;
use cuda_safe_libs::dnn::{
    CudnnError, DataType, Dnn, Graph, MatmulOverrides, Pointwise, Scalar, Tensor, TensorDesc,
    VariantPack,
};

use super::{Case, CaseFn, count, data, ensure, err, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "a size override that no caller binds (a constant, a virtual tensor, a result) is \
         refused when the matmul is added",
        overrides_are_bound_inputs,
    ),
    (
        "a size override bound with `input` is refused before cuDNN, naming `sizes`",
        input_refuses_sizes,
    ),
    (
        "a size override in range runs with padding value 0; one past its dim is refused",
        sizes_in_and_out_of_range,
    ),
];

const BATCH: i64 = 2;
const M: i64 = 3;
const K: i64 = 4;
const N: i64 = 5;

/// A (BATCH, M, K) by (BATCH, K, N) matmul whose M is overridden per batch: the graph, its
/// operands, its result and its override tensor.
fn graph() -> Result<(Graph, [Tensor; 4]), String> {
    let mut graph = Graph::new();
    let f32 = DataType::F32;
    let a = graph
        .tensor(TensorDesc::packed(f32, &[BATCH, M, K]))
        .map_err(err)?;
    let b = graph
        .tensor(TensorDesc::packed(f32, &[BATCH, K, N]))
        .map_err(err)?;
    let rows = graph
        .tensor(TensorDesc::packed(DataType::I32, &[BATCH, 1, 1]))
        .map_err(err)?;
    let overrides = MatmulOverrides {
        m: Some(rows),
        ..MatmulOverrides::default()
    };
    let c = graph.matmul_with(a, b, f32, overrides).map_err(err)?;
    graph.output(c, f32).map_err(err)?;
    Ok((graph, [a, b, c, rows]))
}

/// The operands' buffers and the result's.
fn operands(case: &Case) -> Result<(Buffer, Buffer, Buffer), String> {
    let (m, k, n) = (M as usize, K as usize, N as usize);
    let batch = BATCH as usize;
    let a = data(batch * m * k, 11);
    let b = data(batch * k * n, 12);
    let upload = |values: &[f32]| case.pool.allocate_from_host(values, &case.stream);
    Ok((
        upload(&a).map_err(err)?,
        upload(&b).map_err(err)?,
        case.pool
            .allocate_zeroed::<f32>(batch * m * n, &case.stream)
            .map_err(err)?,
    ))
}

/// Each override no `VariantPack::sizes` would bind: a constant the handle passes by value, a
/// virtual result of `GenIndex`, and that result made an output.
fn overrides_are_bound_inputs(_: &Case) -> Result<(), String> {
    let mut graph = Graph::new();
    let f16 = TensorDesc::packed(DataType::F16, &[1, 64, 64]);
    let a = graph.tensor(f16.clone()).map_err(err)?;
    let b = graph.tensor(f16).map_err(err)?;
    let constant = graph.scalar(Scalar::i32(1 << 24), 3).map_err(err)?;
    let ones = graph
        .tensor(TensorDesc::packed(DataType::F32, &[1, 1, 1]))
        .map_err(err)?;
    let index = graph
        .pointwise(Pointwise::GenIndex(0), ones, None)
        .map_err(err)?;
    let mut written = graph.clone();
    written.output(index, DataType::I32).map_err(err)?;
    let cases = [
        ("a constant", &mut graph.clone(), constant),
        ("a virtual result", &mut graph, index),
        ("an operation's output", &mut written, index),
    ];
    for (what, graph, m) in cases {
        let overrides = MatmulOverrides {
            m: Some(m),
            ..MatmulOverrides::default()
        };
        match graph.matmul_with(a, b, DataType::F32, overrides) {
            Err(cuda_safe::Error::InvalidArgument(why)) if why.contains("VariantPack::sizes") => {}
            other => return Err(format!("{what} as the M override: {other:?}")),
        }
    }
    Ok(())
}

fn input_refuses_sizes(case: &Case) -> Result<(), String> {
    let (graph, [a, b, c, rows]) = graph()?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let (av, bv, mut cv) = operands(case)?;
    let lengths = case
        .pool
        .allocate_from_host(&[1i32, 1 << 20], &case.stream)
        .map_err(err)?;
    case.stub.take_log();
    let mut pack = VariantPack::new();
    pack.input::<f32>(a, &av)
        .map_err(err)?
        .input::<f32>(b, &bv)
        .map_err(err)?
        .output::<f32>(c, &mut cv)
        .map_err(err)?
        .input::<i32>(rows, &lengths)
        .map_err(err)?;
    match dnn.execute(&graph, &pack) {
        Err(cuda_safe::Error::InvalidArgument(why)) if why.contains("VariantPack::sizes") => {}
        other => return Err(format!("a size override bound with `input`: {other:?}")),
    }
    let calls = names(case.stub.take_log());
    ensure(count(&calls, "cudnnBackendExecute") == 0, || {
        format!("the refused pack called {calls:?}")
    })
}

fn sizes_in_and_out_of_range(case: &Case) -> Result<(), String> {
    let (graph, [a, b, c, rows]) = graph()?;
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    for (lengths, fits) in [([M as i32, 0], true), ([1, M as i32 + 1], false)] {
        let (av, bv, mut cv) = operands(case)?;
        let lengths = case
            .pool
            .allocate_from_host(&lengths, &case.stream)
            .map_err(err)?;
        let mut pack = VariantPack::new();
        pack.input::<f32>(a, &av)
            .map_err(err)?
            .input::<f32>(b, &bv)
            .map_err(err)?
            .output::<f32>(c, &mut cv)
            .map_err(err)?;
        // SAFETY: the stub's cuDNN runs this execution on the CPU and checks each override
        // against its dim, refusing the one past it (the case tested) rather than reading past
        // the buffers.
        unsafe { pack.sizes::<i32>(rows, &lengths) }.map_err(err)?;
        let result = dnn.execute(&graph, &pack);
        match (result, fits) {
            (Ok(()), true) => {}
            (Err(error), false)
                if error
                    .library_error::<CudnnError>()
                    .is_some_and(|failure| failure.api == "cudnnBackendExecute") => {}
            (other, _) => return Err(format!("lengths fitting: {fits}: {other:?}")),
        }
    }
    Ok(())
}
