//! mnemo
