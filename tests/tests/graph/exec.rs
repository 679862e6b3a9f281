//! Executable updates: whole graphs (applied or refused with the reason), kernel arguments,
//! nodes disabled and enabled.

use cuda_safe::{Error, Graph};

use super::common::setup;

pub(crate) fn whole_graph_updates_are_applied_or_refused_with_the_reason() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let single = |value: i32| {
        let mut graph = Graph::new(&setup.context).unwrap();
        // SAFETY: add updates the one int of `x`.
        unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, value)) }.unwrap();
        graph
    };
    let mut exec = single(1).instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    exec.update(&single(5)).unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [6]);

    let mut two = Graph::new(&setup.context).unwrap();
    // SAFETY: as above.
    unsafe {
        let first = two.add_kernel(&[], &setup.one, &add, (&x, 1i32)).unwrap();
        two.add_kernel(&[first.node()], &setup.one, &add, (&x, 1i32))
            .unwrap();
    }
    let refused = exec.update(&two).unwrap_err();
    println!("refused: {refused}");
    match refused {
        Error::GraphUpdateRefused { reason, .. } => assert_eq!(
            reason,
            cuda_sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
        ),
        other => panic!("unexpected {other}"),
    }
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&x),
        [11],
        "a refused update leaves the executable as it was"
    );
}

pub(crate) fn kernel_node_arguments_are_updated_in_the_executable() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    let node = unsafe { graph.add_kernel(&[], &setup.one, &add, (&x, 0i32)) }.unwrap();
    let mut other = Graph::new(&setup.context).unwrap();
    // SAFETY: as above.
    let stranger = unsafe { other.add_kernel(&[], &setup.one, &add, (&x, 0i32)) }.unwrap();
    let mut exec = graph.instantiate().unwrap();
    for value in 0..100 {
        // SAFETY: as above.
        unsafe { exec.set_kernel_args(&node, (&x, value)) }.unwrap();
        exec.launch(&setup.stream).unwrap();
    }
    assert_eq!(setup.read(&x), [4950]);
    // SAFETY: refused before the driver.
    let short = unsafe { exec.set_kernel_args(&node, (&x,)) }.unwrap_err();
    assert!(matches!(short, Error::InvalidArgument(_)), "{short}");
    // SAFETY: refused before the driver.
    let foreign = unsafe { exec.set_kernel_args(&stranger, (&x, 1i32)) }.unwrap_err();
    assert!(foreign.to_string().contains("another graph"), "{foreign}");
}

pub(crate) fn nodes_are_disabled_and_enabled() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    let (first, second) = unsafe {
        let first = graph.add_kernel(&[], &setup.one, &add, (&x, 1i32)).unwrap();
        let second = graph
            .add_kernel(&[first.node()], &setup.one, &add, (&x, 10i32))
            .unwrap();
        (first, second)
    };
    let mut exec = graph.instantiate().unwrap();
    assert!(exec.is_node_enabled(second.node()).unwrap());
    exec.set_node_enabled(second.node(), false).unwrap();
    assert!(!exec.is_node_enabled(second.node()).unwrap());
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [1]);
    exec.set_node_enabled(second.node(), true).unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [12]);
    assert!(exec.is_node_enabled(first.node()).unwrap());
}
