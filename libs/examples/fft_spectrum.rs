//! The spectra of a batch of signals on the GPU, with `cuda_safe_libs::fft`: 8 signals of 4096
//! samples, each two tones, through one batched real-to-complex plan, then back through a
//! complex-to-real one. Checks the tones' bins and a few others against a DFT computed on the
//! CPU in f64, and the round trip against the signals; exits non-zero on a mismatch.
//!
//! ```text
//! cargo run -p cuda-safe-libs --example fft_spectrum
//! ```

use std::f64::consts::TAU;
use std::process::ExitCode;

use cuda_safe::{Device, Result};
use cuda_safe_libs::fft::{Complex32, Fft, FftDesc};

/// Samples per signal.
const N: usize = 4096;
/// Signals in the batch.
const BATCH: usize = 8;

/// Signal `b`: tones at bins `3 + b` and `100 + 7 b`, of amplitudes 1 and 0.5.
fn signal(b: usize) -> Vec<f32> {
    let (k1, k2) = (3 + b, 100 + 7 * b);
    (0..N)
        .map(|j| {
            let t = j as f64 / N as f64;
            ((TAU * k1 as f64 * t).cos() + 0.5 * (TAU * k2 as f64 * t).sin()) as f32
        })
        .collect()
}

/// Bin `k` of the DFT of `x`, in f64.
fn dft(x: &[f32], k: usize) -> (f64, f64) {
    x.iter().enumerate().fold((0.0, 0.0), |(re, im), (j, v)| {
        let angle = -TAU * ((j * k) % N) as f64 / N as f64;
        let v = f64::from(*v);
        (re + v * angle.cos(), im + v * angle.sin())
    })
}

fn run() -> Result<bool> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let mut fft = Fft::new(&stream)?;
    let forward = FftDesc::r2c::<f32>(N).batch(BATCH);
    let inverse = FftDesc::c2r::<f32>(N).batch(BATCH);
    let host: Vec<f32> = (0..BATCH).flat_map(signal).collect();
    let signals = pool.allocate_from_host(&host, &stream)?;
    let mut spectra = pool.allocate_zeroed::<Complex32>(forward.output_len()?, &stream)?;
    fft.plan(&forward)?.r2c::<f32>(&signals, &mut spectra)?;
    let got = spectra.to_vec::<Complex32>()?;
    let bins = N / 2 + 1;
    let mut ok = true;
    let mut worst: f64 = 0.0;
    for b in 0..BATCH {
        let x = &host[b * N..(b + 1) * N];
        for k in [0, 1, 3 + b, 50, 100 + 7 * b, N / 2] {
            let (re, im) = dft(x, k);
            let value = got[b * bins + k];
            let error = (f64::from(value.re) - re).hypot(f64::from(value.im) - im);
            worst = worst.max(error);
            if error > 1e-3 * N as f64 {
                println!("signal {b} bin {k}: got {value:?}, want ({re:.3}, {im:.3})");
                ok = false;
            }
        }
        let magnitude = |k: usize| {
            let value = got[b * bins + k];
            f64::from(value.re).hypot(f64::from(value.im))
        };
        let (k1, k2) = (3 + b, 100 + 7 * b);
        println!(
            "signal {b}: |X[{k1}]| = {:.1} (want {}), |X[{k2}]| = {:.1} (want {})",
            magnitude(k1),
            N / 2,
            magnitude(k2),
            N / 4
        );
    }
    let mut back = pool.allocate_zeroed::<f32>(inverse.output_len()?, &stream)?;
    fft.plan(&inverse)?.c2r::<f32>(&mut spectra, &mut back)?;
    let round_trip = back.to_vec::<f32>()?;
    let drift = host
        .iter()
        .zip(&round_trip)
        .map(|(x, y)| (f64::from(*y) / N as f64 - f64::from(*x)).abs())
        .fold(0.0, f64::max);
    println!("worst bin error {worst:.2e}; round trip, worst |x - C2R(R2C(x)) / n| {drift:.2e}");
    println!(
        "{} plans cached, cuFFT {}",
        fft.len(),
        cuda_safe_libs::fft::version()?
    );
    Ok(ok && drift < 1e-5)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            println!("the spectra do not match the CPU's DFT");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
