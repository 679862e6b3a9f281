//! The operations of devices, contexts, streams and events.

use std::cell::RefCell;

use cuda_safe::{Device, Event, EventOptions, StreamOptions};

use cuda_safe_stub::faults::fixtures::{Cold, device, stream, take, timed};
use cuda_safe_stub::faults::{Op, op};

pub(crate) fn device_operations(ops: &mut Vec<Op>) {
    ops.push(op("Device::count", || (), |_| Device::count()));
    ops.push(op("Device::new", || (), |_| Device::new(0)));
    ops.push(op("Device::all", || (), |_| Device::all()));
    ops.push(op("Device::arch", device, |d| d.arch()));
    ops.push(op("Device::name", device, |d| d.name()));
    ops.push(op("Device::uuid", device, |d| d.uuid()));
    ops.push(op("Device::pci_bus_id", device, |d| d.pci_bus_id()));
    ops.push(op("Device::total_memory", device, |d| d.total_memory()));
    ops.push(op("Device::compute_capability", device, |d| {
        d.compute_capability()
    }));
    ops.push(op("Device::properties", device, |d| d.properties()));
    ops.push(op("Device::launch_limits", device, |d| d.launch_limits()));
    ops.push(op("Device::mem_info", device, |d| d.mem_info()));
    ops.push(op("Device::can_access_peer", device, |d| {
        d.can_access_peer(d)
    }));
    ops.push(op(
        "Device::current (a context current)",
        || {
            let device = device();
            device.set_current().expect("bound");
            device
        },
        |_| Device::current(),
    ));
    ops.push(op("Device::from_uuid", device, |d| {
        Device::from_uuid(d.uuid()?)
    }));
    ops.push(op("Device::set_current", device, |d| d.set_current()));
    ops.push(op(
        "Device::set_current (retains the primary context)",
        || (Cold::new(), device()),
        |(_, d)| d.set_current(),
    ));
    ops.push(op(
        "Device::context (retains the primary context)",
        || (Cold::new(), device()),
        |(_, d)| d.context(),
    ));
    ops.push(op("Device::sync", device, |d| d.sync()));
    ops.push(
        op(
            "Device::release_primary_context",
            // The operation releases the context itself; the guard only makes it again.
            || (Cold::on_drop(), device()),
            |(_, d)| Ok(d.release_primary_context()),
        )
        .logs_nth(
            "cuCtxGetCurrent",
            &[1],
            "the release first reads the thread's current context, to unbind the primary context \
         there; when that fails the context stays retained, and the drop logs it",
        ),
    );
    ops.push(op(
        "Context::stream_priority_range",
        || device().context().expect("the primary context"),
        |c| c.stream_priority_range(),
    ));
    ops.push(op(
        "Context::bind",
        || device().context().expect("the primary context"),
        |c| c.bind(),
    ));
    ops.push(op(
        "Context::scoped",
        || device().context().expect("the primary context"),
        |c| c.scoped().map(drop),
    ));
    ops.push(op(
        "cuda_driver_version",
        || (),
        |_| cuda_safe::cuda_driver_version(),
    ));
}

pub(crate) fn stream_and_event_operations(ops: &mut Vec<Op>) {
    ops.push(op("Device::create_stream", device, |d| {
        d.create_stream(StreamOptions::default())
    }));
    ops.push(op("Device::create_stream (priority)", device, |d| {
        d.create_stream(StreamOptions::default().priority(-2))
    }));
    ops.push(op("Device::create_stream (blocking)", device, |d| {
        d.create_stream(StreamOptions::default().non_blocking(false))
    }));
    ops.push(op("Stream::sync", stream, |s| s.sync()));
    ops.push(op("Stream::query", stream, |s| s.query()));
    ops.push(op("Stream::priority", stream, |s| s.priority()));
    ops.push(op("Stream::is_non_blocking", stream, |s| {
        s.is_non_blocking()
    }));
    ops.push(op(
        "Stream::wait",
        || {
            let stream = stream();
            let event = device()
                .create_event(EventOptions::default())
                .expect("an event");
            event.record(&stream).expect("recorded");
            (stream, event)
        },
        |(s, e)| s.wait(e),
    ));
    ops.push(op(
        "Stream::wait_stream (makes the marker event)",
        || (stream(), stream()),
        |(a, b)| a.wait_stream(b),
    ));
    ops.push(op(
        "Stream::wait_stream (again)",
        || {
            let (a, b) = (stream(), stream());
            a.wait_stream(&b).expect("a first wait");
            (a, b)
        },
        |(a, b)| a.wait_stream(b),
    ));
    ops.push(
        op(
            "Stream::close",
            || RefCell::new(Some(stream())),
            |s| take(s).close(),
        )
        .releasing(),
    );
    ops.push(op("Device::create_event", device, |d| {
        d.create_event(timed())
    }));
    ops.push(op("Device::create_event (IPC)", device, |d| {
        d.create_event(EventOptions::default().ipc(true))
    }));
    ops.push(op(
        "Event::record",
        || (stream(), device().create_event(timed()).expect("an event")),
        |(s, e)| e.record(s),
    ));
    ops.push(op(
        "Event::sync",
        || device().create_event(timed()).expect("an event"),
        |e| e.sync(),
    ));
    ops.push(op(
        "Event::is_done",
        || device().create_event(timed()).expect("an event"),
        |e| e.is_done(),
    ));
    ops.push(op(
        "Event::elapsed",
        || {
            let stream = stream();
            let (start, end) = (
                device().create_event(timed()).expect("an event"),
                device().create_event(timed()).expect("an event"),
            );
            start.record(&stream).expect("recorded");
            end.record(&stream).expect("recorded");
            (stream, start, end)
        },
        |(_, start, end)| Event::elapsed(start, end),
    ));
    ops.push(op(
        "Event::ipc_handle",
        || {
            device()
                .create_event(EventOptions::default().ipc(true))
                .expect("an IPC event")
        },
        |e| e.ipc_handle(),
    ));
    ops.push(
        op(
            "Event::close",
            || RefCell::new(Some(device().create_event(timed()).expect("an event"))),
            |e| take(e).close(),
        )
        .releasing(),
    );
}
