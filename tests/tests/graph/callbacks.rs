//! Host callbacks: stream host functions in order, panics reported by the next call, and the
//! debug-build check that a callback makes no CUDA call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cuda_safe::{Error, EventOptions, Graph, launch};

use super::common::setup;

pub(crate) fn stream_host_functions_run_once_in_stream_order() {
    let setup = setup();
    let set_at = setup.kernel("set_at");
    let flag = setup
        .pinned
        .allocate_zeroed::<i32>(1, &setup.stream)
        .unwrap();
    let address = flag.as_raw() as usize;
    let seen = Arc::new(Mutex::new(Vec::new()));
    for step in 0..5 {
        // SAFETY: set_at writes the one pinned int of `flag`, which outlives the stream's work.
        unsafe {
            launch(
                &setup.stream,
                &setup.one,
                &set_at,
                (flag.as_raw(), 0i32, step),
            )
        }
        .unwrap();
        let log = seen.clone();
        setup
            .stream
            .launch_host_func(move || {
                // SAFETY: pinned memory the test keeps alive; the kernel before has finished.
                let value = unsafe { std::ptr::read_volatile(address as *const i32) };
                log.lock().unwrap().push((step, value));
            })
            .unwrap();
    }
    setup.stream.sync().unwrap();
    let expected: Vec<(i32, i32)> = (0..5).map(|step| (step, step)).collect();
    assert_eq!(*seen.lock().unwrap(), expected);
}

pub(crate) fn a_panicking_stream_host_function_is_reported_by_the_next_call() {
    let setup = setup();
    let add = setup.kernel("add");
    let x = setup.ints(1);
    setup
        .stream
        .launch_host_func(|| panic!("boom in a host function"))
        .unwrap();
    let reported = setup.stream.sync().unwrap_err();
    match &reported {
        Error::CallbackPanicked { message, count } => {
            assert!(message.contains("boom in a host function"));
            assert_eq!(*count, 1);
        }
        other => panic!("unexpected {other}"),
    }
    setup.stream.sync().unwrap();

    // A query that finds the work done reports it too.
    setup.stream.launch_host_func(|| panic!("again")).unwrap();
    loop {
        match setup.stream.query() {
            Ok(false) => std::thread::yield_now(),
            Ok(true) => panic!("the query did not report the panic"),
            Err(Error::CallbackPanicked { message, .. }) => {
                assert_eq!(&*message, "again");
                break;
            }
            Err(other) => panic!("unexpected {other}"),
        }
    }
    // So does the next host function, which is then not queued.
    let done = setup.device.create_event(EventOptions::default()).unwrap();
    setup.stream.launch_host_func(|| panic!("third")).unwrap();
    setup.stream.record(&done).unwrap();
    done.sync().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let count = ran.clone();
    let refused = setup.stream.launch_host_func(move || {
        count.fetch_add(1, Ordering::SeqCst);
    });
    assert!(matches!(refused, Err(Error::CallbackPanicked { .. })));
    setup.stream.sync().unwrap();
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "the refused host function never ran"
    );
    // The stream still runs kernels and callbacks.
    // SAFETY: add updates the one int of `x`.
    unsafe { launch(&setup.stream, &setup.one, &add, (&*x, 1i32)) }.unwrap();
    setup.stream.launch_host_func(|| {}).unwrap();
    assert_eq!(setup.read(&x), [1]);
}

pub(crate) fn a_panicking_host_node_is_reported_by_the_next_launch() {
    let setup = setup();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut graph = Graph::new(&setup.context).unwrap();
    graph
        .add_host(&[], move || {
            if counted.fetch_add(1, Ordering::SeqCst) == 1 {
                panic!("second replay");
            }
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    exec.launch(&setup.stream).unwrap();
    exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    let reported = exec.launch(&setup.stream).unwrap_err();
    assert!(reported.to_string().contains("second replay"), "{reported}");
    exec.launch(&setup.stream).unwrap();
    setup.stream.sync().unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "the refused launch ran nothing"
    );
}

pub(crate) fn host_callbacks_cannot_call_cuda_in_debug_builds() {
    if !cfg!(debug_assertions) {
        println!("release build: the check is compiled out (and CUDA is never called here)");
        return;
    }
    let setup = setup();
    let stream = setup.stream.clone();
    let answer = Arc::new(Mutex::new(None));
    let kept = answer.clone();
    setup
        .stream
        .launch_host_func(move || {
            *kept.lock().unwrap() = Some(stream.query());
        })
        .unwrap();
    setup.stream.sync().unwrap();
    let refused = answer.lock().unwrap().take().unwrap().unwrap_err();
    assert!(
        refused.to_string().contains("inside a host callback"),
        "{refused}"
    );
}
