//! A [`Matmul`](super::Matmul)'s plans by description, bounded: past its capacity the plan
//! used least recently is dropped (its descriptors destroyed once no caller holds it).

use std::collections::HashMap;
use std::sync::Arc;

use super::plan::{MatmulDesc, MatmulPlan};

/// Plans by description, each with the tick of its last use.
pub(crate) struct PlanCache {
    plans: HashMap<MatmulDesc, (Arc<MatmulPlan>, u64)>,
    tick: u64,
    capacity: usize,
}

impl PlanCache {
    /// An empty cache keeping at most `capacity` plans.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            plans: HashMap::new(),
            tick: 0,
            capacity,
        }
    }

    /// The plan for `desc`, if kept (now the most recently used).
    pub(crate) fn get(&mut self, desc: &MatmulDesc) -> Option<Arc<MatmulPlan>> {
        self.tick += 1;
        let tick = self.tick;
        self.plans.get_mut(desc).map(|(plan, used)| {
            *used = tick;
            Arc::clone(plan)
        })
    }

    /// Keeps `plan` for `desc`, dropping the least recently used plans past the capacity (a
    /// capacity of 0 keeps nothing).
    pub(crate) fn insert(&mut self, desc: MatmulDesc, plan: Arc<MatmulPlan>) {
        self.tick += 1;
        self.plans.insert(desc, (plan, self.tick));
        self.shrink();
    }

    /// Sets the capacity, dropping the least recently used plans past it.
    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.shrink();
    }

    /// The capacity.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many plans are kept.
    pub(crate) fn len(&self) -> usize {
        self.plans.len()
    }

    /// Drops the least recently used plans until at most `capacity` remain: a scan per plan
    /// dropped, which only follows the making of a plan (a heuristic query, far costlier).
    fn shrink(&mut self) {
        while self.plans.len() > self.capacity {
            let oldest = self
                .plans
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(desc, _)| desc.clone());
            match oldest {
                Some(desc) => self.plans.remove(&desc),
                None => break,
            };
        }
    }
}
