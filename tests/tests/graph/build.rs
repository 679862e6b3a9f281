//! Explicit building: every node type.

use std::sync::{Arc, Mutex};

use cuda_safe::{
    DotFlags, Error, EventOptions, Graph, InstantiateOptions, LaunchConfig, StreamOptions,
};

use super::common::setup;

pub(crate) fn kernel_nodes_run_with_checked_typed_arguments() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add(int*, int) updates one int, which `x` holds (kept by the graph).
    let node = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 3i32)) }.unwrap();
    assert_eq!(node.kernel().name(), "add");
    assert_eq!(graph.nodes().unwrap(), [node.node()]);

    // SAFETY: refused before the driver: one argument short.
    let short = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x,)) }.unwrap_err();
    assert!(
        short
            .to_string()
            .contains("takes 2 parameters, 1 arguments"),
        "{short}"
    );
    // SAFETY: refused before the driver: a 64-bit value for the int.
    let wide = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 3i64)) }.unwrap_err();
    assert!(matches!(wide, Error::InvalidArgument(_)), "{wide}");
    let mut other = Graph::new(&setup.context).unwrap();
    // SAFETY: refused before the driver: the dependency is a node of `graph`.
    let foreign = unsafe { other.add_kernel(&[node.node()], &setup.one, &add, (&x, 1i32)) };
    assert!(foreign.unwrap_err().to_string().contains("another graph"));
    // SAFETY: refused before the driver: a block over the device's limit.
    let huge = unsafe { other.add_kernel(&[], &LaunchConfig::new(1, 4096), &add, (&x, 1i32)) };
    assert!(matches!(huge, Err(Error::InvalidArgument(_))));

    let exec = graph.instantiate().unwrap();
    for _ in 0..4 {
        exec.launch(&setup.stream).unwrap();
    }
    assert_eq!(setup.read(&x), [12]);
}

pub(crate) fn memset_and_memcpy_nodes_fill_and_copy_buffers() {
    let setup = setup();
    let n = 1000;
    let words = setup.ints(n);
    let floats = setup.ints(n);
    let copy = Arc::new(
        setup
            .pinned
            .allocate_zeroed::<i32>(n, &setup.stream)
            .unwrap(),
    );
    let mut graph = Graph::new(&setup.context).unwrap();
    let set_words = graph.add_memset(&[], &words, 0x0BAD_F00Du32).unwrap();
    graph.add_memset(&[], &floats, 2.5f32).unwrap();
    graph.add_memcpy(&[set_words], &copy, &words).unwrap();

    let odd = graph.add_memset(&[], &floats, 1.5f64).unwrap_err();
    assert!(odd.to_string().contains("need a kernel"), "{odd}");
    let small = setup.ints(3);
    let sizes = graph.add_memcpy(&[], &small, &words).unwrap_err();
    assert!(matches!(sizes, Error::InvalidArgument(_)), "{sizes}");
    let uneven = Arc::new(setup.pool.allocate(6, &setup.stream).unwrap());
    assert!(
        graph.add_memset(&[], &uneven, 7u32).is_err(),
        "6 bytes are not u32s"
    );

    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    assert!(
        copy.as_host_slice::<u32>()
            .unwrap()
            .iter()
            .all(|&v| v == 0x0BAD_F00D)
    );
    assert!(floats.to_vec::<f32>().unwrap().iter().all(|&v| v == 2.5));
    assert!(
        words
            .to_vec::<u32>()
            .unwrap()
            .iter()
            .all(|&v| v == 0x0BAD_F00D)
    );
}

pub(crate) fn host_nodes_run_once_per_replay_after_their_dependencies() {
    let setup = setup();
    let set_at = setup.kernel("set_at");
    let flag = Arc::new(
        setup
            .pinned
            .allocate_zeroed::<i32>(1, &setup.stream)
            .unwrap(),
    );
    setup.stream.sync().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: set_at writes p[0] of one pinned int (kept by the graph).
    let write =
        unsafe { graph.add_kernel(&[], &setup.one, &set_at, (&flag, 0i32, 42i32)) }.unwrap();
    let (address, log) = (flag.as_raw() as usize, seen.clone());
    graph
        .add_host(&[write.node()], move || {
            // SAFETY: pinned host memory the test keeps alive; the kernel before has finished.
            let value = unsafe { std::ptr::read_volatile(address as *const i32) };
            log.lock().unwrap().push(value);
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..5 {
        exec.launch(&setup.stream).unwrap();
    }
    setup.stream.sync().unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [42; 5],
        "once per replay, after the kernel"
    );
}

pub(crate) fn event_record_and_wait_nodes_order_two_graphs_on_two_streams() {
    let setup = setup();
    let (spin, set_at, copy_one) = (
        setup.kernel("spin"),
        setup.kernel("set_at"),
        setup.kernel("copy_one"),
    );
    let other = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    let (x, y) = (setup.ints(1), setup.ints(1));
    setup.stream.sync().unwrap();
    let event = Arc::new(setup.device.create_event(EventOptions::default()).unwrap());

    let mut producer = Graph::new(&setup.context).unwrap();
    // SAFETY: spin reads the clock only; set_at writes the one int of `x`.
    let write = unsafe {
        let slow = producer
            .add_kernel(&[], &setup.one, &spin, (100_000_000u64,))
            .unwrap();
        producer
            .add_kernel(&[slow.node()], &setup.one, &set_at, (&x, 0i32, 7i32))
            .unwrap()
    };
    producer.add_event_record(&[write.node()], &event).unwrap();

    let mut consumer = Graph::new(&setup.context).unwrap();
    let wait = consumer.add_event_wait(&[], &event).unwrap();
    // SAFETY: copy_one copies one int between buffers holding one each.
    unsafe { consumer.add_kernel(&[wait], &setup.one, &copy_one, (&y, &x)) }.unwrap();

    let (producer, consumer) = (
        producer.instantiate().unwrap(),
        consumer.instantiate().unwrap(),
    );
    producer.launch(&setup.stream).unwrap();
    consumer.launch(&other).unwrap();
    other.sync().unwrap();
    assert_eq!(
        y.to_vec::<i32>().unwrap(),
        [7],
        "the copy waited for the 100 ms producer"
    );
    setup.stream.sync().unwrap();
}

pub(crate) fn allocation_nodes_give_memory_between_their_allocation_and_free() {
    let setup = setup();
    let fill = setup.kernel("fill");
    let n = 4096usize;
    let out = setup.ints(n);
    setup.stream.sync().unwrap();
    let mut graph = Graph::new(&setup.context).unwrap();
    let memory = graph.add_mem_alloc(&[], 4 * n).unwrap();
    assert_eq!(memory.len(), 4 * n);
    assert!(graph.add_mem_alloc(&[], 0).is_err());
    let config = LaunchConfig::for_num_elements(n, 256).unwrap();
    // SAFETY: fill writes n ints of the graph allocation, which holds n; it runs after the
    // allocation and before the copy and the free.
    let filled = unsafe {
        graph.add_kernel(
            &[memory.node()],
            &config,
            &fill,
            (memory.as_raw(), n as i32, 5i32),
        )
    }
    .unwrap();
    // SAFETY: both hold 4n bytes; `out` outlives the executable; the copy runs before the free.
    let copied =
        unsafe { graph.add_memcpy_raw(&[filled.node()], out.as_raw(), memory.as_raw(), 4 * n) }
            .unwrap();
    graph.add_mem_free(&[copied], &memory).unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&setup.stream).unwrap(); // freed in the graph, so it launches again
    }
    assert!(setup.read(&out).iter().all(|&v| v == 5));

    let mut unfreed = Graph::new(&setup.context).unwrap();
    unfreed.add_mem_alloc(&[], 256).unwrap();
    let options = InstantiateOptions::default().auto_free_on_launch(true);
    let exec = unfreed.instantiate_with(options).unwrap();
    exec.launch(&setup.stream).unwrap();
    exec.launch(&setup.stream).unwrap(); // the first launch's memory is freed on relaunch
    setup.stream.sync().unwrap();
}

pub(crate) fn child_graphs_and_empty_nodes_split_and_join() {
    let setup = setup();
    let (set_at, sum2, add) = (
        setup.kernel("set_at"),
        setup.kernel("sum2"),
        setup.kernel("add"),
    );
    let (x, counter) = (setup.ints(3), setup.ints(1));
    let mut child = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `counter`.
    unsafe { child.add_kernel(&[], &setup.one, &add, (&counter, 1i32)) }.unwrap();

    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: set_at writes x[0] and x[1]; sum2 reads them and writes x[2]; x holds 3 ints.
    let (left, right) = unsafe {
        (
            graph
                .add_kernel(&[], &setup.one, &set_at, (&x, 0i32, 1i32))
                .unwrap(),
            graph
                .add_kernel(&[], &setup.one, &set_at, (&x, 1i32, 2i32))
                .unwrap(),
        )
    };
    let join = graph.add_empty(&[left.node(), right.node()]).unwrap();
    // SAFETY: as above.
    let sum = unsafe { graph.add_kernel(&[join], &setup.one, &sum2, (&x,)) }.unwrap();
    let first = graph.add_child(&[sum.node()], &child).unwrap();
    graph.add_child(&[first], &child).unwrap();
    drop(child); // the graph holds its copy, and the counter through it
    assert_eq!(graph.nodes().unwrap().len(), 6);

    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [1, 2, 3]);
    assert_eq!(setup.read(&counter), [4]);
}

pub(crate) fn dependencies_added_later_order_nodes() {
    let setup = setup();
    let (spin, set_at, copy_one) = (
        setup.kernel("spin"),
        setup.kernel("set_at"),
        setup.kernel("copy_one"),
    );
    let x = setup.ints(2);
    let second = x.as_raw() + 4;
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: spin touches no memory; set_at writes x[0]; copy_one copies x[0] to x[1].
    let (write, copy) = unsafe {
        let slow = graph
            .add_kernel(&[], &setup.one, &spin, (50_000_000u64,))
            .unwrap();
        let write = graph
            .add_kernel(&[slow.node()], &setup.one, &set_at, (&x, 0i32, 9i32))
            .unwrap();
        let copy = graph
            .add_kernel(&[], &setup.one, &copy_one, (second, x.as_raw()))
            .unwrap();
        (write, copy)
    };
    graph.add_dependency(write.node(), copy.node()).unwrap();
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&x),
        [9, 9],
        "the copy waited for the write behind the spin"
    );
}

pub(crate) fn graphs_are_written_as_dot() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    let node = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 1i32)) }.unwrap();
    graph.add_empty(&[node.node()]).unwrap();
    let path = std::env::temp_dir().join(format!("cuda-safe-graph-{}.dot", std::process::id()));
    graph.write_dot(&path, DotFlags::VERBOSE).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(text.contains("digraph"), "{text}");
    assert!(
        text.contains("->"),
        "the edge from the kernel to the empty node: {text}"
    );
    assert!(graph.write_dot("no\0such.dot", DotFlags::empty()).is_err());
}
