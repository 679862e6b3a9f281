//! cuFFT on a real GPU (feature `fft`): C2C, R2C and C2R in f32 and f64 (and C2C and R2C in
//! f16), 1-D to 3-D, batched, in place and in advanced layouts, against a DFT computed on the
//! CPU in f64, and round trips; a captured execution replayed on new inputs; the plan cache.
//! Tolerances, per transform of input `x`: each output within `tol * ||x||_2` of the reference
//! (f32: 1e-5, f64: 1e-12, f16: 2e-2 of inputs rounded to f16 first), as the C floor's check;
//! a round trip's relative L2 error within 1e-5 (f32) and 1e-12 (f64).

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Buffer, CaptureMode, Device, DeviceMemoryResource, Error, Graph, Stream};
use cuda_safe_libs::fft::{
    Complex32, Complex64, ComplexF16, Fft, FftDesc, FftDirection, FftLayout, FftPlan, FftReal,
    FftShape,
};
use half::f16;

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

type C = (f64, f64);

/// `n` values in [-1, 1) from `seed` (xorshift).
fn random(n: usize, mut seed: u64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn complex_random(n: usize, seed: u64) -> Vec<C> {
    let raw = random(2 * n, seed);
    raw.chunks(2).map(|pair| (pair[0], pair[1])).collect()
}

/// The DFT of `x` (row-major over `shape`) with the exponent's sign `sign`, one dimension at
/// a time, in f64.
fn dft(shape: &[usize], x: &[C], sign: f64) -> Vec<C> {
    let mut data = x.to_vec();
    let count = data.len();
    let mut inner = count;
    for &n in shape {
        inner /= n;
        let twiddles: Vec<C> = (0..n)
            .map(|j| {
                let angle = sign * std::f64::consts::TAU * j as f64 / n as f64;
                (angle.cos(), angle.sin())
            })
            .collect();
        let mut line = vec![(0.0, 0.0); n];
        for outer in 0..count / (n * inner) {
            for i in 0..inner {
                let at = |j: usize| outer * n * inner + j * inner + i;
                for (k, slot) in line.iter_mut().enumerate() {
                    *slot = (0..n).fold((0.0, 0.0), |(re, im), j| {
                        let (a, b) = data[at(j)];
                        let (c, s) = twiddles[(j * k) % n];
                        (re + a * c - b * s, im + a * s + b * c)
                    });
                }
                for (k, value) in line.iter().enumerate() {
                    data[at(k)] = *value;
                }
            }
        }
    }
    data
}

/// The innermost `n / 2 + 1` of each row of a full spectrum over `shape`.
fn half_spectrum(shape: &[usize], full: &[C]) -> Vec<C> {
    let n = shape[shape.len() - 1];
    full.chunks(n)
        .flat_map(|row| row[..n / 2 + 1].to_vec())
        .collect()
}

fn norm(x: &[C]) -> f64 {
    x.iter().map(|(a, b)| a * a + b * b).sum::<f64>().sqrt()
}

/// Checks each of `got` against `want` within `tol * scale`.
fn check(what: &str, got: &[C], want: &[C], tol: f64, scale: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut worst: f64 = 0.0;
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        let error = (g.0 - w.0).hypot(g.1 - w.1);
        assert!(
            error <= tol * scale,
            "{what}: value {index}: got {g:?}, want {w:?} (tolerance {:.3e})",
            tol * scale
        );
        worst = worst.max(error / (tol * scale));
    }
    println!("{what}: worst error / tolerance {worst:.3}");
}

/// A real type of the tests and its complex type's conversions.
trait Real: FftReal {
    const TOL: f64;
    fn narrow(value: f64) -> Self;
    fn wide(self) -> f64;
    fn complex(value: C) -> Self::Complex;
    fn widen(value: Self::Complex) -> C;
}

macro_rules! real {
    ($real:ty, $complex:ty, $tol:expr, $from:expr, $wide:expr) => {
        impl Real for $real {
            const TOL: f64 = $tol;
            fn narrow(value: f64) -> Self {
                $from(value)
            }
            fn wide(self) -> f64 {
                $wide(self)
            }
            fn complex((re, im): C) -> $complex {
                <$complex>::new($from(re), $from(im))
            }
            fn widen(value: $complex) -> C {
                ($wide(value.re), $wide(value.im))
            }
        }
    };
}

real!(f32, Complex32, 1e-5, |v: f64| v as f32, |v: f32| f64::from(
    v
));
real!(f64, Complex64, 1e-12, |v: f64| v, |v: f64| v);
real!(f16, ComplexF16, 2e-2, f16::from_f64, f16::to_f64);

fn shape_of(dims: &[usize]) -> FftShape {
    match *dims {
        [n] => FftShape::d1(n),
        [nx, ny] => FftShape::d2(nx, ny),
        [nx, ny, nz] => FftShape::d3(nx, ny, nz),
        _ => unreachable!("a rank of 1 to 3"),
    }
}

fn upload<R: Real>(s: &Setup, values: &[C]) -> Buffer {
    let typed: Vec<R::Complex> = values.iter().map(|v| R::complex(*v)).collect();
    s.pool.allocate_from_host(&typed, &s.stream).unwrap()
}

fn download<R: Real>(buffer: &Buffer) -> Vec<C> {
    let typed = buffer.to_vec::<R::Complex>().unwrap();
    typed.into_iter().map(R::widen).collect()
}

/// Inputs rounded to `R`, as the reference must see them.
fn rounded<R: Real>(values: &[C]) -> Vec<C> {
    values.iter().map(|v| R::widen(R::complex(*v))).collect()
}

fn c2c_for<R: Real>(s: &Setup, shapes: &[&[usize]]) {
    for shape in shapes {
        let (count, batch) = (shape.iter().product::<usize>(), 3);
        let x = rounded::<R>(&complex_random(count * batch, count as u64));
        let desc = FftDesc::c2c::<R::Complex>(shape_of(shape)).batch(batch);
        let plan = FftPlan::new(&s.stream, &desc).unwrap();
        let input = upload::<R>(s, &x);
        let mut spectrum = s
            .pool
            .allocate_zeroed::<R::Complex>(count * batch, &s.stream)
            .unwrap();
        let mut back = s
            .pool
            .allocate_zeroed::<R::Complex>(count * batch, &s.stream)
            .unwrap();
        plan.c2c::<R::Complex>(&input, &mut spectrum, FftDirection::Forward)
            .unwrap();
        plan.c2c::<R::Complex>(&spectrum, &mut back, FftDirection::Inverse)
            .unwrap();
        let (got, round) = (download::<R>(&spectrum), download::<R>(&back));
        for b in 0..batch {
            let part = b * count..(b + 1) * count;
            let want = dft(shape, &x[part.clone()], -1.0);
            check(
                &format!("{desc} #{b}"),
                &got[part.clone()],
                &want,
                R::TOL,
                norm(&x[part.clone()]),
            );
            let scaled: Vec<C> = round[part.clone()]
                .iter()
                .map(|(a, b)| (a / count as f64, b / count as f64))
                .collect();
            check(
                &format!("{desc} #{b} round trip"),
                &scaled,
                &x[part.clone()],
                R::TOL,
                norm(&x[part]),
            );
        }
    }
}

fn c2c_matches_a_cpu_dft_in_1d_2d_and_3d() {
    let s = setup();
    let shapes: [&[usize]; 4] = [&[1000], &[1024], &[64, 48], &[16, 12, 10]];
    c2c_for::<f32>(&s, &shapes);
    c2c_for::<f64>(&s, &shapes);
    c2c_for::<f16>(&s, &[&[256], &[16, 32]]);
}

fn real_for<R: Real>(s: &Setup, shapes: &[&[usize]]) {
    for shape in shapes {
        let (count, batch) = (shape.iter().product::<usize>(), 2);
        let half = count / shape[shape.len() - 1] * (shape[shape.len() - 1] / 2 + 1);
        let x: Vec<R> = random(count * batch, 99)
            .into_iter()
            .map(R::narrow)
            .collect();
        let forward =
            FftPlan::new(&s.stream, &FftDesc::r2c::<R>(shape_of(shape)).batch(batch)).unwrap();
        let inverse =
            FftPlan::new(&s.stream, &FftDesc::c2r::<R>(shape_of(shape)).batch(batch)).unwrap();
        let input = s.pool.allocate_from_host(&x, &s.stream).unwrap();
        let mut spectrum = s
            .pool
            .allocate_zeroed::<R::Complex>(half * batch, &s.stream)
            .unwrap();
        let mut back = s
            .pool
            .allocate_zeroed::<R>(count * batch, &s.stream)
            .unwrap();
        forward.r2c::<R>(&input, &mut spectrum).unwrap();
        let got = download::<R>(&spectrum);
        let mut spectrum_copy = s
            .pool
            .allocate_zeroed::<R::Complex>(half * batch, &s.stream)
            .unwrap();
        spectrum_copy.copy_from(&spectrum).unwrap();
        inverse.c2r::<R>(&mut spectrum_copy, &mut back).unwrap();
        let round: Vec<f64> = back
            .to_vec::<R>()
            .unwrap()
            .into_iter()
            .map(R::wide)
            .collect();
        for b in 0..batch {
            let wide: Vec<C> = x[b * count..(b + 1) * count]
                .iter()
                .map(|v| (v.wide(), 0.0))
                .collect();
            let want = half_spectrum(shape, &dft(shape, &wide, -1.0));
            let what = forward.desc().to_string();
            check(
                &format!("{what} #{b}"),
                &got[b * half..(b + 1) * half],
                &want,
                R::TOL,
                norm(&wide),
            );
            let scaled: Vec<C> = round[b * count..(b + 1) * count]
                .iter()
                .map(|v| (v / count as f64, 0.0))
                .collect();
            check(
                &format!("{what} #{b} round trip"),
                &scaled,
                &wide,
                R::TOL,
                norm(&wide),
            );
        }
    }
}

fn r2c_and_c2r_match_a_cpu_dft_and_round_trip() {
    let s = setup();
    let shapes: [&[usize]; 3] = [&[1024], &[30, 40], &[8, 10, 12]];
    real_for::<f32>(&s, &shapes);
    real_for::<f64>(&s, &shapes);
    real_for::<f16>(&s, &[&[512]]);
}

fn batched_strided_layouts_and_in_place_transforms_match() {
    let s = setup();
    // 64 rows of 1024 reals into rows of 520 complex numbers (513 used), as the floor's R2C
    // batch but smaller.
    let (n, rows, pitch) = (1024, 64, 520);
    let desc = FftDesc::r2c::<f32>(n)
        .batch(rows)
        .output_layout(FftLayout::new(pitch, 1, pitch));
    let x: Vec<f32> = random(n * rows, 5).into_iter().map(|v| v as f32).collect();
    let input = s.pool.allocate_from_host(&x, &s.stream).unwrap();
    let mut output = s
        .pool
        .allocate_zeroed::<Complex32>(desc.output_len().unwrap(), &s.stream)
        .unwrap();
    FftPlan::new(&s.stream, &desc)
        .unwrap()
        .r2c::<f32>(&input, &mut output)
        .unwrap();
    let got = download::<f32>(&output);
    for row in [0, 17, rows - 1] {
        let wide: Vec<C> = x[row * n..(row + 1) * n]
            .iter()
            .map(|v| (f64::from(*v), 0.0))
            .collect();
        let want = half_spectrum(&[n], &dft(&[n], &wide, -1.0));
        check(
            &format!("{desc} row {row}"),
            &got[row * pitch..row * pitch + n / 2 + 1],
            &want,
            1e-5,
            norm(&wide),
        );
    }
    // Interleaved: 4 transforms of 100 points, point j of transform b at 4 j + b, in and out;
    // the input on another stream than the plan's.
    let other = s.device.create_stream(Default::default()).unwrap();
    let (n, batch) = (100, 4);
    let x = complex_random(n * batch, 8);
    let desc = FftDesc::c2c::<Complex64>(n)
        .batch(batch)
        .input_layout(FftLayout::new(n, batch, 1))
        .output_layout(FftLayout::new(n, batch, 1));
    let typed: Vec<Complex64> = x.iter().map(|v| Complex64::new(v.0, v.1)).collect();
    let input = s.pool.allocate_from_host(&typed, &other).unwrap();
    let mut output = s
        .pool
        .allocate_zeroed::<Complex64>(n * batch, &s.stream)
        .unwrap();
    FftPlan::new(&s.stream, &desc)
        .unwrap()
        .c2c::<Complex64>(&input, &mut output, FftDirection::Inverse)
        .unwrap();
    let got = download::<f64>(&output);
    for b in 0..batch {
        let transform: Vec<C> = (0..n).map(|j| x[j * batch + b]).collect();
        let picked: Vec<C> = (0..n).map(|j| got[j * batch + b]).collect();
        check(
            &format!("{desc} #{b}"),
            &picked,
            &dft(&[n], &transform, 1.0),
            1e-12,
            norm(&transform),
        );
    }
    // In place: a 2-D R2C of padded rows, then back.
    let shape = [48usize, 30];
    let forward = FftDesc::r2c::<f64>(shape).in_place();
    let inverse = FftDesc::c2r::<f64>(shape).in_place();
    let values = random(48 * 30, 12);
    let mut padded = vec![0.0f64; 48 * 32];
    for (row, chunk) in values.chunks(30).enumerate() {
        padded[row * 32..row * 32 + 30].copy_from_slice(chunk);
    }
    let mut data = s.pool.allocate_from_host(&padded, &s.stream).unwrap();
    FftPlan::new(&s.stream, &forward)
        .unwrap()
        .r2c_in_place::<f64>(&mut data)
        .unwrap();
    let wide: Vec<C> = values.iter().map(|v| (*v, 0.0)).collect();
    let want = half_spectrum(&shape, &dft(&shape, &wide, -1.0));
    check(
        &forward.to_string(),
        &download::<f64>(&data),
        &want,
        1e-12,
        norm(&wide),
    );
    FftPlan::new(&s.stream, &inverse)
        .unwrap()
        .c2r_in_place::<f64>(&mut data)
        .unwrap();
    let back = data.to_vec::<f64>().unwrap();
    for (row, chunk) in values.chunks(30).enumerate() {
        for (j, v) in chunk.iter().enumerate() {
            let got = back[row * 32 + j] / (48.0 * 30.0);
            assert!(
                (got - v).abs() < 1e-12,
                "{inverse}: [{row}][{j}] {got} != {v}"
            );
        }
    }
}

fn a_captured_execution_replays_on_new_inputs() {
    let s = setup();
    let mut fft = Fft::new(&s.stream).unwrap();
    let n = 4096;
    let desc = FftDesc::c2c::<Complex32>(n);
    fft.plan(&desc).unwrap();
    let mut x = s.pool.allocate_zeroed::<Complex32>(n, &s.stream).unwrap();
    let mut y = s.pool.allocate_zeroed::<Complex32>(n, &s.stream).unwrap();
    s.stream.sync().unwrap();
    // SAFETY: the buffers and the cached plan (with its work area) outlive the graph and its
    // executable (dropped first, at the end of this function); nothing is allocated on the
    // stream while it captures.
    let graph = unsafe {
        Graph::capture(&s.stream, CaptureMode::ThreadLocal, |_| {
            fft.plan(&desc)?
                .c2c::<Complex32>(&x, &mut y, FftDirection::Forward)
        })
    }
    .unwrap();
    let exec = graph.instantiate().unwrap();
    for seed in [21u64, 22] {
        let values = rounded::<f32>(&complex_random(n, seed));
        let typed: Vec<Complex32> = values.iter().map(|v| f32::complex(*v)).collect();
        x.copy_from_host(&typed).unwrap();
        exec.launch(&s.stream).unwrap();
        s.stream.sync().unwrap();
        check(
            &format!("replay {seed}"),
            &download::<f32>(&y),
            &dft(&[n], &values, -1.0),
            1e-5,
            norm(&values),
        );
    }
    drop(exec);
    let missing = FftDesc::c2c::<Complex32>(2048);
    // SAFETY: as above; the capture is refused before anything is queued.
    let refused = unsafe {
        Graph::capture(&s.stream, CaptureMode::ThreadLocal, |_| {
            fft.plan(&missing).map(drop)
        })
    };
    assert!(
        matches!(refused, Err(Error::InvalidArgument(_))),
        "{refused:?}"
    );
}

fn the_plan_cache_reuses_and_evicts_plans_and_checks_refuse() {
    let s = setup();
    let mut fft = Fft::with_memory_resource(&s.stream, s.pool.clone(), 2).unwrap();
    let descs = [256, 512, 1024].map(FftDesc::c2c::<Complex32>);
    let raw = fft.plan(&descs[0]).unwrap().as_raw();
    assert_eq!(
        fft.plan(&descs[0]).unwrap().as_raw(),
        raw,
        "a hit is the same plan"
    );
    fft.plan(&descs[1]).unwrap();
    fft.plan(&descs[0]).unwrap();
    fft.plan(&descs[2]).unwrap();
    assert!(fft.contains(&descs[0]) && !fft.contains(&descs[1]) && fft.contains(&descs[2]));
    let x = s
        .pool
        .allocate_zeroed::<Complex32>(1024, &s.stream)
        .unwrap();
    let mut short = s
        .pool
        .allocate_zeroed::<Complex32>(1000, &s.stream)
        .unwrap();
    let error = fft
        .plan(&descs[2])
        .unwrap()
        .c2c::<Complex32>(&x, &mut short, FftDirection::Forward)
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    if let Some(area) = fft.plan(&descs[2]).unwrap().work_area() {
        println!("a 1024-point C2C plan's work area: {} bytes", area.len());
    }
    println!("cuFFT {}", cuda_safe_libs::fft::version().unwrap());
}

pub(crate) const FILE: GpuFile = gpu_file![
    c2c_matches_a_cpu_dft_in_1d_2d_and_3d,
    r2c_and_c2r_match_a_cpu_dft_and_round_trip,
    batched_strided_layouts_and_in_place_transforms_match,
    a_captured_execution_replays_on_new_inputs,
    the_plan_cache_reuses_and_evicts_plans_and_checks_refuse,
];
