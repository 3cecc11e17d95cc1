//! [`KnownImages`]: a rollback journal's record of a page is the page's image from the
//! database file, not a second encryption of its content.
//!
//! Before a transaction first changes page P, SQLite writes P's current content into the
//! rollback journal, which the VFS encrypts like the database page of that number (the
//! same format, key and HMAC binding to P). The database file holds an image of exactly that
//! content already: SQLite journals a page before it writes it, and its cache is valid only
//! while the file is unchanged. So the journal can take that image as it is — one read of
//! the file instead of a CBC pass, an HMAC and an IV draw per page, which in rollback mode
//! was as much again as the database writes themselves (docs/design.md §4.3).
//!
//! The image is taken only when it is the one this database handle last authenticated or
//! wrote for P: its last 16 bytes (the end of its HMAC, which binds the IV, the page number
//! and every ciphertext byte) equal the ones noted then. An image another connection wrote
//! since, a page never authenticated (zeros of a new file), a page this handle doesn't
//! remember: all are encrypted afresh from SQLite's plaintext, as before. What is copied is
//! checked again like every journal page when it is played back: an image changed on disk
//! behind SQLite's locks fails there, as a torn or tampered record does.
//!
//! Remembered per handle in a direct-mapped table (page number and image end, 20 bytes a
//! page): as many slots as the largest page number noted, rounded up to a power of two, at
//! most [`SLOTS`] (320 KiB, a 64 MiB database of 4 KiB pages); beyond that a page whose slot
//! another page took is just encrypted again.

/// Pages remembered at most; a power of two (slot = page number mod the table's length).
const SLOTS: usize = 1 << 14;
/// The table's first length.
const FIRST_SLOTS: usize = 64;
/// How much of an image's end is compared: the last 16 bytes of its HMAC.
const TAIL: usize = 16;

#[derive(Clone, Copy, Default)]
struct Slot {
    pgno: u32,
    tail: [u8; TAIL],
}

/// The compared end of a page image.
pub(super) type ImageEnd = [u8; TAIL];

/// The last 16 bytes of `image` (zeros if it is shorter), taken before it is decrypted in
/// place.
pub(super) fn image_end(image: &[u8]) -> ImageEnd {
    let mut end = [0u8; TAIL];
    if let Some(tail) = image.len().checked_sub(TAIL).and_then(|at| image.get(at..)) {
        end.copy_from_slice(tail);
    }
    end
}

/// The image of each page (by its last 16 bytes) that this handle last authenticated or
/// wrote.
#[derive(Default)]
pub(super) struct KnownImages {
    slots: Vec<Slot>,
}

impl KnownImages {
    /// Page `pgno`'s image on disk is now the one ending in `end` (authenticated, or written
    /// by this handle). A zero end was never authenticated (a new file's page read as
    /// zeros): the page is then not known.
    pub fn note(&mut self, pgno: u32, end: ImageEnd) {
        if end == [0; TAIL] {
            return self.forget(pgno);
        }
        self.grow_for(pgno);
        if let Some(at) = self.slot_of(pgno) {
            self.slots[at] = Slot { pgno, tail: end };
        }
    }

    /// Grows the table (up to [`SLOTS`]) so that `pgno` has a slot of its own.
    fn grow_for(&mut self, pgno: u32) {
        let len = self.slots.len();
        if len >= SLOTS || (pgno as usize) < len {
            return;
        }
        let new_len = (pgno as usize + 1)
            .next_power_of_two()
            .clamp(FIRST_SLOTS, SLOTS);
        // An optimisation only: without memory for it, journal pages are encrypted. (Not
        // one of the allocations the fault sweep fails in turn: failing it fails nothing,
        // by design.)
        let mut slots = Vec::new();
        if slots.try_reserve_exact(new_len).is_err() {
            return;
        }
        slots.resize(new_len, Slot::default());
        for slot in self.slots.drain(..).filter(|s| s.pgno != 0) {
            slots[slot.pgno as usize & (new_len - 1)] = slot;
        }
        self.slots = slots;
    }

    /// What is on disk for page `pgno` is no longer known (a write that failed).
    pub fn forget(&mut self, pgno: u32) {
        if let Some(at) = self.slot_of(pgno) {
            if self.slots[at].pgno == pgno {
                self.slots[at] = Slot::default();
            }
        }
    }

    /// Whether page `pgno` may be known at all (so that reading its image is worth it).
    pub fn may_know(&self, pgno: u32) -> bool {
        self.noted(pgno).is_some()
    }

    /// Whether `image`, just read from the database file, is the image noted for `pgno`.
    pub fn is_known(&self, pgno: u32, image: &[u8]) -> bool {
        let end = image_end(image);
        end != [0; TAIL] && self.noted(pgno).is_some_and(|slot| slot.tail == end)
    }

    /// The slot page `pgno` goes in (none while the table is empty).
    fn slot_of(&self, pgno: u32) -> Option<usize> {
        (!self.slots.is_empty()).then(|| pgno as usize & (self.slots.len() - 1))
    }

    /// The slot holding page `pgno`, if it does (never for page 0, which SQLite hasn't).
    fn noted(&self, pgno: u32) -> Option<&Slot> {
        let slot = &self.slots[self.slot_of(pgno)?];
        (pgno != 0 && slot.pgno == pgno).then_some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(seed: u8) -> Vec<u8> {
        (0..4096u32)
            .map(|i| (i as u8).wrapping_mul(seed) ^ seed)
            .collect()
    }

    #[test]
    fn only_the_image_noted_last_for_a_page_is_known() {
        let mut known = KnownImages::default();
        let (a, b) = (image(3), image(5));
        assert!(
            !known.may_know(7) && !known.is_known(7, &a),
            "nothing noted"
        );
        known.note(7, image_end(&a));
        assert!(known.may_know(7) && known.is_known(7, &a));
        assert!(!known.is_known(7, &b), "another image of the page");
        assert!(!known.is_known(8, &a), "the image as another page");
        known.note(7, image_end(&b));
        assert!(
            !known.is_known(7, &a) && known.is_known(7, &b),
            "the newest only"
        );
        known.forget(7);
        assert!(!known.may_know(7) && !known.is_known(7, &b), "forgotten");

        // Zeros were never authenticated: noting them forgets the page.
        known.note(9, image_end(&a));
        known.note(9, image_end(&[0u8; 4096]));
        assert!(!known.is_known(9, &a) && !known.is_known(9, &[0u8; 4096]));

        // The table grows with the page numbers noted, keeping what it knew, up to SLOTS;
        // past that a page whose slot another took is not known; page 0 never is.
        known.note(3, image_end(&a));
        known.note(1000, image_end(&b));
        assert_eq!(known.slots.len(), 1024);
        assert!(known.is_known(3, &a) && known.is_known(1000, &b));
        known.note(3 + SLOTS as u32, image_end(&b));
        assert_eq!(known.slots.len(), SLOTS, "at most SLOTS");
        assert!(known.is_known(1000, &b), "kept through growth");
        assert!(!known.is_known(3, &a) && known.is_known(3 + SLOTS as u32, &b));
        assert!(!known.may_know(0) && !known.is_known(0, &[0u8; 4096]));
        assert!(!known.is_known(5, &a[..8]), "shorter than the compared end");
    }
}
