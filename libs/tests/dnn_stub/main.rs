//! `cuda_safe_libs::dnn` against the stub cuDNN of `stub/c` (`libcudnn_*stub.c`, built into the
//! stub driver and loaded through `CUDA_SAFE_LIBCUDNN`): the loader finds the library the
//! variable names; a graph is lowered to backend descriptors the stub checks as cuDNN would; the
//! builder's and the variant pack's checks refuse before cuDNN is called; the stub's
//! convolutions, pointwise operations and matmuls (computed on the CPU) match references here,
//! as do the attention forward and backward graphs (causal and padding masks, dropout with the
//! stub's generator, FP8 with the `blas` feature's FP8 types; with the `half` feature), the
//! layer norms and the softmax; plans are cached by graph and evicted; the heuristics' refusals
//! (a failed query included), an engine chosen by index, a workspace limit and a cuDNN too old
//! for a pattern are typed errors or choices; a matmul's size override is an input the caller
//! binds; memory of another device is refused until its pool grants access; an execution is
//! captured; a plan outliving its `Dnn` is destroyed before the handle; every descriptor and
//! handle is destroyed. The stub checks every range an execution touches against the driver's
//! allocations: a range past one is a misuse, which fails the run.
//!
//! A `main` of its own (`harness = false`): the stub is built and the variable is set before
//! anything loads a library. Without a C compiler it prints that it skipped (and fails under
//! `CI`).

use cuda_safe_stub as stub;

#[cfg(feature = "half")]
mod attention;
#[cfg(feature = "half")]
mod attention_backward;
#[cfg(all(feature = "half", feature = "blas"))]
mod attention_fp8;
mod checks;
mod compute;
mod devices;
mod norms;
mod overrides;
mod plans;
#[cfg(feature = "half")]
mod reference;
mod workspace;

use std::path::Path;
use std::process::ExitCode;

use cuda_safe::{DeviceMemoryResource, Stream};
use cuda_safe_libs::dnn::{DataType, Graph, Pointwise, Tensor, TensorDesc, cudnn_sys};
use stub::{Call, Installed, Stub};

/// What every case gets: the stub, its cuDNN controls, and a stream and pool of the stub's
/// first device, its primary context current.
pub(crate) struct Case {
    pub(crate) stub: &'static Stub,
    pub(crate) dnn: DnnControls,
    pub(crate) stream: Stream,
    pub(crate) pool: DeviceMemoryResource,
}

/// The stub's controls of its cuDNN.
pub(crate) struct DnnControls {
    live: unsafe extern "C" fn() -> i64,
    engines: unsafe extern "C" fn(i64),
    refuse: unsafe extern "C" fn(i64),
    work_size: unsafe extern "C" fn(i64),
    version: unsafe extern "C" fn(i64),
    _library: libloading::Library,
}

impl DnnControls {
    fn open(path: &Path) -> Self {
        // SAFETY: the stub's only initialisers are the C runtime's; the same file is loaded.
        let library = unsafe { libloading::Library::new(path) }.expect("the stub loads");
        // SAFETY: the stub exports these with these signatures (libcudnn_stub.c).
        unsafe {
            Self {
                live: *library.get(b"dnn_stub_live\0").expect("dnn_stub_live"),
                engines: *library.get(b"dnn_stub_set_engines\0").expect("engines"),
                refuse: *library.get(b"dnn_stub_refuse_engines\0").expect("refuse"),
                work_size: *library.get(b"dnn_stub_set_work_size\0").expect("work size"),
                version: *library.get(b"dnn_stub_set_version\0").expect("version"),
                _library: library,
            }
        }
    }

    /// Live descriptors and handles.
    pub(crate) fn live(&self) -> i64 {
        // SAFETY: no precondition.
        unsafe { (self.live)() }
    }

    /// How many configurations the heuristics propose, and how many of the first cannot be
    /// finalized.
    pub(crate) fn engines(&self, count: i64, refused: i64) {
        // SAFETY: no precondition.
        unsafe {
            (self.engines)(count);
            (self.refuse)(refused);
        }
    }

    /// The workspace every plan asks for.
    pub(crate) fn work_size(&self, bytes: i64) {
        // SAFETY: no precondition.
        unsafe { (self.work_size)(bytes) }
    }

    /// The version `cudnnGetVersion` answers (91400 is 9.14.0, the stub's own).
    pub(crate) fn version(&self, version: i64) {
        // SAFETY: no precondition.
        unsafe { (self.version)(version) }
    }
}

/// The names of the calls the stub logged since the last look.
pub(crate) fn names(calls: Vec<Call>) -> Vec<String> {
    calls.into_iter().map(|call| call.name).collect()
}

/// How many times `name` is in `calls`.
pub(crate) fn count(calls: &[String], name: &str) -> usize {
    calls.iter().filter(|call| *call == name).count()
}

/// Fails with `message` unless `condition`.
pub(crate) fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

/// The error's text, for `map_err`.
pub(crate) fn err(error: cuda_safe::Error) -> String {
    error.to_string()
}

/// `y = relu(x)` over 16 f32s (`[1, 4, 4]`): the graph, x and y.
pub(crate) fn relu() -> Result<(Graph, Tensor, Tensor), String> {
    let mut graph = Graph::new();
    let x = graph
        .tensor(TensorDesc::packed(DataType::F32, &[1, 4, 4]))
        .map_err(err)?;
    let y = graph.pointwise(Pointwise::Relu, x, None).map_err(err)?;
    graph.output(y, DataType::F32).map_err(err)?;
    Ok((graph, x, y))
}

/// Deterministic test data in [-1, 1).
pub(crate) fn data(len: usize, mut state: u64) -> Vec<f32> {
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 / (1u64 << 52) as f64 - 1.0) as f32
        })
        .collect()
}

type CaseFn = fn(&Case) -> Result<(), String>;

fn main() -> ExitCode {
    let mut path = std::path::PathBuf::new();
    let stub = match stub::install_with(&[cudnn_sys::LIBCUDNN_PATH_ENV], |library| {
        path = library.to_owned();
        let loaded = cudnn_sys::cudnn().map(|cudnn| cudnn.library().path().to_owned());
        assert_eq!(loaded.expect("the stub loads"), library);
    }) {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("dnn_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    let device = cuda_safe::Device::new(0).expect("the stub's device");
    device.set_current().expect("its primary context current");
    let case = Case {
        stub,
        dnn: DnnControls::open(&path),
        stream: device.create_stream(Default::default()).expect("a stream"),
        pool: device.default_memory_resource().expect("the default pool"),
    };
    let cases = compute::CASES
        .iter()
        .chain(checks::CASES)
        .chain(devices::CASES)
        .chain(plans::CASES)
        .chain(norms::CASES)
        .chain(overrides::CASES)
        .chain(workspace::CASES);
    #[cfg(feature = "half")]
    let cases = cases
        .chain(attention::CASES)
        .chain(attention_backward::CASES);
    #[cfg(all(feature = "half", feature = "blas"))]
    let cases = cases.chain(attention_fp8::CASES);
    let cases: Vec<(&str, CaseFn)> = cases.copied().collect();
    let mut failures = 0;
    for (name, run) in &cases {
        case.stub.reset();
        case.stub.take_log();
        case.dnn.engines(3, 0);
        case.dnn.work_size(4096);
        case.dnn.version(91400);
        match run(&case) {
            Ok(()) => println!("ok   {name}"),
            Err(why) => {
                failures += 1;
                println!("FAIL {name}: {why}");
            }
        }
        let (misuses, last) = case.stub.misuse();
        if misuses != 0 {
            failures += 1;
            println!("FAIL {name}: {misuses} misuse(s) of the stub; last: {last}");
        }
        let live = case.dnn.live();
        if live != 0 {
            failures += 1;
            println!("FAIL {name}: {live} cuDNN descriptor(s) or handle(s) outlived their owners");
        }
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures += 1;
        println!("FAIL error lines were logged: {logs:?}");
    }
    println!("dnn_stub: {} cases, {failures} failure(s)", cases.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
