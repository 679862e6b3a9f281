//! Capture into an existing graph, whole-graph updates from a fresh capture, re-capture.

use cuda_safe::sys::{ABI_MAJOR, CUgraphExecUpdateResult};
use cuda_safe::{
    CaptureDependency, CaptureMode, Error, Graph, GraphExec, KernelEdge, LaunchConfig, Result,
};

use crate::stub::Stub;
use crate::{Fixture, Verdict, args_of, ensure, failed, refused, unsupported};

const MODE: CaptureMode = CaptureMode::ThreadLocal;

pub(crate) fn capture_into_an_existing_graph(stub: &Stub, fx: &Fixture) -> Verdict {
    let one = LaunchConfig::new(1, 1);
    let x = fx.floats(&[1.0; 4]);
    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    let fill = graph.add_memset(&[], &x, 3.0f32).map_err(failed)?;
    // SAFETY: twice doubles the first n floats of `x`, which the graph keeps.
    let ends = unsafe {
        graph.capture_into(&fx.stream, MODE, &[fill.into()], |capture| {
            capture.launch(&one, &fx.twice, (&x, 4usize))?;
            capture.launch(&one, &fx.twice, (&x, 2usize))?;
            Ok(())
        })
    }
    .map_err(failed)?;
    ensure(ends.len() == 1, || {
        format!("one last node, not {}", ends.len())
    })?;
    // SAFETY: as above.
    let last = unsafe { graph.add_kernel(&ends, &one, &fx.twice, (&x, 1usize)) }.map_err(failed)?;
    ensure(graph.nodes().map_err(failed)?.len() == 4, || {
        "a memset, two captured launches and one added".into()
    })?;

    // A programmatic edge from a kernel node into the captured work reaches the driver.
    stub.take_log();
    // SAFETY: as above.
    let after_edge = unsafe {
        graph.capture_into(
            &fx.stream,
            MODE,
            &[CaptureDependency {
                node: last.node(),
                edge: Some(KernelEdge::Programmatic),
            }],
            |capture| capture.launch(&one, &fx.twice, (&x, 1usize)).map(drop),
        )
    }
    .map_err(failed)?;
    let edges = args_of(&stub.take_log(), "cuStreamBeginCaptureToGraph");
    ensure(edges == [1], || {
        format!("the edge type the driver got: {edges:?}")
    })?;
    ensure(
        after_edge.len() == 1 && after_edge[0] != last.node(),
        || "the captured launch ends the work".into(),
    )?;

    let exec = graph.instantiate().map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    let got = x.to_vec::<f32>().map_err(failed)?;
    ensure(got == [48.0, 12.0, 6.0, 6.0], || {
        format!("fill 3, x2 (4), x2 (2), x2 (1), x2 (1): {got:?}")
    })?;

    // Refusals before the driver, then an older driver, then a failing capture.
    let mut empty = Graph::new(fx.stream.context()).map_err(failed)?;
    let foreign = CaptureDependency::from(exec.graph().nodes().map_err(failed)?[0]);
    // SAFETY: nothing is recorded.
    let after_foreign = unsafe { empty.capture_into(&fx.stream, MODE, &[foreign], |_| Ok(())) };
    refused(after_foreign, "another graph")?;
    stub.set_driver_version(12020);
    // SAFETY: nothing is recorded.
    let too_old = unsafe { empty.capture_into(&fx.stream, MODE, &[], |_| Ok(())) };
    unsupported(too_old, "12.3")?;
    stub.set_driver_version(13010);
    // SAFETY: as above.
    let stopped = unsafe {
        empty.capture_into(&fx.stream, MODE, &[], |capture| {
            capture.launch(&one, &fx.twice, (&x, 1usize))?;
            Err(Error::invalid_argument("stop here"))
        })
    };
    refused(stopped, "stop here")?;
    refused(empty.instantiate(), "a capture into the graph failed")
}

/// `count` launches of `twice` on `x`'s first `n` floats, captured into a new graph.
fn launches(fx: &Fixture, x: &std::sync::Arc<cuda_safe::Buffer>, count: usize) -> Result<Graph> {
    let one = LaunchConfig::new(1, 1);
    // SAFETY: twice doubles the 4 floats of `x`, which the graph keeps.
    unsafe {
        Graph::capture(&fx.stream, MODE, |capture| {
            for _ in 0..count {
                capture.launch(&one, &fx.twice, (x, 4usize))?;
            }
            Ok(())
        })
    }
}

/// Checks that `result` is the driver's refusal of an update for `reason`, naming the node at
/// `node` in the new graph's node list.
fn update_refused(
    result: Result<()>,
    reason: CUgraphExecUpdateResult,
    node: Option<usize>,
) -> Verdict {
    match result {
        Err(Error::GraphUpdateRefused {
            reason: got,
            node: named,
            from_node: None,
            ..
        }) if got == reason && named == node => Ok(()),
        other => Err(format!(
            "expected the update refused for {reason:?} at node {node:?}, got {other:?}"
        )),
    }
}

pub(crate) fn updates_from_a_fresh_capture(stub: &Stub, fx: &Fixture) -> Verdict {
    let one = LaunchConfig::new(1, 1);
    let (x, y) = (fx.floats(&[1.0; 4]), fx.floats(&[1.0; 4]));
    let mut exec = launches(fx, &x, 2)
        .and_then(Graph::instantiate)
        .map_err(failed)?;
    stub.take_log();
    // SAFETY: as in `launches`, on `y`.
    unsafe {
        exec.update_from_capture(&fx.stream, MODE, |capture| {
            for _ in 0..2 {
                capture.launch(&one, &fx.twice, (&y, 4usize))?;
            }
            Ok(())
        })
    }
    .map_err(failed)?;
    let calls = stub.take_log();
    ensure(crate::count_of(&calls, "cuGraphExecUpdate_v2") == 1, || {
        "one update".into()
    })?;
    ensure(
        crate::count_of(&calls, "cuGraphInstantiateWithParams") == 0,
        || "no new instantiation".into(),
    )?;
    exec.launch(&fx.stream).map_err(failed)?;
    let (gx, gy) = (
        x.to_vec::<f32>().map_err(failed)?,
        y.to_vec::<f32>().map_err(failed)?,
    );
    ensure(gx == [1.0; 4] && gy == [4.0; 4], || {
        format!("the update moved the work to y: x {gx:?}, y {gy:?}")
    })?;

    // SAFETY: as in `launches`.
    let three = unsafe {
        exec.update_from_capture(&fx.stream, MODE, |capture| {
            for _ in 0..3 {
                capture.launch(&one, &fx.twice, (&x, 4usize))?;
            }
            Ok(())
        })
    };
    update_refused(
        three,
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
        None,
    )?;
    let mut z = fx
        .pool
        .allocate_zeroed::<f32>(4, &fx.stream)
        .map_err(failed)?;
    // SAFETY: as in `launches`; the memset is of `z`, alive until the graph is dropped here.
    let retyped = unsafe {
        exec.update_from_capture(&fx.stream, MODE, |capture| {
            capture.launch(&one, &fx.twice, (&x, 4usize))?;
            z.fill(2.0f32)
        })
    };
    update_refused(
        retyped,
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED,
        Some(1),
    )?;
    exec.launch(&fx.stream).map_err(failed)?;
    let (gx, gy) = (
        x.to_vec::<f32>().map_err(failed)?,
        y.to_vec::<f32>().map_err(failed)?,
    );
    ensure(gx == [1.0; 4] && gy == [16.0; 4], || {
        format!("refused updates left the executable as it was: x {gx:?}, y {gy:?}")
    })
}

/// Re-captures `exec`'s graph as `count` launches of `twice` on `x`'s first `n` floats.
fn recapture(
    fx: &Fixture,
    exec: &mut GraphExec,
    x: &std::sync::Arc<cuda_safe::Buffer>,
    counts: &[usize],
) -> Result<cuda_safe::RecaptureReport> {
    let one = LaunchConfig::new(1, 1);
    // SAFETY: twice doubles the first n floats of `x`, which the graph keeps.
    unsafe {
        exec.recapture(&fx.stream, MODE, |capture| {
            for &n in counts {
                capture.launch(&one, &fx.twice, (x, n))?;
            }
            Ok(())
        })
    }
}

pub(crate) fn recapture_where_the_driver_has_it(stub: &Stub, fx: &Fixture) -> Verdict {
    let x = fx.floats(&[1.0; 4]);
    let mut exec = launches(fx, &x, 2)
        .and_then(Graph::instantiate)
        .map_err(failed)?;
    stub.set_driver_version(13020);
    let too_old = recapture(fx, &mut exec, &x, &[4, 2]);
    if ABI_MAJOR < 13 {
        stub.set_driver_version(13030);
        return unsupported(recapture(fx, &mut exec, &x, &[4, 2]), "cuda-13");
    }
    unsupported(too_old, "13.3")?;
    stub.set_driver_version(13030);

    let same = recapture(fx, &mut exec, &x, &[4, 4]).map_err(failed)?;
    ensure(same.is_unchanged(), || format!("nothing changed: {same:?}"))?;
    let changed = recapture(fx, &mut exec, &x, &[4, 2]).map_err(failed)?;
    let nodes = exec.graph().nodes().map_err(failed)?;
    ensure(
        changed.changed() == [nodes[1]] && changed.not_updatable().is_empty(),
        || format!("the second launch changed, updatably: {changed:?}"),
    )?;
    exec.launch(&fx.stream).map_err(failed)?;
    let got = x.to_vec::<f32>().map_err(failed)?;
    ensure(got == [4.0, 4.0, 2.0, 2.0], || {
        format!("the executable runs the re-captured work: {got:?}")
    })?;

    // Another kernel cannot be taken by an update: the report says so and the update is
    // refused, the executable as it was.
    let one = LaunchConfig::new(1, 1);
    let mut graph = launches(fx, &x, 1).map_err(failed)?;
    // SAFETY: noop touches nothing.
    let report = unsafe {
        graph.recapture(&fx.stream, MODE, |capture| {
            capture.launch(&one, &fx.noop, ()).map(drop)
        })
    }
    .map_err(failed)?;
    ensure(report.not_updatable().len() == 1, || {
        format!("a changed kernel is not updatable: {report:?}")
    })?;

    // Another topology fails the re-capture and leaves the graph undefined.
    let broken = recapture(fx, &mut exec, &x, &[4, 4, 4]);
    ensure(broken.is_err(), || "three launches over two nodes".into())?;
    exec.launch(&fx.stream).map_err(failed)?;
    let got = x.to_vec::<f32>().map_err(failed)?;
    ensure(got == [16.0, 16.0, 4.0, 4.0], || {
        format!("a failed re-capture leaves the executable as it was: {got:?}")
    })?;
    refused(
        exec.graph()
            .try_clone()
            .and_then(Graph::instantiate)
            .map(drop),
        "a re-capture failed",
    )
}
