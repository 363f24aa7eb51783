//! mnemo-models
