//! cipherlite: an encrypted SQLite for Node.js, a drop-in replacement for better-sqlite3.
//!
//! Layers (docs/design.md §2): `codec` (SQLCipher 4 page format, no I/O) ← `vfs`
//! (encrypting VFS) ← `sqlite` (safe Rust over the C API) ← `storage` (Evolu's SQL
//! functions) ← `connection_policy` (how a connection is opened and what it refuses) ←
//! `binding` (the only napi code).
#![deny(clippy::all)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod binding;
pub mod codec;
pub mod connection_policy;
pub mod keyfile;
pub mod sqlite;
pub mod storage;
pub mod vfs;
