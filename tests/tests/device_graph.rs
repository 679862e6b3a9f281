//! Graphs launched from the device: a kernel reads a flag in device memory and tail-launches
//! one of two device graphs, a kernel fires and forgets a device graph, what a device graph
//! cannot be (refused first by the crate, or by the driver with its reason), and the typed
//! error when the device runtime is missing (a child process with the override naming a path
//! where there is none).
//!
//! The launching kernels are compiled with relocatable device code to PTX and linked with the
//! device runtime (`Linker::add_device_runtime`); the device graphs' kernel, which launches
//! nothing, is compiled on its own as a whole program (a device graph's kernels may not use
//! dynamic parallelism).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::sys::{CUgraphInstantiateResult, LoadError};
use cuda_safe::{
    Buffer, CodeKind, DeviceMemoryResource, Error, Graph, GraphExec, InstantiateOptions, Kernel,
    LaunchConfig, LinkInput, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions, Stream,
    StreamOptions,
};

/// The device graphs' work.
const WORK: &str = "extern \"C\" __global__ void add(int* p, int v) { atomicAdd(p, v); }\n";

/// The launching kernels; each writes `cudaGraphLaunch`'s result to `status`.
const LAUNCHERS: &str = r#"
// Reads the flag on the GPU and tail-launches `a` (flag set) or `b` (flag clear): it runs when
// the graph of this kernel has finished.
extern "C" __global__ void choose(const int* flag, cudaGraphExec_t a, cudaGraphExec_t b,
                                  int* status) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *status = (int)cudaGraphLaunch(*flag ? a : b, cudaStreamGraphTailLaunch);
    }
}

// Launches `child` at once, beside the graph of this kernel (which finishes when it has).
extern "C" __global__ void fire(cudaGraphExec_t child, int* status) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *status = (int)cudaGraphLaunch(child, cudaStreamGraphFireAndForget);
    }
}
"#;

/// What the tests run on: device 0's primary context, a stream, its pool, `add`.
struct Setup {
    stream: Stream,
    pool: DeviceMemoryResource,
    add: Kernel,
    one: LaunchConfig,
}

fn setup() -> Setup {
    let device = cuda_safe::Device::new(0).unwrap();
    device.set_current().unwrap();
    let add = Program::new(WORK, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap()
        .load()
        .unwrap()
        .get_kernel("add")
        .unwrap();
    Setup {
        stream: device.create_stream(StreamOptions::default()).unwrap(),
        pool: device.default_memory_resource().unwrap(),
        add,
        one: LaunchConfig::new(1, 1),
    }
}

/// [`LAUNCHERS`] as PTX with relocatable device code, linked with the device runtime.
fn launchers() -> ObjectCode {
    let rdc = ProgramOptions::default().relocatable_device_code(true);
    let ptx = Program::new(LAUNCHERS, rdc)
        .unwrap()
        .compile(CodeKind::Ptx)
        .unwrap();
    let mut linker = Linker::new(LinkerOptions::default()).unwrap();
    linker.add_compiled(ptx.code(), "launchers.ptx").unwrap();
    linker
        .add_device_runtime()
        .unwrap_or_else(|error| panic!("the device runtime: {error}"));
    eprintln!("device runtime: {}", linker.inputs()[1].name());
    linker
        .link(CodeKind::Cubin)
        .unwrap_or_else(|error| panic!("linking with the device runtime: {error}"))
        .load()
        .unwrap()
}

/// For device launch.
fn device_launch() -> InstantiateOptions {
    InstantiateOptions::default().device_launch(true)
}

/// A graph of one `add(counter, value)` node, instantiated for device launch.
fn device_graph(setup: &Setup, counter: &Arc<Buffer>, value: i32) -> GraphExec {
    let mut graph = Graph::new(setup.stream.context()).unwrap();
    // SAFETY: add(int*, int) updates the one int of `counter`, which the graph keeps alive.
    unsafe { graph.add_kernel(&[], &setup.one, &setup.add, (counter, value)) }.unwrap();
    graph.instantiate_with(device_launch()).unwrap()
}

fn a_kernel_tail_launches_the_graph_a_flag_in_device_memory_chooses() {
    let setup = setup();
    let launchers = launchers();
    let counter = Arc::new(setup.pool.allocate_zeroed::<i32>(1, &setup.stream).unwrap());
    let a = device_graph(&setup, &counter, 1);
    let b = device_graph(&setup, &counter, 1000);
    // Both ways of uploading: explicitly, and by a launch from the host.
    a.upload(&setup.stream).unwrap();
    b.launch(&setup.stream).unwrap();
    let mut expected = 1000;
    let (a_handle, b_handle) = (a.device_handle().unwrap(), b.device_handle().unwrap());
    assert_eq!(a_handle.as_raw(), a.as_raw());

    let mut flag = setup.pool.allocate_zeroed::<i32>(1, &setup.stream).unwrap();
    let mut status = setup.pool.allocate_zeroed::<i32>(1, &setup.stream).unwrap();
    let mut graph = Graph::new(setup.stream.context()).unwrap();
    let choose = launchers.get_kernel("choose").unwrap();
    // SAFETY: choose(const int*, cudaGraphExec_t, cudaGraphExec_t, int*) reads the int of
    // `flag` and writes the int of `status`, both alive until the launcher is closed below,
    // and launches `a` or `b`: device graphs, uploaded, alive until after the last launch.
    unsafe {
        graph.add_kernel(
            &[],
            &setup.one,
            &choose,
            (flag.as_raw(), a_handle, b_handle, status.as_raw()),
        )
    }
    .unwrap();
    let launcher = graph.instantiate().unwrap();
    for (round, set) in [1, 0, 1, 1, 0, 0].into_iter().enumerate() {
        flag.fill(set).unwrap();
        status.fill(-1i32).unwrap();
        launcher.launch(&setup.stream).unwrap();
        setup.stream.sync().unwrap();
        expected += if set == 0 { 1000 } else { 1 };
        assert_eq!(
            status.to_vec::<i32>().unwrap(),
            [0],
            "round {round}: the device's cudaGraphLaunch failed"
        );
        assert_eq!(
            counter.to_vec::<i32>().unwrap(),
            [expected],
            "round {round}: flag {set} ran the wrong graph"
        );
    }
    launcher.close().unwrap();
    a.close().unwrap();
    b.close().unwrap();
}

fn a_kernel_fires_and_forgets_a_device_graph() {
    let setup = setup();
    let launchers = launchers();
    let counter = Arc::new(setup.pool.allocate_zeroed::<i32>(1, &setup.stream).unwrap());
    let child = device_graph(&setup, &counter, 7);
    child.upload(&setup.stream).unwrap();
    let mut status = setup.pool.allocate_zeroed::<i32>(1, &setup.stream).unwrap();
    let mut graph = Graph::new(setup.stream.context()).unwrap();
    let fire = launchers.get_kernel("fire").unwrap();
    // SAFETY: fire(cudaGraphExec_t, int*) writes the int of `status`, alive until the launcher
    // is closed below, and launches `child`: a device graph, uploaded, alive until after that.
    unsafe {
        graph.add_kernel(
            &[],
            &setup.one,
            &fire,
            (child.device_handle().unwrap(), status.as_raw()),
        )
    }
    .unwrap();
    let launcher = graph.instantiate().unwrap();
    for round in 1..=5 {
        status.fill(-1i32).unwrap();
        // The launch finishes when the graph it fired has: each round's child runs alone.
        launcher.launch(&setup.stream).unwrap();
        setup.stream.sync().unwrap();
        assert_eq!(
            status.to_vec::<i32>().unwrap(),
            [0],
            "round {round}: the device's cudaGraphLaunch failed"
        );
        assert_eq!(
            counter.to_vec::<i32>().unwrap(),
            [7 * round],
            "round {round}"
        );
    }
    launcher.close().unwrap();
    child.close().unwrap();
}

fn what_a_device_graph_cannot_be_is_refused() {
    let setup = setup();
    let context = setup.stream.context();
    // Refused by the crate, before the driver.
    let refused = Graph::new(context)
        .unwrap()
        .instantiate_with(device_launch().auto_free_on_launch(true));
    assert!(
        matches!(&refused, Err(Error::InvalidArgument(why)) if why.contains("auto_free_on_launch")),
        "{refused:?}"
    );
    // Refused by the driver, with its reason: a host node.
    let with_host_node = || {
        let mut graph = Graph::new(context).unwrap();
        graph.add_host(&[], || {}).unwrap();
        graph
    };
    let refused = with_host_node().instantiate_with(device_launch());
    eprintln!("a host node, for device launch: {refused:?}");
    assert!(
        matches!(
            &refused,
            Err(Error::GraphInstantiateRefused {
                reason:
                    CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED,
                ..
            })
        ),
        "{refused:?}"
    );
    // The same graph for the host: instantiated, with no device handle.
    let host = with_host_node().instantiate().unwrap();
    let handle = host.device_handle();
    assert!(
        matches!(&handle, Err(Error::InvalidArgument(why)) if why.contains("device_launch")),
        "{handle:?}"
    );
    host.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
}

/// The variable that makes this binary the child of the missing-runtime test.
const CHILD_ENV: &str = "CUDA_SAFE_DEVICE_GRAPH_CHILD";
/// What the child prints when both calls gave the typed error.
const CHILD_REFUSED: &str = "DEVICE-RUNTIME-REFUSED";

fn a_missing_device_runtime_is_a_typed_error_naming_where_it_looked() {
    let missing = std::env::temp_dir()
        .join(format!("cuda-safe-no-devrt-{}", std::process::id()))
        .join("libcudadevrt.a");
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, "1")
        .env(LinkInput::DEVICE_RUNTIME_ENV, &missing)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains(CHILD_REFUSED),
        "the child did not see the typed error:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(&missing.display().to_string()), "{stdout}");
    eprintln!("{}", stdout.trim());
    // Here, without the override, the toolkit's (or a wheel's) is found.
    let found = LinkInput::device_runtime_path().unwrap();
    eprintln!("the device runtime here: {}", found.display());
}

/// The child: the override names a missing file, so the search ends there.
fn child_main(missing: PathBuf) {
    match LinkInput::device_runtime_path() {
        Err(Error::Load(LoadError::LibraryNotFound { library, tried })) => {
            assert!(library.contains("libcudadevrt.a"), "{library}");
            assert_eq!(tried.len(), 1, "{tried:?}");
            assert_eq!(tried[0].candidate, missing.display().to_string());
        }
        other => panic!("the override's missing file gave {other:?}"),
    }
    let mut linker = Linker::new(LinkerOptions::default()).unwrap();
    let error = linker.add_device_runtime().unwrap_err();
    assert!(matches!(error, Error::Load(_)), "{error:?}");
    assert!(linker.inputs().is_empty(), "an input was added");
    println!("{CHILD_REFUSED}: {error}");
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    a_kernel_tail_launches_the_graph_a_flag_in_device_memory_chooses,
    a_kernel_fires_and_forgets_a_device_graph,
    what_a_device_graph_cannot_be_is_refused,
    a_missing_device_runtime_is_a_typed_error_naming_where_it_looked,
];

/// The child's part, when this process is this file's child ([`CHILD_ENV`] set): its exit
/// code; `None` otherwise. `main` asks before the harness runs.
pub(crate) fn child_part() -> Option<std::process::ExitCode> {
    std::env::var_os(CHILD_ENV)?;
    let missing = std::env::var_os(LinkInput::DEVICE_RUNTIME_ENV).unwrap_or_default();
    child_main(PathBuf::from(missing));
    Some(std::process::ExitCode::SUCCESS)
}
