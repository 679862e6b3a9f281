//! The listening end: a UNIX socket other processes connect to.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Channel;
use super::io::{Deadline, wait};
use super::wire::io_error;
use cuda_safe::{Error, Result};

/// A listening UNIX socket that other processes [`connect`](Channel::connect) to. The socket
/// file is removed when the listener is dropped.
#[derive(Debug)]
pub struct Listener {
    socket: UnixListener,
    path: PathBuf,
}

impl Listener {
    /// Listens at `path` (which must not exist).
    ///
    /// # Errors
    ///
    /// [`IpcError::Io`](crate::IpcError::Io) from the operating system.
    pub fn bind(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let socket = UnixListener::bind(&path).map_err(io_error("binding the socket"))?;
        let listener = Self { socket, path };
        // Accepts wait in poll(2), so that they can be bounded.
        listener
            .socket
            .set_nonblocking(true)
            .map_err(io_error("binding the socket"))?;
        Ok(listener)
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the next process to connect, for as long as it takes (a process that dies
    /// before it connects leaves this waiting for ever: see
    /// [`accept_timeout`](Self::accept_timeout)).
    ///
    /// # Errors
    ///
    /// [`IpcError::Io`](crate::IpcError::Io) from the operating system.
    pub fn accept(&self) -> Result<Channel> {
        self.accept_by(Deadline::after(None))
    }

    /// Waits at most `timeout` for the next process to connect.
    ///
    /// # Errors
    ///
    /// [`IpcError::Io`](crate::IpcError::Io) of kind
    /// [`TimedOut`](std::io::ErrorKind::TimedOut) when no process connected in time, or
    /// another from the operating system; [`Error::InvalidArgument`] for a zero timeout.
    pub fn accept_timeout(&self, timeout: Duration) -> Result<Channel> {
        if timeout.is_zero() {
            return Err(Error::invalid_argument(
                "an accept's timeout must be longer than zero",
            ));
        }
        self.accept_by(Deadline::after(Some(timeout)))
    }

    fn accept_by(&self, deadline: Deadline) -> Result<Channel> {
        const WHAT: &str = "accepting a connection";
        loop {
            match self.socket.accept() {
                Ok((socket, _)) => return Ok(Channel::from_unix_stream(socket)),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    wait(self.socket.as_fd(), libc::POLLIN, &deadline).map_err(io_error(WHAT))?;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(io_error(WHAT)(error)),
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_file(&self.path) {
            log::debug!(
                "removing the socket {} failed: {error}",
                self.path.display()
            );
        }
    }
}
