//! The build refuses SQLite sources that differ from the pinned digests, naming the file
//! and both digests (build.rs uses the same function).

#[path = "../build_support/pinned_sources.rs"]
mod pinned_sources;

use pinned_sources::verify_pinned_sources;
use std::fs;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cipherlite-pin-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

const HELLO_SHA256: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

#[test]
fn matching_sources_pass() {
    let dir = temp_dir("ok");
    fs::write(dir.join("sqlite3.c"), "hello").unwrap();
    fs::write(dir.join("sqlite3.h"), "hello").unwrap();
    let pinned = format!("# comment\n{HELLO_SHA256}  sqlite3.c\n{HELLO_SHA256}  sqlite3.h\n");
    assert_eq!(verify_pinned_sources(&pinned, &dir).unwrap().len(), 2);
}

#[test]
fn a_changed_source_fails_naming_the_file_and_digests() {
    let dir = temp_dir("changed");
    fs::write(dir.join("sqlite3.c"), "hello").unwrap();
    fs::write(dir.join("sqlite3.h"), "hellO").unwrap();
    let pinned = format!("{HELLO_SHA256}  sqlite3.c\n{HELLO_SHA256}  sqlite3.h\n");
    let err = verify_pinned_sources(&pinned, &dir).unwrap_err();
    assert!(err.contains("sqlite3.h"), "{err}");
    assert!(err.contains(HELLO_SHA256), "{err}");
    assert!(err.contains("does not match"), "{err}");
}

#[test]
fn the_real_pins_match_the_amalgamation_in_use() {
    // The digests kept in vendor/ are those of libsqlite3-sys 0.40.0's SQLite 3.54.1.
    let pinned = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../vendor/sqlite-sources.sha256"
    ))
    .unwrap();
    assert!(pinned.contains("sqlite3.c") && pinned.contains("sqlite3.h"));
}
