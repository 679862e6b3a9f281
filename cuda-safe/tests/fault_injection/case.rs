//! One case: an operation, the fault injected into it (if any) and what the run did.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use cuda_safe::{Error, Result};

use crate::stub::{self, Call, Live, Stub};

/// A failure to inject: the code, and the text the error carries for it (the driver's name,
/// NVRTC's or NVML's message, or the crate's fallback for a code the library does not know).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Code {
    pub(crate) value: u32,
    pub(crate) text: &'static str,
}

const fn code(value: u32, text: &'static str) -> Code {
    Code { value, text }
}

/// A code newer than any header: the library has no name for it.
const FUTURE: u32 = 12345;

pub(crate) const CUDA_CODES: [Code; 5] = [
    code(2, "CUDA_ERROR_OUT_OF_MEMORY"),
    code(700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
    code(801, "CUDA_ERROR_NOT_SUPPORTED"),
    code(719, "CUDA_ERROR_LAUNCH_FAILED"),
    code(FUTURE, "an unknown CUDA error code"),
];

const NVRTC_CODES: [Code; 4] = [
    code(1, "NVRTC_ERROR_OUT_OF_MEMORY"),
    code(6, "NVRTC_ERROR_COMPILATION"),
    code(11, "NVRTC_ERROR_INTERNAL_ERROR"),
    code(FUTURE, "NVRTC_ERROR unknown"),
];

const NVML_CODES: [Code; 4] = [
    code(20, "Insufficient Memory"),
    code(3, "Not Supported"),
    code(15, "GPU is lost"),
    code(FUTURE, "Unknown Error"),
];

/// The codes injected into a call, by its library.
pub(crate) fn codes_for(call: &str) -> &'static [Code] {
    if call.starts_with("nvrtc") {
        &NVRTC_CODES
    } else if call.starts_with("nvml") {
        &NVML_CODES
    } else {
        &CUDA_CODES
    }
}

/// Where a fault is injected: into the operation, or into the drop of what it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Operation,
    Drop,
}

/// A fault: the `nth` call of `name` in `phase` returns `code`.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub(crate) phase: Phase,
    pub(crate) name: String,
    pub(crate) nth: usize,
    pub(crate) code: Code,
}

/// What one run of an operation did.
pub(crate) struct Observed {
    /// `Ok(())`, the error, or a panic's message.
    pub(crate) outcome: std::result::Result<(), Failure>,
    pub(crate) calls: Vec<Call>,
    pub(crate) drop_calls: Vec<Call>,
    /// The calls of the fixtures' drop.
    pub(crate) teardown_calls: Vec<Call>,
    pub(crate) logs: Vec<String>,
    pub(crate) drop_logs: Vec<String>,
    /// Panics in the drop of the result or of the fixtures, and lines logged by the fixtures.
    pub(crate) later_trouble: Vec<String>,
    pub(crate) before: Live,
    pub(crate) after: Live,
    pub(crate) faults_pending: usize,
    pub(crate) misuse: (u64, String),
}

pub(crate) enum Failure {
    Error(Error),
    Panic(String),
}

/// A failure an operation absorbs (or only logs) by design, and why.
pub(crate) struct Absorbed {
    /// The call, as [`Call`] displays it.
    pub(crate) call: &'static str,
    /// Which of its calls (from 1); all when empty.
    pub(crate) nths: &'static [usize],
    /// Which codes (their values); all when empty.
    pub(crate) codes: &'static [u32],
    /// Why (the behaviour the crate documents).
    pub(crate) why: &'static str,
}

impl Absorbed {
    pub(crate) fn covers(&self, call: &Call, nth: usize, code: Code) -> bool {
        call.to_string() == self.call
            && (self.nths.is_empty() || self.nths.contains(&nth))
            && (self.codes.is_empty() || self.codes.contains(&code.value))
    }
}

type Exec = Box<dyn Fn(&Stub, Option<&Fault>) -> Observed>;

/// An operation and what its cases expect.
pub(crate) struct Op {
    pub(crate) name: String,
    /// Calls whose failure the operation absorbs by design: it succeeds and logs nothing.
    pub(crate) absorbed: Vec<Absorbed>,
    /// Calls whose failure the operation only logs by design (besides the releases and the
    /// guards restoring "no context" that every operation logs): it succeeds and logs one
    /// line.
    pub(crate) logged: Vec<Absorbed>,
    /// The operation is itself a release (a `close`): a failure returns, and may leak the one
    /// object released.
    pub(crate) releases: bool,
    /// How many driver objects the one object a failed release leaks holds (1, but a virtual
    /// memory range with its chunks), and why.
    pub(crate) leak: (i64, &'static str),
    pub(crate) exec: Exec,
}

/// The last panic's report (message and place), kept by the hook [`report_panics`] installs.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Reports each panic on one line (no backtrace) and keeps it for the case that caught it.
pub(crate) fn report_panics() {
    std::panic::set_hook(Box::new(|info| {
        let report = info.to_string().replace('\n', " ");
        eprintln!("{report}");
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = report;
    }));
}

/// The report of the panic just caught.
pub(crate) fn panic_message() -> String {
    std::mem::take(&mut *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()))
}

/// An operation: `setup` makes its fixtures (fault-free), `run` is the operation on them.
pub(crate) fn op<F: 'static, R: 'static>(
    name: impl Into<String>,
    setup: impl Fn() -> F + 'static,
    run: impl Fn(&F) -> Result<R> + 'static,
) -> Op {
    let exec = move |stub: &Stub, fault: Option<&Fault>| {
        stub.reset();
        stub.unbind();
        stub::take_error_logs();
        let before = stub.live();
        let fixtures = setup();
        stub.take_log();
        let arm = |phase| {
            if let Some(fault) = fault.filter(|fault| fault.phase == phase) {
                stub.fail(&fault.name, fault.code.value as i32, fault.nth);
            }
        };
        arm(Phase::Operation);
        let outcome = catch_unwind(AssertUnwindSafe(|| run(&fixtures)));
        let calls = stub.take_log();
        let logs = stub::take_error_logs();
        let (outcome, value) = match outcome {
            Ok(Ok(value)) => (Ok(()), Some(value)),
            Ok(Err(error)) => (Err(Failure::Error(error)), None),
            Err(_) => (Err(Failure::Panic(panic_message())), None),
        };
        arm(Phase::Drop);
        let mut later_trouble = Vec::new();
        if catch_unwind(AssertUnwindSafe(|| drop(value))).is_err() {
            later_trouble.push(format!("dropping the result panicked: {}", panic_message()));
        }
        let drop_calls = stub.take_log();
        let drop_logs = stub::take_error_logs();
        let faults_pending = stub.faults_pending();
        stub.disarm();
        if catch_unwind(AssertUnwindSafe(|| drop(fixtures))).is_err() {
            later_trouble.push(format!(
                "dropping the fixtures panicked: {}",
                panic_message()
            ));
        }
        let teardown_calls = stub.take_log();
        later_trouble.extend(
            stub::take_error_logs()
                .into_iter()
                .map(|line| format!("the fixtures' drop logged: {line}")),
        );
        stub.unbind();
        Observed {
            outcome,
            calls,
            drop_calls,
            teardown_calls,
            logs,
            drop_logs,
            later_trouble,
            before,
            after: stub.live(),
            faults_pending,
            misuse: stub.misuse(),
        }
    };
    Op {
        name: name.into(),
        absorbed: Vec::new(),
        logged: Vec::new(),
        releases: false,
        leak: (1, ""),
        exec: Box::new(exec),
    }
}

impl Op {
    /// A call whose failure the operation absorbs by design.
    pub(crate) fn absorbs(self, call: &'static str, why: &'static str) -> Self {
        self.absorbs_nth(call, &[], why)
    }

    /// Some calls (the `nths`, from 1) of a name whose failure the operation absorbs by design.
    pub(crate) fn absorbs_nth(
        mut self,
        call: &'static str,
        nths: &'static [usize],
        why: &'static str,
    ) -> Self {
        self.absorbed.push(Absorbed {
            call,
            nths,
            codes: &[],
            why,
        });
        self
    }

    /// A call whose failure with one of `codes` (their values) the operation absorbs by design.
    pub(crate) fn absorbs_codes(
        mut self,
        call: &'static str,
        codes: &'static [u32],
        why: &'static str,
    ) -> Self {
        self.absorbed.push(Absorbed {
            call,
            nths: &[],
            codes,
            why,
        });
        self
    }

    /// A call whose failure the operation only logs by design, for every code but those it
    /// absorbs ([`absorbs_codes`](Self::absorbs_codes), checked first).
    pub(crate) fn logs(self, call: &'static str, why: &'static str) -> Self {
        self.logs_nth(call, &[], why)
    }

    /// Some calls (the `nths`, from 1) of a name whose failure the operation only logs by
    /// design: a current-context guard restoring the caller's context, for instance.
    pub(crate) fn logs_nth(
        mut self,
        call: &'static str,
        nths: &'static [usize],
        why: &'static str,
    ) -> Self {
        self.logged.push(Absorbed {
            call,
            nths,
            codes: &[],
            why,
        });
        self
    }

    /// Says that the one object a failed release leaks holds `objects` driver objects.
    pub(crate) fn leaking(mut self, objects: i64, why: &'static str) -> Self {
        self.leak = (objects, why);
        self
    }

    /// Marks the operation as a release (`close`).
    pub(crate) fn releasing(mut self) -> Self {
        self.releases = true;
        self
    }
}
