//! Links and entities of memories: a memory's links, the linked memories that search expansion
//! follows, and the entities a memory mentions.
//!
//! Links and entity links join memories of one exact owner, so once a memory's owner key is
//! known every query here runs on that owner's rows through the primary keys.

use crate::PgStore;

impl PgStore {}
