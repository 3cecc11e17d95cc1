//! An in-memory [`SkiplistStore`] for tests: the table as a B-tree map on `(ownerId, t)`
//! (the primary key) plus a B-tree set on `(ownerId, l, t)` (the covering index), with
//! counters of probes and writes.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::fmt::Write as _;
use std::ops::Bound;

use super::{Node, OwnerId, SkiplistStore, Timestamp, TIMESTAMP_LEN};

const MIN_T: Timestamp = [0; TIMESTAMP_LEN];
const MAX_T: Timestamp = [0xFF; TIMESTAMP_LEN];

/// One row of `evolu_timestamp` without its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub level: i64,
    pub h1: i64,
    pub h2: i64,
    pub c: i64,
}

#[derive(Default)]
pub(crate) struct MemoryStore {
    rows: BTreeMap<(OwnerId, Timestamp), Row>,
    index: BTreeSet<(OwnerId, i64, Timestamp)>,
    /// Calls of the read methods (index seeks).
    pub probes: usize,
    /// Rows handed to `scan_level` visitors.
    pub rows_read: usize,
    /// Calls of `insert` and `update`.
    pub writes: usize,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The owner's rows in ascending order of t.
    pub fn rows(&self, owner: &OwnerId) -> Vec<(Timestamp, Row)> {
        self.rows
            .range((*owner, MIN_T)..=(*owner, MAX_T))
            .map(|(&(_, t), &row)| (t, row))
            .collect()
    }

    /// The canonical dump of docs/evolu-storage.md §8: `<t hex>,<l>,<h1>,<h2>,<c>\n` per row
    /// in order of t.
    pub fn dump(&self, owner: &OwnerId) -> String {
        let mut out = String::new();
        for (t, row) in self.rows(owner) {
            for byte in t {
                let _ = write!(out, "{byte:02x}");
            }
            let _ = writeln!(out, ",{},{},{},{}", row.level, row.h1, row.h2, row.c);
        }
        out
    }

    /// Writes a row directly, bypassing the algorithms (to build corrupt tables).
    pub fn put_raw(&mut self, owner: &OwnerId, t: &Timestamp, row: Row) {
        if let Some(old) = self.rows.insert((*owner, *t), row) {
            self.index.remove(&(*owner, old.level, *t));
        }
        self.index.insert((*owner, row.level, *t));
    }

    fn level_range(
        &self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: Option<&Timestamp>,
    ) -> impl DoubleEndedIterator<Item = Node> + '_ {
        let level = i64::from(level);
        let lower = match after {
            Some(t) => Bound::Excluded((*owner, level, *t)),
            None => Bound::Included((*owner, level, MIN_T)),
        };
        let upper = match before {
            Some(t) => Bound::Excluded((*owner, level, *t)),
            None => Bound::Included((*owner, level, MAX_T)),
        };
        // BTreeSet::range panics on an empty or inverted range: answer those with nothing.
        let empty = matches!((after, before), (Some(a), Some(b)) if a >= b);
        let range = if empty {
            None
        } else {
            Some(self.index.range((lower, upper)))
        };
        let owner = *owner;
        range.into_iter().flatten().map(move |&(_, _, t)| {
            let row = self.rows[&(owner, t)];
            Node {
                t,
                h1: row.h1,
                h2: row.h2,
                c: row.c,
            }
        })
    }
}

impl SkiplistStore for MemoryStore {
    type Error = Infallible;

    fn max_level(&mut self, owner: &OwnerId) -> Result<Option<i64>, Infallible> {
        self.probes += 1;
        Ok(self
            .index
            .range((*owner, i64::MIN, MIN_T)..=(*owner, i64::MAX, MAX_T))
            .next_back()
            .map(|&(_, level, _)| level))
    }

    fn scan_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: Option<&Timestamp>,
        visit: &mut dyn FnMut(&Node) -> bool,
    ) -> Result<(), Infallible> {
        self.probes += 1;
        let mut read = 0;
        for node in self.level_range(owner, level, after, before) {
            read += 1;
            if !visit(&node) {
                break;
            }
        }
        self.rows_read += read;
        Ok(())
    }

    fn last_at_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: &Timestamp,
    ) -> Result<Option<Node>, Infallible> {
        self.probes += 1;
        Ok(self
            .level_range(owner, level, after, Some(before))
            .next_back())
    }

    fn next_timestamp(
        &mut self,
        owner: &OwnerId,
        after: Option<&Timestamp>,
    ) -> Result<Option<Timestamp>, Infallible> {
        self.probes += 1;
        let lower = match after {
            Some(t) => Bound::Excluded((*owner, *t)),
            None => Bound::Included((*owner, MIN_T)),
        };
        Ok(self
            .rows
            .range((lower, Bound::Included((*owner, MAX_T))))
            .next()
            .map(|(&(_, t), _)| t))
    }

    fn prev_timestamp(
        &mut self,
        owner: &OwnerId,
        before: &Timestamp,
    ) -> Result<Option<Timestamp>, Infallible> {
        self.probes += 1;
        Ok(self
            .rows
            .range((*owner, MIN_T)..(*owner, *before))
            .next_back()
            .map(|(&(_, t), _)| t))
    }

    fn contains(&mut self, owner: &OwnerId, t: &Timestamp) -> Result<bool, Infallible> {
        self.probes += 1;
        Ok(self.rows.contains_key(&(*owner, *t)))
    }

    fn insert(&mut self, owner: &OwnerId, level: u8, node: &Node) -> Result<bool, Infallible> {
        self.writes += 1;
        if self.rows.contains_key(&(*owner, node.t)) {
            return Ok(false);
        }
        self.put_raw(
            owner,
            &node.t,
            Row {
                level: i64::from(level),
                h1: node.h1,
                h2: node.h2,
                c: node.c,
            },
        );
        Ok(true)
    }

    fn update(&mut self, owner: &OwnerId, node: &Node) -> Result<(), Infallible> {
        self.writes += 1;
        if let Some(row) = self.rows.get_mut(&(*owner, node.t)) {
            row.h1 = node.h1;
            row.h2 = node.h2;
            row.c = node.c;
        }
        Ok(())
    }
}
