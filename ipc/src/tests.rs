//! The channel's tests: messages, descriptors, pools, chunks, peers that go away.

use crate::IpcError;
use crate::error::ipc_error;
use std::io::{Read, Write};

use super::io::ControlBuffer;
use super::wire::Kind;
use super::*;

#[test]
fn one_descriptor_fits_the_control_buffer() {
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) } as usize;
    assert!(space <= size_of::<ControlBuffer>());
}

#[test]
fn bytes_and_descriptors_cross_and_kinds_are_checked() {
    let (a, b) = Channel::pair().unwrap();
    a.send_bytes(b"hello").unwrap();
    assert_eq!(b.recv_bytes().unwrap(), b"hello");
    // A descriptor beside a message arrives as a new descriptor of the same file.
    let file = memfd_with(b"shared through SCM_RIGHTS");
    let mut pool = [0u8; POOL_BYTES_FD];
    pool[16] = POOL_BY_FD;
    a.send(Kind::Pool, &pool, Some(file.as_fd())).unwrap();
    let (payload, fd) = b.recv(Kind::Pool).unwrap();
    assert_eq!(payload, pool);
    let mut text = String::new();
    let mut received = std::fs::File::from(fd.expect("a descriptor"));
    use std::io::Seek;
    received.rewind().unwrap();
    received.read_to_string(&mut text).unwrap();
    assert_eq!(text, "shared through SCM_RIGHTS");
    // Another kind than the one asked for is refused, naming both; its payload is left
    // unread, so the channel is out of step for good.
    a.send_bytes(b"x").unwrap();
    let error = b.recv(Kind::Buffer).unwrap_err();
    assert!(
        error.to_string().contains("expected a buffer, got bytes"),
        "{error}"
    );
    assert!(matches!(
        b.recv_bytes().map_err(|error| ipc_error(&error).cloned()),
        Err(Some(IpcError::Poisoned {
            what: "waiting for a buffer"
        }))
    ));
    // A message too long for the channel is refused before it is sent.
    let long = vec![0u8; MAX_MESSAGE_BYTES + 1];
    assert!(matches!(
        a.send_bytes(&long),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn a_pool_travels_with_its_device_and_descriptor() {
    let (a, b) = Channel::pair().unwrap();
    let uuid = Uuid(std::array::from_fn(|i| i as u8 + 1));
    let pool = ExportedPool::new(PoolHandle::PosixFd(memfd_with(b"pool")), uuid);
    a.send_exported_pool(&pool).unwrap();
    let got = b.recv_exported_pool().unwrap();
    assert_eq!(got.device_uuid(), uuid);
    assert!(matches!(got.handle(), PoolHandle::PosixFd(_)));
    let fabric = ExportedPool::new(PoolHandle::Fabric([9; 64]), uuid);
    a.send_exported_pool(&fabric).unwrap();
    let got = b.recv_exported_pool().unwrap();
    assert!(matches!(got.handle(), PoolHandle::Fabric(data) if *data == [9; 64]));
    // A pool message that says "descriptor" but carries none is malformed.
    let mut payload = uuid.0.to_vec();
    payload.push(POOL_BY_FD);
    a.send(Kind::Pool, &payload, None).unwrap();
    let error = b.recv_exported_pool().unwrap_err();
    assert!(
        error.to_string().contains("memory pool arrived malformed"),
        "{error}"
    );
    // So is one of a length the protocol does not give a pool (refused before its payload
    // is read: the channel is out of step).
    a.send(Kind::Pool, &[POOL_BY_FD], None).unwrap();
    assert!(matches!(
        b.recv_exported_pool()
            .map_err(|error| ipc_error(&error).cloned()),
        Err(Some(IpcError::Protocol { .. }))
    ));
    assert!(b.is_poisoned());
}

#[test]
fn virtual_memory_chunks_cross_with_their_descriptors() {
    let (a, b) = Channel::pair().unwrap();
    let mib2 = 2 << 20;
    let chunks = vec![
        (
            memfd_with(b"first"),
            VmmShareDescriptor::test_chunk(0, 0, mib2, 2 * mib2),
        ),
        (
            memfd_with(b"second"),
            VmmShareDescriptor::test_chunk(1, mib2, mib2, 2 * mib2),
        ),
    ];
    a.send_vmm_chunks(&chunks).unwrap();
    let got = b.recv_vmm_chunks().unwrap();
    assert_eq!(got.len(), 2);
    for ((fd, descriptor), (_, sent)) in got.into_iter().zip(&chunks) {
        assert_eq!(descriptor, *sent);
        let mut file = std::fs::File::from(fd);
        let mut text = String::new();
        use std::io::Seek;
        file.rewind().unwrap();
        file.read_to_string(&mut text).unwrap();
        assert!(text == "first" || text == "second");
    }
    // A chunk without its file descriptor is malformed (refused once the sequence is over,
    // so the channel stays in step); so is a count past the limit, after which the channel
    // cannot know where the next message starts.
    a.send(Kind::VmmChunks, &1u32.to_le_bytes(), None).unwrap();
    a.send(Kind::VmmChunk, &chunks[0].1.to_bytes(), None)
        .unwrap();
    let error = b.recv_vmm_chunks().unwrap_err();
    assert!(
        error
            .to_string()
            .contains("virtual-memory chunk arrived malformed"),
        "{error}"
    );
    assert!(!b.is_poisoned());
    a.send(
        Kind::VmmChunks,
        &(MAX_VMM_CHUNKS as u32 + 1).to_le_bytes(),
        None,
    )
    .unwrap();
    assert!(matches!(
        b.recv_vmm_chunks()
            .map_err(|error| ipc_error(&error).cloned()),
        Err(Some(IpcError::Protocol { .. }))
    ));
    assert!(b.is_poisoned());
}

#[test]
fn a_closed_channel_is_the_peer_gone() {
    let (a, b) = Channel::pair().unwrap();
    drop(b);
    assert_eq!(a.wait_released().unwrap(), Released::PeerGone);
    assert!(matches!(
        a.recv_bytes().map_err(|error| ipc_error(&error).cloned()),
        Err(Some(IpcError::PeerGone {
            what: "waiting for bytes"
        }))
    ));
    assert!(matches!(
        a.send_bytes(b"anyone?")
            .map_err(|error| ipc_error(&error).cloned()),
        Err(Some(IpcError::PeerGone { .. }))
    ));
}

#[test]
fn a_release_notice_is_acknowledged_and_garbage_is_refused() {
    let (a, b) = Channel::pair().unwrap();
    b.send(Kind::Released, &[], None).unwrap();
    assert_eq!(a.wait_released().unwrap(), Released::Acknowledged);
    (&b.socket).write_all(b"GET / HTTP/1.1\r\n").unwrap();
    let error = a.recv_bytes().unwrap_err();
    assert!(
        matches!(ipc_error(&error), Some(IpcError::Protocol { .. })),
        "{error}"
    );
}

#[test]
fn a_timeout_ends_a_wait_for_a_silent_peer() {
    let (a, _b) = Channel::pair().unwrap();
    a.set_timeout(Some(Duration::from_millis(20))).unwrap();
    let error = a.wait_released().unwrap_err();
    assert!(
        matches!(ipc_error(&error), Some(IpcError::Io { .. })),
        "{error}"
    );
}

/// Anonymous memory holding `text`, as the stub driver exports pools and chunks.
pub(super) fn memfd_with(text: &[u8]) -> OwnedFd {
    // SAFETY: the name is a valid C string; the descriptor returned is new and ours.
    let fd = unsafe { libc::memfd_create(c"cuda-safe-test".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "{}", std::io::Error::last_os_error());
    // SAFETY: `fd` is a new descriptor no one else owns.
    let mut file =
        std::fs::File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    file.write_all(text).unwrap();
    OwnedFd::from(file)
}
