//! The transforms against a reference DFT: every kind and precision, 1-D to 3-D, batched, in
//! place, and in advanced layouts.

use cuda_safe::Buffer;
use cuda_safe_libs::fft::{
    Complex32, Complex64, FftDesc, FftDirection, FftLayout, FftPlan, FftReal,
};

use super::{C64, Case, CaseFn, close, data, dft, ensure};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "C2C matches the DFT in 1-D to 3-D, batched, f32 and f64",
        c2c_matches,
    ),
    (
        "R2C and C2R match the DFT and round trip",
        real_transforms_match,
    ),
    (
        "in-place transforms match the out-of-place ones",
        in_place_matches,
    ),
    (
        "advanced layouts are passed as cuFFT reads them",
        layouts_match,
    ),
    #[cfg(feature = "half")]
    ("f16 transforms run through cufftXtExec", half_matches),
];

const SHAPES: [&[usize]; 4] = [&[8], &[5], &[4, 6], &[2, 3, 4]];

/// A real type of the tests: conversions to and from f64 and its tolerance.
pub(crate) trait Element: FftReal {
    const TOLERANCE: f64;
    fn real(value: f64) -> Self;
    fn wide(self) -> f64;
    fn complex(value: C64) -> Self::Complex;
    fn widen(value: Self::Complex) -> C64;
}

impl Element for f32 {
    const TOLERANCE: f64 = 1e-5;
    fn real(value: f64) -> Self {
        value as f32
    }
    fn wide(self) -> f64 {
        f64::from(self)
    }
    fn complex((re, im): C64) -> Complex32 {
        Complex32::new(re as f32, im as f32)
    }
    fn widen(value: Complex32) -> C64 {
        (f64::from(value.re), f64::from(value.im))
    }
}

impl Element for f64 {
    const TOLERANCE: f64 = 1e-12;
    fn real(value: f64) -> Self {
        value
    }
    fn wide(self) -> f64 {
        self
    }
    fn complex((re, im): C64) -> Complex64 {
        Complex64::new(re, im)
    }
    fn widen(value: Complex64) -> C64 {
        (value.re, value.im)
    }
}

#[cfg(feature = "half")]
impl Element for half::f16 {
    const TOLERANCE: f64 = 1e-2;
    fn real(value: f64) -> Self {
        half::f16::from_f64(value)
    }
    fn wide(self) -> f64 {
        self.to_f64()
    }
    fn complex((re, im): C64) -> cuda_safe_libs::fft::ComplexF16 {
        cuda_safe_libs::fft::ComplexF16::new(Self::real(re), Self::real(im))
    }
    fn widen(value: cuda_safe_libs::fft::ComplexF16) -> C64 {
        (value.re.to_f64(), value.im.to_f64())
    }
}

fn err(error: cuda_safe::Error) -> String {
    error.to_string()
}

/// `len` complex numbers of test data, rounded to `R`'s precision.
fn complex_data<R: Element>(len: usize, seed: u64) -> Vec<C64> {
    let raw = data(2 * len, seed);
    (0..len)
        .map(|i| R::widen(R::complex((raw[2 * i], raw[2 * i + 1]))))
        .collect()
}

fn upload<R: Element>(case: &Case, values: &[C64]) -> Result<Buffer, String> {
    let typed: Vec<R::Complex> = values.iter().map(|v| R::complex(*v)).collect();
    case.pool
        .allocate_from_host(&typed, &case.stream)
        .map_err(err)
}

fn download<R: Element>(buffer: &Buffer) -> Result<Vec<C64>, String> {
    let typed = buffer.to_vec::<R::Complex>().map_err(err)?;
    Ok(typed.into_iter().map(R::widen).collect())
}

/// The half spectrum (innermost `n / 2 + 1`) of a full one over `shape`.
pub(crate) fn half_spectrum(shape: &[usize], full: &[C64]) -> Vec<C64> {
    let n = *shape.last().expect("a rank");
    full.chunks(n)
        .flat_map(|row| row[..n / 2 + 1].to_vec())
        .collect()
}

fn c2c_for<R: Element>(case: &Case) -> Result<(), String> {
    for shape in SHAPES {
        let count: usize = shape.iter().product();
        let batch = 2;
        let x = complex_data::<R>(count * batch, count as u64);
        let desc = FftDesc::c2c::<R::Complex>(shape_of(shape)).batch(batch);
        let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
        let input = upload::<R>(case, &x)?;
        for (direction, sign) in [(FftDirection::Forward, -1.0), (FftDirection::Inverse, 1.0)] {
            let mut output = case
                .pool
                .allocate_zeroed::<R::Complex>(count * batch, &case.stream)
                .map_err(err)?;
            plan.c2c::<R::Complex>(&input, &mut output, direction)
                .map_err(err)?;
            let want: Vec<C64> = x.chunks(count).flat_map(|b| dft(shape, b, sign)).collect();
            close(
                &format!("{desc} {direction:?}"),
                &download::<R>(&output)?,
                &want,
                R::TOLERANCE,
            )?;
        }
    }
    Ok(())
}

/// The `FftShape` of a slice of 1 to 3 sizes.
pub(crate) fn shape_of(shape: &[usize]) -> cuda_safe_libs::fft::FftShape {
    match *shape {
        [n] => n.into(),
        [nx, ny] => [nx, ny].into(),
        [nx, ny, nz] => [nx, ny, nz].into(),
        _ => panic!("a rank of 1 to 3"),
    }
}

fn c2c_matches(case: &Case) -> Result<(), String> {
    c2c_for::<f32>(case)?;
    c2c_for::<f64>(case)
}

fn real_for<R: Element>(case: &Case) -> Result<(), String> {
    for shape in SHAPES {
        let count: usize = shape.iter().product();
        let half = count / shape[shape.len() - 1] * (shape[shape.len() - 1] / 2 + 1);
        let batch = 3;
        let x: Vec<R> = data(count * batch, 7).into_iter().map(R::real).collect();
        let forward = FftDesc::r2c::<R>(shape_of(shape)).batch(batch);
        let inverse = FftDesc::c2r::<R>(shape_of(shape)).batch(batch);
        let input = case
            .pool
            .allocate_from_host(&x, &case.stream)
            .map_err(err)?;
        let mut spectrum = case
            .pool
            .allocate_zeroed::<R::Complex>(half * batch, &case.stream)
            .map_err(err)?;
        let r2c = FftPlan::new(&case.stream, &forward).map_err(err)?;
        r2c.r2c::<R>(&input, &mut spectrum).map_err(err)?;
        let want: Vec<C64> = x
            .chunks(count)
            .flat_map(|b| {
                let wide: Vec<C64> = b.iter().map(|v| (v.wide(), 0.0)).collect();
                half_spectrum(shape, &dft(shape, &wide, -1.0))
            })
            .collect();
        close(
            &forward.to_string(),
            &download::<R>(&spectrum)?,
            &want,
            R::TOLERANCE,
        )?;
        let c2r = FftPlan::new(&case.stream, &inverse).map_err(err)?;
        let mut back = case
            .pool
            .allocate_zeroed::<R>(count * batch, &case.stream)
            .map_err(err)?;
        c2r.c2r::<R>(&mut spectrum, &mut back).map_err(err)?;
        let got: Vec<C64> = back
            .to_vec::<R>()
            .map_err(err)?
            .into_iter()
            .map(|v| (v.wide() / count as f64, 0.0))
            .collect();
        let want: Vec<C64> = x.iter().map(|v| (v.wide(), 0.0)).collect();
        close(&inverse.to_string(), &got, &want, 10.0 * R::TOLERANCE)?;
    }
    Ok(())
}

fn real_transforms_match(case: &Case) -> Result<(), String> {
    real_for::<f32>(case)?;
    real_for::<f64>(case)
}

fn in_place_matches(case: &Case) -> Result<(), String> {
    let shape = [3usize, 6];
    let count = 18;
    let x = complex_data::<f64>(count * 2, 11);
    let desc = FftDesc::c2c::<Complex64>(shape).batch(2).in_place();
    let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
    let mut data = upload::<f64>(case, &x)?;
    plan.c2c_in_place::<Complex64>(&mut data, FftDirection::Forward)
        .map_err(err)?;
    let want: Vec<C64> = x.chunks(count).flat_map(|b| dft(&shape, b, -1.0)).collect();
    close(&desc.to_string(), &download::<f64>(&data)?, &want, 1e-12)?;
    // R2C in place: rows of 6 reals padded to 8, then 4 complex numbers each.
    let reals = data_rows(&[3, 6], 2, 8);
    let forward = FftDesc::r2c::<f32>(shape).batch(2).in_place();
    let padded: Vec<f32> = reals.iter().map(|v| *v as f32).collect();
    ensure(forward.input_len().map_err(err)? <= padded.len(), || {
        "the padded rows are too short".into()
    })?;
    let mut buffer = case
        .pool
        .allocate_from_host(&padded, &case.stream)
        .map_err(err)?;
    let r2c = FftPlan::new(&case.stream, &forward).map_err(err)?;
    r2c.r2c_in_place::<f32>(&mut buffer).map_err(err)?;
    let want: Vec<C64> = reals
        .chunks(3 * 8)
        .flat_map(|b| {
            let dense: Vec<C64> = b
                .chunks(8)
                .flat_map(|row| row[..6].iter().map(|v| (*v, 0.0)).collect::<Vec<_>>())
                .collect();
            half_spectrum(&shape, &dft(&shape, &dense, -1.0))
        })
        .collect();
    let got = download::<f32>(&buffer)?;
    close(&forward.to_string(), &got, &want, 1e-5)?;
    // And back, in place: the padded rows again, times 18.
    let inverse = FftDesc::c2r::<f32>(shape).batch(2).in_place();
    let c2r = FftPlan::new(&case.stream, &inverse).map_err(err)?;
    c2r.c2r_in_place::<f32>(&mut buffer).map_err(err)?;
    let back = buffer.to_vec::<f32>().map_err(err)?;
    for (index, (got, want)) in back.iter().zip(&reals).enumerate() {
        if index % 8 < 6 {
            ensure((f64::from(*got) / 18.0 - want).abs() < 1e-5, || {
                format!("{inverse}: real {index}: got {got}, want {want} x 18")
            })?;
        }
    }
    Ok(())
}

/// `batch` transforms of `shape` reals, each innermost row padded to `row` (zeros after).
fn data_rows(shape: &[usize], batch: usize, row: usize) -> Vec<f64> {
    let n = shape[shape.len() - 1];
    let rows = batch * shape.iter().product::<usize>() / n;
    let values = data(rows * n, 3);
    values
        .chunks(n)
        .flat_map(|r| {
            let mut padded = r.to_vec();
            padded.resize(row, 0.0);
            padded
        })
        .collect()
}

fn layouts_match(case: &Case) -> Result<(), String> {
    // Three interleaved C2C transforms of 5 points (point j of transform b at 3 j + b), into
    // transforms 7 apart with their points 1 apart.
    let (n, batch) = (5, 3);
    let x = complex_data::<f32>(n * batch, 5);
    let desc = FftDesc::c2c::<Complex32>(n)
        .batch(batch)
        .input_layout(FftLayout::new(n, batch, 1))
        .output_layout(FftLayout::new(n, 1, 7));
    let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
    let input = upload::<f32>(case, &x)?;
    let mut output = case
        .pool
        .allocate_zeroed::<Complex32>(desc.output_len().map_err(err)?, &case.stream)
        .map_err(err)?;
    plan.c2c::<Complex32>(&input, &mut output, FftDirection::Forward)
        .map_err(err)?;
    let got = download::<f32>(&output)?;
    for b in 0..batch {
        let transform: Vec<C64> = (0..n).map(|j| x[j * batch + b]).collect();
        let want = dft(&[n], &transform, -1.0);
        close(
            &format!("{desc}, transform {b}"),
            &got[7 * b..7 * b + n],
            &want,
            1e-5,
        )?;
    }
    // 2-D R2C of 4 x 6 embedded in rows of 8 reals, into rows of 5 complex numbers (4 used)
    // every other element.
    let shape = [4usize, 6];
    let reals = data_rows(&shape, 2, 8);
    let desc = FftDesc::r2c::<f64>(shape)
        .batch(2)
        .input_layout(FftLayout::new([4, 8], 1, 32))
        .output_layout(FftLayout::new([4, 5], 2, 40));
    let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
    let input = case
        .pool
        .allocate_from_host(&reals, &case.stream)
        .map_err(err)?;
    let mut output = case
        .pool
        .allocate_zeroed::<Complex64>(desc.output_len().map_err(err)?, &case.stream)
        .map_err(err)?;
    plan.r2c::<f64>(&input, &mut output).map_err(err)?;
    let got = download::<f64>(&output)?;
    for b in 0..2 {
        let dense: Vec<C64> = reals[32 * b..32 * (b + 1)]
            .chunks(8)
            .flat_map(|row| row[..6].iter().map(|v| (*v, 0.0)).collect::<Vec<_>>())
            .collect();
        let want = half_spectrum(&shape, &dft(&shape, &dense, -1.0));
        let picked: Vec<C64> = (0..4)
            .flat_map(|row| (0..4).map(move |k| (row, k)))
            .map(|(row, k)| got[40 * b + 2 * (row * 5 + k)])
            .collect();
        close(&format!("{desc}, transform {b}"), &picked, &want, 1e-12)?;
    }
    Ok(())
}

#[cfg(feature = "half")]
fn half_matches(case: &Case) -> Result<(), String> {
    let shape = [4usize, 8];
    let x = complex_data::<half::f16>(32, 9);
    let desc = FftDesc::c2c::<cuda_safe_libs::fft::ComplexF16>(shape);
    let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
    let input = upload::<half::f16>(case, &x)?;
    let mut output = case
        .pool
        .allocate_zeroed::<cuda_safe_libs::fft::ComplexF16>(32, &case.stream)
        .map_err(err)?;
    case.stub.take_log();
    plan.c2c::<cuda_safe_libs::fft::ComplexF16>(&input, &mut output, FftDirection::Forward)
        .map_err(err)?;
    let calls = super::names(case.stub.take_log());
    ensure(calls == ["cuCtxGetCurrent", "cufftXtExec"], || {
        format!("an f16 C2C called {calls:?}")
    })?;
    close(
        &desc.to_string(),
        &download::<half::f16>(&output)?,
        &dft(&shape, &x, -1.0),
        1e-2,
    )?;
    let reals: Vec<half::f16> = data(16, 4).into_iter().map(half::f16::from_f64).collect();
    let forward = FftDesc::r2c::<half::f16>(16);
    let r2c = FftPlan::new(&case.stream, &forward).map_err(err)?;
    let input = case
        .pool
        .allocate_from_host(&reals, &case.stream)
        .map_err(err)?;
    let mut spectrum = case
        .pool
        .allocate_zeroed::<cuda_safe_libs::fft::ComplexF16>(9, &case.stream)
        .map_err(err)?;
    r2c.r2c::<half::f16>(&input, &mut spectrum).map_err(err)?;
    let wide: Vec<C64> = reals.iter().map(|v| (v.to_f64(), 0.0)).collect();
    close(
        &forward.to_string(),
        &download::<half::f16>(&spectrum)?,
        &half_spectrum(&[16], &dft(&[16], &wide, -1.0)),
        1e-2,
    )
}
