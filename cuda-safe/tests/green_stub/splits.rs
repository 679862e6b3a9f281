//! Workqueue configurations and structured splits (CUDA 13.1, `cuda-13` ABI): what reaches
//! the driver, what comes back, what is refused before it, and the refusals of a 13.0 driver.

use cuda_safe::{GreenContextOptions, GroupLayout, SplitRequest, WorkqueueScope, sys::ABI_MAJOR};
use cuda_safe_stub::Stub;
use cuda_safe_stub::faults::fixtures::device;

use crate::{CUDA_13_0, CUDA_13_1, Verdict, abi13, ensure, failed, unsupported_naming};

/// The co-scheduled set the layouts here ask for: twice the stub's partition alignment.
fn twice_the_alignment() -> Result<u32, String> {
    let sm = device().resources().sm().map_err(failed)?;
    Ok(2 * sm.rules().map_err(failed)?.alignment)
}

/// A configuration read from the device, adjusted, given to a green context, and read back
/// from it; a limit of 0 is refused.
pub(crate) fn workqueue_configurations_reach_the_green_context(_: &Stub) -> Verdict {
    let resources = device().resources();
    if !abi13() {
        let refused = resources.workqueue_config();
        return ensure(unsupported_naming(&refused, "cuda-13"), || {
            format!("under the cuda-12 ABI: {refused:?}")
        });
    }
    let config = resources.workqueue_config().map_err(failed)?;
    ensure(
        config.concurrency_limit() > 0 && config.sharing_scope() == WorkqueueScope::DEVICE_CONTEXT,
        || format!("the device's configuration: {config:?}"),
    )?;
    let zero = config.with_concurrency_limit(0);
    ensure(
        matches!(zero, Err(cuda_safe::Error::InvalidArgument(_))),
        || format!("a limit of 0: {zero:?}"),
    )?;
    let limit = config.concurrency_limit() / 2;
    let wanted = config
        .with_concurrency_limit(limit)
        .and_then(|config| config.with_sharing_scope(WorkqueueScope::GREEN_CONTEXT_BALANCED))
        .map_err(failed)?;
    let split = resources
        .sm()
        .and_then(|sm| sm.split(&SplitRequest::equal(2, 64)))
        .map_err(failed)?;
    let options = GreenContextOptions::default().workqueue(wanted);
    let green = device()
        .create_green_context(&split.groups[0], options)
        .map_err(failed)?;
    let got = green.resources().workqueue_config().map_err(failed)?;
    ensure(
        got.concurrency_limit() == limit
            && got.sharing_scope() == WorkqueueScope::GREEN_CONTEXT_BALANCED,
        || format!("the green context reports {got:?}, not {wanted:?}"),
    )
}

/// Backfilled groups get exactly their counts, any count; co-scheduled sets come back as the
/// groups' alignment; both through one `cuDevSmResourceSplit` call.
pub(crate) fn group_layouts_make_structured_splits(stub: &Stub) -> Verdict {
    if !abi13() {
        return Ok(());
    }
    let sm = device().resources().sm().map_err(failed)?;
    let alignment = sm.rules().map_err(failed)?.alignment;
    let odd = [alignment * 8 + 2, alignment * 6 + 2];
    let backfill = GroupLayout::default().backfill(true);
    let split = sm
        .split(&SplitRequest::counts(odd).layout(backfill))
        .map_err(failed)?;
    let counts: Vec<u32> = split.groups.iter().map(|group| group.sm_count()).collect();
    ensure(counts == odd, || format!("backfilled groups of {counts:?}"))?;
    let set = twice_the_alignment()?;
    let coscheduled = GroupLayout::default()
        .coscheduled_sm_count(set)
        .preferred_coscheduled_sm_count(2 * set);
    stub.reset();
    let split = sm
        .split(&SplitRequest::equal(2, 4 * set).layout(coscheduled))
        .map_err(failed)?;
    ensure(
        stub.calls("cuDevSmResourceSplit") == 1 && stub.calls("cuDevSmResourceSplitByCount") == 0,
        || "a laid-out split is not one cuDevSmResourceSplit".into(),
    )?;
    for group in &split.groups {
        let rules = group.rules().map_err(failed)?;
        ensure(
            group.sm_count() == 4 * set && rules.alignment == set,
            || format!("a group of {} SMs with {rules:?}", group.sm_count()),
        )?;
    }
    let rounded = sm
        .split(
            &SplitRequest::equal(2, 3 * set - alignment)
                .layout(coscheduled)
                .rounding(true),
        )
        .map_err(failed)?;
    ensure(rounded.groups[0].sm_count() == 2 * set, || {
        format!("rounded to {} SMs", rounded.groups[0].sm_count())
    })
}

/// Layouts the rules refuse, and counts a co-scheduled set does not divide, are typed errors
/// with no split call.
pub(crate) fn bad_layouts_are_refused_before_the_driver(stub: &Stub) -> Verdict {
    let sm = device().resources().sm().map_err(failed)?;
    let alignment = sm.rules().map_err(failed)?.alignment;
    let set = twice_the_alignment()?;
    let layout = |coscheduled, preferred| {
        GroupLayout::default()
            .coscheduled_sm_count(coscheduled)
            .preferred_coscheduled_sm_count(preferred)
            .backfill(false)
    };
    let requests = [
        SplitRequest::equal(2, 4 * set).layout(layout(alignment + alignment / 2, 0)),
        SplitRequest::equal(2, 4 * set).layout(layout(set, set + alignment)),
        SplitRequest::equal(2, 3 * set - alignment).layout(layout(set, 0)),
    ];
    stub.reset();
    for request in requests {
        let refused = sm.split(&request);
        ensure(
            matches!(refused, Err(cuda_safe::Error::InvalidArgument(_))),
            || format!("{request:?}: {refused:?}"),
        )?;
    }
    ensure(
        stub.calls("cuDevSmResourceSplit") + stub.calls("cuDevSmResourceSplitByCount") == 0,
        || "a refused layout reached the driver".into(),
    )
}

/// On a 13.0 driver every 13.1 feature is [`cuda_safe::Error::Unsupported`] naming 13.1 (under
/// the `cuda-12` ABI, naming the `cuda-13` feature), asked of no driver entry point.
pub(crate) fn a_13_0_driver_refuses_the_13_1_features(stub: &Stub) -> Verdict {
    let resources = device().resources();
    let sm = resources.sm().map_err(failed)?;
    let set = twice_the_alignment()?;
    let laid_out =
        SplitRequest::equal(2, 4 * set).layout(GroupLayout::default().coscheduled_sm_count(set));
    stub.set_driver_version(CUDA_13_0);
    stub.reset();
    let outcomes = (
        resources.workqueue_config(),
        sm.split(&laid_out),
        sm.plan(&laid_out),
    );
    let asked = stub.calls("cuDeviceGetDevResource") + stub.calls("cuDevSmResourceSplit");
    stub.set_driver_version(CUDA_13_1);
    let needs = if ABI_MAJOR >= 13 { "13.1" } else { "cuda-13" };
    ensure(
        unsupported_naming(&outcomes.0, needs)
            && unsupported_naming(&outcomes.1, needs)
            && unsupported_naming(&outcomes.2, needs),
        || format!("on a 13.0 driver: {outcomes:?}"),
    )?;
    ensure(asked == 0, || "the 13.0 driver was asked".into())
}
