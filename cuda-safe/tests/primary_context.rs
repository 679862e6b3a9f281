//! `Device::release_primary_context` against the stub driver: once released, the primary
//! context is kept only by the handles that use it (a query with no handle to return makes and
//! releases it), until `set_current` or `retain_primary_context` asks for it again.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

use cuda_safe_stub as stub;

use std::process::ExitCode;

use cuda_safe::{Device, Result};
use stub::{Installed, Stub};

/// The stub's live primary-context retains.
fn contexts(stub: &Stub) -> i64 {
    stub.live()[0]
}

fn run(stub: &Stub) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    assert_eq!(contexts(stub), 1, "set_current keeps the context");
    device.mem_info()?;
    assert_eq!(contexts(stub), 1, "queries share the kept retain");

    assert!(device.release_primary_context(), "it was kept");
    assert_eq!(contexts(stub), 0, "released at once: no handle uses it");
    assert!(
        !device.release_primary_context(),
        "nothing is kept any more"
    );

    device.mem_info()?;
    assert_eq!(contexts(stub), 0, "a query makes it and lets it go");
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let buffer = pool.allocate(64, &stream)?;
    assert_eq!(contexts(stub), 1, "the handles share one retain");
    drop((buffer, pool));
    stream.sync()?;
    drop(stream);
    assert_eq!(contexts(stub), 0, "gone with the last handle");
    drop(device.context()?);
    drop(device.default_memory_resource()?);
    assert_eq!(contexts(stub), 0, "still not kept");

    device.retain_primary_context();
    device.mem_info()?;
    assert_eq!(contexts(stub), 1, "kept again after retain_primary_context");
    assert!(device.release_primary_context());
    assert_eq!(contexts(stub), 0);
    device.set_current()?;
    drop(device.create_stream(Default::default())?);
    assert_eq!(contexts(stub), 1, "kept again after set_current");
    let (misuses, last) = stub.misuse();
    assert_eq!(misuses, 0, "the stub saw a misuse: {last}");
    Ok(())
}

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("primary_context: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    match run(stub) {
        Ok(()) => {
            println!("primary_context: ok");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("primary_context: {error}");
            ExitCode::FAILURE
        }
    }
}
