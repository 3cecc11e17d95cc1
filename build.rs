//! Build script: pins the SQLite sources that libsqlite3-sys compiled, then lets
//! napi-build set up the Node-API link arguments.

use sha2::{Digest, Sha256};
use std::{env, fs, path::Path};

const PINNED_DIGESTS: &str = "vendor/sqlite-sources.sha256";

fn main() {
    println!("cargo:rerun-if-changed={PINNED_DIGESTS}");
    println!("cargo:rerun-if-env-changed=DEP_SQLITE3_INCLUDE");
    verify_sqlite_sources();

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "macos" {
        // A stable install name keeps the Mach-O bytes independent of the build path.
        let name = env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "cipherlite".into());
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/{name}.node");
    }
    napi_build::setup();
}

/// Fails the build unless every file listed in `vendor/sqlite-sources.sha256` exists in
/// libsqlite3-sys's include dir (the amalgamation it compiled) with that exact digest.
fn verify_sqlite_sources() {
    let include = env::var("DEP_SQLITE3_INCLUDE")
        .expect("libsqlite3-sys did not report DEP_SQLITE3_INCLUDE: is the `bundled` feature on?");
    let pinned = fs::read_to_string(PINNED_DIGESTS)
        .unwrap_or_else(|e| panic!("cannot read {PINNED_DIGESTS}: {e}"));
    let mut checked = 0;
    for line in pinned.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (expected, file) = line
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| panic!("malformed line in {PINNED_DIGESTS}: {line:?}"));
        let path = Path::new(&include).join(file.trim());
        let bytes = fs::read(&path)
            .unwrap_or_else(|e| panic!("cannot read pinned SQLite source {}: {e}", path.display()));
        let actual = hex(&Sha256::digest(&bytes));
        if actual != expected {
            panic!(
                "SQLite source {} does not match its pinned digest\n  expected sha256 {expected}\n  found    sha256 {actual}\n(see {PINNED_DIGESTS})",
                path.display()
            );
        }
        println!("cargo:rerun-if-changed={}", path.display());
        checked += 1;
    }
    assert!(
        checked >= 2,
        "{PINNED_DIGESTS} must list sqlite3.c and sqlite3.h"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
