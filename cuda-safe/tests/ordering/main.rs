//! The crate's ordering rules against the stub driver's race checker (`stub/c/cuda_race.c`:
//! a happens-before model of stream order) on the stub's asynchronous GPU (`stub/c/cuda_gpu.c`:
//! each stream's work run by a worker thread of its own, each operation taking time). Each case
//! uses one rule across two streams and asserts that the checker saw no race and that the data
//! is right; the checker's own case shows that an unordered pair is reported with both
//! operations named. The controls (`controls.rs`) make the writing stream late and do a rule's
//! work without its wait: each shows the race and the wrong data.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

mod controls;

use std::process::ExitCode;
use std::sync::Arc;

use cuda_safe::dlpack::{DLDataType, Layout, StridedMemoryView};
use cuda_safe::managed::discard_prefetch_batch;
use cuda_safe::{Error, ManagedMemoryResource, MemoryLocation, launch};
use cuda_safe_stub::Stub;
use cuda_safe_stub::ordering::{
    Fixture, LATE, N, Verdict, ensure, failed, holds, no_race, run_cases,
};

/// The checker itself: a memset queued on one stream over a buffer another stream filled, with
/// no wait between, is one race naming both operations.
fn the_checker_sees_an_unordered_pair(stub: &Stub, fx: &Fixture) -> Verdict {
    let mut buffer = fx
        .pool
        .allocate_zeroed::<f32>(N, &fx.first)
        .map_err(failed)?;
    buffer.fill(1.0f32).map_err(failed)?;
    let driver = cuda_safe::sys::driver().map_err(|e| e.to_string())?;
    // SAFETY: N 4-byte words of a live buffer, on a live stream; the race is the point.
    let code = unsafe { driver.cuMemsetD32Async(buffer.as_raw(), 0, N, fx.second.as_raw()) };
    ensure(code.is_ok_and(|c| c.0 == 0), || {
        "the raw memset failed".into()
    })?;
    fx.second.sync().map_err(failed)?;
    let (races, first) = stub.races();
    stub.races_reset();
    ensure(races == 1, || {
        format!("expected one race, saw {races}: {first}")
    })?;
    ensure(
        first.contains("cuMemsetD32Async") && first.contains("writes") && first.contains("stream"),
        || format!("the race does not name both memsets: {first}"),
    )
}

/// `Buffer::copy_from` between buffers of two streams: the copy (on the destination's stream)
/// comes after the source's fill (late), and the source's free after the copy.
fn copy_across_streams(stub: &Stub, fx: &Fixture) -> Verdict {
    stub.gpu_delay(&fx.first, LATE);
    let mut src = fx
        .pool
        .allocate_zeroed::<f32>(N, &fx.first)
        .map_err(failed)?;
    src.fill(3.0f32).map_err(failed)?;
    let mut dst = fx
        .pool
        .allocate_zeroed::<f32>(N, &fx.second)
        .map_err(failed)?;
    dst.copy_from(&src).map_err(failed)?;
    drop(src);
    no_race(stub)?;
    holds(&dst, 3.0)?;
    no_race(stub)
}

/// A launch on one stream with a buffer of another: the kernel comes after the buffer's fill
/// (late).
fn launch_with_a_foreign_buffer(stub: &Stub, fx: &Fixture) -> Verdict {
    stub.gpu_delay(&fx.first, LATE);
    let mut x = fx
        .pool
        .allocate_zeroed::<f32>(N, &fx.first)
        .map_err(failed)?;
    x.fill(1.5f32).map_err(failed)?;
    // SAFETY: the stub's `twice` doubles the N floats `x` holds.
    unsafe { launch(&fx.second, &fx.config, &fx.kernel, (&mut x, N)) }.map_err(failed)?;
    no_race(stub)?;
    holds(&x, 3.0)?;
    no_race(stub)
}

/// A buffer dropped while another stream still uses it: its free (on its own stream) comes
/// after a launch on the other stream and after a copy out of it on the other stream.
fn a_buffer_dropped_while_another_stream_uses_it(stub: &Stub, fx: &Fixture) -> Verdict {
    let mut x = fx
        .pool
        .allocate_from_host(&[2.0f32; N], &fx.first)
        .map_err(failed)?;
    // SAFETY: the stub's `twice` doubles the N floats `x` holds.
    unsafe { launch(&fx.second, &fx.config, &fx.kernel, (&mut x, N)) }.map_err(failed)?;
    drop(x);
    let src = fx
        .pool
        .allocate_from_host(&[5.0f32; N], &fx.first)
        .map_err(failed)?;
    let mut dst = fx
        .pool
        .allocate_zeroed::<f32>(N, &fx.second)
        .map_err(failed)?;
    dst.copy_from(&src).map_err(failed)?;
    drop(src);
    no_race(stub)?;
    holds(&dst, 5.0)?;
    no_race(stub)
}

/// `Buffer::set_stream` while the old stream still has work (the GPU slow for
/// `cuStreamQuery`): work on the new stream comes after the old stream's fill.
fn set_stream_while_the_old_stream_is_busy(stub: &Stub, fx: &Fixture) -> Verdict {
    let mut x = fx
        .pool
        .allocate_zeroed::<f32>(N, &fx.first)
        .map_err(failed)?;
    x.fill(4.0f32).map_err(failed)?;
    stub.slow_gpu(true);
    let moved = x.set_stream(&fx.second);
    stub.slow_gpu(false);
    moved.map_err(failed)?;
    // SAFETY: the stub's `twice` doubles the N floats `x` holds (now on `second`).
    unsafe { launch(&fx.second, &fx.config, &fx.kernel, (&mut x, N)) }.map_err(failed)?;
    no_race(stub)?;
    ensure(stub.calls("cuStreamWaitEvent") > 0, || {
        "set_stream queued no wait on a busy stream".into()
    })?;
    holds(&x, 8.0)?;
    no_race(stub)
}

/// A DLPack export to a consumer stream: the consumer's kernel comes after the producer's
/// fill, and the buffer's free after the consumer's work queued before the deleter.
fn dlpack_export_to_a_consumer_stream(stub: &Stub, fx: &Fixture) -> Verdict {
    let mut buffer = fx
        .pool
        .allocate_zeroed::<f32>(N, &fx.first)
        .map_err(failed)?;
    buffer.fill(0.5f32).map_err(failed)?;
    let shared = Arc::new(buffer);
    let view = StridedMemoryView::from_buffer(
        Arc::clone(&shared),
        &[N as i64],
        Layout::C,
        DLDataType::F32,
    )
    .map_err(failed)?;
    let exported = view
        .into_dlpack_versioned(Some(&fx.second))
        .map_err(failed)?;
    // SAFETY: `exported` is the live tensor just handed out; its data is N floats.
    let data = unsafe { (*exported).dl_tensor.data } as u64;
    // SAFETY: the stub's `twice` doubles the N floats at `data`, which the export keeps alive.
    unsafe { launch(&fx.second, &fx.config, &fx.kernel, (data, N)) }.map_err(failed)?;
    // SAFETY: the tensor came from `into_dlpack_versioned` and is deleted once, here.
    unsafe {
        let deleter = (*exported).deleter.expect("the export's deleter");
        deleter(exported);
    }
    no_race(stub)?;
    let buffer = Arc::into_inner(shared).ok_or("the deleter kept the buffer")?;
    holds(&buffer, 1.0)?;
    // The last reference: its free on `first` after the consumer's kernel.
    drop(buffer);
    no_race(stub)
}

/// A deleter called while only the export holds the buffer: its free on the producer's stream
/// comes after the consumer's kernel.
fn dlpack_deleter_frees_after_the_consumer(stub: &Stub, fx: &Fixture) -> Verdict {
    let buffer = fx
        .pool
        .allocate_from_host(&[1.0f32; N], &fx.first)
        .map_err(failed)?;
    let view = StridedMemoryView::from_buffer(buffer, &[N as i64], Layout::C, DLDataType::F32)
        .map_err(failed)?;
    let exported = view
        .into_dlpack_versioned(Some(&fx.second))
        .map_err(failed)?;
    // SAFETY: as in the case above.
    let data = unsafe { (*exported).dl_tensor.data } as u64;
    // SAFETY: as above.
    unsafe { launch(&fx.second, &fx.config, &fx.kernel, (data, N)) }.map_err(failed)?;
    // SAFETY: as above; this drops the buffer, queueing its free on `first`.
    unsafe {
        let deleter = (*exported).deleter.expect("the export's deleter");
        deleter(exported);
    }
    no_race(stub)
}

/// A discard-and-prefetch batch on one stream over managed buffers of another: the discard
/// comes after their fill, and their next fill after the discard. Under the CUDA 12 ABI the
/// discard is refused as unsupported, with nothing queued.
fn a_discard_batch_over_foreign_buffers(stub: &Stub, fx: &Fixture) -> Verdict {
    let managed = ManagedMemoryResource::new(&fx.device).map_err(failed)?;
    let mut a = managed
        .allocate_zeroed::<f32>(N, &fx.first)
        .map_err(failed)?;
    let mut b = managed
        .allocate_zeroed::<f32>(N, &fx.first)
        .map_err(failed)?;
    a.fill(1.0f32).map_err(failed)?;
    b.fill(1.0f32).map_err(failed)?;
    let to = MemoryLocation::Device(0);
    let discarded = discard_prefetch_batch(&fx.second, &[&mut a, &mut b], &[to]);
    if cuda_safe::sys::ABI_MAJOR < 13 {
        ensure(matches!(discarded, Err(Error::Unsupported { .. })), || {
            format!("a discard under the CUDA 12 ABI gave {discarded:?}")
        })?;
        ensure(stub.calls("cuMemDiscardAndPrefetchBatchAsync") == 0, || {
            "a refused discard reached the driver".into()
        })?;
        return no_race(stub);
    }
    discarded.map_err(failed)?;
    no_race(stub)?;
    a.fill(2.0f32).map_err(failed)?;
    b.fill(2.0f32).map_err(failed)?;
    no_race(stub)?;
    holds(&a, 2.0)?;
    holds(&b, 2.0)?;
    let last = a.last_prefetch_location().map_err(failed)?;
    ensure(last == Some(to), || format!("last prefetched to {last:?}"))?;
    no_race(stub)
}

fn main() -> ExitCode {
    run_cases(
        "ordering",
        &[
            (
                "the checker sees an unordered pair",
                the_checker_sees_an_unordered_pair,
            ),
            ("copy across streams", copy_across_streams),
            ("copy without its wait", controls::copy_without_its_wait),
            ("launch with a foreign buffer", launch_with_a_foreign_buffer),
            ("launch without its wait", controls::launch_without_its_wait),
            (
                "graph launch after a wait",
                controls::graph_launch_after_a_wait,
            ),
            (
                "graph launch without a wait",
                controls::graph_launch_without_a_wait,
            ),
            (
                "array copy across streams",
                controls::array_copy_across_streams,
            ),
            (
                "array copy without its wait",
                controls::array_copy_without_its_wait,
            ),
            (
                "a buffer dropped while another stream uses it",
                a_buffer_dropped_while_another_stream_uses_it,
            ),
            (
                "set_stream while the old stream is busy",
                set_stream_while_the_old_stream_is_busy,
            ),
            (
                "DLPack export to a consumer stream",
                dlpack_export_to_a_consumer_stream,
            ),
            (
                "DLPack deleter frees after the consumer",
                dlpack_deleter_frees_after_the_consumer,
            ),
            (
                "a discard batch over foreign buffers",
                a_discard_batch_over_foreign_buffers,
            ),
        ],
    )
}
