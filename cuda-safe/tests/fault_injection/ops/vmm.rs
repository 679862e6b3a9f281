//! The operations of virtual memory: resources, mappings, buffers, growable buffers (growing
//! in place and by moving), access, and chunks shared as file descriptors.

use std::cell::RefCell;
use std::os::fd::{AsFd, OwnedFd};

use cuda_safe::{
    GrowableBuffer, IpcHandleType, Stream, VirtualMapping, VirtualMemoryResource,
    VirtualMemoryResourceOptions, VmmAccess, VmmShareDescriptor,
};

use cuda_safe_stub::faults::fixtures::{N, buffer, device, device_of, stream, take};
use cuda_safe_stub::faults::{Op, op};

fn resource(options: VirtualMemoryResourceOptions) -> VirtualMemoryResource {
    VirtualMemoryResource::new(&device(), options).expect("a virtual memory resource")
}

fn plain() -> VirtualMemoryResource {
    resource(VirtualMemoryResourceOptions::default())
}

fn shareable() -> VirtualMemoryResource {
    resource(VirtualMemoryResourceOptions::default().handle_type(IpcHandleType::PosixFd))
}

fn mapping(resource: &VirtualMemoryResource) -> VirtualMapping {
    resource.map(4 * N).expect("a mapping")
}

/// A growable buffer of one granule in a reservation of `granules`, and its stream.
fn growable(
    resource: &VirtualMemoryResource,
    granules: usize,
) -> (RefCell<GrowableBuffer>, Stream) {
    let granularity = resource.granularity();
    let stream = stream();
    let buffer = resource
        .growable(granularity, granules * granularity, &stream)
        .expect("a growable buffer");
    (RefCell::new(buffer), stream)
}

/// A growable buffer of two chunks (grown once in place) of a shareable resource, and its
/// stream.
fn two_chunks() -> (RefCell<GrowableBuffer>, Stream) {
    let resource = shareable();
    let (buffer, stream) = growable(&resource, 4);
    buffer
        .borrow_mut()
        .grow(2 * resource.granularity())
        .expect("grown");
    (buffer, stream)
}

/// Why a growable buffer's failed release leaks its range with every chunk: the release waits
/// for the buffer's stream first, and unmaps nothing it cannot prove unused.
const UNPROVEN: &str = "a range is torn down only after its stream drained (vmm::region): a \
                        failed wait leaves the range and its chunks mapped";

pub(crate) fn vmm_operations(ops: &mut Vec<Op>) {
    resource_operations(ops);
    mapping_operations(ops);
    growable_operations(ops);
    sharing_operations(ops);
}

fn resource_operations(ops: &mut Vec<Op>) {
    ops.push(op("VirtualMemoryResource::new", device, |d| {
        VirtualMemoryResource::new(d, VirtualMemoryResourceOptions::default())
    }));
    ops.push(op(
        "VirtualMemoryResource::new (shareable, RDMA, a peer)",
        || {
            let options = VirtualMemoryResourceOptions::default()
                .handle_type(IpcHandleType::PosixFd)
                .gpu_direct_rdma(true)
                .peers(vec![device_of(1)]);
            (device(), options)
        },
        |(d, options)| VirtualMemoryResource::new(d, options.clone()),
    ));
}

fn mapping_operations(ops: &mut Vec<Op>) {
    ops.push(op("VirtualMemoryResource::map", plain, |r| r.map(4 * N)));
    ops.push(op(
        "VirtualMemoryResource::map (a peer's access)",
        || {
            resource(
                VirtualMemoryResourceOptions::default()
                    .peers(vec![device_of(1)])
                    .peer_access(VmmAccess::Read),
            )
        },
        |r| r.map(4 * N),
    ));
    ops.push(
        op(
            "VirtualMapping::close",
            || RefCell::new(Some(mapping(&plain()))),
            |m| take(m).close(),
        )
        .releasing(),
    );
    ops.push(op(
        "VirtualMapping::set_access",
        || (mapping(&plain()), device_of(1)),
        |(m, peer)| m.set_access(&[(*peer, VmmAccess::Read)]),
    ));
    ops.push(op(
        "VirtualMemoryResource::allocate",
        || (plain(), stream()),
        |(r, s)| r.allocate(4 * N, s),
    ));
    ops.push(
        op(
            "Buffer::close (virtual memory)",
            || {
                let s = stream();
                let buffer = plain().allocate(4 * N, &s).expect("a buffer");
                (RefCell::new(Some(buffer)), s)
            },
            |(b, _)| take(b).close(),
        )
        .releasing(),
    );
    ops.push(op(
        "Buffer::to_vec (virtual memory, no context current)",
        || {
            let s = stream();
            (plain().allocate(4 * N, &s).expect("a buffer"), s)
        },
        |(b, _)| b.to_vec::<f32>(),
    ));
    ops.push(op(
        "Buffer::copy_from (pool memory into virtual memory)",
        || {
            let s = stream();
            let dst = plain().allocate(4 * N, &s).expect("a buffer");
            (RefCell::new(dst), buffer(&s), s)
        },
        |(dst, src, _)| dst.borrow_mut().copy_from(src),
    ));
}

fn growable_operations(ops: &mut Vec<Op>) {
    ops.push(
        op(
            "VirtualMemoryResource::growable",
            || (plain(), stream()),
            |(r, s)| r.growable(4 * N, 8 * r.granularity(), s),
        )
        .leaking(2, UNPROVEN),
    );
    ops.push(op(
        "GrowableBuffer::grow (in place)",
        || growable(&plain(), 4),
        |(b, _)| {
            let mut buffer = b.borrow_mut();
            let size = 2 * buffer.resource().granularity();
            buffer.grow(size)
        },
    ));
    ops.push(op(
        "GrowableBuffer::grow (moves to a larger reservation)",
        || {
            let (buffer, stream) = growable(&plain(), 2);
            let size = 2 * buffer.borrow().resource().granularity();
            buffer
                .borrow_mut()
                .grow(size)
                .expect("grown to its reservation");
            (buffer, stream)
        },
        |(b, _)| {
            let mut buffer = b.borrow_mut();
            let size = 3 * buffer.resource().granularity();
            buffer.grow(size)
        },
    ));
    ops.push(op(
        "GrowableBuffer::set_stream",
        || (growable(&plain(), 2), stream()),
        |((b, _), other)| b.borrow_mut().set_stream(other),
    ));
    ops.push(op(
        "GrowableBuffer::set_access",
        || (growable(&plain(), 2), device_of(1)),
        |((b, _), peer)| b.borrow_mut().set_access(&[(*peer, VmmAccess::ReadWrite)]),
    ));
    ops.push(op(
        "DeviceSliceMut::fill (a growable buffer)",
        || growable(&plain(), 2),
        |(b, _)| b.borrow_mut().as_mut_slice::<u32>()?.fill(7),
    ));
    ops.push(
        op(
            "GrowableBuffer::close (two chunks)",
            || {
                let (buffer, stream) = two_chunks();
                (RefCell::new(Some(buffer.into_inner())), stream)
            },
            |(b, _)| take(b).close(),
        )
        .releasing()
        .leaking(3, UNPROVEN),
    );
}

/// Chunks exported from a growable buffer of two, and the buffer (dropped after them).
type Exported = (
    Vec<(OwnedFd, VmmShareDescriptor)>,
    (RefCell<GrowableBuffer>, Stream),
);

fn exported() -> Exported {
    let buffer = two_chunks();
    let chunks = buffer.0.borrow().export_fds().expect("exported");
    (chunks, buffer)
}

fn sharing_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "VirtualMapping::export_fds",
        || mapping(&shareable()),
        |m| m.export_fds(),
    ));
    ops.push(op(
        "GrowableBuffer::export_fds (two chunks)",
        two_chunks,
        |(b, _)| b.borrow().export_fds(),
    ));
    ops.push(op(
        "VirtualMemoryResource::import_fds (two chunks)",
        || (shareable(), exported()),
        |(r, (chunks, _))| {
            let borrowed: Vec<_> = chunks
                .iter()
                .map(|(fd, descriptor)| (fd.as_fd(), *descriptor))
                .collect();
            r.import_fds(&borrowed)
        },
    ));
}
