//! The settings of `mnemo.toml` that shape a `Memory` (every key but the `[server]` section),
//! and the one conversion from them to a [`MemoryConfig`]. The CLI fills a [`Settings`] from its
//! flags (which read `MNEMO_*` and the file), the Python package from a dict of the same shape;
//! both call [`Settings::memory_config`], so a key means the same thing everywhere.
//!
//! Every field is optional: an absent one keeps the built-in default (`MemoryConfig::new`).
//! Unknown keys are refused (`deny_unknown_fields`), so a typo never passes silently.

use crate::{ChatConfig, MemoryConfig, StoreConfig, DEFAULT_STORE_POOL_SIZE};
use mnemo_core::{Error, Result};
use mnemo_models::{EmbedderBackend, EmbedderConfig};
use serde::Deserialize;
use std::path::PathBuf;

/// Seconds a chat model may take for one answer when the settings say nothing.
pub const DEFAULT_LLM_TIMEOUT_SECS: u64 = 60;

/// The engine's part of `mnemo.toml`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub data_dir: Option<PathBuf>,
    pub models_dir: Option<PathBuf>,
    /// `onnx`, `candle` or `openai` (the last needs `remote_embedder`).
    pub embedder: Option<String>,
    pub threads: Option<usize>,
    pub usage_tracking: Option<bool>,
    #[serde(default)]
    pub store: StoreSection,
    #[serde(default)]
    pub llm: LlmSection,
    #[serde(default)]
    pub notes: NotesSection,
    #[serde(default)]
    pub tiers: TiersSection,
    #[serde(default)]
    pub jobs: JobsSection,
    /// The endpoint of `embedder = "openai"`; not a file key (the CLI's `--embed-*` flags).
    #[serde(skip)]
    pub remote_embedder: Option<mnemo_models::OpenAiEmbedderConfig>,
}

/// `[store]`: where the store lives (see [`StoreConfig`]); by default the embedded file in
/// `data_dir`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    /// `postgres://…`, or the path of a SQLite file.
    pub url: Option<String>,
    /// Connections a PostgreSQL store keeps open.
    pub pool_size: Option<usize>,
}

/// `[llm]`: the chat model of inferred adds; none means raw adds.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub gguf: Option<PathBuf>,
    pub timeout_secs: Option<u64>,
    pub additive_only: Option<bool>,
    /// The model reads images: image parts of messages are described by it (see
    /// `mnemo_core::content`); off by default, and image parts are refused.
    pub vision: Option<bool>,
}

/// `[notes]`: note adds (neighbours, link rules); see `mnemo_core::NoteConfig`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NotesSection {
    pub neighbours: Option<usize>,
    pub link_similarity: Option<f32>,
    pub link_entity: Option<f32>,
    pub max_links: Option<usize>,
    pub speaker_link_df: Option<usize>,
    pub speaker_link_pool: Option<usize>,
}

/// `[jobs]`: async adds and the workers that run them; see `crate::JobConfig`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobsSection {
    /// Worker tasks of an in-process engine (the Python package; `mnemo serve` has its own
    /// `[server] job_workers`). 0: none, jobs wait for a server.
    pub workers: Option<usize>,
    pub max_attempts: Option<u32>,
    pub backoff_base_ms: Option<u64>,
    pub backoff_max_ms: Option<u64>,
    pub lease_secs: Option<u64>,
    /// Open jobs at which new async adds are refused (HTTP 429); none: no limit.
    pub max_queue_depth: Option<u64>,
    pub poll_ms: Option<u64>,
}

impl JobsSection {
    /// The job settings, defaults where a key is absent (checked by `MemoryConfig::validate`).
    pub fn config(&self) -> crate::JobConfig {
        use std::time::Duration;
        let d = crate::JobConfig::default();
        crate::JobConfig {
            workers: self.workers.unwrap_or(d.workers),
            max_attempts: self.max_attempts.unwrap_or(d.max_attempts),
            backoff_base: self
                .backoff_base_ms
                .map_or(d.backoff_base, Duration::from_millis),
            backoff_max: self
                .backoff_max_ms
                .map_or(d.backoff_max, Duration::from_millis),
            lease: self.lease_secs.map_or(d.lease, Duration::from_secs),
            max_queue_depth: self.max_queue_depth.or(d.max_queue_depth),
            poll: self.poll_ms.map_or(d.poll, Duration::from_millis),
        }
    }
}

/// `[tiers]`: the memory hierarchy; see `mnemo_core::TierConfig`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TiersSection {
    pub short_term_capacity: Option<usize>,
    pub mid_term_capacity: Option<usize>,
    pub join_threshold: Option<f32>,
    pub continuity_threshold: Option<f32>,
    pub heat_visits: Option<f64>,
    pub heat_length: Option<f64>,
    pub heat_recency: Option<f64>,
    pub heat_tau_hours: Option<f64>,
    /// 0: profiles only on demand.
    pub profile_heat_threshold: Option<f64>,
}

impl Settings {
    /// The engine configuration these settings describe, validated (`invalid_input` naming the
    /// key otherwise). Nothing is opened or connected here.
    pub fn memory_config(&self) -> Result<MemoryConfig> {
        let data_dir = self
            .data_dir
            .clone()
            .unwrap_or_else(crate::default_data_dir);
        let mut cfg = MemoryConfig::new(data_dir);
        let pool = self.store.pool_size.unwrap_or(DEFAULT_STORE_POOL_SIZE);
        cfg.store = match &self.store.url {
            Some(url) => Some(StoreConfig::parse(url, pool)?),
            None => None,
        };
        let backend: EmbedderBackend = self.embedder.as_deref().unwrap_or("onnx").parse()?;
        cfg.embedder = match backend {
            EmbedderBackend::OpenAi => EmbedderConfig::openai(self.remote_embedder.clone().ok_or_else(|| {
                Error::invalid(
                    "embedder",
                    "the openai embedder needs its endpoint and model (the CLI's --embed-base-url and --embed-model)",
                )
            })?),
            local => EmbedderConfig::new(
                local,
                self.models_dir
                    .clone()
                    .unwrap_or_else(crate::default_models_dir),
            ),
        };
        cfg.embedder.threads = self.threads;
        cfg.llm = self.llm.chat(self.threads)?;
        cfg.infer.additive_only = self.llm.additive_only.unwrap_or(false);
        cfg.infer.vision = self.llm.vision.unwrap_or(false);
        let n = &self.notes;
        let d = mnemo_core::NoteConfig::default();
        cfg.notes = mnemo_core::NoteConfig {
            neighbours: n.neighbours.unwrap_or(d.neighbours),
            link_similarity: n.link_similarity.unwrap_or(d.link_similarity),
            link_entity: n.link_entity.unwrap_or(d.link_entity),
            max_rule_links: n.max_links.unwrap_or(d.max_rule_links),
            speaker_link_df: n.speaker_link_df.unwrap_or(d.speaker_link_df),
            speaker_link_pool: n.speaker_link_pool.unwrap_or(d.speaker_link_pool),
        };
        cfg.tiers = self.tiers.config();
        cfg.jobs = self.jobs.config();
        cfg.usage_tracking = self.usage_tracking.unwrap_or(true);
        cfg.validate()?;
        Ok(cfg)
    }
}

impl LlmSection {
    /// The chat model: a GGUF file, or an endpoint (base URL and model both given), or none.
    fn chat(&self, threads: Option<usize>) -> Result<Option<ChatConfig>> {
        let given = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        if let Some(path) = &self.gguf {
            if given(&self.base_url).is_some() {
                return Err(Error::invalid(
                    "llm",
                    "give either a GGUF file or an endpoint (base_url), not both",
                ));
            }
            return Ok(Some(ChatConfig::Gguf {
                path: path.clone(),
                threads: threads.map(|t| t as u32),
            }));
        }
        match (given(&self.base_url), given(&self.model)) {
            (None, None) => Ok(None),
            (Some(url), Some(model)) => {
                let mut cfg = mnemo_models::OpenAiConfig::new(url, model);
                cfg.api_key_env = given(&self.api_key_env);
                let secs = self.timeout_secs.unwrap_or(DEFAULT_LLM_TIMEOUT_SECS);
                cfg.timeout = std::time::Duration::from_secs(secs.max(1));
                Ok(Some(ChatConfig::OpenAi(cfg)))
            }
            _ => Err(Error::invalid(
                "llm",
                "a chat model needs both a base URL and a model (--llm-base-url and --llm-model, MNEMO_LLM_BASE_URL and MNEMO_LLM_MODEL, or llm.base_url and llm.model)",
            )),
        }
    }
}

impl TiersSection {
    /// The hierarchy settings (checked later, by `MemoryConfig::validate`).
    pub fn config(&self) -> mnemo_core::TierConfig {
        let d = mnemo_core::TierConfig::default();
        let threshold = self
            .profile_heat_threshold
            .map(|t| Some(t).filter(|t| *t != 0.0))
            .unwrap_or(d.profile_heat_threshold);
        mnemo_core::TierConfig {
            short_term_capacity: self.short_term_capacity.unwrap_or(d.short_term_capacity),
            mid_term_capacity: self.mid_term_capacity.or(d.mid_term_capacity),
            join_threshold: self.join_threshold.unwrap_or(d.join_threshold),
            continuity_threshold: self.continuity_threshold.unwrap_or(d.continuity_threshold),
            heat: mnemo_core::HeatWeights {
                visits: self.heat_visits.unwrap_or(d.heat.visits),
                length: self.heat_length.unwrap_or(d.heat.length),
                recency: self.heat_recency.unwrap_or(d.heat.recency),
                tau_hours: self.heat_tau_hours.unwrap_or(d.heat.tau_hours),
            },
            profile_heat_threshold: threshold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_keys_keep_the_defaults_and_given_ones_apply() {
        let s: Settings = serde_json::from_value(serde_json::json!({
            "data_dir": "/tmp/m",
            "store": {"url": "postgres://u@127.0.0.1/db", "pool_size": 3},
            "notes": {"neighbours": 7},
            "tiers": {"short_term_capacity": 4, "profile_heat_threshold": 0.0},
            "llm": {"base_url": "http://127.0.0.1:1/v1", "model": "m", "additive_only": true},
        }))
        .unwrap();
        let c = s.memory_config().unwrap();
        assert_eq!(c.store.as_ref().map(|s| s.kind()), Some("postgres"));
        assert_eq!(c.notes.neighbours, 7);
        assert_eq!(c.notes.max_rule_links, 5);
        assert_eq!(c.tiers.short_term_capacity, 4);
        assert_eq!(c.tiers.profile_heat_threshold, None);
        assert!(c.infer.additive_only);
        assert!(matches!(c.llm, Some(ChatConfig::OpenAi(_))));
        let d = Settings::default().memory_config().unwrap();
        assert_eq!(d.tiers, mnemo_core::TierConfig::default());
        assert!(d.llm.is_none() && d.store.is_none() && d.usage_tracking);
    }

    #[test]
    fn unknown_keys_half_a_model_and_bad_values_are_refused_by_name() {
        let unknown = serde_json::from_value::<Settings>(serde_json::json!({"stor": {}}));
        assert!(unknown.unwrap_err().to_string().contains("stor"));
        let half = Settings {
            llm: LlmSection {
                model: Some("m".into()),
                ..LlmSection::default()
            },
            ..Settings::default()
        };
        assert!(half
            .memory_config()
            .unwrap_err()
            .to_string()
            .contains("llm"));
        let bad = Settings {
            notes: NotesSection {
                link_similarity: Some(2.0),
                ..NotesSection::default()
            },
            ..Settings::default()
        };
        let e = bad.memory_config().unwrap_err().to_string();
        assert!(e.contains("notes.link_similarity"), "{e}");
        let url = Settings {
            store: StoreSection {
                url: Some("mysql://h/db".into()),
                pool_size: None,
            },
            ..Settings::default()
        };
        assert!(url
            .memory_config()
            .unwrap_err()
            .to_string()
            .contains("store_url"));
    }
}
