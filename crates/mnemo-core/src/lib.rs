//! mnemo-core: the domain vocabulary (scopes, memories, messages, history, links, entities),
//! the traits every backend implements (`Store`, `Embedder`), filters, and hybrid ranking.
//!
//! This crate does no I/O of its own: no async runtime, no network client, no database driver.
//! Stores (`mnemo-store-*`) and providers (`mnemo-models`) implement its traits; the facade
//! (`mnemo`) joins them. `search::hybrid_search` is the ranking every backend shares; `limits`
//! lists the bounds on what one request may carry.

pub mod blocks;
pub mod chat;
pub mod content;
pub mod cursor;
pub mod embed;
pub mod entity;
pub mod error;
pub mod filter;
pub mod jobs;
pub mod jsonfix;
pub mod keys;
pub mod limits;
pub mod memory;
pub mod note;
pub mod pack;
pub mod parallel;
pub mod pipeline;
pub mod profile;
pub mod relation;
pub mod scope;
pub mod search;
pub mod session;
pub mod store;
pub mod text;
pub mod tier;
pub mod time;

pub use blocks::{
    BlockActor, BlockChange, BlockEvent, BlockLabel, BlockLimits, BlockOp, MemoryBlock,
};
pub use chat::{ChatMessage, ChatModel, ChatRequest, ChatResponse, ChatRole, TokenUsage};
pub use content::{Content, ContentMessage};
pub use cursor::CursorCodec;
pub use embed::{CachedEmbedder, Embedder};
pub use entity::{entities_match, extract_entities, normalize_entity, EntityMention};
pub use error::{Error, ErrorKind, Result};
pub use filter::Filter;
pub use jobs::{
    JobEnd, JobOutcome, JobQuery, JobRecord, JobStatus, JobStore, Lease, NewJob, QueueStats,
};
pub use jsonfix::{parse_model_json, JsonRepairError};
pub use keys::{ApiKeyRecord, ApiKeyStore};
pub use memory::*;
pub use note::{NoteConfig, NoteInput};
pub use scope::{AgentId, RunId, Scope, UserId};
pub use search::{
    hybrid_search, hybrid_search_embedding, hybrid_search_outcome, linked_score, Hit, LinkVia,
    RankParams, RelationVia, Scores, SearchMode, SearchOutcome, SearchRequest, Via,
};
pub use session::{SessionInfo, SessionQuery};
pub use store::*;
pub use tier::{
    Eviction, HeatWeights, NewPage, PageMove, PageQuery, Segment, SegmentWrite, StoredPage,
    TierConfig, TierWrite,
};
