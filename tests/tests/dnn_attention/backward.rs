//! The attention backward on the GPU against the CPU reference, the forward's outputs feeding
//! it.

use cuda_safe_libs::dnn::{Attention, DataType, VariantPack};
use half::{bf16, f16};

use super::reference::{Problem, check};
use super::{El, Setup, bind_extras, exact, setup};

/// The forward then the backward of `attention` on random inputs: the gradients checked on
/// the rows and keys that count.
fn backward_matches<T: El>(
    s: &mut Setup,
    attention: Attention,
    lengths: Option<(Vec<i32>, Vec<i32>)>,
    seed: u64,
) {
    let (qd, kd) = (attention.q_dims(), attention.kv_dims());
    let (q_len, kv_len) = (
        qd.iter().product::<i64>() as usize,
        kd.iter().product::<i64>() as usize,
    );
    let (q, k, v, d_o) = (
        exact(q_len, seed),
        exact(kv_len, seed + 1),
        exact(kv_len, seed + 2),
        exact(q_len, seed + 3),
    );
    let (o, stats) = s.forward::<T>(&attention, [&q, &k, &v], lengths.as_ref(), (0, 0));
    let (graph, io) = attention.backward().unwrap();
    let inputs = [
        (io.q, &q, qd),
        (io.k, &k, kd),
        (io.v, &v, kd),
        (io.o, &o, qd),
        (io.d_o, &d_o, qd),
    ];
    let buffers: Vec<_> = inputs
        .iter()
        .map(|(_, values, dims)| s.upload::<T>(&attention, values, *dims))
        .collect();
    let stats32: Vec<f32> = stats.iter().map(|&x| x as f32).collect();
    let stats_buffer = s.pool.allocate_from_host(&stats32, &s.stream).unwrap();
    let zeroed = |len| s.pool.allocate_zeroed::<T>(len, &s.stream).unwrap();
    let (mut dq, mut dk, mut dv) = (zeroed(q_len), zeroed(kv_len), zeroed(kv_len));
    let extras = s.extras(lengths.as_ref(), (0, 0));
    let mut pack = VariantPack::new();
    for ((tensor, ..), buffer) in inputs.iter().zip(&buffers) {
        pack.input::<T>(*tensor, buffer).unwrap();
    }
    pack.input::<f32>(io.stats, &stats_buffer).unwrap();
    pack.output::<T>(io.dq, &mut dq)
        .unwrap()
        .output::<T>(io.dk, &mut dk)
        .unwrap()
        .output::<T>(io.dv, &mut dv)
        .unwrap();
    bind_extras(&mut pack, &extras, io.seq_len_q.zip(io.seq_len_kv), None);
    s.dnn.execute(&graph, &pack).unwrap();
    drop(pack);
    let o: Vec<f64> = o.iter().map(|&x| T::of(x).get()).collect();
    let problem = Problem::of(&attention, lengths);
    let [want_dq, want_dk, want_dv] = problem.backward([&q, &k, &v, &o, &d_o]);
    let [_, h, s_q, d] = qd.map(|dim| dim as usize);
    let s_kv = kd[2] as usize;
    let what = format!("{} {attention:?}", T::TYPE);
    let (rows, keys) = (
        |e: usize| problem.row_counts(e / d / s_q / h, e / d % s_q),
        |e: usize| problem.key_counts(e / d / s_kv / h, e / d % s_kv),
    );
    check(
        &format!("{what}: dQ"),
        &s.read::<T>(&attention, &dq, qd),
        &want_dq,
        T::TOL,
        rows,
    );
    check(
        &format!("{what}: dK"),
        &s.read::<T>(&attention, &dk, kd),
        &want_dk,
        T::TOL,
        keys,
    );
    check(
        &format!("{what}: dV"),
        &s.read::<T>(&attention, &dv, kd),
        &want_dv,
        T::TOL,
        keys,
    );
    let plan = s.dnn.plan(&graph).unwrap();
    println!(
        "{what}: backward plan of {} bytes of workspace",
        plan.workspace_size()
    );
}

pub(crate) fn f16_backward_matches_the_cpu() {
    let mut s = setup();
    let base = Attention::new(DataType::F16, 2, 2, 128, 64);
    backward_matches::<f16>(&mut s, base, None, 31);
    backward_matches::<f16>(&mut s, base.causal(true), None, 35);
}

pub(crate) fn bf16_backward_matches_the_cpu_causal_and_padded() {
    let mut s = setup();
    let base = Attention::new(DataType::BF16, 2, 2, 128, 64);
    backward_matches::<bf16>(&mut s, base.causal(true), None, 41);
    let lengths = (vec![100, 128], vec![77, 120]);
    backward_matches::<bf16>(&mut s, base.padding(true).causal(true), Some(lengths), 45);
    backward_matches::<bf16>(
        &mut s,
        base.layout(cuda_safe_libs::dnn::AttentionLayout::Bshd),
        None,
        49,
    );
}
