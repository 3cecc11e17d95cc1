//! The x86-64 provider of the page passes (`crate::backend` chooses it where the CPU has
//! AES-NI, AVX and BMI2): one file per concern, each importing only those listed before it.
//!
//! * `aesni`: the AES-256 key schedule and CBC chains with AES-NI;
//! * `sha512`: SHA-512's constants, block helpers and scalar compression (which carries a
//!   CBC chain's AES rounds between its own);
//! * `sha512x4`: the compression of four messages at once in the AVX2 lanes;
//! * `hmac`: HMAC-SHA512 over precomputed pad states, one message or four;
//! * `lanes`: two to four pages encrypted and authenticated at once;
//! * `aegis`: AEGIS-256 pages (SQLite3MC's `aegis` scheme) with AES-NI, one or two at once;
//! * `stitched`: the keys the passes use ([`stitched::StitchedKeys`]) and the one-page
//!   pass.

// First: `sha512_rounds!` is defined in `sha512` and used by `sha512x4`.
pub(crate) mod aegis;
mod aesni;
#[macro_use]
mod sha512;

mod hmac;
mod lanes;
pub(crate) mod sha512x4;
pub(crate) mod stitched;
