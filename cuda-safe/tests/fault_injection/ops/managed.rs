//! The operations of managed memory's hints: prefetches, advice, range attributes.

use std::cell::RefCell;

use cuda_safe::managed::{discard_batch, discard_prefetch_batch, prefetch_batch};
use cuda_safe::{Advice, Buffer, ManagedMemoryResource, MemoryLocation, Stream};

use cuda_safe_stub::faults::fixtures::{N, device, stream};
use cuda_safe_stub::faults::{Op, op};

/// A managed buffer of N floats on a stream of its own.
fn managed() -> (Buffer, Stream) {
    let stream = stream();
    let buffer = ManagedMemoryResource::new(&device())
        .expect("managed memory")
        .allocate_zeroed::<f32>(N, &stream)
        .expect("a managed buffer");
    (buffer, stream)
}

pub(crate) fn managed_operations(ops: &mut Vec<Op>) {
    let places = [
        ("device 0", MemoryLocation::Device(0)),
        ("device 1", MemoryLocation::Device(1)),
        ("the host", MemoryLocation::Host),
    ];
    for (name, to) in places {
        ops.push(op(
            format!("Buffer::prefetch (to {name})"),
            managed,
            move |(b, _)| b.prefetch(to),
        ));
    }
    let advice = [
        ("read mostly", Advice::SetReadMostly),
        ("unset read mostly", Advice::UnsetReadMostly),
        (
            "preferred location",
            Advice::SetPreferredLocation(MemoryLocation::Device(0)),
        ),
        ("unset preferred location", Advice::UnsetPreferredLocation),
        (
            "accessed by device 1",
            Advice::SetAccessedBy(MemoryLocation::Device(1)),
        ),
        (
            "unset accessed by the host",
            Advice::UnsetAccessedBy(MemoryLocation::Host),
        ),
    ];
    for (name, advice) in advice {
        ops.push(op(
            format!("Buffer::advise ({name})"),
            managed,
            move |(b, _)| b.advise(advice),
        ));
    }
    ops.push(op(
        "prefetch_batch (two buffers of two streams, one location each)",
        || (managed(), managed(), stream()),
        |((a, _), (b, _), on)| {
            let to = [MemoryLocation::Device(0), MemoryLocation::Host];
            prefetch_batch(on, &[a, b], &to)
        },
    ));
    ops.push(op(
        "Buffer::last_prefetch_location",
        || {
            let (buffer, stream) = managed();
            buffer
                .prefetch(MemoryLocation::Device(1))
                .expect("prefetched");
            (buffer, stream)
        },
        |(b, _)| b.last_prefetch_location(),
    ));
    if cuda_safe::sys::ABI_MAJOR >= 13 {
        // A discard writes: the fixtures sit in a RefCell for the `&mut` borrows.
        let two = || RefCell::new((managed(), managed(), stream()));
        ops.push(op(
            "discard_batch (two buffers of two streams)",
            two,
            |cell| {
                let ((a, _), (b, _), on) = &mut *cell.borrow_mut();
                discard_batch(on, &[a, b])
            },
        ));
        ops.push(op(
            "discard_prefetch_batch (one location for two buffers)",
            two,
            |cell| {
                let ((a, _), (b, _), on) = &mut *cell.borrow_mut();
                discard_prefetch_batch(on, &[a, b], &[MemoryLocation::Device(0)])
            },
        ));
        ops.push(op(
            "Buffer::discard",
            || RefCell::new(managed()),
            |cell| cell.borrow_mut().0.discard(),
        ));
    }
    ops.push(op(
        "Buffer::range_attributes",
        || {
            let (buffer, stream) = managed();
            buffer.advise(Advice::SetReadMostly).expect("advised");
            buffer
                .advise(Advice::SetAccessedBy(MemoryLocation::Device(1)))
                .expect("advised");
            buffer
                .prefetch(MemoryLocation::Device(0))
                .expect("prefetched");
            (buffer, stream)
        },
        |(b, _)| b.range_attributes(),
    ));
}
