//! Updates of nodes: definition nodes before instantiation (what runs changes), executable
//! memset, copy, host and event nodes in place, and what those updates use kept alive by the
//! executable, also when it is dropped with a replay in flight; 3-D copy nodes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use cuda_safe::{
    ArrayDescriptor, ArrayFormat, Buffer, Copy3d, CopyNodeSide, CudaArray, Error, EventOptions,
    Graph, PitchedBuffer, StreamOptions,
};

use super::common::{Sentinel, eventually, setup};

pub(crate) fn definition_updates_change_what_runs() {
    let setup = setup();
    let (add, set_at) = (setup.kernel("add"), setup.kernel("set_at"));
    let (x, y, z) = (setup.ints(4), setup.ints(4), setup.ints(4));
    let (y2, z2) = (setup.ints(4), setup.ints(4));
    let hits = Arc::new(AtomicUsize::new(0));
    let event = Arc::new(setup.device.create_event(EventOptions::default()).unwrap());
    let other_event = Arc::new(setup.device.create_event(EventOptions::default()).unwrap());
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates x[0], one int of `x` (which holds 4, kept by the graph).
    let mut kernel = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 1i32)) }.unwrap();
    let fill = graph.add_memset(&[kernel.node()], &y, 1i32).unwrap();
    let copy = graph.add_memcpy(&[fill], &z, &y).unwrap();
    let counted = hits.clone();
    let host = graph
        .add_host(&[copy], move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let record = graph.add_event_record(&[host], &event).unwrap();
    let wait = graph.add_event_wait(&[record], &event).unwrap();

    // SAFETY: set_at writes x[2] = 42 (`x` holds 4 ints).
    unsafe { graph.set_kernel(&mut kernel, &setup.one, &set_at, (&x, 2i32, 42i32)) }.unwrap();
    assert_eq!(kernel.kernel().name(), "set_at");
    graph.set_memset(fill, &y2, 7i32).unwrap();
    graph.set_memcpy(copy, &z2, &y2).unwrap();
    let counted = hits.clone();
    graph
        .set_host(host, move || {
            counted.fetch_add(100, Ordering::SeqCst);
        })
        .unwrap();
    graph.set_event_record(record, &other_event).unwrap();
    graph.set_event_wait(wait, &other_event).unwrap();
    let wrong = graph.set_memset(host, &y2, 7i32).unwrap_err();
    assert!(wrong.to_string().contains("not a memset node"), "{wrong}");
    let clustered = cuda_safe::LaunchConfig::clusters(1, 2, 32).unwrap();
    // SAFETY: refused before the driver.
    let reshaped = unsafe { graph.set_kernel(&mut kernel, &clustered, &set_at, (&x, 0i32, 1i32)) };
    assert!(
        matches!(reshaped, Err(Error::InvalidArgument(_))),
        "{reshaped:?}"
    );

    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [0, 0, 42, 0], "set_at ran instead of add");
    assert_eq!(setup.read(&y), [0; 4]);
    assert_eq!(setup.read(&z), [0; 4]);
    assert_eq!(setup.read(&y2), [7; 4]);
    assert_eq!(setup.read(&z2), [7; 4]);
    assert_eq!(hits.load(Ordering::SeqCst), 100, "the new closure ran");
    assert!(other_event.is_done().unwrap());

    // The arguments alone, before another instantiation.
    let mut again = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates x[0].
    let node = unsafe { again.add_kernel(&[], &setup.one, &add, (&x, 1i32)) }.unwrap();
    // SAFETY: as above.
    unsafe { again.set_kernel_args(&node, (&x, 1000i32)) }.unwrap();
    again.instantiate().unwrap().launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [1000, 0, 42, 0]);
}

pub(crate) fn executable_updates_keep_what_they_use_past_a_replay_in_flight() {
    let setup = setup();
    let spin = setup.kernel("spin");
    let other = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    let (x, y) = (setup.ints(256), setup.ints(256));
    let src = Arc::new(
        setup
            .pool
            .allocate_from_host(&[5i32; 256], &setup.stream)
            .unwrap(),
    );
    let dst = setup.ints(256);
    let filled = setup.ints(256);
    setup.stream.sync().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: spin touches no memory.
    let slow = unsafe { graph.add_kernel(&[], &setup.one, &spin, (0u64,)) }.unwrap();
    let fill = graph.add_memset(&[slow.node()], &x, 1i32).unwrap();
    let copy = graph.add_memcpy(&[fill], &y, &x).unwrap();
    let host = graph.add_host(&[copy], || {}).unwrap();
    let mut exec = graph.instantiate().unwrap();

    // New buffers and a new closure, which only the executable holds from here on.
    let (drops, counted) = (Arc::new(AtomicUsize::new(0)), runs.clone());
    let sentinel = Sentinel(drops.clone());
    exec.set_memset(fill, &filled, 9i32).unwrap();
    exec.set_memcpy(copy, &dst, &src).unwrap();
    exec.set_host(host, move || {
        let _held = &sentinel;
        counted.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    // SAFETY: spin touches no memory; 300 ms of spinning.
    unsafe { exec.set_kernel_args(&slow, (300_000_000u64,)) }.unwrap();
    let wrong = exec.set_memcpy(host, &dst, &src).unwrap_err();
    assert!(wrong.to_string().contains("not a copy node"), "{wrong}");
    let (weak_src, weak_filled): (Weak<Buffer>, Weak<Buffer>) =
        (Arc::downgrade(&src), Arc::downgrade(&filled));
    drop((src, filled));

    exec.launch(&other).unwrap();
    drop(exec); // with the replay spinning on `other`
    std::thread::sleep(std::time::Duration::from_millis(50));
    // Freed early, the source's memory would come back to the pool: take it and overwrite it.
    let mut reuse = setup.pool.allocate(256 * 4, &setup.stream).unwrap();
    reuse.fill(0x7f7f_7f7fu32).unwrap();
    assert!(
        weak_src.upgrade().is_some(),
        "the copy's source outlives the replay in flight"
    );
    assert!(
        weak_filled.upgrade().is_some(),
        "so does the memset's target"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 0, "and the closure");
    other.sync().unwrap();
    setup.stream.sync().unwrap();
    assert_eq!(setup.read(&dst), [5; 256], "the copy read its source");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the new closure ran once");
    assert_eq!(setup.read(&y), [0; 256], "the old copy did not run");
    eventually("dropping the source", || weak_src.upgrade().is_none());
    eventually("dropping the memset's target", || {
        weak_filled.upgrade().is_none()
    });
    eventually("dropping the closure", || drops.load(Ordering::SeqCst) == 1);
    drop(reuse);

    // Event nodes change events in place.
    let (first, second) = (
        Arc::new(setup.device.create_event(EventOptions::default()).unwrap()),
        Arc::new(setup.device.create_event(EventOptions::default()).unwrap()),
    );
    let mut graph = Graph::new(&setup.context).unwrap();
    let record = graph.add_event_record(&[], &first).unwrap();
    let wait = graph.add_event_wait(&[record], &first).unwrap();
    let mut exec = graph.instantiate().unwrap();
    exec.set_event_record(record, &second).unwrap();
    exec.set_event_wait(wait, &second).unwrap();
    exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    assert!(second.is_done().unwrap());
}

pub(crate) fn copy_nodes_move_boxes_between_buffers_pitched_memory_and_arrays() {
    let setup = setup();
    let (width, height, depth) = (256usize, 16usize, 4usize);
    let bytes: Vec<u8> = (0..width * height * depth)
        .map(|i| (i % 251) as u8)
        .collect();
    let packed = Arc::new(
        setup
            .pool
            .allocate_from_host(&bytes, &setup.stream)
            .unwrap(),
    );
    let pitched =
        Arc::new(PitchedBuffer::allocate(&setup.stream, width, height, depth, 4).unwrap());
    let descriptor = ArrayDescriptor::new(width, ArrayFormat::U8, 1)
        .height(height)
        .depth(depth);
    let array = CudaArray::new(&setup.stream, descriptor).unwrap();
    let back = Arc::new(
        setup
            .pool
            .allocate_zeroed::<u8>(bytes.len(), &setup.stream)
            .unwrap(),
    );
    let corner = Arc::new(
        setup
            .pool
            .allocate_zeroed::<u8>(64 * 4 * 2, &setup.stream)
            .unwrap(),
    );
    setup.stream.sync().unwrap();
    let whole = Copy3d::boxed(width, height, depth);
    let rows = |buffer: &Arc<Buffer>, pitch, per_slice| {
        CopyNodeSide::buffer::<u8>(buffer, pitch, per_slice)
    };
    let (packed_side, back_side) = (
        rows(&packed, width, height).unwrap(),
        rows(&back, width, height).unwrap(),
    );
    let pitched_side = CopyNodeSide::pitched::<u8>(&pitched).unwrap();
    let array_side = CopyNodeSide::array(&array);

    let mut graph = Graph::new(&setup.context).unwrap();
    let into_pitched = graph
        .add_memcpy_3d(&[], &pitched_side, &packed_side, &whole)
        .unwrap();
    let into_array = graph
        .add_memcpy_3d(&[into_pitched], &array_side, &pitched_side, &whole)
        .unwrap();
    let out = graph
        .add_memcpy_3d(&[into_array], &back_side, &array_side, &whole)
        .unwrap();
    let past = graph
        .add_memcpy_3d(
            &[],
            &back_side,
            &packed_side,
            &Copy3d::boxed(width, height, depth + 1),
        )
        .unwrap_err();
    assert!(past.to_string().contains("source"), "{past}");
    // A second graph: a 64 x 4 x 2 box from (32, 8, 1) of the array into `corner`.
    let mut boxed = graph.try_clone().unwrap();
    let corner_side = rows(&corner, 64, 4).unwrap();
    let from_corner = Copy3d::boxed(64, 4, 2).from_offset(32, 8, 1);
    let cloned_out = graph.node_in_clone(&boxed, out).unwrap();
    boxed
        .set_memcpy_3d(cloned_out, &corner_side, &array_side, &from_corner)
        .unwrap();
    drop((array, pitched, packed)); // the graphs keep them

    graph.instantiate().unwrap().launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    assert_eq!(
        back.to_vec::<u8>().unwrap(),
        bytes,
        "through pitched memory and an array"
    );
    let mut exec = boxed.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    let expected: Vec<u8> = (0..2)
        .flat_map(|z| (0..4).map(move |y| (z, y)))
        .flat_map(|(z, y)| {
            let start = (1 + z) * width * height + (8 + y) * width + 32;
            bytes[start..start + 64].to_vec()
        })
        .collect();
    assert_eq!(
        corner.to_vec::<u8>().unwrap(),
        expected,
        "the box at (32, 8, 1)"
    );
    // The driver updates only some copies in an executable; a 3-D box is refused with its error,
    // or applied.
    let single = Copy3d::boxed(64, 4, 2);
    match exec.set_memcpy_3d(cloned_out, &corner_side, &array_side, &single) {
        Ok(()) => {
            exec.launch(&setup.stream).unwrap();
            setup.stream.sync().unwrap();
            let expected: Vec<u8> = (0..2)
                .flat_map(|z| (0..4).map(move |y| (z, y)))
                .flat_map(|(z, y)| {
                    let start = z * width * height + y * width;
                    bytes[start..start + 64].to_vec()
                })
                .collect();
            assert_eq!(
                corner.to_vec::<u8>().unwrap(),
                expected,
                "the box at the origin"
            );
        }
        Err(error) => {
            println!("the driver refused a 3-D copy update in the executable: {error}");
            assert!(error.cuda_code().is_some(), "{error}");
        }
    }
}
