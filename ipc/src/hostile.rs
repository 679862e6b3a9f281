//! The channel against hostile peers, each case bounded in time and ending in a typed error:
//! a peer that trickles a message, one that is silent (receiving and sending), one that
//! declares a payload the protocol does not allow, release notices that are not exactly
//! one, file descriptors of the wrong kind, and an accept no process answers.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::tests::memfd_with;
use super::wire::Kind;
use super::{Channel, Listener, MAX_MESSAGE_BYTES, Released};
use crate::IpcError;
use crate::error::ipc_error;
use cuda_safe::Error;
use cuda_safe::Uuid;
use cuda_safe::VmmShareDescriptor;
use cuda_safe::ipc::{ExportedPool, PoolHandle};

/// The bytes of a header as the wire writes them.
fn header(kind: u32, len: u32) -> Vec<u8> {
    let mut bytes = b"CSIP".to_vec();
    bytes.extend_from_slice(&kind.to_le_bytes());
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes
}

/// The channel under test, and the raw socket of its hostile peer.
fn hostile_pair(timeout: Duration) -> (Channel, UnixStream) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let channel = Channel::from_unix_stream(ours);
    channel.set_timeout(Some(timeout)).unwrap();
    (channel, theirs)
}

fn is_timeout(error: &Error) -> bool {
    matches!(ipc_error(error), Some(IpcError::Io { source, .. }) if source.kind() == std::io::ErrorKind::TimedOut)
}

/// Asserts that `took` ran at least the timeout and ended well before a trickle could have.
fn within(took: Duration, timeout: Duration) {
    assert!(took >= timeout, "gave up early: {took:?}");
    assert!(took < timeout + Duration::from_secs(2), "took {took:?}");
}

#[test]
fn a_trickling_sender_cannot_stretch_a_receive_past_its_deadline() {
    let timeout = Duration::from_millis(200);
    let (channel, mut peer) = hostile_pair(timeout);
    // A header promising 64 bytes, then one byte every 30 ms: each byte comes well within
    // the timeout, the message never does.
    let trickler = std::thread::spawn(move || {
        peer.write_all(&header(Kind::Bytes as u32, 64)).unwrap();
        for _ in 0..64 {
            std::thread::sleep(Duration::from_millis(30));
            if peer.write_all(&[0]).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let error = channel.recv_bytes().unwrap_err();
    within(started.elapsed(), timeout);
    assert!(is_timeout(&error), "{error}");
    // Cut in the middle of a message: every later call is the typed poisoned error.
    assert!(channel.is_poisoned());
    let later = channel.recv_bytes().unwrap_err();
    assert!(
        matches!(
            ipc_error(&later),
            Some(IpcError::Poisoned {
                what: "waiting for bytes"
            })
        ),
        "{later}"
    );
    assert!(matches!(
        channel
            .send_bytes(b"still there?")
            .map_err(|error| ipc_error(&error).cloned()),
        Err(Some(IpcError::Poisoned { .. }))
    ));
    drop(channel);
    trickler.join().unwrap();
}

#[test]
fn a_silent_peer_ends_a_receive_without_poisoning_the_channel() {
    let timeout = Duration::from_millis(50);
    let (channel, mut peer) = hostile_pair(timeout);
    let started = Instant::now();
    let error = channel.wait_released().unwrap_err();
    within(started.elapsed(), timeout);
    assert!(is_timeout(&error), "{error}");
    // Nothing of a message had come: the channel is still in step.
    assert!(!channel.is_poisoned());
    let mut message = header(Kind::Bytes as u32, 2);
    message.extend_from_slice(b"hi");
    peer.write_all(&message).unwrap();
    assert_eq!(channel.recv_bytes().unwrap(), b"hi");
}

#[test]
fn a_peer_that_never_reads_ends_a_send_at_its_deadline() {
    let timeout = Duration::from_millis(200);
    let (channel, peer) = hostile_pair(timeout);
    let largest = vec![7u8; MAX_MESSAGE_BYTES];
    let started = Instant::now();
    let error = channel.send_bytes(&largest).unwrap_err();
    within(started.elapsed(), timeout);
    assert!(is_timeout(&error), "{error}");
    // Part of the message went: the peer would read the rest of it as the next message.
    assert!(channel.is_poisoned());
    assert!(matches!(
        channel
            .send_bytes(b"x")
            .map_err(|error| ipc_error(&error).cloned()),
        Err(Some(IpcError::Poisoned {
            what: "sending bytes"
        }))
    ));
    drop(peer);
}

#[test]
fn a_declared_payload_the_protocol_does_not_allow_is_refused_before_it_is_read() {
    let timeout = Duration::from_secs(5);
    // A release notice declaring 16 MiB: refused at once, not read and not taken for a
    // release.
    let (channel, mut peer) = hostile_pair(timeout);
    peer.write_all(&header(Kind::Released as u32, MAX_MESSAGE_BYTES as u32))
        .unwrap();
    let started = Instant::now();
    let error = channel.wait_released().unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(
        matches!(ipc_error(&error), Some(IpcError::Protocol { detail }) if detail.contains("16777216 bytes")),
        "{error}"
    );
    assert!(channel.is_poisoned());
    // Bytes past the largest message, an event that is not 64 bytes long.
    for (kind, len) in [
        (Kind::Bytes, MAX_MESSAGE_BYTES as u32 + 1),
        (Kind::Event, 65),
        (Kind::Buffer, u32::MAX),
    ] {
        let (channel, mut peer) = hostile_pair(timeout);
        peer.write_all(&header(kind as u32, len)).unwrap();
        let error = channel.recv(kind).unwrap_err();
        assert!(
            matches!(ipc_error(&error), Some(IpcError::Protocol { .. })),
            "{error}"
        );
    }
}

#[test]
fn a_release_notice_is_exactly_what_the_protocol_says() {
    let timeout = Duration::from_secs(5);
    // With one byte of payload: refused (a notice is empty).
    let (channel, mut peer) = hostile_pair(timeout);
    let mut notice = header(Kind::Released as u32, 1);
    notice.push(0);
    peer.write_all(&notice).unwrap();
    let error = channel.wait_released().unwrap_err();
    assert!(
        matches!(ipc_error(&error), Some(IpcError::Protocol { .. })),
        "{error}"
    );
    // With a file descriptor beside it: refused, and the descriptor closed.
    let (channel, peer) = Channel::pair().unwrap();
    channel.set_timeout(Some(timeout)).unwrap();
    let fd = memfd_with(b"not a release");
    peer.send(Kind::Released, &[], Some(fd.as_fd())).unwrap();
    let error = channel.wait_released().unwrap_err();
    assert!(
        matches!(ipc_error(&error), Some(IpcError::Protocol { detail }) if detail.contains("file descriptor")),
        "{error}"
    );
    // The notice itself had come whole: the channel is in step, and a true notice counts.
    peer.send(Kind::Released, &[], None).unwrap();
    assert_eq!(channel.wait_released().unwrap(), Released::Acknowledged);
}

/// Descriptors that can never be a shareable handle of GPU memory, with what the refusal
/// calls them.
fn wrong_kinds() -> Vec<(OwnedFd, &'static str)> {
    let file = OwnedFd::from(tempfile::tempfile().unwrap());
    let (socket, _) = UnixStream::pair().unwrap();
    let (reader, _writer) = std::io::pipe().unwrap();
    let directory = OwnedFd::from(std::fs::File::open(std::env::temp_dir()).unwrap());
    vec![
        (file, "a regular file"),
        (OwnedFd::from(socket), "a socket"),
        (OwnedFd::from(reader), "a pipe"),
        (directory, "a directory"),
    ]
}

#[test]
fn a_pool_descriptor_of_the_wrong_kind_is_refused() {
    let (sender, receiver) = Channel::pair().unwrap();
    receiver.set_timeout(Some(Duration::from_secs(5))).unwrap();
    let uuid = Uuid([3; 16]);
    for (fd, name) in wrong_kinds() {
        sender
            .send_exported_pool(&ExportedPool::new(PoolHandle::PosixFd(fd), uuid))
            .unwrap();
        let error = receiver.recv_exported_pool().unwrap_err();
        assert!(
            matches!(ipc_error(&error), Some(IpcError::Protocol { detail }) if detail.contains(name)),
            "{name}: {error}"
        );
    }
    // Each refused message had come whole: the channel is in step. Anonymous memory (what the
    // stub exports) and a character device (what the driver exports) pass.
    let null = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
    for fd in [memfd_with(b"pool"), null] {
        sender
            .send_exported_pool(&ExportedPool::new(PoolHandle::PosixFd(fd), uuid))
            .unwrap();
        assert_eq!(receiver.recv_exported_pool().unwrap().device_uuid(), uuid);
    }
}

#[test]
fn a_chunk_descriptor_of_the_wrong_kind_is_refused_after_the_whole_sequence() {
    let (sender, receiver) = Channel::pair().unwrap();
    receiver.set_timeout(Some(Duration::from_secs(5))).unwrap();
    let mib2 = 2 << 20;
    for (fd, name) in wrong_kinds() {
        let chunks = vec![
            (
                memfd_with(b"first"),
                VmmShareDescriptor::test_chunk(0, 0, mib2, 2 * mib2),
            ),
            (fd, VmmShareDescriptor::test_chunk(1, mib2, mib2, 2 * mib2)),
        ];
        sender.send_vmm_chunks(&chunks).unwrap();
        let error = receiver.recv_vmm_chunks().unwrap_err();
        assert!(
            matches!(ipc_error(&error), Some(IpcError::Protocol { detail }) if detail.contains(name)),
            "{name}: {error}"
        );
        assert!(!receiver.is_poisoned());
    }
    sender.send_bytes(b"in step").unwrap();
    assert_eq!(receiver.recv_bytes().unwrap(), b"in step");
}

#[test]
fn an_accept_that_no_process_answers_ends_at_its_timeout() {
    let directory = tempfile::tempdir().unwrap();
    let listener = Listener::bind(directory.path().join("listen.sock")).unwrap();
    let timeout = Duration::from_millis(100);
    let started = Instant::now();
    let error = listener.accept_timeout(timeout).unwrap_err();
    within(started.elapsed(), timeout);
    assert!(is_timeout(&error), "{error}");
    assert!(matches!(
        listener.accept_timeout(Duration::ZERO),
        Err(Error::InvalidArgument(_))
    ));
    // A process that does connect is accepted, and the accepted channel works.
    let client = Channel::connect(listener.path()).unwrap();
    let server = listener.accept_timeout(Duration::from_secs(5)).unwrap();
    client.send_bytes(b"hello").unwrap();
    assert_eq!(server.recv_bytes().unwrap(), b"hello");
}
