//! Kernel nodes with clusters, cooperation and launch attributes, explicit and captured, and
//! programmatic edges between kernel nodes.

use cuda_safe::sys::CUlaunchAttributeID as Id;
use cuda_safe::{
    AccessPolicyWindow, Capture, CaptureMode, Dim3, Graph, KernelEdge, LaunchAttributes,
    LaunchConfig, MemSyncDomain,
};

use crate::stub::Stub;
use crate::{
    Fixture, Verdict, args_of, ensure, failed, floats_of, names, node_attribute, none_of, refused,
};

const SET_ATTRIBUTE: &str = "cuGraphKernelNodeSetAttribute";
const ADD_KERNEL: &str = "cuGraphAddKernelNode_v2";

pub(crate) fn clustered_and_cooperative_nodes(stub: &Stub, fx: &Fixture) -> Verdict {
    let x = fx.floats(&[1.0; 8]);
    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    let clustered = LaunchConfig::clusters(2, 2, 32).map_err(failed)?;
    stub.take_log();
    // SAFETY: twice doubles the 8 floats of `x` (kept by the graph).
    let node =
        unsafe { graph.add_kernel(&[], &clustered, &fx.twice, (&x, 8usize)) }.map_err(failed)?;
    let log = stub.take_log();
    ensure(args_of(&log, SET_ATTRIBUTE) == [4], || {
        format!("a clustered node sets its cluster (id 4): {log:?}")
    })?;
    // SAFETY: the cluster variant is the one the id names.
    let cluster = unsafe {
        node_attribute(node.node(), Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).clusterDim
    };
    ensure((cluster.x, cluster.y, cluster.z) == (2, 1, 1), || {
        format!(
            "the node's cluster is {} x {} x {}",
            cluster.x, cluster.y, cluster.z
        )
    })?;

    let uneven = LaunchConfig::new(3, 32).cluster(Dim3::from(2));
    stub.take_log();
    refused(
        // SAFETY: refused before the driver.
        unsafe { graph.add_kernel(&[], &uneven, &fx.twice, (&x, 8usize)) },
        "not a multiple of the cluster",
    )?;
    none_of(&stub.take_log(), ADD_KERNEL)?;

    let cooperative = LaunchConfig::new(132, 32).cooperative(true);
    // SAFETY: as above; every block doubles the same 8 floats once per node run (the stub runs
    // a launch once, whatever its grid).
    unsafe { graph.add_kernel(&[], &cooperative, &fx.twice, (&x, 8usize)) }.map_err(failed)?;
    let log = stub.take_log();
    ensure(args_of(&log, SET_ATTRIBUTE) == [2], || {
        format!("a cooperative node sets cooperation (id 2): {log:?}")
    })?;
    ensure(
        log.iter()
            .any(|call| call.name == "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
        || {
            format!(
                "a cooperative node's grid is checked against co-residency: {:?}",
                names(&log)
            )
        },
    )?;
    // The stub's SMs hold 32 blocks of 32 threads each, 132 SMs: 4224 blocks at once.
    let too_large = LaunchConfig::new(4225, 32).cooperative(true);
    refused(
        // SAFETY: refused before the driver.
        unsafe { graph.add_kernel(&[], &too_large, &fx.twice, (&x, 8usize)) },
        "a cooperative grid of 4225 blocks is more than the 4224",
    )?;
    none_of(&stub.take_log(), ADD_KERNEL)?;

    let exec = graph.instantiate().map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    let got = floats_of(&x)?;
    ensure(got == [4.0; 8], || {
        format!("two nodes doubled x twice: {got:?}")
    })
}

pub(crate) fn attributes_and_kernel_edges(stub: &Stub, fx: &Fixture) -> Verdict {
    let (x, y) = (fx.floats(&[1.0; 4]), fx.floats(&[1.0; 4]));
    let one = LaunchConfig::new(1, 1);
    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    let attributes = LaunchAttributes::default()
        .priority(-2)
        .mem_sync_domain(MemSyncDomain::Remote)
        .access_policy_window(AccessPolicyWindow::persisting(&x, 0.5));
    stub.take_log();
    // SAFETY: twice doubles the 4 floats of `x`.
    let first = unsafe { graph.add_kernel_with(&[], &one, &attributes, &fx.twice, (&x, 4usize)) }
        .map_err(failed)?;
    let log = stub.take_log();
    ensure(args_of(&log, SET_ATTRIBUTE) == [8, 10, 1], || {
        format!("priority, domain and window (ids 8, 10, 1) are set: {log:?}")
    })?;
    // SAFETY: the priority variant is the one the id names.
    let priority =
        unsafe { node_attribute(first.node(), Id::CU_LAUNCH_ATTRIBUTE_PRIORITY).priority };
    ensure(priority == -2, || {
        format!("the node's priority is {priority}")
    })?;

    let programmatic = LaunchAttributes::default().programmatic_stream_serialization(true);
    refused(
        // SAFETY: refused before the driver.
        unsafe { graph.add_kernel_with(&[], &one, &programmatic, &fx.twice, (&x, 4usize)) },
        "Graph::add_kernel_edge",
    )?;
    let out_of_range = LaunchAttributes::default().priority(3);
    refused(
        // SAFETY: refused before the driver (the stub's priorities are 0 to -5).
        unsafe { graph.add_kernel_with(&[], &one, &out_of_range, &fx.twice, (&x, 4usize)) },
        "outside the context's range",
    )?;
    none_of(&stub.take_log(), ADD_KERNEL)?;

    // SAFETY: twice doubles the 4 floats of `y`.
    let second = unsafe { graph.add_kernel(&[], &one, &fx.twice, (&y, 4usize)) }.map_err(failed)?;
    let lower = LaunchAttributes::default().priority(-1);
    stub.take_log();
    graph
        .set_kernel_attributes(&second, &lower)
        .map_err(failed)?;
    let log = stub.take_log();
    ensure(args_of(&log, SET_ATTRIBUTE) == [8], || {
        format!("one attribute set: {log:?}")
    })?;

    // A failed attribute takes its node out again.
    let nodes = graph.nodes().map_err(failed)?.len();
    let destroyed = stub.calls("cuGraphDestroyNode");
    stub.fail(SET_ATTRIBUTE, 2, 1);
    // SAFETY: as for `first`.
    let error = unsafe { graph.add_kernel_with(&[], &one, &attributes, &fx.twice, (&x, 4usize)) }
        .expect_err("the attribute fails");
    ensure(error.to_string().contains(SET_ATTRIBUTE), || {
        format!("{error}")
    })?;
    ensure(stub.calls("cuGraphDestroyNode") == destroyed + 1, || {
        "the node was not removed".into()
    })?;
    ensure(graph.nodes().map_err(failed)?.len() == nodes, || {
        "a node was left".into()
    })?;

    stub.take_log();
    graph
        .add_kernel_edge(&first, &second, KernelEdge::Programmatic)
        .map_err(failed)?;
    let log = stub.take_log();
    ensure(args_of(&log, "cuGraphAddDependencies_v2") == [1], || {
        format!("a programmatic edge (type 1): {log:?}")
    })?;
    refused(
        graph.add_kernel_edge(&first, &first, KernelEdge::LaunchOrder),
        "two different nodes",
    )?;
    let twice_over = graph.add_kernel_edge(&first, &second, KernelEdge::LaunchOrder);
    ensure(twice_over.is_err(), || {
        "the driver refuses a second edge".into()
    })?;

    let exec = graph.instantiate().map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    let (gx, gy) = (floats_of(&x)?, floats_of(&y)?);
    ensure(gx == [2.0; 4] && gy == [2.0; 4], || {
        format!("x {gx:?}, y {gy:?}")
    })
}

pub(crate) fn captured_launches_keep_their_attributes(stub: &Stub, fx: &Fixture) -> Verdict {
    let x = fx.floats(&[1.0; 4]);
    let one = LaunchConfig::new(1, 1);
    // SAFETY: the captured kernels double the 4 floats of `x`, which the graph keeps alive.
    let mut capture =
        unsafe { Capture::begin(&fx.stream, CaptureMode::ThreadLocal) }.map_err(failed)?;
    let clustered = LaunchConfig::clusters(2, 2, 32).map_err(failed)?;
    stub.take_log();
    // SAFETY: as above.
    let first = unsafe { capture.launch(&clustered, &fx.twice, (&x, 4usize)) }.map_err(failed)?;
    let log = stub.take_log();
    ensure(
        log.iter().any(|call| call.name == "cuLaunchKernelEx")
            && args_of(&log, SET_ATTRIBUTE) == [4],
        || format!("a captured cluster launch, its cluster set on the node: {log:?}"),
    )?;
    let attributes = LaunchAttributes::default()
        .priority(-3)
        .programmatic_stream_serialization(true);
    // SAFETY: as above; twice reads nothing the previous kernel writes before it starts.
    let second = unsafe { capture.launch_with(&one, &attributes, &fx.twice, (&x, 4usize)) }
        .map_err(failed)?;
    let log = stub.take_log();
    ensure(args_of(&log, SET_ATTRIBUTE) == [8], || {
        format!("the priority is set on the node, programmatic launch is not: {log:?}")
    })?;
    // SAFETY: as above.
    unsafe { capture.launch(&one, &fx.twice, (&x, 4usize)) }.map_err(failed)?;
    none_of(&stub.take_log(), SET_ATTRIBUTE)?;
    let graph = capture.end().map_err(failed)?;
    ensure(graph.nodes().map_err(failed)?.len() == 3, || {
        "three nodes".into()
    })?;
    // SAFETY: the variants the ids name.
    let (cluster, priority) = unsafe {
        (
            node_attribute(first.node(), Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).clusterDim,
            node_attribute(second.node(), Id::CU_LAUNCH_ATTRIBUTE_PRIORITY).priority,
        )
    };
    ensure(cluster.x == 2 && priority == -3, || {
        format!(
            "cluster {} and priority {priority} on the captured nodes",
            cluster.x
        )
    })?;
    let exec = graph.instantiate().map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    let got = floats_of(&x)?;
    ensure(got == [8.0; 4], || format!("three doublings: {got:?}"))
}
