//! Planning a split of SMs into groups from the partition rules alone: pure arithmetic, no
//! driver (the driver's own simulation of the layout is asked in
//! [`SmResource::plan`](super::SmResource::plan)).

use crate::error::{Error, Result};

/// How an SM resource may be partitioned: the smallest group and the step between sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionRules {
    /// The fewest SMs a group may have.
    pub min_partition_size: u32,
    /// Group sizes must be multiples of this.
    pub alignment: u32,
}

crate::setters::setters! {
    impl PartitionRules {
        min_partition_size: value u32,
        alignment: value u32,
    }
}

impl PartitionRules {
    /// Partitions of at least `min_partition_size` SMs, in multiples of `alignment`.
    pub fn new(min_partition_size: u32, alignment: u32) -> Self {
        Self {
            min_partition_size,
            alignment,
        }
    }

    /// The rules of an architecture, for drivers whose resources do not state them: 1 SM on
    /// 6.x, multiples of 2 on 7.x, at least 4 in multiples of 2 on 8.x, multiples of 8 on 9.0+.
    pub fn for_compute_capability(major: u32) -> Self {
        let (min_partition_size, alignment) = match major {
            0..=6 => (1, 1),
            7 => (2, 2),
            8 => (4, 2),
            _ => (8, 8),
        };
        Self {
            min_partition_size,
            alignment,
        }
    }

    /// `count` rounded down to a valid group size, or `None` if below the minimum.
    pub fn round_down(&self, count: u32) -> Option<u32> {
        let rounded = count - count % self.alignment.max(1);
        (rounded >= self.min_partition_size).then_some(rounded)
    }

    /// Whether `count` is a valid group size.
    pub fn allows(&self, count: u32) -> bool {
        self.round_down(count) == Some(count)
    }
}

/// How each group of a split is laid out: the fields of CUDA 13.1's
/// `CU_DEV_SM_RESOURCE_GROUP_PARAMS` beyond the SM count. Any field set makes the split a
/// structured one (`cuDevSmResourceSplit`: a CUDA 13.1 driver and the `cuda-13` ABI).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct GroupLayout {
    /// SMs co-scheduled together, for locality (thread-block clusters of that size fit); 0
    /// leaves it to the driver. A multiple of the partition alignment, and without
    /// [`backfill`](Self::backfill) every group's count is a multiple of it.
    pub coscheduled_sm_count: u32,
    /// Where possible, co-scheduled sets are combined into sets of this many SMs; 0 for no
    /// preference. A multiple of the co-scheduled count (or of the alignment when that is 0).
    pub preferred_coscheduled_sm_count: u32,
    /// `CU_DEV_SM_RESOURCE_GROUP_BACKFILL`: the co-scheduling constraints become a hint and
    /// each group gets exactly its count, the difference filled with other SMs (a group then
    /// behaves like the remainder); any count of at least one SM is accepted.
    pub backfill: bool,
}

crate::setters::setters! {
    impl GroupLayout {
        coscheduled_sm_count: value u32,
        preferred_coscheduled_sm_count: value u32,
        backfill: value bool,
    }
}

impl GroupLayout {
    /// Whether every field is left to the driver (a plain split).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The rules a group's count must follow under this layout, from the resource's.
    pub(super) fn rules(&self, base: &PartitionRules) -> PartitionRules {
        if self.backfill {
            return PartitionRules {
                min_partition_size: 1,
                alignment: 1,
            };
        }
        let set = self.coscheduled_sm_count;
        PartitionRules {
            min_partition_size: base.min_partition_size.max(set),
            alignment: base.alignment.max(set),
        }
    }

    /// Checks the layout against the resource's rules; the error says which field is wrong.
    pub(super) fn check(&self, base: &PartitionRules, arch: &str) -> Result<()> {
        let align = base.alignment.max(1);
        let set = self.coscheduled_sm_count;
        if !set.is_multiple_of(align) {
            return Err(Error::invalid_argument(format!(
                "a co-scheduled set of {set} SMs on {arch}: it must be a multiple of {align}"
            )));
        }
        let preferred = self.preferred_coscheduled_sm_count;
        let unit = set.max(align);
        if !preferred.is_multiple_of(unit) {
            return Err(Error::invalid_argument(format!(
                "a preferred co-scheduled set of {preferred} SMs on {arch}: it must be a \
                 multiple of {unit}"
            )));
        }
        Ok(())
    }
}

/// What to split an SM resource into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRequest {
    shape: Shape,
    round: bool,
    layout: GroupLayout,
}

/// The groups asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    Equal { groups: u32, size: u32 },
    Counts(Vec<u32>),
}

/// A split worked out from the partition rules alone, without the driver (a dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SplitPlan {
    /// The SMs each group gets.
    pub counts: Vec<u32>,
    /// The SMs left over.
    pub remainder: u32,
}

impl SplitRequest {
    /// `groups` groups of `sms_each` SMs each.
    pub fn equal(groups: u32, sms_each: u32) -> Self {
        Self {
            shape: Shape::Equal {
                groups,
                size: sms_each,
            },
            round: false,
            layout: GroupLayout::default(),
        }
    }

    /// One group per entry, of that many SMs (unequal counts need a CUDA 13.1 driver).
    pub fn counts(counts: impl Into<Vec<u32>>) -> Self {
        Self {
            shape: Shape::Counts(counts.into()),
            round: false,
            layout: GroupLayout::default(),
        }
    }

    /// Allows rounding each count down to the nearest size the hardware supports, instead of
    /// refusing a count it cannot meet exactly.
    pub fn rounding(mut self, round: bool) -> Self {
        self.round = round;
        self
    }

    /// Lays every group out as `layout` says (a structured split: CUDA 13.1 and the `cuda-13`
    /// ABI).
    pub fn layout(mut self, layout: GroupLayout) -> Self {
        self.layout = layout;
        self
    }

    /// The layout asked for each group.
    pub fn group_layout(&self) -> GroupLayout {
        self.layout
    }

    /// How many groups are asked for.
    pub fn group_count(&self) -> usize {
        match &self.shape {
            Shape::Equal { groups, .. } => *groups as usize,
            Shape::Counts(counts) => counts.len(),
        }
    }

    /// The SM count asked for each group, once the number of groups is known to be sane
    /// (at most one group per SM), so a huge count never allocates.
    pub(super) fn counts_within(&self, total: u32) -> Option<Vec<u32>> {
        if self.group_count() > total as usize {
            return None;
        }
        Some(match &self.shape {
            Shape::Equal { groups, size } => vec![*size; *groups as usize],
            Shape::Counts(counts) => counts.clone(),
        })
    }
}

/// The size of every group, when all are the same.
pub(super) fn equal_size(counts: &[u32]) -> Option<u32> {
    let first = *counts.first()?;
    counts.iter().all(|&count| count == first).then_some(first)
}

/// Checks `request` against `total` SMs and the rules (as its layout changes them); returns
/// the sizes or an error saying what the hardware can give.
pub(super) fn plan_split(
    total: u32,
    rules: &PartitionRules,
    request: &SplitRequest,
    arch: &str,
) -> Result<SplitPlan> {
    request.layout.check(rules, arch)?;
    let rules = &request.layout.rules(rules);
    if request.group_count() == 0 {
        return Err(Error::invalid_argument("a split needs at least one group"));
    }
    let Some(asked) = request.counts_within(total) else {
        return Err(Error::invalid_argument(format!(
            "asked {} groups of {total} SMs on {arch}: a group needs at least one SM",
            request.group_count()
        )));
    };
    let asked = &asked;
    let describe = |counts: &[u32]| {
        if counts.iter().all(|&count| count == counts[0]) {
            format!("{} x {}", counts.len(), counts[0])
        } else {
            format!("{counts:?}")
        }
    };
    let rounded: Option<Vec<u32>> = asked.iter().map(|&count| rules.round_down(count)).collect();
    let exact = asked.iter().all(|&count| rules.allows(count));
    let sum = |counts: &[u32]| counts.iter().map(|&count| u64::from(count)).sum::<u64>();
    let rules_text = format!(
        "groups of at least {} SMs in multiples of {}",
        rules.min_partition_size, rules.alignment
    );
    let counts = match rounded {
        Some(rounded) if exact || request.round => rounded,
        Some(rounded) if sum(&rounded) <= u64::from(total) => {
            return Err(Error::invalid_argument(format!(
                "asked {} of {total} SMs on {arch} ({rules_text}): can give {} with {} left; \
                 allow rounding to take that",
                describe(asked),
                describe(&rounded),
                u64::from(total) - sum(&rounded)
            )));
        }
        _ => {
            return Err(Error::invalid_argument(format!(
                "asked {} of {total} SMs on {arch}, which has {rules_text}",
                describe(asked)
            )));
        }
    };
    if sum(&counts) > u64::from(total) {
        return Err(Error::invalid_argument(format!(
            "asked {} SMs in {} of {total} on {arch}",
            sum(&counts),
            describe(&counts)
        )));
    }
    let used = u32::try_from(sum(&counts)).unwrap_or(total);
    Ok(SplitPlan {
        remainder: total.saturating_sub(used),
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOPPER: PartitionRules = PartitionRules {
        min_partition_size: 8,
        alignment: 8,
    };

    #[test]
    fn rules_follow_the_architecture() {
        assert_eq!(
            PartitionRules::for_compute_capability(6),
            PartitionRules {
                min_partition_size: 1,
                alignment: 1
            }
        );
        assert_eq!(
            PartitionRules::for_compute_capability(7),
            PartitionRules {
                min_partition_size: 2,
                alignment: 2
            }
        );
        assert_eq!(
            PartitionRules::for_compute_capability(8),
            PartitionRules {
                min_partition_size: 4,
                alignment: 2
            }
        );
        assert_eq!(PartitionRules::for_compute_capability(9), HOPPER);
        assert_eq!(PartitionRules::for_compute_capability(12), HOPPER);
        assert_eq!(HOPPER.round_down(66), Some(64));
        assert_eq!(HOPPER.round_down(7), None);
        assert!(HOPPER.allows(64) && !HOPPER.allows(66));
    }

    #[test]
    fn exact_requests_plan_their_remainder() {
        let plan = plan_split(132, &HOPPER, &SplitRequest::equal(2, 64), "sm_90").unwrap();
        assert_eq!(
            plan,
            SplitPlan {
                counts: vec![64, 64],
                remainder: 4
            }
        );
        let plan = plan_split(132, &HOPPER, &SplitRequest::counts([96, 32]), "sm_90").unwrap();
        assert_eq!(plan.remainder, 4);
        let plan = plan_split(132, &HOPPER, &SplitRequest::equal(16, 8), "sm_90").unwrap();
        assert_eq!(plan.remainder, 4);
    }

    #[test]
    fn inexact_requests_say_what_fits_unless_rounding() {
        let error = plan_split(132, &HOPPER, &SplitRequest::equal(2, 66), "sm_90").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("asked 2 x 66 of 132 SMs on sm_90"), "{text}");
        assert!(text.contains("can give 2 x 64 with 4 left"), "{text}");
        let rounded = SplitRequest::equal(2, 66).rounding(true);
        let plan = plan_split(132, &HOPPER, &rounded, "sm_90").unwrap();
        assert_eq!(
            plan,
            SplitPlan {
                counts: vec![64, 64],
                remainder: 4
            }
        );
    }

    #[test]
    fn layouts_change_the_rules_and_are_checked() {
        let backfill = GroupLayout {
            backfill: true,
            ..Default::default()
        };
        let request = SplitRequest::counts([66, 50]).layout(backfill);
        let plan = plan_split(132, &HOPPER, &request, "sm_90").unwrap();
        assert_eq!(plan.counts, [66, 50]);
        assert_eq!(plan.remainder, 16);
        let sixteen = GroupLayout {
            coscheduled_sm_count: 16,
            preferred_coscheduled_sm_count: 32,
            ..Default::default()
        };
        let error = plan_split(
            132,
            &HOPPER,
            &SplitRequest::equal(2, 40).layout(sixteen),
            "sm_90",
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("can give 2 x 32 with 68 left"), "{error}");
        for bad in [
            GroupLayout {
                coscheduled_sm_count: 12,
                ..Default::default()
            },
            GroupLayout {
                coscheduled_sm_count: 16,
                preferred_coscheduled_sm_count: 24,
                ..Default::default()
            },
        ] {
            let request = SplitRequest::equal(2, 64).layout(bad);
            assert!(
                plan_split(132, &HOPPER, &request, "sm_90").is_err(),
                "{bad:?}"
            );
        }
        assert!(GroupLayout::default().is_default() && !sixteen.is_default());
        assert_eq!(
            SplitRequest::equal(1, 8).group_layout(),
            GroupLayout::default()
        );
    }

    #[test]
    fn impossible_requests_are_refused() {
        for request in [
            SplitRequest::equal(3, 48),
            SplitRequest::equal(1, 4),
            SplitRequest::counts(Vec::new()),
            SplitRequest::equal(1, 136),
            SplitRequest::equal(u32::MAX, 8),
        ] {
            assert!(
                plan_split(132, &HOPPER, &request, "sm_90").is_err(),
                "{request:?}"
            );
        }
    }
}
