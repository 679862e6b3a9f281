//! Rank 0's side of the rendezvous: one thread serves every connection at once (non-blocking
//! sockets under `poll(2)`), so a stranger that connects and stalls holds up no rank, and one
//! that fails its proof is dropped without taking a rank's place. Rank 0 listens until every
//! other rank has acknowledged the id, or the deadline passes.

use std::collections::{BTreeSet, VecDeque};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use super::Deadline;
use super::secret::JobSecret;
use super::wire::{
    ACK_BYTES, ID_BYTES, Nonces, PROOF_BYTES, Session, check_ack, check_proof, hello, id_message,
};
use crate::error::bootstrap_error;
use cuda_safe::Result;

/// The most connections in the middle of the exchange at once; past it the oldest is dropped
/// (a rank that was dropped connects again).
pub(super) const MAX_PENDING: usize = 256;

/// Where one connection stands.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// Sending the hello, then reading the rank's proof.
    Proof,
    /// Sending the id, then reading the rank's acknowledgement.
    Ack(Session),
}

/// One connection in the middle of the exchange.
#[derive(Debug)]
struct Peer {
    stream: TcpStream,
    root_nonce: [u8; 32],
    stage: Stage,
    /// What is to be sent, and how much of it went.
    out: Vec<u8>,
    sent: usize,
    /// What has come of the message awaited, and its length.
    input: Vec<u8>,
    wanted: usize,
}

/// What a step of a connection came to.
enum Step {
    /// Waiting for the socket.
    Waiting,
    /// The rank acknowledged the id.
    Served(u32),
    /// Failed its proof or broke off: dropped.
    Refused,
}

/// How a rendezvous ended for rank 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    /// Ranks that acknowledged the id.
    pub(super) served: usize,
    /// Connections dropped: they failed their proof or broke off.
    pub(super) refused: usize,
}

impl Peer {
    fn new(stream: TcpStream, root_nonce: [u8; 32]) -> Self {
        Self {
            stream,
            root_nonce,
            stage: Stage::Proof,
            out: hello(&root_nonce).to_vec(),
            sent: 0,
            input: Vec::with_capacity(PROOF_BYTES),
            wanted: PROOF_BYTES,
        }
    }

    fn events(&self) -> libc::c_short {
        if self.sent < self.out.len() {
            libc::POLLOUT
        } else {
            libc::POLLIN
        }
    }

    /// Moves what the socket allows now.
    fn step(&mut self, secret: &JobSecret, world_size: u32, id: &[u8; ID_BYTES]) -> Step {
        loop {
            if self.sent < self.out.len() {
                match (&self.stream).write(&self.out[self.sent..]) {
                    Ok(0) => return Step::Refused,
                    Ok(count) => self.sent += count,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Waiting,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => return Step::Refused,
                }
                continue;
            }
            let mut chunk = [0u8; PROOF_BYTES];
            let room = self.wanted - self.input.len();
            match (&self.stream).read(&mut chunk[..room]) {
                Ok(0) => return Step::Refused,
                Ok(count) => self.input.extend_from_slice(&chunk[..count]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Waiting,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Step::Refused,
            }
            if self.input.len() < self.wanted {
                continue;
            }
            match self.stage {
                Stage::Proof => {
                    let Ok(proof) = <[u8; PROOF_BYTES]>::try_from(self.input.as_slice()) else {
                        return Step::Refused;
                    };
                    let session = check_proof(secret, &proof, self.root_nonce, world_size)
                        .filter(|session| (1..world_size).contains(&session.rank));
                    let Some(session) = session else {
                        return Step::Refused;
                    };
                    let Ok(answer) = id_message(secret, &session, id) else {
                        return Step::Refused;
                    };
                    self.out = answer.to_vec();
                    self.sent = 0;
                    self.input.clear();
                    self.wanted = ACK_BYTES;
                    self.stage = Stage::Ack(session);
                }
                Stage::Ack(session) => {
                    let acknowledged = <[u8; ACK_BYTES]>::try_from(self.input.as_slice())
                        .is_ok_and(|ack| check_ack(secret, &ack, &session));
                    return if acknowledged {
                        Step::Served(session.rank)
                    } else {
                        Step::Refused
                    };
                }
            }
        }
    }
}

/// Hands `id` to each of the other `world_size - 1` ranks that proves it belongs to the job,
/// on connections to `listener`, until all of them acknowledged it or `deadline` passed.
///
/// # Errors
///
/// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when the deadline passed first
/// (saying how many ranks were served and how many connections were refused), or from the
/// operating system.
pub(super) fn serve(
    listener: &TcpListener,
    secret: &JobSecret,
    world_size: u32,
    id: &[u8; ID_BYTES],
    deadline: &Deadline,
) -> Result<Outcome> {
    let needed = (world_size as usize).saturating_sub(1);
    let os = |e: io::Error| bootstrap_error(format!("rank 0 listening: {e}"));
    listener.set_nonblocking(true).map_err(os)?;
    let mut nonces = Nonces::new()?;
    let mut served = BTreeSet::new();
    let mut refused = 0;
    let mut pending: VecDeque<Peer> = VecDeque::new();
    let mut polls = Vec::with_capacity(MAX_PENDING + 1);
    while served.len() < needed {
        let Some(timeout) = deadline.poll_millis() else {
            return Err(bootstrap_error(format!(
                "rank 0 handed the id to {} of the {needed} other ranks within the timeout \
                 ({:?}); {refused} connections failed the proof or broke off and were dropped",
                served.len(),
                deadline.timeout
            )));
        };
        polls.clear();
        polls.push(libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        polls.extend(pending.iter().map(|peer| libc::pollfd {
            fd: peer.stream.as_raw_fd(),
            events: peer.events(),
            revents: 0,
        }));
        // SAFETY: `polls` holds `polls.len()` valid entries, each an open descriptor.
        let ready = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, timeout) };
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(os(error));
        }
        // The connections first (their entries follow the listener's, in order), then new
        // ones.
        let mut index = 0;
        pending.retain_mut(|peer| {
            index += 1;
            if polls.get(index).is_none_or(|poll| poll.revents == 0) {
                return true;
            }
            match peer.step(secret, world_size, id) {
                Step::Waiting => true,
                Step::Served(rank) => {
                    served.insert(rank);
                    false
                }
                Step::Refused => {
                    refused += 1;
                    false
                }
            }
        });
        if polls.first().is_some_and(|poll| poll.revents != 0) {
            accept_all(listener, &mut pending, &mut nonces, &mut refused).map_err(os)?;
        }
    }
    Ok(Outcome {
        served: served.len(),
        refused,
    })
}

/// Accepts every connection waiting on `listener`, dropping the oldest pending ones past
/// [`MAX_PENDING`].
fn accept_all(
    listener: &TcpListener,
    pending: &mut VecDeque<Peer>,
    nonces: &mut Nonces,
    refused: &mut usize,
) -> io::Result<()> {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                // A connection that cannot be made non-blocking is dropped at once.
                if stream.set_nonblocking(true).is_err() {
                    *refused += 1;
                    continue;
                }
                let _ = stream.set_nodelay(true);
                pending.push_back(Peer::new(stream, nonces.next()));
                if pending.len() > MAX_PENDING {
                    pending.pop_front();
                    *refused += 1;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A connection reset before it was accepted, or out of descriptors for now: the
            // next round tries again.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ECONNABORTED | libc::EMFILE | libc::ENFILE)
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
}
