//! The attention backward graph on the stub: dQ, dK and dV against the CPU reference (causal,
//! padded, dropout with the stub's generator), the forward's outputs feeding it; and the
//! releases of cuDNN its pattern refuses, typed, before any descriptor is made.

use cuda_safe::Error;
use cuda_safe_libs::dnn::{
    Attention, CudnnError, CudnnRefusal, DataType, Dnn, EngineChoice, VariantPack,
};
use half::bf16;

use super::attention::{Extras, close, exact, from_memory, problem, run_forward, upload};
use super::reference::Problem;
use super::{Case, CaseFn, count, ensure, err, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "an attention backward matches the gradients, causal, padded and with dropout",
        backward_matches,
    ),
    (
        "an attention pattern a cuDNN release cannot run is refused, typed, before any descriptor",
        old_releases_are_refused,
    ),
];

/// Runs the forward then the backward of `attention` on logical `q`, `k`, `v`, `d_o`, and
/// compares the gradients with the reference on the rows and keys that count.
fn check_backward(
    case: &Case,
    dnn: &mut Dnn,
    attention: &Attention,
    problem: &Problem,
    [q, k, v, d_o]: [&[f64]; 4],
) -> Result<(), String> {
    let (graph, io) = attention.forward().map_err(err)?;
    let (o, stats) = run_forward(case, dnn, (&graph, &io), attention, problem, [q, k, v])?;
    let (graph, io) = attention.backward().map_err(err)?;
    let layout = attention.memory_layout();
    let (qd, kd) = (attention.q_dims(), attention.kv_dims());
    let buffers = [
        upload(case, q, qd, layout)?,
        upload(case, k, kd, layout)?,
        upload(case, v, kd, layout)?,
        upload(case, &o, qd, layout)?,
        upload(case, d_o, qd, layout)?,
    ];
    let stats: Vec<f32> = stats.iter().map(|&s| s as f32).collect();
    let stats = case
        .pool
        .allocate_from_host(&stats, &case.stream)
        .map_err(err)?;
    let zeroed = |len: usize| case.pool.allocate_zeroed::<bf16>(len, &case.stream);
    let (mut dq, mut dk, mut dv) = (
        zeroed(q.len()).map_err(err)?,
        zeroed(k.len()).map_err(err)?,
        zeroed(v.len()).map_err(err)?,
    );
    let extras = Extras::new(case, problem, io.seq_len_q.is_some(), io.seed.is_some())?;
    let mut pack = VariantPack::new();
    for (tensor, buffer) in [io.q, io.k, io.v, io.o, io.d_o].into_iter().zip(&buffers) {
        pack.input::<bf16>(tensor, buffer).map_err(err)?;
    }
    pack.input::<f32>(io.stats, &stats).map_err(err)?;
    pack.output::<bf16>(io.dq, &mut dq).map_err(err)?;
    pack.output::<bf16>(io.dk, &mut dk).map_err(err)?;
    pack.output::<bf16>(io.dv, &mut dv).map_err(err)?;
    extras.bind(
        &mut pack,
        io.seq_len_q.zip(io.seq_len_kv),
        io.seed.zip(io.offset),
    )?;
    dnn.execute(&graph, &pack).map_err(err)?;
    drop(pack);
    let read = |buffer: &cuda_safe::Buffer, dims| -> Result<Vec<f64>, String> {
        let memory = buffer.to_vec::<bf16>().map_err(err)?;
        Ok(from_memory(&memory, dims, layout, |x| x.to_f64()))
    };
    let o: Vec<f64> = o.iter().map(|&x| bf16::from_f64(x).to_f64()).collect();
    let (want_dq, want_dk, want_dv) = problem.backward([q, k, v, &o, d_o]);
    let (h, d) = (problem.h, problem.d);
    let row = |e: usize, s: usize| (e / d / s / h, e / d % s);
    let tol = 1.0 / 32.0;
    close("dQ", &read(&dq, qd)?, &want_dq, tol, |e| {
        let (b, i) = row(e, problem.s_q);
        problem.row_counts(b, i)
    })?;
    for (name, got, want) in [("dK", &dk, &want_dk), ("dV", &dv, &want_dv)] {
        close(name, &read(got, kd)?, want, tol, |e| {
            let (b, j) = row(e, problem.s_kv);
            problem.key_counts(b, j)
        })?;
    }
    Ok(())
}

fn backward_matches(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let base = Attention::new(DataType::BF16, 2, 2, 16, 8).seq_kv(128);
    let cases = [
        ("unmasked", base, None),
        ("causal", base.causal(true), None),
        (
            "padded and causal",
            base.seq_kv(12).padding(true).causal(true),
            Some((vec![5, 16], vec![9, 12])),
        ),
        ("causal with dropout", base.causal(true).dropout(0.2), None),
    ];
    for (index, (name, attention, lengths)) in cases.into_iter().enumerate() {
        let problem = problem(&attention, lengths, (3, 64));
        let (q_len, kv_len) = (
            attention.q_dims().iter().product::<i64>() as usize,
            attention.kv_dims().iter().product::<i64>() as usize,
        );
        let seed = 20 + 4 * index as u64;
        let (q, k, v, d_o) = (
            exact(q_len, seed),
            exact(kv_len, seed + 1),
            exact(kv_len, seed + 2),
            exact(q_len, seed + 3),
        );
        check_backward(case, &mut dnn, &attention, &problem, [&q, &k, &v, &d_o])
            .map_err(|why| format!("{name}: {why}"))?;
    }
    Ok(())
}

/// The refusal of making the plan of `graph` under cuDNN `version`.
fn refusal(case: &Case, dnn: &mut Dnn, attention: Attention, version: i64) -> Option<CudnnRefusal> {
    case.dnn.version(version);
    let (graph, _) = attention.backward().ok()?;
    match dnn.make_plan(&graph, EngineChoice::Heuristics) {
        Ok(_) => None,
        Err(error) => error
            .library_error::<CudnnError>()
            .map(|e| e.refusal.clone()),
    }
}

fn old_releases_are_refused(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let base = Attention::new(DataType::BF16, 1, 1, 128, 64);
    case.stub.take_log();
    let refused = [
        (base, 90500),
        (base, 91000),
        (base, 91001),
        (base.padding(true), 90900),
        (base.seq_kv(64), 91400),
    ];
    for (attention, version) in refused {
        let got = refusal(case, &mut dnn, attention, version);
        ensure(
            got == Some(CudnnRefusal::Version {
                found: version as usize,
            }),
            || format!("{attention:?} under {version}: {got:?}"),
        )?;
    }
    let calls = names(case.stub.take_log());
    ensure(count(&calls, "cudnnBackendCreateDescriptor") == 0, || {
        format!("a refused plan made descriptors: {calls:?}")
    })?;
    for (attention, version) in [
        (base, 91002),
        (base.seq_kv(64), 91600),
        (base.seq_kv(64).padding(true), 91400),
    ] {
        let got = refusal(case, &mut dnn, attention, version);
        ensure(got.is_none(), || {
            format!("{attention:?} under {version}: {got:?}")
        })?;
    }
    case.dnn.version(90500);
    let (graph, _) = base.backward().map_err(err)?;
    let Err(error) = dnn.plan(&graph).map(|_| ()) else {
        return Err("cuDNN 9.5.0 made a backward plan".into());
    };
    ensure(
        error.is_not_supported() && error.to_string().contains("9.5.0"),
        || format!("{error}"),
    )?;
    ensure(matches!(error, Error::Library(_)), || format!("{error:?}"))
}
