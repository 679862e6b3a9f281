//! The launcher's variables, the job's secret, rank 0's inherited socket, and the exchange
//! between well-behaved ranks (on loopback, without NCCL).

use std::net::TcpListener;
use std::os::fd::{AsRawFd, IntoRawFd};

use super::*;
use crate::NcclError;
use cuda_safe::Error;

/// A job's secret for the tests.
pub(super) fn secret() -> JobSecret {
    JobSecret::from_bytes(&[0x5e; 32]).unwrap()
}

/// Rank `rank` of a job of `world_size` whose rank 0 listens on `port` of 127.0.0.1.
pub(super) fn rank_env(rank: usize, world_size: usize, port: u16) -> RankEnv {
    RankEnv {
        rank,
        world_size,
        local_rank: rank,
        master_addr: "127.0.0.1".into(),
        master_port: port,
    }
}

/// A listener on a port of 127.0.0.1 the system picked, kept bound, and its port.
pub(super) fn loopback_listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// What a rank that should never make the id calls.
pub(super) fn never() -> Result<[u8; ID_BYTES]> {
    Err(Error::invalid_argument("only rank 0 makes the id"))
}

fn lookup(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |name| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    }
}

#[test]
fn reads_the_launcher_variables() {
    let env = RankEnv::from_lookup(lookup(&[
        (RANK, "3"),
        (WORLD_SIZE, "4"),
        (MASTER_ADDR, "10.0.0.1"),
        (MASTER_PORT, "29500"),
    ]))
    .unwrap();
    assert_eq!(env.rank, 3);
    assert_eq!(env.local_rank, 3, "LOCAL_RANK defaults to RANK");
    assert_eq!(env.address(), "10.0.0.1:29500");
}

#[test]
fn missing_and_invalid_variables_are_named() {
    let missing = RankEnv::from_lookup(lookup(&[(RANK, "0")])).unwrap_err();
    assert!(
        matches!(missing.library_error::<NcclError>(), Some(NcclError::Bootstrap(text)) if text.contains("WORLD_SIZE is not set")),
        "{missing}"
    );
    let bad_rank = RankEnv::from_lookup(lookup(&[
        (RANK, "two"),
        (WORLD_SIZE, "4"),
        (MASTER_ADDR, "h"),
        (MASTER_PORT, "1"),
    ]))
    .unwrap_err();
    assert!(bad_rank.to_string().contains("RANK=\"two\""), "{bad_rank}");
    let bad_port = RankEnv::from_lookup(lookup(&[
        (RANK, "0"),
        (WORLD_SIZE, "1"),
        (MASTER_ADDR, "h"),
        (MASTER_PORT, "70000"),
    ]))
    .unwrap_err();
    assert!(bad_port.to_string().contains("not a port"), "{bad_port}");
    let outside = RankEnv::from_lookup(lookup(&[
        (RANK, "2"),
        (WORLD_SIZE, "2"),
        (MASTER_ADDR, "h"),
        (MASTER_PORT, "1"),
    ]))
    .unwrap_err();
    assert!(
        outside.to_string().contains("below the world size"),
        "{outside}"
    );
    // Port 0 (the system's pick: no rank could know it) and worlds past the bound.
    let port_zero = RankEnv::from_lookup(lookup(&[
        (RANK, "1"),
        (WORLD_SIZE, "2"),
        (MASTER_ADDR, "h"),
        (MASTER_PORT, "0"),
    ]))
    .unwrap_err();
    assert!(
        matches!(port_zero.library_error::<NcclError>(), Some(NcclError::Bootstrap(text)) if text.contains("MASTER_PORT=0")),
        "{port_zero}"
    );
    for world in ["1048577", "1099511627776", "18446744073709551615"] {
        let vars: &'static [(&str, &str)] = Box::leak(Box::new([
            (RANK, "0"),
            (WORLD_SIZE, world),
            (MASTER_ADDR, "h"),
            (MASTER_PORT, "1"),
        ]));
        let huge = RankEnv::from_lookup(lookup(vars)).unwrap_err();
        assert!(
            matches!(huge.library_error::<NcclError>(), Some(NcclError::Bootstrap(text)) if text.contains("at most 1048576 ranks")),
            "{huge}"
        );
    }
}

#[test]
fn the_secret_is_hex_of_a_bounded_length_and_never_shown() {
    let secret = JobSecret::generate().unwrap();
    assert_eq!(secret.to_hex().len(), 2 * JobSecret::GENERATED_BYTES);
    assert_eq!(secret.to_hex().parse::<JobSecret>().unwrap(), secret);
    assert_ne!(JobSecret::generate().unwrap(), secret);
    assert_eq!(format!("{secret:?}"), "JobSecret(..)");
    for bad in [
        "",
        "abc",
        "zz".repeat(16).as_str(),
        "ab".repeat(15).as_str(),
        "ab".repeat(65).as_str(),
    ] {
        assert!(bad.parse::<JobSecret>().is_err(), "{bad}");
    }
    let missing = JobSecret::from_lookup(|_| None).unwrap_err();
    assert!(
        matches!(missing.library_error::<NcclError>(), Some(NcclError::Bootstrap(text)) if text.contains("CUDA_SAFE_NCCL_SECRET is not set")),
        "{missing}"
    );
    let hex = secret.to_hex();
    let found = JobSecret::from_lookup(|name| (name == SECRET).then(|| hex.clone())).unwrap();
    assert_eq!(found, secret);
}

#[test]
fn a_hand_made_env_outside_the_world_is_refused_before_the_exchange() {
    let mut env = RankEnv {
        rank: 0,
        world_size: 0,
        local_rank: 0,
        master_addr: "127.0.0.1".into(),
        master_port: 1,
    };
    // Rank 0 of no ranks once served `world_size - 1` peers: an overflow panic.
    let error = env
        .exchange_unique_id(Duration::from_millis(10))
        .unwrap_err();
    assert!(
        matches!(error.library_error::<NcclError>(), Some(NcclError::Bootstrap(text)) if text.contains("below the world size")),
        "{error}"
    );
    env.world_size = 2;
    env.rank = 2;
    assert!(env.exchange_unique_id(Duration::from_millis(10)).is_err());
}

#[test]
fn the_id_travels_from_rank_zero_to_the_others() {
    let (listener, port) = loopback_listener();
    let id = [42u8; ID_BYTES];
    let deadline = Deadline::after(Duration::from_secs(20));
    let fetchers: Vec<_> = (1..3)
        .map(|rank| {
            std::thread::spawn(move || {
                rank_env(rank, 3, port).exchange_bytes(&secret(), deadline, never)
            })
        })
        .collect();
    let outcome = root::serve(&listener, &secret(), 3, &id, &deadline).unwrap();
    assert_eq!(
        outcome,
        root::Outcome {
            served: 2,
            refused: 0
        }
    );
    for fetcher in fetchers {
        assert_eq!(fetcher.join().unwrap().unwrap(), id);
    }
}

#[test]
fn a_job_of_one_rank_exchanges_nothing() {
    let made = rank_env(0, 1, 1)
        .exchange_bytes(
            &secret(),
            Deadline::after(Duration::from_millis(10)),
            || Ok([9; ID_BYTES]),
        )
        .unwrap();
    assert_eq!(made, [9; ID_BYTES]);
}

#[test]
fn a_missing_rank_zero_times_out() {
    let (listener, port) = loopback_listener();
    drop(listener); // nothing listens there now: connections are refused
    let deadline = Deadline::after(Duration::from_millis(100));
    let error = rank_env(1, 2, port)
        .exchange_bytes(&secret(), deadline, never)
        .unwrap_err();
    assert!(
        error.to_string().contains("no unique id from rank 0"),
        "{error}"
    );
}

#[test]
fn rank_zero_takes_the_socket_its_launcher_handed_down_once() {
    let (listener, port) = loopback_listener();
    let file = tempfile::tempfile().unwrap();
    for (value, why) in [
        ("seven", "not a descriptor number"),
        ("1", "not a descriptor number"),
        (
            &file.as_raw_fd().to_string()[..],
            "no listening stream socket",
        ),
    ] {
        let error = listen::inherited(value, port).unwrap_err();
        assert!(error.to_string().contains(why), "{value}: {error}");
    }
    // A listening socket on another port is not the launcher's, and stays open.
    let (other, _) = loopback_listener();
    let other_fd = other.as_raw_fd();
    let error = listen::inherited(&other_fd.to_string(), port).unwrap_err();
    assert!(error.to_string().contains("MASTER_PORT"), "{error}");
    assert!(other.local_addr().is_ok());
    // The launcher's (here a duplicate of the test's listener): taken, once.
    let handed = listener.try_clone().unwrap().into_raw_fd();
    let taken = listen::inherited(&handed.to_string(), port).unwrap();
    assert_eq!(taken.local_addr().unwrap().port(), port);
    let again = listen::inherited(&listener.as_raw_fd().to_string(), port).unwrap_err();
    assert!(again.to_string().contains("took it already"), "{again}");
}

#[test]
fn each_message_has_its_length_and_no_proof_passes_for_another() {
    use super::wire::{
        ACK_BYTES, HELLO_BYTES, ID_MESSAGE_BYTES, PROOF_BYTES, Session, ack, check_ack, check_id,
        check_proof, hello, id_message, parse_hello, proof,
    };
    let session = Session {
        root_nonce: [1; 32],
        rank_nonce: [2; 32],
        world_size: 4,
        rank: 3,
    };
    let hello = hello(&session.root_nonce);
    assert_eq!(
        (hello.len(), parse_hello(&hello)),
        (HELLO_BYTES, Some([1; 32]))
    );
    let proof = proof(&secret(), &session).unwrap();
    assert_eq!(proof.len(), PROOF_BYTES);
    let claimed = check_proof(&secret(), &proof, session.root_nonce, 4).unwrap();
    assert_eq!((claimed.rank, claimed.rank_nonce), (3, [2; 32]));
    let answer = id_message(&secret(), &session, &[8; ID_BYTES]).unwrap();
    assert_eq!(answer.len(), ID_MESSAGE_BYTES);
    assert_eq!(check_id(&secret(), &answer, &session), Some([8; ID_BYTES]));
    let acknowledgement = ack(&secret(), &session).unwrap();
    assert_eq!(acknowledgement.len(), ACK_BYTES);
    assert!(check_ack(&secret(), &acknowledgement, &session));
    // Another secret, another nonce of rank 0, another world: the proof fails.
    let other = JobSecret::from_bytes(&[0x5f; 32]).unwrap();
    assert!(check_proof(&other, &proof, session.root_nonce, 4).is_none());
    assert!(check_proof(&secret(), &proof, [9; 32], 4).is_none());
    assert!(check_proof(&secret(), &proof, session.root_nonce, 5).is_none());
    // A changed id fails rank 0's proof; one step's proof is not another's.
    let mut changed = answer;
    changed[10] ^= 1;
    assert_eq!(check_id(&secret(), &changed, &session), None);
    let mut reflected = [0u8; ACK_BYTES];
    reflected[..5].copy_from_slice(&acknowledgement[..5]);
    reflected[5..].copy_from_slice(&proof[PROOF_BYTES - 32..]);
    assert!(!check_ack(&secret(), &reflected, &session));
}
