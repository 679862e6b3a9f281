//! The attention forward graph on the stub: O and the statistics against the CPU reference
//! (unmasked, causal, padded and causal, both layouts, dropout with the stub's generator,
//! FP8 with the `blas` feature's types); the constants and workspace tensors are the handle's to
//! bind; the builder's refusals call nothing.

use cuda_safe::{Buffer, CaptureMode, Error};
use cuda_safe_libs::dnn::{
    Attention, AttentionForward, AttentionLayout, DataType, Dnn, Graph, Storage, VariantPack,
};
use half::bf16;

use super::reference::Problem;
use super::{Case, CaseFn, count, data, ensure, err, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "an attention forward matches softmax(QKᵀ)V unmasked, causal, padded, in both layouts",
        forward_matches,
    ),
    (
        "an attention forward with dropout matches the stub's generator, the same seed the same",
        dropout_matches,
    ),
    (
        "an attention graph's constants and workspace are the handle's, and its plan is cached",
        internals_are_the_handles,
    ),
    (
        "the attention builder refuses what cuDNN's engines cannot take, calling nothing",
        builder_refuses,
    ),
    (
        "a captured attention forward replays on new inputs",
        captured_replays,
    ),
];

/// Values exact in bf16 (multiples of 1/64 in [-1, 1)), from `seed`.
pub(crate) fn exact(len: usize, seed: u64) -> Vec<f64> {
    data(len, seed)
        .into_iter()
        .map(|x| (f64::from(x) * 64.0).round() / 64.0)
        .collect()
}

/// The memory of logical (B, H, S, D) `values` in `layout`, as `T`.
pub(crate) fn to_memory<T: Copy + Default>(
    values: &[f64],
    dims: [i64; 4],
    layout: AttentionLayout,
    convert: impl Fn(f64) -> T,
) -> Vec<T> {
    let mut memory = vec![T::default(); values.len()];
    for (flat, &value) in values.iter().enumerate() {
        memory[at(flat, dims, layout)] = convert(value);
    }
    memory
}

/// Logical (B, H, S, D) values from `memory` in `layout`.
pub(crate) fn from_memory<T: Copy>(
    memory: &[T],
    dims: [i64; 4],
    layout: AttentionLayout,
    convert: impl Fn(T) -> f64,
) -> Vec<f64> {
    (0..memory.len())
        .map(|flat| convert(memory[at(flat, dims, layout)]))
        .collect()
}

/// The memory index of logical element `flat` of `dims` in `layout`.
fn at(mut flat: usize, dims: [i64; 4], layout: AttentionLayout) -> usize {
    let strides = layout.strides(dims);
    let mut index = 0;
    for axis in (0..4).rev() {
        let dim = dims[axis] as usize;
        index += (flat % dim) * strides[axis] as usize;
        flat /= dim;
    }
    index
}

/// Compares `got` with `want` on the elements `counts` keeps, within `tol` of `1 + |want|`.
pub(crate) fn close(
    what: &str,
    got: &[f64],
    want: &[f64],
    tol: f64,
    counts: impl Fn(usize) -> bool,
) -> Result<(), String> {
    ensure(got.len() == want.len(), || {
        format!("{what}: lengths differ")
    })?;
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        if counts(index) {
            ensure((g - w).abs() <= tol * (1.0 + w.abs()), || {
                format!("{what}: element {index}: got {g}, want {w}")
            })?;
        }
    }
    Ok(())
}

/// The problem of `attention` with its masks' lengths and its dropout's seed and offset.
pub(crate) fn problem(
    attention: &Attention,
    lengths: Option<(Vec<i32>, Vec<i32>)>,
    seeds: (i64, i64),
) -> Problem {
    let [b, h, s_q, d] = attention.q_dims().map(|dim| dim as usize);
    let p = attention.dropout_probability();
    Problem {
        b,
        h,
        s_q,
        s_kv: attention.kv_dims()[2] as usize,
        d,
        scale: f64::from(attention.scale_value()),
        causal: attention.is_causal(),
        lengths,
        dropout: (p > 0.0).then_some((p, seeds.0, seeds.1)),
    }
}

/// Uploads logical `values` as bf16 in `layout`.
pub(crate) fn upload(
    case: &Case,
    values: &[f64],
    dims: [i64; 4],
    layout: AttentionLayout,
) -> Result<Buffer, String> {
    let memory = to_memory(values, dims, layout, bf16::from_f64);
    case.pool
        .allocate_from_host(&memory, &case.stream)
        .map_err(err)
}

/// The masks' lengths and the dropout's seed and offset, each in a buffer when the graph has
/// its tensor.
pub(crate) struct Extras {
    pub(crate) lengths: Option<(Buffer, Buffer)>,
    pub(crate) seeds: Option<(Buffer, Buffer)>,
}

impl Extras {
    pub(crate) fn new(
        case: &Case,
        problem: &Problem,
        has_lengths: bool,
        has_seeds: bool,
    ) -> Result<Self, String> {
        let pool = |values: &[i32]| case.pool.allocate_from_host(values, &case.stream);
        let lengths = match (&problem.lengths, has_lengths) {
            (Some((q, kv)), true) => Some((pool(q).map_err(err)?, pool(kv).map_err(err)?)),
            _ => None,
        };
        let seeds = match (problem.dropout, has_seeds) {
            (Some((_, seed, offset)), true) => {
                let one = |value: i64| case.pool.allocate_from_host(&[value], &case.stream);
                Some((one(seed).map_err(err)?, one(offset).map_err(err)?))
            }
            _ => None,
        };
        Ok(Self { lengths, seeds })
    }

    /// Binds what the graph has of these.
    pub(crate) fn bind<'a>(
        &'a self,
        pack: &mut VariantPack<'a>,
        lengths: Option<(cuda_safe_libs::dnn::Tensor, cuda_safe_libs::dnn::Tensor)>,
        seeds: Option<(cuda_safe_libs::dnn::Tensor, cuda_safe_libs::dnn::Tensor)>,
    ) -> Result<(), String> {
        if let (Some((tq, tkv)), Some((q, kv))) = (lengths, &self.lengths) {
            // SAFETY: the tests' lengths are each within their sequence's dims (the problems
            // are made with lengths up to S_q and S_kv).
            unsafe {
                pack.sizes::<i32>(tq, q)
                    .map_err(err)?
                    .sizes::<i32>(tkv, kv)
                    .map_err(err)?;
            }
        }
        if let (Some((ts, to)), Some((s, o))) = (seeds, &self.seeds) {
            pack.input::<i64>(ts, s)
                .map_err(err)?
                .input::<i64>(to, o)
                .map_err(err)?;
        }
        Ok(())
    }
}

/// Runs the forward of `attention` on logical `q`, `k`, `v`: O (logical) and the statistics.
pub(crate) fn run_forward(
    case: &Case,
    dnn: &mut Dnn,
    (graph, io): (&Graph, &AttentionForward),
    attention: &Attention,
    problem: &Problem,
    [q, k, v]: [&[f64]; 3],
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let layout = attention.memory_layout();
    let (qd, kd) = (attention.q_dims(), attention.kv_dims());
    let (qb, kb, vb) = (
        upload(case, q, qd, layout)?,
        upload(case, k, kd, layout)?,
        upload(case, v, kd, layout)?,
    );
    let mut o = case
        .pool
        .allocate_zeroed::<bf16>(q.len(), &case.stream)
        .map_err(err)?;
    let rows = problem.b * problem.h * problem.s_q;
    let mut stats = case
        .pool
        .allocate_zeroed::<f32>(rows, &case.stream)
        .map_err(err)?;
    let extras = Extras::new(case, problem, io.seq_len_q.is_some(), io.seed.is_some())?;
    let mut pack = VariantPack::new();
    pack.input::<bf16>(io.q, &qb).map_err(err)?;
    pack.input::<bf16>(io.k, &kb).map_err(err)?;
    pack.input::<bf16>(io.v, &vb).map_err(err)?;
    pack.output::<bf16>(io.o, &mut o).map_err(err)?;
    if let Some(tensor) = io.stats {
        pack.output::<f32>(tensor, &mut stats).map_err(err)?;
    }
    extras.bind(
        &mut pack,
        io.seq_len_q.zip(io.seq_len_kv),
        io.seed.zip(io.offset),
    )?;
    dnn.execute(graph, &pack).map_err(err)?;
    drop(pack);
    let o = o.to_vec::<bf16>().map_err(err)?;
    let o = from_memory(&o, qd, layout, |x| x.to_f64());
    let stats = stats.to_vec::<f32>().map_err(err)?;
    Ok((o, stats.into_iter().map(f64::from).collect()))
}

/// Checks O (and the statistics, with `stats`) against the reference on the rows that count.
fn check(
    what: &str,
    problem: &Problem,
    (o, stats): (&[f64], &[f64]),
    (want_o, want_stats): (&[f64], &[f64]),
    with_stats: bool,
) -> Result<(), String> {
    let row = |flat: usize| {
        let (i, b) = (flat % problem.s_q, flat / (problem.s_q * problem.h));
        problem.row_counts(b, i)
    };
    close(&format!("{what}: O"), o, want_o, 1.0 / 64.0, |e| {
        row(e / problem.d)
    })?;
    if with_stats {
        close(&format!("{what}: stats"), stats, want_stats, 1e-5, row)?;
    }
    Ok(())
}

fn forward_matches(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let lengths = (vec![5, 16], vec![9, 12]);
    let base = Attention::new(DataType::BF16, 2, 2, 16, 8).seq_kv(12);
    let cases = [
        ("unmasked", base, None),
        ("causal", base.causal(true), None),
        (
            "padded and causal",
            base.padding(true).causal(true),
            Some(lengths.clone()),
        ),
        (
            "BSHD, scaled",
            base.layout(AttentionLayout::Bshd).scale(0.5),
            None,
        ),
        ("inference", base.causal(true).inference(), None),
    ];
    for (index, (name, attention, lengths)) in cases.into_iter().enumerate() {
        let problem = problem(&attention, lengths, (0, 0));
        let (q, k, v) = (
            exact(2 * 2 * 16 * 8, 3 + index as u64),
            exact(2 * 2 * 12 * 8, 5),
            exact(2 * 2 * 12 * 8, 7),
        );
        let (graph, io) = attention.forward().map_err(err)?;
        ensure(io.stats.is_some() == (name != "inference"), || {
            format!("{name}: statistics {:?}", io.stats)
        })?;
        let got = run_forward(
            case,
            &mut dnn,
            (&graph, &io),
            &attention,
            &problem,
            [&q, &k, &v],
        )?;
        let want = problem.forward(&q, &k, &v);
        check(
            name,
            &problem,
            (&got.0, &got.1),
            (&want.0, &want.1),
            io.stats.is_some(),
        )?;
    }
    Ok(())
}

fn dropout_matches(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let attention = Attention::new(DataType::BF16, 1, 2, 16, 8)
        .causal(true)
        .dropout(0.25);
    let (graph, io) = attention.forward().map_err(err)?;
    let (q, k, v) = (exact(256, 11), exact(256, 12), exact(256, 13));
    let mut outputs = Vec::new();
    for seeds in [(7, 0), (7, 0), (8, 0), (7, 256)] {
        let problem = problem(&attention, None, seeds);
        let got = run_forward(
            case,
            &mut dnn,
            (&graph, &io),
            &attention,
            &problem,
            [&q, &k, &v],
        )?;
        let want = problem.forward(&q, &k, &v);
        check(
            &format!("dropout {seeds:?}"),
            &problem,
            (&got.0, &got.1),
            (&want.0, &want.1),
            true,
        )?;
        outputs.push(got.0);
    }
    ensure(outputs[0] == outputs[1], || {
        "a seed drew twice differently".into()
    })?;
    ensure(outputs[0] != outputs[2] && outputs[0] != outputs[3], || {
        "another seed or offset drew the same mask".into()
    })?;
    let no_dropout = problem(&attention.dropout(0.0), None, (0, 0))
        .forward(&q, &k, &v)
        .0;
    ensure(outputs[0] != no_dropout, || {
        "dropout changed nothing".into()
    })
}

fn internals_are_the_handles(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let attention = Attention::new(DataType::BF16, 1, 1, 8, 8)
        .padding(true)
        .causal(true);
    let (graph, io) = attention.forward().map_err(err)?;
    let constants: Vec<_> = graph
        .tensors()
        .filter(|(_, desc)| matches!(desc.storage(), Storage::ByValue(_)))
        .collect();
    ensure(constants.len() == 3, || {
        format!("{} constants (scale and two mask fills)", constants.len())
    })?;
    let spare = case
        .pool
        .allocate_zeroed::<f32>(64, &case.stream)
        .map_err(err)?;
    let mut pack = VariantPack::new();
    pack.input::<f32>(constants[0].0, &spare).map_err(err)?;
    let refused = dnn.execute(&graph, &pack);
    ensure(matches!(refused, Err(Error::InvalidArgument(_))), || {
        format!("a constant bound by the caller: {refused:?}")
    })?;
    drop(pack);
    let problem = problem(&attention, Some((vec![6], vec![5])), (0, 0));
    let (q, k, v) = (exact(64, 1), exact(64, 2), exact(64, 3));
    case.stub.take_log();
    for _ in 0..2 {
        run_forward(
            case,
            &mut dnn,
            (&graph, &io),
            &attention,
            &problem,
            [&q, &k, &v],
        )?;
    }
    let calls = names(case.stub.take_log());
    ensure(count(&calls, "cudnnBackendExecute") == 2, || {
        format!("{calls:?}")
    })?;
    ensure(dnn.cached() == 1, || {
        format!("{} plans cached", dnn.cached())
    })
}

fn builder_refuses(case: &Case) -> Result<(), String> {
    case.stub.take_log();
    let base = Attention::new(DataType::BF16, 1, 2, 64, 64);
    let refusals = [
        ("f32 data", Attention::new(DataType::F32, 1, 2, 64, 64)),
        (
            "a head dim of 100",
            Attention::new(DataType::BF16, 1, 2, 64, 100),
        ),
        (
            "a head dim of 512",
            Attention::new(DataType::BF16, 1, 2, 64, 512),
        ),
        ("a batch of 0", Attention::new(DataType::BF16, 0, 2, 64, 64)),
        ("dropout of 1", base.dropout(1.0)),
        ("an infinite scale", base.scale(f32::INFINITY)),
    ];
    for (what, attention) in refusals {
        let forward = attention.forward().map(|_| ());
        let backward = attention.backward().map(|_| ());
        for result in [forward, backward] {
            ensure(matches!(result, Err(Error::InvalidArgument(_))), || {
                format!("{what}: {result:?}")
            })?;
        }
    }
    let fp8 = Attention::new(DataType::Fp8E4M3, 1, 2, 64, 64).backward();
    ensure(matches!(fp8, Err(Error::InvalidArgument(_))), || {
        format!("FP8 backward: {fp8:?}")
    })?;
    let calls = names(case.stub.take_log());
    ensure(calls.is_empty(), || format!("the builder called {calls:?}"))
}

fn captured_replays(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let attention = Attention::new(DataType::BF16, 1, 2, 16, 8).causal(true);
    let (graph, io) = attention.forward().map_err(err)?;
    let (dims, layout) = (attention.q_dims(), attention.memory_layout());
    let (k, v) = (exact(256, 32), exact(256, 33));
    let mut qb = upload(case, &exact(256, 31), dims, layout)?;
    let (kb, vb) = (
        upload(case, &k, dims, layout)?,
        upload(case, &v, dims, layout)?,
    );
    let mut o = case
        .pool
        .allocate_zeroed::<bf16>(256, &case.stream)
        .map_err(err)?;
    let mut stats = case
        .pool
        .allocate_zeroed::<f32>(32, &case.stream)
        .map_err(err)?;
    dnn.plan(&graph).map_err(err)?;
    // SAFETY: the buffers and the handle outlive the graph and its executable (dropped at the
    // end of this function, after the stream is synchronized).
    let captured = unsafe {
        cuda_safe::Graph::capture(&case.stream, CaptureMode::ThreadLocal, |_| {
            let mut pack = VariantPack::new();
            pack.input::<bf16>(io.q, &qb)?
                .input::<bf16>(io.k, &kb)?
                .input::<bf16>(io.v, &vb)?;
            pack.output::<bf16>(io.o, &mut o)?;
            pack.output::<f32>(
                io.stats.ok_or(Error::invalid_argument("no stats"))?,
                &mut stats,
            )?;
            dnn.execute(&graph, &pack)
        })
    }
    .map_err(err)?;
    let exec = captured.instantiate().map_err(err)?;
    let q = exact(256, 34);
    qb.copy_from_host(&to_memory(&q, dims, layout, bf16::from_f64))
        .map_err(err)?;
    exec.launch(&case.stream).map_err(err)?;
    case.stream.sync().map_err(err)?;
    let got = from_memory(&o.to_vec::<bf16>().map_err(err)?, dims, layout, |x| {
        x.to_f64()
    });
    let want = problem(&attention, None, (0, 0)).forward(&q, &k, &v).0;
    close("replayed O", &got, &want, 1.0 / 64.0, |_| true)
}
