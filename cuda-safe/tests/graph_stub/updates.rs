//! Updates of definition nodes and executable nodes, what they keep alive, and 3-D copy nodes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_safe::{
    ArrayDescriptor, ArrayFormat, Copy3d, CopyNodeSide, CudaArray, EventOptions, Graph,
    LaunchConfig, PitchedBuffer,
};

use crate::stub::{Stub, take_error_logs};
use crate::{
    Fixture, Verdict, ensure, failed, floats_of, live_of, names, none_of, refused, wait_until,
    words_of,
};

/// A closure counting its runs by `step` into `hits`.
fn counter(hits: &Arc<AtomicUsize>, step: usize) -> impl Fn() + Send + Sync + 'static {
    let hits = Arc::clone(hits);
    move || {
        hits.fetch_add(step, Ordering::SeqCst);
    }
}

pub(crate) fn definition_updates_change_what_runs(stub: &Stub, fx: &Fixture) -> Verdict {
    let x = fx.floats(&[1.0; 8]);
    let (y, z) = (fx.words(8), fx.words(8));
    let (y2, z2, small) = (fx.words(8), fx.words(8), fx.words(3));
    let hits = Arc::new(AtomicUsize::new(0));
    let make_event = || {
        fx.device
            .create_event(EventOptions::default())
            .map(Arc::new)
    };
    let (event, other_event) = (make_event().map_err(failed)?, make_event().map_err(failed)?);
    let one = LaunchConfig::new(1, 1);

    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    // SAFETY: twice doubles the first 4 (later 8) floats of `x`, which holds 8.
    let kernel = unsafe { graph.add_kernel(&[], &one, &fx.twice, (&x, 4usize)) }.map_err(failed)?;
    let fill = graph.add_memset(&[], &y, 1u32).map_err(failed)?;
    let copy = graph.add_memcpy(&[fill], &z, &y).map_err(failed)?;
    let host = graph.add_host(&[], counter(&hits, 1)).map_err(failed)?;
    let record = graph.add_event_record(&[copy], &event).map_err(failed)?;

    // SAFETY: as above.
    unsafe { graph.set_kernel_args(&kernel, (&x, 8usize)) }.map_err(failed)?;
    graph.set_memset(fill, &y2, 7u32).map_err(failed)?;
    graph.set_memcpy(copy, &z2, &y2).map_err(failed)?;
    graph.set_host(host, counter(&hits, 10)).map_err(failed)?;
    graph
        .set_event_record(record, &other_event)
        .map_err(failed)?;
    let wait = graph.add_event_wait(&[record], &event).map_err(failed)?;
    graph.set_event_wait(wait, &other_event).map_err(failed)?;

    stub.take_log();
    refused(
        graph.set_memset(kernel.node(), &y2, 7u32),
        "is not a memset node",
    )?;
    refused(graph.set_host(fill, || {}), "is not a host node")?;
    refused(
        graph.set_event_wait(record, &event),
        "is not an event-wait node",
    )?;
    refused(graph.set_memcpy(copy, &small, &y2), "one size")?;
    let log = stub.take_log();
    ensure(
        names(&log).iter().all(|name| name == "cuGraphNodeGetType"),
        || format!("refused updates reach no setter: {:?}", names(&log)),
    )?;
    let mut node = kernel.clone();
    let clustered = LaunchConfig::clusters(1, 1, 32).map_err(failed)?;
    refused(
        // SAFETY: refused before the driver.
        unsafe { graph.set_kernel(&mut node, &clustered, &fx.twice, (&x, 8usize)) },
        "keeps its cluster shape",
    )?;
    refused(
        // SAFETY: refused before the driver: one argument short.
        unsafe { graph.set_kernel_args(&kernel, (&x,)) },
        "takes 2 parameters",
    )?;

    let mut other = Graph::new(fx.stream.context()).map_err(failed)?;
    // SAFETY: as above.
    let mut swapped =
        unsafe { other.add_kernel(&[], &one, &fx.twice, (&x, 8usize)) }.map_err(failed)?;
    // SAFETY: noop takes nothing and touches nothing.
    unsafe { other.set_kernel(&mut swapped, &one, &fx.noop, ()) }.map_err(failed)?;
    ensure(swapped.kernel().name() == "noop", || {
        "the node names its new kernel".into()
    })?;

    let exec = graph.instantiate().map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    other
        .instantiate()
        .map_err(failed)?
        .launch(&fx.stream)
        .map_err(failed)?;
    let (gx, gy, gy2, gz, gz2) = (
        floats_of(&x)?,
        words_of(&y)?,
        words_of(&y2)?,
        words_of(&z)?,
        words_of(&z2)?,
    );
    ensure(gx == [2.0; 8], || {
        format!("all 8 doubled, once (noop after): {gx:?}")
    })?;
    ensure(gy == [0; 8] && gz == [0; 8], || {
        format!("the old buffers untouched: {gy:?} {gz:?}")
    })?;
    ensure(gy2 == [7; 8] && gz2 == [7; 8], || {
        format!("the new ones set: {gy2:?} {gz2:?}")
    })?;
    ensure(hits.load(Ordering::SeqCst) == 10, || {
        "the new closure ran, once".into()
    })
}

pub(crate) fn executable_updates_keep_what_they_use(stub: &Stub, fx: &Fixture) -> Verdict {
    let (y, z) = (fx.words(8), fx.words(8));
    let hits = Arc::new(AtomicUsize::new(0));
    let event = Arc::new(
        fx.device
            .create_event(EventOptions::default())
            .map_err(failed)?,
    );
    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    let fill = graph.add_memset(&[], &y, 1u32).map_err(failed)?;
    let copy = graph.add_memcpy(&[fill], &z, &y).map_err(failed)?;
    let host = graph.add_host(&[copy], counter(&hits, 1)).map_err(failed)?;
    let record = graph.add_event_record(&[host], &event).map_err(failed)?;
    let wait = graph.add_event_wait(&[record], &event).map_err(failed)?;
    let mut exec = graph.instantiate().map_err(failed)?;
    let allocations = live_of(stub, "alloc");
    let (y2, z2) = (fx.words(8), fx.words(8));
    let (read_y2, read_z2) = (y2.as_raw(), z2.as_raw());
    {
        let other_event = Arc::new(
            fx.device
                .create_event(EventOptions::default())
                .map_err(failed)?,
        );
        exec.set_memset(fill, &y2, 9u32).map_err(failed)?;
        exec.set_memcpy(copy, &z2, &y2).map_err(failed)?;
        exec.set_host(host, counter(&hits, 100)).map_err(failed)?;
        exec.set_event_record(record, &other_event)
            .map_err(failed)?;
        exec.set_event_wait(wait, &other_event).map_err(failed)?;
        // Set again with the same buffers: nothing more is kept.
        exec.set_memset(fill, &y2, 9u32).map_err(failed)?;
    }
    drop((y2, z2));
    ensure(live_of(stub, "alloc") == allocations + 2, || {
        "the executable keeps the buffers its updates named".into()
    })?;
    stub.take_log();
    refused(exec.set_memset(host, &y, 1u32), "is not a memset node")?;
    refused(exec.set_host(fill, || {}), "is not a host node")?;
    none_of(&stub.take_log(), "cuGraphExecMemsetNodeSetParams")?;
    exec.launch(&fx.stream).map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    fx.stream.sync().map_err(failed)?;
    // SAFETY: the executable keeps both buffers alive (8 u32s each); nothing else writes them.
    let (gy2, gz2) = unsafe {
        (
            std::slice::from_raw_parts(read_y2 as usize as *const u32, 8).to_vec(),
            std::slice::from_raw_parts(read_z2 as usize as *const u32, 8).to_vec(),
        )
    };
    ensure(gy2 == [9; 8] && gz2 == [9; 8], || {
        format!("the new buffers set: {gy2:?} {gz2:?}")
    })?;
    ensure(words_of(&y)? == [0; 8], || {
        "the old memset target untouched".into()
    })?;
    ensure(hits.load(Ordering::SeqCst) == 200, || {
        "the new closure ran twice".into()
    })?;

    // Before it is destroyed, the executable takes its graph's references (one update).
    stub.take_log();
    drop(exec);
    let log = names(&stub.take_log());
    let (update, destroy) = (
        log.iter().position(|name| name == "cuGraphExecUpdate_v2"),
        log.iter().position(|name| name == "cuGraphExecDestroy"),
    );
    ensure(
        matches!((update, destroy), (Some(u), Some(d)) if u < d),
        || format!("an update from the graph, then the destruction: {log:?}"),
    )?;
    wait_until("the updates' buffers are freed", || {
        live_of(stub, "alloc") == allocations
    })?;

    // A refused handover waits for the context instead, and logs no error.
    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    let fill = graph.add_memset(&[], &y, 1u32).map_err(failed)?;
    let mut exec = graph.instantiate().map_err(failed)?;
    exec.set_memset(fill, &z, 2u32).map_err(failed)?;
    take_error_logs();
    stub.fail("cuGraphExecUpdate_v2", 2, 1);
    stub.take_log();
    drop(exec);
    let log = names(&stub.take_log());
    ensure(log.iter().any(|name| name == "cuCtxSynchronize"), || {
        format!("the release waited for the context: {log:?}")
    })?;
    let errors = take_error_logs();
    ensure(errors.is_empty(), || format!("errors logged: {errors:?}"))
}

pub(crate) fn copy_nodes_in_3d(stub: &Stub, fx: &Fixture) -> Verdict {
    let bytes: Vec<u8> = (0..512u32).map(|i| (i % 251) as u8).collect();
    let packed = Arc::new(
        fx.pool
            .allocate_from_host(&bytes, &fx.stream)
            .map_err(failed)?,
    );
    let pitched = Arc::new(PitchedBuffer::allocate(&fx.stream, 64, 4, 2, 4).map_err(failed)?);
    let descriptor = ArrayDescriptor::new(64, ArrayFormat::U8, 1)
        .height(4)
        .depth(2);
    let array = CudaArray::new(&fx.stream, descriptor).map_err(failed)?;
    let back = Arc::new(
        fx.pool
            .allocate_zeroed::<u8>(512, &fx.stream)
            .map_err(failed)?,
    );
    let slice = Arc::new(
        fx.pool
            .allocate_zeroed::<u8>(256, &fx.stream)
            .map_err(failed)?,
    );
    let boxed = Copy3d::boxed(64, 4, 2);
    let rows = |buffer: &Arc<cuda_safe::Buffer>| CopyNodeSide::buffer::<u8>(buffer, 64, 4);
    let (packed_side, back_side) = (rows(&packed).map_err(failed)?, rows(&back).map_err(failed)?);
    let pitched_side = CopyNodeSide::pitched::<u8>(&pitched).map_err(failed)?;
    let array_side = CopyNodeSide::array(&array);

    let mut graph = Graph::new(fx.stream.context()).map_err(failed)?;
    let into_pitched = graph
        .add_memcpy_3d(&[], &pitched_side, &packed_side, &boxed)
        .map_err(failed)?;
    let into_array = graph
        .add_memcpy_3d(&[into_pitched], &array_side, &pitched_side, &boxed)
        .map_err(failed)?;
    let out = graph
        .add_memcpy_3d(&[into_array], &back_side, &array_side, &boxed)
        .map_err(failed)?;
    stub.take_log();
    refused(
        graph.add_memcpy_3d(&[], &back_side, &packed_side, &Copy3d::boxed(64, 4, 3)),
        "source",
    )?;
    refused(
        graph.add_memcpy_3d(&[], &back_side, &packed_side, &Copy3d::boxed(0, 4, 2)),
        "at least one byte",
    )?;
    refused(
        graph.set_memcpy_3d(
            into_pitched,
            &back_side,
            &array_side,
            &Copy3d::boxed(65, 4, 2),
        ),
        "source",
    )?;
    none_of(&stub.take_log(), "cuGraphAddMemcpyNode")?;
    drop((array, pitched, packed));

    let mut exec = graph.instantiate().map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    let got = back.to_vec::<u8>().map_err(failed)?;
    ensure(got == bytes, || {
        "the bytes round-trip through pitched memory and an array".into()
    })?;
    // The second slice only, from the array into a buffer of one slice.
    let slice_side = rows(&slice).map_err(failed)?;
    let second = Copy3d::boxed(64, 4, 1).from_offset(0, 0, 1);
    exec.set_memcpy_3d(out, &slice_side, &array_side, &second)
        .map_err(failed)?;
    exec.launch(&fx.stream).map_err(failed)?;
    let got = slice.to_vec::<u8>().map_err(failed)?;
    ensure(got == bytes[256..], || {
        "the second slice was copied out".into()
    })
}
