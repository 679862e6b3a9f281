//! The listening end: a UNIX socket other processes connect to.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use super::Channel;
use super::wire::io_error;
use crate::error::Result;

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
    /// [`Error::IpcIo`](crate::Error::IpcIo) from the operating system.
    pub fn bind(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let socket = UnixListener::bind(&path).map_err(io_error("binding the socket"))?;
        Ok(Self { socket, path })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the next process to connect.
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`](crate::Error::IpcIo) from the operating system.
    pub fn accept(&self) -> Result<Channel> {
        let (socket, _) = self
            .socket
            .accept()
            .map_err(io_error("accepting a connection"))?;
        Ok(Channel::from_unix_stream(socket))
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
