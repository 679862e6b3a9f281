//! cuBLAS and cuBLASLt on a real GPU (feature `blas`), against CPU references of random
//! matrices. Tolerances, per output type, for an entry of a product whose terms' magnitudes sum
//! to `S` (`|got - want| <= rel * |want| + abs * S`, the C floor's form):
//! - f64: rel 0, abs 1e-12; f32: rel 0, abs 1e-5; TF32: rel 0, abs 3e-3 (inputs rounded to 10
//!   mantissa bits);
//! - f32 out of f16 or bf16 inputs: rel 0, abs 1e-4 (the inputs are the rounded values);
//! - f16 out: rel 1e-3 (its rounding), abs 1e-4; bf16 out: rel 8e-3, abs 1e-4;
//! - FP8 e4m3 inputs: rel 1e-2, abs 1e-2 (as the floor's check);
//! - GELU: applied to the reference in f64, then the output type's tolerance.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Buffer, CaptureMode, Device, DeviceMemoryResource, Error, Graph, Stream};
use cuda_safe_libs::blas::{
    Blas, BlasElement, Epilogue, F8E4M3, Gemm, GemmBatch, Gemv, Matmul, MatmulCall, MatmulDesc,
    Scalars, StridedBatch, Vector,
};
use half::{bf16, f16};

struct Setup {
    device: Device,
    stream: Stream,
    pool: DeviceMemoryResource,
}

fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    Setup {
        device,
        stream,
        pool,
    }
}

/// `n` values in [-1, 1) from `seed` (xorshift).
fn random(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// A product's reference: (op(A) op(B))[i, j] and the sum of its terms' magnitudes, in f64,
/// for matrices stored column-major (or row-major) with the given leading dimensions.
struct Reference {
    values: Vec<f64>,
    magnitudes: Vec<f64>,
}

#[allow(clippy::too_many_arguments)]
fn reference(
    (m, n, k): (usize, usize, usize),
    (ta, tb): (bool, bool),
    row_major: bool,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
) -> Reference {
    let at = |r: usize, c: usize, ld: usize| if row_major { r * ld + c } else { c * ld + r };
    let mut values = vec![0.0; m * n];
    let mut magnitudes = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut sum, mut size) = (0.0, 0.0);
            for p in 0..k {
                let x = if ta {
                    a[at(p, i, lda)]
                } else {
                    a[at(i, p, lda)]
                };
                let y = if tb {
                    b[at(j, p, ldb)]
                } else {
                    b[at(p, j, ldb)]
                };
                sum += x * y;
                size += (x * y).abs();
            }
            // Indexed as C is stored, packed.
            let slot = if row_major { i * n + j } else { j * m + i };
            values[slot] = sum;
            magnitudes[slot] = size;
        }
    }
    Reference { values, magnitudes }
}

/// Checks `got` (as f64) against `want` with the tolerance `rel * |want| + abs * S`.
fn check(what: &str, got: &[f64], want: &Reference, (rel, abs): (f64, f64)) {
    assert_eq!(got.len(), want.values.len(), "{what}: length");
    let mut worst: f64 = 0.0;
    for (index, value) in got.iter().enumerate() {
        let (expected, size) = (want.values[index], want.magnitudes[index]);
        let tolerance = rel * expected.abs() + abs * size + f64::MIN_POSITIVE;
        let error = (value - expected).abs();
        assert!(
            error <= tolerance,
            "{what}: element {index}: got {value}, want {expected} (tolerance {tolerance:.3e})"
        );
        worst = worst.max(error / tolerance);
    }
    println!("{what}: worst error / tolerance {worst:.3}");
}

/// A buffer's elements as f64.
fn read<T: BlasElement>(buffer: &Buffer, widen: fn(T) -> f64) -> Vec<f64> {
    buffer
        .to_vec::<T>()
        .unwrap()
        .into_iter()
        .map(widen)
        .collect()
}

fn up<T: BlasElement>(s: &Setup, values: &[T]) -> Buffer {
    s.pool.allocate_from_host(values, &s.stream).unwrap()
}

fn gemm_f32_f64_and_tf32_match_the_cpu_in_both_orders() {
    let s = setup();
    let mut blas = Blas::new(&s.stream).unwrap();
    let (m, n, k) = (70, 50, 40);
    for row_major in [false, true] {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut shape = if row_major {
                Gemm::row_major(m, n, k)
            } else {
                Gemm::new(m, n, k)
            };
            if ta {
                shape = shape.transpose_a();
            }
            if tb {
                shape = shape.transpose_b();
            }
            let (a, b) = (random(m * k, 1), random(k * n, 2));
            let (lda, ldb) = match (row_major, ta, tb) {
                (false, ta, tb) => (if ta { k } else { m }, if tb { n } else { k }),
                (true, ta, tb) => (if ta { m } else { k }, if tb { k } else { n }),
            };
            let wide = |v: &[f32]| v.iter().map(|x| f64::from(*x)).collect::<Vec<_>>();
            let want = reference(
                (m, n, k),
                (ta, tb),
                row_major,
                &wide(&a),
                lda,
                &wide(&b),
                ldb,
            );
            for tf32 in [false, true] {
                blas.allow_tf32(tf32);
                let mut c = s.pool.allocate_zeroed::<f32>(m * n, &s.stream).unwrap();
                blas.gemm::<f32, f32>(
                    &shape,
                    Scalars::host(1.0, 0.0),
                    &up(&s, &a),
                    &up(&s, &b),
                    &mut c,
                )
                .unwrap();
                let tolerance = if tf32 { (0.0, 3e-3) } else { (0.0, 1e-5) };
                check(
                    &format!("f32 {shape} tf32={tf32}"),
                    &read::<f32>(&c, f64::from),
                    &want,
                    tolerance,
                );
            }
            blas.allow_tf32(false);
            let (a64, b64) = (wide(&a), wide(&b));
            let mut c = s.pool.allocate_zeroed::<f64>(m * n, &s.stream).unwrap();
            blas.gemm::<f64, f64>(
                &shape,
                Scalars::host(1.0, 0.0),
                &up(&s, &a64),
                &up(&s, &b64),
                &mut c,
            )
            .unwrap();
            check(
                &format!("f64 {shape}"),
                &c.to_vec::<f64>().unwrap(),
                &want,
                (0.0, 1e-12),
            );
        }
    }
}

fn gemm_f16_and_bf16_match_the_cpu_with_16_bit_and_f32_outputs() {
    let s = setup();
    let blas = Blas::new(&s.stream).unwrap();
    let (m, n, k) = (96, 64, 128);
    let shape = Gemm::new(m, n, k).transpose_a();
    let (a, b) = (random(m * k, 3), random(k * n, 4));
    let half_a: Vec<f16> = a.iter().copied().map(f16::from_f32).collect();
    let half_b: Vec<f16> = b.iter().copied().map(f16::from_f32).collect();
    let brain_a: Vec<bf16> = a.iter().copied().map(bf16::from_f32).collect();
    let brain_b: Vec<bf16> = b.iter().copied().map(bf16::from_f32).collect();
    let wide_half: Vec<f64> = half_a
        .iter()
        .chain(&half_b)
        .map(|x| f64::from(x.to_f32()))
        .collect();
    let wide_brain: Vec<f64> = brain_a
        .iter()
        .chain(&brain_b)
        .map(|x| f64::from(x.to_f32()))
        .collect();
    let (ha, hb) = wide_half.split_at(m * k);
    let half_want = reference((m, n, k), (true, false), false, ha, k, hb, k);
    let (ba, bb) = wide_brain.split_at(m * k);
    let brain_want = reference((m, n, k), (true, false), false, ba, k, bb, k);
    let host = Scalars::host(1.0f32, 0.0);
    let (da, db) = (up(&s, &half_a), up(&s, &half_b));
    let mut c16 = s.pool.allocate_zeroed::<f16>(m * n, &s.stream).unwrap();
    blas.gemm::<f16, f16>(&shape, host, &da, &db, &mut c16)
        .unwrap();
    let got = read::<f16>(&c16, f16::to_f64);
    check("f16 -> f16", &got, &half_want, (1e-3, 1e-4));
    let mut c32 = s.pool.allocate_zeroed::<f32>(m * n, &s.stream).unwrap();
    blas.gemm::<f16, f32>(&shape, host, &da, &db, &mut c32)
        .unwrap();
    let got = read::<f32>(&c32, f64::from);
    check("f16 -> f32", &got, &half_want, (0.0, 1e-4));
    let (da, db) = (up(&s, &brain_a), up(&s, &brain_b));
    let mut cb = s.pool.allocate_zeroed::<bf16>(m * n, &s.stream).unwrap();
    blas.gemm::<bf16, bf16>(&shape, host, &da, &db, &mut cb)
        .unwrap();
    let got = read::<bf16>(&cb, bf16::to_f64);
    check("bf16 -> bf16", &got, &brain_want, (8e-3, 1e-4));
    blas.gemm::<bf16, f32>(&shape, host, &da, &db, &mut c32)
        .unwrap();
    let got = read::<f32>(&c32, f64::from);
    check("bf16 -> f32", &got, &brain_want, (0.0, 1e-4));
}

fn batched_gemms_match_one_product_at_a_time() {
    let s = setup();
    let blas = Blas::new(&s.stream).unwrap();
    let (m, n, k, count) = (32, 24, 16, 5);
    let shape = Gemm::row_major(m, n, k);
    let batch = StridedBatch::packed(count, &shape).unwrap();
    let (a, b) = (random(m * k * count, 5), random(k * n * count, 6));
    let (da, db) = (up(&s, &a), up(&s, &b));
    let mut dc = s
        .pool
        .allocate_zeroed::<f32>(m * n * count, &s.stream)
        .unwrap();
    blas.gemm_strided_batched::<f32, f32>(
        &shape,
        &batch,
        Scalars::host(1.0, 0.0),
        &da,
        &db,
        &mut dc,
    )
    .unwrap();
    let strided: Vec<f32> = dc.to_vec().unwrap();
    let buffers = |v: &[f32], size: usize| v.chunks(size).map(|c| up(&s, c)).collect::<Vec<_>>();
    let (la, lb) = (buffers(&a, m * k), buffers(&b, k * n));
    let mut lc = buffers(&vec![0.0; m * n * count], m * n);
    let mut tables = GemmBatch::<f32, f32>::new(&blas, &la, &lb, &mut lc).unwrap();
    blas.gemm_batched(&shape, Scalars::host(1.0, 0.0), &mut tables)
        .unwrap();
    drop(tables);
    for i in 0..count {
        let wide = |v: &[f32]| v.iter().map(|x| f64::from(*x)).collect::<Vec<_>>();
        let want = reference(
            (m, n, k),
            (false, false),
            true,
            &wide(&a[i * m * k..(i + 1) * m * k]),
            k,
            &wide(&b[i * k * n..(i + 1) * k * n]),
            n,
        );
        check(
            &format!("strided product {i}"),
            &wide(&strided[i * m * n..(i + 1) * m * n]),
            &want,
            (0.0, 1e-5),
        );
        check(
            &format!("pointer product {i}"),
            &read::<f32>(&lc[i], f64::from),
            &want,
            (0.0, 1e-5),
        );
    }
}

fn gemv_and_the_vector_operations_match_the_cpu() {
    let s = setup();
    let blas = Blas::new(&s.stream).unwrap();
    let (m, n) = (300, 200);
    let (a, x) = (random(m * n, 7), random(n, 8));
    let mut y = s.pool.allocate_zeroed::<f32>(m, &s.stream).unwrap();
    blas.gemv::<f32>(
        &Gemv::row_major(m, n),
        Scalars::host(2.0, 0.0),
        &up(&s, &a),
        &up(&s, &x),
        &mut y,
    )
    .unwrap();
    let got: Vec<f32> = y.to_vec().unwrap();
    for i in 0..m {
        let (want, size): (f64, f64) = (0..n).fold((0.0, 0.0), |(sum, size), j| {
            let term = 2.0 * f64::from(a[i * n + j]) * f64::from(x[j]);
            (sum + term, size + term.abs())
        });
        assert!(
            (f64::from(got[i]) - want).abs() <= 1e-5 * size,
            "gemv row {i}"
        );
    }
    let (u, v) = (random(1000, 9), random(1000, 10));
    let (du, mut dv) = (up(&s, &u), up(&s, &v));
    blas.axpy::<f32>(&Vector::new(1000), 0.5f32, &du, &mut dv)
        .unwrap();
    blas.scal::<f32>(&Vector::new(500).inc_x(2), 3.0f32, &mut dv)
        .unwrap();
    let want: Vec<f32> = (0..1000)
        .map(|i| (v[i] + 0.5 * u[i]) * if i % 2 == 0 { 3.0 } else { 1.0 })
        .collect();
    let got: Vec<f32> = dv.to_vec().unwrap();
    assert!(
        got.iter()
            .zip(&want)
            .all(|(g, w)| (g - w).abs() <= 1e-6 * (1.0 + w.abs()))
    );
    let dot = blas.dot::<f32>(&Vector::new(1000), &du, &dv).unwrap();
    let want_dot: f64 = u
        .iter()
        .zip(&want)
        .map(|(a, b)| f64::from(*a) * f64::from(*b))
        .sum();
    assert!(
        (f64::from(dot) - want_dot).abs() <= 1e-4 * (1.0 + want_dot.abs()),
        "dot {dot}"
    );
    let mut norm = s.pool.allocate_zeroed::<f32>(1, &s.stream).unwrap();
    blas.nrm2_into::<f32>(&Vector::new(1000), &du, &mut norm)
        .unwrap();
    let want_norm = u.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let got_norm = f64::from(norm.to_vec::<f32>().unwrap()[0]);
    assert!(
        (got_norm - want_norm).abs() <= 1e-5 * want_norm,
        "nrm2 {got_norm}"
    );
}

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044715 * x * x * x)).tanh())
}

fn matmul_epilogues_match_the_cpu() {
    let s = setup();
    let matmul = Matmul::new(&s.stream).unwrap();
    let (m, n, k) = (256, 128, 64);
    let (a, b, bias) = (random(m * k, 11), random(k * n, 12), random(m, 13));
    let to_bf16 = |v: &[f32]| v.iter().copied().map(bf16::from_f32).collect::<Vec<_>>();
    let (a16, b16, bias16) = (to_bf16(&a), to_bf16(&b), to_bf16(&bias));
    let wide = |v: &[bf16]| v.iter().map(|x| f64::from(x.to_f32())).collect::<Vec<_>>();
    let plain = reference(
        (m, n, k),
        (false, false),
        false,
        &wide(&a16),
        m,
        &wide(&b16),
        k,
    );
    let (da, db, dbias) = (up(&s, &a16), up(&s, &b16), up(&s, &bias16));
    for epilogue in [
        Epilogue::None,
        Epilogue::GeluBias,
        Epilogue::ReluBias,
        Epilogue::GeluAuxBias,
    ] {
        let desc = MatmulDesc::new::<bf16, bf16, bf16>(Gemm::new(m, n, k)).epilogue(epilogue);
        let plan = matmul.plan(&desc).unwrap();
        let mut d = s.pool.allocate_zeroed::<bf16>(m * n, &s.stream).unwrap();
        let mut aux = s.pool.allocate_zeroed::<bf16>(m * n, &s.stream).unwrap();
        let mut call = MatmulCall::new::<bf16, bf16, bf16>(&da, &db, &mut d).unwrap();
        if epilogue.has_bias() {
            call = call.bias::<bf16>(&dbias).unwrap();
        }
        if epilogue.has_aux() {
            call = call.aux::<bf16>(&mut aux).unwrap();
        }
        matmul.run(&plan, call).unwrap();
        let mut want = Reference {
            values: plain.values.clone(),
            magnitudes: plain.magnitudes.clone(),
        };
        for (slot, value) in want.values.iter_mut().enumerate() {
            let biased = *value
                + if epilogue.has_bias() {
                    f64::from(bias16[slot % m].to_f32())
                } else {
                    0.0
                };
            *value = match epilogue {
                Epilogue::GeluBias | Epilogue::GeluAuxBias => gelu(biased),
                Epilogue::ReluBias => biased.max(0.0),
                _ => biased,
            };
        }
        check(
            &format!("matmul {desc}"),
            &read::<bf16>(&d, bf16::to_f64),
            &want,
            (8e-3, 1e-4),
        );
        if epilogue.has_aux() {
            // GELU's input: the biased product, before the activation.
            let pre = Reference {
                values: plain
                    .values
                    .iter()
                    .enumerate()
                    .map(|(slot, v)| v + f64::from(bias16[slot % m].to_f32()))
                    .collect(),
                magnitudes: plain.magnitudes.clone(),
            };
            check(
                "GELU aux",
                &read::<bf16>(&aux, bf16::to_f64),
                &pre,
                (8e-3, 1e-4),
            );
        }
    }
}

fn fp8_matmul_with_scales_matches_the_cpu_on_sm89_and_later() {
    let s = setup();
    if s.device.compute_capability().unwrap() < (8, 9) {
        println!("FP8 needs sm_89 or later: skipped on this device");
        return;
    }
    let matmul = Matmul::new(&s.stream).unwrap();
    let (m, n, k) = (256, 256, 512);
    let to_fp8 = |v: &[f32]| {
        v.iter()
            .map(|x| F8E4M3::from_f32(x * 4.0))
            .collect::<Vec<_>>()
    };
    let (a, b) = (to_fp8(&random(k * m, 14)), to_fp8(&random(k * n, 15)));
    let wide = |v: &[F8E4M3], scale: f64| {
        v.iter()
            .map(|x| f64::from(x.to_f32()) * scale)
            .collect::<Vec<_>>()
    };
    // TN: A stored k x m (transposed), B k x n; the scales dequantise (0.25 each).
    let want = reference(
        (m, n, k),
        (true, false),
        false,
        &wide(&a, 0.25),
        k,
        &wide(&b, 0.25),
        k,
    );
    // cuBLASLt takes 16-byte aligned scale pointers: the two scales sit 4 elements apart.
    let scales = up(&s, &[0.25f32, 0.0, 0.0, 0.0, 0.25]);
    let scale_view = scales.as_slice::<f32>().unwrap();
    let (scale_a, scale_b) = (
        scale_view.slice(0..1).unwrap(),
        scale_view.slice(4..5).unwrap(),
    );
    let (da, db) = (up(&s, &a), up(&s, &b));
    let desc = MatmulDesc::new::<F8E4M3, F8E4M3, bf16>(Gemm::new(m, n, k).transpose_a());
    let plan = matmul.plan(&desc).unwrap();
    let mut d = s.pool.allocate_zeroed::<bf16>(m * n, &s.stream).unwrap();
    let call = MatmulCall::new::<F8E4M3, F8E4M3, bf16>(&da, &db, &mut d)
        .and_then(|call| call.scale_a(&scale_a))
        .and_then(|call| call.scale_b(&scale_b))
        .unwrap();
    matmul.run(&plan, call).unwrap();
    let got = read::<bf16>(&d, bf16::to_f64);
    check(&format!("{desc}"), &got, &want, (1e-2, 1e-2));
    // A scale 4 bytes in is refused before cuBLASLt sees it.
    let misaligned = scale_view.slice(1..2).unwrap();
    let call = MatmulCall::new::<F8E4M3, F8E4M3, bf16>(&da, &db, &mut d)
        .and_then(|call| call.scale_a(&scale_a))
        .and_then(|call| call.scale_b(&misaligned))
        .unwrap();
    let error = matmul.run(&plan, call).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
}

fn a_captured_gemm_and_matmul_replay_correctly() {
    let s = setup();
    let blas = Blas::new(&s.stream).unwrap();
    let matmul = Matmul::new(&s.stream).unwrap();
    let (m, n, k) = (64, 48, 32);
    let shape = Gemm::new(m, n, k);
    let desc = MatmulDesc::new::<f32, f32, f32>(shape);
    let plan = matmul.plan(&desc).unwrap();
    let mut a = s.pool.allocate_zeroed::<f32>(m * k, &s.stream).unwrap();
    let b = up(&s, &random(k * n, 16));
    let mut c = s.pool.allocate_zeroed::<f32>(m * n, &s.stream).unwrap();
    let mut d = s.pool.allocate_zeroed::<f32>(m * n, &s.stream).unwrap();
    let alpha = up(&s, &[1.0f32, 0.0]);
    s.stream.sync().unwrap();
    // SAFETY: every buffer the graph uses outlives it and its executable (dropped first, at
    // the end of this function); nothing is allocated on the stream while it captures.
    let graph = unsafe {
        Graph::capture(&s.stream, CaptureMode::ThreadLocal, |_| {
            let view = alpha.as_slice::<f32>()?;
            let scalars = Scalars::device(view.slice(0..1)?, view.slice(1..2)?);
            blas.gemm::<f32, f32>(&shape, scalars, &a, &b, &mut c)?;
            matmul.run(
                &plan,
                MatmulCall::new::<f32, f32, f32>(&a, &b, &mut d)?.alpha(2.0),
            )
        })
    }
    .unwrap();
    let exec = graph.instantiate().unwrap();
    let b_host = read::<f32>(&b, f64::from);
    for (round, seed) in [(0, 17u64), (1, 18)] {
        // New inputs at the same addresses: the replay reads them.
        let a_host = random(m * k, seed);
        a.copy_from_host(&a_host).unwrap();
        exec.launch(&s.stream).unwrap();
        s.stream.sync().unwrap();
        let wide: Vec<f64> = a_host.iter().map(|x| f64::from(*x)).collect();
        let want = reference((m, n, k), (false, false), false, &wide, m, &b_host, k);
        let got_c = read::<f32>(&c, f64::from);
        check(&format!("replay {round}: gemm"), &got_c, &want, (0.0, 1e-5));
        let doubled = Reference {
            values: want.values.iter().map(|v| 2.0 * v).collect(),
            magnitudes: want.magnitudes.iter().map(|v| 2.0 * v).collect(),
        };
        let got_d = read::<f32>(&d, f64::from);
        check(
            &format!("replay {round}: matmul"),
            &got_d,
            &doubled,
            (0.0, 1e-5),
        );
    }
    drop(exec);
}

fn a_moved_handle_runs_on_its_new_stream_and_checks_still_refuse() {
    let s = setup();
    let mut blas = Blas::new(&s.stream).unwrap();
    let other = s.device.create_stream(Default::default()).unwrap();
    blas.set_stream(&other).unwrap();
    let a = up(&s, &[1.0f32; 16]);
    let mut c = s.pool.allocate_zeroed::<f32>(16, &s.stream).unwrap();
    // The operands are on the first stream: the call is ordered after their work, and theirs
    // after it.
    blas.gemm::<f32, f32>(&Gemm::new(4, 4, 4), Scalars::host(1.0, 0.0), &a, &a, &mut c)
        .unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), [4.0; 16]);
    let mut small = s.pool.allocate_zeroed::<f32>(15, &s.stream).unwrap();
    let error = blas
        .gemm::<f32, f32>(
            &Gemm::new(4, 4, 4),
            Scalars::host(1.0, 0.0),
            &a,
            &a,
            &mut small,
        )
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    println!("cuBLAS {} (handle version)", blas.version().unwrap());
}

pub(crate) const FILE: GpuFile = gpu_file![
    gemm_f32_f64_and_tf32_match_the_cpu_in_both_orders,
    gemm_f16_and_bf16_match_the_cpu_with_16_bit_and_f32_outputs,
    batched_gemms_match_one_product_at_a_time,
    gemv_and_the_vector_operations_match_the_cpu,
    matmul_epilogues_match_the_cpu,
    fp8_matmul_with_scales_matches_the_cpu_on_sm89_and_later,
    a_captured_gemm_and_matmul_replay_correctly,
    a_moved_handle_runs_on_its_new_stream_and_checks_still_refuse,
];
