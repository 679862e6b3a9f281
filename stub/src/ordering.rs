//! The ordering harness: cases that use one cross-stream rule across two streams of the stub
//! and assert that its race checker (`c/cuda_race.c`) saw no race and that the data is right.
//! The core's `ordering` test and the annex crates' run their cases through [`run_cases`].

use std::process::ExitCode;

use cuda_safe::{Buffer, Device, DeviceMemoryResource, Kernel, LaunchConfig, ObjectCode, Stream};

use crate::{Installed, Stub};

/// PTX text for the stub, which knows the kernel `twice` of any image.
pub const PTX: &str =
    ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// Floats per buffer.
pub const N: usize = 1024;

/// A case's verdict: `Err` says what went wrong.
pub type Verdict = Result<(), String>;

/// What the cases work on: two streams of device 0's primary context, its pool, `twice`.
#[derive(Debug)]
pub struct Fixture {
    /// Device 0 of the stub.
    pub device: Device,
    /// A stream of its primary context.
    pub first: Stream,
    /// Another.
    pub second: Stream,
    /// Its default pool.
    pub pool: DeviceMemoryResource,
    /// `twice`, which the stub runs by doubling `n` floats.
    pub kernel: Kernel,
    /// A configuration for `N` elements.
    pub config: LaunchConfig,
}

/// `Ok` when `holds`, else the message `what` makes.
pub fn ensure(holds: bool, what: impl FnOnce() -> String) -> Verdict {
    if holds { Ok(()) } else { Err(what()) }
}

/// An unexpected error as a verdict's message.
pub fn failed(error: cuda_safe::Error) -> String {
    format!("unexpected error: {error}")
}

/// No race since the case began, and no misuse.
pub fn no_race(stub: &Stub) -> Verdict {
    let (races, first) = stub.races();
    ensure(races == 0, || {
        format!("{races} ordering races; the first: {first}")
    })?;
    let (misuses, last) = stub.misuse();
    ensure(misuses == 0, || {
        format!("{misuses} misuses; the last: {last}")
    })
}

/// Every float of `buffer` is `expected` (read on the buffer's stream, which waits).
pub fn holds(buffer: &Buffer, expected: f32) -> Verdict {
    let values = buffer.to_vec::<f32>().map_err(failed)?;
    ensure(values.iter().all(|&v| v == expected), || {
        format!("expected {expected} everywhere, read {:?}...", &values[..4])
    })
}

/// A case: a name and the check it runs on the fixture.
pub type Case = (&'static str, fn(&Stub, &Fixture) -> Verdict);

/// Installs the stub, makes the fixture and runs `cases` one after the other, each from a quiet
/// GPU; prints a line per case and a summary under `test`'s name. Call it first in `main`.
pub fn run_cases(test: &str, cases: &[Case]) -> ExitCode {
    let stub = match crate::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("{test}: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    let fixture = Device::new(0).and_then(|device| {
        device.context()?.bind()?;
        Ok(Fixture {
            first: device.create_stream(Default::default())?,
            second: device.create_stream(Default::default())?,
            pool: device.default_memory_resource()?,
            kernel: ObjectCode::from_ptx(PTX)?.get_kernel("twice")?,
            config: LaunchConfig::for_num_elements(N, 256)?,
            device,
        })
    });
    let fx = &fixture.expect("the fixture on the stub");
    let mut failures = 0;
    for (name, case) in cases {
        // Everything before the case is known finished: each case starts from a quiet GPU.
        fx.first
            .sync()
            .and_then(|()| fx.second.sync())
            .expect("the streams drain");
        stub.reset();
        let verdict = case(stub, fx);
        fx.first
            .sync()
            .and_then(|()| fx.second.sync())
            .expect("the streams drain");
        match verdict {
            Ok(()) => println!("ok   {name}"),
            Err(why) => {
                failures += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
    ensure(stub.race_checker_on(), || {
        "the race checker turned itself off".into()
    })
    .expect("the checker runs");
    if failures == 0 {
        println!("{test}: {} cases passed", cases.len());
        ExitCode::SUCCESS
    } else {
        println!("{test}: {failures} of {} cases failed", cases.len());
        ExitCode::FAILURE
    }
}
