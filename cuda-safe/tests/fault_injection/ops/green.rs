//! The operations of green contexts: resources, splits, green contexts and their streams.

use std::cell::RefCell;

use cuda_safe::{EventOptions, GreenContextOptions, SplitRequest, StreamOptions};

use cuda_safe_stub::faults::fixtures::{device, green, take};
use cuda_safe_stub::faults::{Op, op};

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
                    GreenContextOptions {
                        workqueue: Some(*workqueue),
                    },
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
}
