//! The operations between the stub's two devices: peer attributes, peer access on devices and
//! contexts (both idempotent), pool access for the other device, and peer copies.

use std::cell::RefCell;

use cuda_safe::{Buffer, DeviceMemoryResource, PoolOptions};

use super::RESTORE;
use cuda_safe_stub::faults::fixtures::{
    Cold, N, buffer, device, device_of, pool, stream, stream_of,
};
use cuda_safe_stub::faults::{Op, op};

/// Why a tolerated answer's error texts may fail: the crate builds the error (asking the driver
/// for its name and message) before it sees the code it takes as success.
const TOLERATED: &str = "the driver's ALREADY_ENABLED / NOT_ENABLED is success; the error built \
                         for it, texts included, is dropped (peer::tolerate)";

pub(crate) fn peer_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "Device::peer_attributes",
        || (device(), device_of(1)),
        |(d, peer)| d.peer_attributes(peer),
    ));
    access_operations(ops);
    pool_access_operations(ops);
    copy_operations(ops);
}

/// The pair of devices with access from device 0 to device 1 enabled (or not).
fn pair(enabled: bool) -> (cuda_safe::Device, cuda_safe::Device) {
    let (d, peer) = (device(), device_of(1));
    if enabled {
        d.enable_peer_access(&peer).expect("access enabled");
    } else {
        d.disable_peer_access(&peer).expect("access disabled");
    }
    (d, peer)
}

fn access_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "Device::enable_peer_access",
        || pair(false),
        |(d, peer)| d.enable_peer_access(peer),
    ));
    ops.push(
        op(
            "Device::enable_peer_access (already enabled)",
            || pair(true),
            |(d, peer)| d.enable_peer_access(peer),
        )
        .absorbs("cuGetErrorName", TOLERATED)
        .absorbs("cuGetErrorString", TOLERATED),
    );
    ops.push(op(
        "Device::enable_peer_access (retains both primary contexts)",
        || (Cold::of(0), Cold::of(1), device(), device_of(1)),
        |(_, _, d, peer)| d.enable_peer_access(peer),
    ));
    ops.push(op(
        "Device::disable_peer_access",
        || pair(true),
        |(d, peer)| d.disable_peer_access(peer),
    ));
    ops.push(
        op(
            "Device::disable_peer_access (not enabled)",
            || pair(false),
            |(d, peer)| d.disable_peer_access(peer),
        )
        .absorbs("cuGetErrorName", TOLERATED)
        .absorbs("cuGetErrorString", TOLERATED),
    );
    let contexts = |enabled| {
        let (d, peer) = pair(enabled);
        (
            peer.context().expect("device 1's context"),
            d.context().expect("device 0's context"),
        )
    };
    ops.push(op(
        "Context::enable_peer_access",
        move || contexts(false),
        |(peer, c)| c.enable_peer_access(peer),
    ));
    ops.push(op(
        "Context::disable_peer_access",
        move || contexts(true),
        |(peer, c)| c.disable_peer_access(peer),
    ));
    ops.push(
        op(
            "Context::enable_peer_access (another context current)",
            move || {
                let (peer, c) = contexts(false);
                peer.bind().expect("bound");
                (peer, c)
            },
            |(peer, c)| c.enable_peer_access(peer),
        )
        .logs_nth("cuCtxSetCurrent(ctx)", &[2], RESTORE),
    );
}

fn pool_access_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "DeviceMemoryResource::grant_access",
        || (pool(), device_of(1)),
        |(p, peer)| p.grant_access(peer),
    ));
    ops.push(op(
        "DeviceMemoryResource::grant_access (an owned pool of device 1)",
        || {
            let pool = DeviceMemoryResource::new_pool(&device_of(1), PoolOptions::default())
                .expect("a pool");
            (pool, device())
        },
        |(p, peer)| p.grant_access(peer),
    ));
    ops.push(op(
        "DeviceMemoryResource::revoke_access",
        || {
            let (pool, peer) = (pool(), device_of(1));
            pool.grant_access(&peer).expect("granted");
            (pool, peer)
        },
        |(p, peer)| p.revoke_access(peer),
    ));
    ops.push(op(
        "DeviceMemoryResource::is_accessible_from",
        || (pool(), device_of(1)),
        |(p, peer)| p.is_accessible_from(peer),
    ));
}

/// A buffer on each device, each on its own device's stream, or (`one_stream`) device 1's
/// moved to device 0's stream.
fn two_buffers(one_stream: bool) -> (RefCell<Buffer>, Buffer) {
    let (near, far) = (stream(), stream_of(1));
    let mut remote = buffer(&far);
    if one_stream {
        remote.set_stream(&near).expect("moved");
    }
    (RefCell::new(buffer(&near)), remote)
}

fn copy_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "Buffer::copy_from (between devices, one stream)",
        || two_buffers(true),
        |(dst, src)| dst.borrow_mut().copy_from(src),
    ));
    ops.push(op(
        "Buffer::copy_from (between devices, across streams)",
        || two_buffers(false),
        |(dst, src)| dst.borrow_mut().copy_from(src),
    ));
    ops.push(op(
        "DeviceSliceMut::copy_from (between devices, parts)",
        || two_buffers(false),
        |(dst, src)| {
            let mut dst = dst.borrow_mut();
            let mut whole = dst.as_mut_slice::<f32>()?;
            let mut head = whole.slice_mut(..N / 2)?;
            head.copy_from(&src.as_slice::<f32>()?.slice(N / 2..)?)
        },
    ));
    ops.push(op(
        "Buffer::copy_from (device 0 into device 1, across streams)",
        || {
            let (dst, src) = two_buffers(false);
            (RefCell::new(src), dst.into_inner())
        },
        |(dst, src)| dst.borrow_mut().copy_from(src),
    ));
}
