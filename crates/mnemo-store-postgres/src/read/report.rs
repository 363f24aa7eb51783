//! The integrity check and the store's counts.
//!
//! The derived indexes of this store live in PostgreSQL itself: the HNSW index holds every
//! non-NULL `embedding` and the GIN index every non-NULL `lexical`, so the "derived index"
//! counts of the report are those column counts (the database keeps them in step).

use crate::PgStore;

impl PgStore {}
