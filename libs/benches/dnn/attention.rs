//! The graph-API rows beside `bench/floors/dnn_graph_floor.c` (and PyTorch's
//! `torch_sdpa_cudnn_*` rows of `bench/libs_torch.py`): scaled-dot-product attention B=4, H=32,
//! S=4096, D=128, causal, bf16, forward (training, with its statistics) and backward; a
//! 4096^3 bf16 matmul with a fused bias and relu. FLOPs as PyTorch counts them: forward
//! `4 B H S^2 D / 2` (causal), backward 2.5 times that; the matmul `2 M N K`.
//!
//! - `sdpa_cudnn_{fwd,bwd}_{ms,tflops}`, `sdpa_cudnn_{fwd,bwd}_host_us` (host time of one
//!   `Dnn::execute`, the median of 20 runs of 10 calls), `sdpa_cudnn_{fwd,bwd}_plan_cold_ms`,
//!   `sdpa_cudnn_{fwd,bwd}_plan_cached_us` (a second `Dnn::plan` of an equal graph);
//! - `matmul_bias_relu_4096_{ms,tflops}`, `matmul_bias_relu_4096_plan_cold_ms`.
//!
//! Checks: 8 rows of O and of dQ of batch 0, head 0, against CPU sums in f64 from the inputs as
//! the GPU holds them (dQ from the GPU's O), within 2e-2 of the row's largest value; the matmul
//! on 64 sampled outputs.

use std::time::Instant;

use cuda_safe::{Buffer, DeviceMemoryResource, Result, Stream};
use cuda_safe_libs::dnn::{Attention, DataType, Dnn, Graph, Pointwise, TensorDesc, VariantPack};
use half::bf16;

use super::{fig, median, time_ms};

const B: usize = 4;
const H: usize = 32;
const S: usize = 4096;
const D: usize = 128;

/// `len` bf16 values in [-1, 1) (multiples of 1/64) from a 64-bit LCG.
fn values(len: usize, mut state: u64) -> Vec<bf16> {
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            bf16::from_f32(((state >> 33) % 128) as f32 / 64.0 - 1.0)
        })
        .collect()
}

/// Makes the plan of `graph` (cold, then cached), printing both and the plan's figures.
fn plan(dnn: &mut Dnn, graph: &Graph, name: &str) -> Result<()> {
    let start = Instant::now();
    let (config, workspace) = dnn
        .plan(graph)
        .map(|p| (p.config_index(), p.workspace_size()))?;
    let cold = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    dnn.plan(graph)?;
    let cached = start.elapsed().as_secs_f64() * 1e6;
    println!(
        "INFO {name}: plan made in {cold:.1} ms (cached: {cached:.2} us), engine configuration \
         {config}, workspace {workspace} bytes"
    );
    fig(&format!("{name}_plan_cold_ms"), cold, "ms");
    fig(&format!("{name}_plan_cached_us"), cached, "us");
    Ok(())
}

/// The host time (us) of one call: the median of 20 runs of 10 calls, each run synchronized.
fn host_us(stream: &Stream, mut call: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut times = Vec::with_capacity(20);
    for _ in 0..20 {
        stream.sync()?;
        let start = Instant::now();
        for _ in 0..10 {
            call()?;
        }
        times.push(start.elapsed().as_secs_f64() * 1e6 / 10.0);
    }
    stream.sync()?;
    Ok(median(&mut times))
}

/// Row `i` of batch 0, head 0 (BHSD) of `t`, in f64.
fn row(t: &[bf16], i: usize) -> Vec<f64> {
    t[i * D..(i + 1) * D].iter().map(|x| x.to_f64()).collect()
}

/// The causal softmax weights of row `i` (batch 0, head 0).
fn weights(q: &[bf16], k: &[bf16], i: usize) -> Vec<f64> {
    let (qi, scale) = (row(q, i), 1.0 / (D as f64).sqrt());
    let scores: Vec<f64> = (0..=i)
        .map(|j| scale * qi.iter().zip(row(k, j)).map(|(a, b)| a * b).sum::<f64>())
        .collect();
    let max = scores.iter().copied().fold(f64::MIN, f64::max);
    let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| e / sum).collect()
}

/// Whether `got` is within 2e-2 of the largest |want| plus 1e-2 of `want`.
fn near(what: &str, i: usize, got: &[f64], want: &[f64]) -> bool {
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())) + 1e-2;
    let worst = got
        .iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    if worst > 2e-2 * scale {
        println!("FAIL {what} row {i}: off by {worst} (scale {scale})");
    }
    worst <= 2e-2 * scale
}

/// The rows checked: the first, the last and six between.
const ROWS: [usize; 8] = [0, 1, 17, 255, 1000, 2048, 3333, S - 1];

pub(crate) fn run(dnn: &mut Dnn, pool: &DeviceMemoryResource) -> Result<bool> {
    let stream = dnn.stream().clone();
    let len = B * H * S * D;
    let (q, k, v, d_o) = (
        values(len, 1),
        values(len, 2),
        values(len, 3),
        values(len, 4),
    );
    let up = |data: &[bf16]| pool.allocate_from_host(data, &stream);
    let (qb, kb, vb, dob) = (up(&q)?, up(&k)?, up(&v)?, up(&d_o)?);
    let zeroed = || pool.allocate_zeroed::<bf16>(len, &stream);
    let (mut o, mut dq, mut dk, mut dv) = (zeroed()?, zeroed()?, zeroed()?, zeroed()?);
    let mut stats = pool.allocate_zeroed::<f32>(B * H * S, &stream)?;
    let attention =
        Attention::new(DataType::BF16, B as i64, H as i64, S as i64, D as i64).causal(true);
    let fwd_flops = 4.0 * (B * H * S * S * D) as f64 / 2.0;
    let (graph, io) = attention.forward()?;
    plan(dnn, &graph, "sdpa_cudnn_fwd")?;
    let forward = |dnn: &mut Dnn, o: &mut Buffer, stats: &mut Buffer| {
        let mut pack = VariantPack::new();
        pack.input::<bf16>(io.q, &qb)?
            .input::<bf16>(io.k, &kb)?
            .input::<bf16>(io.v, &vb)?;
        pack.output::<bf16>(io.o, o)?;
        if let Some(tensor) = io.stats {
            pack.output::<f32>(tensor, stats)?;
        }
        dnn.execute(&graph, &pack)
    };
    let ms = time_ms(&stream, || forward(dnn, &mut o, &mut stats))?;
    let host = host_us(&stream, || forward(dnn, &mut o, &mut stats))?;
    fig("sdpa_cudnn_fwd_ms", ms, "ms");
    fig(
        "sdpa_cudnn_fwd_tflops",
        fwd_flops / (ms * 1e-3) / 1e12,
        "TFLOP/s",
    );
    fig("sdpa_cudnn_fwd_host_us", host, "us");
    let got_o = o.to_vec::<bf16>()?;
    let mut ok = true;
    for i in ROWS {
        let p = weights(&q, &k, i);
        let want: Vec<f64> = (0..D)
            .map(|e| {
                p.iter()
                    .enumerate()
                    .map(|(j, pj)| pj * v[j * D + e].to_f64())
                    .sum()
            })
            .collect();
        ok &= near("O", i, &row(&got_o, i), &want);
    }

    let (graph, io) = attention.backward()?;
    plan(dnn, &graph, "sdpa_cudnn_bwd")?;
    let backward = |dnn: &mut Dnn, grads: [&mut Buffer; 3]| {
        let [dq, dk, dv] = grads;
        let mut pack = VariantPack::new();
        pack.input::<bf16>(io.q, &qb)?
            .input::<bf16>(io.k, &kb)?
            .input::<bf16>(io.v, &vb)?;
        pack.input::<bf16>(io.o, &o)?.input::<bf16>(io.d_o, &dob)?;
        pack.input::<f32>(io.stats, &stats)?;
        pack.output::<bf16>(io.dq, dq)?
            .output::<bf16>(io.dk, dk)?
            .output::<bf16>(io.dv, dv)?;
        dnn.execute(&graph, &pack)
    };
    let ms = time_ms(&stream, || backward(dnn, [&mut dq, &mut dk, &mut dv]))?;
    let host = host_us(&stream, || backward(dnn, [&mut dq, &mut dk, &mut dv]))?;
    fig("sdpa_cudnn_bwd_ms", ms, "ms");
    fig(
        "sdpa_cudnn_bwd_tflops",
        2.5 * fwd_flops / (ms * 1e-3) / 1e12,
        "TFLOP/s",
    );
    fig("sdpa_cudnn_bwd_host_us", host, "us");
    let got_dq = dq.to_vec::<bf16>()?;
    let scale = 1.0 / (D as f64).sqrt();
    for i in ROWS {
        let p = weights(&q, &k, i);
        let (doi, oi) = (row(&d_o, i), row(&got_o, i));
        let rowsum: f64 = doi.iter().zip(&oi).map(|(a, b)| a * b).sum();
        let mut want = vec![0.0; D];
        for (j, pj) in p.iter().enumerate() {
            let dp: f64 = doi.iter().zip(row(&v, j)).map(|(a, b)| a * b).sum();
            let ds = pj * (dp - rowsum) * scale;
            want.iter_mut()
                .zip(row(&k, j))
                .for_each(|(w, kj)| *w += ds * kj);
        }
        ok &= near("dQ", i, &row(&got_dq, i), &want);
    }
    if ok {
        println!("check sdpa_cudnn fwd and bwd, {} rows ok", ROWS.len());
    }
    Ok(ok & matmul_bias_relu(dnn, pool)?)
}

/// A 4096^3 bf16 matmul with a fused bias and relu through the graph API.
fn matmul_bias_relu(dnn: &mut Dnn, pool: &DeviceMemoryResource) -> Result<bool> {
    const N: usize = 4096;
    let stream = dnn.stream().clone();
    let (a, b, bias) = (values(N * N, 5), values(N * N, 6), values(N, 7));
    let up = |data: &[bf16]| pool.allocate_from_host(data, &stream);
    let (ab, bb, biasb) = (up(&a)?, up(&b)?, up(&bias)?);
    let mut c = pool.allocate_zeroed::<bf16>(N * N, &stream)?;
    let n = N as i64;
    let mut graph = Graph::new();
    let ta = graph.tensor(TensorDesc::packed(DataType::BF16, &[1, 1, n, n]))?;
    let tb = graph.tensor(TensorDesc::packed(DataType::BF16, &[1, 1, n, n]))?;
    let tbias = graph.tensor(TensorDesc::packed(DataType::BF16, &[1, 1, 1, n]))?;
    let product = graph.matmul(ta, tb, DataType::F32)?;
    let biased = graph.pointwise(Pointwise::Add, product, Some(tbias))?;
    let tc = graph.pointwise(Pointwise::Relu, biased, None)?;
    graph.output(tc, DataType::BF16)?;
    plan(dnn, &graph, "matmul_bias_relu_4096")?;
    let run = |dnn: &mut Dnn, c: &mut Buffer| {
        let mut pack = VariantPack::new();
        pack.input::<bf16>(ta, &ab)?
            .input::<bf16>(tb, &bb)?
            .input::<bf16>(tbias, &biasb)?;
        pack.output::<bf16>(tc, c)?;
        dnn.execute(&graph, &pack)
    };
    let ms = time_ms(&stream, || run(dnn, &mut c))?;
    fig("matmul_bias_relu_4096_ms", ms, "ms");
    fig(
        "matmul_bias_relu_4096_tflops",
        2.0 * (N * N * N) as f64 / (ms * 1e-3) / 1e12,
        "TFLOP/s",
    );
    let got = c.to_vec::<bf16>()?;
    let mut ok = true;
    let mut state = 11u64;
    for _ in 0..64 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let (r, col) = ((state >> 20) as usize % N, (state >> 40) as usize % N);
        let dot: f64 = (0..N)
            .map(|t| a[r * N + t].to_f64() * b[t * N + col].to_f64())
            .sum();
        let want = (dot + bias[col].to_f64()).max(0.0);
        let value = got[r * N + col].to_f64();
        if (value - want).abs() > 1e-2 * want.abs() + 1e-1 {
            println!("FAIL matmul_bias_relu output ({r}, {col}): got {value}, want {want}");
            ok = false;
        }
    }
    if ok {
        println!("check matmul_bias_relu_4096, 64 points ok");
    }
    Ok(ok)
}
