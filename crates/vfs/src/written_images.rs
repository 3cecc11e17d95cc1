//! [`WrittenImages`]: the page images a WAL handle encrypted and wrote, so that reading one
//! of them back needs no HMAC check.
//!
//! A checkpoint reads back each page's newest frame, and in an autocommit workload most of
//! them are frames this handle wrote a moment before. In the benchmark's random updates
//! (about two frames per commit) a checkpoint reads back one page for every two commits:
//! checking those HMACs again was nearly a fifth of the codec's time. An image read back that is byte for byte one
//! this handle encrypted as page P, under this file's settled key, is authentic as page P —
//! the bytes the HMAC would be checked over are the ones this handle MACed — so comparing
//! it with the image kept proves what the HMAC check would. Anything else, one byte edited
//! or another page's image, takes the HMAC check (which, as ever, can't tell an older
//! genuine version of P from the newest).
//!
//! Direct-mapped by page number, at most [`SLOTS`] slots and [`BUDGET`] bytes (512 slots
//! of 4 KiB pages, 32 of 64 KiB), filled only by writes. Page 1 is never kept (its salt, its layout and the database handle's
//! page-1 cache take the full path), nor anything written while the codec's salt is
//! provisional (another connection's salt may still replace the key it was encrypted
//! under). Ciphertext only: nothing here needs wiping.

/// Slots of the direct-mapped table: more than the distinct pages one checkpoint interval
/// of the default 1,000 frames writes (in the benchmark's random updates about 250).
const SLOTS: usize = 512;
/// Bytes of images kept at most: fewer slots for larger pages.
const BUDGET: usize = 2 << 20;

#[derive(Default)]
pub(super) struct WrittenImages {
    /// `slots[pgno % SLOTS]`: (pgno, image), allocated when first written.
    slots: Vec<Option<(u32, Box<[u8]>)>>,
    /// Reads the kept image authenticated.
    #[cfg(test)]
    matched: u64,
}

impl WrittenImages {
    /// Keeps `image`, just written as page `pgno` by this handle under a settled key.
    /// Without memory for it, nothing is kept (reads of it take the HMAC check).
    pub fn remember(&mut self, pgno: u32, image: &[u8]) {
        if pgno < 2 {
            return;
        }
        if self.slots.is_empty() {
            let count = (BUDGET / image.len().max(1)).clamp(1, SLOTS);
            let mut slots = Vec::new();
            if slots.try_reserve_exact(count).is_err() {
                return;
            }
            slots.resize_with(count, || None);
            self.slots = slots;
        }
        let count = self.slots.len();
        let slot = &mut self.slots[pgno as usize % count];
        match slot {
            Some((kept, bytes)) if bytes.len() == image.len() => {
                *kept = pgno;
                bytes.copy_from_slice(image);
            }
            _ => {
                *slot = super::try_copy(image)
                    .ok()
                    .map(|bytes| (pgno, bytes.into_boxed_slice()));
            }
        }
    }

    /// Whether `image` is the one kept as page `pgno` (then it is authentic as `pgno`).
    /// Ciphertext is no secret (it is on disk): an ordinary comparison.
    pub fn holds(&mut self, pgno: u32, image: &[u8]) -> bool {
        let held = !self.slots.is_empty()
            && matches!(
                self.slots.get(pgno as usize % self.slots.len()),
                Some(Some((kept, bytes))) if *kept == pgno && **bytes == *image
            );
        #[cfg(test)]
        {
            self.matched += u64::from(held);
        }
        held
    }

    /// Forgets every image: the WAL starts over (its frames are superseded; keeping them
    /// would only hold memory).
    pub fn clear(&mut self) {
        self.slots = Vec::new();
    }

    /// How many reads [`holds`](Self::holds) answered yes to.
    #[cfg(test)]
    pub fn matched(&self) -> u64 {
        self.matched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_image_kept_for_that_page_is_held() {
        let mut images = WrittenImages::default();
        let a = vec![7u8; 64];
        let mut b = a.clone();
        b[63] ^= 1;
        images.remember(2, &a);
        assert!(images.holds(2, &a));
        assert!(!images.holds(2, &b), "one byte edited");
        assert!(
            !images.holds(2 + SLOTS as u32, &a),
            "another page in the same slot"
        );
        assert!(!images.holds(3, &a), "another page");
        images.remember(2 + SLOTS as u32, &b);
        assert!(
            !images.holds(2, &a),
            "replaced by the page sharing its slot"
        );
        assert!(images.holds(2 + SLOTS as u32, &b));
        images.remember(1, &a);
        assert!(!images.holds(1, &a), "page 1 is never kept");
        images.clear();
        assert!(!images.holds(2 + SLOTS as u32, &b));
        assert_eq!(images.matched(), 2);
    }

    #[test]
    fn large_pages_get_fewer_slots() {
        let mut images = WrittenImages::default();
        let page = vec![1u8; 65536];
        images.remember(2, &page);
        assert_eq!(images.slots.len(), BUDGET / 65536);
        assert!(images.holds(2, &page));
        images.remember(2 + 32, &page);
        assert!(!images.holds(2, &page), "32 slots: page 34 takes page 2's");
    }
}
