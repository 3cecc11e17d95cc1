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
//! "Byte for byte" is checked against a copy of the image kept when it was written, for
//! the pages written last: a direct-mapped set of [`KEPT_BYTES`] worth of images (64 pages
//! of 4 KiB), slot = page number mod their count. An image edited on disk behind SQLite's
//! locks — even one that keeps its HMAC — is then not the one written, so the journal
//! encrypts SQLite's own plaintext, as before, and a rollback puts the authentic page back.
//! Pages only read, and pages whose slot a later write took, are encrypted as before too:
//! the pages this helps are the ones rewritten transaction after transaction (page 1
//! always, the leaf an insert appends to, index roots).

/// Bytes of page images kept at most (fewer pages for larger page sizes).
const KEPT_BYTES: usize = 256 << 10;

/// The image of each of the pages this handle wrote last.
#[derive(Default)]
pub(super) struct KnownImages {
    /// Slot `pgno % slots.len()`: (page number, its image as written); page 0: empty.
    slots: Vec<(u32, Vec<u8>)>,
}

impl KnownImages {
    /// This handle just wrote `image` as page `pgno`.
    pub fn note(&mut self, pgno: u32, image: &[u8]) {
        if pgno == 0 || image.is_empty() {
            return;
        }
        if self.slots.is_empty() {
            let count = (KEPT_BYTES / image.len()).clamp(4, 64).next_power_of_two();
            // An optimisation only: without memory for it, journal pages are encrypted.
            // (Not among the allocations the fault sweep fails in turn: failing them fails
            // nothing, by design.)
            if self.slots.try_reserve_exact(count).is_err() {
                return;
            }
            self.slots.resize_with(count, Default::default);
        }
        let at = pgno as usize & (self.slots.len() - 1);
        let (kept_pgno, kept) = &mut self.slots[at];
        *kept_pgno = 0;
        kept.clear();
        if kept.try_reserve_exact(image.len()).is_err() {
            return;
        }
        kept.extend_from_slice(image);
        *kept_pgno = pgno;
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

    /// Whether `image`, just read from the database file, is byte for byte the image
    /// written last as `pgno`.
    pub fn is_known(&self, pgno: u32, image: &[u8]) -> bool {
        self.index_of(pgno)
            .is_some_and(|at| self.slots[at].1[..] == *image)
    }

    /// The slot holding page `pgno`'s image, if one does (never for page 0: empty slots).
    fn index_of(&self, pgno: u32) -> Option<usize> {
        let at = pgno as usize & self.slots.len().checked_sub(1)?;
        (pgno != 0 && self.slots[at].0 == pgno).then_some(at)
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
        assert_eq!(known.slots.len(), 64, "64 pages of 4 KiB");
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
        known.note(3 + 64, &b);
        assert!(!known.is_known(3, &a) && known.is_known(3 + 64, &b));
        known.note(0, &a);
        assert!(!known.may_know(0) && !known.is_known(0, &a));

        // Larger pages: fewer kept (256 KiB), at least 4.
        let mut big = KnownImages::default();
        big.note(1, &vec![1u8; 65536]);
        assert_eq!(big.slots.len(), 4);
    }
}
