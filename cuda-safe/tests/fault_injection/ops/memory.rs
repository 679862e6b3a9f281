//! The operations of memory: pools, buffers, copies, fills, pinned, managed and `cuMemAlloc`
//! memory.

use std::cell::RefCell;

use cuda_safe::{
    Buffer, DeviceMemoryResource, ManagedMemoryResource, PinnedMemoryResource, PoolOptions, Stream,
    SyncDeviceMemoryResource,
};

use cuda_safe_stub::faults::fixtures::{Cold, N, buffer, device, pool, stream, take};
use cuda_safe_stub::faults::{Op, op};

pub(crate) fn memory_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "DeviceMemoryResource::default_pool (made on first use)",
        || (Cold::new(), device()),
        |(_, d)| DeviceMemoryResource::default_pool(d),
    ));
    ops.push(op("DeviceMemoryResource::new_pool", device, |d| {
        DeviceMemoryResource::new_pool(
            d,
            PoolOptions::default()
                .max_size(1 << 20)
                .release_threshold(0),
        )
    }));
    ops.push(
        op(
            "DeviceMemoryResource::close (an owned pool)",
            || {
                RefCell::new(Some(
                    DeviceMemoryResource::new_pool(&device(), PoolOptions::default())
                        .expect("a pool"),
                ))
            },
            |p| take(p).close(),
        )
        .releasing(),
    );
    ops.push(op("DeviceMemoryResource::used_memory", pool, |p| {
        p.used_memory()
    }));
    ops.push(op("DeviceMemoryResource::reserved_memory", pool, |p| {
        p.reserved_memory()
    }));
    ops.push(op(
        "DeviceMemoryResource::set_release_threshold",
        pool,
        |p| p.set_release_threshold(1 << 20),
    ));
    ops.push(op("DeviceMemoryResource::trim_to", pool, |p| p.trim_to(0)));
    ops.push(op(
        "DeviceMemoryResource::allocate",
        || (pool(), stream()),
        |(p, s)| p.allocate(4 * N, s),
    ));
    ops.push(op(
        "DeviceMemoryResource::allocate (an owned pool)",
        || {
            let pool =
                DeviceMemoryResource::new_pool(&device(), PoolOptions::default()).expect("a pool");
            (pool, stream())
        },
        |(p, s)| p.allocate(4 * N, s),
    ));
    ops.push(op(
        "Device::allocate",
        || (device(), stream()),
        |(d, s)| d.allocate(4 * N, s),
    ));
    ops.push(op(
        "DeviceMemoryResource::allocate_zeroed",
        || (pool(), stream()),
        |(p, s)| p.allocate_zeroed::<f32>(N, s),
    ));
    ops.push(op(
        "DeviceMemoryResource::allocate_from_host",
        || (pool(), stream()),
        |(p, s)| p.allocate_from_host(&[2.5f32; N], s),
    ));
    ops.push(op(
        "Buffer::to_vec",
        || {
            let s = stream();
            (buffer(&s), s)
        },
        |(b, _)| b.to_vec::<f32>(),
    ));
    ops.push(op(
        "Buffer::copy_from_host",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), s)
        },
        |(b, _)| b.borrow_mut().copy_from_host(&[3.0f32; N]),
    ));
    ops.push(op(
        "DeviceSliceMut::copy_from_host_async, DeviceSlice::copy_to_host_async",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), s)
        },
        |(b, s)| {
            let mut buffer = b.borrow_mut();
            let mut host = vec![4.0f32; N];
            // SAFETY: `host` outlives the copies, which the stream finishes before it is read
            // or dropped (the sync below; the stub copies at once).
            unsafe {
                buffer.as_mut_slice::<f32>()?.copy_from_host_async(&host)?;
                buffer.as_slice::<f32>()?.copy_to_host_async(&mut host)?;
            }
            s.sync()
        },
    ));
    ops.push(op(
        "Buffer::copy_from (same stream)",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), buffer(&s), s)
        },
        |(dst, src, _)| dst.borrow_mut().copy_from(src),
    ));
    ops.push(op(
        "Buffer::copy_from (across streams)",
        || {
            let (a, b) = (stream(), stream());
            (RefCell::new(buffer(&a)), buffer(&b), a, b)
        },
        |(dst, src, _, _)| dst.borrow_mut().copy_from(src),
    ));
    ops.push(op(
        "Buffer::fill::<f32>",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), s)
        },
        |(b, _)| b.borrow_mut().fill(0.5f32),
    ));
    ops.push(op(
        "Buffer::fill::<f64> (two columns)",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), s)
        },
        |(b, _)| b.borrow_mut().fill(1.5f64),
    ));
    ops.push(op(
        "Buffer::fill::<[u8; 3]> (three columns)",
        || {
            let s = stream();
            let buffer = pool().allocate(3 * N, &s).expect("a buffer");
            (RefCell::new(buffer), s)
        },
        |(b, _)| b.borrow_mut().fill([1u8, 2, 3]),
    ));
    ops.push(op(
        "Buffer::set_stream",
        || {
            let (a, b) = (stream(), stream());
            (RefCell::new(buffer(&a)), a, b)
        },
        |(buffer, _, b)| buffer.borrow_mut().set_stream(b),
    ));
    ops.push(closing("Buffer::close", buffer));
    ops.push(op("ManagedMemoryResource::new", device, |d| {
        ManagedMemoryResource::new(d)
    }));
    ops.push(op(
        "PinnedMemoryResource::allocate",
        || {
            (
                PinnedMemoryResource::new(&device()).expect("pinned"),
                stream(),
            )
        },
        |(p, s)| p.allocate_from_host(&[1.0f32; N], s),
    ));
    ops.push(op(
        "PinnedMemoryResource::allocate_block",
        || PinnedMemoryResource::new(&device()).expect("pinned"),
        |p| p.allocate_block(4 * N),
    ));
    ops.push(
        op(
            "PinnedBlock::close",
            || {
                let pinned = PinnedMemoryResource::new(&device()).expect("pinned");
                RefCell::new(Some(pinned.allocate_block(4 * N).expect("a pinned block")))
            },
            |b| take(b).close(),
        )
        .releasing(),
    );
    ops.push(op(
        "ManagedMemoryResource::allocate",
        || {
            (
                ManagedMemoryResource::new(&device()).expect("managed"),
                stream(),
            )
        },
        |(m, s)| m.allocate_zeroed::<f32>(N, s),
    ));
    ops.push(op(
        "Buffer::as_host_slice (pinned)",
        || {
            let s = stream();
            let pinned = PinnedMemoryResource::new(&device()).expect("pinned");
            (
                pinned
                    .allocate_from_host(&[1.0f32; N], &s)
                    .expect("pinned memory"),
                s,
            )
        },
        |(b, _)| b.as_host_slice::<f32>().map(|values| values[0]),
    ));
    ops.push(closing("Buffer::close (pinned)", |s| {
        let pinned = PinnedMemoryResource::new(&device()).expect("pinned");
        pinned.allocate(4 * N, s).expect("pinned memory")
    }));
    ops.push(op(
        "SyncDeviceMemoryResource::allocate_from_host",
        || {
            (
                SyncDeviceMemoryResource::new(&device()).expect("cuMemAlloc memory"),
                stream(),
            )
        },
        |(m, s)| m.allocate_from_host(&[1.0f32; N], s),
    ));
    ops.push(closing("Buffer::close (cuMemAlloc)", |s| {
        let memory = SyncDeviceMemoryResource::new(&device()).expect("cuMemAlloc memory");
        memory.allocate(4 * N, s).expect("cuMemAlloc memory")
    }));
}

/// `Buffer::close` (a release) of the buffer `allocate` makes on a fresh stream.
fn closing(name: &'static str, allocate: fn(&Stream) -> Buffer) -> Op {
    op(
        name,
        move || {
            let s = stream();
            (RefCell::new(Some(allocate(&s))), s)
        },
        |(b, _)| take(b).close(),
    )
    .releasing()
}
