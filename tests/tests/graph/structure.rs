//! A graph's structure: clones and removed nodes, the driver's ids, and conditional nodes built
//! inside a stream capture, their bodies captured too.

use cuda_safe::{
    Capture, CaptureMode, CaptureStatus, ConditionalHandle, Error, Graph, StreamOptions,
};
use cuda_sys::CudaVersion;

use super::common::{compile, driver_version, setup};

pub(crate) fn clones_run_on_their_own_and_removed_nodes_are_gone() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(2);
    let (first_int, second_int) = (x.as_raw(), x.as_raw() + 4);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates one int of `x` (two ints, kept by the test to the end).
    let (a, b) = unsafe {
        let a = graph
            .add_kernel(&[], &setup.one, &add, (first_int, 1i32))
            .unwrap();
        let b = graph
            .add_kernel(&[a.node()], &setup.one, &add, (second_int, 1i32))
            .unwrap();
        (a, b)
    };
    graph.add_empty(&[b.node()]).unwrap();
    let mut clone = graph.try_clone().unwrap();
    let cloned_a = graph.kernel_node_in_clone(&clone, &a).unwrap();
    let cloned_b = graph.node_in_clone(&clone, b.node()).unwrap();
    clone.remove_node(cloned_b).unwrap();
    let again = clone.remove_node(cloned_b).unwrap_err();
    assert!(again.to_string().contains("was removed"), "{again}");
    let dependent = clone.add_empty(&[cloned_b]).unwrap_err();
    assert!(dependent.to_string().contains("was removed"), "{dependent}");
    assert_eq!(clone.nodes().unwrap().len(), 2);
    let unrelated = Graph::new(&setup.context).unwrap();
    let stranger = graph.node_in_clone(&unrelated, a.node()).unwrap_err();
    assert!(stranger.to_string().contains("not a clone"), "{stranger}");
    // SAFETY: as above, 10 at a time.
    unsafe { clone.set_kernel_args(&cloned_a, (first_int, 10i32)) }.unwrap();

    let clone_exec = clone.instantiate().unwrap();
    clone_exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&x),
        [10, 0],
        "the clone runs without the removed node"
    );
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [11, 1], "the original is unchanged");

    // A clone keeps alive what the original keeps.
    let y = setup.ints(1);
    let weak = std::sync::Arc::downgrade(&y);
    let mut original = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `y`, which the graph keeps.
    unsafe { original.add_kernel(&[], &setup.one, &add, (&y, 5i32)) }.unwrap();
    let copy = original.try_clone().unwrap();
    let observed = y.as_raw();
    drop((original, y));
    assert!(weak.upgrade().is_some(), "the clone keeps the buffer");
    let copy_exec = copy.instantiate().unwrap();
    copy_exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    let held = weak
        .upgrade()
        .expect("still kept by the clone's executable");
    assert_eq!(held.as_raw(), observed);
    assert_eq!(held.to_vec::<i32>().unwrap(), [5]);
}

pub(crate) fn ids_are_distinct_and_stable_where_the_driver_has_them() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let a = graph.add_empty(&[]).unwrap();
    let b = graph.add_empty(&[a]).unwrap();
    let clone = graph.try_clone().unwrap();
    let id = match graph.driver_id() {
        Ok(id) => id,
        Err(error) => {
            println!("no graph ids here: {error}");
            assert!(error.is_not_supported(), "{error}");
            if cuda_sys::ABI_MAJOR < 13 {
                assert!(matches!(error, Error::Unsupported { .. }), "{error}");
            }
            assert!(graph.node_local_id(a).unwrap_err().is_not_supported());
            assert!(graph.node_tools_id(a).unwrap_err().is_not_supported());
            let exec = graph.instantiate().unwrap();
            assert!(exec.driver_id().unwrap_err().is_not_supported());
            return;
        }
    };
    assert_eq!(graph.driver_id().unwrap(), id, "stable");
    assert_ne!(clone.driver_id().unwrap(), id, "a clone has its own");
    let (local_a, local_b) = (
        graph.node_local_id(a).unwrap(),
        graph.node_local_id(b).unwrap(),
    );
    assert_ne!(local_a, local_b);
    assert_eq!(graph.node_local_id(a).unwrap(), local_a);
    let (tools_a, tools_b) = (
        graph.node_tools_id(a).unwrap(),
        graph.node_tools_id(b).unwrap(),
    );
    assert_ne!(tools_a, tools_b);
    assert_eq!(graph.node_tools_id(b).unwrap(), tools_b);
    let (first, second) = (graph.instantiate().unwrap(), clone.instantiate().unwrap());
    let exec_id = first.driver_id().unwrap();
    assert_eq!(first.driver_id().unwrap(), exec_id);
    assert_ne!(second.driver_id().unwrap(), exec_id);
}

/// Kernels of conditional bodies (NVRTC knows the handle type).
const CONDITIONAL_SOURCE: &str = r#"
extern "C" __global__ void add(int* p, int v) { atomicAdd(p, v); }
extern "C" __global__ void count_to(int* counter, int limit, cudaGraphConditionalHandle handle) {
    int count = atomicAdd(counter, 1) + 1;
    cudaGraphSetConditional(handle, count < limit ? 1 : 0);
}
"#;

pub(crate) fn conditional_bodies_added_by_capture_run_as_their_handles_say() {
    let setup = setup();
    let body_stream = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    if driver_version() < CudaVersion(12040) {
        // SAFETY: nothing is recorded.
        let mut capture =
            unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
        assert!(
            capture
                .conditional_handle(Some(1))
                .unwrap_err()
                .is_not_supported()
        );
        drop(capture);
        return;
    }
    let source = format!(
        "{}{CONDITIONAL_SOURCE}",
        ConditionalHandle::DEVICE_DECLARATION
    );
    let code = compile(&source);
    let (add, count_to) = (
        code.get_kernel("add").unwrap(),
        code.get_kernel("count_to").unwrap(),
    );
    let (x, counter) = (setup.ints(1), setup.ints(1));
    let else_too = driver_version() >= CudaVersion(12080);
    // SAFETY: add and count_to update the one int of `x` and `counter`, which the graph keeps
    // (launched through the captures); count_to sets the handle it is given.
    let graph = unsafe {
        Graph::capture(&setup.stream, CaptureMode::ThreadLocal, |capture| {
            capture.launch(&setup.one, &add, (&x, 1i32))?;
            let again = capture.conditional_handle(Some(1))?;
            capture.add_while(&again, &body_stream, |body| {
                body.launch(&setup.one, &count_to, (&counter, 5i32, again))?;
                Ok(())
            })?;
            let never = capture.conditional_handle(Some(0))?;
            capture.add_if(&never, &body_stream, |body| {
                body.launch(&setup.one, &add, (&x, 1000i32))?;
                Ok(())
            })?;
            if else_too {
                let zero = capture.conditional_handle(Some(0))?;
                capture.add_if_else(
                    &zero,
                    &body_stream,
                    |then| then.launch(&setup.one, &add, (&x, 10_000i32)).map(drop),
                    |otherwise| otherwise.launch(&setup.one, &add, (&x, 10i32)).map(drop),
                )?;
            }
            capture.launch(&setup.one, &add, (&x, 100i32))?;
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(
        Capture::status_of(&body_stream).unwrap(),
        CaptureStatus::Idle
    );
    let nodes = graph.nodes().unwrap().len();
    assert_eq!(
        nodes,
        if else_too { 5 } else { 4 },
        "kernels and conditional nodes"
    );
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    let expected = if else_too { 111 } else { 101 };
    assert_eq!(setup.read(&counter), [5], "the loop ran five times");
    assert_eq!(
        setup.read(&x),
        [expected],
        "the if was skipped, the else taken"
    );
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&counter),
        [6],
        "the default (1) entered the loop once more"
    );
    assert_eq!(setup.read(&x), [2 * expected]);

    // A refusal before the node leaves the capture as it was; a body's error leaves its node
    // (the driver removes no node during a capture), and the capture is discarded at its end.
    // SAFETY: nothing is recorded but a node that is discarded with the graph.
    let mut capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    let handle = capture.conditional_handle(Some(1)).unwrap();
    let mut elsewhere = Graph::new(&setup.context).unwrap();
    let foreign = elsewhere.conditional_handle(None).unwrap();
    let refused = capture.add_while(&foreign, &body_stream, |_| Ok(()));
    assert!(refused.unwrap_err().to_string().contains("another graph"));
    let failed = capture.add_while(&handle, &body_stream, |_| {
        Err(Error::invalid_argument("the body's own error"))
    });
    assert!(
        failed
            .unwrap_err()
            .to_string()
            .contains("the body's own error")
    );
    assert_eq!(
        Capture::status_of(&body_stream).unwrap(),
        CaptureStatus::Idle
    );
    let discarded = capture.end().unwrap_err();
    assert!(discarded.to_string().contains("discarded"), "{discarded}");
    assert_eq!(
        Capture::status_of(&setup.stream).unwrap(),
        CaptureStatus::Idle
    );
}
