//! A relay's batch in one SQL-function call (`evolu_skiplist_stored`, `evolu_relay_write`,
//! `docs/evolu-storage.md` §7): the encoding of a batch, and a store that remembers, for one
//! owner and the length of one call, what the inserts before have already read.
//!
//! A relay writes its messages in batches (Evolu's protocol sends up to a few hundred per
//! request). One call per message costs a JS-to-native crossing, the bindings and the
//! probes every insert starts with (the owner's highest level, and for an append whether
//! anything follows), each time again; one call per batch pays them once.
//!
//! # The encoding of `evolu_relay_write`'s messages
//!
//! The messages end to end, each:
//!
//! | bytes | field |
//! |---|---|
//! | 16 | the timestamp |
//! | 1 | the skiplist level, 1..=10, or 0 to draw one from the OS generator (§3.2) |
//! | 1 | the strategy hint: 0 none, 1 append, 2 prepend, 3 insert (§3.3) |
//! | 4 | the change's length, unsigned big-endian |
//! | n | the change |
//!
//! The whole batch is decoded and checked before anything is written.

use super::{ArgumentError, Node, OwnerId, SkiplistStore, Strategy, Timestamp, MAX_LEVEL};
use super::{INFINITE_TIMESTAMP, TIMESTAMP_LEN};

/// Bytes before a message's change: timestamp, level, strategy, length.
const HEADER_LEN: usize = TIMESTAMP_LEN + 1 + 1 + 4;

/// One message of a batch, as decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMessage<'a> {
    pub t: Timestamp,
    /// `None`: draw the level.
    pub level: Option<u8>,
    pub strategy: Option<Strategy>,
    pub change: &'a [u8],
}

/// Decodes `evolu_relay_write`'s messages (module documentation), all or nothing.
pub fn decode_messages(bytes: &[u8]) -> Result<Vec<BatchMessage<'_>>, ArgumentError> {
    let mut messages = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (header, tail) = rest
            .split_at_checked(HEADER_LEN)
            .ok_or(ArgumentError::Messages)?;
        let (t, header) = header.split_at(TIMESTAMP_LEN);
        let t: Timestamp = t.try_into().map_err(|_| ArgumentError::Messages)?;
        let (level, strategy, length) = match header {
            [level, strategy, a, b, c, d] => (*level, *strategy, [*a, *b, *c, *d]),
            _ => return Err(ArgumentError::Messages),
        };
        let level = match level {
            0 => None,
            1..=MAX_LEVEL => Some(level),
            _ => return Err(ArgumentError::Level),
        };
        let strategy = match strategy {
            0 => None,
            1 => Some(Strategy::Append),
            2 => Some(Strategy::Prepend),
            3 => Some(Strategy::Insert),
            _ => return Err(ArgumentError::Strategy),
        };
        let length =
            usize::try_from(u32::from_be_bytes(length)).map_err(|_| ArgumentError::Messages)?;
        let (change, tail) = tail
            .split_at_checked(length)
            .ok_or(ArgumentError::Messages)?;
        messages.push(BatchMessage {
            t,
            level,
            strategy,
            change,
        });
        rest = tail;
    }
    Ok(messages)
}

/// Splits `evolu_skiplist_stored`'s timestamps (16 bytes each, end to end).
pub fn decode_timestamps(bytes: &[u8]) -> Result<Vec<Timestamp>, ArgumentError> {
    let (chunks, rest) = bytes.as_chunks::<TIMESTAMP_LEN>();
    if rest.is_empty() {
        Ok(chunks.to_vec())
    } else {
        Err(ArgumentError::Timestamps)
    }
}

/// `evolu_skiplist_stored`: for each of `timestamps`, 1 if the owner has it stored, 0 if
/// not. The owner's last timestamp is read first, and only a timestamp at or below it is
/// looked up: nothing above it is stored, and a relay's batch is mostly newer than
/// everything the owner has, so most of a batch costs no probe.
pub fn stored<S: SkiplistStore>(
    store: &mut S,
    owner: &OwnerId,
    timestamps: &[Timestamp],
) -> Result<Vec<u8>, S::Error> {
    let mut answers = Vec::with_capacity(timestamps.len());
    if timestamps.is_empty() {
        return Ok(answers);
    }
    // INFINITE_TIMESTAMP is never stored (and is no bound below itself): the last
    // timestamp before it is the owner's last.
    let last = store.prev_timestamp(owner, &INFINITE_TIMESTAMP)?;
    for t in timestamps {
        let newer = *t != INFINITE_TIMESTAMP && last.is_none_or(|last| *t > last);
        answers.push(u8::from(!newer && store.contains(owner, t)?));
    }
    Ok(answers)
}

/// A store for the inserts of one owner within one call: the owner's highest level and
/// last timestamp are read once and then kept up to date from the inserts themselves, so
/// that an append costs its write only. Nothing else writes `evolu_timestamp` while the
/// call runs (the table is the functions' own, `sql_functions.rs`), and rows are never
/// removed by an insert, so what it remembers stays true. Other owners go straight
/// through.
pub struct BatchStore<'s, S> {
    inner: &'s mut S,
    owner: OwnerId,
    /// The owner's highest level, once read (`Some(None)`: the owner has no rows).
    max_level: Option<Option<i64>>,
    /// The owner's last timestamp, once read.
    last: Option<Option<Timestamp>>,
}

impl<'s, S: SkiplistStore> BatchStore<'s, S> {
    pub fn new(inner: &'s mut S, owner: OwnerId) -> Self {
        Self {
            inner,
            owner,
            max_level: None,
            last: None,
        }
    }

    /// The store underneath, for writes this one does not see (they must not touch
    /// `evolu_timestamp`).
    pub fn inner(&mut self) -> &mut S {
        self.inner
    }

    /// After a new row of the owner's at `level`.
    fn inserted(&mut self, level: u8, t: &Timestamp) {
        if let Some(known) = &mut self.max_level {
            *known = Some(known.map_or(i64::from(level), |m| m.max(i64::from(level))));
        }
        if let Some(known) = &mut self.last {
            if known.is_none_or(|last| *t > last) {
                *known = Some(*t);
            }
        }
    }
}

impl<S: SkiplistStore> SkiplistStore for BatchStore<'_, S> {
    type Error = S::Error;

    fn max_level(&mut self, owner: &OwnerId) -> Result<Option<i64>, S::Error> {
        if *owner != self.owner {
            return self.inner.max_level(owner);
        }
        if let Some(known) = self.max_level {
            return Ok(known);
        }
        let level = self.inner.max_level(owner)?;
        self.max_level = Some(level);
        Ok(level)
    }

    fn scan_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: Option<&Timestamp>,
        visit: &mut dyn FnMut(&Node) -> bool,
    ) -> Result<(), S::Error> {
        self.inner.scan_level(owner, level, after, before, visit)
    }

    fn last_at_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: &Timestamp,
    ) -> Result<Option<Node>, S::Error> {
        self.inner.last_at_level(owner, level, after, before)
    }

    fn next_timestamp(
        &mut self,
        owner: &OwnerId,
        after: Option<&Timestamp>,
    ) -> Result<Option<Timestamp>, S::Error> {
        let Some(after) = after.filter(|_| *owner == self.owner) else {
            return self.inner.next_timestamp(owner, after);
        };
        let last = match self.last {
            Some(last) => last,
            None => {
                // INFINITE_TIMESTAMP is never stored: the last timestamp before it is the
                // owner's last.
                let last = self.inner.prev_timestamp(owner, &INFINITE_TIMESTAMP)?;
                self.last = Some(last);
                last
            }
        };
        match last {
            Some(last) if last > *after => self.inner.next_timestamp(owner, Some(after)),
            _ => Ok(None),
        }
    }

    fn prev_timestamp(
        &mut self,
        owner: &OwnerId,
        before: &Timestamp,
    ) -> Result<Option<Timestamp>, S::Error> {
        self.inner.prev_timestamp(owner, before)
    }

    fn contains(&mut self, owner: &OwnerId, t: &Timestamp) -> Result<bool, S::Error> {
        self.inner.contains(owner, t)
    }

    fn insert(&mut self, owner: &OwnerId, level: u8, node: &Node) -> Result<bool, S::Error> {
        let inserted = self.inner.insert(owner, level, node)?;
        if inserted && *owner == self.owner {
            self.inserted(level, &node.t);
        }
        Ok(inserted)
    }

    fn update(&mut self, owner: &OwnerId, node: &Node) -> Result<(), S::Error> {
        self.inner.update(owner, node)
    }

    fn insert_with_updates(
        &mut self,
        owner: &OwnerId,
        level: u8,
        node: &Node,
        updates: &[(u8, Node)],
    ) -> Result<bool, S::Error> {
        let inserted = self
            .inner
            .insert_with_updates(owner, level, node, updates)?;
        if inserted && *owner == self.owner {
            self.inserted(level, &node.t);
        }
        Ok(inserted)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::memory::MemoryStore;
    use crate::test_support::{timestamp, SplitMix};

    fn encode(t: &Timestamp, level: u8, strategy: u8, change: &[u8]) -> Vec<u8> {
        let mut out = t.to_vec();
        out.push(level);
        out.push(strategy);
        out.extend_from_slice(&u32::try_from(change.len()).expect("small").to_be_bytes());
        out.extend_from_slice(change);
        out
    }

    #[test]
    fn decodes_messages_and_refuses_malformed_batches() {
        let t1 = timestamp(1, 0, 7);
        let t2 = timestamp(2, 0, 7);
        let mut bytes = encode(&t1, 3, 1, b"abc");
        bytes.extend(encode(&t2, 0, 0, b""));
        let messages = decode_messages(&bytes).expect("decodes");
        assert_eq!(
            messages,
            [
                BatchMessage {
                    t: t1,
                    level: Some(3),
                    strategy: Some(Strategy::Append),
                    change: b"abc"
                },
                BatchMessage {
                    t: t2,
                    level: None,
                    strategy: None,
                    change: b""
                },
            ]
        );
        assert_eq!(decode_messages(&[]), Ok(vec![]));
        // Cut anywhere: refused.
        for cut in 1..bytes.len() {
            if cut == 16 + 6 + 3 {
                continue; // the end of the first message
            }
            assert_eq!(
                decode_messages(&bytes[..cut]),
                Err(ArgumentError::Messages),
                "{cut}"
            );
        }
        assert_eq!(
            decode_messages(&encode(&t1, 11, 0, b"")),
            Err(ArgumentError::Level)
        );
        assert_eq!(
            decode_messages(&encode(&t1, 1, 4, b"")),
            Err(ArgumentError::Strategy)
        );
        assert_eq!(decode_timestamps(&[t1, t2].concat()), Ok(vec![t1, t2]));
        assert_eq!(decode_timestamps(&[0; 17]), Err(ArgumentError::Timestamps));
    }

    /// Inserting through a BatchStore writes the rows plain inserts write, with any hints
    /// (right or wrong), and saves the probes it remembers.
    #[test]
    fn batch_store_writes_the_same_rows_with_fewer_probes() {
        let owner = [0x11; 16];
        let other = [0x22; 16];
        let mut rng = SplitMix(42);
        for round in 0..40 {
            let mut plain = MemoryStore::new();
            let mut batched = MemoryStore::new();
            // Some rows before the batch, of both owners.
            for i in 0..rng.below(50) {
                let level = u8::try_from(1 + (i * 7 + round) % 4).expect("small");
                let t = timestamp(1000 + 10 * i as u64, 0, 1);
                for o in [owner, other] {
                    crate::insert(&mut plain, &o, &t, level, None).expect("insert");
                    crate::insert(&mut batched, &o, &t, level, None).expect("insert");
                }
            }
            let mut batch = Vec::new();
            for i in 0..200u64 {
                let millis = if rng.below(4) == 0 {
                    rng.below(3000) as u64
                } else {
                    2000 + 10 * i
                };
                let level = u8::try_from(rng.level()).expect("level");
                let hint = [
                    None,
                    Some(Strategy::Append),
                    Some(Strategy::Prepend),
                    Some(Strategy::Insert),
                ][rng.below(4)];
                batch.push((timestamp(millis, 0, 1), level, hint));
            }
            let mut plain_inserted = Vec::new();
            for (t, level, hint) in &batch {
                plain_inserted
                    .push(crate::insert(&mut plain, &owner, t, *level, *hint).expect("insert"));
            }
            let probes_before = batched.probes;
            let mut store = BatchStore::new(&mut batched, owner);
            let mut batched_inserted = Vec::new();
            for (t, level, hint) in &batch {
                batched_inserted
                    .push(crate::insert(&mut store, &owner, t, *level, *hint).expect("insert"));
            }
            assert_eq!(batched_inserted, plain_inserted, "round {round}");
            assert_eq!(batched.dump(&owner), plain.dump(&owner), "round {round}");
            assert_eq!(batched.dump(&other), plain.dump(&other), "round {round}");
            assert!(
                batched.probes - probes_before < plain.probes,
                "round {round}"
            );
        }
    }

    /// `stored` answers what a lookup of each timestamp answers, and looks up only those
    /// at or below the owner's last.
    #[test]
    fn stored_probes_only_what_may_be_stored() {
        let owner = [0x11; 16];
        let other = [0x22; 16];
        let mut rng = SplitMix(7);
        let mut memory = MemoryStore::new();
        assert_eq!(stored(&mut memory, &owner, &[]), Ok(vec![]));
        assert_eq!(memory.probes, 0);
        // No rows: one probe, all new (the reserved +∞ is still looked up).
        let fresh = [timestamp(5, 0, 1), INFINITE_TIMESTAMP];
        assert_eq!(stored(&mut memory, &owner, &fresh), Ok(vec![0, 0]));
        assert_eq!(memory.probes, 2);
        for i in 0..300u64 {
            let level = u8::try_from(rng.level()).expect("level");
            crate::insert(&mut memory, &owner, &timestamp(10 * i, 0, 1), level, None)
                .expect("insert");
            crate::insert(&mut memory, &other, &timestamp(10 * i + 5, 0, 1), 1, None)
                .expect("insert");
        }
        let mut batch = Vec::new();
        let mut at_or_below_last = 0;
        for _ in 0..200 {
            let millis = rng.below(4000) as u64;
            let t = timestamp(millis - millis % 5, 0, 1);
            if millis <= 2990 {
                at_or_below_last += 1;
            }
            batch.push(t);
        }
        batch.push(INFINITE_TIMESTAMP);
        let expected = batch
            .iter()
            .map(|t| u8::from(memory.contains(&owner, t).expect("contains")))
            .collect::<Vec<_>>();
        assert!(expected.contains(&0) && expected.contains(&1));
        let probes = memory.probes;
        assert_eq!(stored(&mut memory, &owner, &batch), Ok(expected));
        // The last timestamp, each one at or below it, and +∞.
        assert_eq!(memory.probes - probes, 1 + at_or_below_last + 1);
    }

    /// A run of level-1 appends reads the owner's state once, then only writes.
    #[test]
    fn appends_cost_their_write_only() {
        let owner = [0x11; 16];
        let mut memory = MemoryStore::new();
        crate::insert(&mut memory, &owner, &timestamp(1, 0, 1), 3, None).expect("insert");
        let probes = memory.probes;
        let mut store = BatchStore::new(&mut memory, owner);
        for millis in 2..102 {
            crate::insert(
                &mut store,
                &owner,
                &timestamp(millis, 0, 1),
                1,
                Some(Strategy::Append),
            )
            .expect("insert");
        }
        // max_level and the last timestamp, once each.
        assert_eq!(memory.probes - probes, 2);
        assert_eq!(memory.writes, 101);
    }
}
