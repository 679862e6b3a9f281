//! Rank 0's listening socket: the one its [`Launcher`](crate::Launcher) bound and handed
//! down (so the port was never free for another process to take), or one bound now.

use std::net::TcpListener;
use std::os::fd::{FromRawFd, IntoRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::bootstrap_error;
use cuda_safe::Result;

/// The variable naming the descriptor of the listening socket a launcher hands to rank 0
/// (inherited across `exec`): rank 0 then serves the id on it instead of binding
/// `MASTER_ADDR:MASTER_PORT` itself. Its socket must listen on `MASTER_PORT`.
pub const LISTEN_FD: &str = "CUDA_SAFE_NCCL_LISTEN_FD";

/// Whether this process took its inherited socket already (it is owned once).
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Rank 0's socket: the inherited one when [`LISTEN_FD`] names one (it must listen on
/// `port`), else `address` bound now.
///
/// # Errors
///
/// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) for an inherited descriptor that is
/// not a TCP socket listening on `port` or was taken already, or when `address` cannot be
/// bound.
pub(super) fn rank_zero_listener(address: &str, port: u16) -> Result<TcpListener> {
    match std::env::var(LISTEN_FD) {
        Ok(value) => inherited(&value, port),
        Err(_) => TcpListener::bind(address)
            .map_err(|e| bootstrap_error(format!("rank 0 cannot listen on {address}: {e}"))),
    }
}

/// The listening socket `value` names.
pub(super) fn inherited(value: &str, port: u16) -> Result<TcpListener> {
    let refuse = |why: &str| bootstrap_error(format!("{LISTEN_FD}={value:?}: {why}"));
    let fd: RawFd = value
        .trim()
        .parse()
        .ok()
        .filter(|fd| *fd > 2)
        .ok_or_else(|| refuse("not a descriptor number above the standard streams"))?;
    if !is_listening_stream_socket(fd) {
        return Err(refuse("no listening stream socket is open there"));
    }
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Err(refuse(
            "an earlier rendezvous of this process took it already",
        ));
    }
    // SAFETY: `fd` is open and a listening stream socket (checked above), handed to this
    // process by its launcher for rank 0 to own, and taken once (`TAKEN`).
    let listener = unsafe { TcpListener::from_raw_fd(fd) };
    let listens_on_port = listener
        .local_addr()
        .is_ok_and(|address| address.port() == port);
    if !listens_on_port {
        // Not the launcher's socket: give the descriptor back untouched.
        let _ = listener.into_raw_fd();
        TAKEN.store(false, Ordering::SeqCst);
        return Err(refuse("its socket does not listen on MASTER_PORT"));
    }
    // Rank 0's own children do not inherit it.
    // SAFETY: fcntl on the descriptor this listener owns.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Ok(listener)
}

/// Whether `fd` is an open socket of type `SOCK_STREAM` in the listening state.
fn is_listening_stream_socket(fd: RawFd) -> bool {
    let option = |name: libc::c_int| {
        let mut value: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `value`; a descriptor that is not
        // open or not a socket is an error, nothing else.
        let answer = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                name,
                (&raw mut value).cast(),
                &mut len,
            )
        };
        (answer == 0).then_some(value)
    };
    option(libc::SO_TYPE) == Some(libc::SOCK_STREAM) && option(libc::SO_ACCEPTCONN) == Some(1)
}
