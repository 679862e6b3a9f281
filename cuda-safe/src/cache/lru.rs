//! A weighted least-recently-used map with O(1) get, insert and eviction.
//!
//! The recency list is threaded through the hash map itself: each node names its newer and
//! older neighbour by key, so there are no indices to go stale and nothing to index into.

use std::collections::HashMap;
use std::hash::Hash;

/// One value and its place in the recency list.
#[derive(Debug)]
struct Node<K, V> {
    value: V,
    weight: u64,
    newer: Option<K>,
    older: Option<K>,
}

/// A map that remembers the order its keys were last used in and their total weight.
#[derive(Debug)]
pub(crate) struct Lru<K, V> {
    map: HashMap<K, Node<K, V>>,
    newest: Option<K>,
    oldest: Option<K>,
    weight: u64,
}

impl<K: Copy + Eq + Hash, V> Lru<K, V> {
    /// An empty map.
    pub(crate) fn new() -> Self {
        Self {
            map: HashMap::new(),
            newest: None,
            oldest: None,
            weight: 0,
        }
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The sum of the entries' weights.
    pub(crate) fn weight(&self) -> u64 {
        self.weight
    }

    /// The value of `key`, which becomes the most recently used.
    pub(crate) fn get(&mut self, key: &K) -> Option<&V> {
        if !self.map.contains_key(key) {
            return None;
        }
        self.unlink(key);
        self.push_newest(*key);
        self.map.get(key).map(|node| &node.value)
    }

    /// Inserts or replaces `key`, making it the most recently used.
    pub(crate) fn insert(&mut self, key: K, value: V, weight: u64) {
        self.remove(&key);
        self.map.insert(
            key,
            Node {
                value,
                weight,
                newer: None,
                older: None,
            },
        );
        self.weight = self.weight.saturating_add(weight);
        self.push_newest(key);
    }

    /// Removes `key`, returning its value.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        if !self.map.contains_key(key) {
            return None;
        }
        self.unlink(key);
        let node = self.map.remove(key)?;
        self.weight = self.weight.saturating_sub(node.weight);
        Some(node.value)
    }

    /// Removes and returns the least recently used entry.
    pub(crate) fn pop_oldest(&mut self) -> Option<(K, V)> {
        let key = self.oldest?;
        self.remove(&key).map(|value| (key, value))
    }

    /// Removes every entry.
    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.newest = None;
        self.oldest = None;
        self.weight = 0;
    }

    /// Takes `key` out of the recency list (it stays in the map).
    fn unlink(&mut self, key: &K) {
        let Some(node) = self.map.get_mut(key) else {
            return;
        };
        let (newer, older) = (node.newer.take(), node.older.take());
        match newer {
            Some(newer) => {
                if let Some(node) = self.map.get_mut(&newer) {
                    node.older = older;
                }
            }
            None => self.newest = older,
        }
        match older {
            Some(older) => {
                if let Some(node) = self.map.get_mut(&older) {
                    node.newer = newer;
                }
            }
            None => self.oldest = newer,
        }
    }

    /// Puts an unlinked `key` at the newest end of the recency list.
    fn push_newest(&mut self, key: K) {
        let previous = self.newest.replace(key);
        match previous {
            Some(previous) => {
                if let Some(node) = self.map.get_mut(&previous) {
                    node.newer = Some(key);
                }
            }
            None => self.oldest = Some(key),
        }
        if let Some(node) = self.map.get_mut(&key) {
            node.older = previous;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;
    use proptest::prelude::*;

    /// The keys from oldest to newest, following the links.
    fn order(lru: &Lru<u8, u32>) -> Vec<u8> {
        let mut keys = Vec::new();
        let mut next = lru.oldest;
        while let Some(key) = next {
            keys.push(key);
            next = lru.map.get(&key).and_then(|node| node.newer);
        }
        keys
    }

    #[test]
    fn get_makes_an_entry_the_newest() {
        let mut lru = Lru::new();
        for key in 1..=3u8 {
            lru.insert(key, u32::from(key), 1);
        }
        assert_eq!(order(&lru), [1, 2, 3]);
        assert_eq!(lru.get(&1), Some(&1));
        assert_eq!(order(&lru), [2, 3, 1]);
        assert_eq!(lru.pop_oldest(), Some((2, 2)));
        assert_eq!(order(&lru), [3, 1]);
        assert_eq!(lru.get(&9), None);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Get(u8),
        Insert(u8, u8),
        Remove(u8),
        PopOldest,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..8u8).prop_map(Op::Get),
            (0..8u8, 0..50u8).prop_map(|(key, weight)| Op::Insert(key, weight)),
            (0..8u8).prop_map(Op::Remove),
            Just(Op::PopOldest),
        ]
    }

    proptest! {
        /// The map behaves like a plain list of (key, weight) ordered by last use.
        #[test]
        fn matches_a_list_model(ops in proptest::collection::vec(op(), 0..200)) {
            let mut lru = Lru::new();
            let mut model: Vec<(u8, u8)> = Vec::new();
            for op in ops {
                match op {
                    Op::Get(key) => {
                        let found = model.iter().position(|(k, _)| *k == key);
                        let expected = found.map(|at| model.remove(at));
                        if let Some(entry) = expected {
                            model.push(entry);
                        }
                        prop_assert_eq!(lru.get(&key).copied(), expected.map(|(_, w)| u32::from(w)));
                    }
                    Op::Insert(key, weight) => {
                        model.retain(|(k, _)| *k != key);
                        model.push((key, weight));
                        lru.insert(key, u32::from(weight), u64::from(weight));
                    }
                    Op::Remove(key) => {
                        let found = model.iter().position(|(k, _)| *k == key);
                        let expected = found.map(|at| model.remove(at));
                        prop_assert_eq!(lru.remove(&key), expected.map(|(_, w)| u32::from(w)));
                    }
                    Op::PopOldest => {
                        let expected = (!model.is_empty()).then(|| model.remove(0));
                        prop_assert_eq!(
                            lru.pop_oldest(),
                            expected.map(|(k, w)| (k, u32::from(w)))
                        );
                    }
                }
                prop_assert_eq!(order(&lru), model.iter().map(|(k, _)| *k).collect::<Vec<_>>());
                prop_assert_eq!(lru.len(), model.len());
                prop_assert_eq!(lru.weight(), model.iter().map(|(_, w)| u64::from(*w)).sum::<u64>());
            }
            lru.clear();
            prop_assert_eq!(lru.len(), 0);
            prop_assert_eq!(lru.weight(), 0);
            prop_assert_eq!(order(&lru), Vec::<u8>::new());
        }
    }
}
