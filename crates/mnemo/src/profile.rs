//! Long-term memory in the facade: the user profile and knowledge (`mnemo_core::pipeline::profile`).
//!
//! - [`Memory::refresh_profile`] analyses, on demand, every unanalysed page of a user (all
//!   agents, runs and sessions), oldest first, in calls of at most
//!   [`ProfileConfig::max_page_tokens`] page tokens; each call's result is written in one
//!   transaction that also marks its pages analysed. A failing call writes nothing and marks
//!   nothing; earlier calls of the same refresh stay written (each is complete on its own).
//! - [`Memory::profile_after_add`] is the automatic trigger the add path calls: the unanalysed
//!   pages of the scope's segments whose heat reached the threshold. It never fails the add: a
//!   failure becomes a warning, the pages stay unanalysed and the next add tries again.
//! - [`Memory::profile`] reads the current profile.
//!
//! The profile lives in the user's scope (a user id alone). Assistant knowledge goes to the
//! scope of the user with the agent (`user_id` + `agent_id`), so the agent's reads and the
//! user's reads both see it and its source messages stay within reach; without an agent id it
//! goes to the user's scope, marked `"knowledge": "assistant"` in its metadata like any
//! assistant knowledge. Without a chat model no profile is invented: an on-demand refresh is
//! an `invalid_input` error naming the model, and the automatic trigger does nothing.

use crate::{run_blocking, Memory, MemoryRecord};
use mnemo_core::pipeline::{self, ProfileConfig};
use mnemo_core::tier::{heat, HeatWeights, PageQuery, StoredPage};
use mnemo_core::*;
use serde::Serialize;

/// Per-call settings of a profile refresh.
#[derive(Debug, Clone, Default)]
pub struct ProfileOptions {
    /// Extra instructions for the analysis.
    pub instructions: Option<String>,
    /// Recorded in the history events the refresh writes.
    pub request_id: Option<String>,
}

/// What a refresh did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProfileOutcome {
    /// The current profile after the refresh (`None`: the user has none).
    pub profile: Option<MemoryRecord>,
    /// What was written: the profile (`ADD`, or `UPDATE` with the previous version and the
    /// model's reason) and each knowledge statement (`ADD`, or `UPDATE` of one it replaces).
    pub results: Vec<AddResult>,
    /// Pages marked analysed.
    pub pages_analysed: usize,
    /// Statements skipped as repeats, citations of messages the model was not shown, and the
    /// like.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Every model call of the refresh.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<ModelCall>,
}

/// The user's scope and the scope assistant knowledge goes to, from a caller's scope.
fn scopes_of(scope: &Scope) -> Result<(Scope, Scope)> {
    let Some(user) = scope.user_id() else {
        return Err(Error::invalid(
            "user_id",
            "a profile belongs to a user: give a user_id",
        ));
    };
    if scope.run_id().is_some() {
        return Err(Error::invalid(
            "run_id",
            "a profile spans all of a user's runs: leave run_id out",
        ));
    }
    let assistant = Scope::of(Some(user.clone()), scope.agent_id().cloned(), None)?;
    Ok((Scope::of_user(user.clone()), assistant))
}

/// The active profile memory of a user scope, newest first if (by a race) there are several.
fn current_profile(store: &dyn Store, user: &Scope) -> Result<Option<MemoryRecord>> {
    let page =
        store.list(&ListQuery::new(user.clone(), 100).with_kinds(vec![MemoryKind::Profile]))?;
    Ok(page
        .results
        .into_iter()
        .filter(|m| m.user_id.is_some() && m.agent_id.is_none() && m.run_id.is_none())
        .max_by_key(|m| m.created_at))
}

/// Consecutive runs of pages whose tokens stay within `max` (a larger page goes alone).
fn chunks(pages: Vec<StoredPage>, max: u64) -> Vec<Vec<StoredPage>> {
    let mut out: Vec<Vec<StoredPage>> = Vec::new();
    let mut used = 0u64;
    for p in pages {
        let t = u64::from(p.tokens);
        match out.last_mut() {
            Some(last) if !last.is_empty() && used + t <= max => {
                used += t;
                last.push(p);
            }
            _ => {
                used = t;
                out.push(vec![p]);
            }
        }
    }
    out
}

impl Memory {
    /// The current profile of the user `scope` names (agent and run ignored), if any.
    pub async fn profile(&self, scope: Scope) -> Result<Option<MemoryRecord>> {
        let (user, _) = scopes_of(&Scope::of(scope.user_id().cloned(), None, None)?)?;
        let u = user.clone();
        let found = self.with_store(move |s| current_profile(s, &u)).await?;
        self.record_reads(&user, found.iter());
        Ok(found)
    }

    /// Analyses every unanalysed page of the user `scope` names into the profile and knowledge;
    /// `scope.agent_id`, when given, is the agent whose assistant knowledge this is.
    pub async fn refresh_profile(
        &self,
        scope: Scope,
        options: ProfileOptions,
    ) -> Result<ProfileOutcome> {
        if self.inner.chat.is_none() {
            return Err(Error::invalid(
                "llm",
                "profile analysis needs a chat model and none is configured; configure one with --llm-base-url/--llm-model",
            ));
        }
        let (user, assistant) = scopes_of(&scope)?;
        let q = PageQuery {
            scope: Some(user.clone()),
            analysed: Some(false),
            ..PageQuery::default()
        };
        let pages = self.with_store(move |s| s.pages(&q)).await?;
        self.analyse(user, assistant, pages, options).await
    }

    /// The automatic trigger, called after an add to `scope`: the unanalysed pages of the
    /// scope's active segments whose heat reaches `threshold` are analysed as by
    /// [`Memory::refresh_profile`]. Returns warnings for the add's outcome (a failed attempt
    /// leaves its pages unanalysed, so the next add retries) and the model calls made; does
    /// nothing without a chat model, a threshold, or a user id in `scope`.
    pub async fn profile_after_add(
        &self,
        scope: &Scope,
        threshold: Option<f64>,
        weights: &HeatWeights,
    ) -> (Vec<String>, Vec<ModelCall>) {
        let (Some(threshold), Some(_), Some(_)) = (threshold, &self.inner.chat, scope.user_id())
        else {
            return (Vec::new(), Vec::new());
        };
        let Ok((user, assistant)) =
            Scope::of(scope.user_id().cloned(), scope.agent_id().cloned(), None)
                .and_then(|s| scopes_of(&s))
        else {
            return (Vec::new(), Vec::new());
        };
        let (owner, weights) = (scope.clone(), *weights);
        let now = chrono::Utc::now();
        let pages = self
            .with_store(move |s| {
                let mut pages = Vec::new();
                for seg in s.segments(&owner, true, false)? {
                    if heat(&seg, &weights, now) < threshold {
                        continue;
                    }
                    pages.extend(s.pages(&PageQuery {
                        scope: Some(owner.clone()),
                        exact: true,
                        segment: Some(seg.id),
                        analysed: Some(false),
                        ..PageQuery::default()
                    })?);
                }
                pages.sort_by_key(|p| p.seq);
                Ok(pages)
            })
            .await;
        let result = match pages {
            Ok(pages) if pages.is_empty() => return (Vec::new(), Vec::new()),
            Ok(pages) => {
                self.analyse(user, assistant, pages, ProfileOptions::default())
                    .await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(o) => (o.warnings, o.usage),
            Err(e) => {
                tracing::warn!(
                    error_kind = e.kind().as_str(),
                    "profile analysis after an add failed; its pages stay unanalysed"
                );
                (
                    vec![format!(
                        "profile analysis failed and will be retried after a later add: {e}"
                    )],
                    Vec::new(),
                )
            }
        }
    }

    /// Analyses `pages` call by call, each call's result written with its analysed marks.
    async fn analyse(
        &self,
        user: Scope,
        assistant: Scope,
        pages: Vec<StoredPage>,
        options: ProfileOptions,
    ) -> Result<ProfileOutcome> {
        let chat = self.inner.chat.clone().ok_or_else(|| {
            Error::invalid("llm", "profile analysis needs a chat model; configure one with --llm-base-url/--llm-model")
        })?;
        let cfg = ProfileConfig::default();
        let mut outcome = ProfileOutcome::default();
        if !pages.is_empty() {
            let embedder = self.embedder().await?;
            for chunk in chunks(pages, cfg.max_page_tokens) {
                let (store, chat, embedder, cfg) = (
                    self.store().clone(),
                    chat.clone(),
                    embedder.clone(),
                    cfg.clone(),
                );
                let (user, assistant, options) = (user.clone(), assistant.clone(), options.clone());
                let (written, warnings, usage, n) = run_blocking(move || {
                    let store = store.as_ref();
                    let ids: Vec<MessageId> =
                        chunk.iter().flat_map(|p| p.message_ids.clone()).collect();
                    let messages = mnemo_core::visible_messages(
                        store,
                        &user,
                        store.messages_by_id(&user, &ids)?,
                        &mnemo_core::ReadOptions::default(),
                    )?;
                    let current = current_profile(store, &user)?;
                    let mut log = pipeline::CallLog::default();
                    let input = pipeline::ProfileInput {
                        user: &user,
                        assistant: &assistant,
                        pages: &chunk,
                        messages: &messages,
                        current: current.as_ref(),
                        instructions: options.instructions.as_deref(),
                        now: chrono::Utc::now(),
                    };
                    let plan = pipeline::profile(
                        store,
                        embedder.as_ref(),
                        chat.as_ref(),
                        &cfg,
                        &input,
                        &mut log,
                    )?;
                    let warnings = plan.warnings.clone();
                    let ctx = WritePlan {
                        request_id: options.request_id.clone(),
                        ..WritePlan::default()
                    };
                    let written = store.write(plan.batches(&user, &ctx))?;
                    Ok((written, warnings, log.calls, chunk.len()))
                })
                .await?;
                outcome
                    .results
                    .extend(written.into_iter().flat_map(|o| o.results));
                outcome.warnings.extend(warnings);
                outcome.usage.extend(usage);
                outcome.pages_analysed += n;
            }
        }
        let u = user.clone();
        outcome.profile = self.with_store(move |s| current_profile(s, &u)).await?;
        Ok(outcome)
    }
}
