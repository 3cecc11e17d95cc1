//! Page codec micro-benchmarks: one 4 KiB page encrypted and decrypted (page 1 in both
//! layouts and a page n > 1), the primitives under it (AES-256-CBC over the 4016 encrypted
//! bytes of a page, HMAC-SHA512 over the 4032 authenticated bytes, both one after the
//! other as a page write ran them before `codec::x86_64::stitched`, the IV draw) and the key
//! setup; and the WAL frame checksum (SQLite's loop and the block form). Run with
//! `cargo bench --bench codec`; the CPU features in use are printed first.

use std::hint::black_box;

use aes::cipher::KeyInit;
use aes::Aes256;
use cipherlite_codec::cbc::{cbc_decrypt_in_place, cbc_encrypt_in_place};
use cipherlite_codec::{
    cpu_features, derive_hmac_key, random_salt, CipherScheme, Page1Layout, PageCodec,
    DEFAULT_PAGE_SIZE, HMAC_SIZE, RESERVE,
};
use cipherlite_vfs::checksum::{serial_wal_checksum, wal_checksum};
use criterion::{BatchSize, Criterion, Throughput};
use hmac::{Hmac, Mac};
use sha2::Sha512;

const PAGE: usize = DEFAULT_PAGE_SIZE;
const KEY: [u8; 32] = [0x2f; 32];
const SALT: [u8; 16] = [0x25; 16];

/// A plaintext page 1 with a header SQLite would write (4096-byte pages, 80 reserved).
fn plaintext_page1() -> Vec<u8> {
    let mut page = vec![0x42u8; PAGE];
    page[..16].copy_from_slice(b"SQLite format 3\0");
    page[16..24].copy_from_slice(&[0x10, 0x00, 1, 1, RESERVE as u8, 64, 32, 32]);
    page
}

fn page_benches(c: &mut Criterion) {
    let codec = PageCodec::new(&KEY, SALT, PAGE).expect("valid codec");
    let page1 = plaintext_page1();
    let page_n = vec![0x0du8; PAGE];
    let cases = [
        (
            "page 1, SQLCipher layout",
            1u32,
            Page1Layout::SqlCipher,
            &page1,
        ),
        (
            "page 1, SQLite3MC layout",
            1,
            Page1Layout::Sqlite3mc,
            &page1,
        ),
        ("page n>1", 1234, Page1Layout::SqlCipher, &page_n),
    ];

    let mut group = c.benchmark_group("page 4 KiB");
    group.throughput(Throughput::Bytes(PAGE as u64));
    for (name, pgno, layout, plaintext) in cases {
        let mut image = vec![0u8; PAGE];
        group.bench_function(format!("encrypt {name}"), |b| {
            b.iter(|| {
                codec
                    .encrypt_page(black_box(pgno), layout, black_box(plaintext), &mut image)
                    .expect("encrypt")
            })
        });
        codec
            .encrypt_page(pgno, layout, plaintext, &mut image)
            .expect("encrypt");
        let mut out = vec![0u8; PAGE];
        group.bench_function(format!("decrypt {name}"), |b| {
            b.iter(|| {
                codec
                    .decrypt_page(black_box(pgno), black_box(&image), &mut out)
                    .expect("decrypt")
            })
        });
        group.bench_function(format!("decrypt in place {name}"), |b| {
            b.iter_batched_ref(
                || image.clone(),
                |buffer| codec.decrypt_page_in_place(pgno, buffer).expect("decrypt"),
                BatchSize::SmallInput,
            )
        });
    }
    // A rollback journal's check that a copied image holds SQLite's content
    // (crates/vfs/src/journal_copy.rs): decrypt into a page of scratch and compare.
    let mut image_n = vec![0u8; PAGE];
    codec
        .encrypt_page(5, Page1Layout::SqlCipher, &page_n, &mut image_n)
        .expect("encrypt");
    let mut work = vec![0u8; PAGE];
    group.bench_function("image holds the plaintext (journal copy check)", |b| {
        b.iter(|| {
            codec.image_holds(
                5,
                Page1Layout::SqlCipher,
                black_box(&image_n),
                black_box(&page_n),
                &mut work,
            )
        })
    });
    // Four pages checked at once (a read-ahead), against four single checks.
    let mut four = vec![0u8; 4 * PAGE];
    for (i, image) in four.chunks_exact_mut(PAGE).enumerate() {
        codec
            .encrypt_page(100 + i as u32, Page1Layout::SqlCipher, &page_n, image)
            .expect("encrypt");
    }
    group.throughput(Throughput::Bytes(4 * PAGE as u64));
    group.bench_function("authenticate 4 pages at once", |b| {
        b.iter(|| codec.authenticate_pages(100, black_box(&four)))
    });
    group.bench_function("authenticate 4 pages one at a time", |b| {
        b.iter(|| {
            for (i, image) in four.chunks_exact(PAGE).enumerate() {
                let _ = codec.authenticate_page(100 + i as u32, black_box(image));
            }
        })
    });
    // Pages encrypted together (a WAL commit's frames), against the same pages one at a
    // time through the stitched pass.
    for count in 2..=4usize {
        let mut pages = vec![page_n.clone(); count];
        group.throughput(Throughput::Bytes((count * PAGE) as u64));
        group.bench_function(format!("encrypt {count} pages at once"), |b| {
            b.iter(|| {
                let mut batch: Vec<(u32, &mut [u8])> = pages
                    .iter_mut()
                    .enumerate()
                    .map(|(i, p)| (200 + i as u32, &mut p[..]))
                    .collect();
                codec
                    .encrypt_pages_in_place(Page1Layout::SqlCipher, black_box(&mut batch))
                    .expect("encrypt")
            })
        });
        group.bench_function(format!("encrypt {count} pages one at a time"), |b| {
            b.iter(|| {
                for (i, p) in pages.iter_mut().enumerate() {
                    codec
                        .encrypt_page_in_place(200 + i as u32, Page1Layout::SqlCipher, black_box(p))
                        .expect("encrypt")
                }
            })
        });
    }
    group.throughput(Throughput::Bytes(PAGE as u64));
    // A page-1 read whose layout is not the one tried first (the first read of a
    // SQLite3MC-layout file): two HMACs.
    let mut image = vec![0u8; PAGE];
    codec
        .encrypt_page(1, Page1Layout::SqlCipher, &page1, &mut image)
        .expect("encrypt");
    let mut mc_image = vec![0u8; PAGE];
    codec
        .encrypt_page(1, Page1Layout::Sqlite3mc, &page1, &mut mc_image)
        .expect("encrypt");
    group.bench_function("detect page 1 layout, alternating", |b| {
        b.iter(|| {
            codec.detect_page1_layout(black_box(&image)).expect("valid");
            codec
                .detect_page1_layout(black_box(&mc_image))
                .expect("valid")
        })
    });
    group.finish();
}

fn primitive_benches(c: &mut Criterion) {
    let cipher = Aes256::new(&KEY.into());
    let iv = [0x11u8; 16];
    let encrypted_len = PAGE - RESERVE; // 4016 bytes, 251 blocks
    let mut data = vec![0x5au8; encrypted_len];

    let mut group = c.benchmark_group("primitives");
    group.throughput(Throughput::Bytes(encrypted_len as u64));
    group.bench_function("AES-256-CBC encrypt 4016 bytes", |b| {
        b.iter(|| cbc_encrypt_in_place(&cipher, black_box(&iv), &mut data).expect("blocks"))
    });
    group.bench_function("AES-256-CBC decrypt 4016 bytes", |b| {
        b.iter(|| cbc_decrypt_in_place(&cipher, black_box(&iv), &mut data).expect("blocks"))
    });

    let authenticated = vec![0xa5u8; PAGE - HMAC_SIZE]; // 4032 bytes: ciphertext + IV
    let hmac_key = derive_hmac_key(&KEY, &SALT);
    let keyed = Hmac::<Sha512>::new_from_slice(&hmac_key[..]).expect("any key length");
    group.throughput(Throughput::Bytes(authenticated.len() as u64));
    group.bench_function("HMAC-SHA512 4032 bytes + pgno", |b| {
        b.iter(|| {
            let mut mac = keyed.clone();
            mac.update(black_box(&authenticated));
            mac.update(&7u32.to_le_bytes());
            mac.finalize().into_bytes()
        })
    });
    // What a page write cost before the stitched pass (and still costs where the CPU
    // lacks it): CBC over the encrypted region, then the HMAC over ciphertext ‖ IV ‖ pgno.
    // Compare with "page 4 KiB/encrypt page n>1", which runs both in one pass.
    let mut page = vec![0x0du8; PAGE];
    group.throughput(Throughput::Bytes(PAGE as u64));
    group.bench_function(
        "two passes: CBC 4016 bytes, then HMAC 4032 bytes + pgno",
        |b| {
            b.iter(|| {
                let (region, reserve) = page.split_at_mut(encrypted_len);
                cbc_encrypt_in_place(&cipher, black_box(&iv), region).expect("blocks");
                reserve[..16].copy_from_slice(&iv);
                let mut mac = keyed.clone();
                mac.update(&page[..PAGE - HMAC_SIZE]);
                mac.update(&7u32.to_le_bytes());
                mac.finalize().into_bytes()
            })
        },
    );
    group.throughput(Throughput::Bytes(16));
    group.bench_function("random IV (getrandom, 16 bytes)", |b| {
        b.iter(|| random_salt().expect("OS random source"))
    });
    group.finish();

    let mut group = c.benchmark_group("keys");
    group.bench_function("derive HMAC key (PBKDF2-HMAC-SHA512, 2 iterations)", |b| {
        b.iter(|| derive_hmac_key(black_box(&KEY), black_box(&SALT)))
    });
    group.bench_function("PageCodec::new (AES key schedule + HMAC key)", |b| {
        b.iter(|| PageCodec::new(black_box(&KEY), black_box(SALT), PAGE).expect("codec"))
    });
    group.finish();
}

/// The WAL frame checksum the VFS computes over each frame's ciphertext as it writes it
/// (and over every frame in recovery): SQLite's chunk-by-chunk loop against the block
/// form `wal_checksum` uses.
fn wal_checksum_benches(c: &mut Criterion) {
    let page = vec![0x5au8; PAGE];
    let mut group = c.benchmark_group("wal checksum");
    group.throughput(Throughput::Bytes(PAGE as u64));
    group.bench_function("4 KiB page, SQLite's loop", |b| {
        b.iter(|| serial_wal_checksum(false, black_box((1, 2)), black_box(&page)))
    });
    group.bench_function("4 KiB page, blocks of 64 chunks", |b| {
        b.iter(|| wal_checksum(false, black_box((1, 2)), black_box(&page)))
    });
    group.finish();
}

/// A page n > 1 in SQLite3MC's AEGIS-256 format (docs/aegis-format.md) beside the SQLCipher
/// one above: `cargo bench --bench codec -- 'page n>1'` compares the two.
fn aegis_page_benches(c: &mut Criterion) {
    let codec = PageCodec::with_scheme(CipherScheme::Aegis256, &KEY, SALT, PAGE).expect("codec");
    let plaintext = vec![0x0du8; PAGE];
    let mut group = c.benchmark_group("page 4 KiB");
    group.throughput(Throughput::Bytes(PAGE as u64));
    let mut image = vec![0u8; PAGE];
    group.bench_function("encrypt page n>1, AEGIS-256", |b| {
        b.iter(|| {
            codec
                .encrypt_page(
                    black_box(1234),
                    Page1Layout::Sqlite3mc,
                    black_box(&plaintext),
                    &mut image,
                )
                .expect("encrypt")
        })
    });
    codec
        .encrypt_page(1234, Page1Layout::Sqlite3mc, &plaintext, &mut image)
        .expect("encrypt");
    group.bench_function("decrypt in place page n>1, AEGIS-256", |b| {
        b.iter_batched_ref(
            || image.clone(),
            |buffer| codec.decrypt_page_in_place(1234, buffer).expect("decrypt"),
            BatchSize::SmallInput,
        )
    });
    group.finish();

    // A sequential scan's read-ahead (four pages decrypted and checked), and a commit's
    // four pages encrypted together (two at a time, their AES rounds interleaved, one
    // nonce draw), each against one page at a time.
    let mut images = vec![0u8; 4 * PAGE];
    for (i, page) in images.chunks_exact_mut(PAGE).enumerate() {
        codec
            .encrypt_page(1234 + i as u32, Page1Layout::Sqlite3mc, &plaintext, page)
            .expect("encrypt");
    }
    let mut group = c.benchmark_group("read-ahead 4 × 4 KiB");
    group.throughput(Throughput::Bytes(4 * PAGE as u64));
    group.bench_function("AEGIS-256, decrypt 4 pages ahead", |b| {
        b.iter_batched_ref(
            || images.clone(),
            |buffer| codec.decrypt_pages_ahead(1234, buffer).expect("AEGIS"),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("AEGIS-256, encrypt 4 pages at once (two at a time)", |b| {
        let mut pages = vec![plaintext.clone(); 4];
        b.iter(|| {
            let [a, b2, c2, d] = &mut pages[..] else {
                unreachable!("four pages")
            };
            let mut batch = [
                (1234u32, &mut a[..]),
                (1235, &mut b2[..]),
                (1236, &mut c2[..]),
                (1237, &mut d[..]),
            ];
            codec
                .encrypt_pages_in_place(Page1Layout::Sqlite3mc, &mut batch)
                .expect("encrypt")
        })
    });
    group.bench_function("AEGIS-256, encrypt 4 pages one at a time", |b| {
        let mut pages = vec![plaintext.clone(); 4];
        b.iter(|| {
            for (i, page) in pages.iter_mut().enumerate() {
                codec
                    .encrypt_page_in_place(1234 + i as u32, Page1Layout::Sqlite3mc, page)
                    .expect("encrypt");
            }
        })
    });
    group.bench_function("AEGIS-256, decrypt 4 pages one at a time", |b| {
        b.iter_batched_ref(
            || images.clone(),
            |buffer| {
                for (i, page) in buffer.chunks_exact_mut(PAGE).enumerate() {
                    codec
                        .decrypt_page_in_place(1234 + i as u32, page)
                        .expect("decrypt");
                }
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn main() {
    eprintln!("codec CPU features: {}", cpu_features());
    let mut criterion = Criterion::default().configure_from_args();
    page_benches(&mut criterion);
    aegis_page_benches(&mut criterion);
    primitive_benches(&mut criterion);
    wal_checksum_benches(&mut criterion);
    criterion.final_summary();
}
