//! The rendezvous against hostile peers on loopback, each case bounded in time and ending in
//! a typed error: a stranger that connects first (and one that stalls, and a crowd), a rank
//! with the wrong secret, a squatter on rank 0's port (speaking the exchange or not), a slow
//! rank 0, and a stranger trickling bytes at rank 0.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::secret::JobSecret;
use super::tests::{loopback_listener, never, rank_env, secret};
use super::wire::{HELLO_BYTES, ID_BYTES, ID_MESSAGE_BYTES, PROOF_BYTES, hello};
use super::{Deadline, root};
use crate::NcclError;
use cuda_safe::{Error, Result};

const ID: [u8; ID_BYTES] = [0x1d; ID_BYTES];

/// Rank 0 of a job of `world_size` serving [`ID`] on `listener` in a thread.
fn rank_zero(
    listener: TcpListener,
    world_size: u32,
    timeout: Duration,
) -> JoinHandle<Result<root::Outcome>> {
    std::thread::spawn(move || {
        root::serve(
            &listener,
            &secret(),
            world_size,
            &ID,
            &Deadline::after(timeout),
        )
    })
}

/// Asserts that `took` ran at least `timeout` and ended well before a trickle could have
/// stretched it.
fn within(took: Duration, timeout: Duration) {
    assert!(took >= timeout, "gave up early: {took:?}");
    assert!(took < timeout + Duration::from_secs(2), "took {took:?}");
}

fn bootstrap_text(error: &Error) -> &str {
    match error.library_error::<NcclError>() {
        Some(NcclError::Bootstrap(text)) => text,
        _ => panic!("expected NcclError::Bootstrap, got {error:?}"),
    }
}

/// Everything a connection to `port` hears before rank 0 drops it, after sending `send` and
/// closing its side.
fn stranger_hears(port: u16, send: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(send).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut heard = Vec::new();
    let _ = stream.read_to_end(&mut heard);
    heard
}

#[test]
fn a_stranger_that_connects_first_learns_nothing_and_takes_no_slot() {
    let (listener, port) = loopback_listener();
    let server = rank_zero(listener, 2, Duration::from_secs(10));
    // A port scan, then a stranger with a made-up proof: each hears rank 0's hello (a nonce)
    // and nothing more, and is dropped.
    assert_eq!(stranger_hears(port, &[]).len(), HELLO_BYTES);
    assert_eq!(
        stranger_hears(port, &[0xAB; PROOF_BYTES]).len(),
        HELLO_BYTES
    );
    // One that connects and stalls holds up no one while it stays.
    let staller = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let started = Instant::now();
    let id = rank_env(1, 2, port)
        .exchange_bytes(&secret(), Deadline::after(Duration::from_secs(10)), never)
        .unwrap();
    assert_eq!(id, ID);
    let outcome = server.join().unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.served, 1);
    assert!(outcome.refused >= 2, "{outcome:?}");
    drop(staller);
}

#[test]
fn a_rank_with_another_secret_is_dropped_and_the_real_rank_still_joins() {
    let (listener, port) = loopback_listener();
    let server = rank_zero(listener, 2, Duration::from_secs(10));
    let impostor = JobSecret::from_bytes(&[0x77; 32]).unwrap();
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let error = rank_env(1, 2, port)
        .exchange_bytes(&impostor, Deadline::after(timeout), never)
        .unwrap_err();
    within(started.elapsed(), timeout);
    assert!(bootstrap_text(&error).contains("secret differs"), "{error}");
    let id = rank_env(1, 2, port)
        .exchange_bytes(&secret(), Deadline::after(Duration::from_secs(10)), never)
        .unwrap();
    assert_eq!(id, ID);
    let outcome = server.join().unwrap().unwrap();
    assert_eq!(outcome.served, 1);
    assert!(outcome.refused >= 1);
}

#[test]
fn a_crowd_of_stalling_strangers_does_not_keep_the_real_rank_out() {
    let (listener, port) = loopback_listener();
    let server = rank_zero(listener, 2, Duration::from_secs(20));
    let crowd: Vec<TcpStream> = (0..root::MAX_PENDING + 8)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let id = rank_env(1, 2, port)
        .exchange_bytes(&secret(), Deadline::after(Duration::from_secs(20)), never)
        .unwrap();
    assert_eq!(id, ID);
    assert_eq!(server.join().unwrap().unwrap().served, 1);
    drop(crowd);
}

/// A process squatting on a port: it answers every connection with `answer` (given the
/// bytes the rank sent) until stopped.
struct Squatter {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Squatter {
    fn new(answer: fn(&mut TcpStream)) -> Self {
        let (listener, port) = loopback_listener();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            // Bounded: the tests stop it within seconds; it gives up after 30 s regardless.
            let end = Instant::now() + Duration::from_secs(30);
            while !stopped.load(Ordering::SeqCst) && Instant::now() < end {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                        answer(&mut stream);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Squatter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_squatter_that_hands_out_bytes_at_once_is_not_believed() {
    // The old exchange: 128 bytes as soon as a rank connects.
    let squatter = Squatter::new(|stream| {
        let _ = stream.write_all(&[0x66; ID_BYTES]);
    });
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let error = rank_env(1, 2, squatter.port)
        .exchange_bytes(&secret(), Deadline::after(timeout), never)
        .unwrap_err();
    within(started.elapsed(), timeout);
    assert!(
        bootstrap_text(&error).contains("does not speak this exchange"),
        "{error}"
    );
}

#[test]
fn a_squatter_that_speaks_the_exchange_cannot_prove_itself_rank_zero() {
    // It greets, reads the rank's proof, and answers with an id and a made-up proof.
    let squatter = Squatter::new(|stream| {
        let _ = stream.write_all(&hello(&[3; 32]));
        let mut proof = [0u8; PROOF_BYTES];
        if stream.read_exact(&mut proof).is_ok() {
            let mut answer = [0x66u8; ID_MESSAGE_BYTES];
            answer[..5].copy_from_slice(b"CSNB\x01");
            let _ = stream.write_all(&answer);
        }
    });
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let error = rank_env(1, 2, squatter.port)
        .exchange_bytes(&secret(), Deadline::after(timeout), never)
        .unwrap_err();
    within(started.elapsed(), timeout);
    assert!(
        bootstrap_text(&error).contains("failed rank 0's proof"),
        "{error}"
    );
}

#[test]
fn a_slow_rank_zero_cannot_stretch_the_deadline() {
    // One byte of the hello every 40 ms: each within any per-read timeout, the whole never
    // within the deadline.
    let squatter = Squatter::new(|stream| {
        for byte in hello(&[5; 32]) {
            std::thread::sleep(Duration::from_millis(40));
            if stream.write_all(&[byte]).is_err() {
                return;
            }
        }
    });
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let error = rank_env(1, 2, squatter.port)
        .exchange_bytes(&secret(), Deadline::after(timeout), never)
        .unwrap_err();
    within(started.elapsed(), timeout);
    assert!(
        bootstrap_text(&error).contains("deadline passed"),
        "{error}"
    );
}

#[test]
fn a_stranger_trickling_at_rank_zero_cannot_stretch_its_deadline() {
    let (listener, port) = loopback_listener();
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let server = rank_zero(listener, 2, timeout);
    let trickler = std::thread::spawn(move || {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
            return;
        };
        for _ in 0..PROOF_BYTES {
            std::thread::sleep(Duration::from_millis(40));
            if stream.write_all(&[0]).is_err() {
                return;
            }
        }
    });
    let error = server.join().unwrap().unwrap_err();
    within(started.elapsed(), timeout);
    assert!(
        bootstrap_text(&error).contains("handed the id to 0 of the 1 other ranks"),
        "{error}"
    );
    trickler.join().unwrap();
}
