//! Checking one faulted run against the clean run.

use cuda_safe::Error;

use super::case::{Code, Failure, Fault, Observed, Op, Phase};
use crate::{Call, KINDS};

/// Calls that give an object back: a failure leaks that object, and inside an operation (not a
/// `close`) it is logged, not returned.
const RELEASES: [&str; 18] = [
    "cuMemUnmap",
    "cuMemRelease",
    "cuMemAddressFree",
    "cuArrayDestroy",
    "cuMipmappedArrayDestroy",
    "cuTexObjectDestroy",
    "cuSurfObjectDestroy",
    "cuStreamDestroy_v2",
    "cuEventDestroy_v2",
    "cuMemPoolDestroy",
    "cuMemFreeAsync",
    "cuMemFreeHost",
    "cuMemFree_v2",
    "cuLibraryUnload",
    "cuGreenCtxDestroy",
    "cuDevicePrimaryCtxRelease_v2",
    "nvrtcDestroyProgram",
    "nvmlShutdown",
];

/// Whether `error` is the failure of `call` with `code`, as the crate documents it: the
/// library's error naming both (or the launch-ordering error wrapping it), whose predicates
/// agree with the code.
pub fn names_fault(error: &Error, call: &str, code: Code) -> std::result::Result<(), String> {
    let wrong = || {
        Err(format!(
            "the error is not {call} failing with {}: {error:?}",
            code.text
        ))
    };
    match error {
        Error::Cuda {
            api,
            code: raw,
            name,
            ..
        } => {
            if *api != call || raw.0 != code.value || *name != code.text {
                return wrong();
            }
            if error.is_out_of_memory() != (code.value == 2)
                || error.is_not_supported() != (code.value == 801)
                || error.is_no_device()
            {
                return Err(format!("the predicates disagree with the code: {error:?}"));
            }
            Ok(())
        }
        Error::Nvrtc {
            api,
            code: raw,
            message,
            ..
        } => {
            if *api != call || raw.0 != code.value || *message != code.text {
                return wrong();
            }
            if error.is_out_of_memory() != (code.value == 1) {
                return Err(format!(
                    "is_out_of_memory disagrees with the code: {error:?}"
                ));
            }
            Ok(())
        }
        Error::Nvml {
            api,
            code: raw,
            message,
        } => {
            if *api != call || raw.0 != code.value || *message != code.text {
                return wrong();
            }
            if error.is_out_of_memory() != (code.value == 20)
                || error.is_not_supported() != (code.value == 3)
            {
                return Err(format!("the predicates disagree with the code: {error:?}"));
            }
            Ok(())
        }
        Error::Library(library) => {
            let text = error.to_string();
            if !text.contains(call) || !text.contains(code.text) {
                return wrong();
            }
            // The codes that mean out of memory and not supported, by library.
            let (oom, unsupported) = match library.library() {
                "cuBLAS" => (3, 15),
                "cuRAND" => (102, 204),
                "cuFFT" => (2, 16),
                "cuSPARSE" => (2, 10),
                _ => return wrong(),
            };
            if error.is_out_of_memory() != (code.value == oom)
                || error.is_not_supported() != (code.value == unsupported)
                || error.is_no_device()
            {
                return Err(format!("the predicates disagree with the code: {error:?}"));
            }
            Ok(())
        }
        Error::LaunchOrdering { source } => names_fault(source, call, code),
        _ => wrong(),
    }
}

/// Checks that exactly one line was logged, naming the call and the code.
fn one_line(logs: &[String], call: &str, code: Code) -> std::result::Result<(), String> {
    match logs {
        [line] if line.contains(call) && line.contains(code.text) => Ok(()),
        _ => Err(format!(
            "expected one error line naming {call} and {}, got {logs:?}",
            code.text
        )),
    }
}

/// Checks the live objects: none more than the clean run left except up to `leak` in all, none
/// fewer (an over-release).
fn check_live(clean: &Observed, seen: &Observed, leak: i64) -> std::result::Result<(), String> {
    let mut extra = 0;
    for (index, kind) in KINDS.iter().enumerate() {
        let expected = clean.after[index] - clean.before[index];
        let delta = seen.after[index] - seen.before[index];
        if delta < expected {
            return Err(format!(
                "{} {kind} object(s) released too many",
                expected - delta
            ));
        }
        extra += delta - expected;
    }
    if extra > leak {
        let detail: Vec<String> = KINDS
            .iter()
            .enumerate()
            .filter_map(|(index, kind)| {
                let over = (seen.after[index] - seen.before[index])
                    - (clean.after[index] - clean.before[index]);
                (over > 0).then(|| format!("{over} {kind}"))
            })
            .collect();
        return Err(format!(
            "leaked {} (at most {leak} allowed)",
            detail.join(", ")
        ));
    }
    Ok(())
}

/// Checks that a failed release is not made again: the drops after the fault (the result's and
/// the fixtures') call it no more often than the clean run's.
fn not_retried(call: &Call, clean: &Observed, seen: &Observed) -> std::result::Result<(), String> {
    if !RELEASES.contains(&call.name.as_str()) {
        return Ok(());
    }
    let count = |run: &Observed| {
        run.drop_calls
            .iter()
            .chain(&run.teardown_calls)
            .filter(|made| made.name == call.name)
            .count()
    };
    if count(seen) > count(clean) {
        return Err(format!("{} was called again after it failed", call.name));
    }
    Ok(())
}

/// Checks one faulted run against the clean run.
pub fn check(
    op: &Op,
    fault: &Fault,
    call: &Call,
    clean: &Observed,
    seen: &Observed,
) -> std::result::Result<(), String> {
    if let Some(trouble) = seen.later_trouble.first() {
        return Err(trouble.clone());
    }
    if seen.faults_pending != 0 {
        return Err("the fault never fired: the calls differ from the clean run's".into());
    }
    if seen.misuse.0 != 0 {
        return Err(format!("the crate misused the driver: {}", seen.misuse.1));
    }
    match fault.phase {
        Phase::Operation => {
            let absorbed = op
                .absorbed
                .iter()
                .any(|absorbed| absorbed.covers(call, fault.nth, fault.code));
            let release = RELEASES.contains(&call.name.as_str());
            // A release inside an operation, a guard restoring "no context", or a call the
            // operation lists, can only log (and may leak what it was releasing); a `close`
            // returns its error.
            let listed = op
                .logged
                .iter()
                .any(|listed| listed.covers(call, fault.nth, fault.code));
            let logged = call.unbinds() || (release && !op.releases) || listed;
            let may_leak = op.releases || call.unbinds() || release || listed;
            if !seen.drop_logs.is_empty() {
                return Err(format!("the result's drop logged {:?}", seen.drop_logs));
            }
            match &seen.outcome {
                Err(Failure::Panic(message)) => return Err(format!("panicked: {message}")),
                Ok(()) if absorbed => {
                    if !seen.logs.is_empty() {
                        return Err(format!("an absorbed failure logged {:?}", seen.logs));
                    }
                }
                Ok(()) if logged => one_line(&seen.logs, &call.name, fault.code)?,
                Ok(()) => return Err("the failure was swallowed: the operation succeeded".into()),
                Err(Failure::Error(error)) => {
                    names_fault(error, &call.name, fault.code)?;
                    if !seen.logs.is_empty() {
                        return Err(format!("the failed operation logged {:?}", seen.logs));
                    }
                }
            }
            not_retried(call, clean, seen)?;
            check_live(clean, seen, i64::from(may_leak) * op.leak.0)
        }
        Phase::Drop => {
            match &seen.outcome {
                Ok(()) => {}
                Err(Failure::Panic(message)) => return Err(format!("panicked: {message}")),
                Err(Failure::Error(error)) => return Err(format!("the operation failed: {error}")),
            }
            one_line(&seen.drop_logs, &call.name, fault.code)?;
            not_retried(call, clean, seen)?;
            check_live(clean, seen, op.leak.0)
        }
    }
}
