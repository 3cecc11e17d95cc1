//! The pragmas a connection refuses, with the message that says what to do instead: the
//! key and cipher pragmas of SQLCipher and SQLite3 Multiple Ciphers everywhere (cipherlite
//! takes the key only from the constructor, and they must fail rather than be silently
//! ignored), and on an encrypted connection another page size. `setup::configure` installs
//! them through the connection's authorizer.

/// SQLCipher's and SQLite3 Multiple Ciphers' key and cipher pragmas. cipherlite takes the
/// key only from the constructor; these fail instead of being silently ignored.
pub fn is_key_pragma(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "key"
            | "rekey"
            | "hexkey"
            | "hexrekey"
            | "textkey"
            | "textrekey"
            | "legacy"
            | "legacy_page_size"
            | "kdf_iter"
            | "fast_kdf_iter"
            | "hmac_use"
            | "hmac_pgno"
            | "hmac_salt_mask"
            | "kdf_algorithm"
            | "hmac_algorithm"
            | "plaintext_header_size"
            | "mc_legacy_wal"
    ) || name.starts_with("cipher")
}

/// The error text for a refused key pragma.
pub const KEY_PRAGMA_MESSAGE: &str =
    "PRAGMA key/rekey/cipher settings are not supported: cipherlite takes the key only as new Database(path, { key })";

/// The error text for a page size other than the encrypted database's.
pub const PAGE_SIZE_PRAGMA_MESSAGE: &str =
    "PRAGMA page_size cannot change an encrypted database's page size: give it as new Database(path, { key, pageSize })";

/// Pragmas refused on a connection without a key: the key pragmas.
pub fn refused_pragma_plain(name: &str, _argument: Option<&str>) -> Option<&'static str> {
    is_key_pragma(name).then_some(KEY_PRAGMA_MESSAGE)
}

/// Pragmas refused on an encrypted connection of `page_size`-byte pages: the key pragmas,
/// and setting another page size (SQLite would accept it for a new file, then every write
/// of a page of that size would fail).
pub fn refused_pragma_encrypted(
    name: &str,
    argument: Option<&str>,
    page_size: usize,
) -> Option<&'static str> {
    if let Some(message) = refused_pragma_plain(name, argument) {
        return Some(message);
    }
    let sets_other_size = name.eq_ignore_ascii_case("page_size")
        && argument.is_some_and(|a| a.trim().parse::<i64>() != Ok(page_size as i64));
    sets_other_size.then_some(PAGE_SIZE_PRAGMA_MESSAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_pragmas_are_refused_in_any_case_on_every_connection() {
        for name in [
            "key",
            "REKEY",
            "hexkey",
            "HexReKey",
            "textkey",
            "textrekey",
            "legacy",
            "legacy_page_size",
            "kdf_iter",
            "fast_kdf_iter",
            "hmac_use",
            "hmac_pgno",
            "hmac_salt_mask",
            "kdf_algorithm",
            "hmac_algorithm",
            "plaintext_header_size",
            "mc_legacy_wal",
            "cipher",
            "cipher_page_size",
            "CIPHER_COMPATIBILITY",
        ] {
            assert!(is_key_pragma(name), "{name}");
            assert_eq!(
                refused_pragma_plain(name, Some("x")),
                Some(KEY_PRAGMA_MESSAGE),
                "{name}"
            );
            assert_eq!(
                refused_pragma_encrypted(name, None, 4096),
                Some(KEY_PRAGMA_MESSAGE),
                "{name}"
            );
        }
        for name in ["journal_mode", "keys", "page_size", "user_version", "ciphe"] {
            assert!(!is_key_pragma(name), "{name}");
            assert_eq!(refused_pragma_plain(name, Some("1024")), None, "{name}");
        }
    }

    #[test]
    fn only_another_page_size_is_refused_on_an_encrypted_connection() {
        // Reading it, or setting the size it has, is harmless.
        assert_eq!(refused_pragma_encrypted("page_size", None, 4096), None);
        assert_eq!(
            refused_pragma_encrypted("page_size", Some("4096"), 4096),
            None
        );
        assert_eq!(
            refused_pragma_encrypted("PAGE_SIZE", Some(" 8192 "), 8192),
            None
        );
        for other in ["1024", "65536", "4097", "-4096", "big", ""] {
            assert_eq!(
                refused_pragma_encrypted("Page_Size", Some(other), 4096),
                Some(PAGE_SIZE_PRAGMA_MESSAGE),
                "{other:?}"
            );
        }
        assert_eq!(
            refused_pragma_encrypted("cache_size", Some("1024"), 4096),
            None
        );
        // Without a key, SQLite's own page_size pragma applies.
        assert_eq!(refused_pragma_plain("page_size", Some("1024")), None);
        assert!(KEY_PRAGMA_MESSAGE.contains("new Database(path, { key })"));
        assert!(PAGE_SIZE_PRAGMA_MESSAGE.contains("pageSize"));
    }
}
