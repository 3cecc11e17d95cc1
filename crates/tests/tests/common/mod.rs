//! Support shared by the Rust integration tests.

pub mod pages;
pub mod sim_disk;
pub mod sql;
