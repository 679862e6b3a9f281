//! A kernel's parameter list that the driver fails to report (`cuKernelGetParamInfo`), with
//! the stub driver of `stub/c`, as `launch` documents it:
//! - a failure at the first parameter is logged once (one error line naming the call and its
//!   code) over many launches, never read again, and the launches go unchecked;
//! - a failure partway keeps the parameters read before it: launches with other sizes for them,
//!   or fewer arguments, are refused (`InvalidArgument`), the others go ahead; logged once;
//! - `CUDA_ERROR_NOT_SUPPORTED` (a driver without the query) logs nothing and is not read again.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs. Prints one line per case; exits nonzero on any failure.

use cuda_safe_stub as stub;

use std::process::ExitCode;

use cuda_safe::{Buffer, Error, Kernel, LaunchConfig, ObjectCode, Stream, StreamOptions, launch};
use stub::{Installed, Stub};

/// PTX text; the stub knows the kernels `twice` (a pointer and a count, 8 bytes each) and
/// `noop` (no parameters) of any image.
const PTX: &str = ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// Elements of the buffer `twice` doubles.
const N: usize = 256;

/// Launches per case: the failure must be logged once over all of them.
const LAUNCHES: usize = 50;

/// `CUDA_ERROR_OUT_OF_MEMORY` and `CUDA_ERROR_NOT_SUPPORTED`.
const OUT_OF_MEMORY: i32 = 2;
const NOT_SUPPORTED: i32 = 801;

type Outcome = Result<(), String>;

/// What the cases launch on.
struct Fixture {
    stream: Stream,
    buffer: Buffer,
    config: LaunchConfig,
}

impl Fixture {
    fn new() -> Self {
        let device = cuda_safe::Device::new(0).expect("the stub's device 0");
        let stream = device
            .create_stream(StreamOptions::default())
            .expect("a stream");
        let buffer = device
            .default_memory_resource()
            .expect("the default pool")
            .allocate_from_host(&[1.0f32; N], &stream)
            .expect("a buffer");
        let config = LaunchConfig::for_num_elements(N, 128).expect("a configuration");
        Self {
            stream,
            buffer,
            config,
        }
    }

    /// `twice(buffer, N)`, which fits its parameters.
    fn twice(&mut self, kernel: &Kernel) -> cuda_safe::Result<()> {
        // SAFETY: the stub's `twice` doubles N floats of its first argument, which holds N.
        unsafe { launch(&self.stream, &self.config, kernel, (&mut self.buffer, N)) }
    }
}

/// A kernel just looked up: its parameter list not read yet.
fn fresh(name: &str) -> Kernel {
    ObjectCode::from_ptx(PTX)
        .and_then(|code| code.get_kernel(name))
        .expect("a kernel of the stub")
}

/// Exactly one error line, naming the call and `code`.
fn one_line(logs: &[String], code: &str) -> Outcome {
    match logs {
        [line] if line.contains("cuKernelGetParamInfo") && line.contains(code) => Ok(()),
        _ => Err(format!(
            "expected one error line naming cuKernelGetParamInfo and {code}, got {logs:?}"
        )),
    }
}

/// The stub's calls of the parameter query since the last reset.
fn reads(stub: &Stub) -> u64 {
    stub.calls("cuKernelGetParamInfo")
}

/// A failure at the first parameter: logged once, never read again, launches unchecked.
fn failure_at_the_first_parameter(stub: &Stub, fixture: &mut Fixture) -> Outcome {
    let kernel = fresh("twice");
    stub.reset();
    stub::take_error_logs();
    stub.fail("cuKernelGetParamInfo", OUT_OF_MEMORY, 1);
    for round in 0..LAUNCHES {
        fixture
            .twice(&kernel)
            .map_err(|error| format!("launch {round} failed: {error}"))?;
    }
    let clone = kernel.clone();
    fixture
        .twice(&clone)
        .map_err(|error| format!("a clone's launch failed: {error}"))?;
    if kernel.params().is_some() || clone.param_count().is_some() {
        return Err("the parameter list is reported after a failed read".into());
    }
    one_line(&stub::take_error_logs(), "CUDA_ERROR_OUT_OF_MEMORY")?;
    if reads(stub) != 1 {
        return Err(format!("read {} times, not once", reads(stub)));
    }
    // Nothing was read, so nothing is checked: an argument of another size goes to the driver
    // (the stub's `twice` reads a pointer and a count: both given, the count a zero).
    // SAFETY: the stub's `twice` with a count of 0 touches no memory.
    unsafe {
        launch(
            &fixture.stream,
            &fixture.config,
            &kernel,
            (&fixture.buffer, 0u64, 7u32),
        )
    }
    .map_err(|error| format!("an unchecked launch failed: {error}"))?;
    Ok(())
}

/// A failure at the second parameter: the first one's size is still checked.
fn failure_partway(stub: &Stub, fixture: &mut Fixture) -> Outcome {
    let kernel = fresh("twice");
    stub.reset();
    stub::take_error_logs();
    stub.fail("cuKernelGetParamInfo", OUT_OF_MEMORY, 2);
    for round in 0..LAUNCHES {
        fixture
            .twice(&kernel)
            .map_err(|error| format!("launch {round} failed: {error}"))?;
    }
    // SAFETY: refused before the driver: the first argument is 4 bytes, the parameter 8.
    let narrow = unsafe { launch(&fixture.stream, &fixture.config, &kernel, (5u32, N)) };
    match narrow {
        Err(error @ Error::InvalidArgument(_)) if error.to_string().contains("parameter 0") => {}
        other => return Err(format!("a 4-byte first argument gave {other:?}")),
    }
    // SAFETY: refused before the driver: no arguments for a kernel of at least one parameter.
    let none = unsafe { launch(&fixture.stream, &fixture.config, &kernel, ()) };
    match none {
        Err(error @ Error::InvalidArgument(_)) if error.to_string().contains("at least 1") => {}
        other => return Err(format!("no arguments gave {other:?}")),
    }
    if kernel.params().is_some() {
        return Err("a partial parameter list is reported as the list".into());
    }
    one_line(&stub::take_error_logs(), "CUDA_ERROR_OUT_OF_MEMORY")?;
    if reads(stub) != 2 {
        return Err(format!(
            "read {} times, not twice (the failed read)",
            reads(stub)
        ));
    }
    Ok(())
}

/// `CUDA_ERROR_NOT_SUPPORTED`: a driver that cannot tell; nothing logged, never read again.
fn not_supported(stub: &Stub, fixture: &mut Fixture) -> Outcome {
    let kernel = fresh("noop");
    stub.reset();
    stub::take_error_logs();
    stub.fail("cuKernelGetParamInfo", NOT_SUPPORTED, 1);
    for round in 0..LAUNCHES {
        // SAFETY: the stub's `noop` reads no arguments: unchecked, the 4 bytes go unused.
        unsafe { launch(&fixture.stream, &fixture.config, &kernel, (3u32,)) }
            .map_err(|error| format!("launch {round} failed: {error}"))?;
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        return Err(format!("NOT_SUPPORTED logged {logs:?}"));
    }
    if reads(stub) != 1 || kernel.params().is_some() {
        return Err(format!("read {} times, not once", reads(stub)));
    }
    Ok(())
}

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("param_info: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    let mut fixture = Fixture::new();
    type Case = fn(&Stub, &mut Fixture) -> Outcome;
    let cases: [(&str, Case); 3] = [
        (
            "a failure at the first parameter",
            failure_at_the_first_parameter,
        ),
        ("a failure at the second parameter", failure_partway),
        ("CUDA_ERROR_NOT_SUPPORTED", not_supported),
    ];
    let mut failed = 0;
    for (name, case) in cases {
        let outcome = case(stub, &mut fixture);
        stub.disarm();
        match outcome {
            Ok(()) => println!("ok   {name}"),
            Err(problem) => {
                failed += 1;
                println!("FAIL {name}: {problem}");
            }
        }
    }
    if let Err(error) = fixture.stream.sync() {
        println!("FAIL synchronizing the stream: {error}");
        failed += 1;
    }
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        println!("FAIL the crate misused the driver: {last}");
        failed += 1;
    }
    println!("param_info: {failed} failure(s)");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
