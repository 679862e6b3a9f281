//! The rules shown on the asynchronous stub GPU: each case makes the writing stream late
//! ([`LATE`]), so the reader's work would run first without the rule's wait; its control does
//! the same work without the wait (the writer a raw fill the crate does not see, or the raw
//! driver's copy or launch) and shows both the race and the wrong data.

use std::ffi::c_void;

use cuda_safe::{
    ArrayDescriptor, ArrayFormat, Buffer, CaptureMode, Copy3d, CudaArray, Graph, HostPitchedMut,
};
use cuda_safe_stub::Stub;
use cuda_safe_stub::ordering::{
    Fixture, LATE, N, Verdict, ensure, failed, holds, no_race, raw_fill, read_on, unordered,
};

/// A zeroed buffer of `N` floats on `stream`.
fn zeroed(fx: &Fixture, stream: &cuda_safe::Stream) -> Result<Buffer, String> {
    fx.pool.allocate_zeroed::<f32>(N, stream).map_err(failed)
}

/// A copy between buffers of two streams with the copy's wait removed: the raw driver's copy
/// on the destination's stream reads the source before the late stream has filled it.
pub(crate) fn copy_without_its_wait(stub: &Stub, fx: &Fixture) -> Verdict {
    stub.gpu_delay(&fx.first, LATE);
    let mut src = zeroed(fx, &fx.first)?;
    src.fill(3.0f32).map_err(failed)?;
    let dst = zeroed(fx, &fx.second)?;
    let driver = cuda_safe::sys::driver().map_err(|e| e.to_string())?;
    // SAFETY: two live buffers of the same size, on a live stream; the race is the point.
    let code =
        unsafe { driver.cuMemcpyAsync(dst.as_raw(), src.as_raw(), dst.len(), fx.second.as_raw()) };
    ensure(code.is_ok_and(|c| c.0 == 0), || {
        "the raw copy failed".into()
    })?;
    let values = read_on(&dst, &fx.second)?;
    fx.first.sync().map_err(failed)?;
    unordered(stub, &values, 3.0)
}

/// A launch on one stream over a buffer another stream fills, with the launch's wait removed:
/// the raw driver's launch doubles the buffer before the late fill, which then overwrites it.
pub(crate) fn launch_without_its_wait(stub: &Stub, fx: &Fixture) -> Verdict {
    stub.gpu_delay(&fx.first, LATE);
    let mut x = zeroed(fx, &fx.first)?;
    x.fill(1.5f32).map_err(failed)?;
    let driver = cuda_safe::sys::driver().map_err(|e| e.to_string())?;
    let (mut address, mut n) = (x.as_raw(), N);
    let mut params = [
        (&raw mut address).cast::<c_void>(),
        (&raw mut n).cast::<c_void>(),
    ];
    let (grid, block) = (fx.config.grid, fx.config.block);
    // SAFETY: the stub's `twice` with its two parameters (a live buffer of N floats and N), on
    // a live stream; the race is the point.
    let code = unsafe {
        driver.cuLaunchKernel(
            fx.kernel.as_raw().cast(),
            grid.x,
            grid.y,
            grid.z,
            block.x,
            block.y,
            block.z,
            0,
            fx.second.as_raw(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    ensure(code.is_ok_and(|c| c.0 == 0), || {
        "the raw launch failed".into()
    })?;
    fx.second.sync().map_err(failed)?;
    let values = read_on(&x, &fx.first)?;
    unordered(stub, &values, 3.0)
}

/// `N` floats doubled by a graph captured on `second` (its one kernel node).
fn doubling_graph(fx: &Fixture, y: &Buffer) -> Result<cuda_safe::GraphExec, String> {
    // SAFETY: `twice` doubles the N floats of `y`, which the caller keeps alive past the
    // graph's launches (it synchronizes before dropping it).
    let graph = unsafe {
        Graph::capture(&fx.second, CaptureMode::ThreadLocal, |capture| {
            capture.launch(&fx.config, &fx.kernel, (y, N))?;
            Ok(())
        })
    }
    .map_err(failed)?;
    graph.instantiate().map_err(failed)
}

/// A graph launch after another stream's work on its memory: the launch stream waits for the
/// writer ([`Stream::wait_stream`](cuda_safe::Stream::wait_stream), the rule graph launches need,
/// since a graph's nodes name raw addresses), so the graph doubles the written values.
pub(crate) fn graph_launch_after_a_wait(stub: &Stub, fx: &Fixture) -> Verdict {
    graph_launch(stub, fx, true)
}

/// Its control: without the wait the graph doubles the buffer before the late fill.
pub(crate) fn graph_launch_without_a_wait(stub: &Stub, fx: &Fixture) -> Verdict {
    graph_launch(stub, fx, false)
}

fn graph_launch(stub: &Stub, fx: &Fixture, wait: bool) -> Verdict {
    let y = zeroed(fx, &fx.second)?;
    let exec = doubling_graph(fx, &y)?;
    fx.second.sync().map_err(failed)?;
    stub.races_reset();
    stub.gpu_delay(&fx.first, LATE);
    raw_fill(&y, &fx.first, 2.0)?;
    if wait {
        fx.second.wait_stream(&fx.first).map_err(failed)?;
    }
    exec.launch(&fx.second).map_err(failed)?;
    fx.second.sync().map_err(failed)?;
    fx.first.sync().map_err(failed)?;
    let values = read_on(&y, &fx.second)?;
    if !wait {
        return unordered(stub, &values, 4.0);
    }
    no_race(stub)?;
    ensure(values.iter().all(|&v| v == 4.0), || {
        format!("the graph doubled {:?}... instead of 2.0", &values[..4])
    })
}

/// Floats per row of the arrays below (the array holds `N` floats).
const ROW: usize = 256;

/// The array of `N` floats on `stream`, `N / ROW` rows of `ROW`.
fn floats_array(stream: &cuda_safe::Stream) -> Result<CudaArray, String> {
    let descriptor = ArrayDescriptor::new(ROW, ArrayFormat::F32, 1)
        .height(N / ROW)
        .depth(0);
    CudaArray::new(stream, descriptor).map_err(failed)
}

/// The floats of `array`, read on its stream.
fn array_values(array: &CudaArray) -> Result<Vec<f32>, String> {
    let mut back = vec![0.0f32; N];
    let pitch = ROW * size_of::<f32>();
    let mut host = HostPitchedMut::new(&mut back, pitch, N / ROW).map_err(failed)?;
    array
        .copy_to_host(&mut host, &Copy3d::rect(pitch, N / ROW))
        .map_err(failed)?;
    Ok(back)
}

/// A copy into an array on one stream from a buffer another stream fills late: the array's
/// stream waits for the buffer's.
pub(crate) fn array_copy_across_streams(stub: &Stub, fx: &Fixture) -> Verdict {
    stub.gpu_delay(&fx.first, LATE);
    let mut x = zeroed(fx, &fx.first)?;
    x.fill(2.5f32).map_err(failed)?;
    let mut array = floats_array(&fx.second)?;
    let pitch = ROW * size_of::<f32>();
    let source = x.pitched::<f32>(pitch, N / ROW).map_err(failed)?;
    array
        .copy_from(&source, &Copy3d::rect(pitch, N / ROW))
        .map_err(failed)?;
    let values = array_values(&array)?;
    no_race(stub)?;
    ensure(values.iter().all(|&v| v == 2.5), || {
        format!("the array holds {:?}...", &values[..4])
    })?;
    holds(&x, 2.5)
}

/// Its control: the buffer on the array's stream, filled late by a raw fill on another stream
/// (no wait for the crate to queue): the array receives the buffer's zeros.
pub(crate) fn array_copy_without_its_wait(stub: &Stub, fx: &Fixture) -> Verdict {
    let x = zeroed(fx, &fx.second)?;
    let mut array = floats_array(&fx.second)?;
    fx.second.sync().map_err(failed)?;
    stub.races_reset();
    stub.gpu_delay(&fx.first, LATE);
    raw_fill(&x, &fx.first, 2.5)?;
    let pitch = ROW * size_of::<f32>();
    let source = x.pitched::<f32>(pitch, N / ROW).map_err(failed)?;
    array
        .copy_from(&source, &Copy3d::rect(pitch, N / ROW))
        .map_err(failed)?;
    let values = array_values(&array)?;
    fx.first.sync().map_err(failed)?;
    unordered(stub, &values, 2.5)
}
