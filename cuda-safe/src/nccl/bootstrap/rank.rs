//! Another rank's side of the rendezvous: connect to rank 0 (again while it is not there yet,
//! or it answered wrongly), prove this rank belongs to the job, take the id only with rank
//! 0's proof over it, and acknowledge it. Every read and write waits at most the time left
//! before the one deadline, so a rank 0 (or an impostor) that trickles cannot stretch it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::Deadline;
use super::bootstrap_error;
use super::secret::JobSecret;
use super::wire::{
    HELLO_BYTES, ID_BYTES, ID_MESSAGE_BYTES, Nonces, Session, ack, check_id, parse_hello, proof,
};
use crate::error::Result;

/// How long a rank waits before it tries rank 0 again.
const RETRY: Duration = Duration::from_millis(20);

/// Fetches the id from rank 0 at `address` as rank `rank` of `world_size`, within `deadline`.
///
/// # Errors
///
/// [`Error::NcclBootstrap`](crate::Error::NcclBootstrap) when `address` does not resolve, or
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
    while deadline.remaining().is_some() {
        let targets = address
            .to_socket_addrs()
            .map_err(|e| bootstrap_error(format!("{address} does not resolve: {e}")))?;
        for target in targets {
            let session = Session {
                root_nonce: [0; 32],
                rank_nonce: nonces.next(),
                world_size,
                rank,
            };
            match attempt(target, secret, session, deadline) {
                Ok(id) => return Ok(id),
                Err(failure) => last = failure,
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

/// One connection's exchange; the failure in words.
fn attempt(
    target: SocketAddr,
    secret: &JobSecret,
    mut session: Session,
    deadline: &Deadline,
) -> std::result::Result<[u8; ID_BYTES], String> {
    let left = deadline.remaining().ok_or("the deadline passed")?;
    let stream = TcpStream::connect_timeout(&target, left).map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let mut hello = [0u8; HELLO_BYTES];
    read_full(&stream, &mut hello, deadline)?;
    session.root_nonce = parse_hello(&hello).ok_or(
        "what answers on rank 0's port does not speak this exchange (another program holds it?)",
    )?;
    let proof = proof(secret, &session).map_err(|e| e.to_string())?;
    write_full(&stream, &proof, deadline)?;
    let mut answer = [0u8; ID_MESSAGE_BYTES];
    read_full(&stream, &mut answer, deadline).map_err(|e| {
        format!("{e} (after this rank's proof: rank 0 drops a rank whose secret differs)")
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
) -> std::result::Result<(), String> {
    let mut filled = 0;
    while filled < buffer.len() {
        let left = deadline
            .remaining()
            .ok_or("the deadline passed in the middle of a message")?;
        stream
            .set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        match (&*stream).read(&mut buffer[filled..]) {
            Ok(0) => return Err("rank 0 closed the connection".into()),
            Ok(count) => filled += count,
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// Writes all of `bytes` to `stream`, each write bounded by the time left.
fn write_full(
    stream: &TcpStream,
    bytes: &[u8],
    deadline: &Deadline,
) -> std::result::Result<(), String> {
    let mut sent = 0;
    while sent < bytes.len() {
        let left = deadline
            .remaining()
            .ok_or("the deadline passed in the middle of a message")?;
        stream
            .set_write_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        match (&*stream).write(&bytes[sent..]) {
            Ok(0) => return Err("rank 0 closed the connection".into()),
            Ok(count) => sent += count,
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e.to_string()),
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
