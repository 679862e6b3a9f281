//! cuDNN's graph API on a real GPU (feature `dnn`): convolutions forward, backward data and
//! backward filter (NCHW and NHWC; f32 with TF32 allowed, f16, bf16; groups, strides, dilation,
//! padding), the forward with a fused bias and relu, and a matmul with a fused bias, against
//! references computed on the CPU in f64 from the inputs as the GPU holds them; a captured
//! execution replayed on new inputs; the plan cache and an engine chosen by index. Tolerance,
//! per output: `tol * (sum of |terms| + 1)`, tol 5e-3 for f32 (TF32's 10-bit mantissa), 1e-2 for
//! f16 and 4e-2 for bf16 (the output's rounding dominates).

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{CaptureMode, Device, DeviceMemoryResource, Graph as CudaGraph, Stream};
use cuda_safe_libs::dnn::{
    Convolution, DataType, Dnn, DnnElement, EngineChoice, Graph, Pointwise, TensorDesc, VariantPack,
};
use half::{bf16, f16};

struct Setup {
    stream: Stream,
    pool: DeviceMemoryResource,
}

fn setup() -> Setup {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    Setup { stream, pool }
}

/// An element type of the tests, with its conversions and tolerance.
trait El: DnnElement {
    const TOL: f64;
    fn of(value: f32) -> Self;
    fn get(self) -> f64;
}

impl El for f32 {
    const TOL: f64 = 5e-3;
    fn of(value: f32) -> Self {
        value
    }
    fn get(self) -> f64 {
        f64::from(self)
    }
}

impl El for f16 {
    const TOL: f64 = 1e-2;
    fn of(value: f32) -> Self {
        f16::from_f32(value)
    }
    fn get(self) -> f64 {
        f64::from(self.to_f32())
    }
}

impl El for bf16 {
    const TOL: f64 = 4e-2;
    fn of(value: f32) -> Self {
        bf16::from_f32(value)
    }
    fn get(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// `n` values in [-1, 1) from `seed` (xorshift), as `T`.
fn random<T: El>(n: usize, mut seed: u64) -> Vec<T> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            T::of(((seed >> 11) as f64 / (1u64 << 52) as f64 - 1.0) as f32)
        })
        .collect()
}

/// A convolution problem: dims in cuDNN's order (N, C, H, W; K, C / G, R, S).
#[derive(Clone, Copy, Debug)]
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
        x: [2, 16, 12, 10],
        w: [8, 16, 3, 3],
        pad: [1, 1],
        stride: [1, 1],
        dilation: [1, 1],
        groups: 1,
        nhwc: true,
    },
    Problem {
        x: [1, 8, 11, 9],
        w: [16, 4, 3, 3],
        pad: [2, 1],
        stride: [2, 1],
        dilation: [2, 1],
        groups: 2,
        nhwc: false,
    },
    Problem {
        x: [4, 32, 7, 7],
        w: [16, 32, 1, 1],
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

    fn desc(&self, data_type: DataType, dims: [i64; 4]) -> TensorDesc {
        if self.nhwc {
            TensorDesc::nhwc(data_type, dims)
        } else {
            TensorDesc::nchw(data_type, dims)
        }
    }

    fn y(&self) -> [i64; 4] {
        let out = self.conv().output_dims(&self.x[2..], &self.w[2..]).unwrap();
        [self.x[0], self.w[0], out[0], out[1]]
    }

    /// Every (x, w, y) memory offset triple the convolution sums over.
    fn terms(&self) -> Vec<(usize, usize, usize)> {
        let t = DataType::F32;
        let (xd, wd, yd) = (
            self.desc(t, self.x),
            self.desc(t, self.w),
            self.desc(t, self.y()),
        );
        let at = |desc: &TensorDesc, i: [i64; 4]| -> usize {
            i.iter()
                .zip(desc.strides())
                .map(|(a, s)| a * s)
                .sum::<i64>() as usize
        };
        let ([_, _, h, w], [k, cg, r, s], [n, _, p, q]) = (self.x, self.w, self.y());
        let per = k / self.groups;
        let mut terms = Vec::new();
        for ni in 0..n {
            for ki in 0..k {
                for pi in 0..p {
                    for qi in 0..q {
                        for ci in 0..cg {
                            for ri in 0..r {
                                for si in 0..s {
                                    let hi =
                                        pi * self.stride[0] - self.pad[0] + ri * self.dilation[0];
                                    let wi =
                                        qi * self.stride[1] - self.pad[1] + si * self.dilation[1];
                                    if hi < 0 || hi >= h || wi < 0 || wi >= w {
                                        continue;
                                    }
                                    terms.push((
                                        at(&xd, [ni, ki / per * cg + ci, hi, wi]),
                                        at(&wd, [ki, ci, ri, si]),
                                        at(&yd, [ni, ki, pi, qi]),
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
        terms
    }
}

fn len(dims: [i64; 4]) -> usize {
    dims.iter().product::<i64>() as usize
}

/// Checks `got` against `want` within `tol * (scale + 1)` per element.
fn check<T: El>(what: &str, got: &[T], want: &[f64], scale: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (index, ((g, w), s)) in got.iter().zip(want).zip(scale).enumerate() {
        let g = g.get();
        assert!(
            (g - w).abs() <= T::TOL * (s + 1.0),
            "{what}: element {index}: got {g}, want {w}"
        );
    }
}

fn data_type<T: El>() -> DataType {
    T::DATA_TYPE
}

/// Forward, backward data and backward filter of every problem in `T`.
fn convolutions<T: El>() {
    let s = setup();
    let mut dnn = Dnn::new(&s.stream).unwrap();
    let t = data_type::<T>();
    for (index, p) in PROBLEMS.iter().enumerate() {
        let what = format!("{t} problem {index} {p:?}");
        let (xs, ws, dys) = (
            random::<T>(len(p.x), 3 + index as u64),
            random::<T>(len(p.w), 5),
            random::<T>(len(p.y()), 7),
        );
        let (x, w, dy) = (
            s.pool.allocate_from_host(&xs, &s.stream).unwrap(),
            s.pool.allocate_from_host(&ws, &s.stream).unwrap(),
            s.pool.allocate_from_host(&dys, &s.stream).unwrap(),
        );
        let terms = p.terms();
        // Forward.
        let mut graph = Graph::new();
        let (xt, wt) = (
            graph.tensor(p.desc(t, p.x)).unwrap(),
            graph.tensor(p.desc(t, p.w)).unwrap(),
        );
        let yt = graph.conv_forward(xt, wt, &p.conv()).unwrap();
        graph.output(yt, t).unwrap();
        let mut y = s.pool.allocate_zeroed::<T>(len(p.y()), &s.stream).unwrap();
        let mut pack = VariantPack::new();
        pack.input::<T>(xt, &x).unwrap().input::<T>(wt, &w).unwrap();
        pack.output::<T>(yt, &mut y).unwrap();
        dnn.execute(&graph, &pack).unwrap();
        drop(pack);
        let (mut want, mut scale) = (vec![0.0; len(p.y())], vec![0.0; len(p.y())]);
        for &(xi, wi, yi) in &terms {
            let term = xs[xi].get() * ws[wi].get();
            want[yi] += term;
            scale[yi] += term.abs();
        }
        check(
            &format!("{what} forward"),
            &y.to_vec::<T>().unwrap(),
            &want,
            &scale,
        );
        // Backward data.
        let mut graph = Graph::new();
        let (dyt, wt) = (
            graph.tensor(p.desc(t, p.y())).unwrap(),
            graph.tensor(p.desc(t, p.w)).unwrap(),
        );
        let dxt = graph.conv_backward_data(dyt, wt, &p.conv(), &p.x).unwrap();
        graph.output(dxt, t).unwrap();
        let mut dx = s.pool.allocate_zeroed::<T>(len(p.x), &s.stream).unwrap();
        let mut pack = VariantPack::new();
        pack.input::<T>(dyt, &dy)
            .unwrap()
            .input::<T>(wt, &w)
            .unwrap();
        pack.output::<T>(dxt, &mut dx).unwrap();
        dnn.execute(&graph, &pack).unwrap();
        drop(pack);
        let (mut want, mut scale) = (vec![0.0; len(p.x)], vec![0.0; len(p.x)]);
        for &(xi, wi, yi) in &terms {
            let term = dys[yi].get() * ws[wi].get();
            want[xi] += term;
            scale[xi] += term.abs();
        }
        check(
            &format!("{what} backward data"),
            &dx.to_vec::<T>().unwrap(),
            &want,
            &scale,
        );
        // Backward filter.
        let mut graph = Graph::new();
        let (xt, dyt) = (
            graph.tensor(p.desc(t, p.x)).unwrap(),
            graph.tensor(p.desc(t, p.y())).unwrap(),
        );
        let dwt = graph
            .conv_backward_filter(xt, dyt, &p.conv(), &p.w)
            .unwrap();
        graph.output(dwt, t).unwrap();
        let mut dw = s.pool.allocate_zeroed::<T>(len(p.w), &s.stream).unwrap();
        let mut pack = VariantPack::new();
        pack.input::<T>(xt, &x)
            .unwrap()
            .input::<T>(dyt, &dy)
            .unwrap();
        pack.output::<T>(dwt, &mut dw).unwrap();
        dnn.execute(&graph, &pack).unwrap();
        drop(pack);
        let (mut want, mut scale) = (vec![0.0; len(p.w)], vec![0.0; len(p.w)]);
        for &(xi, wi, yi) in &terms {
            let term = xs[xi].get() * dys[yi].get();
            want[wi] += term;
            scale[wi] += term.abs();
        }
        check(
            &format!("{what} backward filter"),
            &dw.to_vec::<T>().unwrap(),
            &want,
            &scale,
        );
    }
    println!(
        "cuDNN {}: {} plans cached",
        cuda_safe_libs::dnn::version().unwrap(),
        dnn.cached()
    );
}

fn convolutions_in_f32_match_the_cpu() {
    convolutions::<f32>();
}

fn convolutions_in_f16_match_the_cpu() {
    convolutions::<f16>();
}

fn convolutions_in_bf16_match_the_cpu() {
    convolutions::<bf16>();
}

/// relu(conv(x, w) + bias), NHWC, one fused plan.
fn fused<T: El>(s: &Setup, dnn: &mut Dnn, p: &Problem, seed: u64) -> (Graph, Vec<f64>, Vec<T>) {
    let t = data_type::<T>();
    let mut graph = Graph::new();
    let xt = graph.tensor(p.desc(t, p.x)).unwrap();
    let wt = graph.tensor(p.desc(t, p.w)).unwrap();
    let bt = graph.tensor(p.desc(t, [1, p.w[0], 1, 1])).unwrap();
    let conv = graph.conv_forward(xt, wt, &p.conv()).unwrap();
    let biased = graph.pointwise(Pointwise::Add, conv, Some(bt)).unwrap();
    let yt = graph.pointwise(Pointwise::Relu, biased, None).unwrap();
    graph.output(yt, t).unwrap();
    let (xs, ws, bs) = (
        random::<T>(len(p.x), seed),
        random::<T>(len(p.w), seed + 1),
        random::<T>(p.w[0] as usize, seed + 2),
    );
    let (x, w, b) = (
        s.pool.allocate_from_host(&xs, &s.stream).unwrap(),
        s.pool.allocate_from_host(&ws, &s.stream).unwrap(),
        s.pool.allocate_from_host(&bs, &s.stream).unwrap(),
    );
    let mut y = s.pool.allocate_zeroed::<T>(len(p.y()), &s.stream).unwrap();
    let mut pack = VariantPack::new();
    pack.input::<T>(xt, &x)
        .unwrap()
        .input::<T>(wt, &w)
        .unwrap()
        .input::<T>(bt, &b)
        .unwrap();
    pack.output::<T>(yt, &mut y).unwrap();
    dnn.execute(&graph, &pack).unwrap();
    drop(pack);
    let (mut want, mut scale) = (vec![0.0; len(p.y())], vec![0.0; len(p.y())]);
    for (xi, wi, yi) in p.terms() {
        let term = xs[xi].get() * ws[wi].get();
        want[yi] += term;
        scale[yi] += term.abs();
    }
    for (at, value) in want.iter_mut().enumerate() {
        *value = (*value + bs[at % p.w[0] as usize].get()).max(0.0);
    }
    let got = y.to_vec::<T>().unwrap();
    check(&format!("fused {p:?}"), &got, &want, &scale);
    (graph, want, got)
}

fn a_fused_bias_and_relu_match_the_cpu_and_an_engine_is_chosen_by_index() {
    let s = setup();
    let mut dnn = Dnn::new(&s.stream).unwrap();
    for p in [PROBLEMS[0], PROBLEMS[2]] {
        fused::<f16>(&s, &mut dnn, &p, 11);
        let (graph, _, _) = fused::<bf16>(&s, &mut dnn, &p, 13);
        let plan = dnn.plan(&graph).unwrap();
        println!(
            "fused {p:?}: engine configuration {} (fallback: {}), {} bytes of workspace",
            plan.config_index(),
            plan.is_fallback(),
            plan.workspace_size()
        );
        let first = dnn.set_engine(&graph, EngineChoice::Config(0));
        println!(
            "configuration 0: {:?}",
            first.map(|plan| plan.workspace_size())
        );
    }
}

fn a_matmul_with_a_fused_bias_matches_the_cpu() {
    let s = setup();
    let mut dnn = Dnn::new(&s.stream).unwrap();
    let (batch, m, k, n) = (3usize, 64usize, 128usize, 32usize);
    let t = DataType::F16;
    let mut graph = Graph::new();
    let at = graph
        .tensor(TensorDesc::packed(t, &[batch as i64, m as i64, k as i64]))
        .unwrap();
    let bt = graph
        .tensor(TensorDesc::packed(t, &[batch as i64, k as i64, n as i64]))
        .unwrap();
    let biast = graph
        .tensor(TensorDesc::packed(t, &[1, 1, n as i64]))
        .unwrap();
    let ct = graph.matmul(at, bt, DataType::F32).unwrap();
    let yt = graph.pointwise(Pointwise::Add, ct, Some(biast)).unwrap();
    graph.output(yt, t).unwrap();
    let (av, bv, biasv) = (
        random::<f16>(batch * m * k, 21),
        random::<f16>(batch * k * n, 22),
        random::<f16>(n, 23),
    );
    let (a, b, bias) = (
        s.pool.allocate_from_host(&av, &s.stream).unwrap(),
        s.pool.allocate_from_host(&bv, &s.stream).unwrap(),
        s.pool.allocate_from_host(&biasv, &s.stream).unwrap(),
    );
    let mut y = s
        .pool
        .allocate_zeroed::<f16>(batch * m * n, &s.stream)
        .unwrap();
    let mut pack = VariantPack::new();
    pack.input::<f16>(at, &a)
        .unwrap()
        .input::<f16>(bt, &b)
        .unwrap();
    pack.input::<f16>(biast, &bias)
        .unwrap()
        .output::<f16>(yt, &mut y)
        .unwrap();
    dnn.execute(&graph, &pack).unwrap();
    drop(pack);
    let (mut want, mut scale) = (vec![0.0; batch * m * n], vec![0.0; batch * m * n]);
    for (i, (w, s)) in want.iter_mut().zip(&mut scale).enumerate() {
        let (bi, row, col) = (i / (m * n), i / n % m, i % n);
        for j in 0..k {
            let term = av[(bi * m + row) * k + j].get() * bv[(bi * k + j) * n + col].get();
            *w += term;
            *s += term.abs();
        }
        *w += biasv[col].get();
    }
    check("matmul", &y.to_vec::<f16>().unwrap(), &want, &scale);
}

fn a_captured_execution_replays_on_new_inputs() {
    let s = setup();
    let mut dnn = Dnn::new(&s.stream).unwrap();
    let p = PROBLEMS[0];
    let t = DataType::F32;
    let mut graph = Graph::new();
    let xt = graph.tensor(p.desc(t, p.x)).unwrap();
    let wt = graph.tensor(p.desc(t, p.w)).unwrap();
    let yt = graph.conv_forward(xt, wt, &p.conv()).unwrap();
    graph.output(yt, t).unwrap();
    dnn.plan(&graph).unwrap();
    let mut x = s.pool.allocate_zeroed::<f32>(len(p.x), &s.stream).unwrap();
    let ws = random::<f32>(len(p.w), 31);
    let w = s.pool.allocate_from_host(&ws, &s.stream).unwrap();
    let mut y = s
        .pool
        .allocate_zeroed::<f32>(len(p.y()), &s.stream)
        .unwrap();
    // SAFETY: the buffers and the handle outlive the graph and its executable (dropped at the
    // end of this function, after the stream is synchronized).
    let captured = unsafe {
        CudaGraph::capture(&s.stream, CaptureMode::ThreadLocal, |_| {
            let mut pack = VariantPack::new();
            pack.input::<f32>(xt, &x)?
                .input::<f32>(wt, &w)?
                .output::<f32>(yt, &mut y)?;
            dnn.execute(&graph, &pack)
        })
    }
    .unwrap();
    let exec = captured.instantiate().unwrap();
    let xs = random::<f32>(len(p.x), 37);
    x.copy_from_host(&xs).unwrap();
    exec.launch(&s.stream).unwrap();
    s.stream.sync().unwrap();
    let (mut want, mut scale) = (vec![0.0; len(p.y())], vec![0.0; len(p.y())]);
    for (xi, wi, yi) in p.terms() {
        let term = f64::from(xs[xi]) * f64::from(ws[wi]);
        want[yi] += term;
        scale[yi] += term.abs();
    }
    check("replayed", &y.to_vec::<f32>().unwrap(), &want, &scale);
}

pub(crate) const FILE: GpuFile = gpu_file![
    convolutions_in_f32_match_the_cpu,
    convolutions_in_f16_match_the_cpu,
    convolutions_in_bf16_match_the_cpu,
    a_fused_bias_and_relu_match_the_cpu_and_an_engine_is_chosen_by_index,
    a_matmul_with_a_fused_bias_matches_the_cpu,
    a_captured_execution_replays_on_new_inputs,
];
