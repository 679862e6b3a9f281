//! Another rank's side of the rendezvous: connect to rank 0 (again while it is not there yet,
//! or it answered wrongly), prove this rank belongs to the job, take the id only with rank
//! 0's proof over it, and acknowledge it. Every read and write waits at most the time left
//! before the one deadline, so a rank 0 (or an impostor) that trickles cannot stretch it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::Deadline;
use super::secret::JobSecret;
use super::wire::{
    HELLO_BYTES, ID_BYTES, ID_MESSAGE_BYTES, Nonces, Session, ack, check_id, parse_hello, proof,
};
use crate::error::bootstrap_error;
use cuda_safe::Result;

/// How long a rank waits before it tries rank 0 again.
const RETRY: Duration = Duration::from_millis(20);

/// Fetches the id from rank 0 at `address` as rank `rank` of `world_size`, within `deadline`.
///
/// # Errors
///
/// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when `address` does not resolve, or
/// when no answer with rank 0's proof came before the deadline (with the last failure).
pub(super) fn fetch(
    address: &str,
    secret: &JobSecret,
    rank: u32,
    world_size: u32,
    deadline: &Deadline,
) -> Result<[u8; ID_BYTES]> {
    let mut nonces = Nonces::new()?;
    let mut last = String::from("no attempt");
    let mut last_attempted = false;
    while deadline.remaining().is_some() {
        let targets = address
            .to_socket_addrs()
            .map_err(|e| bootstrap_error(format!("{address} does not resolve: {e}")))?;
        for target in targets {
            // A failure is only recorded for a connection that was tried: the deadline
            // running out between two attempts must not hide why the last one failed.
            let Some(left) = deadline.remaining() else {
                break;
            };
            let session = Session {
                root_nonce: [0; 32],
                rank_nonce: nonces.next(),
                world_size,
                rank,
            };
            match attempt(target, secret, session, left, deadline) {
                Ok(id) => return Ok(id),
                // Running out of time says less than what failed before it.
                Err(failure) if failure.deadline && last_attempted => {}
                Err(failure) => {
                    last = failure.text;
                    last_attempted = true;
                }
            }
        }
        if let Some(left) = deadline.remaining() {
            std::thread::sleep(left.min(RETRY));
        }
    }
    Err(bootstrap_error(format!(
        "no unique id from rank 0 at {address} within the timeout ({:?}); last failure: {last}",
        deadline.timeout
    )))
}

/// Why one connection's exchange failed, in words, and whether it was the deadline.
struct Failure {
    text: String,
    deadline: bool,
}

impl Failure {
    fn deadline() -> Self {
        Self {
            text: "the deadline passed in the middle of a message".into(),
            deadline: true,
        }
    }
}

impl From<String> for Failure {
    fn from(text: String) -> Self {
        Self {
            text,
            deadline: false,
        }
    }
}

impl From<&str> for Failure {
    fn from(text: &str) -> Self {
        text.to_owned().into()
    }
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        Self {
            deadline: error.kind() == io::ErrorKind::TimedOut,
            text: error.to_string(),
        }
    }
}

/// One connection's exchange, connecting within `left`.
fn attempt(
    target: SocketAddr,
    secret: &JobSecret,
    mut session: Session,
    left: Duration,
    deadline: &Deadline,
) -> std::result::Result<[u8; ID_BYTES], Failure> {
    let stream = TcpStream::connect_timeout(&target, left)?;
    let _ = stream.set_nodelay(true);
    let mut hello = [0u8; HELLO_BYTES];
    read_full(&stream, &mut hello, deadline)?;
    session.root_nonce = parse_hello(&hello).ok_or(
        "what answers on rank 0's port does not speak this exchange (another program holds it?)",
    )?;
    let proof = proof(secret, &session).map_err(|e| e.to_string())?;
    write_full(&stream, &proof, deadline)?;
    let mut answer = [0u8; ID_MESSAGE_BYTES];
    read_full(&stream, &mut answer, deadline).map_err(|failure| Failure {
        text: format!(
            "{} (after this rank's proof: rank 0 drops a rank whose secret differs)",
            failure.text
        ),
        ..failure
    })?;
    let id = check_id(secret, &answer, &session).ok_or(
        "the answer failed rank 0's proof: whoever answered does not know the job's secret \
         (another process holds rank 0's port?)",
    )?;
    let ack = ack(secret, &session).map_err(|e| e.to_string())?;
    write_full(&stream, &ack, deadline)?;
    Ok(id)
}

/// Fills `buffer` from `stream`, each read bounded by the time left.
fn read_full(
    stream: &TcpStream,
    buffer: &mut [u8],
    deadline: &Deadline,
) -> std::result::Result<(), Failure> {
    let mut filled = 0;
    while filled < buffer.len() {
        let left = deadline.remaining().ok_or_else(Failure::deadline)?;
        stream.set_read_timeout(Some(left))?;
        match (&*stream).read(&mut buffer[filled..]) {
            Ok(0) => return Err("rank 0 closed the connection".into()),
            Ok(count) => filled += count,
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes all of `bytes` to `stream`, each write bounded by the time left.
fn write_full(
    stream: &TcpStream,
    bytes: &[u8],
    deadline: &Deadline,
) -> std::result::Result<(), Failure> {
    let mut sent = 0;
    while sent < bytes.len() {
        let left = deadline.remaining().ok_or_else(Failure::deadline)?;
        stream.set_write_timeout(Some(left))?;
        match (&*stream).write(&bytes[sent..]) {
            Ok(0) => return Err("rank 0 closed the connection".into()),
            Ok(count) => sent += count,
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// A read or write that timed out or was interrupted: the loop checks the deadline again.
fn is_retry(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}
