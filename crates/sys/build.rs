//! Build script: pins the SQLite sources that libsqlite3-sys compiled (the digests in the
//! repository's `vendor/sqlite-sources.sha256`).

#[path = "build_support/pinned_sources.rs"]
mod pinned_sources;

use std::{env, fs, path::Path};

const PINNED_DIGESTS: &str = "../../vendor/sqlite-sources.sha256";

fn main() {
    println!("cargo:rerun-if-changed={PINNED_DIGESTS}");
    println!("cargo:rerun-if-changed=build_support/pinned_sources.rs");
    println!("cargo:rerun-if-env-changed=DEP_SQLITE3_INCLUDE");
    let include = env::var("DEP_SQLITE3_INCLUDE")
        .expect("libsqlite3-sys did not report DEP_SQLITE3_INCLUDE: is the `bundled` feature on?");
    let pinned = fs::read_to_string(PINNED_DIGESTS)
        .unwrap_or_else(|e| panic!("cannot read {PINNED_DIGESTS}: {e}"));
    match pinned_sources::verify_pinned_sources(&pinned, Path::new(&include)) {
        Ok(files) => {
            for f in files {
                println!("cargo:rerun-if-changed={f}");
            }
        }
        Err(message) => panic!("{message}\n(see {PINNED_DIGESTS})"),
    }
}
