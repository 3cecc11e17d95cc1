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
    use crate::file_codec::FileCodec;
    use crate::format::WAL_FRAME_HEADER;
    use crate::test_support::{
        append_frames, bytes_at, frame_at, plain_page, test_codec, wal_header_bytes,
        wal_with_header, TempDir,
    };
    use crate::wal::Wal;
    use crate::wal_index::WalIndex;
    use crate::PAGE_SIZE as P;
    use cipherlite_codec::{Page1Layout, PageCodec};
    use cipherlite_sys::ffi;

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

    #[test]
    fn a_wal_image_this_handle_wrote_skips_the_hmac_check_only_while_unchanged() {
        let dir = TempDir::new("written");
        let index = std::sync::Arc::new(WalIndex::default());
        let (mut file, mut w, salts) = wal_with_header(&dir.0, index.clone());
        // The wal-index maps frames 1 and 2 to pages 2 and 3.
        let mut region = vec![0u32; crate::wal_index::REGION_SIZE / 4];
        region[136 / 4] = 2;
        region[136 / 4 + 1] = 3;
        index.mapped(0, region.as_mut_ptr().cast());
        let os = file.os();
        let codec = test_codec();
        let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
        let (two, three) = (plain_page(9), plain_page(13));
        append_frames(&mut w, os, &codec, salts, &[(2, 0, &two), (3, 3, &three)]);
        let page_at = |n: i64| frame_at(n) + WAL_FRAME_HEADER as i64;
        let image2 = bytes_at(os, page_at(1), P);
        let image3 = bytes_at(os, page_at(2), P);
        let mut out = vec![0u8; P];
        let mut read =
            |w: &mut Wal, n: i64, out: &mut [u8]| w.read(os, &codec, &mut scratch, out, page_at(n));

        // Unchanged: decrypted without the HMAC check.
        assert_eq!(read(&mut w, 1, &mut out), ffi::SQLITE_OK);
        assert_eq!(out, two);
        assert_eq!(w.written_images_matched(), 1);

        // One ciphertext byte edited (the HMAC kept): not the image written, and refused.
        let mut edited = image2.clone();
        edited[100] ^= 0x20;
        assert_eq!(os.write(&edited, page_at(1)), ffi::SQLITE_OK);
        assert_eq!(read(&mut w, 1, &mut out), ffi::SQLITE_CORRUPT);
        assert!(out.iter().all(|&b| b == 0));
        // Page 3's authentic image in page 2's frame: not held as page 2, and refused.
        assert_eq!(os.write(&image3, page_at(1)), ffi::SQLITE_OK);
        assert_eq!(read(&mut w, 1, &mut out), ffi::SQLITE_CORRUPT);
        assert_eq!(w.written_images_matched(), 1);
        // Put back: held again.
        assert_eq!(os.write(&image2, page_at(1)), ffi::SQLITE_OK);
        assert_eq!(read(&mut w, 1, &mut out), ffi::SQLITE_OK);
        assert_eq!(out, two);
        assert_eq!(w.written_images_matched(), 2);

        // The WAL starts over: the images are forgotten, and frame 2 still reads (HMAC checked).
        let header = wal_header_bytes(P as u32, salts);
        let mut other_scratch = vec![0u8; P + WAL_FRAME_HEADER];
        assert_eq!(
            w.write(os, &codec, &mut other_scratch, &header, 0),
            ffi::SQLITE_OK
        );
        assert_eq!(read(&mut w, 2, &mut out), ffi::SQLITE_OK);
        assert_eq!(out, three);
        assert_eq!(w.written_images_matched(), 2);
    }

    #[test]
    fn a_wal_image_written_under_a_provisional_salt_is_not_kept() {
        // A new file's codec: another connection's page 1 may still replace its salt, and with
        // it the key this image was encrypted under.
        let dir = TempDir::new("written-unsettled");
        let (mut file, mut w, salts) = wal_with_header(&dir.0, Default::default());
        let os = file.os();
        let raw = [13u8; 32];
        let key = std::sync::Arc::new(crate::key_source::KeySource::new(&crate::VfsKey::Raw(&raw)));
        let codec = FileCodec::new_unsettled(
            PageCodec::new(&raw, [4u8; 16], P).expect("codec"),
            Page1Layout::Sqlite3mc,
            key,
        );
        assert!(codec.is_unsettled());
        let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
        let two = plain_page(9);
        append_frames(&mut w, os, &codec, salts, &[(2, 2, &two)]);
        let page_at = frame_at(1) + WAL_FRAME_HEADER as i64;
        let mut out = vec![0u8; P];
        assert_eq!(
            w.read(os, &codec, &mut scratch, &mut out, page_at),
            ffi::SQLITE_OK
        );
        assert_eq!(out, two);
        assert_eq!(w.written_images_matched(), 0, "read with its HMAC checked");
    }
}
