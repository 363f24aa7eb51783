//! Empty: a build script makes Cargo resolve the `[build-dependencies]`, whose features are the
//! point of this crate.
fn main() {}
