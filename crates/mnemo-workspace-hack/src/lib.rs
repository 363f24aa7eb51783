//! No code: the crate's dependencies are its job (see its Cargo.toml).
