//! The operations of sharing with other processes: shareable pools, their export and import,
//! buffers exported and imported, IPC events, and the `Channel` carrying them. The test's one
//! process plays both sides; an IPC event's handle is taken while the stub plays another
//! process, since the driver refuses to open a process's own.

use std::cell::RefCell;

use cuda_safe::ipc::{Channel, IpcBufferDescriptor};
use cuda_safe::{
    Buffer, Context, DeviceMemoryResource, Event, EventOptions, IpcHandleType, PoolOptions, Stream,
};

use super::RESTORE;
use crate::case::{Op, op};
use crate::fixtures::{N, device, device_of, stream, take};
use crate::stub::Stub;

const SHAREABLE: PoolOptions = PoolOptions {
    max_size: None,
    release_threshold: None,
    ipc: Some(IpcHandleType::PosixFd),
};

const IPC_EVENT: EventOptions = EventOptions {
    timing: false,
    blocking_sync: false,
    ipc: true,
};

fn shareable_pool_of(ordinal: usize) -> DeviceMemoryResource {
    DeviceMemoryResource::new_pool(&device_of(ordinal), SHAREABLE).expect("a shareable pool")
}

fn shareable_pool() -> DeviceMemoryResource {
    shareable_pool_of(0)
}

/// A buffer of a shareable pool, the pool exported already (its descriptor closed again).
fn exported_buffer(stream: &Stream) -> Buffer {
    let pool = shareable_pool();
    drop(pool.export_pool().expect("the pool exported"));
    pool.allocate_from_host(&[1.5f32; N], stream)
        .expect("a buffer")
}

/// Both sides of a shared buffer: the exporter's buffer, the pool imported from its pool, and
/// the buffer's descriptor. Dropped in this order, after whatever imported the buffer.
struct Shared {
    stream: Stream,
    buffer: Buffer,
    imported: DeviceMemoryResource,
    descriptor: IpcBufferDescriptor,
}

fn shared() -> Shared {
    let stream = stream();
    let pool = shareable_pool();
    let buffer = pool
        .allocate_from_host(&[1.5f32; N], &stream)
        .expect("a buffer");
    let imported =
        DeviceMemoryResource::import_pool(pool.export_pool().expect("exported")).expect("imported");
    let descriptor = buffer.export_ipc().expect("the buffer exported");
    Shared {
        stream,
        buffer,
        imported,
        descriptor,
    }
}

/// A buffer imported from [`shared`]'s, which it precedes in the tuple (dropped first).
fn imported_buffer() -> (RefCell<Option<Buffer>>, Shared) {
    let shared = shared();
    let buffer = shared
        .imported
        .import_buffer(&shared.descriptor, &shared.stream)
        .expect("the buffer imported");
    (RefCell::new(Some(buffer)), shared)
}

/// An IPC event of device 0 made by "another process", and its handle.
fn foreign_event(stub: &Stub) -> (Event, [u8; 64]) {
    stub.as_other_process(|| {
        let event = device().create_event(IPC_EVENT).expect("an IPC event");
        let handle = event.ipc_handle().expect("its handle");
        (event, handle)
    })
}

fn context() -> Context {
    device().context().expect("the primary context")
}

fn channel() -> (Channel, Channel) {
    Channel::pair().expect("a socket pair")
}

pub(crate) fn ipc_operations(ops: &mut Vec<Op>, stub: &'static Stub) {
    pool_operations(ops);
    buffer_operations(ops);
    event_operations(ops, stub);
    channel_operations(ops, stub);
}

fn pool_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "DeviceMemoryResource::new_pool (shareable)",
        device,
        |d| DeviceMemoryResource::new_pool(d, SHAREABLE),
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
                let event = device().create_event(IPC_EVENT).expect("an IPC event");
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

fn channel_operations(ops: &mut Vec<Op>, stub: &'static Stub) {
    ops.push(op(
        "Channel::send_pool",
        || (channel(), shareable_pool()),
        |((a, _), p)| a.send_pool(p),
    ));
    ops.push(op(
        "Channel::recv_pool",
        || {
            let ((a, b), pool) = (channel(), shareable_pool());
            a.send_pool(&pool).expect("sent");
            (b, pool)
        },
        |(b, _)| b.recv_pool(),
    ));
    ops.push(op(
        "Channel::send_buffer",
        || {
            let stream = stream();
            let buffer = exported_buffer(&stream);
            (channel(), stream, buffer)
        },
        |((a, _), _, buffer)| a.send_buffer(buffer),
    ));
    ops.push(op(
        "Channel::recv_buffer",
        || {
            let ((a, b), shared) = (channel(), shared());
            a.send_buffer(&shared.buffer).expect("sent");
            (b, shared)
        },
        |(b, s)| b.recv_buffer(&s.imported, &s.stream),
    ));
    ops.push(op(
        "Channel::send_event",
        || {
            let event = device().create_event(IPC_EVENT).expect("an IPC event");
            (channel(), event)
        },
        |((a, _), e)| a.send_event(e),
    ));
    ops.push(op(
        "Channel::recv_event",
        move || {
            let (a, b) = channel();
            let event = stub.as_other_process(|| {
                let event = device().create_event(IPC_EVENT).expect("an IPC event");
                a.send_event(&event).expect("sent");
                event
            });
            (b, event, context())
        },
        |(b, _, c)| b.recv_event(c),
    ));
    ops.push(
        op(
            "Channel::release",
            || {
                let (import, shared) = imported_buffer();
                (channel(), import, shared)
            },
            |((_, b), import, _)| b.release(take(import)),
        )
        .releasing(),
    );
}
