//! A causal self-attention block's forward and backward on cuDNN's fused flash attention
//! (`cuda_safe_libs::dnn`, `docs/dnn.md`), checked on the CPU: Q, K and V of 2 sequences of 512
//! tokens, 8 heads of 64 features in bf16; the forward writes O and the statistics the backward
//! reads; the backward gives dQ, dK and dV for an upstream gradient dO. Head 0 of sequence 0 is
//! recomputed in f64 (softmax(QKᵀ/√D + causal mask)V and its gradients) and compared; each
//! pass's plan is made once, then each is timed over 20 executions.
//!
//! `cargo run -p cuda-safe-examples --example attention_block [SEQ]`

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Device, Result};
use cuda_safe_libs::dnn::{Attention, DataType, Dnn, VariantPack};
use half::bf16;

const BATCH: usize = 2;
const HEADS: usize = 8;
const D: usize = 64;

fn main() -> ExitCode {
    let seq = match std::env::args().nth(1).map(|arg| arg.parse::<usize>()) {
        None => 512,
        Some(Ok(seq)) if seq > 0 && seq % 128 == 0 => seq,
        Some(_) => {
            eprintln!("usage: attention_block [SEQ, a multiple of 128]");
            return ExitCode::FAILURE;
        }
    };
    match run(seq) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// bf16 multiples of 1/64 in [-1, 1) from a 64-bit LCG.
fn values(count: usize, mut state: u64) -> Vec<bf16> {
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            bf16::from_f32(((state >> 33) % 128) as f32 / 64.0 - 1.0)
        })
        .collect()
}

/// Head 0 of sequence 0 of a (B, H, S, D) tensor, as f64 rows.
fn head(t: &[bf16], seq: usize) -> Vec<Vec<f64>> {
    (0..seq)
        .map(|i| t[i * D..(i + 1) * D].iter().map(|x| x.to_f64()).collect())
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The reference of one head: O and dQ, dK, dV for `d_o`.
fn reference(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
    d_o: &[Vec<f64>],
) -> [Vec<Vec<f64>>; 4] {
    let (seq, scale) = (q.len(), 1.0 / (D as f64).sqrt());
    let zeros = || vec![vec![0.0; D]; seq];
    let (mut o, mut dq, mut dk, mut dv) = (zeros(), zeros(), zeros(), zeros());
    for i in 0..seq {
        let scores: Vec<f64> = (0..=i).map(|j| scale * dot(&q[i], &k[j])).collect();
        let max = scores.iter().copied().fold(f64::MIN, f64::max);
        let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        let p: Vec<f64> = exps.iter().map(|e| e / sum).collect();
        for (j, pj) in p.iter().enumerate() {
            o[i].iter_mut().zip(&v[j]).for_each(|(o, v)| *o += pj * v);
        }
        let rowsum = dot(&d_o[i], &o[i]);
        for (j, pj) in p.iter().enumerate() {
            let ds = pj * (dot(&d_o[i], &v[j]) - rowsum) * scale;
            for e in 0..D {
                dv[j][e] += pj * d_o[i][e];
                dq[i][e] += ds * k[j][e];
                dk[j][e] += ds * q[i][e];
            }
        }
    }
    [o, dq, dk, dv]
}

/// The largest difference between `got` and `want`, against the largest |want|.
fn error(got: &[Vec<f64>], want: &[Vec<f64>]) -> f64 {
    let pairs = got.iter().flatten().zip(want.iter().flatten());
    let worst = pairs.map(|(g, w)| (g - w).abs()).fold(0.0, f64::max);
    worst / want.iter().flatten().fold(1e-3f64, |m, w| m.max(w.abs()))
}

fn run(seq: usize) -> Result<bool> {
    let device = Device::new(0)?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let mut dnn = Dnn::new(&stream)?;
    println!(
        "{} with cuDNN {}",
        device.name()?,
        cuda_safe_libs::dnn::version()?
    );
    let attention = Attention::new(
        DataType::BF16,
        BATCH as i64,
        HEADS as i64,
        seq as i64,
        D as i64,
    )
    .causal(true);
    let len = BATCH * HEADS * seq * D;
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
    let mut stats = pool.allocate_zeroed::<f32>(BATCH * HEADS * seq, &stream)?;

    let (forward, fwd) = attention.forward()?;
    let (backward, bwd) = attention.backward()?;
    for (graph, name) in [(&forward, "forward"), (&backward, "backward")] {
        let start = Instant::now();
        let plan = dnn.plan(graph)?;
        println!(
            "{name}: plan made in {:.0} ms, engine configuration {}, {} bytes of workspace",
            start.elapsed().as_secs_f64() * 1e3,
            plan.config_index(),
            plan.workspace_size()
        );
    }
    let start = Instant::now();
    for _ in 0..20 {
        let mut pack = VariantPack::new();
        pack.input::<bf16>(fwd.q, &qb)?
            .input::<bf16>(fwd.k, &kb)?
            .input::<bf16>(fwd.v, &vb)?;
        pack.output::<bf16>(fwd.o, &mut o)?;
        if let Some(tensor) = fwd.stats {
            pack.output::<f32>(tensor, &mut stats)?;
        }
        dnn.execute(&forward, &pack)?;
    }
    stream.sync()?;
    let fwd_ms = start.elapsed().as_secs_f64() * 1e3 / 20.0;
    let start = Instant::now();
    for _ in 0..20 {
        let mut pack = VariantPack::new();
        pack.input::<bf16>(bwd.q, &qb)?
            .input::<bf16>(bwd.k, &kb)?
            .input::<bf16>(bwd.v, &vb)?;
        pack.input::<bf16>(bwd.o, &o)?
            .input::<bf16>(bwd.d_o, &dob)?
            .input::<f32>(bwd.stats, &stats)?;
        pack.output::<bf16>(bwd.dq, &mut dq)?
            .output::<bf16>(bwd.dk, &mut dk)?
            .output::<bf16>(bwd.dv, &mut dv)?;
        dnn.execute(&backward, &pack)?;
    }
    stream.sync()?;
    let bwd_ms = start.elapsed().as_secs_f64() * 1e3 / 20.0;
    println!("forward {fwd_ms:.3} ms, backward {bwd_ms:.3} ms a pass (host clock, 20 passes)");

    let [want_o, want_dq, want_dk, want_dv] = reference(
        &head(&q, seq),
        &head(&k, seq),
        &head(&v, seq),
        &head(&d_o, seq),
    );
    let mut ok = true;
    for (name, buffer, want) in [
        ("O", &o, &want_o),
        ("dQ", &dq, &want_dq),
        ("dK", &dk, &want_dk),
        ("dV", &dv, &want_dv),
    ] {
        let got = head(&buffer.to_vec::<bf16>()?, seq);
        let error = error(&got, want);
        let fine = error < 3e-2;
        ok &= fine;
        println!(
            "{name}: largest error {error:.2e} of the largest value ({})",
            if fine { "ok" } else { "FAIL" }
        );
    }
    Ok(ok)
}
