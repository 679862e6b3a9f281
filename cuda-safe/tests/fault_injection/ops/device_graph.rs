//! The operations of graphs the stub can run (no nodes): creating, instantiating (for the host
//! and for device launch), uploading, launching and closing.

use std::cell::RefCell;

use cuda_safe::{Graph, GraphExec, InstantiateOptions, Stream};

use cuda_safe_stub::faults::fixtures::{stream, take};
use cuda_safe_stub::faults::{Op, op};

/// For device launch.
fn device_launch() -> InstantiateOptions {
    InstantiateOptions::default().device_launch(true)
}

/// A stream and an executable of an empty graph of its context, made with `options`.
fn executable(options: InstantiateOptions) -> (Stream, GraphExec) {
    let stream = stream();
    let exec = Graph::new(stream.context())
        .and_then(|graph| graph.instantiate_with(options))
        .expect("an executable graph");
    (stream, exec)
}

pub(crate) fn device_graph_operations(ops: &mut Vec<Op>) {
    ops.push(op("Graph::new", stream, |s| Graph::new(s.context())));
    ops.push(op("Graph::instantiate", stream, |s| {
        Graph::new(s.context())?.instantiate()
    }));
    ops.push(op("Graph::instantiate_with (device launch)", stream, |s| {
        Graph::new(s.context())?.instantiate_with(device_launch())
    }));
    ops.push(op(
        "GraphExec::upload",
        || executable(device_launch()),
        |(s, exec)| exec.upload(s),
    ));
    ops.push(op(
        "GraphExec::launch",
        || executable(device_launch()),
        |(s, exec)| exec.launch(s),
    ));
    ops.push(
        op(
            "GraphExec::close",
            || RefCell::new(Some(executable(InstantiateOptions::default()).1)),
            |e| take(e).close(),
        )
        .releasing(),
    );
}
