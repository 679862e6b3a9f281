//! Lifetimes: what graphs and executables keep alive, also with a replay in flight.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use cuda_safe::{Buffer, Graph};

use super::common::{SOURCE, Sentinel, compile, eventually, setup};

pub(crate) fn dropping_the_graph_while_a_replay_is_in_flight_keeps_what_it_uses() {
    let setup = setup();
    let (spin, set_at) = (setup.kernel("spin"), setup.kernel("set_at"));
    let x = setup.ints(1);
    let out = Arc::new(
        setup
            .pinned
            .allocate_zeroed::<i32>(1, &setup.stream)
            .unwrap(),
    );
    setup.stream.sync().unwrap();
    let (drops, runs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (sentinel, counted) = (Sentinel(drops.clone()), runs.clone());

    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: spin touches no memory; set_at writes the one int of `x` (kept by the graph).
    let write = unsafe {
        let slow = graph
            .add_kernel(&[], &setup.one, &spin, (200_000_000u64,))
            .unwrap();
        graph
            .add_kernel(&[slow.node()], &setup.one, &set_at, (&x, 0i32, 42i32))
            .unwrap()
    };
    let copy = graph.add_memcpy(&[write.node()], &out, &x).unwrap();
    graph
        .add_host(&[copy], move || {
            let _held = &sentinel;
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    let weak: Weak<Buffer> = Arc::downgrade(&x);
    exec.launch(&setup.stream).unwrap();
    drop(exec); // with the replay still spinning
    drop(x);
    assert!(
        weak.upgrade().is_some(),
        "the buffer outlives the replay in flight"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 0, "so does the closure");
    setup.stream.sync().unwrap();
    assert_eq!(out.as_host_slice::<i32>().unwrap(), [42]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    eventually("dropping the buffer", || weak.upgrade().is_none());
    eventually("dropping the closure", || drops.load(Ordering::SeqCst) == 1);
}

pub(crate) fn graphs_keep_buffers_kernels_and_closures_alive() {
    let setup = setup();
    let x = setup.ints(1);
    let weak = Arc::downgrade(&x);
    let drops = Arc::new(AtomicUsize::new(0));
    let sentinel = Sentinel(drops.clone());
    let mut graph = Graph::new(&setup.context).unwrap();
    {
        // Code loaded for this graph only: the graph keeps it loaded.
        let code = compile(SOURCE);
        let add = code.get_kernel("add").unwrap();
        // SAFETY: add updates the one int of `x`, an `Arc<Buffer>` the graph keeps.
        unsafe { graph.add_kernel(&[], &setup.one, &add, (x.clone(), 1i32)) }.unwrap();
    }
    graph
        .add_host(&[], move || {
            let _held = &sentinel;
        })
        .unwrap();
    let observed = Arc::clone(&x);
    drop(x);
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&setup.stream).unwrap();
    }
    assert_eq!(setup.read(&observed), [3]);
    drop(observed);
    assert!(weak.upgrade().is_some(), "kept by the executable");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    exec.close().unwrap();
    eventually("dropping the buffer", || weak.upgrade().is_none());
    eventually("dropping the closure", || drops.load(Ordering::SeqCst) == 1);

    // A graph dropped before any executable releases them too.
    let y = setup.ints(1);
    let weak = Arc::downgrade(&y);
    let mut unused = Graph::new(&setup.context).unwrap();
    unused.add_memset(&[], &y, 1u32).unwrap();
    drop(y);
    assert!(weak.upgrade().is_some());
    drop(unused);
    eventually("dropping an unused graph's buffer", || {
        weak.upgrade().is_none()
    });
    assert!(setup.device.sync().is_ok());
}
