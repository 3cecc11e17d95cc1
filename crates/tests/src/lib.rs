//! Integration tests only: see `tests/` and `benches/`.
