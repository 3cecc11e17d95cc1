//! SQLite's rollback-journal record checksum, for the VFS's journal handling.
//!
//! A journal record is `pgno (BE32) || page image || checksum (BE32)`; its page image is
//! encrypted exactly like the database page with the same number, so [`PageCodec`]
//! encrypts and decrypts it. What differs between engines is the checksum's domain
//! (docs/sqlcipher4-format.md §7): SQLCipher computes it over the **encrypted** image,
//! SQLite3 Multiple Ciphers (and SQLite above any VFS-level codec, like ours) over the
//! **plaintext**. To roll back a SQLCipher journal, the VFS checks the stored checksum
//! against the ciphertext it read and hands SQLite the checksum of the plaintext instead.
//!
//! [`PageCodec`]: super::PageCodec

/// Offset of the checksum nonce (big-endian u32) in the journal header.
pub const JOURNAL_NONCE_OFFSET: usize = 12;

/// SQLite's `pager_cksum`: the nonce plus every 200th byte of the page image, counting down
/// from `len - 200` while the index is positive, with wrapping 32-bit addition.
///
/// Sees only every 200th byte, so it is cheap, and it may run over plaintext: the sum is
/// what SQLite itself would compute.
pub fn journal_checksum(nonce: u32, page_image: &[u8]) -> u32 {
    let mut checksum = nonce;
    let mut index = page_image.len().saturating_sub(200);
    while index > 0 {
        checksum = checksum.wrapping_add(u32::from(page_image[index]));
        index = index.saturating_sub(200);
    }
    checksum
}

#[cfg(test)]
mod tests {
    use super::super::test_support::sample_file;
    use super::super::{read_salt, Page1Layout, PageCodec, DEFAULT_PAGE_SIZE};
    use super::*;

    const P: usize = DEFAULT_PAGE_SIZE;

    fn be32(bytes: &[u8], offset: usize) -> u32 {
        u32::from_be_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"))
    }

    #[test]
    fn checksum_sums_every_200th_byte_from_the_end() {
        let mut page = vec![0u8; 1024];
        // Indices 824, 624, 424, 224, 24 count; 0 and the others do not.
        for (index, value) in [
            (824, 1u8),
            (624, 2),
            (424, 3),
            (224, 4),
            (24, 5),
            (0, 100),
            (1023, 100),
        ] {
            page[index] = value;
        }
        assert_eq!(journal_checksum(1000, &page), 1015);
        assert_eq!(journal_checksum(u32::MAX, &page), 14, "wraps");
        assert_eq!(journal_checksum(7, &[9u8; 200]), 7, "index 0 never counts");
        assert_eq!(journal_checksum(7, &[]), 7);
    }

    /// The hot-journal samples: header, records for pages 2 and 1 encrypted like the
    /// database pages (page 1 with salt and the file's layout), and the checksum domain of
    /// each engine (§7): SQLCipher over the ciphertext, SQLite3MC over the plaintext.
    #[test]
    fn hot_journal_records_decrypt_and_checksums_follow_the_writer() {
        for (name, layout, checksum_over_ciphertext) in [
            ("hot-sqlcipher-4.12.0.sqlite", Page1Layout::SqlCipher, true),
            (
                "hot-sqlite3mc-2.6.1-legacy4.sqlite",
                Page1Layout::SqlCipher,
                false,
            ),
            (
                "hot-sqlite3mc-2.6.1-legacy0.sqlite",
                Page1Layout::Sqlite3mc,
                false,
            ),
        ] {
            let database = sample_file(name);
            let journal = sample_file(&format!("{name}-journal"));
            let codec = PageCodec::new(
                &super::super::test_support::sample_key(),
                read_salt(&database).expect("salt"),
                P,
            )
            .expect("codec");

            assert_eq!(
                journal[..8],
                [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
            );
            let records = be32(&journal, 8) as usize;
            let nonce = be32(&journal, JOURNAL_NONCE_OFFSET);
            let sector_size = be32(&journal, 20) as usize;
            assert_eq!(
                (records, sector_size, be32(&journal, 24)),
                (2, 512, 4096),
                "{name}"
            );

            let mut seen = Vec::new();
            for record in journal[sector_size..].chunks(4 + P + 4).take(records) {
                let pgno = be32(record, 0);
                let image = &record[4..4 + P];
                let stored_checksum = be32(record, 4 + P);
                if pgno == 1 {
                    assert_eq!(image[..16], database[..16], "{name}: salt prefix");
                }

                let mut page = vec![0u8; P];
                let detected = codec.decrypt_page(pgno, image, &mut page);
                assert_eq!(detected, Ok((pgno == 1).then_some(layout)), "{name} {pgno}");

                let (expected, other) = if checksum_over_ciphertext {
                    (
                        journal_checksum(nonce, image),
                        journal_checksum(nonce, &page),
                    )
                } else {
                    (
                        journal_checksum(nonce, &page),
                        journal_checksum(nonce, image),
                    )
                };
                assert_eq!(stored_checksum, expected, "{name} page {pgno} checksum");
                assert_ne!(stored_checksum, other, "{name} page {pgno}: other domain");
                if pgno == 2 {
                    let text = String::from_utf8_lossy(&page);
                    assert!(text.contains("row-1"), "{name}: the journal keeps BASE");
                    assert!(!text.contains("CHANGED-"), "{name}");
                }
                seen.push(pgno);
            }
            seen.sort_unstable();
            assert_eq!(seen, [1, 2], "{name}");
        }
    }
}
