//! Clones and removed nodes, ids, and conditional nodes built inside a capture, their bodies
//! captured too.

use cuda_safe::{Capture, CaptureMode, CaptureStatus, Error, Graph, LaunchConfig};

use crate::stub::Stub;
use crate::{Fixture, Verdict, ensure, failed, floats_of, refused};

pub(crate) fn clones_and_removed_nodes(stub: &Stub, fx: &Fixture) -> Verdict {
    let (x, y) = (fx.floats(&[1.0; 4]), fx.floats(&[1.0; 4]));
    let one = LaunchConfig::new(1, 1);
    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    // SAFETY: twice doubles the 4 floats of `x` and `y`, kept by the graphs.
    let (first, second) = unsafe {
        let first = graph
            .add_kernel(&[], &one, &fx.twice, (&x, 4usize))
            .map_err(failed)?;
        let second = graph
            .add_kernel(&[first.node()], &one, &fx.twice, (&y, 4usize))
            .map_err(failed)?;
        (first, second)
    };
    graph.add_empty(&[second.node()]).map_err(failed)?;
    let mut clone = graph.try_clone().map_err(failed)?;
    let cloned_first = graph.kernel_node_in_clone(&clone, &first).map_err(failed)?;
    let cloned_second = graph.node_in_clone(&clone, second.node()).map_err(failed)?;
    ensure(cloned_first.kernel().name() == "twice", || {
        "the clone's kernel".into()
    })?;
    refused(clone.add_empty(&[first.node()]), "another graph")?;
    let unrelated = Graph::new(fx.stream.context()).map_err(failed)?;
    refused(graph.node_in_clone(&unrelated, first.node()), "not a clone")?;

    clone.remove_node(cloned_second).map_err(failed)?;
    refused(clone.remove_node(cloned_second), "was removed")?;
    refused(clone.add_empty(&[cloned_second]), "was removed")?;
    ensure(graph.node_in_clone(&clone, second.node()).is_err(), || {
        "a node removed from the clone is not found there".into()
    })?;
    ensure(clone.nodes().map_err(failed)?.len() == 2, || {
        "two nodes left".into()
    })?;
    // SAFETY: as above, the first two floats.
    unsafe { clone.set_kernel_args(&cloned_first, (&x, 2usize)) }.map_err(failed)?;

    clone
        .instantiate()
        .map_err(failed)?
        .launch(&fx.stream)
        .map_err(failed)?;
    let (gx, gy) = (floats_of(&x)?, floats_of(&y)?);
    ensure(gx == [2.0, 2.0, 1.0, 1.0] && gy == [1.0; 4], || {
        format!("the clone runs its own nodes: x {gx:?}, y {gy:?}")
    })?;
    graph
        .instantiate()
        .map_err(failed)?
        .launch(&fx.stream)
        .map_err(failed)?;
    let (gx, gy) = (floats_of(&x)?, floats_of(&y)?);
    ensure(gx == [4.0, 4.0, 2.0, 2.0] && gy == [2.0; 4], || {
        format!("the original is unchanged: x {gx:?}, y {gy:?}")
    })?;

    // A clone keeps alive what the original kept, after both the original and the buffer go.
    let kept = fx.floats(&[1.0; 4]);
    let allocations = crate::live_of(stub, "alloc");
    let mut original = Graph::new(fx.stream.context()).map_err(failed)?;
    // SAFETY: as above, for `kept`.
    unsafe { original.add_kernel(&[], &one, &fx.twice, (&kept, 4usize)) }.map_err(failed)?;
    let copy = original.try_clone().map_err(failed)?;
    drop((original, kept));
    ensure(crate::live_of(stub, "alloc") == allocations, || {
        "the clone keeps the buffer".into()
    })?;
    // A launch on freed memory would be a misuse the stub reports.
    copy.instantiate()
        .map_err(failed)?
        .launch(&fx.stream)
        .map_err(failed)
}

pub(crate) fn ids_are_distinct_and_stable(fx: &Fixture) -> Verdict {
    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    let a = graph.add_empty(&[]).map_err(failed)?;
    let b = graph.add_empty(&[a]).map_err(failed)?;
    let clone = graph.try_clone().map_err(failed)?;
    if cuda_safe::sys::ABI_MAJOR < 13 {
        for error in [
            graph.driver_id().map(u64::from),
            graph.node_local_id(a).map(u64::from),
            graph.node_tools_id(a),
        ] {
            match error {
                Err(error @ Error::Unsupported { .. }) if error.is_not_supported() => {}
                other => return Err(format!("the 12 ABI has no ids: {other:?}")),
            }
        }
        let exec = graph.instantiate().map_err(failed)?;
        return ensure(
            matches!(exec.driver_id(), Err(Error::Unsupported { .. })),
            || "the 12 ABI has no executable ids".into(),
        );
    }
    let id = graph.driver_id().map_err(failed)?;
    ensure(id == graph.driver_id().map_err(failed)?, || {
        "a graph's id is stable".into()
    })?;
    ensure(id != clone.driver_id().map_err(failed)?, || {
        "a clone has its own id".into()
    })?;
    let (la, lb) = (
        graph.node_local_id(a).map_err(failed)?,
        graph.node_local_id(b).map_err(failed)?,
    );
    ensure(
        la != lb && la == graph.node_local_id(a).map_err(failed)?,
        || format!("local ids {la} and {lb}"),
    )?;
    let (ta, tb) = (
        graph.node_tools_id(a).map_err(failed)?,
        graph.node_tools_id(b).map_err(failed)?,
    );
    ensure(ta != tb, || format!("tools ids {ta} and {tb}"))?;
    let (first, second) = (
        graph.instantiate().map_err(failed)?,
        clone.instantiate().map_err(failed)?,
    );
    let ids = (
        first.driver_id().map_err(failed)?,
        second.driver_id().map_err(failed)?,
    );
    ensure(
        ids.0 != ids.1 && ids.0 == first.driver_id().map_err(failed)?,
        || format!("executable ids {ids:?}"),
    )
}

pub(crate) fn conditional_bodies_are_captured(stub: &Stub, fx: &Fixture) -> Verdict {
    let x = fx.floats(&[1.0; 4]);
    let counter = std::sync::Arc::new(
        fx.pool
            .allocate_from_host(&[5i32], &fx.stream)
            .map_err(failed)?,
    );
    let one = LaunchConfig::new(1, 1);
    // SAFETY: twice doubles the 4 floats of `x`, count_down updates the int of `counter`;
    // both buffers are kept by the graph (launches through the captures).
    let graph = unsafe {
        Graph::capture(&fx.stream, CaptureMode::ThreadLocal, |capture| {
            capture.launch(&one, &fx.twice, (&x, 4usize))?;
            let again = capture.conditional_handle(Some(1))?;
            let skip = capture.conditional_handle(Some(0))?;
            capture.add_while(&again, &fx.body, |body| {
                body.launch(&one, &fx.twice, (&x, 4usize))?;
                body.launch(&one, &fx.count_down, (again, &counter))?;
                Ok(())
            })?;
            capture.add_if(&skip, &fx.body, |body| {
                body.launch(&one, &fx.twice, (&x, 4usize))?;
                Ok(())
            })?;
            capture.launch(&one, &fx.twice, (&x, 4usize))?;
            Ok(())
        })
    }
    .map_err(failed)?;
    ensure(graph.nodes().map_err(failed)?.len() == 4, || {
        "a kernel, the while and if nodes, a kernel".into()
    })?;
    let status = Capture::status_of(&fx.body).map_err(failed)?;
    ensure(status == CaptureStatus::Idle, || {
        format!("the body stream: {status:?}")
    })?;
    graph
        .instantiate()
        .map_err(failed)?
        .launch(&fx.stream)
        .map_err(failed)?;
    let (got, left) = (floats_of(&x)?, counter.to_vec::<i32>().map_err(failed)?);
    ensure(got == [128.0; 4] && left == [0], || {
        format!("twice, 5 times in the loop, not in the if, once after: {got:?}, counter {left:?}")
    })?;

    // An empty body gets one empty node, as an explicit conditional node's does.
    let empties = stub.calls("cuGraphAddEmptyNode");
    // SAFETY: as above.
    let graph = unsafe {
        Graph::capture(&fx.stream, CaptureMode::ThreadLocal, |capture| {
            let zero = capture.conditional_handle(Some(0))?;
            capture.add_if_else(
                &zero,
                &fx.body,
                |then| then.launch(&one, &fx.twice, (&x, 4usize)).map(drop),
                |_| Ok(()),
            )?;
            Ok(())
        })
    }
    .map_err(failed)?;
    ensure(stub.calls("cuGraphAddEmptyNode") == empties + 1, || {
        "the empty else body got an empty node".into()
    })?;
    graph
        .instantiate()
        .map_err(failed)?
        .launch(&fx.stream)
        .map_err(failed)?;
    let got = floats_of(&x)?;
    ensure(got == [128.0; 4], || {
        format!("the else body ran, empty: {got:?}")
    })?;

    // Refusals before the node leave the capture as it was.
    // SAFETY: nothing is recorded.
    let mut capture =
        unsafe { Capture::begin(&fx.stream, CaptureMode::ThreadLocal) }.map_err(failed)?;
    let handle = capture.conditional_handle(Some(1)).map_err(failed)?;
    let mut elsewhere = Graph::new(fx.stream.context()).map_err(failed)?;
    let foreign = elsewhere.conditional_handle(None).map_err(failed)?;
    refused(
        capture.add_while(&foreign, &fx.body, |_| Ok(())),
        "another graph",
    )?;
    refused(
        capture.add_switch(&handle, &fx.body, 0, |_, _| Ok(())),
        "cannot have 0 bodies",
    )?;
    let empty = capture.end().map_err(failed)?;
    ensure(empty.nodes().map_err(failed)?.is_empty(), || {
        "no node was added".into()
    })?;

    // A failed body leaves its node (no node may be removed during a capture): the capture is
    // discarded at its end, and the body stream is free again.
    let destroyed = stub.calls("cuGraphDestroyNode");
    for fault in [false, true] {
        // SAFETY: nothing is recorded but a node that is discarded with the graph.
        let mut capture =
            unsafe { Capture::begin(&fx.stream, CaptureMode::ThreadLocal) }.map_err(failed)?;
        let handle = capture.conditional_handle(Some(1)).map_err(failed)?;
        let (error, words) = if fault {
            stub.fail("cuStreamBeginCaptureToGraph", 2, 1);
            let error = capture.add_while(&handle, &fx.body, |_| Ok(()));
            (error, "cuStreamBeginCaptureToGraph")
        } else {
            let error = capture.add_while(&handle, &fx.body, |_| {
                Err(Error::invalid_argument("the body's own error"))
            });
            (error, "the body's own error")
        };
        let error = error.expect_err("the body fails");
        ensure(error.to_string().contains(words), || format!("{error}"))?;
        let status = Capture::status_of(&fx.body).map_err(failed)?;
        ensure(status == CaptureStatus::Idle, || {
            format!("the body stream: {status:?}")
        })?;
        refused(capture.end(), "the capture was discarded")?;
        let status = Capture::status_of(&fx.stream).map_err(failed)?;
        ensure(status == CaptureStatus::Idle, || {
            format!("the capturing stream: {status:?}")
        })?;
    }
    ensure(stub.calls("cuGraphDestroyNode") == destroyed, || {
        "no node was removed from a graph under capture".into()
    })
}
