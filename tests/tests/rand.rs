//! cuRAND on a real GPU (feature `rand`): every generator kind and distribution, checked by
//! its sample moments over 2^20 numbers. Tolerances: a uniform mean within 0.01 of 1/2 and a
//! variance within 0.002 of 1/12 (the C floor's); a normal mean within 0.01 of the mean asked
//! for (in standard deviations) and a variance within 2% of the one asked for; a log-normal
//! mean within 2% of `exp(mu + sigma^2 / 2)`; a Poisson mean and variance within 2% of lambda.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::{Device, DeviceMemoryResource, Stream};
use cuda_safe_libs::rand::{Generator, RngKind};

const N: usize = 1 << 20;

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

/// The sample mean and variance.
fn moments(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let count = values.clone().count() as f64;
    let mean = values.clone().sum::<f64>() / count;
    let variance = values.map(|v| (v - mean).powi(2)).sum::<f64>() / count;
    (mean, variance)
}

const KINDS: [RngKind; 5] = [
    RngKind::Philox4x32_10,
    RngKind::Xorwow,
    RngKind::Mrg32k3a,
    RngKind::Sobol32,
    RngKind::ScrambledSobol32,
];

fn uniform_numbers_of_every_kind_have_uniform_moments() {
    let s = setup();
    for kind in KINDS {
        let mut generator = Generator::new(&s.stream, kind).unwrap();
        if !kind.is_quasi() {
            generator.set_seed(2026).unwrap();
        }
        let mut single = s.pool.allocate_zeroed::<f32>(N, &s.stream).unwrap();
        generator.uniform::<f32>(&mut single).unwrap();
        let values: Vec<f32> = single.to_vec().unwrap();
        assert!(
            values.iter().all(|v| *v > 0.0 && *v <= 1.0),
            "{kind:?}: outside (0, 1]"
        );
        let (mean, variance) = moments(values.iter().map(|v| f64::from(*v)));
        assert!((mean - 0.5).abs() < 0.01, "{kind:?}: mean {mean}");
        assert!(
            (variance - 1.0 / 12.0).abs() < 0.002,
            "{kind:?}: variance {variance}"
        );
        let mut double = s.pool.allocate_zeroed::<f64>(N, &s.stream).unwrap();
        generator.uniform::<f64>(&mut double).unwrap();
        let (mean, _) = moments(double.to_vec::<f64>().unwrap().into_iter());
        assert!((mean - 0.5).abs() < 0.01, "{kind:?} f64: mean {mean}");
        println!("{kind:?}: uniform mean {mean:.4}, variance {variance:.4}");
    }
}

fn normal_and_log_normal_numbers_have_their_moments() {
    let s = setup();
    for kind in KINDS {
        let mut generator = Generator::new(&s.stream, kind).unwrap();
        let mut out = s.pool.allocate_zeroed::<f32>(N, &s.stream).unwrap();
        generator.normal::<f32>(&mut out, 3.0, 0.5).unwrap();
        let (mean, variance) = moments(out.to_vec::<f32>().unwrap().into_iter().map(f64::from));
        assert!(
            (mean - 3.0).abs() < 0.01 * 0.5,
            "{kind:?}: normal mean {mean}"
        );
        assert!(
            (variance / 0.25 - 1.0).abs() < 0.02,
            "{kind:?}: normal variance {variance}"
        );
        let mut double = s.pool.allocate_zeroed::<f64>(N, &s.stream).unwrap();
        generator.normal::<f64>(&mut double, -1.0, 2.0).unwrap();
        let (mean, variance) = moments(double.to_vec::<f64>().unwrap().into_iter());
        assert!(
            (mean + 1.0).abs() < 0.01 * 2.0,
            "{kind:?}: f64 normal mean {mean}"
        );
        assert!(
            (variance / 4.0 - 1.0).abs() < 0.02,
            "{kind:?}: f64 normal variance {variance}"
        );
        generator.log_normal::<f32>(&mut out, 0.0, 0.25).unwrap();
        let (mean, _) = moments(out.to_vec::<f32>().unwrap().into_iter().map(f64::from));
        let expected = (0.25f64 * 0.25 / 2.0).exp();
        assert!(
            (mean / expected - 1.0).abs() < 0.02,
            "{kind:?}: log-normal mean {mean}"
        );
    }
}

fn poisson_numbers_have_mean_and_variance_lambda() {
    let s = setup();
    let mut generator = Generator::new(&s.stream, RngKind::Philox4x32_10).unwrap();
    let mut out = s.pool.allocate_zeroed::<u32>(N, &s.stream).unwrap();
    for lambda in [0.5, 4.0, 1000.0] {
        generator.poisson(&mut out, lambda).unwrap();
        let (mean, variance) = moments(out.to_vec::<u32>().unwrap().into_iter().map(f64::from));
        assert!(
            (mean / lambda - 1.0).abs() < 0.02,
            "lambda {lambda}: mean {mean}"
        );
        assert!(
            (variance / lambda - 1.0).abs() < 0.02,
            "lambda {lambda}: variance {variance}"
        );
    }
}

fn seeds_and_offsets_reproduce_sequences() {
    let s = setup();
    let draw = |seed: u64, offset: u64, len: usize| -> Vec<u32> {
        let mut generator = Generator::new(&s.stream, RngKind::Philox4x32_10).unwrap();
        generator.set_seed(seed).unwrap();
        generator.set_offset(offset).unwrap();
        let mut out = s.pool.allocate_zeroed::<u32>(len, &s.stream).unwrap();
        generator.bits(&mut out).unwrap();
        out.to_vec().unwrap()
    };
    assert_eq!(draw(7, 0, 4096), draw(7, 0, 4096), "one seed, one sequence");
    assert_ne!(
        draw(7, 0, 4096),
        draw(8, 0, 4096),
        "another seed, another sequence"
    );
    assert_ne!(
        draw(7, 4096, 4096),
        draw(7, 0, 4096),
        "an offset moves the sequence"
    );
}

fn sobol_points_fill_their_dimensions() {
    let s = setup();
    let mut generator = Generator::new(&s.stream, RngKind::Sobol64).unwrap();
    generator.set_dimensions(4).unwrap();
    let mut wide = s.pool.allocate_zeroed::<u64>(4 * 1024, &s.stream).unwrap();
    generator.bits64(&mut wide).unwrap();
    let values: Vec<u64> = wide.to_vec().unwrap();
    // Each dimension of a Sobol sequence is its own low-discrepancy sequence: 1024 points of
    // one dimension hit each of the 16 top-nibble bins about equally often.
    for dimension in 0..4 {
        let mut bins = [0usize; 16];
        for value in &values[dimension * 1024..(dimension + 1) * 1024] {
            bins[(value >> 60) as usize] += 1;
        }
        assert!(
            bins.iter().all(|count| (60..=68).contains(count)),
            "dimension {dimension}: {bins:?}"
        );
    }
    let mut odd = s
        .pool
        .allocate_zeroed::<u64>(4 * 1024 + 1, &s.stream)
        .unwrap();
    assert!(
        generator.bits64(&mut odd).is_err(),
        "a length of no whole points"
    );
    let _ = &s.device;
}

fn generating_into_a_buffer_of_another_stream_is_ordered() {
    let s = setup();
    let other = s.device.create_stream(Default::default()).unwrap();
    let mut generator = Generator::new(&other, RngKind::Xorwow).unwrap();
    let mut out = s.pool.allocate_zeroed::<f32>(N, &s.stream).unwrap();
    out.fill(-1.0f32).unwrap(); // queued on the buffer's stream, before the generation
    generator.uniform::<f32>(&mut out).unwrap();
    let values: Vec<f32> = out.to_vec().unwrap();
    assert!(
        values.iter().all(|v| *v > 0.0),
        "the fill ran after the generation"
    );
    println!("cuRAND {}", cuda_safe_libs::rand::version().unwrap());
}

pub(crate) const FILE: GpuFile = gpu_file![
    uniform_numbers_of_every_kind_have_uniform_moments,
    normal_and_log_normal_numbers_have_their_moments,
    poisson_numbers_have_mean_and_variance_lambda,
    seeds_and_offsets_reproduce_sequences,
    sobol_points_fill_their_dimensions,
    generating_into_a_buffer_of_another_stream_is_ordered,
];
