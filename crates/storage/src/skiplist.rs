//! The skiplist algorithms of `docs/evolu-storage.md` §3, generic over a [`SkiplistStore`].
//!
//! # The rows (§3.1)
//!
//! For one owner let T be the stored timestamps, each with a level l(t) in 1..=10, and
//! pred≥k(t) the largest y < t in T with l(y) ≥ k (−∞ if none). The row of t holds the
//! count `c` and XOR fingerprint `(h1, h2)` of its *span* (pred≥l(t)(t), t]. The rows depend
//! only on the set of (t, level) pairs, never on insertion order.
//!
//! # Walking down
//!
//! Every algorithm here walks from the highest level to level 1 keeping a window
//! (cursor, fence): the cursor is a node (or −∞), and the fence is the next node after it
//! whose level is above the current one (or +∞). Inside the window the nodes of exactly
//! the current level are all the nodes of that level or higher, each one's span starts
//! at the previous one, and so their counts and fingerprints add up to prefix sums. One
//! [`scan_level`](SkiplistStore::scan_level) per level reads them in order: one index
//! seek, then one row per node the walk takes, and it stops at the first node it does not
//! take. With Evolu's level distribution (P(l ≥ k) = 4^(1−k)) that is about 2.5 rows per
//! level.
//!
//! Every row a store returns must lie strictly inside the window asked for, in ascending
//! order; the walks check that, so a misbehaving store produces [`Error::Corrupt`], never
//! an endless loop.

use std::cmp::Ordering;

use super::fingerprint::{split_fingerprint, timestamp_fingerprint};
use super::{
    join_fingerprint, ArgumentError, Error, Fingerprint, OwnerId, StorageResult, Timestamp,
    MAX_LEVEL, ZERO_FINGERPRINT,
};

/// One row of `evolu_timestamp` as the probes return it: `t` and the metadata of its span
/// (the level is the one the probe asked for). The integers are SQLite's INTEGER values,
/// checked before use (0 ≤ h < 2^48, c ≥ 1); a store reads NULL metadata, which Evolu
/// never leaves behind, as 0 so that the checks refuse it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    pub t: Timestamp,
    pub h1: i64,
    pub h2: i64,
    pub c: i64,
}

/// Evolu's insert strategy (`StorageInsertTimestampStrategy`), used only as a hint: the
/// rows are those of the general algorithm whatever the hint says. A correct `Append`
/// or `Prepend` hint saves probes; a wrong one costs one extra probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// t is after every stored timestamp.
    Append,
    /// t is before every stored timestamp.
    Prepend,
    /// Anywhere.
    Insert,
}

/// Access to Evolu's `evolu_timestamp` table for one connection.
///
/// Each method is one probe of an index: a point lookup on the primary key
/// `(ownerId, t)`, or one seek into a range of the primary key or of the covering index
/// `evolu_timestamp_index (ownerId, l, t, h1, h2, c)`. Only
/// [`scan_level`](Self::scan_level) reads more than one row, and only as many as its
/// caller takes. Bounds are exclusive; `None` means −∞ for `after` and +∞ for `before`.
///
/// The algorithms write only through [`insert`](Self::insert) and
/// [`update`](Self::update), after all their reads; a multi-row change should run inside
/// a transaction or savepoint so that a failing write leaves no partial update.
pub trait SkiplistStore {
    /// The store's error, passed through as [`Error::Store`].
    type Error;

    /// The owner's highest level, or `None` if the owner has no rows.
    ///
    /// `select l from evolu_timestamp where ownerId = ? order by l desc limit 1`
    fn max_level(&mut self, owner: &OwnerId) -> Result<Option<i64>, Self::Error>;

    /// Calls `visit` with the nodes of exactly `level` with `after < t < before`, in
    /// ascending order of t, until it returns `false` or the range ends.
    ///
    /// `select t, h1, h2, c from evolu_timestamp
    ///  where ownerId = ? and l = ? and t > ? and t < ? order by t`, stepped one row per
    /// `visit` and reset when it returns `false`: the walks take about 2.5 rows per call,
    /// and often stop after the first. `visit` never calls back into the store.
    fn scan_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: Option<&Timestamp>,
        visit: &mut dyn FnMut(&Node) -> bool,
    ) -> Result<(), Self::Error>;

    /// The last node of exactly `level` with `after < t < before`.
    ///
    /// `select t, h1, h2, c from evolu_timestamp
    ///  where ownerId = ? and l = ? and t > ? and t < ? order by t desc limit 1`
    fn last_at_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: &Timestamp,
    ) -> Result<Option<Node>, Self::Error>;

    /// The first stored timestamp after `after` (any level).
    ///
    /// `select t from evolu_timestamp where ownerId = ? and t > ? order by t limit 1`
    fn next_timestamp(
        &mut self,
        owner: &OwnerId,
        after: Option<&Timestamp>,
    ) -> Result<Option<Timestamp>, Self::Error>;

    /// The last stored timestamp before `before` (any level).
    ///
    /// `select t from evolu_timestamp where ownerId = ? and t < ? order by t desc limit 1`
    fn prev_timestamp(
        &mut self,
        owner: &OwnerId,
        before: &Timestamp,
    ) -> Result<Option<Timestamp>, Self::Error>;

    /// Whether `(owner, t)` is stored. Called only when an insert finds the rows
    /// inconsistent, to tell a duplicate from a corrupt table.
    ///
    /// `select 1 from evolu_timestamp where ownerId = ? and t = ?`
    fn contains(&mut self, owner: &OwnerId, t: &Timestamp) -> Result<bool, Self::Error>;

    /// Inserts a row unless `(owner, node.t)` exists; returns whether it inserted.
    ///
    /// `insert into evolu_timestamp (ownerId, t, l, h1, h2, c) values (?, ?, ?, ?, ?, ?)
    ///  on conflict do nothing`, then `changes() > 0`
    fn insert(&mut self, owner: &OwnerId, level: u8, node: &Node) -> Result<bool, Self::Error>;

    /// Sets the metadata of an existing row.
    ///
    /// `update evolu_timestamp set h1 = ?, h2 = ?, c = ? where ownerId = ? and t = ?`
    fn update(&mut self, owner: &OwnerId, node: &Node) -> Result<(), Self::Error>;

    /// The writes of one [`insert`](fn@insert): the new row `node` at `level`, then the
    /// new metadata of existing rows, given with their levels (`updates`). Returns
    /// whether it inserted; if `(owner, node.t)` exists it writes nothing and returns
    /// `false`.
    ///
    /// All or nothing: a store whose writes can fail must not leave the new row without
    /// its updates. The default runs [`insert`](Self::insert), then
    /// [`update`](Self::update) for each row, which is atomic only inside a transaction
    /// or savepoint that the caller rolls back on error; a store can do better (the
    /// SQLite store writes them with one statement).
    fn insert_with_updates(
        &mut self,
        owner: &OwnerId,
        level: u8,
        node: &Node,
        updates: &[(u8, Node)],
    ) -> Result<bool, Self::Error> {
        if !self.insert(owner, level, node)? {
            return Ok(false);
        }
        for (_, update) in updates {
            self.update(owner, update)?;
        }
        Ok(true)
    }
}

/// A fingerprint range: the upper bound (the first timestamp after the bucket, `None` for
/// the last bucket: Evolu's `InfiniteUpperBound` or the caller's bound) and the bucket's
/// fingerprint.
pub type FingerprintRange = (Option<Timestamp>, Fingerprint);

/// Array slots for levels 0..=10 (slot 0 unused), indexed by level.
const LEVELS: usize = MAX_LEVEL as usize + 1;
type PerLevel<T> = [T; LEVELS];

// ---------------------------------------------------------------------------------------
// Span summaries

/// The count and XOR fingerprint of a set of timestamps, checked and unsigned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Summary {
    h1: u64,
    h2: u64,
    c: u64,
}

impl Summary {
    const EMPTY: Self = Self { h1: 0, h2: 0, c: 0 };

    fn of_timestamp(t: &Timestamp) -> Self {
        let (h1, h2) = split_fingerprint(&timestamp_fingerprint(t));
        // Both halves are below 2^48, so non-negative.
        Self {
            h1: h1.unsigned_abs(),
            h2: h2.unsigned_abs(),
            c: 1,
        }
    }

    /// The metadata of a stored row, checked against the invariant's bounds.
    fn of_node<E>(node: &Node) -> StorageResult<Self, E> {
        join_fingerprint(node.h1, node.h2).ok_or(Error::Corrupt("h1/h2 outside 0..2^48"))?;
        if node.c < 1 {
            return Err(Error::Corrupt("c below 1 (or NULL)"));
        }
        Ok(Self {
            h1: node.h1.unsigned_abs(),
            h2: node.h2.unsigned_abs(),
            c: node.c.unsigned_abs(),
        })
    }

    /// The union with a disjoint set.
    fn plus<E>(self, other: Self) -> StorageResult<Self, E> {
        Ok(Self {
            h1: self.h1 ^ other.h1,
            h2: self.h2 ^ other.h2,
            c: self
                .c
                .checked_add(other.c)
                .ok_or(Error::Corrupt("counts overflow"))?,
        })
    }

    /// The difference with a subset.
    fn minus<E>(self, other: Self) -> StorageResult<Self, E> {
        Ok(Self {
            h1: self.h1 ^ other.h1,
            h2: self.h2 ^ other.h2,
            c: self
                .c
                .checked_sub(other.c)
                .ok_or(Error::Corrupt("a span counts fewer rows than it contains"))?,
        })
    }

    fn node<E>(self, t: Timestamp) -> StorageResult<Node, E> {
        let int = |v: u64| i64::try_from(v).map_err(|_| Error::Corrupt("counts overflow"));
        Ok(Node {
            t,
            h1: int(self.h1)?,
            h2: int(self.h2)?,
            c: int(self.c)?,
        })
    }

    fn fingerprint(self) -> Fingerprint {
        // Both halves are XORs of values below 2^48, so below 2^48.
        let half = |v: u64| i64::try_from(v).unwrap_or(-1);
        join_fingerprint(half(self.h1), half(self.h2)).unwrap_or(ZERO_FINGERPRINT)
    }
}

// ---------------------------------------------------------------------------------------
// Checked probes

/// The owner's top level, checked to be 1..=10; `None` for an owner with no rows.
fn top_level<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
) -> StorageResult<Option<u8>, S::Error> {
    match store.max_level(owner).map_err(Error::Store)? {
        None => Ok(None),
        Some(level) => u8::try_from(level)
            .ok()
            .filter(|level| (1..=MAX_LEVEL).contains(level))
            .map(Some)
            .ok_or(Error::Corrupt("a level outside 1..10")),
    }
}

/// Whether `t` lies strictly inside (after, before).
fn inside(t: &Timestamp, after: Option<&Timestamp>, before: Option<&Timestamp>) -> bool {
    after.is_none_or(|a| t > a) && before.is_none_or(|b| t < b)
}

const OUTSIDE: &str = "the store returned a row outside the requested range";

/// What a walk does with the node it is shown.
enum Take {
    /// Take it and show the next one.
    Next,
    /// Stop here.
    Stop,
}

/// Shows `step` the nodes of exactly `level` in (after, before), in order, until it says
/// stop; checks every row first.
fn walk_level<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    level: u8,
    after: Option<&Timestamp>,
    before: Option<&Timestamp>,
    mut step: impl FnMut(&Node, Summary) -> StorageResult<Take, S::Error>,
) -> StorageResult<(), S::Error> {
    let mut failure = None;
    let mut stopped = false;
    let mut previous = after.copied();
    let mut visit = |node: &Node| {
        if stopped {
            // A store that keeps calling after `false`: ignore the extra rows.
            return false;
        }
        let outcome = if inside(&node.t, previous.as_ref(), before) {
            previous = Some(node.t);
            Summary::of_node(node).and_then(|summary| step(node, summary))
        } else {
            Err(Error::Corrupt(OUTSIDE))
        };
        match outcome {
            Ok(Take::Next) => true,
            Ok(Take::Stop) => {
                stopped = true;
                false
            }
            Err(error) => {
                failure = Some(error);
                stopped = true;
                false
            }
        }
    };
    store
        .scan_level(owner, level, after, before, &mut visit)
        .map_err(Error::Store)?;
    failure.map_or(Ok(()), Err)
}

/// The first node of exactly `level` in (after, before).
fn first_at_level<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    level: u8,
    after: Option<&Timestamp>,
    before: Option<&Timestamp>,
) -> StorageResult<Option<(Node, Summary)>, S::Error> {
    let mut first = None;
    walk_level(store, owner, level, after, before, |node, summary| {
        first = Some((*node, summary));
        Ok(Take::Stop)
    })?;
    Ok(first)
}

fn last_at_level<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    level: u8,
    after: Option<&Timestamp>,
    before: &Timestamp,
) -> StorageResult<Option<Node>, S::Error> {
    let node = store
        .last_at_level(owner, level, after, before)
        .map_err(Error::Store)?;
    match node {
        Some(node) if !inside(&node.t, after, Some(before)) => Err(Error::Corrupt(OUTSIDE)),
        _ => Ok(node),
    }
}

// ---------------------------------------------------------------------------------------
// Insert (§3.3)

/// Inserts `t` at `level` for `owner`, writing exactly the rows of §3.1; returns `false`
/// (and changes nothing) if `t` is already stored, whatever its level.
///
/// The `hint` is Evolu's strategy. It is checked, never trusted: `Append` costs one
/// `next_timestamp` probe and, when true, skips the search for successors; `Prepend`
/// (above level 1) costs one `prev_timestamp` probe and, when true, skips the
/// predecessors.
///
/// Probes, with T the top level, after one `max_level`: level 1 (75% of inserts) needs
/// T − 1 `scan_level` calls of one row each; level L > 1 two calls per level ≥ L and one
/// per level below L (reading about 2.5 rows).
/// A verified level-1 append needs only its `next_timestamp`. Then one insert and at most
/// T updates: the first node after t on each level whose span changes, about 0.75 per
/// level (as in Evolu's SQL).
pub fn insert<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    t: &Timestamp,
    level: u8,
    hint: Option<Strategy>,
) -> StorageResult<bool, S::Error> {
    if !(1..=MAX_LEVEL).contains(&level) {
        return Err(ArgumentError::Level.into());
    }
    if super::is_reserved_timestamp(t) {
        return Err(ArgumentError::ReservedTimestamp.into());
    }
    let own = Summary::of_timestamp(t);
    let Some(top) = top_level(store, owner)? else {
        return store
            .insert(owner, level, &own.node(*t)?)
            .map_err(Error::Store);
    };

    // A true hint rules out a whole side of t.
    let mut may_have_successors = true;
    let mut may_have_predecessors = true;
    match hint {
        Some(Strategy::Append) => {
            may_have_successors = store
                .next_timestamp(owner, Some(t))
                .map_err(Error::Store)?
                .is_some();
        }
        // A level-1 node needs no predecessors anyway.
        Some(Strategy::Prepend) if level > 1 => {
            may_have_predecessors = store
                .prev_timestamp(owner, t)
                .map_err(Error::Store)?
                .is_some();
        }
        Some(_) | None => {}
    }
    // The span of a level-1 node is t alone, and with nothing before t no span is cut:
    // then only the successors of level > L change (they gain t).
    let needs_predecessors = level > 1 && may_have_predecessors;

    // path[k]: the nodes of exactly level k in (pred≥k+1(t), t), summed. Their spans tile
    // (pred≥k+1(t), pred≥k(t)].
    let mut path: PerLevel<Summary> = [Summary::EMPTY; LEVELS];
    // successor[k]: X_k, the first node of exactly level k after t and before every
    // X_j of a higher level: the only node of level k whose span contains or follows t
    // directly.
    let mut successor: PerLevel<Option<(Node, Summary)>> = [None; LEVELS];
    // pred≥k+1(t) and the first node of level ≥ k+1 after t, as the walk goes down.
    let mut cursor: Option<Timestamp> = None;
    let mut fence: Option<Timestamp> = None;

    for k in (1..=top).rev() {
        if k >= level {
            // Above the new node's level only pred≥L(t) is needed, not the nodes between:
            // jump to the last node of this level before t.
            if needs_predecessors {
                if let Some(node) = last_at_level(store, owner, k, cursor.as_ref(), t)? {
                    cursor = Some(node.t);
                }
            }
            // X_L matters only if t cuts its span, which needs predecessors below L.
            if may_have_successors && (k > level || needs_predecessors) {
                if let Some((node, summary)) =
                    first_at_level(store, owner, k, Some(t), fence.as_ref())?
                {
                    fence = Some(node.t);
                    successor[usize::from(k)] = Some((node, summary));
                }
            }
        } else {
            if !needs_predecessors {
                break;
            }
            // Below L every node between pred≥k+1(t) and t is part of the new span; the
            // first one past t is X_k.
            let (after, before) = (cursor, fence);
            let mut stored = false;
            walk_level(
                store,
                owner,
                k,
                after.as_ref(),
                before.as_ref(),
                |node, summary| {
                    Ok(match node.t.cmp(t) {
                        Ordering::Less => {
                            path[usize::from(k)] = path[usize::from(k)].plus(summary)?;
                            cursor = Some(node.t);
                            Take::Next
                        }
                        Ordering::Equal => {
                            stored = true;
                            Take::Stop
                        }
                        Ordering::Greater => {
                            fence = Some(node.t);
                            successor[usize::from(k)] = Some((*node, summary));
                            Take::Stop
                        }
                    })
                },
            )?;
            if stored {
                return Ok(false);
            }
        }
    }

    // Compute every write before making any, so a corrupt row stops the insert cleanly.
    let planned = plan_writes(t, level, own, &path, &successor);
    let (new_node, updates) = match planned {
        Ok(writes) => writes,
        // A timestamp that is already stored makes the spans look inconsistent (they
        // contain it already); a duplicate changes nothing, so check before reporting.
        Err(Error::Corrupt(what)) => {
            return if store.contains(owner, t).map_err(Error::Store)? {
                Ok(false)
            } else {
                Err(Error::Corrupt(what))
            };
        }
        Err(error) => return Err(error),
    };

    store
        .insert_with_updates(owner, level, &new_node, &updates)
        .map_err(Error::Store)
}

/// The new row and the successors' new metadata, from the walk of [`insert`].
fn plan_writes<E>(
    t: &Timestamp,
    level: u8,
    own: Summary,
    path: &PerLevel<Summary>,
    successor: &PerLevel<Option<(Node, Summary)>>,
) -> StorageResult<(Node, Vec<(u8, Node)>), E> {
    let level = usize::from(level);
    // before[k] = A(k): the stored timestamps in (pred≥k(t), t), for k in 1..=L.
    let mut before: PerLevel<Summary> = [Summary::EMPTY; LEVELS];
    for k in 1..level {
        before[k + 1] = before[k].plus(path[k])?;
    }
    let new_node = own.plus(before[level])?.node(*t)?;
    let mut updates = Vec::new();
    for (k, entry) in successor.iter().enumerate() {
        let Some((node, summary)) = entry else {
            continue;
        };
        let updated = if k > level {
            // t joins the span.
            summary.plus(own)?
        } else if before[k].c > 0 {
            // t, now of level ≥ k, starts the span: the part before t leaves it.
            let rest = summary.minus(before[k])?;
            if rest.c == 0 {
                return Err(Error::Corrupt("a span counts fewer rows than it contains"));
            }
            rest
        } else {
            continue;
        };
        // successor[k] is a node of exactly level k.
        let k = u8::try_from(k).map_err(|_| Error::Corrupt("a level outside 1..10"))?;
        updates.push((k, updated.node(node.t)?));
    }
    Ok((new_node, updates))
}

// ---------------------------------------------------------------------------------------
// Prefix walks by count (size, at, fingerprint, fingerprint_ranges)

/// A position of a walk: everything up to `cursor` is summed in `prefix`, and `fence` is
/// the next node after `cursor` of a level above the one the position belongs to.
#[derive(Clone, Copy, Debug)]
struct Position {
    cursor: Option<Timestamp>,
    prefix: Summary,
    fence: Option<Timestamp>,
    /// The prefix count up to and including `fence`; `u64::MAX` for +∞.
    fence_count: u64,
}

impl Position {
    const START: Self = Self {
        cursor: None,
        prefix: Summary::EMPTY,
        fence: None,
        fence_count: u64::MAX,
    };

    /// Whether a fresh walk towards `target` passes through this position.
    fn leads_to(&self, target: u64) -> bool {
        self.prefix.c <= target && target < self.fence_count
    }
}

/// Where a walk towards a count ended.
enum Seek {
    /// The prefix of exactly the target count.
    Reached(Position),
    /// The whole skiplist is shorter than the target: the position after everything.
    Exhausted(Position),
}

/// Walks towards prefix counts, resuming from where the previous walk passed (a finger
/// search): ascending targets share the top of their paths, as for the 16 buckets of a
/// fingerprint range.
struct CountWalk<'a, S> {
    store: &'a mut S,
    owner: &'a OwnerId,
    top: u8,
    /// `positions[k]`, for k in `lowest..=top`: the last position of the previous walk on
    /// level k whose fence came from a higher level, so walking level k can go on from it.
    positions: PerLevel<Position>,
    lowest: u8,
}

impl<'a, S: SkiplistStore> CountWalk<'a, S> {
    fn new(store: &'a mut S, owner: &'a OwnerId) -> StorageResult<Self, S::Error> {
        let top = top_level(store, owner)?.unwrap_or(0);
        Ok(Self {
            store,
            owner,
            top,
            positions: [Position::START; LEVELS],
            lowest: top,
        })
    }

    /// The prefix of `target` timestamps, or the whole set if it has fewer.
    fn seek(&mut self, target: u64) -> StorageResult<Seek, S::Error> {
        if self.top == 0 {
            return Ok(if target == 0 {
                Seek::Reached(Position::START)
            } else {
                Seek::Exhausted(Position::START)
            });
        }
        // Resume at the deepest position the fresh walk would pass through.
        let mut level = self.lowest;
        while level < self.top && !self.positions[usize::from(level)].leads_to(target) {
            level += 1;
        }
        let mut at = self.positions[usize::from(level)];
        if !at.leads_to(target) {
            at = Position::START;
            level = self.top;
        }
        if at.prefix.c == target {
            return Ok(Seek::Reached(at));
        }
        loop {
            self.positions[usize::from(level)] = at;
            self.lowest = level;
            let (after, before) = (at.cursor, at.fence);
            let mut reached = false;
            let positions = &mut self.positions;
            walk_level(
                self.store,
                self.owner,
                level,
                after.as_ref(),
                before.as_ref(),
                |node, summary| {
                    let through = at.prefix.plus(summary)?;
                    Ok(if through.c <= target {
                        at.cursor = Some(node.t);
                        at.prefix = through;
                        positions[usize::from(level)] = at;
                        reached = through.c == target;
                        if reached {
                            Take::Stop
                        } else {
                            Take::Next
                        }
                    } else {
                        at.fence = Some(node.t);
                        at.fence_count = through.c;
                        Take::Stop
                    })
                },
            )?;
            if reached {
                return Ok(Seek::Reached(at));
            }
            if level == 1 {
                return Ok(Seek::Exhausted(at));
            }
            level -= 1;
        }
    }
}

/// `getSize`: the number of the owner's timestamps (0 for an unknown owner).
///
/// Walks the right edge: the top level plus about 3 nodes per level.
pub fn size<S: SkiplistStore>(store: &mut S, owner: &OwnerId) -> StorageResult<u64, S::Error> {
    match CountWalk::new(store, owner)?.seek(u64::MAX)? {
        Seek::Reached(at) | Seek::Exhausted(at) => Ok(at.prefix.c),
    }
}

/// `getTimestampByIndex`: the timestamp of 0-based rank `index`;
/// [`Error::IndexOutOfRange`] if `index >= size`.
pub fn at<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    index: u64,
) -> StorageResult<Timestamp, S::Error> {
    let target = index.checked_add(1).ok_or(Error::IndexOutOfRange)?;
    match CountWalk::new(store, owner)?.seek(target)? {
        Seek::Reached(Position {
            cursor: Some(t), ..
        }) => Ok(t),
        Seek::Reached(_) | Seek::Exhausted(_) => Err(Error::IndexOutOfRange),
    }
}

/// `fingerprint`: the XOR of the fingerprints of ranks `begin..end`; zero if empty.
/// [`Error::BeginAfterEnd`] if `begin > end`, [`Error::EndPastSize`] if `end > size`
/// (checked for empty ranges too).
pub fn fingerprint<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    begin: u64,
    end: u64,
) -> StorageResult<Fingerprint, S::Error> {
    if begin > end {
        return Err(Error::BeginAfterEnd);
    }
    if end == 0 {
        return Ok(ZERO_FINGERPRINT);
    }
    let mut walk = CountWalk::new(store, owner)?;
    let prefix = |seek| match seek {
        Seek::Reached(at) => Ok(at.prefix),
        Seek::Exhausted(_) => Err(Error::EndPastSize),
    };
    let head = prefix(walk.seek(begin)?)?;
    let whole = prefix(walk.seek(end)?)?;
    Ok(whole.minus(head)?.fingerprint())
}

/// `fingerprintRanges`: for ascending cumulative end ranks b₀ < b₁ < … ≤ size, the
/// fingerprint of each bucket [bᵢ₋₁, bᵢ) (b₋₁ = 0) and its upper bound: the timestamp of
/// rank bᵢ, the first one after the bucket, for every bucket but the last; `None`
/// (Evolu's `InfiniteUpperBound`, or the caller's bound) for the last.
///
/// [`Error::BucketsNotAscending`] or [`Error::BucketPastSize`] otherwise. Each bucket
/// costs the part of its walk not shared with the previous one, plus one
/// `next_timestamp` probe for its upper bound.
pub fn fingerprint_ranges<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    buckets: &[u64],
) -> StorageResult<Vec<FingerprintRange>, S::Error> {
    if buckets.windows(2).any(|pair| pair[0] >= pair[1]) {
        return Err(Error::BucketsNotAscending);
    }
    let mut walk = CountWalk::new(store, owner)?;
    let mut ranges = Vec::with_capacity(buckets.len());
    let mut previous = Summary::EMPTY;
    for (i, &bucket) in buckets.iter().enumerate() {
        let Seek::Reached(at) = walk.seek(bucket)? else {
            return Err(Error::BucketPastSize);
        };
        let upper_bound = if i + 1 == buckets.len() {
            None
        } else {
            // The timestamp of rank `bucket`; none means bucket = size, so the next
            // bucket is past the size.
            let next = walk
                .store
                .next_timestamp(owner, at.cursor.as_ref())
                .map_err(Error::Store)?;
            match next {
                Some(t) if inside(&t, at.cursor.as_ref(), None) => Some(t),
                Some(_) => return Err(Error::Corrupt(OUTSIDE)),
                None => return Err(Error::BucketPastSize),
            }
        };
        ranges.push((upper_bound, at.prefix.minus(previous)?.fingerprint()));
        previous = at.prefix;
    }
    Ok(ranges)
}

// ---------------------------------------------------------------------------------------
// Rank by timestamp (findLowerBound)

/// The number of stored timestamps below `bound`, and whether any is ≥ `bound`.
///
/// `getTimestampCount` stops as soon as the walk lands on the bound itself; so does this.
pub fn rank<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    bound: &Timestamp,
) -> StorageResult<(u64, bool), S::Error> {
    let Some(top) = top_level(store, owner)? else {
        return Ok((0, false));
    };
    let mut cursor: Option<Timestamp> = None;
    let mut fence: Option<Timestamp> = None;
    let mut below = Summary::EMPTY;
    for k in (1..=top).rev() {
        let (after, before) = (cursor, fence);
        let mut landed = None;
        walk_level(
            store,
            owner,
            k,
            after.as_ref(),
            before.as_ref(),
            |node, summary| {
                Ok(match node.t.cmp(bound) {
                    Ordering::Less => {
                        below = below.plus(summary)?;
                        cursor = Some(node.t);
                        Take::Next
                    }
                    Ordering::Equal => {
                        // Everything in the node's span is ≤ bound; the bound itself is one.
                        landed = Some(below.plus(summary)?.c - 1);
                        Take::Stop
                    }
                    Ordering::Greater => {
                        fence = Some(node.t);
                        Take::Stop
                    }
                })
            },
        )?;
        if let Some(below) = landed {
            return Ok((below, true));
        }
    }
    // The fence is now the first stored timestamp ≥ bound, if any.
    Ok((below.c, fence.is_some()))
}

/// `findLowerBound` exactly (Storage.ts): `end` if `end == 0`, `begin == end` or the
/// bound is infinite (`None`); otherwise the rank of the first stored timestamp ≥ `bound`,
/// or `end` if there is none. The result is not clamped to `[begin, end]`.
/// [`Error::BeginAfterEnd`] if `begin > end` (Evolu asserts it).
pub fn lower_bound<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    begin: u64,
    end: u64,
    bound: Option<&Timestamp>,
) -> StorageResult<u64, S::Error> {
    if begin > end {
        return Err(Error::BeginAfterEnd);
    }
    let Some(bound) = bound else {
        return Ok(end);
    };
    if end == 0 || begin == end {
        return Ok(end);
    }
    let (below, found) = rank(store, owner, bound)?;
    Ok(if found { below } else { end })
}
