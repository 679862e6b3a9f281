//! Layer norms (forward in training and inference, backward) and the softmax on the stub,
//! against references computed here; their builders' refusals.

use cuda_safe::Error;
use cuda_safe_libs::dnn::{DataType, Dnn, Graph, LayerNorm, Storage, TensorDesc, VariantPack};

use super::{Case, CaseFn, data, ensure, err};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "a layer norm forward and backward match the reference",
        layer_norm_matches,
    ),
    (
        "a softmax and its statistics match the reference",
        softmax_matches,
    ),
    (
        "the normalization builders refuse what cuDNN cannot take",
        builders_refuse,
    ),
];

const ROWS: usize = 6;
const WIDTH: usize = 10;

fn close(what: &str, got: &[f32], want: &[f64]) -> Result<(), String> {
    ensure(got.len() == want.len(), || {
        format!("{what}: lengths differ")
    })?;
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        ensure((f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()), || {
            format!("{what}: element {index}: got {g}, want {w}")
        })?;
    }
    Ok(())
}

/// The reference forward: y, the means and the inverse standard deviations.
fn forward(x: &[f32], scale: &[f32], bias: &[f32], epsilon: f64) -> [Vec<f64>; 3] {
    let (mut y, mut means, mut invs) = (Vec::new(), Vec::new(), Vec::new());
    for row in x.chunks(WIDTH) {
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / WIDTH as f64;
        let var = row
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / WIDTH as f64;
        let inv = 1.0 / (var + epsilon).sqrt();
        for (j, &v) in row.iter().enumerate() {
            y.push((f64::from(v) - mean) * inv * f64::from(scale[j]) + f64::from(bias[j]));
        }
        means.push(mean);
        invs.push(inv);
    }
    [y, means, invs]
}

/// The reference backward: dx, dscale and dbias, by the chain rule through the statistics.
fn backward(x: &[f32], dy: &[f32], scale: &[f32], stats: &[Vec<f64>; 2]) -> [Vec<f64>; 3] {
    let (mut dx, mut dscale, mut dbias) = (Vec::new(), vec![0.0; WIDTH], vec![0.0; WIDTH]);
    for (r, (row, drow)) in x.chunks(WIDTH).zip(dy.chunks(WIDTH)).enumerate() {
        let (mean, inv) = (stats[0][r], stats[1][r]);
        let xhat: Vec<f64> = row.iter().map(|&v| (f64::from(v) - mean) * inv).collect();
        let g: Vec<f64> = (0..WIDTH)
            .map(|j| f64::from(drow[j]) * f64::from(scale[j]))
            .collect();
        let mean_g = g.iter().sum::<f64>() / WIDTH as f64;
        let mean_gx = g.iter().zip(&xhat).map(|(a, b)| a * b).sum::<f64>() / WIDTH as f64;
        for j in 0..WIDTH {
            dbias[j] += f64::from(drow[j]);
            dscale[j] += f64::from(drow[j]) * xhat[j];
            dx.push(inv * (g[j] - mean_g - xhat[j] * mean_gx));
        }
    }
    [dx, dscale, dbias]
}

fn layer_norm_matches(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let (xs, scales, biases, dys) = (
        data(ROWS * WIDTH, 31),
        data(WIDTH, 32),
        data(WIDTH, 33),
        data(ROWS * WIDTH, 34),
    );
    let upload = |values: &[f32]| case.pool.allocate_from_host(values, &case.stream);
    let zeroed = |len: usize| case.pool.allocate_zeroed::<f32>(len, &case.stream);
    let (x, scale, bias, dy) = (
        upload(&xs).map_err(err)?,
        upload(&scales).map_err(err)?,
        upload(&biases).map_err(err)?,
        upload(&dys).map_err(err)?,
    );
    let epsilon = 1e-3;
    let want = forward(&xs, &scales, &biases, f64::from(epsilon));
    for training in [true, false] {
        let mut graph = Graph::new();
        let dims = [ROWS as i64, WIDTH as i64, 1, 1];
        let tx = graph
            .tensor(TensorDesc::packed(DataType::F32, &dims))
            .map_err(err)?;
        let affine = TensorDesc::packed(DataType::F32, &[1, WIDTH as i64, 1, 1]);
        let ts = graph.tensor(affine.clone()).map_err(err)?;
        let tb = graph.tensor(affine).map_err(err)?;
        let norm = LayerNorm::new(epsilon);
        let norm = if training { norm } else { norm.inference() };
        let out = graph.layer_norm(tx, ts, tb, &norm).map_err(err)?;
        ensure(out.mean.is_some() == training, || format!("{out:?}"))?;
        let (mut y, mut mean, mut inv) = (
            zeroed(ROWS * WIDTH).map_err(err)?,
            zeroed(ROWS).map_err(err)?,
            zeroed(ROWS).map_err(err)?,
        );
        let mut pack = VariantPack::new();
        pack.input::<f32>(tx, &x).map_err(err)?;
        pack.input::<f32>(ts, &scale).map_err(err)?;
        pack.input::<f32>(tb, &bias).map_err(err)?;
        pack.output::<f32>(out.y, &mut y).map_err(err)?;
        if let (Some(tm), Some(ti)) = (out.mean, out.inv_variance) {
            pack.output::<f32>(tm, &mut mean).map_err(err)?;
            pack.output::<f32>(ti, &mut inv).map_err(err)?;
        }
        dnn.execute(&graph, &pack).map_err(err)?;
        drop(pack);
        close("y", &y.to_vec::<f32>().map_err(err)?, &want[0])?;
        if !training {
            continue;
        }
        close("mean", &mean.to_vec::<f32>().map_err(err)?, &want[1])?;
        close("inv variance", &inv.to_vec::<f32>().map_err(err)?, &want[2])?;
        let mut graph = Graph::new();
        let tdy = graph
            .tensor(TensorDesc::packed(DataType::F32, &dims))
            .map_err(err)?;
        let tx = graph
            .tensor(TensorDesc::packed(DataType::F32, &dims))
            .map_err(err)?;
        let ts = graph
            .tensor(TensorDesc::packed(DataType::F32, &[1, WIDTH as i64, 1, 1]))
            .map_err(err)?;
        let stats = TensorDesc::packed(DataType::F32, &[ROWS as i64, 1, 1, 1]);
        let tm = graph.tensor(stats.clone()).map_err(err)?;
        let ti = graph.tensor(stats).map_err(err)?;
        let grads = graph
            .layer_norm_backward(tdy, tx, ts, tm, ti)
            .map_err(err)?;
        let (mut dx, mut dscale, mut dbias) = (
            zeroed(ROWS * WIDTH).map_err(err)?,
            zeroed(WIDTH).map_err(err)?,
            zeroed(WIDTH).map_err(err)?,
        );
        let mut pack = VariantPack::new();
        pack.input::<f32>(tdy, &dy).map_err(err)?;
        pack.input::<f32>(tx, &x).map_err(err)?;
        pack.input::<f32>(ts, &scale).map_err(err)?;
        pack.input::<f32>(tm, &mean).map_err(err)?;
        pack.input::<f32>(ti, &inv).map_err(err)?;
        pack.output::<f32>(grads.dx, &mut dx).map_err(err)?;
        pack.output::<f32>(grads.dscale, &mut dscale).map_err(err)?;
        pack.output::<f32>(grads.dbias, &mut dbias).map_err(err)?;
        dnn.execute(&graph, &pack).map_err(err)?;
        drop(pack);
        let saved = [
            mean.to_vec::<f32>()
                .map_err(err)?
                .into_iter()
                .map(f64::from)
                .collect(),
            inv.to_vec::<f32>()
                .map_err(err)?
                .into_iter()
                .map(f64::from)
                .collect(),
        ];
        let want = backward(&xs, &dys, &scales, &saved);
        close("dx", &dx.to_vec::<f32>().map_err(err)?, &want[0])?;
        close("dscale", &dscale.to_vec::<f32>().map_err(err)?, &want[1])?;
        close("dbias", &dbias.to_vec::<f32>().map_err(err)?, &want[2])?;
    }
    Ok(())
}

fn softmax_matches(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let xs: Vec<f32> = data(ROWS * WIDTH, 41)
        .into_iter()
        .map(|v| 8.0 * v)
        .collect();
    let mut graph = Graph::new();
    let tx = graph
        .tensor(TensorDesc::packed(DataType::F32, &[2, 3, WIDTH as i64]))
        .map_err(err)?;
    let out = graph.softmax(tx, true).map_err(err)?;
    let stats = out.stats.ok_or("no statistics")?;
    ensure(graph.desc(stats).map_err(err)?.dims() == [2, 3, 1], || {
        "stats dims".into()
    })?;
    let x = case
        .pool
        .allocate_from_host(&xs, &case.stream)
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<f32>(xs.len(), &case.stream)
        .map_err(err)?;
    let mut s = case
        .pool
        .allocate_zeroed::<f32>(ROWS, &case.stream)
        .map_err(err)?;
    let mut pack = VariantPack::new();
    pack.input::<f32>(tx, &x).map_err(err)?;
    pack.output::<f32>(out.y, &mut y).map_err(err)?;
    pack.output::<f32>(stats, &mut s).map_err(err)?;
    dnn.execute(&graph, &pack).map_err(err)?;
    drop(pack);
    let (mut want_y, mut want_s) = (Vec::new(), Vec::new());
    for row in xs.chunks(WIDTH) {
        let max = row.iter().copied().fold(f32::MIN, f32::max);
        let exps: Vec<f64> = row.iter().map(|&v| f64::from(v - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        want_y.extend(exps.iter().map(|e| e / sum));
        want_s.push(f64::from(max) + sum.ln());
    }
    close("softmax", &y.to_vec::<f32>().map_err(err)?, &want_y)?;
    close("stats", &s.to_vec::<f32>().map_err(err)?, &want_s)
}

fn invalid(result: Result<impl std::fmt::Debug, Error>, what: &str) -> Result<(), String> {
    match result {
        Err(Error::InvalidArgument(_)) => Ok(()),
        other => Err(format!("{what}: {other:?}")),
    }
}

fn builders_refuse(case: &Case) -> Result<(), String> {
    case.stub.take_log();
    let mut graph = Graph::new();
    let f32 = DataType::F32;
    let x = graph
        .tensor(TensorDesc::packed(f32, &[4, 8, 1, 1]))
        .map_err(err)?;
    let good = graph
        .tensor(TensorDesc::packed(f32, &[1, 8, 1, 1]))
        .map_err(err)?;
    let wide = graph
        .tensor(TensorDesc::packed(f32, &[1, 9, 1, 1]))
        .map_err(err)?;
    let ints = graph
        .tensor(TensorDesc::packed(DataType::I32, &[1, 8, 1, 1]))
        .map_err(err)?;
    let norm = LayerNorm::new(1e-5);
    invalid(
        graph.layer_norm(x, wide, good, &norm),
        "a scale of other dims",
    )?;
    invalid(graph.layer_norm(x, good, ints, &norm), "an integer bias")?;
    invalid(
        graph.layer_norm(x, good, good, &LayerNorm::new(0.0)),
        "epsilon 0",
    )?;
    invalid(
        graph.layer_norm(x, good, good, &LayerNorm::new(f32::NAN)),
        "epsilon NaN",
    )?;
    let vector = graph.tensor(TensorDesc::packed(f32, &[8])).map_err(err)?;
    invalid(graph.layer_norm(vector, good, good, &norm), "a 1-D input")?;
    let stats = graph
        .tensor(TensorDesc::packed(f32, &[4, 1, 1, 1]))
        .map_err(err)?;
    invalid(
        graph.layer_norm_backward(x, x, good, stats, wide),
        "statistics of other dims",
    )?;
    invalid(graph.softmax(ints, false), "an integer softmax")?;
    let scalar = graph.tensor(TensorDesc::scalar(cuda_safe_libs::dnn::Scalar::f32(1.0), 2));
    let scalar = scalar.map_err(err)?;
    ensure(
        matches!(
            graph.desc(scalar).map_err(err)?.storage(),
            Storage::ByValue(_)
        ),
        || "a scalar is by value".into(),
    )?;
    invalid(graph.output(scalar, f32), "a constant made an output")?;
    let calls = super::names(case.stub.take_log());
    ensure(calls.is_empty(), || {
        format!("the builders called {calls:?}")
    })
}
