//! [`KnownImages`]: a rollback journal's record of a page is the page's image from the
//! database file, not a second encryption of its content.
//!
//! Before a transaction first changes page P, SQLite writes P's current content into the
//! rollback journal, which the VFS encrypts like the database page of that number (the
//! same format, key and HMAC binding to P). When the database file holds, byte for byte,
//! the image this database handle last wrote as P, and SQLite's content of P is still the
//! content written, that image is an encryption of exactly what SQLite journals. So the
//! journal takes it as it is — one read of the file instead of a CBC pass, an HMAC and an
//! IV draw per page; in rollback mode a page written by one transaction and changed by the
//! next (page 1 always) was encrypted twice (docs/design.md §4.3).
//!
//! "SQLite's content is the content written" is kept true by forgetting: every write of P
//! replaces what is remembered, every read of P whose image is not the one written forgets
//! it (SQLite now holds another image's content — another connection's, perhaps chosen by
//! an attacker from this handle's ciphertext), and any page read from the WAL forgets them
//! all (`MainDb::follow_wal_reads`).
//!
//! "Byte for byte" takes two checks, both at the time of the journal write, on the image
//! just read from the file (the very bytes the journal then gets):
//! - its reserve — the IV and the HMAC — is the one this handle wrote last as P, remembered
//!   per page for the last [`SLOTS`] pages written (direct-mapped, slot = page number mod
//!   [`SLOTS`]; 84 bytes each, 336 KiB in all, allocated at the first write);
//! - it decrypts to exactly what SQLite journals (`PageCodec::image_holds`, compared in
//!   constant time; page 1's salt too).
//!
//! With SQLite's content the content written, they mean the image is the one written:
//! under the IV written, CBC decryption (with ciphertext stealing too) is a bijection, so a
//! ciphertext that decrypts to the content written is the ciphertext written, and the HMAC
//! beside it the one computed over it. (Without that premise a splice of the written
//! ciphertext's blocks can decrypt to content another connection was made to write: the
//! review's attack, the test in `the_journal_takes_only_the_image_the_database_handle_wrote`.) An image edited on disk
//! behind SQLite's locks, even one that keeps its HMAC, then fails the second check; so does
//! this handle's own old image of the page put back after another connection changed it
//! (SQLite journals the change, which the old image does not hold), and an old ciphertext of
//! the same content under a newer IV and HMAC fails the first. The journal then encrypts
//! SQLite's own plaintext, as before, and a rollback puts the authentic page back. Pages
//! only read, and pages whose slot a later write took, are encrypted as before too.
//!
//! The cost: an 80-byte copy per page written; per page journaled, a read, a CBC
//! decryption (parallel, unlike the encryption it replaces, so much cheaper) and a
//! comparison.

use subtle::ConstantTimeEq;

use cipherlite_codec::RESERVE;

/// Pages whose reserve is remembered at most: a power of two. A 16 MB page cache (the
/// default) holds 4,000 pages of 4 KiB.
const SLOTS: usize = 4096;

/// The reserve (IV and HMAC) of each of the pages this handle wrote last.
#[derive(Default)]
pub(super) struct KnownImages {
    /// Slot `pgno % SLOTS`: (page number, the image's last [`RESERVE`] bytes as written);
    /// page 0: empty. Empty until the first page is written.
    slots: Vec<(u32, [u8; RESERVE])>,
}

impl KnownImages {
    /// This handle just wrote `image` as page `pgno`.
    pub fn note(&mut self, pgno: u32, image: &[u8]) {
        let Some(reserve) = reserve_of(image) else {
            return;
        };
        if pgno == 0 {
            return;
        }
        if self.slots.is_empty() {
            // An optimisation only: without memory for it, journal pages are encrypted.
            // (Not among the allocations the fault sweep fails in turn: failing them fails
            // nothing, by design.)
            if self.slots.try_reserve_exact(SLOTS).is_err() {
                return;
            }
            self.slots.resize(SLOTS, (0, [0; RESERVE]));
        }
        self.slots[pgno as usize & (SLOTS - 1)] = (pgno, *reserve);
    }

    /// Nothing is known any more (SQLite may hold pages read from elsewhere).
    pub fn clear(&mut self) {
        self.slots.clear();
    }

    /// What is on disk for page `pgno` is no longer the image noted (written otherwise, or
    /// a write that failed), or SQLite now holds content of the page read from another
    /// image.
    pub fn forget(&mut self, pgno: u32) {
        if let Some(at) = self.index_of(pgno) {
            self.slots[at].0 = 0;
        }
    }

    /// Whether page `pgno` may be known at all (so that reading its image is worth it).
    pub fn may_know(&self, pgno: u32) -> bool {
        self.index_of(pgno).is_some()
    }

    /// Whether `image`, just read from the database file, ends in the reserve written last
    /// as `pgno` — the first of the two checks (the caller makes the second).
    pub fn reserve_matches(&self, pgno: u32, image: &[u8]) -> bool {
        let (Some(at), Some(reserve)) = (self.index_of(pgno), reserve_of(image)) else {
            return false;
        };
        bool::from(self.slots[at].1.ct_eq(reserve))
    }

    /// The slot holding page `pgno`'s reserve, if one does (never for page 0: empty slots).
    fn index_of(&self, pgno: u32) -> Option<usize> {
        if pgno == 0 || self.slots.is_empty() {
            return None;
        }
        let at = pgno as usize & (SLOTS - 1);
        (self.slots[at].0 == pgno).then_some(at)
    }
}

/// An image's reserve: its last [`RESERVE`] bytes (none if it is shorter).
fn reserve_of(image: &[u8]) -> Option<&[u8; RESERVE]> {
    image.last_chunk::<RESERVE>()
}

#[cfg(test)]
mod tests;
