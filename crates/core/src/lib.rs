//! Everything a connection is below the Node bridge, with no napi: how it is opened and
//! what it refuses (`connection_policy`), and the key lifecycle (`key_lifecycle`: encrypt,
//! decrypt, rekey, verify and backups of whole files, each crash-safe).

pub mod connection_policy;
pub mod key_lifecycle;
pub mod session;

#[cfg(test)]
mod test_support;
