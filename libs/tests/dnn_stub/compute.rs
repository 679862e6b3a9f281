//! Results: the stub's convolutions (forward, backward data, backward filter; NCHW and NHWC;
//! groups, strides, dilation, padding), the fused bias and activation, and a matmul, against
//! references computed here.

use cuda_safe_libs::dnn::{
    Convolution, DataType, Dnn, Graph, Pointwise, Tensor, TensorDesc, VariantPack,
};

use super::{Case, CaseFn, data, ensure, err};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "a convolution forward with fused bias and relu matches the reference",
        forward_fused,
    ),
    ("the backward passes match the reference", backward),
    ("a matmul with a bias matches the reference", matmul),
];

/// One convolution problem: dims in cuDNN's order (N, C, H, W; K, C / G, R, S).
#[derive(Clone, Copy)]
struct Problem {
    x: [i64; 4],
    w: [i64; 4],
    pad: [i64; 2],
    stride: [i64; 2],
    dilation: [i64; 2],
    groups: i64,
    nhwc: bool,
}

const PROBLEMS: [Problem; 3] = [
    Problem {
        x: [2, 4, 7, 6],
        w: [6, 4, 3, 3],
        pad: [1, 1],
        stride: [1, 1],
        dilation: [1, 1],
        groups: 1,
        nhwc: false,
    },
    Problem {
        x: [1, 4, 9, 8],
        w: [4, 2, 3, 2],
        pad: [2, 0],
        stride: [2, 1],
        dilation: [2, 1],
        groups: 2,
        nhwc: true,
    },
    Problem {
        x: [3, 8, 5, 5],
        w: [4, 8, 1, 1],
        pad: [0, 0],
        stride: [1, 1],
        dilation: [1, 1],
        groups: 1,
        nhwc: true,
    },
];

impl Problem {
    fn conv(&self) -> Convolution {
        Convolution::new(2)
            .padding(self.pad)
            .stride(self.stride)
            .dilation(self.dilation)
            .groups(self.groups)
    }

    fn desc(&self, dims: [i64; 4]) -> TensorDesc {
        if self.nhwc {
            TensorDesc::nhwc(DataType::F32, dims)
        } else {
            TensorDesc::nchw(DataType::F32, dims)
        }
    }

    fn y(&self) -> [i64; 4] {
        let spatial = self
            .conv()
            .output_dims(&self.x[2..], &self.w[2..])
            .expect("a valid problem");
        [self.x[0], self.w[0], spatial[0], spatial[1]]
    }

    /// Every (x, w, y) element index triple a convolution sums over, as memory offsets.
    fn terms(&self) -> Vec<(usize, usize, usize)> {
        let (xd, wd, yd) = (self.desc(self.x), self.desc(self.w), self.desc(self.y()));
        let at = |desc: &TensorDesc, i: [i64; 4]| -> usize {
            i.iter()
                .zip(desc.strides())
                .map(|(a, s)| a * s)
                .sum::<i64>() as usize
        };
        let [_, c, h, w] = self.x;
        let [k, cg, r, s] = self.w;
        let [n, _, p, q] = self.y();
        let per = k / self.groups;
        let mut terms = Vec::new();
        for (ni, ki, pi, qi, ci, ri, si) in itertools(n, k, p, q, cg, r, s) {
            let hi = pi * self.stride[0] - self.pad[0] + ri * self.dilation[0];
            let wi = qi * self.stride[1] - self.pad[1] + si * self.dilation[1];
            if hi < 0 || hi >= h || wi < 0 || wi >= w {
                continue;
            }
            let channel = ki / per * cg + ci;
            debug_assert!(channel < c);
            terms.push((
                at(&xd, [ni, channel, hi, wi]),
                at(&wd, [ki, ci, ri, si]),
                at(&yd, [ni, ki, pi, qi]),
            ));
        }
        terms
    }
}

/// Every index of a 7-deep loop nest.
fn itertools(
    n: i64,
    k: i64,
    p: i64,
    q: i64,
    c: i64,
    r: i64,
    s: i64,
) -> impl Iterator<Item = (i64, i64, i64, i64, i64, i64, i64)> {
    (0..n).flat_map(move |a| {
        (0..k).flat_map(move |b| {
            (0..p).flat_map(move |d| {
                (0..q).flat_map(move |e| {
                    (0..c).flat_map(move |f| {
                        (0..r).flat_map(move |g| (0..s).map(move |h| (a, b, d, e, f, g, h)))
                    })
                })
            })
        })
    })
}

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

fn len(dims: [i64; 4]) -> usize {
    dims.iter().product::<i64>() as usize
}

fn forward_fused(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    for (index, problem) in PROBLEMS.iter().enumerate() {
        let mut graph = Graph::new();
        let x = graph.tensor(problem.desc(problem.x)).map_err(err)?;
        let w = graph.tensor(problem.desc(problem.w)).map_err(err)?;
        let b = graph
            .tensor(problem.desc([1, problem.w[0], 1, 1]))
            .map_err(err)?;
        let conv = graph.conv_forward(x, w, &problem.conv()).map_err(err)?;
        let biased = graph
            .pointwise(Pointwise::Add, conv, Some(b))
            .map_err(err)?;
        let y = graph
            .pointwise(Pointwise::Relu, biased, None)
            .map_err(err)?;
        graph.output(y, DataType::F32).map_err(err)?;
        let (xs, ws, bs) = (
            data(len(problem.x), 1 + index as u64),
            data(len(problem.w), 7),
            data(problem.w[0] as usize, 3),
        );
        let mut want = vec![0.0f64; len(problem.y())];
        for (xi, wi, yi) in problem.terms() {
            want[yi] += f64::from(xs[xi]) * f64::from(ws[wi]);
        }
        let yd = problem.desc(problem.y());
        for (at, value) in want.iter_mut().enumerate() {
            let channel = (at as i64 / yd.strides()[1]) % problem.w[0];
            *value = (*value + f64::from(bs[channel as usize])).max(0.0);
        }
        let mut got = run(
            case,
            &mut dnn,
            &graph,
            [(x, &xs), (w, &ws), (b, &bs)],
            y,
            want.len(),
        )?;
        got.truncate(want.len());
        close(&format!("problem {index}"), &got, &want)?;
    }
    Ok(())
}

/// Runs `graph` with `inputs` and returns the output tensor `out`'s `len` values.
fn run<const N: usize>(
    case: &Case,
    dnn: &mut Dnn,
    graph: &Graph,
    inputs: [(Tensor, &[f32]); N],
    out: Tensor,
    len: usize,
) -> Result<Vec<f32>, String> {
    let buffers = inputs
        .iter()
        .map(|(_, values)| case.pool.allocate_from_host(values, &case.stream))
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<f32>(len, &case.stream)
        .map_err(err)?;
    let mut pack = VariantPack::new();
    for ((tensor, _), buffer) in inputs.iter().zip(&buffers) {
        pack.input::<f32>(*tensor, buffer).map_err(err)?;
    }
    pack.output::<f32>(out, &mut y).map_err(err)?;
    dnn.execute(graph, &pack).map_err(err)?;
    drop(pack);
    y.to_vec::<f32>().map_err(err)
}

fn backward(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    for (index, problem) in PROBLEMS.iter().enumerate() {
        let conv = problem.conv();
        let (xs, ws, dys) = (
            data(len(problem.x), 11 + index as u64),
            data(len(problem.w), 13),
            data(len(problem.y()), 17),
        );
        let mut graph = Graph::new();
        let dy = graph.tensor(problem.desc(problem.y())).map_err(err)?;
        let w = graph.tensor(problem.desc(problem.w)).map_err(err)?;
        let dx = graph
            .conv_backward_data(dy, w, &conv, &problem.x)
            .map_err(err)?;
        graph.output(dx, DataType::F32).map_err(err)?;
        let mut want = vec![0.0f64; len(problem.x)];
        for (xi, wi, yi) in problem.terms() {
            want[xi] += f64::from(dys[yi]) * f64::from(ws[wi]);
        }
        let got = run(
            case,
            &mut dnn,
            &graph,
            [(dy, &dys), (w, &ws)],
            dx,
            want.len(),
        )?;
        close(&format!("backward data {index}"), &got, &want)?;

        let mut graph = Graph::new();
        let x = graph.tensor(problem.desc(problem.x)).map_err(err)?;
        let dy = graph.tensor(problem.desc(problem.y())).map_err(err)?;
        let dw = graph
            .conv_backward_filter(x, dy, &conv, &problem.w)
            .map_err(err)?;
        graph.output(dw, DataType::F32).map_err(err)?;
        let mut want = vec![0.0f64; len(problem.w)];
        for (xi, wi, yi) in problem.terms() {
            want[wi] += f64::from(xs[xi]) * f64::from(dys[yi]);
        }
        let got = run(
            case,
            &mut dnn,
            &graph,
            [(x, &xs), (dy, &dys)],
            dw,
            want.len(),
        )?;
        close(&format!("backward filter {index}"), &got, &want)?;
    }
    Ok(())
}

fn matmul(case: &Case) -> Result<(), String> {
    let mut dnn = Dnn::new(&case.stream).map_err(err)?;
    let (batch, m, k, n) = (2usize, 3usize, 5usize, 4usize);
    let mut graph = Graph::new();
    let dims = |a: usize, b: usize, c: usize| [a as i64, b as i64, c as i64];
    let a = graph
        .tensor(TensorDesc::packed(DataType::F32, &dims(batch, m, k)))
        .map_err(err)?;
    let b = graph
        .tensor(TensorDesc::packed(DataType::F32, &dims(1, k, n)))
        .map_err(err)?;
    let bias = graph
        .tensor(TensorDesc::packed(DataType::F32, &dims(1, 1, n)))
        .map_err(err)?;
    let c = graph.matmul(a, b, DataType::F32).map_err(err)?;
    let y = graph
        .pointwise(Pointwise::Add, c, Some(bias))
        .map_err(err)?;
    graph.output(y, DataType::F32).map_err(err)?;
    let (av, bv, biasv) = (data(batch * m * k, 5), data(k * n, 6), data(n, 8));
    let want: Vec<f64> = (0..batch * m * n)
        .map(|i| {
            let (s, row, col) = (i / (m * n), i / n % m, i % n);
            let dot: f64 = (0..k)
                .map(|j| f64::from(av[(s * m + row) * k + j]) * f64::from(bv[j * n + col]))
                .sum();
            dot + f64::from(biasv[col])
        })
        .collect();
    let got = run(
        case,
        &mut dnn,
        &graph,
        [(a, &av), (b, &bv), (bias, &biasv)],
        y,
        want.len(),
    )?;
    close("matmul", &got, &want)
}
