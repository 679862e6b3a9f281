//! Every check refusing before cuSPARSE is called, what a repeated operation calls, the work
//! area, preprocessing, and cuSPARSE's failures.
pub(crate) const CASES: &[(&str, super::CaseFn)] = &[];
