//! The requests' pinned host memory, kept for reuse as our reactor keeps its staging: a
//! request's input is copied into pinned memory before its upload, and its download lands in
//! pinned memory, then is copied into a `Vec` (as `upload_async` and `to_vec_async` do). A
//! copy between the device and pageable memory would hold the calling executor thread
//! (`cuMemcpyHtoDAsync` from pageable memory waits for the stream; to pageable memory it
//! returns once the copy is done), which neither side's server should pay.

use std::sync::{Arc, Mutex};

use cuda_core::{Context, PinnedHostBuffer};

use crate::server::WORDS;
use cuda_async_lab::Result;

/// One request's pinned words: its input, and its output.
#[derive(Debug)]
pub struct Staging {
    /// What the upload copies to the device.
    pub input: PinnedHostBuffer<u32>,
    /// Where the download lands.
    pub output: PinnedHostBuffer<u32>,
}

/// Staging lent to one request, with the address the download writes to, taken while the
/// request held the staging alone.
#[derive(Debug)]
pub struct Lent {
    /// The staging, shared with the operations that use it until the GPU has finished.
    pub staging: Arc<Staging>,
    /// `staging.output`'s address.
    pub output: u64,
}

/// The staging not lent now.
#[derive(Debug)]
pub struct StagingCache {
    context: Arc<Context>,
    free: Mutex<Vec<Arc<Staging>>>,
}

impl StagingCache {
    /// An empty cache of `context`'s pinned memory.
    pub fn new(context: Arc<Context>) -> Self {
        Self {
            context,
            free: Mutex::new(Vec::new()),
        }
    }

    /// Staging holding `input`: a free one, or a new one (`cuMemAllocHost`).
    pub fn lend(&self, input: &[u32]) -> Result<Lent> {
        if input.len() != WORDS {
            return Err(format!("a request of {} words, not {WORDS}", input.len()).into());
        }
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut staging = match free {
            Some(staging) => staging,
            None => Arc::new(Staging {
                input: PinnedHostBuffer::zeroed(&self.context, WORDS)?,
                output: PinnedHostBuffer::zeroed(&self.context, WORDS)?,
            }),
        };
        let unique = Arc::get_mut(&mut staging).ok_or("free staging still shared")?;
        unique.input.as_mut_slice().copy_from_slice(input);
        let output = unique.output.as_mut_ptr() as u64;
        Ok(Lent { staging, output })
    }

    /// Takes `staging` back once the GPU is done with it (the request holds it alone).
    pub fn give_back(&self, staging: Arc<Staging>) {
        if Arc::strong_count(&staging) == 1 {
            self.free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(staging);
        }
    }
}
