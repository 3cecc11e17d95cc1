//! Checks that the SQLite sources being compiled are exactly the pinned ones. Used by
//! build.rs (which fails the build on a mismatch) and by tests/pinned_sources.rs.

use sha2::{Digest, Sha256};
use std::{fs, path::Path};

/// Verifies every `<sha256>  <file>` line of `pinned` (comments start with `#`) against the
/// files in `dir`. Returns the paths checked, or a message naming the file and both digests.
pub fn verify_pinned_sources(pinned: &str, dir: &Path) -> Result<Vec<String>, String> {
    let mut checked = Vec::new();
    for line in pinned.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (expected, file) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("malformed line in the pinned digests: {line:?}"))?;
        let path = dir.join(file.trim());
        let bytes = fs::read(&path)
            .map_err(|e| format!("cannot read pinned SQLite source {}: {e}", path.display()))?;
        let actual: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if actual != expected {
            return Err(format!(
                "SQLite source {} does not match its pinned digest\n  expected sha256 {expected}\n  found    sha256 {actual}",
                path.display()
            ));
        }
        checked.push(path.display().to_string());
    }
    if checked.len() < 2 {
        return Err("the pinned digests must list sqlite3.c and sqlite3.h".into());
    }
    Ok(checked)
}
