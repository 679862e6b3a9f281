//! The ordering harness: cases that use one cross-stream rule across two streams of the stub
//! and assert that its race checker (`c/cuda_race.c`) saw no race and that the data is right.
//! The core's `ordering` test and the annex crates' run their cases through [`run_cases`],
//! with the GPU asynchronous (`c/cuda_gpu.c`: each stream's work run by a worker of its own,
//! each operation taking [`OP_TIME`]), so a missing wait also gives wrong data: a control case
//! makes one stream late ([`Stub::gpu_delay`] of [`LATE`]), does the rule's work without its
//! wait (through the raw driver) and asserts both the race and the wrong data ([`unordered`]).

use std::process::ExitCode;
use std::time::Duration;

use cuda_safe::{Buffer, Device, DeviceMemoryResource, Kernel, LaunchConfig, ObjectCode, Stream};

use crate::{Installed, Stub};

/// PTX text for the stub, which knows the kernel `twice` of any image.
pub const PTX: &str =
    ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// Floats per buffer.
pub const N: usize = 1024;

/// What each copy, memset, kernel and library call takes on the asynchronous stub GPU.
pub const OP_TIME: Duration = Duration::from_millis(1);

/// How late a control case makes the writing stream: long beside [`OP_TIME`] and a thread's
/// scheduling on a loaded machine (60 ms was not: a CI run with two cores busy let the late
/// writer finish before the reader's unordered GEMM), so that the reader's unordered work runs
/// first.
pub const LATE: Duration = Duration::from_millis(1500);

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

/// The floats of `buffer`, read with the raw driver on `stream` (the buffer's own stream may
/// not have waited for the work under test).
pub fn read_on(buffer: &Buffer, stream: &Stream) -> Result<Vec<f32>, String> {
    let mut values = vec![0.0f32; buffer.len() / size_of::<f32>()];
    let driver = cuda_safe::sys::driver().map_err(|e| e.to_string())?;
    // SAFETY: `values` has room for the buffer's bytes; the stream is live, and synchronized
    // before `values` is read.
    let code = unsafe {
        driver.cuMemcpyAsync(
            values.as_mut_ptr() as u64,
            buffer.as_raw(),
            buffer.len(),
            stream.as_raw(),
        )
    };
    ensure(code.is_ok_and(|c| c.0 == 0), || {
        "the raw read failed".into()
    })?;
    stream.sync().map_err(failed)?;
    Ok(values)
}

/// Fills `buffer` with `value` through the raw driver on `stream`, unknown to the crate (so
/// none of its rules orders anything after it).
pub fn raw_fill(buffer: &Buffer, stream: &Stream, value: f32) -> Verdict {
    let driver = cuda_safe::sys::driver().map_err(|e| e.to_string())?;
    let words = buffer.len() / size_of::<f32>();
    // SAFETY: `words` 4-byte words of a live buffer, on a live stream.
    let code = unsafe {
        driver.cuMemsetD32Async(buffer.as_raw(), value.to_bits(), words, stream.as_raw())
    };
    ensure(code.is_ok_and(|c| c.0 == 0), || {
        "the raw fill failed".into()
    })
}

/// The control of a rule: the checker saw the race its missing wait left (then forgotten) and
/// `values` are not `right` everywhere (the unordered work ran in the wrong order).
pub fn unordered(stub: &Stub, values: &[f32], right: f32) -> Verdict {
    let (races, first) = stub.races();
    stub.races_reset();
    ensure(races > 0, || "no race seen without the wait".into())?;
    ensure(values.iter().any(|&v| v != right), || {
        format!("without the wait the data is still right ({right}); the race: {first}")
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
    stub.async_gpu(OP_TIME);
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
    stub.sync_gpu();
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
