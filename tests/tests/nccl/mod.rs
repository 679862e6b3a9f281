//! Collectives on NCCL across two GPUs (feature `nccl`): every collective for several types
//! and sizes (0 and odd counts included), in place and not, in one process
//! (`ncclCommInitAll`, group calls) and in two (this binary re-run as rank processes through
//! the crate's launcher, env-bootstrapped); send/receive; split communicators; the checks made
//! before NCCL; and a dead peer: one rank process exits mid-way, the other sees an error and
//! aborts within its timeout.
//!
//! Each test needs two GPUs (`cuda_gpu_tests::devices(2)`): it skips with the reason on fewer,
//! and fails instead under `CUDA_SAFE_REQUIRE_GPUS=2`. The rank processes check that they
//! inherited the parent's `NCCL_NVLS_ENABLE` (the scripts of our GPU machines export 0; the
//! crate itself sets none of NCCL's variables).

mod ranks;

use std::fmt::Debug;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use cuda_gpu_tests::{GpuFile, devices, gpu_file};
use cuda_safe::{Buffer, Device, Error, Stream};
use cuda_safe_nccl::{self as nccl, Communicator, NcclType, ReduceOp};

/// How long anything here may wait for NCCL or a rank process.
const TIMEOUT: Duration = Duration::from_secs(120);

/// One test at a time: communicators of concurrent tests on the same GPUs can deadlock each
/// other's kernels, so each test holds this while it runs.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Element types whose small integers are exact (f16 and bf16 too, below 256).
trait Value: NcclType + PartialEq + Debug {
    fn of(value: u32) -> Self;
}

macro_rules! values {
    ($($ty:ty => $convert:expr,)*) => {$(
        impl Value for $ty {
            fn of(value: u32) -> Self {
                $convert(value)
            }
        }
    )*};
}

values! {
    f32 => |v| v as f32,
    f64 => |v| v as f64,
    half::f16 => |v| half::f16::from_f32(v as f32),
    half::bf16 => |v| half::bf16::from_f32(v as f32),
    i32 => |v| v as i32,
    u8 => |v| v as u8,
    i64 => |v| v as i64,
    u32 => |v| v,
}

/// Rank `rank`'s element `index`: small, different per rank and per place.
fn element(rank: usize, index: usize) -> u32 {
    (index % 50) as u32 + rank as u32 + 1
}

/// Two communicators of this process, one per GPU, and a stream on each.
struct Ranks {
    devices: Vec<Device>,
    comms: Vec<Communicator>,
    streams: Vec<Stream>,
}

fn ranks() -> Option<Ranks> {
    let devices = devices(2)?;
    let comms = Communicator::init_all(&devices).expect("ncclCommInitAll");
    let streams = devices
        .iter()
        .map(|device| device.create_stream(Default::default()).unwrap())
        .collect();
    Some(Ranks {
        devices,
        comms,
        streams,
    })
}

impl Ranks {
    /// Rank `rank`'s buffer holding `values`.
    fn upload<T: Value>(&self, rank: usize, values: &[T]) -> Buffer {
        self.devices[rank]
            .default_memory_resource()
            .unwrap()
            .allocate_from_host(values, &self.streams[rank])
            .unwrap()
    }

    fn filled<T: Value>(&self, rank: usize, count: usize) -> Buffer {
        let values: Vec<T> = (0..count).map(|i| T::of(element(rank, i))).collect();
        self.upload(rank, &values)
    }

    fn zeroed<T: Value>(&self, rank: usize, count: usize) -> Buffer {
        self.upload(rank, &vec![T::of(0); count])
    }

    /// Each rank's communicator and stream.
    fn each(&self) -> impl Iterator<Item = (&Communicator, &Stream)> {
        self.comms.iter().zip(&self.streams)
    }

    fn sync(&self) {
        for (comm, stream) in self.comms.iter().zip(&self.streams) {
            comm.wait_with_timeout(stream, TIMEOUT).unwrap();
        }
    }
}

const COUNTS: [usize; 5] = [0, 1, 7, 1000, 4097];

fn all_reduce_of<T: Value>(ranks: &Ranks) {
    for count in COUNTS {
        let sends: Vec<Buffer> = (0..2).map(|rank| ranks.filled::<T>(rank, count)).collect();
        let mut recvs: Vec<Buffer> = (0..2).map(|rank| ranks.zeroed::<T>(rank, count)).collect();
        let mut in_place: Vec<Buffer> = (0..2).map(|rank| ranks.filled::<T>(rank, count)).collect();
        nccl::group(|group| {
            let each = ranks.each().zip(&sends).zip(&mut recvs).zip(&mut in_place);
            for ((((comm, stream), send), recv), in_place) in each {
                group.all_reduce::<T>(comm, send, recv, ReduceOp::Sum, stream)?;
                group.all_reduce_in_place::<T>(comm, in_place, ReduceOp::Max, stream)?;
            }
            Ok(())
        })
        .unwrap();
        ranks.sync();
        let sum: Vec<T> = (0..count)
            .map(|i| T::of(element(0, i) + element(1, i)))
            .collect();
        let max: Vec<T> = (0..count).map(|i| T::of(element(1, i))).collect();
        for rank in 0..2 {
            assert_eq!(
                recvs[rank].to_vec::<T>().unwrap(),
                sum,
                "sum, count {count}"
            );
            assert_eq!(
                in_place[rank].to_vec::<T>().unwrap(),
                max,
                "max, count {count}"
            );
        }
    }
}

fn all_reduce_is_right_for_every_type_and_size() {
    let _serial = serial();
    let Some(ranks) = ranks() else { return };
    all_reduce_of::<f32>(&ranks);
    all_reduce_of::<f64>(&ranks);
    all_reduce_of::<half::f16>(&ranks);
    all_reduce_of::<half::bf16>(&ranks);
    all_reduce_of::<i32>(&ranks);
    all_reduce_of::<u8>(&ranks);
    all_reduce_of::<i64>(&ranks);
}

fn rooted_and_gathering_collectives_of<T: Value>(ranks: &Ranks) {
    for count in COUNTS {
        // Broadcast from rank 1, and in place from rank 0.
        let sends: Vec<Buffer> = (0..2).map(|rank| ranks.filled::<T>(rank, count)).collect();
        let mut recvs: Vec<Buffer> = (0..2).map(|rank| ranks.zeroed::<T>(rank, count)).collect();
        let mut in_place: Vec<Buffer> = (0..2).map(|rank| ranks.filled::<T>(rank, count)).collect();
        let mut reduced: Vec<Buffer> = (0..2).map(|rank| ranks.zeroed::<T>(rank, count)).collect();
        nccl::group(|group| {
            let each = ranks.each().zip(&sends).zip(&mut recvs);
            let each = each.zip(&mut in_place).zip(&mut reduced);
            for (((((comm, stream), send), recv), in_place), reduced) in each {
                group.broadcast::<T>(comm, send, recv, 1, stream)?;
                group.broadcast_in_place::<T>(comm, in_place, 0, stream)?;
                group.reduce::<T>(comm, send, reduced, ReduceOp::Sum, 0, stream)?;
            }
            Ok(())
        })
        .unwrap();
        ranks.sync();
        let of = |rank: usize| -> Vec<T> { (0..count).map(|i| T::of(element(rank, i))).collect() };
        let sum: Vec<T> = (0..count)
            .map(|i| T::of(element(0, i) + element(1, i)))
            .collect();
        for rank in 0..2 {
            assert_eq!(
                recvs[rank].to_vec::<T>().unwrap(),
                of(1),
                "broadcast {count}"
            );
            assert_eq!(
                in_place[rank].to_vec::<T>().unwrap(),
                of(0),
                "in place {count}"
            );
        }
        assert_eq!(reduced[0].to_vec::<T>().unwrap(), sum, "reduce {count}");

        // All-gather: each rank sends `count`, receives 2 x `count`; in place, the own part
        // sits at rank x count.
        let mut gathered: Vec<Buffer> = (0..2)
            .map(|rank| ranks.zeroed::<T>(rank, 2 * count))
            .collect();
        let mut gathered_in_place: Vec<Buffer> = (0..2)
            .map(|rank| {
                let mut values = vec![T::of(0); 2 * count];
                for i in 0..count {
                    values[rank * count + i] = T::of(element(rank, i));
                }
                ranks.upload(rank, &values)
            })
            .collect();
        // Reduce-scatter: each rank sends 2 x `count`, receives `count`.
        let wide: Vec<Buffer> = (0..2)
            .map(|rank| ranks.filled::<T>(rank, 2 * count))
            .collect();
        let mut scattered: Vec<Buffer> =
            (0..2).map(|rank| ranks.zeroed::<T>(rank, count)).collect();
        let mut scattered_in_place: Vec<Buffer> = (0..2)
            .map(|rank| ranks.filled::<T>(rank, 2 * count))
            .collect();
        nccl::group(|group| {
            let each = ranks.each().zip(&sends).zip(&mut gathered);
            let each = each.zip(&mut gathered_in_place).zip(&wide);
            let each = each.zip(&mut scattered).zip(&mut scattered_in_place);
            for (
                ((((((comm, stream), send), gathered), in_place), wide), scattered),
                scattered_in_place,
            ) in each
            {
                group.all_gather::<T>(comm, send, gathered, stream)?;
                group.all_gather_in_place::<T>(comm, in_place, stream)?;
                group.reduce_scatter::<T>(comm, wide, scattered, ReduceOp::Sum, stream)?;
                group.reduce_scatter_in_place::<T>(
                    comm,
                    scattered_in_place,
                    ReduceOp::Sum,
                    stream,
                )?;
            }
            Ok(())
        })
        .unwrap();
        ranks.sync();
        let both: Vec<T> = of(0).into_iter().chain(of(1)).collect();
        let wide_sum = |i: usize| T::of(element(0, i) + element(1, i));
        for rank in 0..2 {
            assert_eq!(
                gathered[rank].to_vec::<T>().unwrap(),
                both,
                "all-gather {count}"
            );
            assert_eq!(
                gathered_in_place[rank].to_vec::<T>().unwrap(),
                both,
                "all-gather in place {count}"
            );
            let part: Vec<T> = (rank * count..(rank + 1) * count).map(wide_sum).collect();
            assert_eq!(
                scattered[rank].to_vec::<T>().unwrap(),
                part,
                "reduce-scatter {count}"
            );
            let in_place = scattered_in_place[rank].to_vec::<T>().unwrap();
            assert_eq!(
                &in_place[rank * count..(rank + 1) * count],
                part.as_slice(),
                "reduce-scatter in place {count}"
            );
        }
    }
}

fn broadcast_reduce_gather_and_scatter_are_right() {
    let _serial = serial();
    let Some(ranks) = ranks() else { return };
    rooted_and_gathering_collectives_of::<f32>(&ranks);
    rooted_and_gathering_collectives_of::<i32>(&ranks);
    rooted_and_gathering_collectives_of::<half::bf16>(&ranks);
    rooted_and_gathering_collectives_of::<u8>(&ranks);
}

fn send_and_receive_swap_buffers() {
    let _serial = serial();
    let Some(ranks) = ranks() else { return };
    for count in [0, 1, 4097] {
        let sends: Vec<Buffer> = (0..2)
            .map(|rank| ranks.filled::<u32>(rank, count))
            .collect();
        let mut recvs: Vec<Buffer> = (0..2)
            .map(|rank| ranks.zeroed::<u32>(rank, count))
            .collect();
        nccl::group(|group| {
            for (rank, (((comm, stream), send), recv)) in
                ranks.each().zip(&sends).zip(&mut recvs).enumerate()
            {
                group.send::<u32>(comm, send, 1 - rank, stream)?;
                group.recv::<u32>(comm, recv, 1 - rank, stream)?;
            }
            Ok(())
        })
        .unwrap();
        ranks.sync();
        for (rank, recv) in recvs.iter().enumerate() {
            let expected: Vec<u32> = (0..count).map(|i| element(1 - rank, i)).collect();
            assert_eq!(recv.to_vec::<u32>().unwrap(), expected);
        }
    }
}

fn split_communicators_work_on_their_own() {
    let _serial = serial();
    let Some(ranks) = ranks() else { return };
    // Each rank alone (color = its rank), and both together in reverse order (key).
    let alone = Communicator::split_all(&ranks.comms, &[(Some(0), 0), (Some(1), 0)], None).unwrap();
    for comm in &alone {
        let comm = comm.as_ref().expect("each rank has a color");
        assert_eq!(comm.size().unwrap(), 1);
        assert_eq!(comm.rank().unwrap(), 0);
    }
    // A rank without a color gets no communicator.
    let one = Communicator::split_all(&ranks.comms, &[(Some(3), 0), (None, 0)], None).unwrap();
    assert!(one[1].is_none());
    assert_eq!(one[0].as_ref().unwrap().size().unwrap(), 1);
    // Ranks of one thread cannot split one by one inside a group: NCCL hands the new
    // communicator back only at the group's end.
    let refused = nccl::group(|_| ranks.comms[0].split(Some(1), 0, None)).unwrap_err();
    assert!(
        matches!(refused, cuda_safe::Error::InvalidArgument(_)),
        "{refused}"
    );
    let reversed =
        Communicator::split_all(&ranks.comms, &[(Some(7), 0), (Some(7), -1)], None).unwrap();
    let reversed: Vec<Communicator> = reversed.into_iter().map(Option::unwrap).collect();
    assert_eq!(reversed[0].rank().unwrap(), 1);
    assert_eq!(reversed[1].rank().unwrap(), 0);
    let mut buffers: Vec<Buffer> = (0..2).map(|rank| ranks.filled::<f32>(rank, 33)).collect();
    nccl::group(|group| {
        for ((comm, buffer), stream) in reversed.iter().zip(&mut buffers).zip(&ranks.streams) {
            group.all_reduce_in_place::<f32>(comm, buffer, ReduceOp::Sum, stream)?;
        }
        Ok(())
    })
    .unwrap();
    for (comm, stream) in reversed.iter().zip(&ranks.streams) {
        comm.wait_with_timeout(stream, TIMEOUT).unwrap();
    }
    let sum: Vec<f32> = (0..33)
        .map(|i| (element(0, i) + element(1, i)) as f32)
        .collect();
    assert_eq!(buffers[1].to_vec::<f32>().unwrap(), sum);
    // No color: no communicator, on both ranks.
    let none = Communicator::split_all(&ranks.comms, &[(None, 0), (None, 0)], None).unwrap();
    assert!(none.iter().all(Option::is_none));
    for comm in reversed
        .into_iter()
        .chain(alone.into_iter().flatten())
        .chain(one.into_iter().flatten())
    {
        comm.close().unwrap();
    }
}

fn mismatches_are_refused_before_nccl() {
    let _serial = serial();
    let Some(ranks) = ranks() else { return };
    let send = ranks.filled::<f32>(0, 8);
    let mut short = ranks.zeroed::<f32>(0, 15);
    // All-gather's receive buffer is send x ranks.
    let error = ranks.comms[0]
        .all_gather::<f32>(&send, &mut short, &ranks.streams[0])
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    // Memory of the other GPU.
    let mut elsewhere = ranks.filled::<f32>(1, 8);
    let error = ranks.comms[0]
        .all_reduce_in_place::<f32>(&mut elsewhere, ReduceOp::Sum, &ranks.streams[0])
        .unwrap_err();
    assert!(error.to_string().contains("device"), "{error}");
    // A root past the last rank.
    let mut buffer = ranks.filled::<f32>(0, 8);
    assert!(
        ranks.comms[0]
            .broadcast_in_place::<f32>(&mut buffer, 2, &ranks.streams[0])
            .is_err()
    );
    // Rank 1 asks for another count than rank 0: refused when recorded, then the right call
    // completes the group.
    let mut buffers: Vec<Buffer> = (0..2).map(|rank| ranks.filled::<f32>(rank, 16)).collect();
    let mut short = ranks.filled::<f32>(1, 8);
    let mut spare = ranks.filled::<f32>(1, 16);
    let (first, second) = buffers.split_at_mut(1);
    let (comms, streams) = (&ranks.comms, &ranks.streams);
    nccl::group(|group| {
        group.all_reduce_in_place::<f32>(&comms[0], &mut first[0], ReduceOp::Sum, &streams[0])?;
        let refused =
            group.all_reduce_in_place::<f32>(&comms[1], &mut short, ReduceOp::Sum, &streams[1]);
        assert!(
            matches!(&refused, Err(Error::InvalidArgument(text)) if text.contains("rank 1 calls")),
            "{refused:?}"
        );
        // The communicator's own call is refused inside a group, naming the Group's.
        let direct = comms[1].all_reduce_in_place::<f32>(&mut spare, ReduceOp::Sum, &streams[1]);
        assert!(
            matches!(&direct, Err(Error::InvalidArgument(text)) if text.contains("Group::all_reduce_in_place")),
            "{direct:?}"
        );
        group.all_reduce_in_place::<f32>(&comms[1], &mut second[0], ReduceOp::Sum, &streams[1])
    })
    .unwrap();
    ranks.sync();
    let sum: Vec<f32> = (0..16)
        .map(|i| (element(0, i) + element(1, i)) as f32)
        .collect();
    assert_eq!(buffers[1].to_vec::<f32>().unwrap(), sum);
}

/// A refused group queues nothing: neither a group whose closure passed a refusal on, nor one
/// whose ranks made different numbers of calls. Had rank 0's all-reduce reached NCCL, it would
/// wait on the GPU for rank 1 (and the next group's sums would be wrong or hang).
fn a_refused_group_queues_nothing() {
    let _serial = serial();
    let Some(ranks) = ranks() else { return };
    let (comms, streams) = (&ranks.comms, &ranks.streams);
    let mut buffers: Vec<Buffer> = (0..2).map(|rank| ranks.filled::<f32>(rank, 16)).collect();
    let mut short = ranks.filled::<f32>(1, 8);
    let (first, second) = buffers.split_at_mut(1);
    let passed_on = nccl::group(|group| {
        group.all_reduce_in_place::<f32>(&comms[0], &mut first[0], ReduceOp::Sum, &streams[0])?;
        group.all_reduce_in_place::<f32>(&comms[1], &mut short, ReduceOp::Sum, &streams[1])
    })
    .unwrap_err();
    assert!(
        matches!(&passed_on, Error::InvalidArgument(text) if text.contains("rank 1 calls")),
        "{passed_on}"
    );
    let incomplete = nccl::group(|group| {
        group.all_reduce_in_place::<f32>(&comms[0], &mut first[0], ReduceOp::Sum, &streams[0])?;
        // The refusal ignored: rank 1 makes no call in this group.
        let _ = group.all_reduce_in_place::<f32>(&comms[1], &mut short, ReduceOp::Sum, &streams[1]);
        Ok(())
    })
    .unwrap_err();
    assert!(
        matches!(&incomplete, Error::InvalidArgument(text) if text.contains("rank 1 of an all-GPU")),
        "{incomplete}"
    );
    ranks.sync();
    let own: Vec<f32> = (0..16).map(|i| element(0, i) as f32).collect();
    assert_eq!(first[0].to_vec::<f32>().unwrap(), own, "nothing was queued");
    // The ranks are still level: a matching group sums once.
    nccl::group(|group| {
        group.all_reduce_in_place::<f32>(&comms[0], &mut first[0], ReduceOp::Sum, &streams[0])?;
        group.all_reduce_in_place::<f32>(&comms[1], &mut second[0], ReduceOp::Sum, &streams[1])
    })
    .unwrap();
    ranks.sync();
    let sum: Vec<f32> = (0..16)
        .map(|i| (element(0, i) + element(1, i)) as f32)
        .collect();
    assert_eq!(buffers[0].to_vec::<f32>().unwrap(), sum);
    assert_eq!(buffers[1].to_vec::<f32>().unwrap(), sum);
}

fn two_processes_reduce_and_broadcast() {
    let _serial = serial();
    if devices(2).is_none() {
        return;
    }
    let statuses = ranks::run_ranks("collectives");
    assert!(
        statuses.iter().all(|status| status.success()),
        "{statuses:?}"
    );
}

fn a_dead_peer_is_detected_and_aborted() {
    let _serial = serial();
    if devices(2).is_none() {
        return;
    }
    let statuses = ranks::run_ranks("dead-peer");
    // Rank 0 passes only when its wait ended in an NCCL error or the timeout (it aborted).
    assert!(statuses[0].success(), "rank 0: {:?}", statuses[0]);
}

pub(crate) use ranks::child_part;

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    all_reduce_is_right_for_every_type_and_size,
    broadcast_reduce_gather_and_scatter_are_right,
    send_and_receive_swap_buffers,
    split_communicators_work_on_their_own,
    mismatches_are_refused_before_nccl,
    a_refused_group_queues_nothing,
    two_processes_reduce_and_broadcast,
    a_dead_peer_is_detected_and_aborted,
];
