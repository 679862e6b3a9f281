//! The operations of green contexts: resources, splits, green contexts and their streams, ids,
//! a stream's SMs, and green contexts of another library's wrapped without ownership.

use std::cell::RefCell;

use cuda_safe::sys::{CUgreenCtx, CUstream};
use cuda_safe::{
    Context, EventOptions, GreenContextOptions, GroupLayout, SplitRequest, Stream, StreamOptions,
};

use cuda_safe_stub::faults::fixtures::{device, green, take};
use cuda_safe_stub::faults::{Op, op};

use super::RESTORE;

/// A green context and a stream of it made by raw driver calls, as another library makes them,
/// destroyed by that library (this value) when dropped.
struct RawGreen(CUgreenCtx, CUstream);

impl RawGreen {
    fn new() -> Self {
        let driver = cuda_safe::sys::driver().expect("the stub");
        let split = device()
            .resources()
            .sm()
            .and_then(|sm| sm.split(&SplitRequest::equal(2, 64)))
            .expect("a split");
        let mut resource = *split.groups[0].as_raw();
        let (mut desc, mut green, mut stream) = (
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        let flags = cuda_safe::sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0;
        let non_blocking = cuda_safe::sys::CUstream_flags::CU_STREAM_NON_BLOCKING.0;
        // SAFETY: one initialised resource, a valid device and out-pointers; the stream is made
        // on the green context just created.
        let made = unsafe {
            driver
                .cuDevResourceGenerateDesc(&mut desc, &mut resource, 1)
                .and_then(|_| driver.cuGreenCtxCreate(&mut green, desc, device().as_raw(), flags))
                .and_then(|_| driver.cuGreenCtxStreamCreate(&mut stream, green, non_blocking, 0))
        };
        assert_eq!(made.ok(), Some(cuda_safe::sys::CUresult::CUDA_SUCCESS));
        Self(green, stream)
    }
}

impl Drop for RawGreen {
    fn drop(&mut self) {
        let driver = cuda_safe::sys::driver().expect("the stub");
        // SAFETY: unbinding first (a failed restore may have left the context current), then
        // the stream and the green context this value made, destroyed once, here.
        let _ = unsafe {
            driver
                .cuCtxSetCurrent(std::ptr::null_mut())
                .and_then(|_| driver.cuStreamDestroy_v2(self.1))
                .and_then(|_| driver.cuGreenCtxDestroy(self.0))
        };
    }
}

pub(crate) fn green_operations(ops: &mut Vec<Op>) {
    const ARCH_NAME: &str = "the architecture only names the GPU in an error message; \
                             unreadable, it is `this GPU` (green::resources::arch_name)";
    ops.push(op("DeviceResources::sm", device, |d| d.resources().sm()));
    ops.push(
        op(
            "SmResource::plan",
            || device().resources().sm().expect("the SMs"),
            |sm| sm.plan(&SplitRequest::equal(2, 64)),
        )
        .absorbs_nth("cuDeviceGetAttribute", &[1, 2], ARCH_NAME),
    );
    ops.push(
        op(
            "SmResource::split (equal groups)",
            || device().resources().sm().expect("the SMs"),
            |sm| sm.split(&SplitRequest::equal(4, 32)),
        )
        .absorbs_nth("cuDeviceGetAttribute", &[1, 2], ARCH_NAME),
    );
    if cuda_safe::sys::ABI_MAJOR >= 13 {
        ops.push(
            op(
                "SmResource::split (unequal groups)",
                || device().resources().sm().expect("the SMs"),
                |sm| sm.split(&SplitRequest::counts([64, 32, 16])),
            )
            .absorbs_nth("cuDeviceGetAttribute", &[1, 2], ARCH_NAME),
        );
        ops.push(op("DeviceResources::workqueue_config", device, |d| {
            d.resources().workqueue_config()
        }));
        ops.push(op(
            "Device::create_green_context (with a workqueue)",
            || {
                let sm = device().resources().sm().expect("the SMs");
                let split = sm.split(&SplitRequest::equal(2, 64)).expect("a split");
                let workqueue = device()
                    .resources()
                    .workqueue_config()
                    .expect("a workqueue");
                (device(), split, workqueue)
            },
            |(d, split, workqueue)| {
                d.create_green_context(
                    &split.groups[1],
                    GreenContextOptions::default().workqueue(*workqueue),
                )
            },
        ));
    }
    ops.push(op(
        "Device::create_green_context",
        || {
            let split = device()
                .resources()
                .sm()
                .and_then(|sm| sm.split(&SplitRequest::equal(2, 64)))
                .expect("a split");
            (device(), split)
        },
        |(d, split)| d.create_green_context(&split.groups[0], GreenContextOptions::default()),
    ));
    ops.push(
        op(
            "Context::close (green)",
            || RefCell::new(Some(green())),
            |c| take(c).close(),
        )
        .releasing(),
    );
    ops.push(
        op(
            "Context::close (green, current)",
            || {
                let context = green();
                context.bind().expect("bound");
                RefCell::new(Some(context))
            },
            |c| {
                let context = take(c);
                context.bind()?;
                context.close()
            },
        )
        .releasing(),
    );
    ops.push(op("Context::resources (green)", green, |c| {
        c.resources().sm()
    }));
    ops.push(op("Context::create_stream (green)", green, |c| {
        c.create_stream(StreamOptions::default())
    }));
    ops.push(op("Context::create_event (green)", green, |c| {
        c.create_event(EventOptions::default())
    }));
    ops.push(op("Context::sync (green)", green, |c| c.sync()));
    ops.push(op("Context::id", green, Context::id));
    ops.push(
        op(
            "Context::from_raw_green",
            || (RawGreen::new(), device()),
            |(raw, device)| {
                // SAFETY: the fixture keeps the green context alive past the wrapper.
                unsafe { Context::from_raw_green(raw.0, device) }
            },
        )
        .logs("cuCtxSetCurrent(NULL)", RESTORE),
    );
    ops.push(
        op(
            "Stream::from_raw_green",
            || (RawGreen::new(), device()),
            |(raw, device)| {
                // SAFETY: the fixture keeps the stream and its green context alive past the
                // wrapper.
                unsafe { Stream::from_raw_green(raw.1, device) }
            },
        )
        .logs("cuCtxSetCurrent(NULL)", RESTORE),
    );
    if cuda_safe::sys::ABI_MAJOR >= 13 {
        ops.push(op("Context::green_id", green, Context::green_id));
        ops.push(op(
            "Stream::sm_resource (green)",
            || {
                green()
                    .create_stream(StreamOptions::default())
                    .expect("a stream")
            },
            |s| s.sm_resource(),
        ));
        let layout = GroupLayout::default()
            .coscheduled_sm_count(16)
            .backfill(true);
        ops.push(
            op(
                "SmResource::split (laid out)",
                || device().resources().sm().expect("the SMs"),
                move |sm| sm.split(&SplitRequest::counts([66, 50]).layout(layout)),
            )
            .absorbs_nth("cuDeviceGetAttribute", &[1, 2], ARCH_NAME),
        );
    }
}
