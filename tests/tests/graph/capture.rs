//! Stream capture: each mode, what each mode forbids, forked streams, illegal work and the
//! recovery after it, and captured nodes updated in place.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_safe::{
    Buffer, Capture, CaptureMode, CaptureStatus, Context, Graph, Stream, StreamOptions, launch,
};
use cuda_sys::CUresult;

use super::common::{Setup, setup, setup_alone};

/// Captures `count` launches of add(x, 1) on `stream` in `mode`, checking the status on the
/// way.
fn capture_adds(
    setup: &Setup,
    stream: &Stream,
    mode: CaptureMode,
    x: &Buffer,
    count: usize,
) -> Graph {
    let add = setup.kernel("add");
    assert_eq!(Capture::status_of(stream).unwrap(), CaptureStatus::Idle);
    // SAFETY: `x` outlives every executable of the graph in these tests; add updates one int.
    let capture = unsafe { Capture::begin(stream, mode) }.unwrap();
    assert!(matches!(
        capture.status().unwrap(),
        CaptureStatus::Active { .. }
    ));
    for _ in 0..count {
        // SAFETY: as above.
        unsafe { launch(stream, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    }
    let graph = capture.end().unwrap();
    assert_eq!(Capture::status_of(stream).unwrap(), CaptureStatus::Idle);
    assert_eq!(graph.nodes().unwrap().len(), count);
    graph
}

pub(crate) fn capture_in_thread_local_and_relaxed_mode_records_launches() {
    let setup = setup();
    let x = setup.ints(1);
    setup.stream.sync().unwrap();
    for mode in [CaptureMode::ThreadLocal, CaptureMode::Relaxed] {
        let exec = capture_adds(&setup, &setup.stream, mode, &x, 10)
            .instantiate()
            .unwrap();
        exec.upload(&setup.stream).unwrap();
        exec.launch(&setup.stream).unwrap();
        exec.launch(&setup.stream).unwrap();
    }
    assert_eq!(setup.read(&x), [40]);
}

pub(crate) fn capture_in_global_mode_records_launches() {
    let (setup, _alone) = setup_alone();
    let x = setup.ints(1);
    setup.stream.sync().unwrap();
    let exec = capture_adds(&setup, &setup.stream, CaptureMode::Global, &x, 10)
        .instantiate()
        .unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [10]);
}

/// A synchronous allocation (`cuMemAlloc`), which capture modes forbid, made on a thread with
/// `context` current; frees it when it succeeds.
fn raw_alloc(context: &Context) -> Result<(), CUresult> {
    context.bind().unwrap();
    let driver = cuda_sys::driver().unwrap();
    let mut ptr = 0;
    // SAFETY: a valid out-pointer; the context is current.
    match unsafe { driver.cuMemAlloc_v2(&mut ptr, 256) }.unwrap() {
        CUresult::CUDA_SUCCESS => {
            // SAFETY: the allocation just made.
            unsafe { driver.cuMemFree_v2(ptr) }.unwrap();
            Ok(())
        }
        code => Err(code),
    }
}

/// Runs [`raw_alloc`] on another thread.
fn raw_alloc_elsewhere(context: &Context) -> Result<(), CUresult> {
    let context = context.clone();
    std::thread::spawn(move || raw_alloc(&context))
        .join()
        .unwrap()
}

pub(crate) fn capture_modes_forbid_unsafe_calls_where_documented() {
    let (setup, _alone) = setup_alone();
    let is_capture_code = |code: CUresult| (900..=908).contains(&code.0);
    let expectations = [
        // (mode, allowed here, allowed on another thread)
        (CaptureMode::Global, false, false),
        (CaptureMode::ThreadLocal, false, true),
        (CaptureMode::Relaxed, true, true),
    ];
    for (mode, here, elsewhere) in expectations {
        // One capture per call: a refused call invalidates the capture it would touch.
        for (on_this_thread, allowed) in [(true, here), (false, elsewhere)] {
            // SAFETY: nothing is recorded.
            let capture = unsafe { Capture::begin(&setup.stream, mode) }.unwrap();
            let outcome = if on_this_thread {
                raw_alloc(&setup.context)
            } else {
                raw_alloc_elsewhere(&setup.context)
            };
            println!("{mode:?}, on this thread: {on_this_thread}: {outcome:?}");
            assert_eq!(
                outcome.is_ok(),
                allowed,
                "{mode:?}, on this thread: {on_this_thread}"
            );
            if let Err(code) = outcome {
                assert!(is_capture_code(code), "{mode:?}: {}", code.0);
            }
            match capture.end() {
                Ok(graph) => assert!(graph.nodes().unwrap().is_empty()),
                Err(error) => assert!(error.is_capture_error(), "{error}"),
            }
            assert_eq!(
                Capture::status_of(&setup.stream).unwrap(),
                CaptureStatus::Idle
            );
        }
    }
}

pub(crate) fn illegal_work_during_capture_is_explained_and_the_stream_recovers() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    setup.stream.sync().unwrap();

    // A synchronization of the capturing stream.
    // SAFETY: `x` outlives the capture, which records one add.
    let capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: as above.
    unsafe { launch(&setup.stream, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    let sync = setup.stream.sync().unwrap_err();
    println!("sync while capturing: {sync}");
    assert!(sync.is_capture_error(), "{sync}");
    assert_eq!(
        sync.cuda_code(),
        Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    );
    assert!(
        sync.to_string().contains("not allowed while the stream"),
        "{sync}"
    );
    assert!(matches!(
        capture.status().unwrap(),
        CaptureStatus::Invalidated { .. }
    ));
    let ended = capture.end().unwrap_err();
    println!("end: {ended}");
    assert_eq!(
        ended.cuda_code(),
        Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
    );
    assert!(ended.to_string().contains("can be used again"), "{ended}");
    assert_eq!(
        Capture::status_of(&setup.stream).unwrap(),
        CaptureStatus::Idle
    );
    // SAFETY: add updates the one int of `x`.
    unsafe { launch(&setup.stream, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    assert_eq!(
        setup.read(&x),
        [1],
        "the captured add never ran; the stream runs again"
    );

    // The legacy default stream while a blocking stream captures.
    let blocking = setup
        .device
        .create_stream(StreamOptions::default().non_blocking(false))
        .unwrap();
    // SAFETY: the context is current on this thread, the only one using the handle.
    let legacy = unsafe { Stream::legacy_default(&setup.context) };
    // SAFETY: nothing the capture might record touches freed memory (`x` outlives it).
    let capture = unsafe { Capture::begin(&blocking, CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: add updates the one int of `x`.
    let implicit = unsafe { launch(&legacy, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap_err();
    println!("legacy stream while capturing: {implicit}");
    assert!(implicit.is_capture_error(), "{implicit}");
    match capture.end() {
        Ok(graph) => drop(graph),
        Err(error) => assert!(error.is_capture_error(), "{error}"),
    }
    // SAFETY: as above.
    unsafe { launch(&blocking, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    blocking.sync().unwrap();
    // SAFETY: as above.
    unsafe { launch(&legacy, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    legacy.sync().unwrap();
    assert_eq!(setup.read(&x), [3]);
}

pub(crate) fn capture_across_forked_streams_joins_into_one_graph() {
    let setup = setup();
    let (set_at, add, sum2) = (
        setup.kernel("set_at"),
        setup.kernel("add"),
        setup.kernel("sum2"),
    );
    let branch = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    let x = setup.ints(3);
    setup.stream.sync().unwrap();
    let (first, second) = (x.as_raw(), x.as_raw() + 4);
    // SAFETY: `x` (3 ints) outlives the executable; each kernel touches x[0..3].
    let graph = unsafe {
        Graph::capture(&setup.stream, CaptureMode::ThreadLocal, |capture| {
            launch(capture.stream(), &setup.one, &set_at, (first, 0i32, 1i32))?;
            capture.fork(&branch)?;
            assert!(matches!(
                Capture::status_of(&branch)?,
                CaptureStatus::Active { .. }
            ));
            launch(capture.stream(), &setup.one, &add, (first, 10i32))?;
            launch(&branch, &setup.one, &add, (second, 20i32))?;
            capture.join(&branch)?;
            launch(capture.stream(), &setup.one, &sum2, (first,))?;
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(graph.nodes().unwrap().len(), 4, "events add no nodes");
    assert_eq!(Capture::status_of(&branch).unwrap(), CaptureStatus::Idle);
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [11, 20, 31]);

    // A fork that is never joined.
    let lost = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    // SAFETY: as above.
    let capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    capture.fork(&lost).unwrap();
    // SAFETY: as above.
    unsafe { launch(&lost, &setup.one, &add, (first, 1i32)) }.unwrap();
    let unjoined = capture.end().unwrap_err();
    println!("unjoined: {unjoined}");
    assert_eq!(
        unjoined.cuda_code(),
        Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
    );
    assert!(unjoined.is_capture_error());
    assert_eq!(
        Capture::status_of(&setup.stream).unwrap(),
        CaptureStatus::Idle
    );
}

pub(crate) fn captured_kernel_nodes_are_updated_without_instantiating_again() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    setup.stream.sync().unwrap();
    let mut nodes = Vec::new();
    // SAFETY: add updates the one int of `x`, kept by the graph (an `Arc<Buffer>` argument).
    let graph = unsafe {
        Graph::capture(&setup.stream, CaptureMode::ThreadLocal, |capture| {
            for step in 0..3 {
                nodes.push(capture.launch(&setup.one, &add, (&x, step))?);
            }
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(graph.nodes().unwrap().len(), 3);
    let mut exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap(); // 0 + 1 + 2
    for node in &nodes {
        // SAFETY: as above.
        unsafe { exec.set_kernel_args(node, (&x, 100i32)) }.unwrap();
    }
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [303]);
    // The nodes named by position in a captured graph, as a C program would.
    let first = exec.graph().nodes().unwrap()[0];
    let named = exec.graph().kernel_node(first, &add, &setup.one).unwrap();
    // SAFETY: as above.
    unsafe { exec.set_kernel_args(&named, (&x, 1000i32)) }.unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [303 + 1200]);
}

pub(crate) fn host_functions_are_refused_on_a_capturing_stream() {
    let setup = setup();
    // SAFETY: nothing is recorded.
    let capture = unsafe { Capture::begin(&setup.stream, CaptureMode::ThreadLocal) }.unwrap();
    let refused = setup.stream.launch_host_func(|| {}).unwrap_err();
    assert!(refused.to_string().contains("Graph::add_host"), "{refused}");
    assert!(capture.end().unwrap().nodes().unwrap().is_empty());
    let ran = Arc::new(AtomicUsize::new(0));
    let count = ran.clone();
    setup
        .stream
        .launch_host_func(move || {
            count.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    setup.stream.sync().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

/// `Buffer::set_stream` off a capturing stream must not query it (that would end the capture):
/// the new stream joins the capture after the work recorded so far, as a fork does.
pub(crate) fn moving_a_buffer_off_a_capturing_stream_records_the_order() {
    let setup = setup();
    let (set_at, add) = (setup.kernel("set_at"), setup.kernel("add"));
    let branch = setup
        .device
        .create_stream(StreamOptions::default())
        .unwrap();
    let mut x = setup.pool.allocate_zeroed::<i32>(1, &setup.stream).unwrap();
    setup.stream.sync().unwrap();
    let raw = x.as_raw();
    // SAFETY: `x` (one int) outlives the executable; both kernels touch x[0].
    let graph = unsafe {
        Graph::capture(&setup.stream, CaptureMode::ThreadLocal, |capture| {
            launch(capture.stream(), &setup.one, &set_at, (raw, 0i32, 5i32))?;
            x.set_stream(&branch)?;
            assert!(matches!(
                Capture::status_of(&branch)?,
                CaptureStatus::Active { .. }
            ));
            launch(&branch, &setup.one, &add, (raw, 10i32))?;
            capture.join(&branch)?;
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(graph.nodes().unwrap().len(), 2);
    assert_eq!(Capture::status_of(&branch).unwrap(), CaptureStatus::Idle);
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    x.set_stream(&setup.stream).unwrap();
    assert_eq!(
        setup.read(&x),
        [15],
        "the add ran after the set, in the graph"
    );
}

/// A buffer moved between two other streams while a global-mode capture runs, on another
/// thread and on the capturing one: the move queries its old stream, which the driver refuses
/// in global mode; the crate queries in relaxed mode, and the capture stays active.
pub(crate) fn moving_a_buffer_on_another_thread_leaves_a_global_capture_alone() {
    let (setup, _alone) = setup_alone();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    let (first, second) = (
        setup
            .device
            .create_stream(StreamOptions::default())
            .unwrap(),
        setup
            .device
            .create_stream(StreamOptions::default())
            .unwrap(),
    );
    let mut moved = setup.pool.allocate_zeroed::<i32>(4, &first).unwrap();
    first.sync().unwrap();
    setup.stream.sync().unwrap();
    // SAFETY: `x` outlives the executable; add updates its one int.
    let capture = unsafe { Capture::begin(&setup.stream, CaptureMode::Global) }.unwrap();
    // SAFETY: as above.
    unsafe { launch(&setup.stream, &setup.one, &add, (x.as_raw(), 1i32)) }.unwrap();
    let target = second.clone();
    let mover = std::thread::spawn(move || {
        let result = moved.set_stream(&target);
        (moved, result)
    });
    let (mut moved, result) = mover.join().unwrap();
    result.unwrap();
    assert!(matches!(
        capture.status().unwrap(),
        CaptureStatus::Active { .. }
    ));
    moved.set_stream(&first).unwrap();
    assert!(matches!(
        capture.status().unwrap(),
        CaptureStatus::Active { .. }
    ));
    moved.set_stream(&second).unwrap();
    let exec = capture.end().unwrap().instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    assert_eq!(setup.read(&x), [1]);
    assert!(moved.stream().same_as(&second));
    moved.set_stream(&setup.stream).unwrap();
    assert_eq!(setup.read(&moved), [0; 4]);
}
