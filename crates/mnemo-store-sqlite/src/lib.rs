//! mnemo-store-sqlite
