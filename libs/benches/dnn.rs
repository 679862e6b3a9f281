//! Convolutions through `cuda_safe_libs::dnn` (cuDNN's graph API): the cuDNN rows of
//! `bench/libs_floor.c`, with its figure names, on the primary context of GPU 0 with one
//! non-blocking stream. NHWC (filters KRSC), bf16 data computed in f32, N=32, 56 x 56, stride 1:
//! a 3x3 C=K=64 convolution with padding 1 forward, backward data and backward filter, and a
//! 1x1 256 -> 64 forward. Each plan is cuDNN's heuristics' first choice (the floor's is the
//! fastest `cudnnFind*AlgorithmEx` measures). Times are CUDA events around 10 back-to-back
//! executions, median of 20 after 5, as the floor's; TFLOP/s count 2 N K P Q C R S.
//!
//! - `conv3x3_64_{fwd,bwd_data,bwd_filter}_{ms,tflops}`, `conv1x1_256_64_fwd_{ms,tflops}`;
//! - INFO lines: cuDNN's version, each plan's making (host time cold, and cached: a second
//!   `Dnn::plan` of an equal graph), its engine configuration and workspace.
//!
//! Then the graph-API rows of `bench/floors/dnn_graph_floor.c` ([`attention`]): attention
//! B=4, H=32, S=4096, D=128, causal, bf16, forward and backward, and a fused matmul, with their
//! plans' making cold and cached.
//!
//! Inputs are multiples of 1/64 in [-1, 1] (exact in bf16), so the CPU sums see what the GPU
//! sees. Checks: 16 to 64 sampled outputs of each pass against a CPU sum in f64, within
//! `1e-2 |want| + 1e-3 * (sum of |terms|)`, as the floor's. A wrong result exits non-zero.
//! Prints `INFO` lines and `FIG name value unit` lines.

#[path = "dnn/attention.rs"]
mod attention;

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{Buffer, Device, DeviceMemoryResource, Event, EventOptions, Result, Stream};
use cuda_safe_libs::dnn::{Convolution, DataType, Dnn, Graph, Tensor, TensorDesc, VariantPack};
use half::bf16;

/// The batch and the input's height and width.
const N: i64 = 32;
const HW: i64 = 56;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

/// Multiples of 1/64 in [-1, 1] from a 64-bit LCG.
fn inputs(len: usize, mut state: u64) -> Vec<f32> {
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % 129) as f32 / 64.0 - 1.0
        })
        .collect()
}

/// The median per-call time (ms) of 10 calls between two events, over 20 repetitions after 5.
fn time_ms(stream: &Stream, mut call: impl FnMut() -> Result<()>) -> Result<f64> {
    let timing = EventOptions::default().timing(true);
    let device = stream.device();
    let events = (device.create_event(timing)?, device.create_event(timing)?);
    for _ in 0..5 {
        call()?;
    }
    let mut times = Vec::with_capacity(20);
    for _ in 0..20 {
        events.0.record(stream)?;
        for _ in 0..10 {
            call()?;
        }
        events.1.record(stream)?;
        events.1.sync()?;
        times.push(Event::elapsed(&events.0, &events.1)?.as_secs_f64() * 1e3 / 10.0);
    }
    Ok(median(&mut times))
}

/// One convolution case: its channels, filter size and padding, the host data (NHWC, KRSC).
struct Case {
    name: &'static str,
    c: i64,
    k: i64,
    r: i64,
    pad: i64,
    x: Vec<f32>,
    w: Vec<f32>,
    dy: Vec<f32>,
}

impl Case {
    fn new(name: &'static str, c: i64, k: i64, r: i64, pad: i64) -> Self {
        let len = |dims: [i64; 4]| dims.iter().product::<i64>() as usize;
        Self {
            name,
            c,
            k,
            r,
            pad,
            x: inputs(len([N, c, HW, HW]), 1),
            w: inputs(len([k, c, r, r]), 2),
            dy: inputs(len([N, k, HW, HW]), 3),
        }
    }

    fn conv(&self) -> Convolution {
        Convolution::new(2).padding([self.pad, self.pad])
    }

    fn dims(&self) -> [[i64; 4]; 3] {
        [
            [N, self.c, HW, HW],
            [self.k, self.c, self.r, self.r],
            [N, self.k, HW, HW],
        ]
    }

    /// Output `e` (a linear NHWC / KRSC index) of pass `dir` (0 forward, 1 backward data, 2
    /// backward filter) by a CPU sum, and the sum of |terms|.
    fn reference(&self, dir: usize, e: usize) -> (f64, f64) {
        let (c, k, r, pad, hw) = (
            self.c as usize,
            self.k as usize,
            self.r as usize,
            self.pad,
            HW as usize,
        );
        let x = |n: usize, h: usize, w: usize, ch: usize| {
            f64::from(self.x[((n * hw + h) * hw + w) * c + ch])
        };
        let wt = |kk: usize, rr: usize, ss: usize, ch: usize| {
            f64::from(self.w[((kk * r + rr) * r + ss) * c + ch])
        };
        let dy = |n: usize, p: usize, q: usize, kk: usize| {
            f64::from(self.dy[((n * hw + p) * hw + q) * k + kk])
        };
        let inside = |v: i64| (0..HW).contains(&v).then_some(v as usize);
        let (mut acc, mut scale) = (0.0, 0.0);
        let mut add = |t: f64| {
            acc += t;
            scale += t.abs();
        };
        match dir {
            0 => {
                let (kk, q, p, n) = (e % k, e / k % hw, e / k / hw % hw, e / k / hw / hw);
                for (rr, ss) in (0..r).flat_map(|a| (0..r).map(move |b| (a, b))) {
                    let h = inside(p as i64 - pad + rr as i64);
                    let w = inside(q as i64 - pad + ss as i64);
                    if let (Some(h), Some(w)) = (h, w) {
                        (0..c).for_each(|ch| add(x(n, h, w, ch) * wt(kk, rr, ss, ch)));
                    }
                }
            }
            1 => {
                let (ch, w, h, n) = (e % c, e / c % hw, e / c / hw % hw, e / c / hw / hw);
                for (rr, ss) in (0..r).flat_map(|a| (0..r).map(move |b| (a, b))) {
                    let p = inside(h as i64 + pad - rr as i64);
                    let q = inside(w as i64 + pad - ss as i64);
                    if let (Some(p), Some(q)) = (p, q) {
                        (0..k).for_each(|kk| add(dy(n, p, q, kk) * wt(kk, rr, ss, ch)));
                    }
                }
            }
            _ => {
                let (ch, ss, rr, kk) = (e % c, e / c % r, e / c / r % r, e / c / r / r);
                for n in 0..N as usize {
                    for (p, q) in (0..hw).flat_map(|a| (0..hw).map(move |b| (a, b))) {
                        let h = inside(p as i64 - pad + rr as i64);
                        let w = inside(q as i64 - pad + ss as i64);
                        if let (Some(h), Some(w)) = (h, w) {
                            add(dy(n, p, q, kk) * x(n, h, w, ch));
                        }
                    }
                }
            }
        }
        (acc, scale)
    }
}

/// Checks `points` sampled outputs of pass `dir` in `out`.
fn check(case: &Case, dir: usize, out: &Buffer, points: usize) -> Result<bool> {
    let got = out.to_vec::<bf16>()?;
    let mut state = 7u64;
    for t in 0..points {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let e = match t {
            0 => 0,
            1 => got.len() - 1,
            _ => (state >> 17) as usize % got.len(),
        };
        let (want, scale) = case.reference(dir, e);
        let value = f64::from(got[e].to_f32());
        if (value - want).abs() > 1e-2 * want.abs() + 1e-3 * scale {
            println!(
                "FAIL {} pass {dir} output {e}: got {value}, want {want}",
                case.name
            );
            return Ok(false);
        }
    }
    println!("check {} pass {dir}, {points} points ok", case.name);
    Ok(true)
}

/// Plans `graph` (cold, then cached), reports it, times its executions on `bind`'s pack and
/// prints the figures.
fn measure(
    dnn: &mut Dnn,
    graph: &Graph,
    (case, pass): (&Case, &str),
    bind: &mut dyn FnMut(&mut Dnn) -> Result<()>,
) -> Result<()> {
    let start = Instant::now();
    let (config, workspace) = dnn
        .plan(graph)
        .map(|p| (p.config_index(), p.workspace_size()))?;
    let cold = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    dnn.plan(graph)?;
    let cached = start.elapsed().as_secs_f64() * 1e6;
    println!(
        "INFO {} {pass}: plan made in {cold:.1} ms (cached: {cached:.2} us), engine \
         configuration {config}, workspace {workspace} bytes",
        case.name
    );
    let ms = time_ms(&dnn.stream().clone(), || bind(dnn))?;
    let flops = 2.0 * (N * case.k * HW * HW * case.c * case.r * case.r) as f64;
    fig(&format!("{}_{pass}_ms", case.name), ms, "ms");
    fig(
        &format!("{}_{pass}_tflops", case.name),
        flops / (ms * 1e-3) / 1e12,
        "TFLOP/s",
    );
    Ok(())
}

fn run_case(
    dnn: &mut Dnn,
    pool: &DeviceMemoryResource,
    case: &Case,
    backward: bool,
) -> Result<bool> {
    let stream = dnn.stream().clone();
    let upload = |values: &[f32]| {
        let typed: Vec<bf16> = values.iter().copied().map(bf16::from_f32).collect();
        pool.allocate_from_host(&typed, &stream)
    };
    let (x, w, dy) = (upload(&case.x)?, upload(&case.w)?, upload(&case.dy)?);
    let [xd, wd, yd] = case
        .dims()
        .map(|dims| TensorDesc::nhwc(DataType::BF16, dims));
    let pass = |a: TensorDesc,
                b: TensorDesc,
                op: &dyn Fn(&mut Graph, Tensor, Tensor) -> Result<Tensor>|
     -> Result<(Graph, [Tensor; 3])> {
        let mut graph = Graph::new();
        let (ta, tb) = (graph.tensor(a)?, graph.tensor(b)?);
        let out = op(&mut graph, ta, tb)?;
        graph.output(out, DataType::BF16)?;
        Ok((graph, [ta, tb, out]))
    };
    let conv = case.conv();
    let mut ok = true;
    let (graph, [tx, tw, ty]) = pass(xd.clone(), wd.clone(), &|g, a, b| {
        g.conv_forward(a, b, &conv)
    })?;
    let mut y = pool.allocate_zeroed::<bf16>(case.dy.len(), &stream)?;
    measure(dnn, &graph, (case, "fwd"), &mut |dnn| {
        let mut pack = VariantPack::new();
        pack.input::<bf16>(tx, &x)?
            .input::<bf16>(tw, &w)?
            .output::<bf16>(ty, &mut y)?;
        dnn.execute(&graph, &pack)
    })?;
    ok &= check(case, 0, &y, 64)?;
    if backward {
        let (graph, [tdy, tw, tdx]) = pass(yd.clone(), wd.clone(), &|g, a, b| {
            g.conv_backward_data(a, b, &conv, xd.dims())
        })?;
        let mut dx = pool.allocate_zeroed::<bf16>(case.x.len(), &stream)?;
        measure(dnn, &graph, (case, "bwd_data"), &mut |dnn| {
            let mut pack = VariantPack::new();
            pack.input::<bf16>(tdy, &dy)?
                .input::<bf16>(tw, &w)?
                .output::<bf16>(tdx, &mut dx)?;
            dnn.execute(&graph, &pack)
        })?;
        ok &= check(case, 1, &dx, 64)?;
        let (graph, [tx, tdy, tdw]) = pass(xd.clone(), yd, &|g, a, b| {
            g.conv_backward_filter(a, b, &conv, wd.dims())
        })?;
        let mut dw = pool.allocate_zeroed::<bf16>(case.w.len(), &stream)?;
        measure(dnn, &graph, (case, "bwd_filter"), &mut |dnn| {
            let mut pack = VariantPack::new();
            pack.input::<bf16>(tx, &x)?
                .input::<bf16>(tdy, &dy)?
                .output::<bf16>(tdw, &mut dw)?;
            dnn.execute(&graph, &pack)
        })?;
        ok &= check(case, 2, &dw, 16)?;
    }
    Ok(ok)
}

fn run() -> Result<bool> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let start = Instant::now();
    let mut dnn = Dnn::new(&stream)?;
    println!(
        "INFO cudnn_version {}, handle created in {:.0} ms",
        cuda_safe_libs::dnn::version()?,
        start.elapsed().as_secs_f64() * 1e3
    );
    let mut ok = run_case(
        &mut dnn,
        &pool,
        &Case::new("conv3x3_64", 64, 64, 3, 1),
        true,
    )?;
    ok &= run_case(
        &mut dnn,
        &pool,
        &Case::new("conv1x1_256_64", 256, 64, 1, 0),
        false,
    )?;
    ok &= attention::run(&mut dnn, &pool)?;
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
