//! The rendezvous's four messages and the proofs in them.
//!
//! ```text
//! rank 0 -> rank   HELLO  magic, version, rank 0's nonce (32)
//! rank -> rank 0   PROOF  magic, version, rank (u32), the rank's nonce (32),
//!                         HMAC(secret, "RANKPRF1" | both nonces | world size | rank)
//! rank 0 -> rank   ID     magic, version, the 128 bytes,
//!                         HMAC(secret, "ROOTID_1" | both nonces | world size | rank | bytes)
//! rank -> rank 0   ACK    magic, version, HMAC(secret, "RANKACK1" | both nonces | world size | rank)
//! ```
//!
//! Every proof covers both nonces, so none can be replayed on another connection; each role
//! and step has its own label, so none can be reflected as another. Rank 0 sends the bytes
//! only after the rank's proof checked out; the rank takes them only when rank 0's proof (over
//! the bytes) checks out; rank 0 counts the rank as served only on its acknowledgement.

use crate::error::bootstrap_error;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::secret::{JobSecret, random_bytes};
use cuda_safe::Result;

/// The bytes handed from rank 0 to every other rank (an NCCL unique id).
pub(super) const ID_BYTES: usize = 128;
/// Every message starts with these bytes and [`VERSION`].
const MAGIC: [u8; 4] = *b"CSNB";
const VERSION: u8 = 1;
const NONCE_BYTES: usize = 32;
const TAG_BYTES: usize = 32;
const HEAD: usize = MAGIC.len() + 1;
pub(super) const HELLO_BYTES: usize = HEAD + NONCE_BYTES;
pub(super) const PROOF_BYTES: usize = HEAD + 4 + NONCE_BYTES + TAG_BYTES;
pub(super) const ID_MESSAGE_BYTES: usize = HEAD + ID_BYTES + TAG_BYTES;
pub(super) const ACK_BYTES: usize = HEAD + TAG_BYTES;

/// The labels of the three proofs.
const RANK_PROOF: &[u8; 8] = b"RANKPRF1";
const ROOT_PROOF: &[u8; 8] = b"ROOTID_1";
const RANK_ACK: &[u8; 8] = b"RANKACK1";

/// What one connection's proofs are bound to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Session {
    pub(super) root_nonce: [u8; NONCE_BYTES],
    pub(super) rank_nonce: [u8; NONCE_BYTES],
    pub(super) world_size: u32,
    pub(super) rank: u32,
}

/// Fresh nonces: hashes of a random seed and a counter (one read of the random source for
/// every connection of a rendezvous).
#[derive(Debug)]
pub(super) struct Nonces {
    seed: [u8; 32],
    counter: u64,
}

impl Nonces {
    /// # Errors
    ///
    /// As [`random_bytes`].
    pub(super) fn new() -> Result<Self> {
        Ok(Self {
            seed: random_bytes()?,
            counter: 0,
        })
    }

    pub(super) fn next(&mut self) -> [u8; NONCE_BYTES] {
        self.counter += 1;
        let mut hash = Sha256::new();
        hash.update(self.seed);
        hash.update(self.counter.to_le_bytes());
        hash.finalize().into()
    }
}

/// The HMAC of `label`, the session and `extra` under the job's secret.
fn mac(
    secret: &JobSecret,
    label: &[u8; 8],
    session: &Session,
    extra: &[u8],
) -> Result<Hmac<Sha256>> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .map_err(|_| bootstrap_error("the job's secret is no HMAC key"))?;
    mac.update(label);
    mac.update(&session.root_nonce);
    mac.update(&session.rank_nonce);
    mac.update(&session.world_size.to_le_bytes());
    mac.update(&session.rank.to_le_bytes());
    mac.update(extra);
    Ok(mac)
}

fn tag(secret: &JobSecret, label: &[u8; 8], session: &Session, extra: &[u8]) -> Result<[u8; 32]> {
    Ok(mac(secret, label, session, extra)?
        .finalize()
        .into_bytes()
        .into())
}

/// Whether `tag` is the proof of `label` (compared in constant time).
fn verify(
    secret: &JobSecret,
    label: &[u8; 8],
    session: &Session,
    extra: &[u8],
    tag: &[u8],
) -> bool {
    mac(secret, label, session, extra).is_ok_and(|mac| mac.verify_slice(tag).is_ok())
}

/// The body of a message after its magic and version, or `None` when they are not ours.
fn body(message: &[u8]) -> Option<&[u8]> {
    let (head, body) = message.split_at_checked(HEAD)?;
    (head[..MAGIC.len()] == MAGIC && head[MAGIC.len()] == VERSION).then_some(body)
}

/// A message of `N` bytes: the magic, the version, then `parts` (whose lengths the message
/// constants add up; the tests check each message's length).
fn message<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
    let mut out = [0u8; N];
    let bytes = MAGIC
        .iter()
        .chain(std::iter::once(&VERSION))
        .chain(parts.iter().flat_map(|part| part.iter()));
    for (slot, byte) in out.iter_mut().zip(bytes) {
        *slot = *byte;
    }
    out
}

pub(super) fn hello(root_nonce: &[u8; NONCE_BYTES]) -> [u8; HELLO_BYTES] {
    message(&[root_nonce])
}

/// Rank 0's nonce from its hello.
pub(super) fn parse_hello(bytes: &[u8; HELLO_BYTES]) -> Option<[u8; NONCE_BYTES]> {
    body(bytes)?.try_into().ok()
}

pub(super) fn proof(secret: &JobSecret, session: &Session) -> Result<[u8; PROOF_BYTES]> {
    let tag = tag(secret, RANK_PROOF, session, &[])?;
    Ok(message(&[
        &session.rank.to_le_bytes(),
        &session.rank_nonce,
        &tag,
    ]))
}

/// The session a rank's proof claims, when the proof checks out.
pub(super) fn check_proof(
    secret: &JobSecret,
    bytes: &[u8; PROOF_BYTES],
    root_nonce: [u8; NONCE_BYTES],
    world_size: u32,
) -> Option<Session> {
    let body = body(bytes)?;
    let (rank, rest) = body.split_first_chunk::<4>()?;
    let (rank_nonce, tag) = rest.split_first_chunk::<NONCE_BYTES>()?;
    let session = Session {
        root_nonce,
        rank_nonce: *rank_nonce,
        world_size,
        rank: u32::from_le_bytes(*rank),
    };
    verify(secret, RANK_PROOF, &session, &[], tag).then_some(session)
}

pub(super) fn id_message(
    secret: &JobSecret,
    session: &Session,
    id: &[u8; ID_BYTES],
) -> Result<[u8; ID_MESSAGE_BYTES]> {
    let tag = tag(secret, ROOT_PROOF, session, id)?;
    Ok(message(&[id, &tag]))
}

/// The bytes of rank 0's answer, when its proof checks out.
pub(super) fn check_id(
    secret: &JobSecret,
    bytes: &[u8; ID_MESSAGE_BYTES],
    session: &Session,
) -> Option<[u8; ID_BYTES]> {
    let (id, tag) = body(bytes)?.split_first_chunk::<ID_BYTES>()?;
    verify(secret, ROOT_PROOF, session, id, tag).then_some(*id)
}

pub(super) fn ack(secret: &JobSecret, session: &Session) -> Result<[u8; ACK_BYTES]> {
    Ok(message(&[&tag(secret, RANK_ACK, session, &[])?]))
}

/// Whether a rank's acknowledgement checks out.
pub(super) fn check_ack(secret: &JobSecret, bytes: &[u8; ACK_BYTES], session: &Session) -> bool {
    body(bytes).is_some_and(|tag| verify(secret, RANK_ACK, session, &[], tag))
}
