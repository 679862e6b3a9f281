//! Conditional nodes: if, if/else, while and switch, set by kernels; on an older driver, the
//! typed refusal.

use cuda_safe::{CaptureMode, ConditionalHandle, Error, Graph, ObjectCode};
use cuda_sys::CudaVersion;

use super::common::{compile, driver_version, setup};

/// Kernels that set a conditional handle (NVRTC 12.3 on knows the handle type).
const CONDITIONAL_SOURCE: &str = r#"
extern "C" __global__ void set_handle(cudaGraphConditionalHandle handle, unsigned int value) {
    cudaGraphSetConditional(handle, value);
}
extern "C" __global__ void add(int* p, int v) { atomicAdd(p, v); }
extern "C" __global__ void count_to(int* counter, int limit, cudaGraphConditionalHandle handle) {
    int count = atomicAdd(counter, 1) + 1;
    cudaGraphSetConditional(handle, count < limit ? 1 : 0);
}
"#;

/// The conditional kernels, or `None` (after checking the error is the typed one) when the
/// driver is older than `needed`.
fn conditional_code(needed: CudaVersion) -> Option<ObjectCode> {
    let version = driver_version();
    if version < needed {
        println!("driver {version} has no such conditional nodes; checking the refusal only");
        return None;
    }
    let source = format!(
        "{}{CONDITIONAL_SOURCE}",
        ConditionalHandle::DEVICE_DECLARATION
    );
    Some(compile(&source))
}

pub(crate) fn conditional_if_runs_its_body_when_a_kernel_sets_the_handle() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let Some(code) = conditional_code(CudaVersion(12040)) else {
        assert!(
            graph
                .conditional_handle(None)
                .unwrap_err()
                .is_not_supported()
        );
        return;
    };
    let (set_handle, add) = (
        code.get_kernel("set_handle").unwrap(),
        code.get_kernel("add").unwrap(),
    );
    let x = setup.ints(1);
    let handle = graph.conditional_handle(None).unwrap();
    // SAFETY: set_handle takes the handle and an unsigned int.
    let setter = unsafe { graph.add_kernel(&[], &setup.one, &set_handle, (handle, 0u32)) }.unwrap();
    let mut then = Graph::new(&setup.context).unwrap();
    // SAFETY: add updates the one int of `x`.
    unsafe { then.add_kernel(&[], &setup.one, &add, (&x, 1i32)) }.unwrap();
    let mut other = Graph::new(&setup.context).unwrap();
    let foreign = other.add_if(&[], &handle, &then).unwrap_err();
    assert!(foreign.to_string().contains("another graph"), "{foreign}");
    let branch = graph.add_if(&[setter.node()], &handle, &then).unwrap();
    // SAFETY: as above.
    unsafe { graph.add_kernel(&[branch], &setup.one, &add, (&x, 100i32)) }.unwrap();

    let mut exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&x),
        [100],
        "the handle was 0: the body was skipped"
    );
    // SAFETY: as above.
    unsafe { exec.set_kernel_args(&setter, (handle, 1u32)) }.unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [201], "the handle was 1: the body ran once");
}

pub(crate) fn conditional_if_else_runs_one_of_two_bodies() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let x = setup.ints(1);
    let Some(code) = conditional_code(CudaVersion(12080)) else {
        if driver_version() >= CudaVersion(12040) {
            let handle = graph.conditional_handle(Some(1)).unwrap();
            let empty = Graph::new(&setup.context).unwrap();
            let refused = graph.add_if_else(&[], &handle, &empty, &empty).unwrap_err();
            assert!(matches!(refused, Error::Unsupported { .. }), "{refused}");
        }
        return;
    };
    let (set_handle, add) = (
        code.get_kernel("set_handle").unwrap(),
        code.get_kernel("add").unwrap(),
    );
    let handle = graph.conditional_handle(None).unwrap();
    // SAFETY: set_handle takes the handle and an unsigned int.
    let setter = unsafe { graph.add_kernel(&[], &setup.one, &set_handle, (handle, 1u32)) }.unwrap();
    let (mut then, mut otherwise) = (
        Graph::new(&setup.context).unwrap(),
        Graph::new(&setup.context).unwrap(),
    );
    // SAFETY: add updates the one int of `x`.
    unsafe {
        then.add_kernel(&[], &setup.one, &add, (&x, 1i32)).unwrap();
        otherwise
            .add_kernel(&[], &setup.one, &add, (&x, 10i32))
            .unwrap();
    }
    graph
        .add_if_else(&[setter.node()], &handle, &then, &otherwise)
        .unwrap();
    let mut exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [1]);
    // SAFETY: as above.
    unsafe { exec.set_kernel_args(&setter, (handle, 0u32)) }.unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [11]);
}

pub(crate) fn conditional_while_loops_until_a_kernel_of_its_captured_body_clears_the_handle() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let Some(code) = conditional_code(CudaVersion(12040)) else {
        assert!(
            graph
                .conditional_handle(Some(1))
                .unwrap_err()
                .is_not_supported()
        );
        return;
    };
    let count_to = code.get_kernel("count_to").unwrap();
    let counter = setup.ints(1);
    setup.stream.sync().unwrap();
    let handle = graph.conditional_handle(Some(1)).unwrap();
    // SAFETY: count_to updates the one int of `counter` (kept by the body graph, then by
    // `graph`) and sets the handle.
    let body = unsafe {
        Graph::capture(&setup.stream, CaptureMode::ThreadLocal, |capture| {
            capture
                .launch(&setup.one, &count_to, (&counter, 10i32, handle))
                .map(drop)
        })
    }
    .unwrap();
    graph.add_while(&[], &handle, &body).unwrap();
    drop(body);
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&counter), [10], "ran until the count reached 10");
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&counter),
        [11],
        "the default (1) entered the loop once more"
    );
}

pub(crate) fn conditional_switch_runs_the_case_of_the_value() {
    let setup = setup();
    let mut graph = Graph::new(&setup.context).unwrap();
    let x = setup.ints(1);
    let Some(code) = conditional_code(CudaVersion(12080)) else {
        if driver_version() >= CudaVersion(12040) {
            let handle = graph.conditional_handle(Some(0)).unwrap();
            let empty = Graph::new(&setup.context).unwrap();
            let refused = graph.add_switch(&[], &handle, &[&empty]).unwrap_err();
            assert!(refused.is_not_supported(), "{refused}");
        }
        return;
    };
    let (set_handle, add) = (
        code.get_kernel("set_handle").unwrap(),
        code.get_kernel("add").unwrap(),
    );
    let handle = graph.conditional_handle(None).unwrap();
    assert!(
        graph.add_switch(&[], &handle, &[]).is_err(),
        "a switch needs a case"
    );
    // SAFETY: set_handle takes the handle and an unsigned int.
    let setter = unsafe { graph.add_kernel(&[], &setup.one, &set_handle, (handle, 2u32)) }.unwrap();
    let mut cases = Vec::new();
    for value in [1i32, 0, 100] {
        let mut case = Graph::new(&setup.context).unwrap();
        if value != 0 {
            // SAFETY: add updates the one int of `x`.
            unsafe { case.add_kernel(&[], &setup.one, &add, (&x, value)) }.unwrap();
        }
        cases.push(case); // case 1 stays empty
    }
    let case_refs: Vec<&Graph> = cases.iter().collect();
    graph
        .add_switch(&[setter.node()], &handle, &case_refs)
        .unwrap();
    let mut exec = graph.instantiate().unwrap();
    for (value, expected) in [(2u32, 100), (1, 100), (0, 101), (7, 101)] {
        // SAFETY: as above.
        unsafe { exec.set_kernel_args(&setter, (handle, value)) }.unwrap();
        exec.launch(&setup.stream).unwrap();
        assert_eq!(setup.read(&x), [expected], "value {value}");
    }
}
