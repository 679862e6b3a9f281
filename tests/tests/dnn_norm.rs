//! cuDNN's normalizations on a real GPU (feature `dnn`): a layer norm forward (training, with
//! its means and inverse standard deviations, and inference) and backward in bf16 with f32
//! scale and bias, against a CPU reference in f64 from the inputs as the GPU holds them; a
//! softmax with its statistics in f32, or, where the loaded cuDNN has no engine for the graph,
//! its typed refusal. Tolerance: bf16 outputs 2e-2 of (1 + |want|), f32 ones 1e-3.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Device, DeviceMemoryResource, Stream};
use cuda_safe_libs::dnn::{
    CudnnError, CudnnRefusal, DataType, Dnn, Graph, LayerNorm, TensorDesc, VariantPack,
};
use half::bf16;

const ROWS: usize = 256;
const WIDTH: usize = 1024;

fn setup() -> (Stream, DeviceMemoryResource, Dnn) {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let dnn = Dnn::new(&stream).unwrap();
    (stream, pool, dnn)
}

/// `n` multiples of 1/64 in [-1, 1) from `seed` (xorshift), exact in bf16.
fn exact(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 11) % 128) as f32 / 64.0 - 1.0
        })
        .collect()
}

fn check(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {index}: got {g}, want {w}"
        );
    }
}

/// Per row: (x - mean) * inv, the mean and the inverse standard deviation.
fn normalized(x: &[f32], epsilon: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut xhat, mut means, mut invs) = (Vec::new(), Vec::new(), Vec::new());
    for row in x.chunks(WIDTH) {
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / WIDTH as f64;
        let var = row
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / WIDTH as f64;
        let inv = 1.0 / (var + epsilon).sqrt();
        xhat.extend(row.iter().map(|&v| (f64::from(v) - mean) * inv));
        means.push(mean);
        invs.push(inv);
    }
    (xhat, means, invs)
}

fn layer_norm_forward_and_backward_match_the_cpu() {
    let (stream, pool, mut dnn) = setup();
    let (xs, scales, biases, dys) = (
        exact(ROWS * WIDTH, 1),
        exact(WIDTH, 2),
        exact(WIDTH, 3),
        exact(ROWS * WIDTH, 4),
    );
    let to_bf16 = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
    let x = pool.allocate_from_host(&to_bf16(&xs), &stream).unwrap();
    let dy = pool.allocate_from_host(&to_bf16(&dys), &stream).unwrap();
    let scale = pool.allocate_from_host(&scales, &stream).unwrap();
    let bias = pool.allocate_from_host(&biases, &stream).unwrap();
    let epsilon = 1e-5f32;
    let (xhat, means, invs) = normalized(&xs, f64::from(epsilon));
    let want_y: Vec<f64> = xhat
        .iter()
        .enumerate()
        .map(|(e, &h)| h * f64::from(scales[e % WIDTH]) + f64::from(biases[e % WIDTH]))
        .collect();
    let dims = [ROWS as i64, WIDTH as i64, 1, 1];
    let affine = TensorDesc::packed(DataType::F32, &[1, WIDTH as i64, 1, 1]);
    let stats_desc = TensorDesc::packed(DataType::F32, &[ROWS as i64, 1, 1, 1]);
    let mut mean = pool.allocate_zeroed::<f32>(ROWS, &stream).unwrap();
    let mut inv = pool.allocate_zeroed::<f32>(ROWS, &stream).unwrap();
    for training in [false, true] {
        let mut graph = Graph::new();
        let tx = graph
            .tensor(TensorDesc::packed(DataType::BF16, &dims))
            .unwrap();
        let (ts, tb) = (
            graph.tensor(affine.clone()).unwrap(),
            graph.tensor(affine.clone()).unwrap(),
        );
        let norm = if training {
            LayerNorm::new(epsilon)
        } else {
            LayerNorm::new(epsilon).inference()
        };
        let out = graph.layer_norm(tx, ts, tb, &norm).unwrap();
        let mut y = pool.allocate_zeroed::<bf16>(ROWS * WIDTH, &stream).unwrap();
        let mut pack = VariantPack::new();
        pack.input::<bf16>(tx, &x)
            .unwrap()
            .input::<f32>(ts, &scale)
            .unwrap()
            .input::<f32>(tb, &bias)
            .unwrap();
        pack.output::<bf16>(out.y, &mut y).unwrap();
        if let (Some(tm), Some(ti)) = (out.mean, out.inv_variance) {
            pack.output::<f32>(tm, &mut mean)
                .unwrap()
                .output::<f32>(ti, &mut inv)
                .unwrap();
        }
        dnn.execute(&graph, &pack).unwrap();
        drop(pack);
        let got: Vec<f64> = y
            .to_vec::<bf16>()
            .unwrap()
            .into_iter()
            .map(|v| v.to_f64())
            .collect();
        check(&format!("y (training {training})"), &got, &want_y, 2e-2);
    }
    let read = |b: &cuda_safe::Buffer| {
        b.to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect::<Vec<_>>()
    };
    check("mean", &read(&mean), &means, 1e-3);
    check("inv variance", &read(&inv), &invs, 1e-3);

    let mut graph = Graph::new();
    let tdy = graph
        .tensor(TensorDesc::packed(DataType::BF16, &dims))
        .unwrap();
    let tx = graph
        .tensor(TensorDesc::packed(DataType::BF16, &dims))
        .unwrap();
    let ts = graph.tensor(affine).unwrap();
    let (tm, ti) = (
        graph.tensor(stats_desc.clone()).unwrap(),
        graph.tensor(stats_desc).unwrap(),
    );
    let grads = graph.layer_norm_backward(tdy, tx, ts, tm, ti).unwrap();
    let mut dx = pool.allocate_zeroed::<bf16>(ROWS * WIDTH, &stream).unwrap();
    let mut dscale = pool.allocate_zeroed::<f32>(WIDTH, &stream).unwrap();
    let mut dbias = pool.allocate_zeroed::<f32>(WIDTH, &stream).unwrap();
    let mut pack = VariantPack::new();
    pack.input::<bf16>(tdy, &dy)
        .unwrap()
        .input::<bf16>(tx, &x)
        .unwrap()
        .input::<f32>(ts, &scale)
        .unwrap();
    pack.input::<f32>(tm, &mean)
        .unwrap()
        .input::<f32>(ti, &inv)
        .unwrap();
    pack.output::<bf16>(grads.dx, &mut dx).unwrap();
    pack.output::<f32>(grads.dscale, &mut dscale)
        .unwrap()
        .output::<f32>(grads.dbias, &mut dbias)
        .unwrap();
    dnn.execute(&graph, &pack).unwrap();
    drop(pack);
    let (mut want_dx, mut want_ds, mut want_db) = (Vec::new(), vec![0.0; WIDTH], vec![0.0; WIDTH]);
    for r in 0..ROWS {
        let g: Vec<f64> = (0..WIDTH)
            .map(|j| f64::from(dys[r * WIDTH + j]) * f64::from(scales[j]))
            .collect();
        let h = &xhat[r * WIDTH..(r + 1) * WIDTH];
        let mean_g = g.iter().sum::<f64>() / WIDTH as f64;
        let mean_gh = g.iter().zip(h).map(|(a, b)| a * b).sum::<f64>() / WIDTH as f64;
        for j in 0..WIDTH {
            want_db[j] += f64::from(dys[r * WIDTH + j]);
            want_ds[j] += f64::from(dys[r * WIDTH + j]) * h[j];
            want_dx.push(invs[r] * (g[j] - mean_g - h[j] * mean_gh));
        }
    }
    let got: Vec<f64> = dx
        .to_vec::<bf16>()
        .unwrap()
        .into_iter()
        .map(|v| v.to_f64())
        .collect();
    check("dx", &got, &want_dx, 2e-2);
    check("dscale", &read(&dscale), &want_ds, 1e-3);
    check("dbias", &read(&dbias), &want_db, 1e-3);
}

fn softmax_matches_the_cpu_or_is_refused_typed() {
    let (stream, pool, mut dnn) = setup();
    let xs: Vec<f32> = exact(ROWS * WIDTH, 9)
        .into_iter()
        .map(|v| 4.0 * v)
        .collect();
    let mut graph = Graph::new();
    let tx = graph
        .tensor(TensorDesc::packed(
            DataType::F32,
            &[4, ROWS as i64 / 4, WIDTH as i64],
        ))
        .unwrap();
    let out = graph.softmax(tx, true).unwrap();
    if let Err(error) = dnn.plan(&graph) {
        let refusal = error
            .library_error::<CudnnError>()
            .map(|e| e.refusal.clone());
        assert!(
            matches!(refusal, Some(CudnnRefusal::NoEngine { .. })),
            "{error}"
        );
        assert!(error.to_string().contains("the softmax"), "{error}");
        println!(
            "cuDNN {} has no engine for the softmax graph: {error}",
            cuda_safe_libs::dnn::version().unwrap()
        );
        return;
    }
    let x = pool.allocate_from_host(&xs, &stream).unwrap();
    let mut y = pool.allocate_zeroed::<f32>(xs.len(), &stream).unwrap();
    let mut stats = pool.allocate_zeroed::<f32>(ROWS, &stream).unwrap();
    let mut pack = VariantPack::new();
    pack.input::<f32>(tx, &x)
        .unwrap()
        .output::<f32>(out.y, &mut y)
        .unwrap();
    pack.output::<f32>(out.stats.unwrap(), &mut stats).unwrap();
    dnn.execute(&graph, &pack).unwrap();
    drop(pack);
    let (mut want_y, mut want_s) = (Vec::new(), Vec::new());
    for row in xs.chunks(WIDTH) {
        let max = row.iter().copied().fold(f32::MIN, f32::max);
        let exps: Vec<f64> = row.iter().map(|&v| f64::from(v - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        want_y.extend(exps.iter().map(|e| e / sum));
        want_s.push(f64::from(max) + sum.ln());
    }
    let read = |b: &cuda_safe::Buffer| {
        b.to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect::<Vec<_>>()
    };
    check("softmax", &read(&y), &want_y, 1e-3);
    check("stats", &read(&stats), &want_s, 1e-3);
}

pub(crate) const FILE: GpuFile = gpu_file![
    layer_norm_forward_and_backward_match_the_cpu,
    softmax_matches_the_cpu_or_is_refused_typed,
];
