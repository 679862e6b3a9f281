//! Every public operation that calls the driver (or NVRTC, or NVML), driven through every
//! failure, with the stub driver of `stub/c`.
//!
//! For each operation a clean run records the calls it makes, and those its result's drop
//! makes; then each call in turn is failed with each code (out of memory, illegal address, not
//! supported, launch failure and a code from a future driver; NVRTC's and NVML's own for their
//! calls) and the case checks that:
//! - nothing panics;
//! - the operation returns the error naming exactly the failed call and its code (with the
//!   driver's name for it, or the crate's fallback for an unknown code), or, for a failure in a
//!   release path (a `Drop` inside the operation, a current-context guard restoring), returns
//!   the value and logs exactly one error line naming them; a few failures are absorbed by
//!   design, each listed with the operation and why;
//! - no object outlives the case (the stub's live counts return to where they were), except
//!   the one object whose release failed (a virtual memory range counts with its chunks);
//! - a failure injected into a release on drop logs exactly one error line and is not retried;
//! - the crate never misuses the driver meanwhile (a destroyed or foreign handle, a call
//!   needing a context with none current, a copy past an allocation).
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs; the cases run one after the other on this thread. Prints one
//! line per operation and a summary; exits nonzero on any failure.
//!
//! The sources: `case.rs` runs one case of an operation (the `Op`s and their faults),
//! `fixtures.rs` makes what the operations work on, `ops/` lists the operations by area,
//! `check.rs` checks a faulted run against the clean one, `matrix.rs` runs an operation's
//! matrix of faults, and `standalone.rs` holds the cases outside the matrix.

mod ops;
mod standalone;
use cuda_safe_stub as stub;

use std::process::ExitCode;

use crate::ops::operations;
use crate::standalone::{
    error_texts, first_use, memory_models, old_driver, sanity, two_devices_and_ipc,
};
use crate::stub::Installed;
use cuda_safe_stub::faults::{Runner, report_panics};

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("fault_injection: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    report_panics();
    let mut runner = Runner::default();
    let mut report_group = |name: &str, detail: &str, group_faults: usize, failures: &[String]| {
        runner.group(name, detail, group_faults, failures);
    };

    let (first_faults, first_failures) = first_use(stub);
    report_group(
        "first use (cuInit, nvrtcVersion)",
        &format!("{first_faults} faults"),
        first_faults,
        &first_failures,
    );
    let sanity_failures = sanity(stub).unwrap_or_else(|error| vec![format!("failed: {error}")]);
    report_group("the stub through the crate", "", 0, &sanity_failures);
    let pair_failures =
        two_devices_and_ipc(stub).unwrap_or_else(|error| vec![format!("failed: {error}")]);
    report_group(
        "two devices and IPC through the crate",
        "",
        0,
        &pair_failures,
    );
    let model_failures =
        memory_models(stub).unwrap_or_else(|error| vec![format!("failed: {error}")]);
    report_group(
        "virtual memory, managed hints, 2-D/3-D copies through the crate",
        "",
        0,
        &model_failures,
    );
    let (text_faults, text_failures) = error_texts(stub);
    report_group(
        "error texts (cuGetErrorName, cuGetErrorString)",
        &format!("{text_faults} faults"),
        text_faults,
        &text_failures,
    );
    report_group(
        "an older driver (documented Unsupported)",
        "",
        0,
        &old_driver(stub),
    );

    let scratch = tempfile::tempdir().expect("a scratch directory");
    for op in &operations(scratch.path(), stub) {
        runner.matrix(stub, op);
    }
    runner.finish("fault_injection", stub)
}
