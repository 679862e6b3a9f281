//! The operations of sharing with other processes: shareable pools, their export and import,
//! buffers exported and imported, IPC events (the `Channel` carrying them is the
//! `cuda-safe-ipc` crate's, and so is its fault injection). The test's one process plays both
//! sides; an IPC event's handle is taken while the stub plays another process, since the
//! driver refuses to open a process's own.

use std::cell::RefCell;

use cuda_safe::{DeviceMemoryResource, Event};

use super::RESTORE;
use crate::stub::Stub;
use cuda_safe_stub::faults::fixtures::{
    context, device, device_of, exported_buffer, foreign_event, imported_buffer, ipc_event_options,
    shareable_options, shareable_pool, shareable_pool_of, shared, stream, take,
};
use cuda_safe_stub::faults::{Op, op};

pub(crate) fn ipc_operations(ops: &mut Vec<Op>, stub: &'static Stub) {
    pool_operations(ops);
    buffer_operations(ops);
    event_operations(ops, stub);
}

fn pool_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "DeviceMemoryResource::new_pool (shareable)",
        device,
        |d| DeviceMemoryResource::new_pool(d, shareable_options()),
    ));
    ops.push(op(
        "DeviceMemoryResource::export_pool",
        shareable_pool,
        |p| p.export_pool(),
    ));
    for ordinal in [0, 1] {
        ops.push(op(
            format!("DeviceMemoryResource::import_pool (device {ordinal})"),
            move || {
                let pool = shareable_pool_of(ordinal);
                let exported = pool.export_pool().expect("exported");
                (pool, RefCell::new(Some(exported)))
            },
            |(_, exported)| DeviceMemoryResource::import_pool(take(exported)),
        ));
    }
    ops.push(
        op(
            "DeviceMemoryResource::close (an imported pool)",
            || {
                let pool = shareable_pool();
                let imported =
                    DeviceMemoryResource::import_pool(pool.export_pool().expect("exported"))
                        .expect("imported");
                (pool, RefCell::new(Some(imported)))
            },
            |(_, imported)| take(imported).close(),
        )
        .releasing(),
    );
}

fn buffer_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "Buffer::export_ipc",
        || {
            let stream = stream();
            let buffer = exported_buffer(&stream);
            (stream, buffer)
        },
        |(_, b)| b.export_ipc(),
    ));
    ops.push(op("DeviceMemoryResource::import_buffer", shared, |s| {
        s.imported.import_buffer(&s.descriptor, &s.stream)
    }));
    ops.push(op(
        "Buffer::to_vec (an imported buffer)",
        imported_buffer,
        |(b, _)| b.borrow().as_ref().expect("the import").to_vec::<f32>(),
    ));
    ops.push(
        op(
            "Buffer::close (an imported buffer)",
            imported_buffer,
            |(b, _)| take(b).close(),
        )
        .releasing(),
    );
}

fn event_operations(ops: &mut Vec<Op>, stub: &'static Stub) {
    ops.push(
        op(
            "Event::ipc_handle (another device's context current)",
            || {
                let event = device()
                    .create_event(ipc_event_options())
                    .expect("an IPC event");
                device_of(1).set_current().expect("device 1 current");
                event
            },
            |e| e.ipc_handle(),
        )
        .logs_nth("cuCtxSetCurrent(ctx)", &[2], RESTORE),
    );
    ops.push(op(
        "Event::open_ipc",
        move || (context(), foreign_event(stub)),
        |(c, (_, handle))| Event::open_ipc(c, handle),
    ));
}
