//! Arbitrary bytes as an encrypted page image: decrypting and verifying never panics, and
//! never accepts an image the key didn't make (the fuzzer can't forge an HMAC-SHA512). The
//! seed corpus holds real page images made with another key ([0x5a; 32]), so the fuzzer
//! starts from well-formed pages that this key must refuse.
#![no_main]

use cipherlite_codec::{Page1Layout, PageCodec};
use libfuzzer_sys::fuzz_target;

const KEY: [u8; 32] = [0xa5; 32];

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let pgno = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
    let page_size = 512usize << (data[4] % 8);
    let image = &data[5..];
    let mut salt = [0u8; 16];
    for (s, b) in salt.iter_mut().zip(image.iter()) {
        *s = *b;
    }
    let Ok(codec) = PageCodec::new(&KEY, salt, page_size) else { return };
    let mut out = vec![0u8; page_size];
    if let Ok(layout) = codec.decrypt_page(pgno, image, &mut out) {
        panic!("an image the key didn't make was accepted as page {pgno} ({layout:?})");
    }
    let _ = codec.detect_page1_layout(image).map(|l| assert!(matches!(l, Page1Layout::SqlCipher | Page1Layout::Sqlite3mc)));
    // Round trip of the input taken as plaintext, then a flipped byte is refused.
    if image.len() >= page_size && pgno > 1 {
        let mut enc = vec![0u8; page_size];
        if codec.encrypt_page(pgno, Page1Layout::SqlCipher, &image[..page_size], &mut enc).is_ok() {
            let mut back = vec![0u8; page_size];
            codec.decrypt_page(pgno, &enc, &mut back).expect("own page decrypts");
            let usable = codec.usable_size();
            assert_eq!(&back[..usable], &image[..usable]);
            let at = usize::from(data[0]) % page_size;
            enc[at] ^= 1 << (data[1] % 8);
            assert!(codec.decrypt_page(pgno, &enc, &mut back).is_err(), "a flipped bit was accepted");
        }
    }
});
