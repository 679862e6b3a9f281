//! `Generator` on the stub cuRAND.

use cuda_safe::Error;
use cuda_safe_libs::rand::{Generator, RngKind, RngOrdering};

use super::{Case, CaseFn, ensure, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    ("the distributions fill their buffers", distributions_fill),
    ("a generation is one cuRAND call", generation_budget),
    ("every check refuses before the call", checks_refuse_first),
];

fn distributions_fill(case: &Case) -> Result<(), String> {
    let mut generator =
        Generator::new(&case.stream, RngKind::Philox4x32_10).map_err(|e| e.to_string())?;
    generator.set_seed(7).map_err(|e| e.to_string())?;
    generator.set_offset(3).map_err(|e| e.to_string())?;
    generator
        .set_ordering(RngOrdering::PseudoDefault)
        .map_err(|e| e.to_string())?;
    let mut uniform = case
        .pool
        .allocate_zeroed::<f32>(1000, &case.stream)
        .map_err(|e| e.to_string())?;
    generator
        .uniform::<f32>(&mut uniform)
        .map_err(|e| e.to_string())?;
    let values: Vec<f32> = uniform.to_vec().map_err(|e| e.to_string())?;
    ensure(values.iter().all(|v| *v > 0.0 && *v <= 1.0), || {
        "uniform out of (0, 1]".into()
    })?;
    let mut normal = case
        .pool
        .allocate_zeroed::<f64>(1000, &case.stream)
        .map_err(|e| e.to_string())?;
    generator
        .normal::<f64>(&mut normal, 5.0, 0.5)
        .map_err(|e| e.to_string())?;
    let values: Vec<f64> = normal.to_vec().map_err(|e| e.to_string())?;
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    ensure((mean - 5.0).abs() < 0.1, || format!("normal mean {mean}"))?;
    let mut lognormal = case
        .pool
        .allocate_zeroed::<f32>(10, &case.stream)
        .map_err(|e| e.to_string())?;
    generator
        .log_normal::<f32>(&mut lognormal, 0.0, 1.0)
        .map_err(|e| e.to_string())?;
    let values: Vec<f32> = lognormal.to_vec().map_err(|e| e.to_string())?;
    ensure(values.iter().all(|v| *v > 0.0), || {
        "log-normal not positive".into()
    })?;
    let mut counts = case
        .pool
        .allocate_zeroed::<u32>(11, &case.stream)
        .map_err(|e| e.to_string())?;
    generator
        .poisson(&mut counts, 4.0)
        .map_err(|e| e.to_string())?;
    generator.bits(&mut counts).map_err(|e| e.to_string())?;
    let mut sobol = Generator::new(&case.stream, RngKind::Sobol64).map_err(|e| e.to_string())?;
    sobol.set_dimensions(2).map_err(|e| e.to_string())?;
    let mut wide = case
        .pool
        .allocate_zeroed::<u64>(8, &case.stream)
        .map_err(|e| e.to_string())?;
    sobol.bits64(&mut wide).map_err(|e| e.to_string())?;
    let version = cuda_safe_libs::rand::version().map_err(|e| e.to_string())?;
    ensure(version == 10405, || format!("version {version}"))
}

fn generation_budget(case: &Case) -> Result<(), String> {
    let mut generator = Generator::new(&case.stream, RngKind::Xorwow).map_err(|e| e.to_string())?;
    let mut out = case
        .pool
        .allocate_zeroed::<f32>(64, &case.stream)
        .map_err(|e| e.to_string())?;
    for _ in 0..3 {
        generator
            .normal::<f32>(&mut out, 0.0, 1.0)
            .map_err(|e| e.to_string())?;
    }
    case.stub.take_log();
    generator
        .normal::<f32>(&mut out, 0.0, 1.0)
        .map_err(|e| e.to_string())?;
    let calls = names(case.stub.take_log());
    ensure(calls == ["cuCtxGetCurrent", "curandGenerateNormal"], || {
        format!("a normal fill called {calls:?}")
    })
}

fn checks_refuse_first(case: &Case) -> Result<(), String> {
    let mut pseudo = Generator::new(&case.stream, RngKind::Mrg32k3a).map_err(|e| e.to_string())?;
    let mut quasi =
        Generator::new(&case.stream, RngKind::ScrambledSobol32).map_err(|e| e.to_string())?;
    quasi.set_dimensions(3).map_err(|e| e.to_string())?;
    let mut odd = case
        .pool
        .allocate_zeroed::<f32>(7, &case.stream)
        .map_err(|e| e.to_string())?;
    let mut counts = case
        .pool
        .allocate_zeroed::<u32>(6, &case.stream)
        .map_err(|e| e.to_string())?;
    let mut wide = case
        .pool
        .allocate_zeroed::<u64>(6, &case.stream)
        .map_err(|e| e.to_string())?;
    let check = |what: &str, needle: &str, run: &mut dyn FnMut() -> cuda_safe::Result<()>| {
        case.stub.take_log();
        let outcome = run();
        let calls = names(case.stub.take_log());
        match outcome {
            Err(Error::InvalidArgument(message)) if message.contains(needle) => {
                ensure(calls.is_empty(), || {
                    format!("{what}: the refusal called {calls:?}")
                })
            }
            other => Err(format!(
                "{what}: expected a refusal naming `{needle}`, got {other:?}"
            )),
        }
    };
    check(
        "normal numbers of an odd count",
        "come in pairs",
        &mut || pseudo.normal::<f32>(&mut odd, 0.0, 1.0),
    )?;
    check("a seed for Sobol", "takes no seed", &mut || {
        quasi.set_seed(1)
    })?;
    check(
        "dimensions for a pseudorandom generator",
        "only a quasirandom",
        &mut || pseudo.set_dimensions(2),
    )?;
    check("too many dimensions", "1 to 20000", &mut || {
        quasi.set_dimensions(20_001)
    })?;
    check(
        "a length of no whole points",
        "not a multiple of 3",
        &mut || quasi.uniform::<f32>(&mut odd),
    )?;
    check("a lambda out of range", "Poisson lambda", &mut || {
        pseudo.poisson(&mut counts, 0.0)
    })?;
    check(
        "64-bit numbers from a 32-bit generator",
        "only a 64-bit Sobol",
        &mut || pseudo.bits64(&mut wide),
    )?;
    check(
        "a quasirandom ordering for a pseudorandom generator",
        "not an ordering",
        &mut || pseudo.set_ordering(RngOrdering::QuasiDefault),
    )
}
