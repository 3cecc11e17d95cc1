//! The keyed VFS itself, through a real connection: registration, keys and page sizes, the
//! key check at open, and the methods it forwards to the OS VFS.

use crate::test_support::{create, exec, journal_header, open, query, try_query, TempDir, SUMMARY};
use crate::{KeyedVfsHandle, NewFileLayout, VfsKey, PAGE_SIZE as P};
use cipherlite_sys::ffi;
use std::ffi::{c_char, c_int, CString};

#[test]
fn register_refuses_page_sizes_the_format_has_not_and_unknown_base_vfses() {
    let key = [1u8; 32];
    for bad in [0, 256, 1000, 4097, 131072] {
        assert_eq!(
            KeyedVfsHandle::register_with(&VfsKey::Raw(&key), NewFileLayout::Sqlite3mc, bad, None)
                .err(),
            Some(ffi::SQLITE_MISUSE),
            "{bad}"
        );
    }
    assert_eq!(
        KeyedVfsHandle::register_with(
            &VfsKey::Raw(&key),
            NewFileLayout::Sqlite3mc,
            4096,
            Some(c"no-such-vfs")
        )
        .err(),
        Some(ffi::SQLITE_ERROR)
    );
    let vfs =
        KeyedVfsHandle::register_with(&VfsKey::Raw(&key), NewFileLayout::SqlCipher, 8192, None)
            .expect("8 KiB pages");
    assert_eq!(vfs.page_size(), 8192);
    assert!(vfs.name().to_bytes().starts_with(b"cipherlite-"));
}

#[test]
fn planted_page_1_copies_cost_an_open_at_most_two_key_derivations() {
    // A passphrase's key is derived per salt (PBKDF2, 256,000 iterations by default). When
    // page 1 doesn't open, its copies in a hot journal are tried: copies under many salts
    // must not make one open derive as many keys.
    let dir = TempDir::new("salts");
    let path = dir.0.join("s.db");
    let passphrase = |iterations| {
        KeyedVfsHandle::register_with(
            &VfsKey::Passphrase {
                passphrase: b"a passphrase",
                iterations,
                argon2: cipherlite_codec::Argon2Costs::default(),
            },
            NewFileLayout::Sqlite3mc,
            P,
            None,
        )
        .expect("vfs")
    };
    create(&path, &passphrase(2), 20);
    let mut db = std::fs::read(&path).expect("db");
    db[100] ^= 1; // page 1 no longer authenticates
    std::fs::write(&path, &db).expect("damage");
    let page1 = db[..P].to_vec();
    let sector = 512u32;
    let copies = 20u32;
    let mut journal = journal_header(copies, 7, 2, sector, P as u32);
    for i in 0..copies {
        let mut image = page1.clone();
        image[..16].copy_from_slice(&[i as u8 + 1; 16]); // another salt each
        journal.extend_from_slice(&1u32.to_be_bytes());
        journal.extend_from_slice(&image);
        journal.extend_from_slice(&0u32.to_be_bytes());
    }
    std::fs::write(dir.0.join("s.db-journal"), &journal).expect("journal");
    let vfs = passphrase(2);
    assert_eq!(try_query(&path, &vfs, SUMMARY), Err(ffi::SQLITE_NOTADB));
    assert!(
        vfs.key_derivations() <= 2,
        "{} key derivations for one open",
        vfs.key_derivations()
    );
}

#[test]
fn a_passphrase_opens_its_database_and_another_is_not_a_database() {
    let dir = TempDir::new("pass");
    let path = dir.0.join("p.db");
    let key = |passphrase: &'static [u8]| {
        KeyedVfsHandle::register_with(
            &VfsKey::Passphrase {
                passphrase,
                iterations: 2,
                argon2: cipherlite_codec::Argon2Costs::default(),
            },
            NewFileLayout::Sqlite3mc,
            P,
            None,
        )
        .expect("vfs")
    };
    let right = key(b"right passphrase");
    create(&path, &right, 20);
    drop(right);
    assert_eq!(
        try_query(&path, &key(b"right passphrase"), SUMMARY),
        Ok(vec!["20,210".to_string()])
    );
    let before = std::fs::read(&path).expect("db");
    assert_eq!(
        try_query(&path, &key(b"wrong passphrase"), SUMMARY),
        Err(ffi::SQLITE_NOTADB)
    );
    assert_eq!(std::fs::read(&path).expect("db"), before, "nothing written");

    // The key of the file is derived from its own salt.
    let salt: [u8; 16] = before[..16].try_into().expect("salt");
    let derived = key(b"right passphrase")
        .key_for_database(path.to_str().expect("path"))
        .expect("a key");
    assert_eq!(
        *derived,
        *cipherlite_codec::derive_passphrase_key(b"right passphrase", &salt, 2)
    );
    assert!(key(b"x")
        .key_for_database(dir.0.join("missing.db").to_str().expect("path"))
        .is_none());
    let raw = KeyedVfsHandle::register(&[3u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    assert_eq!(
        raw.key_for_database(path.to_str().expect("path"))
            .map(|k| *k),
        Some([3u8; 32])
    );
}

#[test]
fn page_size_that_opens_names_the_page_size_the_key_opens() {
    let dir = TempDir::new("psize");
    let path = dir.0.join("small.db");
    let key = [5u8; 32];
    let small =
        KeyedVfsHandle::register_with(&VfsKey::Raw(&key), NewFileLayout::SqlCipher, 1024, None)
            .expect("vfs");
    create(&path, &small, 30);
    assert_eq!(
        try_query(&path, &small, SUMMARY),
        Ok(vec!["30,465".to_string()])
    );
    let default = KeyedVfsHandle::register(&key, NewFileLayout::SqlCipher).expect("vfs");
    assert_eq!(try_query(&path, &default, SUMMARY), Err(ffi::SQLITE_NOTADB));
    let p = path.to_str().expect("path");
    assert_eq!(default.page_size_that_opens(p), Some(1024));
    assert_eq!(small.page_size_that_opens(p), Some(1024));
    let other_key = KeyedVfsHandle::register(&[6u8; 32], NewFileLayout::SqlCipher).expect("vfs");
    assert_eq!(other_key.page_size_that_opens(p), None);
    assert_eq!(
        default.page_size_that_opens(dir.0.join("missing.db").to_str().expect("path")),
        None
    );
    let tiny = dir.0.join("tiny.db");
    std::fs::write(&tiny, [1u8; 100]).expect("tiny");
    assert_eq!(
        default.page_size_that_opens(tiny.to_str().expect("path")),
        None
    );
}

#[test]
fn a_file_created_by_another_connection_is_read_with_its_salt() {
    let dir = TempDir::new("adopt");
    let path = dir.0.join("a.db");
    let vfs = KeyedVfsHandle::register_with(
        &VfsKey::Passphrase {
            passphrase: b"shared",
            iterations: 2,
            argon2: cipherlite_codec::Argon2Costs::default(),
        },
        NewFileLayout::Sqlite3mc,
        P,
        None,
    )
    .expect("vfs");
    // Both open the empty file (each draws a provisional salt); the second creates it.
    let first = open(&path, &vfs);
    create(&path, &vfs, 5);
    assert_eq!(query(&first, SUMMARY), ["5,15"]);
    exec(&first, "INSERT INTO t(b) VALUES ('from the first')");
    drop(first);
    assert_eq!(
        try_query(&path, &vfs, SUMMARY),
        Ok(vec!["6,21".to_string()])
    );
}

#[test]
fn the_vfs_forwards_its_other_methods_to_the_os_vfs() {
    let keyed = KeyedVfsHandle::register(&[14u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    // SAFETY: both VFSes stay registered for the test; every call gets valid buffers.
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(keyed.name().as_ptr());
        let os = ffi::sqlite3_vfs_find(std::ptr::null());
        assert!(!vfs.is_null() && !os.is_null());
        let (v, o) = (&*vfs, &*os);

        let mut random: [c_char; 64] = [0; 64];
        assert_eq!(
            v.xRandomness.expect("xRandomness")(vfs, 64, random.as_mut_ptr()),
            64
        );
        assert!(random.iter().any(|&b| b != 0));
        assert!(v.xSleep.expect("xSleep")(vfs, 1000) >= 1000);

        let (mut ours, mut theirs) = (0f64, 0f64);
        assert_eq!(v.xCurrentTime.expect("xCurrentTime")(vfs, &mut ours), 0);
        assert_eq!(o.xCurrentTime.expect("xCurrentTime")(os, &mut theirs), 0);
        assert!(
            (theirs - ours).abs() < 1.0 / 24.0,
            "{ours} vs {theirs} (Julian days)"
        );
        let (mut ours, mut theirs) = (0i64, 0i64);
        assert_eq!(
            v.xCurrentTimeInt64.expect("xCurrentTimeInt64")(vfs, &mut ours),
            0
        );
        assert_eq!(
            o.xCurrentTimeInt64.expect("xCurrentTimeInt64")(os, &mut theirs),
            0
        );
        assert!((theirs - ours).abs() < 60_000, "{ours} vs {theirs} (ms)");
        let mut message: [c_char; 256] = [0; 256];
        let ours = v.xGetLastError.expect("xGetLastError")(vfs, 256, message.as_mut_ptr());
        let theirs = o.xGetLastError.expect("xGetLastError")(os, 256, message.as_mut_ptr());
        assert_eq!(ours, theirs);

        // Loadable extensions go through the OS VFS's dynamic loader.
        let missing = c"/nonexistent/cipherlite-no-such-library.so";
        assert!(v.xDlOpen.expect("xDlOpen")(vfs, missing.as_ptr()).is_null());
        let mut error: [c_char; 512] = [0; 512];
        v.xDlError.expect("xDlError")(vfs, 512, error.as_mut_ptr());
        let error = std::ffi::CStr::from_ptr(error.as_ptr()).to_string_lossy();
        assert!(error.contains("cipherlite-no-such-library"), "{error}");
        let libc = v.xDlOpen.expect("xDlOpen")(vfs, c"libc.so.6".as_ptr());
        assert!(!libc.is_null());
        let getpid = v.xDlSym.expect("xDlSym")(vfs, libc, c"getpid".as_ptr());
        assert!(getpid.is_some());
        assert!(v.xDlSym.expect("xDlSym")(vfs, libc, c"no_such_symbol_here".as_ptr()).is_none());
        v.xDlClose.expect("xDlClose")(vfs, libc);
    }
}

#[test]
fn temporary_files_are_refused_and_super_journals_pass_through() {
    let dir = TempDir::new("kinds");
    let keyed = KeyedVfsHandle::register(&[15u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    // SAFETY: the VFS stays registered; the file buffer has szOsFile bytes; the name
    // outlives the file.
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(keyed.name().as_ptr());
        let size = (*vfs).szOsFile as usize;
        let open = (*vfs).xOpen.expect("xOpen");
        let mut storage = vec![0u64; size.div_ceil(8)];
        let file = storage.as_mut_ptr().cast::<ffi::sqlite3_file>();
        let mut out_flags: c_int = 0;
        let rw = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE;
        for temporary in [
            ffi::SQLITE_OPEN_TEMP_JOURNAL,
            ffi::SQLITE_OPEN_TEMP_DB,
            ffi::SQLITE_OPEN_SUBJOURNAL,
            ffi::SQLITE_OPEN_TRANSIENT_DB,
        ] {
            let flags = rw | temporary | ffi::SQLITE_OPEN_DELETEONCLOSE;
            assert_eq!(
                open(vfs, std::ptr::null(), file, flags, &mut out_flags),
                ffi::SQLITE_CANTOPEN
            );
            assert!((*file).pMethods.is_null(), "nothing open");
        }
        let path = dir.0.join("super-journal");
        let name = CString::new(path.to_str().expect("utf-8")).expect("no NUL");
        let flags = rw | ffi::SQLITE_OPEN_SUPER_JOURNAL | ffi::SQLITE_OPEN_EXCLUSIVE;
        assert_eq!(
            open(vfs, name.as_ptr(), file, flags, &mut out_flags),
            ffi::SQLITE_OK
        );
        let methods = &*(*file).pMethods;
        let names = b"/a/db-journal\0/b/db-journal\0";
        let rc =
            methods.xWrite.expect("xWrite")(file, names.as_ptr().cast(), names.len() as c_int, 0);
        assert_eq!(rc, ffi::SQLITE_OK);
        assert_eq!(methods.xClose.expect("xClose")(file), ffi::SQLITE_OK);
        assert_eq!(
            std::fs::read(&path).expect("super-journal"),
            names,
            "file names in clear"
        );
    }
}

#[test]
fn an_aegis_page_1_is_told_by_its_header_in_clear() {
    let mut page = vec![0xa5u8; 1024];
    // SQLite3MC's AEGIS page 1: bytes 16..24 in clear, 48 reserved bytes (AEGIS-128).
    page[16..24].copy_from_slice(&[0x10, 0x00, 1, 1, 48, 64, 32, 32]);
    assert_eq!(crate::aegis_clear_header(&page), Some((4096, 48)));
    page[16..24].copy_from_slice(&[0x00, 0x01, 2, 2, 64, 64, 32, 32]);
    assert_eq!(crate::aegis_clear_header(&page), Some((65536, 64)));
    // SQLite3MC's SQLCipher page 1 (legacy = 0) has the same header with 80 reserved bytes.
    page[16..24].copy_from_slice(&[0x10, 0x00, 1, 1, 80, 64, 32, 32]);
    assert_eq!(crate::aegis_clear_header(&page), None);
    // Ciphertext there (SQLCipher's own page 1), or a header SQLite would not write.
    for header in [
        [0xa5; 8],
        [0x10, 0x00, 1, 1, 48, 64, 32, 33],
        [0x10, 0x01, 1, 1, 48, 64, 32, 32],
        [0x10, 0x00, 3, 1, 64, 64, 32, 32],
    ] {
        page[16..24].copy_from_slice(&header);
        assert_eq!(crate::aegis_clear_header(&page), None, "{header:?}");
    }
    assert_eq!(crate::aegis_clear_header(&page[..20]), None);
}
