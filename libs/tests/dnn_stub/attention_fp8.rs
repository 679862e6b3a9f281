//! The FP8 attention forward on the stub (E4M3 Q, K, V and O, the `blas` feature's FP8 type):
//! the descales, the probabilities' and O's scales and amaxes, against the CPU reference.

use cuda_safe_libs::blas::F8E4M3;
use cuda_safe_libs::dnn::{Attention, DataType, Dnn, VariantPack};

use super::attention::{close, from_memory, problem, to_memory};
use super::{Case, CaseFn, data, ensure, err};

pub(crate) const CASES: &[(&str, CaseFn)] = &[(
    "an FP8 attention forward descales, scales and reports its amaxes as the reference",
    fp8_matches,
)];

/// Values exact in E4M3 (multiples of 1/8 in [-1, 1)), from `seed`.
fn exact(len: usize, seed: u64) -> Vec<f64> {
    data(len, seed)
        .into_iter()
        .map(|x| (f64::from(x) * 8.0).round() / 8.0)
        .collect()
}

fn fp8_matches(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let attention = Attention::new(DataType::Fp8E4M3, 1, 2, 16, 16).causal(true);
    let (graph, io) = attention.forward().map_err(err)?;
    let scaling = io.fp8.ok_or("no FP8 scaling tensors")?;
    let dims = attention.q_dims();
    let layout = attention.memory_layout();
    let len = dims.iter().product::<i64>() as usize;
    let (q, k, v) = (exact(len, 51), exact(len, 52), exact(len, 53));
    let fp8 = |values: &[f64]| to_memory(values, dims, layout, |x| F8E4M3::from_f32(x as f32));
    let upload = |values: Vec<F8E4M3>| case.pool.allocate_from_host(&values, &case.stream);
    let (qb, kb, vb) = (
        upload(fp8(&q)).map_err(err)?,
        upload(fp8(&k)).map_err(err)?,
        upload(fp8(&v)).map_err(err)?,
    );
    let (descale_s, scale_s) = (1.0 / 128.0, 128.0);
    let factors = [0.5f32, 2.0, 1.0, descale_s, scale_s, 1.0];
    let one = |value: f32| case.pool.allocate_from_host(&[value], &case.stream);
    let factors = factors.map(one);
    let mut o = case
        .pool
        .allocate_zeroed::<F8E4M3>(len, &case.stream)
        .map_err(err)?;
    let mut stats = case
        .pool
        .allocate_zeroed::<f32>(2 * 16, &case.stream)
        .map_err(err)?;
    let mut amax = [
        case.pool
            .allocate_zeroed::<f32>(1, &case.stream)
            .map_err(err)?,
        case.pool
            .allocate_zeroed::<f32>(1, &case.stream)
            .map_err(err)?,
    ];
    let mut pack = VariantPack::new();
    pack.input::<F8E4M3>(io.q, &qb).map_err(err)?;
    pack.input::<F8E4M3>(io.k, &kb).map_err(err)?;
    pack.input::<F8E4M3>(io.v, &vb).map_err(err)?;
    pack.output::<F8E4M3>(io.o, &mut o).map_err(err)?;
    pack.output::<f32>(io.stats.ok_or("no stats")?, &mut stats)
        .map_err(err)?;
    let tensors = [
        scaling.descale_q,
        scaling.descale_k,
        scaling.descale_v,
        scaling.descale_s,
        scaling.scale_s,
        scaling.scale_o,
    ];
    for (tensor, factor) in tensors.into_iter().zip(&factors) {
        pack.input::<f32>(tensor, factor.as_ref().map_err(|e| e.to_string())?)
            .map_err(err)?;
    }
    let [amax_s, amax_o] = &mut amax;
    pack.output::<f32>(scaling.amax_s, amax_s).map_err(err)?;
    pack.output::<f32>(scaling.amax_o, amax_o).map_err(err)?;
    dnn.execute(&graph, &pack).map_err(err)?;
    drop(pack);
    let reference = problem(&attention, None, (0, 0));
    let (want_o, _) = reference.forward(&q, &k, &v);
    let got = o.to_vec::<F8E4M3>().map_err(err)?;
    let got = from_memory(&got, dims, layout, |x| f64::from(x.to_f32()));
    close("FP8 O", &got, &want_o, 1.0 / 16.0, |_| true)?;
    let want_amax_o = want_o.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let [amax_s, amax_o] = amax.map(|buffer| buffer.to_vec::<f32>());
    let (amax_s, amax_o) = (amax_s.map_err(err)?[0], amax_o.map_err(err)?[0]);
    ensure((f64::from(amax_o) - want_amax_o).abs() < 1e-5, || {
        format!("amax of O: got {amax_o}, want {want_amax_o}")
    })?;
    ensure(amax_s == 1.0, || {
        format!("the first query sees one key: its weight (the amax of P) is 1, got {amax_s}")
    })
}
