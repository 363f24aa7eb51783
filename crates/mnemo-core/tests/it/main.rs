//! mnemo-core's integration tests, one binary: property tests of the parsers and checks
//! (`fuzz`) and the crate graph's layering (`layering`).

mod fuzz;
mod layering;
