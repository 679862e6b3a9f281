//! Memory of another device than the plan's: refused before cuFFT until the plan's device is
//! granted access to its pool.

use cuda_safe::{Device, Error};
use cuda_safe_libs::fft::{Complex32, FftDesc, FftDirection, FftPlan};

use super::{Case, CaseFn, ensure, names};

pub(crate) const CASES: &[(&str, CaseFn)] = &[(
    "device 1's memory is refused before cuFFT until its pool grants device 0 access",
    another_device,
)];

fn err(error: Error) -> String {
    error.to_string()
}

fn another_device(case: &Case) -> Result<(), String> {
    let second = Device::new(1).map_err(err)?;
    let stream = second.create_stream(Default::default()).map_err(err)?;
    let pool = second.default_memory_resource().map_err(err)?;
    let plan = FftPlan::new(&case.stream, &FftDesc::c2c::<Complex32>(16)).map_err(err)?;
    let x = pool
        .allocate_zeroed::<Complex32>(16, &stream)
        .map_err(err)?;
    let mut y = case
        .pool
        .allocate_zeroed::<Complex32>(16, &case.stream)
        .map_err(err)?;
    case.stub.take_log();
    match plan.c2c::<Complex32>(&x, &mut y, FftDirection::Forward) {
        Err(Error::InvalidArgument(why)) if why.contains("device 1's") => {}
        other => return Err(format!("device 1's input for a device 0 plan: {other:?}")),
    }
    let calls = names(case.stub.take_log());
    ensure(
        !calls.iter().any(|call| call.starts_with("cufftExec")),
        || format!("the refused execution called {calls:?}"),
    )?;
    pool.grant_access(&case.device).map_err(err)?;
    let granted = plan.c2c::<Complex32>(&x, &mut y, FftDirection::Forward);
    pool.revoke_access(&case.device).map_err(err)?;
    granted.map_err(|e| format!("with access granted: {e}"))
}
