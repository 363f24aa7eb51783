//! mnemo-testkit
