//! The attention forward on the GPU against the CPU reference; FP8 where the GPU runs it; a
//! captured forward replayed on new inputs.

use cuda_safe::{CaptureMode, Graph as CudaGraph};
use cuda_safe_libs::blas::F8E4M3;
use cuda_safe_libs::dnn::{
    Attention, AttentionLayout, CudnnError, CudnnRefusal, DataType, VariantPack,
};
use half::{bf16, f16};

use super::reference::{Problem, check, from_memory, to_memory};
use super::{El, exact, setup};

/// Runs `attention` on random inputs and checks O and the statistics on the rows that count.
fn forward_matches<T: El>(attention: Attention, lengths: Option<(Vec<i32>, Vec<i32>)>, seed: u64) {
    let mut s = setup();
    let (qd, kd) = (attention.q_dims(), attention.kv_dims());
    let (q_len, kv_len) = (
        qd.iter().product::<i64>() as usize,
        kd.iter().product::<i64>() as usize,
    );
    let (q, k, v) = (
        exact(q_len, seed),
        exact(kv_len, seed + 1),
        exact(kv_len, seed + 2),
    );
    let (o, stats) = s.forward::<T>(&attention, [&q, &k, &v], lengths.as_ref(), (0, 0));
    let problem = Problem::of(&attention, lengths);
    let (want_o, want_stats) = problem.forward(&q, &k, &v);
    let [_, h, s_q, d] = qd.map(|dim| dim as usize);
    let row = |r: usize| problem.row_counts(r / (s_q * h), r % s_q);
    let what = format!("{} {attention:?}", T::TYPE);
    check(&format!("{what}: O"), &o, &want_o, T::TOL, |e| row(e / d));
    if attention.forward().unwrap().1.stats.is_some() {
        check(&format!("{what}: stats"), &stats, &want_stats, 1e-3, row);
    }
    println!("{what}: {} plan(s) cached", s.dnn.cached());
}

pub(crate) fn f16_forward_matches_the_cpu_unmasked_causal_and_padded() {
    let base = Attention::new(DataType::F16, 2, 4, 128, 64);
    forward_matches::<f16>(base, None, 1);
    forward_matches::<f16>(base.causal(true), None, 2);
    let lengths = (vec![100, 128], vec![77, 128]);
    forward_matches::<f16>(base.padding(true).causal(true), Some(lengths), 3);
}

pub(crate) fn bf16_forward_matches_the_cpu_in_both_layouts() {
    let base = Attention::new(DataType::BF16, 2, 4, 128, 64);
    forward_matches::<bf16>(base.causal(true).layout(AttentionLayout::Bshd), None, 4);
    forward_matches::<bf16>(base.seq_kv(256).scale(0.1), None, 5);
    forward_matches::<bf16>(base.causal(true).inference(), None, 6);
}

pub(crate) fn fp8_forward_runs_on_hopper_or_is_refused_typed() {
    let mut s = setup();
    let attention = Attention::new(DataType::Fp8E4M3, 1, 2, 128, 64).causal(true);
    let (graph, io) = attention.forward().unwrap();
    let capability = s.stream.device().compute_capability().unwrap();
    let version = cuda_safe_libs::dnn::version().unwrap();
    if let Err(error) = s.dnn.plan(&graph) {
        let refusal = error
            .library_error::<CudnnError>()
            .map(|e| e.refusal.clone());
        let typed = matches!(
            refusal,
            Some(CudnnRefusal::Device { .. } | CudnnRefusal::Version { .. })
        );
        let expected = capability < (9, 0) || version < 90100 || version == 91000;
        assert!(
            typed && expected,
            "FP8 refused on sm_{capability:?}, cuDNN {version}: {error}"
        );
        println!("FP8 attention refused, typed: {error}");
        return;
    }
    let dims = attention.q_dims();
    let layout = attention.memory_layout();
    let len = dims.iter().product::<i64>() as usize;
    let eighths = |seed| {
        exact(len, seed)
            .into_iter()
            .map(|x| (x * 8.0).round() / 8.0)
            .collect::<Vec<_>>()
    };
    let (q, k, v) = (eighths(7), eighths(8), eighths(9));
    let up = |values: &[f64]| {
        let memory = to_memory(values, dims, layout, |x| F8E4M3::from_f32(x as f32));
        s.pool.allocate_from_host(&memory, &s.stream).unwrap()
    };
    let (qb, kb, vb) = (up(&q), up(&k), up(&v));
    let factors = [1.0f32, 1.0, 1.0, 1.0 / 256.0, 256.0, 1.0]
        .map(|f| s.pool.allocate_from_host(&[f], &s.stream).unwrap());
    let mut o = s.pool.allocate_zeroed::<F8E4M3>(len, &s.stream).unwrap();
    let mut stats = s.pool.allocate_zeroed::<f32>(2 * 128, &s.stream).unwrap();
    let mut amax = [
        s.pool.allocate_zeroed::<f32>(1, &s.stream).unwrap(),
        s.pool.allocate_zeroed::<f32>(1, &s.stream).unwrap(),
    ];
    let scaling = io.fp8.unwrap();
    let mut pack = VariantPack::new();
    pack.input::<F8E4M3>(io.q, &qb)
        .unwrap()
        .input::<F8E4M3>(io.k, &kb)
        .unwrap();
    pack.input::<F8E4M3>(io.v, &vb)
        .unwrap()
        .output::<F8E4M3>(io.o, &mut o)
        .unwrap();
    pack.output::<f32>(io.stats.unwrap(), &mut stats).unwrap();
    let inputs = [
        scaling.descale_q,
        scaling.descale_k,
        scaling.descale_v,
        scaling.descale_s,
        scaling.scale_s,
        scaling.scale_o,
    ];
    for (tensor, factor) in inputs.into_iter().zip(&factors) {
        pack.input::<f32>(tensor, factor).unwrap();
    }
    let [amax_s, amax_o] = &mut amax;
    pack.output::<f32>(scaling.amax_s, amax_s)
        .unwrap()
        .output::<f32>(scaling.amax_o, amax_o)
        .unwrap();
    s.dnn.execute(&graph, &pack).unwrap();
    drop(pack);
    let got = from_memory(&o.to_vec::<F8E4M3>().unwrap(), dims, layout, |x| {
        f64::from(x.to_f32())
    });
    let (want, _) = Problem::of(&attention, None).forward(&q, &k, &v);
    check("FP8 O", &got, &want, 0.1, |_| true);
    let amax_o = amax[1].to_vec::<f32>().unwrap()[0];
    let want_amax = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(
        (f64::from(amax_o) - want_amax).abs() <= 0.1 * (want_amax + 1.0),
        "amax of O {amax_o}, want {want_amax}"
    );
    assert_eq!(
        amax[0].to_vec::<f32>().unwrap()[0],
        1.0,
        "the first query's only weight is 1"
    );
}

pub(crate) fn a_captured_forward_replays_on_new_inputs() {
    let mut s = setup();
    let attention = Attention::new(DataType::BF16, 1, 2, 128, 64).causal(true);
    let (graph, io) = attention.forward().unwrap();
    let (qd, len) = (attention.q_dims(), 2 * 128 * 64);
    let (k, v) = (exact(len, 21), exact(len, 22));
    let mut qb = s.upload::<bf16>(&attention, &exact(len, 20), qd);
    let (kb, vb) = (
        s.upload::<bf16>(&attention, &k, qd),
        s.upload::<bf16>(&attention, &v, qd),
    );
    let mut o = s.pool.allocate_zeroed::<bf16>(len, &s.stream).unwrap();
    let mut stats = s.pool.allocate_zeroed::<f32>(256, &s.stream).unwrap();
    s.dnn.plan(&graph).unwrap();
    let dnn = &mut s.dnn;
    // SAFETY: the buffers and the handle outlive the graph and its executable (dropped at the
    // end of this function, after the stream is synchronized).
    let captured = unsafe {
        CudaGraph::capture(&s.stream, CaptureMode::ThreadLocal, |_| {
            let mut pack = VariantPack::new();
            pack.input::<bf16>(io.q, &qb)?
                .input::<bf16>(io.k, &kb)?
                .input::<bf16>(io.v, &vb)?;
            pack.output::<bf16>(io.o, &mut o)?
                .output::<f32>(io.stats.unwrap(), &mut stats)?;
            dnn.execute(&graph, &pack)
        })
    }
    .unwrap();
    let exec = captured.instantiate().unwrap();
    let q = exact(len, 23);
    let memory = to_memory(&q, qd, attention.memory_layout(), bf16::from_f64);
    qb.copy_from_host(&memory).unwrap();
    exec.launch(&s.stream).unwrap();
    s.stream.sync().unwrap();
    let (want, _) = Problem::of(&attention, None).forward(&q, &k, &v);
    let got = s.read::<bf16>(&attention, &o, qd);
    check("replayed O", &got, &want, bf16::TOL, |_| true);
}
