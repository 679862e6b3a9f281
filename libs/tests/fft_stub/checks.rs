//! How plans are made, what an execution calls, and every check refusing before cuFFT.

use cuda_safe::Error;
use cuda_safe_libs::fft::{
    Complex32, Complex64, CufftError, FftDesc, FftDirection, FftLayout, FftPlan,
};

use super::{Case, CaseFn, ensure, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[
    (
        "a plan allocates its work area from the pool",
        plans_take_a_pool_work_area,
    ),
    ("an execution is one cuFFT call", execution_budget),
    (
        "every check refuses before cuFFT is called",
        checks_refuse_first,
    ),
    (
        "cuFFT's failures carry its status",
        failures_carry_the_status,
    ),
    ("a moved plan runs on its new stream", moved_plan),
];

fn err(error: Error) -> String {
    error.to_string()
}

fn position(calls: &[String], name: &str) -> Result<usize, String> {
    calls
        .iter()
        .position(|call| call == name)
        .ok_or_else(|| format!("no {name} in {calls:?}"))
}

fn plans_take_a_pool_work_area(case: &Case) -> Result<(), String> {
    let desc = FftDesc::c2c::<Complex32>(64).batch(4);
    let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
    let calls = names(case.stub.take_log());
    let order = [
        "cufftCreate",
        "cufftSetAutoAllocation",
        "cufftMakePlanMany64",
        "cuMemAllocFromPoolAsync",
        "cufftSetWorkArea",
        "cufftSetStream",
    ]
    .map(|name| position(&calls, name));
    let order: Vec<usize> = order.into_iter().collect::<Result<_, _>>()?;
    ensure(order.windows(2).all(|pair| pair[0] < pair[1]), || {
        format!("a plan was made in the order {calls:?}")
    })?;
    let area = plan.work_area().ok_or("no work area")?;
    // The stub asks for 8 bytes a point.
    ensure(area.len() >= 64 * 4 * 8, || {
        format!("a {}-byte work area", area.len())
    })?;
    ensure(area.stream().same_as(&case.stream), || {
        "the work area is not on the plan's stream".into()
    })?;
    // Dropped: the plan is destroyed before its work area is freed (the stub checks the work
    // area is still allocated when the plan is destroyed).
    drop(plan);
    let calls = names(case.stub.take_log());
    ensure(
        position(&calls, "cufftDestroy")? < position(&calls, "cuMemFreeAsync")?,
        || format!("a plan was dropped as {calls:?}"),
    )?;
    // A plan that needs no work area allocates none.
    case.fft.set_work_size(Some(0));
    let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
    let calls = names(case.stub.take_log());
    ensure(plan.work_area().is_none(), || {
        "a work area of 0 bytes".into()
    })?;
    ensure(
        !calls
            .iter()
            .any(|c| c == "cufftSetWorkArea" || c == "cuMemAllocFromPoolAsync"),
        || format!("a plan with no work area called {calls:?}"),
    )?;
    // A work area of the caller's, too small, is refused.
    case.fft.set_work_size(Some(4096));
    let small = FftPlan::with_work_area(&case.stream, &desc, |_| {
        case.pool.allocate(100, &case.stream)
    });
    match small {
        Err(Error::InvalidArgument(message)) if message.contains("4096-byte work area") => {}
        other => return Err(format!("a small work area: {other:?}")),
    }
    let version = cuda_safe_libs::fft::version().map_err(err)?;
    ensure(version == 12000, || format!("version {version}"))
}

fn execution_budget(case: &Case) -> Result<(), String> {
    let desc = FftDesc::c2c::<Complex32>(16);
    let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
    let x = case
        .pool
        .allocate_zeroed::<Complex32>(16, &case.stream)
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<Complex32>(16, &case.stream)
        .map_err(err)?;
    plan.c2c::<Complex32>(&x, &mut y, FftDirection::Forward)
        .map_err(err)?;
    case.stub.take_log();
    plan.c2c::<Complex32>(&x, &mut y, FftDirection::Inverse)
        .map_err(err)?;
    let calls = names(case.stub.take_log());
    ensure(calls == ["cuCtxGetCurrent", "cufftExecC2C"], || {
        format!("an execution called {calls:?}")
    })?;
    // Views run the same call.
    let view = x.as_slice::<Complex32>().map_err(err)?;
    let mut out = y.as_mut_slice::<Complex32>().map_err(err)?;
    plan.c2c::<Complex32>(&view, &mut out, FftDirection::Forward)
        .map_err(err)?;
    let calls = names(case.stub.take_log());
    ensure(calls == ["cuCtxGetCurrent", "cufftExecC2C"], || {
        format!("an execution on views called {calls:?}")
    })
}

fn checks_refuse_first(case: &Case) -> Result<(), String> {
    let c2c =
        FftPlan::new(&case.stream, &FftDesc::c2c::<Complex32>([4, 4]).batch(2)).map_err(err)?;
    let r2c = FftPlan::new(&case.stream, &FftDesc::r2c::<f32>(8)).map_err(err)?;
    let in_place = FftPlan::new(&case.stream, &FftDesc::r2c::<f32>(8).in_place()).map_err(err)?;
    let alloc = |len: usize| case.pool.allocate_zeroed::<Complex32>(len, &case.stream);
    let (full, short) = (alloc(32).map_err(err)?, alloc(31).map_err(err)?);
    let (mut out, mut out_short) = (alloc(32).map_err(err)?, alloc(3).map_err(err)?);
    let reals = case
        .pool
        .allocate_zeroed::<f32>(9, &case.stream)
        .map_err(err)?;
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
                "{what}: expected a refusal naming {needle:?}, got {other:?}"
            )),
        }
    };
    let forward = FftDirection::Forward;
    check(
        "a short input",
        "the input spans 32 elements; the memory holds 31",
        &mut || c2c.c2c::<Complex32>(&short, &mut out, forward),
    )?;
    check(
        "a short output",
        "the output spans 5 elements; the memory holds 3",
        &mut || r2c.r2c::<f32>(&full, &mut out_short),
    )?;
    check("another kind", "cannot run r2c out of place", &mut || {
        c2c.r2c::<f32>(&full, &mut out)
    })?;
    check(
        "another precision",
        "cannot run c2c out of place on f64",
        &mut || c2c.c2c::<Complex64>(&full, &mut out, forward),
    )?;
    check("another placement", "cannot run c2c in place", &mut || {
        c2c.c2c_in_place::<Complex32>(&mut out, forward)
    })?;
    check(
        "out of place on an in-place plan",
        "cannot run r2c out of place",
        &mut || in_place.r2c::<f32>(&full, &mut out),
    )?;
    check(
        "a short in-place buffer",
        "the in-place data spans 5",
        &mut || in_place.r2c_in_place::<f32>(&mut out_short),
    )?;
    check(
        "a misaligned input",
        "is not aligned to its complex type (8 bytes)",
        &mut || {
            let view = reals.as_slice::<f32>()?.slice(1..)?;
            r2c.r2c::<f32>(&view, &mut out)
        },
    )?;
    let refused = |what: &str, needle: &str, desc: FftDesc| {
        check(what, needle, &mut || {
            FftPlan::new(&case.stream, &desc).map(drop)
        })
    };
    refused(
        "a size of 0",
        "at least 1",
        FftDesc::c2c::<Complex32>([4, 0]),
    )?;
    refused(
        "a layout smaller than its data",
        "dimension 0: 3 < 4",
        FftDesc::c2c::<Complex32>(4).input_layout(FftLayout::new(3, 1, 3)),
    )?;
    refused(
        "an in-place layout whose sides differ",
        "same memory",
        FftDesc::c2c::<Complex32>(4)
            .in_place()
            .input_layout(FftLayout::new(4, 2, 8)),
    )?;
    ensure(case.fft.live() == 3, || {
        format!("{} live plans, want 3", case.fft.live())
    })
}

fn failures_carry_the_status(case: &Case) -> Result<(), String> {
    let desc = FftDesc::c2c::<Complex32>(8);
    case.stub.fail("cufftMakePlanMany64", 8, 1);
    let error = FftPlan::new(&case.stream, &desc).expect_err("an injected failure");
    let inner = error
        .library_error::<CufftError>()
        .ok_or_else(|| format!("not cuFFT's error: {error:?}"))?;
    ensure(
        inner.api == "cufftMakePlanMany64" && inner.name == "CUFFT_INVALID_SIZE",
        || format!("the error {inner:?}"),
    )?;
    ensure(case.fft.live() == 0, || {
        "the failed plan was not destroyed".into()
    })?;
    let plan = FftPlan::new(&case.stream, &desc).map_err(err)?;
    let x = case
        .pool
        .allocate_zeroed::<Complex32>(8, &case.stream)
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<Complex32>(8, &case.stream)
        .map_err(err)?;
    case.stub.fail("cufftExecC2C", 2, 1);
    let error = plan
        .c2c::<Complex32>(&x, &mut y, FftDirection::Forward)
        .expect_err("an injected failure");
    ensure(error.is_out_of_memory(), || {
        format!("CUFFT_ALLOC_FAILED is out of memory: {error}")
    })?;
    ensure(
        error
            .to_string()
            .contains("cufftExecC2C failed: CUFFT_ALLOC_FAILED"),
        || format!("the message {error}"),
    )?;
    Ok(())
}

fn moved_plan(case: &Case) -> Result<(), String> {
    let other = case.device.create_stream(Default::default()).map_err(err)?;
    let mut plan = FftPlan::new(&case.stream, &FftDesc::r2c::<f64>(6)).map_err(err)?;
    case.stub.take_log();
    plan.set_stream(&other).map_err(err)?;
    let calls = names(case.stub.take_log());
    ensure(calls.iter().any(|c| c == "cufftSetStream"), || {
        format!("set_stream called {calls:?}")
    })?;
    ensure(plan.stream().same_as(&other), || "the plan's stream".into())?;
    let area = plan.work_area().ok_or("no work area")?;
    ensure(area.stream().same_as(&other), || {
        "the work area's stream".into()
    })?;
    let x = case
        .pool
        .allocate_from_host(&[1.0f64; 6], &case.stream)
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<Complex64>(4, &case.stream)
        .map_err(err)?;
    plan.r2c::<f64>(&x, &mut y).map_err(err)?;
    let spectrum = y.to_vec::<Complex64>().map_err(err)?;
    ensure(spectrum[0] == Complex64::new(6.0, 0.0), || {
        format!("the spectrum {spectrum:?}")
    })
}
