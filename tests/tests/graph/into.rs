//! Capture into an existing graph (after its nodes, with edge data), whole-graph updates of
//! an executable from a fresh capture, and re-capture (CUDA 13.3 drivers; typed
//! `Unsupported` naming the version elsewhere).

use cuda_safe::sys::{ABI_MAJOR, CUgraphExecUpdateResult};
use cuda_safe::{CaptureDependency, CaptureMode, Error, Graph, KernelEdge};
use cuda_sys::CudaVersion;

use super::common::{driver_version, setup};

const MODE: CaptureMode = CaptureMode::ThreadLocal;

pub(crate) fn captures_into_an_existing_graph_run_after_their_dependencies() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let mut graph = Graph::new(&setup.context).unwrap();
    let zero = graph.add_memset(&[], &x, 0i32).unwrap();
    // SAFETY: add updates the one int of `x`, which the graph keeps.
    let ends = unsafe {
        graph.capture_into(&setup.stream, MODE, &[zero.into()], |capture| {
            capture.launch(&setup.one, &add, (&x, 2i32))?;
            capture.launch(&setup.one, &add, (&x, 3i32))?;
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(ends.len(), 1);
    // SAFETY: as above.
    let last = unsafe { graph.add_kernel(&ends, &setup.one, &add, (&x, 10i32)) }.unwrap();
    if setup.device.compute_capability().unwrap().0 >= 9 {
        // A programmatic edge into the captured work (sm_90 on).
        let after = CaptureDependency {
            node: last.node(),
            edge: Some(KernelEdge::Programmatic),
        };
        // SAFETY: as above.
        unsafe {
            graph.capture_into(&setup.stream, MODE, &[after], |capture| {
                capture.launch(&setup.one, &add, (&x, 100i32)).map(drop)
            })
        }
        .unwrap();
    }
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&setup.stream).unwrap();
        let got = setup.read(&x)[0];
        assert!(
            got == 15 || got == 115,
            "each replay starts from the memset: {got}"
        );
    }
}

pub(crate) fn whole_graph_updates_from_a_fresh_capture_are_applied_or_refused() {
    let setup = setup();
    let add = setup.kernel("add");
    let (x, y) = (setup.ints(1), setup.ints(1));
    let captured = |target: &std::sync::Arc<cuda_safe::Buffer>, count: usize| {
        // SAFETY: add updates the one int of `target`, which the graph keeps.
        unsafe {
            Graph::capture(&setup.stream, MODE, |capture| {
                for _ in 0..count {
                    capture.launch(&setup.one, &add, (target, 1i32))?;
                }
                Ok(())
            })
        }
        .unwrap()
    };
    let mut exec = captured(&x, 2).instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    // SAFETY: as above, on `y`.
    unsafe {
        exec.update_from_capture(&setup.stream, MODE, |capture| {
            capture.launch(&setup.one, &add, (&y, 5i32))?;
            capture.launch(&setup.one, &add, (&y, 5i32))?;
            Ok(())
        })
    }
    .unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!((setup.read(&x), setup.read(&y)), (vec![2], vec![10]));
    match exec.update(&captured(&x, 3)) {
        Err(error @ Error::GraphUpdateRefused { reason, .. }) => {
            println!("refused: {error}");
            assert_eq!(
                reason,
                CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
            );
        }
        other => panic!("an update to three launches gave {other:?}"),
    }
    exec.launch(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&y),
        [20],
        "a refused update leaves the executable as it was"
    );
}

pub(crate) fn recapture_updates_the_executable_or_is_unsupported_with_the_version() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let record = |value: i32| {
        let x = &x;
        let add = &add;
        let one = setup.one;
        move |capture: &mut cuda_safe::Capture| {
            // SAFETY: add updates the one int of `x`, which the graph keeps.
            unsafe {
                capture.launch(&one, add, (x, 1i32))?;
                capture.launch(&one, add, (x, value))?;
            }
            Ok(())
        }
    };
    // SAFETY: add updates the one int of `x`, which the graph keeps.
    let mut exec = unsafe { Graph::capture(&setup.stream, MODE, record(1)) }
        .unwrap()
        .instantiate()
        .unwrap();
    // SAFETY: as above.
    let recaptured = unsafe { exec.recapture(&setup.stream, MODE, record(40)) };
    let have = driver_version();
    if ABI_MAJOR < 13 || have < CudaVersion(13030) {
        let needed = if ABI_MAJOR < 13 { "cuda-13" } else { "13.3" };
        match recaptured {
            Err(Error::Unsupported { reason, .. }) if reason.contains(needed) => {
                println!("re-capture unsupported here (driver {have}): {reason}");
                return;
            }
            other => panic!("re-capture on driver {have} gave {other:?}"),
        }
    }
    let report = recaptured.unwrap();
    assert_eq!(report.changed().len(), 1, "{report:?}");
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [41]);
}
