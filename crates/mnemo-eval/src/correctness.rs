//! `mnemo eval correctness`: does memory stay true as facts change? Each scenario (a JSON file
//! in `scenarios/`) is a few adds — a move, a new job, a reversed preference, a request to forget,
//! a corrected date — followed by checks on what is active, what was superseded or deleted, what
//! search returns first, and what a memory's lineage says came before.
//!
//! With no model given, each turn's `script` answers the pipeline's calls (the scripted model):
//! that run checks mnemo's own logic and must pass every check. With a real endpoint the script
//! is ignored and the share of passed checks scores the model and pipeline together. In scripts,
//! an `"id"` written `"@word"` stands for the number the reconciliation prompt shows for the
//! memory containing that word, as a real model would read it.

use anyhow::{bail, Context, Result};
use mnemo::core::pipeline::{shown_number, step_of, InferConfig};
use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The scenarios shipped with mnemo.
pub const BUILTIN: &[(&str, &str)] = &[
    ("moves-city", include_str!("../scenarios/moves-city.json")),
    ("changes-job", include_str!("../scenarios/changes-job.json")),
    (
        "reverses-preference",
        include_str!("../scenarios/reverses-preference.json"),
    ),
    (
        "forget-on-request",
        include_str!("../scenarios/forget-on-request.json"),
    ),
    (
        "corrects-date",
        include_str!("../scenarios/corrects-date.json"),
    ),
    (
        "lived-before",
        include_str!("../scenarios/lived-before.json"),
    ),
    (
        "restated-fact",
        include_str!("../scenarios/restated-fact.json"),
    ),
];

#[derive(Debug, Clone, Deserialize)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub user_id: String,
    pub turns: Vec<Turn>,
    pub expect: Expect,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Turn {
    pub at: Timestamp,
    pub messages: Vec<InputMessage>,
    /// Step name (`extract`, `reconcile`, `procedural`) → the scripted model's answer.
    #[serde(default)]
    pub script: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Expect {
    /// Some active memory contains each text.
    #[serde(default)]
    pub active: Vec<String>,
    /// No active memory contains any of these.
    #[serde(default)]
    pub not_active: Vec<String>,
    #[serde(default)]
    pub superseded: Vec<String>,
    #[serde(default)]
    pub deleted: Vec<String>,
    /// The first search hit contains `top`.
    #[serde(default)]
    pub search: Vec<SearchCheck>,
    /// The lineage of the active memory containing `current` holds a memory containing `previous`.
    #[serde(default)]
    pub before: Vec<BeforeCheck>,
    /// Exactly `n` active memories contain `text`.
    #[serde(default)]
    pub count: Vec<CountCheck>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SearchCheck {
    pub query: String,
    pub top: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BeforeCheck {
    pub current: String,
    pub previous: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CountCheck {
    pub text: String,
    pub n: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub check: String,
    pub passed: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub name: String,
    pub passed: usize,
    pub total: usize,
    /// Set when an add failed; the remaining checks still ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub checks: Vec<CheckResult>,
    pub model_calls: usize,
    pub tokens: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CorrectnessReport {
    /// `scripted` or the endpoint's model id.
    pub model: String,
    pub score: f64,
    pub passed: usize,
    pub total: usize,
    pub scenarios: Vec<ScenarioResult>,
}

/// Loads the built-in scenarios, or every `*.json` in `dir`.
pub fn load(dir: Option<&Path>) -> Result<Vec<Scenario>> {
    let mut out = Vec::new();
    match dir {
        None => {
            for (name, text) in BUILTIN {
                out.push(serde_json::from_str(text).with_context(|| format!("scenario {name}"))?);
            }
        }
        Some(dir) => {
            let mut paths: Vec<_> = std::fs::read_dir(dir)
                .with_context(|| format!("reading {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            paths.sort();
            for p in paths {
                let text = std::fs::read_to_string(&p)?;
                out.push(
                    serde_json::from_str(&text)
                        .with_context(|| format!("scenario {}", p.display()))?,
                );
            }
        }
    }
    if out.is_empty() {
        bail!("no scenarios found");
    }
    Ok(out)
}

/// The scripted model: answers each call with the current turn's script for that step.
struct ScriptModel {
    turn: Mutex<BTreeMap<String, Value>>,
}

fn resolve_ids(value: &mut Value, req: &ChatRequest) {
    match value {
        Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                match v {
                    Value::String(s) if k == "id" && s.starts_with('@') => {
                        if let Some(n) = shown_number(req, &s[1..]) {
                            *v = Value::from(n);
                        }
                    }
                    other => resolve_ids(other, req),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| resolve_ids(v, req)),
        _ => {}
    }
}

impl ChatModel for ScriptModel {
    fn model_id(&self) -> &str {
        "scripted"
    }

    fn complete(&self, req: &ChatRequest) -> mnemo::Result<ChatResponse> {
        let step = step_of(req).ok_or_else(|| Error::internal("not a pipeline prompt"))?;
        let mut answer = self
            .turn
            .lock()
            .expect("not poisoned")
            .get(step)
            .cloned()
            .ok_or_else(|| Error::ModelOutput {
                model: "scripted".into(),
                step: step.into(),
                reason: "the scenario scripts no answer for this step".into(),
            })?;
        resolve_ids(&mut answer, req);
        let words = |s: &str| s.split_whitespace().count() as u64;
        Ok(ChatResponse {
            content: answer.to_string(),
            usage: TokenUsage {
                prompt_tokens: req.messages.iter().map(|m| words(&m.content)).sum(),
                completion_tokens: words(&answer.to_string()),
            },
        })
    }
}

/// Runs every scenario in a fresh in-memory store. `model: None` uses each turn's script.
pub async fn run_correctness(
    scenarios: &[Scenario],
    embedder: Arc<dyn Embedder>,
    model: Option<Arc<dyn ChatModel>>,
    infer: InferConfig,
) -> Result<CorrectnessReport> {
    let mut results = Vec::new();
    for sc in scenarios {
        results.push(run_one(sc, embedder.clone(), model.clone(), infer.clone()).await?);
    }
    let passed = results.iter().map(|r| r.passed).sum();
    let total = results.iter().map(|r| r.total).sum::<usize>();
    Ok(CorrectnessReport {
        model: model.map_or_else(|| "scripted".into(), |m| m.model_id().to_string()),
        score: if total == 0 {
            0.0
        } else {
            passed as f64 / total as f64
        },
        passed,
        total,
        scenarios: results,
    })
}

async fn run_one(
    sc: &Scenario,
    embedder: Arc<dyn Embedder>,
    model: Option<Arc<dyn ChatModel>>,
    infer: InferConfig,
) -> Result<ScenarioResult> {
    let store = mnemo::open_store(&mnemo::StoreConfig::InMemory)?;
    let script = Arc::new(ScriptModel {
        turn: Mutex::new(BTreeMap::new()),
    });
    let chat: Arc<dyn ChatModel> = match &model {
        Some(m) => m.clone(),
        None => script.clone(),
    };
    let m =
        Memory::from_parts(store.clone(), embedder, RankParams::default())?.with_chat(chat, infer);
    let scope = Scope::user(&sc.user_id)?;
    let played = play(&m, &script, sc, &scope).await;
    let everything = store
        .list(&ListQuery::new(scope.clone(), 1000).with_read(ReadOptions {
            include_inactive: true,
            ..ReadOptions::default()
        }))?
        .results;
    let mut checks = state_checks(&sc.expect, &everything);
    checks.extend(read_checks(&m, &scope, &sc.expect, &everything).await?);
    let passed = checks.iter().filter(|c| c.passed).count();
    Ok(ScenarioResult {
        name: sc.name.clone(),
        passed,
        total: checks.len(),
        error: played.error,
        checks,
        model_calls: played.calls,
        tokens: played.tokens,
    })
}

/// What playing a scenario's turns cost, and the first turn that failed.
struct Played {
    calls: usize,
    tokens: u64,
    error: Option<String>,
}

/// Adds the scenario's turns in order, each with its script, inferred.
async fn play(m: &Memory, script: &ScriptModel, sc: &Scenario, scope: &Scope) -> Played {
    let mut played = Played {
        calls: 0,
        tokens: 0,
        error: None,
    };
    for (i, turn) in sc.turns.iter().enumerate() {
        *script.turn.lock().expect("not poisoned") = turn.script.clone();
        let mut req = AddRequest::text(scope.clone(), "");
        req.input = AddInput::Messages(turn.messages.clone());
        req.timestamp = Some(turn.at);
        req.infer = Some(true);
        match m.add(req).await {
            Ok(out) => {
                played.calls += out.usage.iter().filter(|c| c.purpose != "embed").count();
                played.tokens += out
                    .usage
                    .iter()
                    .map(|c| c.prompt_tokens + c.completion_tokens)
                    .sum::<u64>();
            }
            Err(e) => {
                played
                    .error
                    .get_or_insert_with(|| format!("turn {}: {e}", i + 1));
            }
        }
    }
    played
}

fn has(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.to_lowercase())
}

/// The memories of `state` whose text contains `needle` (ignoring case).
fn in_state<'a>(
    everything: &'a [mnemo::MemoryRecord],
    state: MemoryState,
    needle: &str,
) -> Vec<&'a mnemo::MemoryRecord> {
    everything
        .iter()
        .filter(|x| x.state == state && has(&x.text, needle))
        .collect()
}

fn check(name: String, passed: bool, detail: String) -> CheckResult {
    CheckResult {
        check: name,
        passed,
        detail,
    }
}

/// The expectations on what is stored: active, not active, superseded, deleted, counts.
fn state_checks(expect: &Expect, everything: &[mnemo::MemoryRecord]) -> Vec<CheckResult> {
    let mut checks = Vec::new();
    let active_texts: Vec<&str> = everything
        .iter()
        .filter(|x| x.state == MemoryState::Active)
        .map(|x| x.text.as_str())
        .collect();
    for t in &expect.active {
        let ok = !in_state(everything, MemoryState::Active, t).is_empty();
        checks.push(check(
            format!("active contains {t:?}"),
            ok,
            format!("active: {active_texts:?}"),
        ));
    }
    for t in &expect.not_active {
        let ok = in_state(everything, MemoryState::Active, t).is_empty();
        checks.push(check(
            format!("no active memory contains {t:?}"),
            ok,
            format!("active: {active_texts:?}"),
        ));
    }
    for (state, list) in [
        (MemoryState::Superseded, &expect.superseded),
        (MemoryState::Deleted, &expect.deleted),
    ] {
        for t in list {
            let ok = !in_state(everything, state, t).is_empty();
            checks.push(check(
                format!("a {state} memory contains {t:?}"),
                ok,
                String::new(),
            ));
        }
    }
    for c in &expect.count {
        let n = in_state(everything, MemoryState::Active, &c.text).len();
        checks.push(check(
            format!("{} active memories contain {:?}", c.n, c.text),
            n == c.n,
            format!("found {n}"),
        ));
    }
    checks
}

/// The expectations on what reads return: the top search hit, and lineage in history.
async fn read_checks(
    m: &Memory,
    scope: &Scope,
    expect: &Expect,
    everything: &[mnemo::MemoryRecord],
) -> Result<Vec<CheckResult>> {
    let mut checks = Vec::new();
    for s in &expect.search {
        let hits = m
            .search(SearchRequest::new(scope.clone(), s.query.clone(), 1))
            .await?;
        let top = hits
            .results
            .first()
            .map(|h| h.memory.text.clone())
            .unwrap_or_default();
        checks.push(check(
            format!("search {:?} ranks {:?} first", s.query, s.top),
            has(&top, &s.top),
            format!("top: {top:?}"),
        ));
    }
    for b in &expect.before {
        let current = in_state(everything, MemoryState::Active, &b.current);
        let mut found = String::new();
        if let Some(cur) = current.first() {
            for e in m.history(scope.clone(), cur.id).await? {
                if let Some(old) = e.old_memory.as_deref().or(e.new_memory.as_deref()) {
                    if e.memory_id != cur.id && has(old, &b.previous) {
                        found = old.to_string();
                    }
                }
            }
        }
        checks.push(check(
            format!("before {:?} came {:?}", b.current, b.previous),
            !found.is_empty(),
            if current.is_empty() {
                "no active memory for the current value".into()
            } else {
                format!("lineage has {found:?}")
            },
        ));
    }
    Ok(checks)
}
