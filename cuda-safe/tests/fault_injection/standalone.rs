//! The cases outside the matrix: first use, error texts, an older driver, and a fault-free
//! run of the stub through the crate.

use std::panic::{AssertUnwindSafe, catch_unwind};

use cuda_safe::checkpoint::Process;
use cuda_safe::{
    CodeKind, Device, Error, LaunchConfig, Program, Result, SplitRequest, StreamOptions, Uuid,
    launch,
};

use crate::case::{CUDA_CODES, codes_for, panic_message};
use crate::check::names_fault;
use crate::fixtures::{N, arch_90, device, pool, program, stream};
use crate::stub::{self, Stub};

/// The calls made only until they first succeed, failed before anything else runs: `cuInit`
/// (through the first `Device::count`) and `nvrtcVersion` (through `nvrtc_version`). Each
/// failure is returned and the next call tries again. Returns (faults, failures).
pub(crate) fn first_use(stub: &Stub) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut faults = 0;
    let cases: [(&str, &dyn Fn() -> Result<()>); 2] = [
        ("cuInit", &|| Device::count().map(drop)),
        ("nvrtcVersion", &|| cuda_safe::nvrtc_version().map(drop)),
    ];
    for (call, first) in cases {
        for &code in codes_for(call) {
            stub.reset();
            stub.fail(call, code.value as i32, 1);
            faults += 1;
            match catch_unwind(AssertUnwindSafe(first)) {
                Ok(Err(error)) => {
                    if let Err(problem) = names_fault(&error, call, code) {
                        failures.push(format!("{call} failing with {}: {problem}", code.text));
                    }
                }
                Ok(Ok(())) => {
                    failures.push(format!("{call} failing with {}: swallowed", code.text))
                }
                Err(_) => failures.push(format!("{call}: panicked: {}", panic_message())),
            }
        }
        stub.reset();
        let retried = first().is_ok() && stub.calls(call) == 1;
        stub.reset();
        let remembered = first().is_ok() && stub.calls(call) == 0;
        if !(retried && remembered) {
            failures.push(format!(
                "{call}: after its failures, one successful call then none expected"
            ));
        }
    }
    (faults, failures)
}

/// The error texts: a failed `cuGetErrorName` / `cuGetErrorString` while an error is built
/// leaves the crate's fallbacks, and the error is still the call's. Returns (faults, failures).
pub(crate) fn error_texts(stub: &Stub) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut faults = 0;
    let stream = stream();
    for (text_call, fallback) in [
        ("cuGetErrorName", "an unknown CUDA error code"),
        ("cuGetErrorString", "no message from the driver"),
    ] {
        for &code in &CUDA_CODES {
            stub.reset();
            stub.fail("cuStreamSynchronize", 2, 1);
            stub.fail(text_call, code.value as i32, 1);
            faults += 1;
            match stream.sync() {
                Err(Error::Cuda {
                    api: "cuStreamSynchronize",
                    code: raw,
                    name,
                    message,
                }) if raw.0 == 2 => {
                    let text = if text_call == "cuGetErrorName" {
                        name
                    } else {
                        message
                    };
                    if text != fallback {
                        failures.push(format!("{text_call} failing: the error says {text:?}"));
                    }
                }
                other => failures.push(format!("{text_call} failing: {other:?}")),
            }
        }
    }
    (faults, failures)
}

/// Documented mappings of an older driver: checkpoints need 12.8 and unequal splits 13.1,
/// both reported as `Unsupported`.
pub(crate) fn old_driver(stub: &Stub) -> Vec<String> {
    let mut failures = Vec::new();
    stub.set_driver_version(12040);
    match Process::new(4242) {
        Err(error @ Error::Unsupported { .. }) if error.is_not_supported() => {}
        other => failures.push(format!("checkpoints on a 12.4 driver: {other:?}")),
    }
    stub.set_driver_version(13000);
    let sm = device().resources().sm().expect("the SMs");
    match sm.split(&SplitRequest::counts([64, 32])) {
        Err(Error::Unsupported { .. }) => {}
        other => failures.push(format!("unequal groups on a 13.0 driver: {other:?}")),
    }
    stub.set_driver_version(13010);
    failures
}

/// The stub through the crate, fault-free: copies round-trip, the kernel runs, compile errors
/// carry the log, a kernel's parameter list is read, and every object goes back.
pub(crate) fn sanity(stub: &Stub) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    let before = stub.live();
    {
        let device = device();
        let properties = device.properties()?;
        if properties.multiprocessor_count != 132 || device.arch()? != "90" {
            failures.push(format!("the device: {properties:?}"));
        }
        let stream = device.create_stream(StreamOptions::default())?;
        let pool = device.default_memory_resource()?;
        let mut x = pool.allocate_from_host(&[1.5f32; N], &stream)?;
        let kernel = program()
            .compile(CodeKind::Cubin)?
            .load()?
            .get_kernel("twice<float>")?;
        let config = LaunchConfig::for_num_elements(N, 256)?;
        // SAFETY: the stub's `twice` doubles the N floats `x` holds.
        unsafe { launch(&stream, &config, &kernel, (&mut x, N)) }?;
        if x.to_vec::<f32>()? != [3.0f32; N] || kernel.param_count() != Some(2) {
            failures
                .push("the kernel did not run on the buffer, or its parameters are unknown".into());
        }
        // SAFETY: as above; one argument is missing, which the parameter list reveals.
        let missing = unsafe { launch(&stream, &config, &kernel, (&mut x,)) };
        if !matches!(missing, Err(Error::InvalidArgument(_))) {
            failures.push(format!("a launch with too few arguments: {missing:?}"));
        }
        let mut y = pool.allocate_zeroed::<f64>(N, &stream)?;
        y.fill(0.25f64)?;
        let z = pool.allocate_zeroed::<u16>(N, &stream)?;
        if y.to_vec::<f64>()? != [0.25f64; N] || z.to_vec::<u16>()? != [0u16; N] {
            failures.push("fills do not write what they were given".into());
        }
        let broken = Program::new("#error broken", arch_90())?.compile(CodeKind::Ptx);
        match broken {
            Err(Error::Nvrtc { log: Some(log), .. }) if log.contains("#error") => {}
            other => failures.push(format!("a compile error: {other:?}")),
        }
        let uuid: Uuid = device.uuid()?;
        if Device::from_nvml(&device.to_nvml()?)? != device || uuid.0[0] != 0x5a {
            failures.push("CUDA and NVML disagree on the device".into());
        }
    }
    if !device().release_primary_context() || stub.live() != before {
        failures.push(format!("objects left: {before:?} -> {:?}", stub.live()));
    }
    // Every operation below starts with the primary context and the default pool made.
    pool();
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures.push(format!("misuses: {misuses}, last: {last}"));
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures.push(format!("logged: {logs:?}"));
    }
    Ok(failures)
}
