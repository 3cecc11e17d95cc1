//! Helpers for tests (this crate's and, with the `test-support` feature, the crates above):
//! the sample files in `testdata/sqlcipher4/` (written by SQLCipher and SQLite3 Multiple
//! Ciphers; see its README).

use std::path::PathBuf;

/// The sample-file directory: `$CIPHERLITE_TESTDATA` if set, else the repository's
/// `testdata/sqlcipher4`.
pub fn testdata_dir() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("CIPHERLITE_TESTDATA") {
        candidates.push(PathBuf::from(dir));
    }
    candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/sqlcipher4"));
    candidates
        .iter()
        .find(|dir| dir.join("KEY.hex").is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!("sample files not found (set CIPHERLITE_TESTDATA); tried {candidates:?}")
        })
}

/// The whole content of a sample file.
pub fn sample_file(name: &str) -> Vec<u8> {
    let path = testdata_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("reading {}: {err}", path.display()))
}

/// The raw key all sample files were written with (`KEY.hex`).
pub fn sample_key() -> [u8; 32] {
    let text = String::from_utf8(sample_file("KEY.hex")).expect("KEY.hex is text");
    hex(text.trim())
        .try_into()
        .expect("KEY.hex holds 64 hex digits")
}

/// Decodes hex digits, ignoring whitespace.
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|byte| !byte.is_ascii_whitespace())
        .map(|byte| match byte {
            b'0'..=b'9' => byte - b'0',
            b'a'..=b'f' => byte - b'a' + 10,
            b'A'..=b'F' => byte - b'A' + 10,
            _ => panic!("not a hex digit: {:?}", char::from(byte)),
        })
        .collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    digits
        .chunks(2)
        .map(|pair| pair[0] << 4 | pair[1])
        .collect()
}

/// Page `pgno` (1-based) of a file image.
pub fn page_of(file: &[u8], pgno: usize, page_size: usize) -> Vec<u8> {
    file[(pgno - 1) * page_size..pgno * page_size].to_vec()
}
