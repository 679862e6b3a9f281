//! What a graph needs of the cuDNN and the GPU that run it ([`Needs`]): the builders of fused
//! patterns record the releases their pattern needs (or that are known to compute it wrongly)
//! and the GPUs its engine runs on; a plan is refused, typed, before any descriptor is made.

use std::ops::RangeInclusive;

use super::error::{CudnnError, CudnnRefusal};
use cuda_safe::Result;
use cudnn_sys::cudnnStatus_t;

/// A graph's requirements, checked when its plan is made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Needs {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Rule {
    /// cuDNN releases (`cudnnGetVersion`'s encoding) that cannot run the graph, and why.
    Versions(RangeInclusive<usize>, &'static str),
    /// The least compute capability whose GPUs run the graph, and why.
    Capability((u32, u32), &'static str),
}

impl Needs {
    /// Refuses cuDNN releases before `version` (`cudnnGetVersion`'s encoding).
    pub(crate) fn cudnn_at_least(&mut self, version: usize, why: &'static str) {
        self.push(Rule::Versions(0..=version.saturating_sub(1), why));
    }

    /// Refuses the cuDNN releases in `versions`.
    pub(crate) fn cudnn_not(&mut self, versions: RangeInclusive<usize>, why: &'static str) {
        self.push(Rule::Versions(versions, why));
    }

    /// Refuses GPUs of a compute capability below `capability`.
    pub(crate) fn capability_at_least(&mut self, capability: (u32, u32), why: &'static str) {
        self.push(Rule::Capability(capability, why));
    }

    fn push(&mut self, rule: Rule) {
        if !self.rules.contains(&rule) {
            self.rules.push(rule);
        }
    }

    /// Whether there is no rule.
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether a rule asks for the GPU's compute capability.
    pub(crate) fn asks_capability(&self) -> bool {
        self.rules
            .iter()
            .any(|rule| matches!(rule, Rule::Capability(..)))
    }

    /// Refuses a cuDNN of `version` or a GPU of `capability` a rule excludes, naming `graph`.
    pub(crate) fn check(
        &self,
        version: usize,
        capability: (u32, u32),
        graph: impl Fn() -> String,
    ) -> Result<()> {
        for rule in &self.rules {
            let refusal = match rule {
                Rule::Versions(versions, why) if versions.contains(&version) => {
                    refuse(CudnnRefusal::Version { found: version }, why)
                }
                Rule::Capability(least, why) if capability < *least => {
                    refuse(CudnnRefusal::Device { capability }, why)
                }
                _ => continue,
            };
            return Err(refusal.in_operation(graph()).into());
        }
        Ok(())
    }
}

#[cold]
fn refuse(refusal: CudnnRefusal, why: &str) -> CudnnError {
    let mut error = CudnnError::new("cudnnGetVersion", cudnnStatus_t::CUDNN_STATUS_NOT_SUPPORTED)
        .with_refusal(refusal);
    error.message = why.to_owned();
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_safe::Error;

    #[test]
    fn rules_refuse_versions_and_devices_typed() {
        let mut needs = Needs::default();
        needs.cudnn_at_least(90600, "cuDNN 9.6 zeroes the accumulators");
        needs.cudnn_not(91000..=91001, "cuDNN 9.10.0 and 9.10.1 compute it wrongly");
        needs.capability_at_least((9, 0), "FP8 attention needs sm_90");
        assert!(needs.asks_capability());
        assert!(needs.check(91400, (9, 0), String::new).is_ok());
        let old = needs.check(90500, (9, 0), || "the graph".into());
        let error = old.unwrap_err();
        let failure = error.library_error::<CudnnError>().unwrap();
        assert_eq!(failure.refusal, CudnnRefusal::Version { found: 90500 });
        assert!(error.to_string().contains("cuDNN 9.6 zeroes"), "{error}");
        assert!(error.is_not_supported());
        let broken = needs.check(91001, (9, 0), String::new).unwrap_err();
        assert!(broken.to_string().contains("9.10.1"), "{broken}");
        let device = needs.check(91400, (8, 9), String::new).unwrap_err();
        let failure = device.library_error::<CudnnError>().unwrap();
        assert_eq!(failure.refusal, CudnnRefusal::Device { capability: (8, 9) });
        assert!(matches!(device, Error::Library(_)));
    }
}
