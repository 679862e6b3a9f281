//! cudarc and this crate on one stub driver: cudarc opens `libcuda.so` by name, which is the
//! stub's name, already loaded. Counts the calls each bridge makes: a view waits for cudarc's
//! events when it is made and records one when it drops; where cudarc tracks nothing, the two
//! streams wait for each other; a lent buffer's hand-back waits for cudarc's events and frees
//! nothing (the stub reports a double free as a misuse).

use cuda_safe::cudarc_bridge::{view, view_mut};
use cuda_safe::{Device, Error, LaunchConfig, ObjectCode, Stream, launch};
use cudarc::driver::CudaContext;

use super::live_streams;
use super::stub::{Call, Stub};

/// PTX text for the stub, which knows the kernel `twice` (doubling `n` floats) of any image.
const PTX: &str = ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// Elements of every slice.
const N: usize = 1024;

/// How many of `calls` are to `name`.
fn count(calls: &[Call], name: &str) -> usize {
    calls.iter().filter(|call| call.name == name).count()
}

/// The frees the stub answered so far.
fn frees(stub: &Stub) -> u64 {
    stub.calls("cuMemFreeAsync") + stub.calls("cuMemFree_v2")
}

/// Whether cudarc's driver library is the stub (it exports the stub's controls).
fn cudarc_uses_the_stub() -> bool {
    // SAFETY: cudarc opens its driver library once for the process; the name looked up is only
    // checked for presence, never called.
    unsafe { cudarc::driver::sys::culib().get::<unsafe extern "C" fn()>(b"stub_reset\0") }.is_ok()
}

pub fn check(stub: &Stub) {
    if !cudarc_uses_the_stub() {
        println!("skip cudarc: cudarc opened another driver than the stub");
        return;
    }
    let kernel = ObjectCode::from_ptx(PTX)
        .unwrap()
        .get_kernel("twice")
        .unwrap();
    let config = LaunchConfig::for_num_elements(N, 256).unwrap();

    // cudarc's streams as this crate's, kept alive by the wrappers.
    let context = CudaContext::new(0).unwrap();
    let (first, second) = (context.new_stream().unwrap(), context.new_stream().unwrap());
    assert!(context.is_managing_stream_synchronization());
    let (on_first, on_second) = (
        Stream::from_cudarc(&first).unwrap(),
        Stream::from_cudarc(&second).unwrap(),
    );
    let streams = live_streams(stub);
    let extra = context.new_stream().unwrap();
    let wrapped = Stream::from_cudarc(&extra).unwrap();
    drop(extra);
    assert_eq!(
        live_streams(stub),
        streams + 1,
        "the wrapper keeps cudarc's stream"
    );
    drop(wrapped);
    assert_eq!(
        live_streams(stub),
        streams,
        "cudarc destroys it after the last wrapper"
    );
    for special in [context.default_stream(), context.per_thread_stream()] {
        let error = Stream::from_cudarc(&special).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    }
    println!("ok   cudarc: its streams wrapped (kept alive, special handles refused)");

    // Tracked: an exclusive view waits for both events and records the write event.
    let mut x = first.clone_htod(&vec![1.0f32; N]).unwrap();
    stub.take_log();
    let mut y = view_mut(&mut x, &on_second).unwrap();
    let made = stub.take_log();
    assert_eq!(count(&made, "cuStreamWaitEvent"), 2, "{made:?}");
    assert_eq!(count(&made, "cuEventRecord"), 0, "{made:?}");
    // SAFETY: the stub's `twice` doubles the N floats of the view.
    unsafe { launch(&on_second, &config, &kernel, (&mut *y, N)) }.unwrap();
    stub.take_log();
    drop(y);
    let dropped = stub.take_log();
    assert_eq!(count(&dropped, "cuEventRecord"), 1, "{dropped:?}");
    assert_eq!(count(&dropped, "cuStreamWaitEvent"), 0, "{dropped:?}");
    assert_eq!(first.clone_dtoh(&x).unwrap(), vec![2.0f32; N]);
    // A shared view waits for the write event only, and records the read event.
    stub.take_log();
    let seen = view(&x, &on_first).unwrap();
    let made = stub.take_log();
    assert_eq!(count(&made, "cuStreamWaitEvent"), 1, "{made:?}");
    assert_eq!(seen.to_vec().unwrap(), vec![2.0f32; N]);
    stub.take_log();
    seen.close().unwrap();
    assert_eq!(count(&stub.take_log(), "cuEventRecord"), 1);
    println!("ok   cudarc: views wait for and record cudarc's events");

    // Untracked: the streams wait for each other instead.
    let plain = CudaContext::new(0).unwrap();
    // SAFETY: the slices made below are ordered by the views and synchronized before dropping.
    unsafe { plain.disable_event_tracking() };
    let (a, b) = (plain.new_stream().unwrap(), plain.new_stream().unwrap());
    let on_b = Stream::from_cudarc(&b).unwrap();
    let z = a.clone_htod(&vec![3.0f32; N]).unwrap();
    stub.take_log();
    let seen = view(&z, &on_b).unwrap();
    let made = stub.take_log();
    assert_eq!(count(&made, "cuEventRecord"), 1, "{made:?}");
    assert_eq!(count(&made, "cuStreamWaitEvent"), 1, "{made:?}");
    assert_eq!(seen.to_vec().unwrap(), vec![3.0f32; N]);
    stub.take_log();
    drop(seen);
    let dropped = stub.take_log();
    assert_eq!(count(&dropped, "cuEventRecord"), 1, "{dropped:?}");
    assert_eq!(count(&dropped, "cuStreamWaitEvent"), 1, "{dropped:?}");
    a.synchronize().unwrap();
    println!("ok   cudarc: without its tracking, a view joins the slice's stream both ways");

    // This crate's stream with a cudarc side, and a borrowed cudarc handle to it.
    let device = Device::new(0).unwrap();
    let ours = device.create_stream(Default::default()).unwrap();
    let error = view(&x, &ours).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    let bridged = ours.with_cudarc(&context).unwrap();
    assert_eq!(bridged, ours);
    view(&x, &bridged).unwrap().close().unwrap();
    // SAFETY: `ours` outlives the handle and the slice made on it (dropped first).
    let handle = unsafe { ours.to_cudarc(&context) }.unwrap();
    let made = handle.clone_htod(&vec![4.0f32; N]).unwrap();
    assert_eq!(handle.clone_dtoh(&made).unwrap(), vec![4.0f32; N]);
    drop(made);
    drop(handle);
    println!("ok   cudarc: this crate's stream given a cudarc side and handed to cudarc");

    // A buffer lent to cudarc: ordered after its stream, handed back after cudarc's events,
    // never freed by cudarc.
    let pool = device.default_memory_resource().unwrap();
    let mut buffer = pool.allocate_from_host(&vec![1.0f32; N], &ours).unwrap();
    let before = frees(stub);
    // Ordered through the crate's cross-stream rules: a wait while the buffer's stream still
    // has work (the stub's slow GPU), none once it has drained (one query tells).
    stub.slow_gpu(true);
    buffer.fill(1.0f32).unwrap();
    stub.take_log();
    let busy = buffer.lend_to_cudarc::<f32>(&first).unwrap();
    let made = stub.take_log();
    assert_eq!(count(&made, "cuStreamWaitEvent"), 1, "{made:?}");
    drop(busy);
    stub.slow_gpu(false);
    ours.sync().unwrap();
    stub.take_log();
    let mut lent = buffer.lend_to_cudarc_mut::<f32>(&first).unwrap();
    let made = stub.take_log();
    assert_eq!(count(&made, "cuStreamWaitEvent"), 0, "{made:?}");
    assert_eq!(count(&made, "cuStreamQuery"), 1, "{made:?}");
    assert_eq!(lent.len(), N);
    assert_eq!(first.clone_dtoh(&*lent).unwrap(), vec![1.0f32; N]);
    first
        .memcpy_htod(&vec![5.0f32; N], &mut lent.view_mut())
        .unwrap();
    stub.take_log();
    lent.close().unwrap();
    let back = stub.take_log();
    assert_eq!(count(&back, "cuStreamWaitEvent"), 3, "{back:?}");
    assert_eq!(frees(stub), before, "cudarc freed the lent memory");
    assert_eq!(buffer.to_vec::<f32>().unwrap(), vec![5.0f32; N]);
    let shared = buffer.lend_to_cudarc::<f32>(&first).unwrap();
    assert_eq!(first.clone_dtoh(&*shared).unwrap(), vec![5.0f32; N]);
    drop(shared);
    assert_eq!(frees(stub), before, "cudarc freed the lent memory");
    buffer.close().unwrap();
    assert_eq!(frees(stub), before + 1, "the buffer frees its memory once");
    let odd = pool.allocate(6, &ours).unwrap();
    let error = odd.lend_to_cudarc::<f32>(&first).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    println!("ok   cudarc: a lent buffer is ordered both ways and freed once, by its owner");

    first.synchronize().unwrap();
    second.synchronize().unwrap();
    context.check_err().unwrap();
    plain.check_err().unwrap();
}
