//! Instantiating graphs for device launch, with the stub driver of `stub/c` (whose graphs
//! have no nodes: what runs on the GPU is `tests/tests/device_graph.rs`):
//! - each option reaches `cuGraphInstantiateWithParams` as its flag;
//! - device launch with auto-free on launch is refused before any driver call;
//! - unified addressing is asked for device launch only, and a failure to ask is the error;
//! - the driver's reason for a refusal is `Error::GraphInstantiateRefused`, a failed call the
//!   driver's error, and neither leaves a graph or an executable behind;
//! - an executable hands out a device handle only when instantiated for device launch; it
//!   uploads and launches from the host as any other.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs. Prints one line per case; exits nonzero on any failure.

use cuda_safe_stub as stub;

use std::process::ExitCode;

use cuda_safe::sys::{CUgraphInstantiateResult, CUresult};
use cuda_safe::{Error, Graph, GraphExec, InstantiateOptions, Stream, StreamOptions};
use stub::{Installed, Stub};

type Outcome = Result<(), String>;

/// `CUDA_ERROR_OUT_OF_MEMORY`.
const OUT_OF_MEMORY: i32 = 2;

/// For device launch.
fn device_launch() -> InstantiateOptions {
    InstantiateOptions::default().device_launch(true)
}

/// Instantiates an empty graph of `stream`'s context with `options`.
fn instantiate(stream: &Stream, options: InstantiateOptions) -> cuda_safe::Result<GraphExec> {
    Graph::new(stream.context())?.instantiate_with(options)
}

/// The flags of each `cuGraphInstantiateWithParams` since the log was last taken.
fn flags_given(stub: &Stub) -> Vec<i64> {
    stub.take_log()
        .into_iter()
        .filter(|call| call.name == "cuGraphInstantiateWithParams")
        .map(|call| call.arg)
        .collect()
}

/// Each option is its flag: auto-free 1, device launch 4, node priority 8.
fn options_are_the_drivers_flags(stub: &Stub, stream: &Stream) -> Outcome {
    let cases = [
        (InstantiateOptions::default(), 0),
        (InstantiateOptions::default().auto_free_on_launch(true), 1),
        (device_launch(), 4),
        (device_launch().use_node_priority(true), 4 | 8),
    ];
    for (options, flags) in cases {
        stub.take_log();
        let exec = instantiate(stream, options).map_err(|e| format!("{options:?}: {e}"))?;
        let given = flags_given(stub);
        if given != [flags] {
            return Err(format!(
                "{options:?} gave the flags {given:?}, not [{flags}]"
            ));
        }
        exec.close().map_err(|e| e.to_string())?;
    }
    let exec = Graph::new(stream.context())
        .and_then(Graph::instantiate)
        .map_err(|e| e.to_string())?;
    if flags_given(stub) != [0] {
        return Err("instantiate() did not pass the default flags".into());
    }
    exec.close().map_err(|e| e.to_string())
}

/// Device launch with auto-free on launch: refused with no driver call.
fn device_launch_and_auto_free_are_refused_first(stub: &Stub, stream: &Stream) -> Outcome {
    stub.reset();
    let both = device_launch().auto_free_on_launch(true);
    match instantiate(stream, both) {
        Err(Error::InvalidArgument(why)) if why.contains("auto_free_on_launch") => {}
        other => return Err(format!("device launch with auto-free gave {other:?}")),
    }
    let calls = stub.calls("cuGraphInstantiateWithParams") + stub.calls("cuDeviceGetAttribute");
    if calls != 0 {
        return Err(format!("{calls} driver calls before the refusal"));
    }
    Ok(())
}

/// Unified addressing is asked once, for device launch only; failing to ask is the error.
fn unified_addressing_is_asked_for_device_launch(stub: &Stub, stream: &Stream) -> Outcome {
    for (options, asked) in [(InstantiateOptions::default(), 0), (device_launch(), 1)] {
        let graph = Graph::new(stream.context()).map_err(|e| e.to_string())?;
        stub.reset();
        let exec = graph.instantiate_with(options).map_err(|e| e.to_string())?;
        if stub.calls("cuDeviceGetAttribute") != asked {
            return Err(format!(
                "{options:?} asked the device {} times, not {asked}",
                stub.calls("cuDeviceGetAttribute")
            ));
        }
        drop(exec);
    }
    let graph = Graph::new(stream.context()).map_err(|e| e.to_string())?;
    stub.reset();
    stub.fail("cuDeviceGetAttribute", OUT_OF_MEMORY, 1);
    match graph.instantiate_with(device_launch()) {
        Err(error) if error.cuda_code() == Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY) => {}
        other => return Err(format!("a failed attribute query gave {other:?}")),
    }
    if stub.calls("cuGraphInstantiateWithParams") != 0 {
        return Err("instantiated after the attribute query failed".into());
    }
    Ok(())
}

/// The driver's reason is a typed refusal; a failed call is the driver's error.
fn refusals_are_typed(stub: &Stub, stream: &Stream) -> Outcome {
    use CUgraphInstantiateResult as Reason;
    for reason in [
        Reason::CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED,
        Reason::CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED,
    ] {
        stub.refuse_instantiation(reason.0);
        match instantiate(stream, device_launch()) {
            Err(Error::GraphInstantiateRefused {
                reason: given,
                detail,
            }) if given == reason && detail.contains("device launch") => {}
            other => return Err(format!("the refusal {} gave {other:?}", reason.0)),
        }
    }
    stub.refuse_instantiation(Reason::CUDA_GRAPH_INSTANTIATE_ERROR.0);
    match instantiate(stream, device_launch()) {
        Err(error) if error.cuda_code() == Some(CUresult::CUDA_ERROR_INVALID_VALUE) => {}
        other => return Err(format!("CUDA_GRAPH_INSTANTIATE_ERROR gave {other:?}")),
    }
    stub.fail("cuGraphInstantiateWithParams", OUT_OF_MEMORY, 1);
    match instantiate(stream, InstantiateOptions::default()) {
        Err(error @ Error::Cuda { .. })
            if error.is_out_of_memory()
                && error.to_string().contains("cuGraphInstantiateWithParams") => {}
        other => return Err(format!("a failed call gave {other:?}")),
    }
    Ok(())
}

/// Only an executable instantiated for device launch has a device handle: its `CUgraphExec`.
fn the_device_handle_is_the_executable(_: &Stub, stream: &Stream) -> Outcome {
    let device = instantiate(stream, device_launch()).map_err(|e| e.to_string())?;
    let handle = device.device_handle().map_err(|e| e.to_string())?;
    if handle.as_raw() != device.as_raw() {
        return Err(format!("{handle:?} is not {:?}", device.as_raw()));
    }
    let host = instantiate(stream, InstantiateOptions::default()).map_err(|e| e.to_string())?;
    match host.device_handle() {
        Err(Error::InvalidArgument(why)) if why.contains("device_launch(true)") => {}
        other => return Err(format!("a host graph's device handle gave {other:?}")),
    }
    // A device graph uploads and launches from the host as any other.
    device.upload(stream).map_err(|e| e.to_string())?;
    device.launch(stream).map_err(|e| e.to_string())?;
    stream.sync().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("device_graph: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    let stream = cuda_safe::Device::new(0)
        .and_then(|device| device.create_stream(StreamOptions::default()))
        .expect("a stream of the stub's device 0");
    // Graphs and executables, in the stub's live counts.
    let graphs = stub::KINDS
        .iter()
        .position(|kind| *kind == "graph")
        .expect("the stub counts graphs");
    let before = stub.live()[graphs];
    type Case = fn(&Stub, &Stream) -> Outcome;
    let cases: [(&str, Case); 5] = [
        (
            "options are the driver's flags",
            options_are_the_drivers_flags,
        ),
        (
            "device launch and auto-free are refused first",
            device_launch_and_auto_free_are_refused_first,
        ),
        (
            "unified addressing is asked for device launch",
            unified_addressing_is_asked_for_device_launch,
        ),
        ("refusals are typed", refusals_are_typed),
        (
            "the device handle is the executable's",
            the_device_handle_is_the_executable,
        ),
    ];
    let mut failed = 0;
    for (name, case) in cases {
        let outcome = case(stub, &stream).and_then(|()| {
            let left = stub.live()[graphs] - before;
            let (misuses, last) = stub.misuse();
            match (left, misuses) {
                (0, 0) => Ok(()),
                (0, _) => Err(format!("the crate misused the driver: {last}")),
                _ => Err(format!("{left} graphs or executables left behind")),
            }
        });
        stub.disarm();
        stub.refuse_instantiation(0);
        match outcome {
            Ok(()) => println!("ok   {name}"),
            Err(problem) => {
                failed += 1;
                println!("FAIL {name}: {problem}");
            }
        }
    }
    println!("device_graph: {failed} failure(s)");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
