//! The message log: messages by id (a memory's provenance) and the last messages of a scope
//! or session, oldest first.

use crate::PgStore;

impl PgStore {}
