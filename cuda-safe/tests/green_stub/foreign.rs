//! Green contexts and streams made by raw driver calls, as another library makes them, wrapped
//! without ownership: the crate's streams, launches and buffers work on them, its handles let
//! go without destroying anything, and the other library's destroy then succeeds (a second
//! destroy would be a misuse the stub reports).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cuda_safe::sys::{self, CUgreenCtx, CUstream};
use cuda_safe::{Context, Device, SplitRequest, Stream, StreamOptions};
use cuda_safe_stub::Stub;
use cuda_safe_stub::faults::fixtures::{
    N, device, device_of, kernel, launch_fixture, launch_twice,
};

use crate::{Verdict, abi13, ensure, failed, live, raw};

/// SMs of the green contexts made here.
const SMS: u32 = 64;

/// A green context of [`SMS`] SMs on `device`, made as another library makes one.
fn raw_green(device: &Device) -> Result<CUgreenCtx, String> {
    let driver = sys::driver().map_err(|error| error.to_string())?;
    let split = device
        .resources()
        .sm()
        .and_then(|sm| sm.split(&SplitRequest::equal(1, SMS)))
        .map_err(failed)?;
    let mut resource = *split.groups[0].as_raw();
    let mut desc = std::ptr::null_mut();
    // SAFETY: one initialised resource and a valid out-pointer.
    let outcome = unsafe { driver.cuDevResourceGenerateDesc(&mut desc, &mut resource, 1) };
    raw(outcome, "cuDevResourceGenerateDesc")?;
    let mut green = std::ptr::null_mut();
    let flags = sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0;
    // SAFETY: a descriptor just made, a valid device and out-pointer.
    let outcome = unsafe { driver.cuGreenCtxCreate(&mut green, desc, device.as_raw(), flags) };
    raw(outcome, "cuGreenCtxCreate")?;
    Ok(green)
}

/// A stream of `green`, made as another library makes one.
fn raw_stream(green: CUgreenCtx) -> Result<CUstream, String> {
    let driver = sys::driver().map_err(|error| error.to_string())?;
    let mut stream = std::ptr::null_mut();
    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING.0;
    // SAFETY: a live green context and a valid out-pointer.
    let outcome = unsafe { driver.cuGreenCtxStreamCreate(&mut stream, green, flags, 0) };
    raw(outcome, "cuGreenCtxStreamCreate")?;
    Ok(stream)
}

/// The other library's clean-up: its stream, then its green context.
fn destroy(stream: Option<CUstream>, green: CUgreenCtx) -> Verdict {
    let driver = sys::driver().map_err(|error| error.to_string())?;
    if let Some(stream) = stream {
        // SAFETY: a stream this test made, destroyed once, here.
        let outcome = unsafe { driver.cuStreamDestroy_v2(stream) };
        raw(outcome, "cuStreamDestroy")?;
    }
    // SAFETY: a green context this test made, destroyed once, here.
    let outcome = unsafe { driver.cuGreenCtxDestroy(green) };
    raw(outcome, "cuGreenCtxDestroy")
}

/// The calling thread's current context.
fn current() -> Result<sys::CUcontext, String> {
    let driver = sys::driver().map_err(|error| error.to_string())?;
    let mut context = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    let outcome = unsafe { driver.cuCtxGetCurrent(&mut context) };
    raw(outcome, "cuCtxGetCurrent")?;
    Ok(context)
}

/// `twice` launched on `stream` doubles the fixture's buffer.
fn launches_double(stream: &Stream) -> Verdict {
    let fixture = launch_fixture(stream.clone(), kernel());
    launch_twice(&fixture, stream).map_err(failed)?;
    let values = fixture.buffer.borrow().to_vec::<f32>().map_err(failed)?;
    ensure(values == [3.0f32; N], || {
        "the launch on the wrapped context did not double the buffer".into()
    })
}

/// A green context and a stream of another library's: the crate wraps both, makes a stream of
/// its own on the context, launches on each, reads the partition and the id, and its handles
/// go without destroying either; the other library's destroys then succeed.
pub(crate) fn a_foreign_green_context_is_used_and_never_destroyed(stub: &Stub) -> Verdict {
    let device = device();
    let greens = live(stub, "green");
    let green = raw_green(&device)?;
    let foreign_stream = raw_stream(green)?;
    let bound = current()?;
    {
        // SAFETY: `green` lives until `destroy` below, after every handle made here is gone.
        let context = unsafe { Context::from_raw_green(green, &device) }.map_err(failed)?;
        ensure(current()? == bound, || {
            "wrapping changed the thread's context".into()
        })?;
        ensure(
            context.is_green() && !context.is_owned() && context.owner().is_none(),
            || format!("{context:?}"),
        )?;
        ensure(
            context.green_sm_count() == Some(SMS) && context.as_raw_green() == Some(green),
            || format!("the wrapper reads {:?} SMs", context.green_sm_count()),
        )?;
        let ours = context
            .create_stream(StreamOptions::default())
            .map_err(failed)?;
        // SAFETY: `foreign_stream` is a stream of `green`, alive until `destroy` below.
        let theirs = unsafe { Stream::from_raw(foreign_stream, &context) };
        // SAFETY: as above; the green context is found from the stream.
        let handed = unsafe { Stream::from_raw_green(foreign_stream, &device) };
        let handed = handed.map_err(failed)?;
        ensure(
            handed.context() == &context && !handed.context().is_owned(),
            || {
                format!(
                    "a stream wrapped alone has the context {:?}",
                    handed.context()
                )
            },
        )?;
        launches_double(&ours)?;
        launches_double(&theirs)?;
        launches_double(&handed)?;
        if abi13() {
            let sms = theirs.sm_resource().map_err(failed)?.sm_count();
            ensure(sms == SMS, || {
                format!("the foreign stream runs on {sms} SMs")
            })?;
        }
        sys::if_abi13! {
            let driver = sys::driver().map_err(|error| error.to_string())?;
            let mut id = 0;
            // SAFETY: a live green context and a valid out-pointer.
            let outcome = unsafe { driver.cuGreenCtxGetId(green, &mut id) };
            raw(outcome, "cuGreenCtxGetId")?;
            ensure(context.green_id().map_err(failed)? == Some(id), || {
                "the wrapper's green id is not the context's".into()
            })?;
        }
        context.sync().map_err(failed)?;
    }
    ensure(live(stub, "green") == greens + 1, || {
        "the wrapper's last handle destroyed the green context".into()
    })?;
    destroy(Some(foreign_stream), green)?;
    ensure(live(stub, "green") == greens, || {
        "a green context is left".into()
    })
}

/// The other library's handle, destroying its green context when dropped.
struct TheirHandle {
    green: CUgreenCtx,
    dropped: Arc<AtomicBool>,
}

// SAFETY: a green context may be used and destroyed from any thread.
unsafe impl Send for TheirHandle {}
// SAFETY: as above; `&TheirHandle` gives no access to the context.
unsafe impl Sync for TheirHandle {}

impl Drop for TheirHandle {
    fn drop(&mut self) {
        let destroyed = destroy(None, self.green);
        self.dropped.store(destroyed.is_ok(), Ordering::SeqCst);
    }
}

/// A wrapper made with the other library's handle keeps it alive through every clone and
/// stream, and drops it (destroying the context, as that library does) with the last one.
pub(crate) fn an_owner_goes_with_the_last_handle(stub: &Stub) -> Verdict {
    let device = device();
    let greens = live(stub, "green");
    let dropped = Arc::new(AtomicBool::new(false));
    let handle = Arc::new(TheirHandle {
        green: raw_green(&device)?,
        dropped: Arc::clone(&dropped),
    });
    let green = handle.green;
    // SAFETY: `handle` keeps `green` alive; the wrapper keeps `handle`.
    let wrapped = unsafe { Context::from_raw_green_with_owner(green, &device, handle) };
    let context = wrapped.map_err(failed)?;
    ensure(context.owner().is_some() && !context.is_owned(), || {
        format!("{context:?}")
    })?;
    let stream = context
        .create_stream(StreamOptions::default())
        .map_err(failed)?;
    let clone = context.clone();
    drop(context);
    launches_double(&stream)?;
    drop(clone);
    ensure(!dropped.load(Ordering::SeqCst), || {
        "the owner went while a stream used the context".into()
    })?;
    drop(stream);
    ensure(dropped.load(Ordering::SeqCst), || {
        "the owner outlived the last handle, or its destroy failed".into()
    })?;
    ensure(live(stub, "green") == greens, || {
        "a green context is left".into()
    })
}

/// A null handle is refused before the driver; a green context of another device is refused
/// after the reads, and the wrapper destroys nothing.
pub(crate) fn bad_foreign_handles_are_refused(stub: &Stub) -> Verdict {
    let device = device();
    let before = stub.calls("cuCtxFromGreenCtx");
    // SAFETY: a null handle, which the crate refuses before any use.
    let null = unsafe { Context::from_raw_green(std::ptr::null_mut(), &device) };
    ensure(
        matches!(null, Err(cuda_safe::Error::InvalidArgument(_))),
        || format!("a null green context: {null:?}"),
    )?;
    ensure(stub.calls("cuCtxFromGreenCtx") == before, || {
        "the null handle reached the driver".into()
    })?;
    let before = stub.calls("cuStreamGetGreenCtx");
    for special in [sys::CU_STREAM_LEGACY, sys::CU_STREAM_PER_THREAD] {
        // SAFETY: a special handle, which the crate refuses before any use.
        let refused = unsafe { Stream::from_raw_green(special, &device) };
        ensure(
            matches!(refused, Err(cuda_safe::Error::InvalidArgument(_))),
            || format!("a special stream: {refused:?}"),
        )?;
    }
    ensure(stub.calls("cuStreamGetGreenCtx") == before, || {
        "a special stream reached the driver".into()
    })?;
    let primary = cuda_safe_stub::faults::fixtures::stream();
    // SAFETY: a live stream of the primary context, kept alive by `primary`.
    let refused = unsafe { Stream::from_raw_green(primary.as_raw(), &device) };
    ensure(
        matches!(refused, Err(cuda_safe::Error::InvalidArgument(_))),
        || format!("a primary context's stream: {refused:?}"),
    )?;
    let other = device_of(1);
    let greens = live(stub, "green");
    let green = raw_green(&other)?;
    // SAFETY: a live green context (of device 1), destroyed below.
    let wrong = unsafe { Context::from_raw_green(green, &device) };
    let refused = match &wrong {
        Err(cuda_safe::Error::InvalidArgument(why)) => why.contains("device 1"),
        _ => false,
    };
    ensure(refused, || {
        format!("a green context of device 1: {wrong:?}")
    })?;
    ensure(live(stub, "green") == greens + 1, || {
        "the refused wrapper destroyed the context".into()
    })?;
    destroy(None, green)
}
