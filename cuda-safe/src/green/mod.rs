//! Green contexts: partition a GPU's SMs between jobs, each with guaranteed, isolated SMs.
//!
//! ```no_run
//! use cuda_safe::{Device, GreenContextOptions, SplitRequest};
//!
//! let device = Device::new(0)?;
//! let all = device.resources().sm()?;
//! println!("{} SMs; {:?}", all.sm_count(), all.rules()?);
//! // Two equal halves; on an H200 (132 SMs, groups in multiples of 8): 2 x 64, 4 left over.
//! let split = all.split(&SplitRequest::equal(2, 64))?;
//! let left = device.create_green_context(&split.groups[0], GreenContextOptions::default())?;
//! let right = device.create_green_context(&split.groups[1], GreenContextOptions::default())?;
//! assert!(left.is_green());
//! let stream = right.create_stream(Default::default())?; // runs on the right half only
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! A request the hardware cannot meet exactly is an error that says what it can give (asking
//! for 2 x 66 of 132 SMs on sm_90 gives "2 x 64 with 4 left") unless the request opts into
//! rounding; a split never returns fewer groups than asked (the driver's layout can make fewer
//! groups than plain division: an H200 has room for 15 groups of 8 SMs, not 16, and asking for
//! 16 is an error saying so).

mod foreign;
mod plan;
mod resources;
mod stream;
mod workqueue;

pub use plan::{GroupLayout, PartitionRules, SplitPlan, SplitRequest};
pub use resources::{DeviceResources, SmResource, SmSplit};
pub use workqueue::{WorkqueueConfig, WorkqueueScope};

use crate::abi;
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result};

/// Options of a green context.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct GreenContextOptions {
    /// A workqueue configuration to provision with the SMs.
    pub workqueue: Option<WorkqueueConfig>,
}

crate::setters::setters! {
    impl GreenContextOptions {
        workqueue: some WorkqueueConfig,
    }
}

impl Device {
    /// The device's resources, for green contexts.
    pub fn resources(&self) -> DeviceResources {
        DeviceResources::of_device(self)
    }

    /// A green context owning the SMs of `sm` (a group of a split of this device's SMs).
    ///
    #[doc = cuda_sys::api_doc!(cuGreenCtxCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `sm` belongs to another device; the driver's error when
    /// it cannot make the context.
    #[doc(alias = "cuGreenCtxCreate")]
    pub fn create_green_context(
        &self,
        sm: &SmResource,
        options: GreenContextOptions,
    ) -> Result<Context> {
        if sm.device() != self {
            return Err(Error::invalid_argument(
                "the SM resource belongs to another device",
            ));
        }
        let mut resources = vec![*sm.as_raw()];
        if let Some(workqueue) = options.workqueue {
            resources.push(*workqueue.as_raw());
        }
        Context::create_green(self, &mut resources, sm.sm_count())
    }
}

impl Context {
    /// The resources of this context (for a green context, its own SMs).
    #[doc = cuda_sys::api_doc!(cuCtxGetDevResource)]
    #[doc(alias = "cuCtxGetDevResource")]
    pub fn resources(&self) -> DeviceResources {
        DeviceResources::of_context(self)
    }

    /// The green context's unique id in this process (`None` for a primary context), the
    /// number another library's green context reports for the same context, so two wrappers
    /// can be told to name the same partition.
    ///
    /// Calls [`cuGreenCtxGetId`][cuGreenCtxGetId] (in the CUDA 13 bindings only). Needs a
    /// CUDA 12.9 driver.
    ///
    /// [cuGreenCtxGetId]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GREEN__CONTEXTS.html#group__CUDA__GREEN__CONTEXTS_1g2e073a7cde154f4fee132f8efd879b9c
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] under the `cuda-12` ABI, or naming the CUDA release that
    /// introduced `cuGreenCtxGetId` when the driver lacks it; the driver's error.
    #[doc(alias = "cuGreenCtxGetId")]
    pub fn green_id(&self) -> Result<Option<u64>> {
        match self.as_raw_green() {
            Some(green) => abi::green_context_id(self.driver(), green).map(Some),
            None => Ok(None),
        }
    }
}
