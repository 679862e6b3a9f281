//! Moving bytes, and a file descriptor beside them, within a deadline: `poll(2)` until the
//! socket is ready, then one non-blocking `sendmsg`/`recvmsg`, the time left recomputed before
//! each wait, so a peer that trickles bytes cannot stretch a message past its deadline.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// When a message (or an accept) must be complete: `None` waits for ever.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    at: Option<Instant>,
    timeout: Option<Duration>,
}

impl Deadline {
    /// The deadline `timeout` from now (`None`: none). A timeout too long for the clock is
    /// none.
    pub(super) fn after(timeout: Option<Duration>) -> Self {
        Self {
            at: timeout.and_then(|timeout| Instant::now().checked_add(timeout)),
            timeout,
        }
    }

    /// The `poll(2)` timeout until the deadline, in milliseconds rounded up (so `poll` never
    /// wakes just before it and spins): -1 for none, `None` once it has passed.
    fn poll_millis(&self) -> Option<libc::c_int> {
        let Some(at) = self.at else {
            return Some(-1);
        };
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        let millis = left.as_micros().div_ceil(1000);
        Some(libc::c_int::try_from(millis).unwrap_or(libc::c_int::MAX))
    }

    /// The error of a deadline that passed.
    pub(super) fn passed(&self) -> io::Error {
        let text = match self.timeout {
            Some(timeout) => format!("not done within the timeout ({timeout:?})"),
            None => "not done in time".to_owned(),
        };
        io::Error::new(io::ErrorKind::TimedOut, text)
    }
}

/// Waits until `fd` is ready for `events` (`POLLIN`, `POLLOUT`) or the other end hung up;
/// [`io::ErrorKind::TimedOut`] once `deadline` passes.
pub(super) fn wait(
    fd: BorrowedFd<'_>,
    events: libc::c_short,
    deadline: &Deadline,
) -> io::Result<()> {
    loop {
        let Some(timeout) = deadline.poll_millis() else {
            return Err(deadline.passed());
        };
        let mut poll = libc::pollfd {
            fd: fd.as_raw_fd(),
            events,
            revents: 0,
        };
        // SAFETY: one valid `pollfd` for the call; `fd` is open (borrowed).
        let ready = unsafe { libc::poll(&mut poll, 1, timeout) };
        if ready > 0 {
            // Ready, hung up or failed: the next call on the socket says which.
            return Ok(());
        }
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

/// Room for one file descriptor's control message, aligned for `cmsghdr`.
#[repr(C, align(8))]
pub(super) struct ControlBuffer(pub(super) [u8; 32]);

/// Sends what fits now of `first` then `second` (without blocking), with `fd` beside the
/// first byte when given; returns how many bytes went ([`io::ErrorKind::WouldBlock`] when
/// none could).
pub(super) fn send_some(
    socket: BorrowedFd<'_>,
    first: &[u8],
    second: &[u8],
    fd: Option<BorrowedFd<'_>>,
) -> io::Result<usize> {
    let mut iov = [
        libc::iovec {
            iov_base: first.as_ptr() as *mut libc::c_void,
            iov_len: first.len(),
        },
        libc::iovec {
            iov_base: second.as_ptr() as *mut libc::c_void,
            iov_len: second.len(),
        },
    ];
    let mut control = ControlBuffer([0; 32]);
    // SAFETY: an all-zero msghdr is valid (no name, no control).
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = iov.as_mut_ptr();
    message.msg_iovlen = iov.len() as _;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) } as usize;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = space as _;
        // SAFETY: the control buffer holds `space` bytes (at most 32, checked by the
        // assertion in the tests), aligned for cmsghdr; CMSG_FIRSTHDR points into it.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
            libc::CMSG_DATA(header)
                .cast::<libc::c_int>()
                .write_unaligned(fd.as_raw_fd());
        }
    }
    loop {
        // SAFETY: `message` points at live buffers for the call; MSG_NOSIGNAL turns a closed
        // peer into EPIPE instead of a signal, MSG_DONTWAIT makes a full socket EAGAIN.
        let sent = unsafe {
            libc::sendmsg(
                socket.as_raw_fd(),
                &message,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        if sent >= 0 {
            return Ok(sent as usize);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Receives what has come, up to `bytes.len()` (without blocking), and the file descriptor
/// sent beside it, if any; returns how many bytes came (0: the other end closed the channel;
/// [`io::ErrorKind::WouldBlock`] when nothing is there yet) and the descriptor, or why one
/// sent beside the bytes was lost: this process could not take it (the kernel drops a
/// descriptor it cannot install and marks the message `MSG_CTRUNC`), with `EMFILE` or
/// `ENFILE` when no descriptor is free. More descriptors than one are
/// [`io::ErrorKind::InvalidData`] (the bytes are consumed then too).
pub(super) fn recv_some(
    socket: BorrowedFd<'_>,
    bytes: &mut [u8],
) -> io::Result<(usize, io::Result<Option<OwnedFd>>)> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: bytes.len(),
    };
    let mut control = ControlBuffer([0; 32]);
    // SAFETY: an all-zero msghdr is valid.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.0.as_mut_ptr().cast();
    message.msg_controllen = control.0.len() as _;
    let got = loop {
        // SAFETY: `message` points at live buffers for the call; received descriptors are
        // close-on-exec.
        let got = unsafe {
            libc::recvmsg(
                socket.as_raw_fd(),
                &mut message,
                libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT,
            )
        };
        if got >= 0 {
            break got as usize;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `message.msg_control` with `msg_controllen` bytes of control
    // messages; CMSG_FIRSTHDR/NXTHDR walk them within that length.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header).cast::<libc::c_int>();
                let count = ((*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / size_of::<libc::c_int>();
                for index in 0..count {
                    // Owned at once, so every descriptor received is closed on any error.
                    fds.push(OwnedFd::from_raw_fd(data.add(index).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    // SAFETY: CMSG_LEN only computes a size.
    let header_bytes = unsafe { libc::CMSG_LEN(0) } as usize;
    let room = control.0.len().saturating_sub(header_bytes) / size_of::<libc::c_int>();
    let truncated = message.msg_flags & libc::MSG_CTRUNC != 0;
    if truncated && fds.len() < room {
        // Fewer than fit: the kernel could not install one (this process's side, not the
        // peer's). Those that did come are closed with `fds`.
        return Ok((got, Err(why_descriptor_lost(socket))));
    }
    if truncated || fds.len() > 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "more file descriptors came than a message carries",
        ));
    }
    Ok((got, Ok(fds.pop())))
}

/// Why the kernel could not hand over a descriptor sent beside a message: it says only
/// `MSG_CTRUNC`, so this asks for a descriptor the same way (a duplicate of `socket`, closed at
/// once) and gives that error (`EMFILE`: this process's open-file limit; `ENFILE`: the
/// system's), or, when one is free again, a plain error saying the descriptor was lost.
fn why_descriptor_lost(socket: BorrowedFd<'_>) -> io::Error {
    // SAFETY: `socket` is open (borrowed); a descriptor returned is new and ours.
    let probe = unsafe { libc::fcntl(socket.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if probe < 0 {
        return io::Error::last_os_error();
    }
    // SAFETY: `probe` is the new descriptor just made, owned by nothing else.
    drop(unsafe { OwnedFd::from_raw_fd(probe) });
    io::Error::other(
        "the kernel could not hand over the file descriptor sent beside the message \
         (MSG_CTRUNC)",
    )
}
