//! Checks on the bytes of an encrypted database file, shared by the sweeps.

#![allow(dead_code)]

use cipherlite_codec::{read_salt, CipherScheme, PageCodec};

/// Every page of the encrypted database image `file` (of `page_size`-byte pages, in
/// SQLCipher 4's format) authenticates under `key`; the error names the first that does not.
pub fn authenticate_all(file: &[u8], key: &[u8; 32], page_size: usize) -> Result<(), String> {
    authenticate_all_in(file, key, CipherScheme::SqlCipher4, page_size)
}

/// [`authenticate_all`] for a file in the page format `scheme`.
pub fn authenticate_all_in(
    file: &[u8],
    key: &[u8; 32],
    scheme: CipherScheme,
    page_size: usize,
) -> Result<(), String> {
    if !file.len().is_multiple_of(page_size) {
        return Err(format!(
            "database size {} is not a whole number of pages",
            file.len()
        ));
    }
    let salt = read_salt(file).map_err(|e| format!("{e:?}"))?;
    let codec =
        PageCodec::with_scheme(scheme, key, salt, page_size).map_err(|e| format!("{e:?}"))?;
    let mut out = vec![0u8; page_size];
    for (i, page) in file.chunks(page_size).enumerate() {
        let pgno = i as u32 + 1;
        codec
            .decrypt_page(pgno, page, &mut out)
            .map_err(|e| format!("page {pgno} does not authenticate: {e:?}"))?;
    }
    Ok(())
}
