//! [`KnownImages`]: a rollback journal's record of a page is the page's image from the
//! database file, not a second encryption of its content.
//!
//! Before a transaction first changes page P, SQLite writes P's current content into the
//! rollback journal, which the VFS encrypts like the database page of that number (the
//! same format, key and HMAC binding to P). When the database file holds, byte for byte,
//! the image this database handle last wrote as P, that image *is* an encryption of P's
//! current content: SQLite journals a page before it writes it, its cache is valid only
//! while the file is unchanged, and every later write of P through this handle replaces
//! what is remembered. So the journal takes that image as it is — one read of the file
//! instead of a CBC pass, an HMAC and an IV draw per page; in rollback mode a page written
//! by one transaction and changed by the next (page 1 always) was encrypted twice
//! (docs/design.md §4.3).
//!
//! "Byte for byte" is checked by a fingerprint of the image taken when it was written: a
//! BLAKE3 hash under a key drawn for this handle, for the last [`SLOTS`] pages written
//! (direct-mapped, slot = page number mod [`SLOTS`]; 36 bytes each, 144 KiB in all). An
//! image edited on disk behind SQLite's locks — even one that keeps its HMAC — has another
//! fingerprint (finding one with the same would be a BLAKE3 second preimage, under a key
//! that never leaves this process), so the journal encrypts SQLite's own plaintext, as
//! before, and a rollback puts the authentic page back. Pages only read, and pages whose
//! slot a later write took, are encrypted as before too.
//!
//! The image being one this handle wrote makes it authentic, not current: another
//! connection may have changed the page since (SQLite then read the change), and an
//! attacker put this handle's old image back. So the journal also decrypts the image and
//! compares it with what SQLite journals (`PageCodec::image_holds`, in constant time)
//! before taking it.
//!
//! The cost: a hash per page written (2.4 µs against the encryption's 10.7 in one
//! `cargo bench` run on a busy host; 22%), and per page journaled a hash and a decryption,
//! which save the encryption. A byte copy of the images (the first version) cost a copy instead of a hash
//! but held 64 pages in 256 KiB; the speed test's transactions rewrite thousands.

use subtle::ConstantTimeEq;

/// Pages whose fingerprint is kept at most: a power of two. A 16 MB page cache (the
/// default) holds 4,000 pages of 4 KiB.
const SLOTS: usize = 4096;

/// A fingerprint of each of the pages this handle wrote last.
pub(super) struct KnownImages {
    /// The BLAKE3 key of this handle's fingerprints, random, never written anywhere; none
    /// when the OS gave no random bytes (then nothing is known: the journal encrypts).
    key: Option<[u8; 32]>,
    /// Slot `pgno % SLOTS`: (page number, fingerprint of its image as written); page 0:
    /// empty. Empty until the first page is written.
    slots: Vec<(u32, [u8; 32])>,
}

impl Default for KnownImages {
    fn default() -> Self {
        let mut key = [0u8; 32];
        KnownImages {
            key: getrandom::fill(&mut key).is_ok().then_some(key),
            slots: Vec::new(),
        }
    }
}

impl Drop for KnownImages {
    fn drop(&mut self) {
        if let Some(key) = &mut self.key {
            zeroize::Zeroize::zeroize(key);
        }
    }
}

impl KnownImages {
    fn fingerprint(key: &[u8; 32], image: &[u8]) -> [u8; 32] {
        *blake3::keyed_hash(key, image).as_bytes()
    }

    /// This handle just wrote `image` as page `pgno`.
    pub fn note(&mut self, pgno: u32, image: &[u8]) {
        let Some(key) = &self.key else { return };
        if pgno == 0 || image.is_empty() {
            return;
        }
        if self.slots.is_empty() {
            // An optimisation only: without memory for it, journal pages are encrypted.
            // (Not among the allocations the fault sweep fails in turn: failing them fails
            // nothing, by design.)
            if self.slots.try_reserve_exact(SLOTS).is_err() {
                return;
            }
            self.slots.resize(SLOTS, (0, [0; 32]));
        }
        let fingerprint = Self::fingerprint(key, image);
        self.slots[pgno as usize & (SLOTS - 1)] = (pgno, fingerprint);
    }

    /// What is on disk for page `pgno` is no longer the image noted (written otherwise, or
    /// a write that failed).
    pub fn forget(&mut self, pgno: u32) {
        if let Some(at) = self.index_of(pgno) {
            self.slots[at].0 = 0;
        }
    }

    /// Whether page `pgno` may be known at all (so that reading its image is worth it).
    pub fn may_know(&self, pgno: u32) -> bool {
        self.index_of(pgno).is_some()
    }

    /// Whether `image`, just read from the database file, is the image written last as
    /// `pgno` (its fingerprint is).
    pub fn is_known(&self, pgno: u32, image: &[u8]) -> bool {
        let (Some(at), Some(key)) = (self.index_of(pgno), &self.key) else {
            return false;
        };
        bool::from(self.slots[at].1.ct_eq(&Self::fingerprint(key, image)))
    }

    /// The slot holding page `pgno`'s fingerprint, if one does (never for page 0: empty
    /// slots).
    fn index_of(&self, pgno: u32) -> Option<usize> {
        if pgno == 0 || self.slots.is_empty() {
            return None;
        }
        let at = pgno as usize & (SLOTS - 1);
        (self.slots[at].0 == pgno).then_some(at)
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
    fn only_the_image_written_last_for_a_page_is_known() {
        let mut known = KnownImages::default();
        let (a, b) = (image(3), image(5));
        assert!(
            !known.may_know(7) && !known.is_known(7, &a),
            "nothing noted"
        );
        known.note(7, &a);
        assert_eq!(known.slots.len(), SLOTS);
        assert!(known.may_know(7) && known.is_known(7, &a));
        assert!(!known.is_known(7, &b), "another image of the page");
        assert!(!known.is_known(8, &a), "the image as another page");
        // Any byte changed, the end (the HMAC) kept: not the image written.
        let mut edited = a.clone();
        edited[100] ^= 1;
        assert!(!known.is_known(7, &edited));
        assert!(!known.is_known(7, &a[..4000]), "a shorter image");
        known.note(7, &b);
        assert!(
            !known.is_known(7, &a) && known.is_known(7, &b),
            "the newest only"
        );
        known.forget(7);
        assert!(!known.may_know(7) && !known.is_known(7, &b), "forgotten");
        known.forget(12345);

        // A page whose slot a later write took is not known; page 0 never is.
        known.note(3, &a);
        known.note(3 + SLOTS as u32, &b);
        assert!(!known.is_known(3, &a) && known.is_known(3 + SLOTS as u32, &b));
        assert!(!known.is_known(3, &b), "the slot's image as another page");
        known.note(0, &a);
        assert!(!known.may_know(0) && !known.is_known(0, &a));

        // Another handle's fingerprints are under another key.
        let other = KnownImages::default();
        let (Some(mine), Some(theirs)) = (known.key, other.key) else {
            panic!("no random key");
        };
        assert_ne!(
            KnownImages::fingerprint(&mine, &a),
            KnownImages::fingerprint(&theirs, &a)
        );
    }
}
