//! Green contexts beyond splits and creation, on the stub driver (`stub/c/cuda_green.c`):
//! context and green-context ids, the SMs a stream runs on, green contexts and streams made by
//! raw driver calls and wrapped without ownership (used by the crate's launches, never
//! destroyed by it), workqueue configurations, structured splits with a group layout, and the
//! typed refusals of each on a CUDA 13.0 driver or under the `cuda-12` ABI, made before any
//! call to the driver.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs; the cases run one after the other and each checks that the
//! driver was not misused.

mod foreign;
mod splits;

use cuda_safe_stub as stub;

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::sys::{CUresult, LoadError};
use cuda_safe::{Error, StreamOptions};
use cuda_safe_stub::faults::fixtures::{device, green, stream};
use stub::{Installed, KINDS, Stub};

/// A case's verdict: `Err` says what went wrong.
pub(crate) type Verdict = Result<(), String>;

pub(crate) fn ensure(holds: bool, what: impl FnOnce() -> String) -> Verdict {
    if holds { Ok(()) } else { Err(what()) }
}

pub(crate) fn failed(error: Error) -> String {
    format!("unexpected error: {error}")
}

/// A raw driver call's outcome as a verdict.
pub(crate) fn raw(call: Result<CUresult, LoadError>, what: &str) -> Verdict {
    match call {
        Ok(CUresult::CUDA_SUCCESS) => Ok(()),
        other => Err(format!("{what}: {other:?}")),
    }
}

/// Live objects of `kind` (one of the stub's [`KINDS`]).
pub(crate) fn live(stub: &Stub, kind: &str) -> i64 {
    let index = KINDS.iter().position(|known| *known == kind).unwrap_or(0);
    stub.live()[index]
}

/// The driver version the stub reports by default (CUDA 13.1) and the one before it.
pub(crate) const CUDA_13_1: i32 = 13010;
pub(crate) const CUDA_13_0: i32 = 13000;

/// Whether this build has the `cuda-13` ABI (the 13.1 features need it).
pub(crate) fn abi13() -> bool {
    cuda_safe::sys::ABI_MAJOR >= 13
}

/// An [`Error::Unsupported`] whose text names `needs`.
pub(crate) fn unsupported_naming<T: std::fmt::Debug>(
    outcome: &cuda_safe::Result<T>,
    needs: &str,
) -> bool {
    match outcome {
        Err(error @ Error::Unsupported { .. }) => error.to_string().contains(needs),
        _ => false,
    }
}

/// Ids: a context's is stable and its own; a green context's too, `None` for a primary one
/// (under the `cuda-12` ABI, which lacks `cuGreenCtxGetId`, a typed refusal).
fn contexts_and_green_contexts_have_ids(_: &Stub) -> Verdict {
    let primary = device().context().map_err(failed)?;
    let (a, b) = (green(), green());
    let ids = [&primary, &a, &b].map(|context| context.id());
    let ids: Vec<u64> = ids.into_iter().collect::<Result<_, _>>().map_err(failed)?;
    ensure(primary.id().map_err(failed)? == ids[0], || {
        "a context's id changed".into()
    })?;
    ensure(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        || format!("ids shared: {ids:?}"),
    )?;
    ensure(matches!(primary.green_id(), Ok(None)), || {
        "a primary context has a green id".into()
    })?;
    let green_ids = (a.green_id(), b.green_id());
    if abi13() {
        let (Ok(Some(x)), Ok(Some(y))) = green_ids else {
            return Err(format!("green ids: {green_ids:?}"));
        };
        ensure(
            x != y && matches!(a.green_id(), Ok(Some(again)) if again == x),
            || format!("green ids {x} and {y}"),
        )
    } else {
        ensure(unsupported_naming(&green_ids.0, "cuda-13"), || {
            format!("a green id under the cuda-12 ABI: {:?}", green_ids.0)
        })
    }
}

/// The SMs a stream runs on: the device's for a primary context's stream, the partition for a
/// green context's; a 13.0 driver is refused before the driver is asked.
fn streams_report_the_sms_they_run_on(stub: &Stub) -> Verdict {
    let (primary, green) = (
        stream(),
        green()
            .create_stream(StreamOptions::default())
            .map_err(failed)?,
    );
    if !abi13() {
        let refused = primary.sm_resource();
        return ensure(unsupported_naming(&refused, "cuda-13"), || {
            format!("under the cuda-12 ABI: {refused:?}")
        });
    }
    let whole = primary.sm_resource().map_err(failed)?.sm_count();
    let part = green.sm_resource().map_err(failed)?.sm_count();
    let device_sms = device().resources().sm().map_err(failed)?.sm_count();
    ensure(
        whole == device_sms && Some(part) == green.context().green_sm_count(),
        || format!("{whole} and {part} SMs"),
    )?;
    stub.set_driver_version(CUDA_13_0);
    let before = stub.calls("cuStreamGetDevResource");
    let refused = green.sm_resource();
    let after = stub.calls("cuStreamGetDevResource");
    stub.set_driver_version(CUDA_13_1);
    ensure(unsupported_naming(&refused, "13.1"), || {
        format!("on a 13.0 driver: {refused:?}")
    })?;
    ensure(after == before, || "the 13.0 driver was asked".into())
}

type Case = fn(&Stub) -> Verdict;

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("green_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    let cases: [(&str, Case); 9] = [
        (
            "contexts and green contexts have ids",
            contexts_and_green_contexts_have_ids,
        ),
        (
            "streams report the SMs they run on",
            streams_report_the_sms_they_run_on,
        ),
        (
            "a foreign green context is used and never destroyed",
            foreign::a_foreign_green_context_is_used_and_never_destroyed,
        ),
        (
            "an owner goes with the last handle",
            foreign::an_owner_goes_with_the_last_handle,
        ),
        (
            "bad foreign handles are refused",
            foreign::bad_foreign_handles_are_refused,
        ),
        (
            "workqueue configurations reach the green context",
            splits::workqueue_configurations_reach_the_green_context,
        ),
        (
            "group layouts make structured splits",
            splits::group_layouts_make_structured_splits,
        ),
        (
            "bad layouts are refused before the driver",
            splits::bad_layouts_are_refused_before_the_driver,
        ),
        (
            "a 13.0 driver refuses the 13.1 features",
            splits::a_13_0_driver_refuses_the_13_1_features,
        ),
    ];
    let mut failures = 0;
    for (name, case) in cases {
        let start = Instant::now();
        stub.reset();
        let verdict = case(stub).and_then(|()| {
            let (misuses, last) = stub.misuse();
            ensure(misuses == 0, || format!("the driver was misused: {last}"))
        });
        match verdict {
            Ok(()) => println!("ok   {name} ({:.1?})", start.elapsed()),
            Err(why) => {
                failures += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
    println!("green_stub: {} cases, {failures} failed", cases.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
