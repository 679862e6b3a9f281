//! One case: an operation, the fault injected into it (if any) and what the run did.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use cuda_safe::{Error, Result};

use crate::{self as stub, Call, Live, Stub};

/// A failure to inject: the code, and the text the error carries for it (the driver's name,
/// NVRTC's or NVML's message, or the crate's fallback for a code the library does not know).
#[derive(Debug, Clone, Copy)]
pub struct Code {
    /// The raw code the call returns.
    pub value: u32,
    /// The text the crate's error must carry for it.
    pub text: &'static str,
}

const fn code(value: u32, text: &'static str) -> Code {
    Code { value, text }
}

/// A code newer than any header: the library has no name for it.
const FUTURE: u32 = 12345;

/// The driver's codes injected into a driver call.
pub const CUDA_CODES: [Code; 5] = [
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

/// cuBLAS's (and cuBLASLt's) statuses, named as `cublas_api.h` names them.
const CUBLAS_CODES: [Code; 4] = [
    code(3, "CUBLAS_STATUS_ALLOC_FAILED"),
    code(13, "CUBLAS_STATUS_EXECUTION_FAILED"),
    code(15, "CUBLAS_STATUS_NOT_SUPPORTED"),
    code(FUTURE, "an unknown cuBLAS status"),
];

/// cuRAND's statuses, named as `curand.h` names them.
const CURAND_CODES: [Code; 4] = [
    code(102, "CURAND_STATUS_ALLOCATION_FAILED"),
    code(201, "CURAND_STATUS_LAUNCH_FAILURE"),
    code(204, "CURAND_STATUS_ARCH_MISMATCH"),
    code(FUTURE, "an unknown cuRAND status"),
];

/// cuFFT's statuses, named as `cufft.h` names them.
const CUFFT_CODES: [Code; 4] = [
    code(2, "CUFFT_ALLOC_FAILED"),
    code(6, "CUFFT_EXEC_FAILED"),
    code(16, "CUFFT_NOT_SUPPORTED"),
    code(FUTURE, "an unknown cuFFT status"),
];

/// cuSPARSE's statuses, named as `cusparse.h` names them.
const CUSPARSE_CODES: [Code; 4] = [
    code(2, "CUSPARSE_STATUS_ALLOC_FAILED"),
    code(6, "CUSPARSE_STATUS_EXECUTION_FAILED"),
    code(10, "CUSPARSE_STATUS_NOT_SUPPORTED"),
    code(FUTURE, "an unknown cuSPARSE status"),
];

/// The codes injected into a call, by its library.
pub fn codes_for(call: &str) -> &'static [Code] {
    if call.starts_with("nvrtc") {
        &NVRTC_CODES
    } else if call.starts_with("nvml") {
        &NVML_CODES
    } else if call.starts_with("cublas") {
        &CUBLAS_CODES
    } else if call.starts_with("curand") {
        &CURAND_CODES
    } else if call.starts_with("cufft") {
        &CUFFT_CODES
    } else if call.starts_with("cusparse") {
        &CUSPARSE_CODES
    } else {
        &CUDA_CODES
    }
}

/// Where a fault is injected: into the operation, or into the drop of what it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Into the operation itself.
    Operation,
    /// Into the drop of what it returned.
    Drop,
}

/// A fault: the `nth` call of `name` in `phase` returns `code`.
#[derive(Debug, Clone)]
pub struct Fault {
    /// Where.
    pub phase: Phase,
    /// The exported name of the call.
    pub name: String,
    /// Which of its calls (from 1).
    pub nth: usize,
    /// What it returns.
    pub code: Code,
}

/// What one run of an operation did.
#[derive(Debug)]
pub struct Observed {
    /// `Ok(())`, the error, or a panic's message.
    pub outcome: std::result::Result<(), Failure>,
    /// The calls the operation made.
    pub calls: Vec<Call>,
    /// The calls the drop of its result made.
    pub drop_calls: Vec<Call>,
    /// The calls of the fixtures' drop.
    pub teardown_calls: Vec<Call>,
    /// The error lines the operation logged.
    pub logs: Vec<String>,
    /// The error lines the drop of its result logged.
    pub drop_logs: Vec<String>,
    /// Panics in the drop of the result or of the fixtures, and lines logged by the fixtures.
    pub later_trouble: Vec<String>,
    /// The stub's live objects before the case.
    pub before: Live,
    /// And after it.
    pub after: Live,
    /// Injected faults no call took.
    pub faults_pending: usize,
    /// The stub's misuse count and its last report.
    pub misuse: (u64, String),
}

/// How a run failed.
#[derive(Debug)]
pub enum Failure {
    /// It returned this error.
    Error(Error),
    /// It panicked with this message.
    Panic(String),
}

/// A failure an operation absorbs (or only logs) by design, and why.
#[derive(Debug)]
pub struct Absorbed {
    /// The call, as [`Call`] displays it.
    pub call: &'static str,
    /// Which of its calls (from 1); all when empty.
    pub nths: &'static [usize],
    /// Which codes (their values); all when empty.
    pub codes: &'static [u32],
    /// Why (the behaviour the crate documents).
    pub why: &'static str,
}

impl Absorbed {
    /// Whether this entry covers the `nth` call `call` failing with `code`.
    pub fn covers(&self, call: &Call, nth: usize, code: Code) -> bool {
        call.to_string() == self.call
            && (self.nths.is_empty() || self.nths.contains(&nth))
            && (self.codes.is_empty() || self.codes.contains(&code.value))
    }
}

type Exec = Box<dyn Fn(&Stub, Option<&Fault>) -> Observed>;

/// An operation and what its cases expect.
pub struct Op {
    /// What it is (`Buffer::copy_from`).
    pub name: String,
    /// Calls whose failure the operation absorbs by design: it succeeds and logs nothing.
    pub absorbed: Vec<Absorbed>,
    /// Calls whose failure the operation only logs by design (besides the releases and the
    /// guards restoring "no context" that every operation logs): it succeeds and logs one
    /// line.
    pub logged: Vec<Absorbed>,
    /// The operation is itself a release (a `close`): a failure returns, and may leak the one
    /// object released.
    pub releases: bool,
    /// How many driver objects the one object a failed release leaks holds (1, but a virtual
    /// memory range with its chunks), and why.
    pub leak: (i64, &'static str),
    /// Runs the operation once, with the fault if any, and observes it.
    pub exec: Exec,
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Op")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The last panic's report (message and place), kept by the hook [`report_panics`] installs.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Reports each panic on one line (no backtrace) and keeps it for the case that caught it.
pub fn report_panics() {
    std::panic::set_hook(Box::new(|info| {
        let report = info.to_string().replace('\n', " ");
        eprintln!("{report}");
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = report;
    }));
}

/// The report of the panic just caught.
pub fn panic_message() -> String {
    std::mem::take(&mut *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()))
}

/// An operation: `setup` makes its fixtures (fault-free), `run` is the operation on them.
pub fn op<F: 'static, R: 'static>(
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
    pub fn absorbs(self, call: &'static str, why: &'static str) -> Self {
        self.absorbs_nth(call, &[], why)
    }

    /// Some calls (the `nths`, from 1) of a name whose failure the operation absorbs by design.
    pub fn absorbs_nth(
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
    pub fn absorbs_codes(
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
    pub fn logs(self, call: &'static str, why: &'static str) -> Self {
        self.logs_nth(call, &[], why)
    }

    /// Some calls (the `nths`, from 1) of a name whose failure the operation only logs by
    /// design: a current-context guard restoring the caller's context, for instance.
    pub fn logs_nth(
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
    pub fn leaking(mut self, objects: i64, why: &'static str) -> Self {
        self.leak = (objects, why);
        self
    }

    /// Marks the operation as a release (`close`).
    pub fn releasing(mut self) -> Self {
        self.releases = true;
        self
    }
}
