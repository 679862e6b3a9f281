//! Memory of another device than the handle's: refused before cuSOLVER until the handle's
//! device is granted access to its pool; a workspace resource of another device is refused.

use std::sync::Arc;

use cuda_safe::{Device, Error, MemoryResource};
use cuda_safe_libs::solver::{Fill, Layout, Solver};

use super::factor::spd;
use super::{Case, CaseFn, ensure};

pub(crate) const CASES: &[(&str, CaseFn)] = &[(
    "device 1's memory is refused before cuSOLVER until its pool grants device 0 access; a \
     workspace resource of device 1 is refused",
    another_device,
)];

fn err(error: Error) -> String {
    error.to_string()
}

fn another_device(case: &Case) -> Result<(), String> {
    let (first, second) = (*case.stream.device(), Device::new(1).map_err(err)?);
    let stream = second.create_stream(Default::default()).map_err(err)?;
    let pool = second.default_memory_resource().map_err(err)?;
    let solver = Solver::new(&case.stream).map_err(err)?;
    let mut a = pool.allocate_from_host(&spd(4, 7), &stream).map_err(err)?;
    case.stub.take_log();
    match solver.potrf::<f64>(Fill::Lower, &Layout::square(4), &mut a) {
        Err(Error::InvalidArgument(why)) if why.contains("device 1's") => {}
        other => return Err(format!("device 1's A for a device 0 handle: {other:?}")),
    }
    let calls: Vec<String> = case.stub.take_log().into_iter().map(|c| c.name).collect();
    ensure(
        !calls.iter().any(|call| call.starts_with("cusolver")),
        || format!("the refused routine called {calls:?}"),
    )?;
    pool.grant_access(&first).map_err(err)?;
    let granted = solver.potrf::<f64>(Fill::Lower, &Layout::square(4), &mut a);
    pool.revoke_access(&first).map_err(err)?;
    granted
        .and_then(|info| info.check())
        .map_err(|e| format!("with access granted: {e}"))?;
    let resource: Arc<dyn MemoryResource> = Arc::new(pool);
    match Solver::with_memory_resource(&case.stream, resource) {
        Err(Error::InvalidArgument(why)) if why.contains("device 1's memory") => Ok(()),
        other => Err(format!("a workspace of device 1: {other:?}")),
    }
}
