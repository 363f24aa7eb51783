//! One function per subcommand; each builds a request, calls the library, prints the result.

use crate::args::{Cli, Command, ModelsAction, RemoteEmbedderArgs, ScopeArgs};
use crate::io::*;
use anyhow::Context;
use mnemo::{AddInput, AddRequest, GetRequest, ListRequest, Memory, MemoryConfig, UpdateRequest};
use mnemo_core::*;
use std::io::Write;

pub fn scope_of(s: &ScopeArgs) -> Result<Scope, Error> {
    Scope::from_parts(
        s.user_id.as_deref(),
        s.agent_id.as_deref(),
        s.run_id.as_deref(),
    )
}

fn kinds_of(raw: &Option<String>) -> Result<Option<Vec<MemoryKind>>, Error> {
    raw.as_deref()
        .map(|r| {
            r.split(',')
                .filter(|k| !k.trim().is_empty())
                .map(str::parse)
                .collect()
        })
        .transpose()
}

fn id_of(raw: &str) -> Result<MemoryId, Error> {
    MemoryId::parse(raw)
}

/// The engine configuration of the global flags (which read `MNEMO_*` and `mnemo.toml`),
/// through the facade's one conversion from settings (`mnemo::Settings`).
pub fn config_of(cli: &Cli) -> Result<MemoryConfig, Error> {
    let remote_embedder = match cli.embedder.parse()? {
        mnemo_models::EmbedderBackend::OpenAi => Some(remote_embedder_of(&cli.remote_embedder)?),
        _ => None,
    };
    let (l, n, t) = (&cli.llm, &cli.notes, &cli.tiers);
    let settings = mnemo::Settings {
        data_dir: cli.data_dir.clone(),
        models_dir: cli.models_dir.clone(),
        embedder: Some(cli.embedder.clone()),
        threads: cli.threads,
        usage_tracking: Some(t.usage_tracking),
        store: mnemo::settings::StoreSection {
            url: cli.store_url.clone(),
            pool_size: Some(cli.store_pool_size),
        },
        llm: mnemo::settings::LlmSection {
            base_url: l.llm_base_url.clone(),
            model: l.llm_model.clone(),
            api_key_env: l.llm_api_key_env.clone(),
            gguf: l.llm_gguf.clone(),
            timeout_secs: Some(l.llm_timeout_secs),
            additive_only: Some(l.additive_only),
        },
        notes: mnemo::settings::NotesSection {
            neighbours: Some(n.note_neighbours),
            link_similarity: Some(n.note_link_similarity),
            link_entity: Some(n.note_link_entity),
            max_links: Some(n.note_max_links),
            speaker_link_df: Some(n.note_speaker_link_df),
            speaker_link_pool: Some(n.note_speaker_link_pool),
        },
        tiers: t.settings(),
        jobs: cli.jobs.settings(),
        remote_embedder,
    };
    settings.memory_config()
}

fn remote_embedder_of(
    args: &RemoteEmbedderArgs,
) -> Result<mnemo_models::OpenAiEmbedderConfig, Error> {
    let required = |value: &Option<String>, flag: &str, var: &str| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .ok_or_else(|| {
                Error::invalid(
                    flag,
                    format!("`--embedder openai` needs --{flag} (or {var})"),
                )
            })
    };
    let mut remote = mnemo_models::OpenAiEmbedderConfig::new(
        required(
            &args.embed_base_url,
            "embed-base-url",
            "MNEMO_EMBED_BASE_URL",
        )?,
        required(&args.embed_model, "embed-model", "MNEMO_EMBED_MODEL")?,
    );
    remote.endpoint.api_key_env = args.embed_api_key_env.clone().filter(|v| !v.is_empty());
    remote.dimension = args.embed_dimension;
    remote.normalize = args.embed_normalize;
    Ok(remote)
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let json = cli.json;
    match &cli.command {
        Command::Models {
            action: ModelsAction::Install { python, force, llm },
        } => {
            let dir = cli
                .models_dir
                .clone()
                .unwrap_or_else(mnemo::default_models_dir);
            let opts = mnemo_models::InstallOptions {
                python: python.clone(),
                pip_args: Vec::new(),
                force: *force,
            };
            let llm = *llm;
            let report = tokio::task::spawn_blocking(move || {
                let mut report = mnemo_models::install_models(&dir, &opts)?;
                if llm {
                    let chat = mnemo_models::install_llm(&dir, &opts)?;
                    report.installed.extend(chat.installed);
                    report.skipped.extend(chat.skipped);
                    report.pip_command = report.pip_command.or(chat.pip_command);
                }
                Ok::<_, mnemo_core::Error>(report)
            })
            .await??;
            if json {
                print_json(&serde_json::json!({
                    "installed": report.installed, "skipped": report.skipped, "pip_command": report.pip_command,
                }))?;
            } else {
                for p in &report.installed {
                    outln!("installed {}", p.display());
                }
                for p in &report.skipped {
                    outln!("present   {}", p.display());
                }
            }
            return Ok(());
        }
        Command::Bench {
            memories,
            queries,
            add_sample,
            vector_cache,
            store_dir,
            schema,
            search_only,
            conversations,
            top_k,
        } => {
            if let Some(data) = conversations {
                let opts = crate::bench::ConversationOptions {
                    data: data.clone(),
                    top_k: *top_k,
                    store_dir: store_dir.clone(),
                };
                return crate::bench::run_conversations(config_of(&cli)?, opts, json).await;
            }
            let opts = crate::bench::Options {
                store_dir: store_dir.clone(),
                schema: schema.clone(),
                search_only: *search_only,
                n: *memories,
                queries: *queries,
                add_sample: *add_sample,
                vector_cache: vector_cache.clone(),
            };
            return crate::bench::run(config_of(&cli)?, opts, json).await;
        }
        Command::Eval {
            workload: crate::args::EvalWorkload::Locomo(args),
        } => return crate::eval::locomo(config_of(&cli)?, (**args).clone(), json).await,
        Command::Eval {
            workload: crate::args::EvalWorkload::Correctness(args),
        } => return crate::eval::correctness(config_of(&cli)?, args.clone(), json).await,
        Command::Serve(args) => return crate::serve::serve(&cli, args, json).await,
        Command::Mcp { api_key } => return crate::serve::mcp(&cli, api_key).await,
        Command::Keys { action } => return crate::serve::keys(&cli, action, json).await,
        Command::Reembed { batch_size } => {
            return crate::reembed::run(config_of(&cli)?, *batch_size, json).await
        }
        _ => {}
    }
    let location = config_of(&cli)?.store_config();
    let memory = Memory::open(config_of(&cli)?).await?;
    match cli.command {
        Command::Add {
            scope,
            infer,
            metadata,
            expires_at,
            timestamp,
            idempotency_key,
            messages,
            text,
            memory_type,
            keywords,
            tags,
            context,
            instructions,
            session_id,
        } => {
            let list = |raw: Option<String>| {
                raw.map(|r| {
                    if r.trim().is_empty() {
                        Vec::new()
                    } else {
                        r.split(',').map(str::to_string).collect()
                    }
                })
            };
            let note = mnemo::NoteInput {
                keywords: list(keywords),
                tags: list(tags),
                context,
            };
            let input = match (messages, text) {
                (Some(m), None) => AddInput::Messages(
                    serde_json::from_value(parse_json_arg("messages", &m)?).map_err(|e| {
                        Error::invalid(
                            "messages",
                            format!("expected a list of {{role, content, name?}}: {e}"),
                        )
                    })?,
                ),
                (None, Some(t)) => AddInput::Text(t),
                _ => {
                    return Err(
                        Error::invalid("add", "give exactly one of TEXT or --messages").into(),
                    )
                }
            };
            let req = AddRequest {
                scope: scope_of(&scope)?,
                input,
                metadata: metadata
                    .map(|m| parse_json_arg("metadata", &m))
                    .transpose()?,
                expires_at: expires_at
                    .map(|e| parse_time_arg("expires_at", &e))
                    .transpose()?,
                timestamp: timestamp
                    .map(|e| parse_time_arg("timestamp", &e))
                    .transpose()?,
                idempotency_key,
                infer,
                memory_type: memory_type.map(|k| k.parse::<MemoryKind>()).transpose()?,
                instructions,
                session_id,
                request_id: None,
                actor: None,
                note,
            };
            let out = memory.add(req).await?;
            for w in &out.warnings {
                eprintln!("warning: {w}");
            }
            if json {
                print_json(&out)?;
            } else {
                for r in &out.results {
                    outln!("{} {}  {}", r.event, r.id, r.memory);
                }
            }
        }
        Command::Search {
            scope,
            top_k,
            threshold,
            kinds,
            filters,
            include_expired,
            include_inactive,
            as_of,
            mode,
            expand_links,
            query,
        } => {
            let filter = match filters {
                Some(f) => Filter::from_json(&parse_json_arg("filters", &f)?)?,
                None => None,
            };
            let req = SearchRequest {
                scope: scope_of(&scope)?,
                query,
                top_k,
                threshold,
                kinds: kinds_of(&kinds)?,
                filter,
                read: ReadOptions {
                    include_expired,
                    include_inactive,
                    as_of: as_of.map(|t| parse_time_arg("as_of", &t)).transpose()?,
                    ..ReadOptions::default()
                },
                mode,
                expand_links,
                expand_limit: None,
            };
            let resp = memory.search(req).await?;
            if json {
                print_json(&resp)?;
            } else {
                for h in &resp.results {
                    match &h.via {
                        Some(v) => outln!(
                            "{:.3}  {}  (via {} {} {:.2})",
                            h.score,
                            human_memory(&h.memory),
                            v.memory_id,
                            v.kind,
                            v.strength
                        ),
                        None => outln!("{:.3}  {}", h.score, human_memory(&h.memory)),
                    }
                }
            }
        }
        Command::Get {
            scope,
            include_expired,
            detail: true,
            id,
        } => {
            let _ = include_expired;
            let d = memory.inspect(scope_of(&scope)?, id_of(&id)?).await?;
            if json {
                print_json(&d)?;
            } else {
                outln!("{} [{}]", human_memory(&d.memory), d.memory.state);
                for m in &d.source_messages {
                    outln!(
                        "  from {} {}: {}",
                        m.created_at.to_rfc3339(),
                        m.name.as_deref().unwrap_or(m.role.as_str()),
                        m.content
                    );
                }
                for l in &d.links {
                    outln!("  link {} {} -> {}", l.kind, l.from, l.to);
                }
                for e in &d.entities {
                    outln!("  entity {} ({})", e.name, e.entity_type);
                }
            }
        }
        Command::Get {
            scope,
            include_expired,
            detail: false,
            id,
        } => {
            let m = memory
                .get(GetRequest {
                    scope: scope_of(&scope)?,
                    id: id_of(&id)?,
                    include_expired,
                })
                .await?;
            if json {
                print_json(&m)?;
            } else {
                outln!("{}", human_memory(&m));
            }
        }
        Command::List {
            scope,
            limit,
            cursor,
            kinds,
            filters,
            include_expired,
            as_of,
        } => {
            let page = memory
                .list(ListRequest {
                    scope: scope_of(&scope)?,
                    kinds: kinds_of(&kinds)?,
                    filters: filters.map(|f| parse_json_arg("filters", &f)).transpose()?,
                    limit,
                    cursor,
                    include_expired,
                    as_of: as_of.map(|t| parse_time_arg("as_of", &t)).transpose()?,
                })
                .await?;
            if json {
                print_json(&page)?;
            } else {
                for m in &page.results {
                    outln!("{}", human_memory(m));
                }
                if let Some(c) = &page.next_cursor {
                    outln!("next cursor: {c}");
                }
            }
        }
        Command::Update {
            scope,
            text,
            metadata,
            expires_at,
            reason,
            id,
        } => {
            let req = UpdateRequest {
                text,
                metadata: metadata
                    .map(|m| parse_json_arg("metadata", &m))
                    .transpose()?,
                expires_at: expires_at
                    .map(|e| parse_time_arg("expires_at", &e).map(Some))
                    .transpose()?,
            };
            let ctx = WriteContext {
                actor: Some("cli".into()),
                reason,
                ..WriteContext::default()
            };
            let m = memory
                .update(scope_of(&scope)?, id_of(&id)?, req, ctx)
                .await?;
            if json {
                print_json(&m)?;
            } else {
                outln!("updated {}", human_memory(&m));
            }
        }
        Command::Delete {
            scope,
            hard,
            reason,
            id,
        } => {
            let id = id_of(&id)?;
            let mode = if hard {
                DeleteMode::Hard
            } else {
                DeleteMode::Soft
            };
            let ctx = WriteContext {
                actor: Some("cli".into()),
                reason,
                ..WriteContext::default()
            };
            memory.delete(scope_of(&scope)?, id, mode, ctx).await?;
            if json {
                print_json(&serde_json::json!({"id": id, "event": "DELETE"}))?;
            } else {
                outln!("deleted {id}");
            }
        }
        Command::Erase {
            scope,
            sources,
            reason,
            session_id,
            all,
            confirm,
            id,
        } => {
            let ctx = WriteContext {
                actor: Some("cli".into()),
                reason,
                ..WriteContext::default()
            };
            let log = match (id, session_id, all) {
                (Some(id), None, false) => {
                    let report = memory
                        .erase(scope_of(&scope)?, id_of(&id)?, sources, ctx)
                        .await?;
                    if json {
                        print_json(&report)?;
                    } else if report.messages_kept > 0 {
                        outln!(
                            "erased {} ({} source message(s) kept; --sources erases them)",
                            report.id,
                            report.messages_kept
                        );
                    } else {
                        outln!("erased {}", report.id);
                    }
                    None
                }
                (None, Some(session), false) => Some(
                    memory
                        .erase_session(scope_of(&scope)?, session, ctx)
                        .await?,
                ),
                (None, None, true) => {
                    Some(memory.erase_scope(scope_of(&scope)?, confirm, ctx).await?)
                }
                _ => {
                    return Err(Error::invalid(
                        "id",
                        "give a memory id, --session-id or --all (one of them)",
                    )
                    .into())
                }
            };
            if let Some(r) = log {
                if json {
                    print_json(&r)?;
                } else {
                    outln!(
                        "erased {} memories, {} messages, {} pages, {} segment summaries",
                        r.memories_erased,
                        r.messages_erased,
                        r.pages_scrubbed,
                        r.segments_scrubbed
                    );
                }
            }
        }
        Command::DeleteAll { scope, hard } => {
            let mode = if hard {
                DeleteMode::Hard
            } else {
                DeleteMode::Soft
            };
            let n = memory
                .delete_all(scope_of(&scope)?, mode, WriteContext::default())
                .await?;
            if json {
                print_json(&serde_json::json!({"deleted": n}))?;
            } else {
                outln!("deleted {n} memories");
            }
        }
        Command::Link {
            scope,
            strength,
            kind,
            reason,
            remove,
            id,
            to,
        } => {
            let scope = scope_of(&scope)?;
            let from = id_of(&id)?;
            let kind = kind
                .as_deref()
                .map(str::parse::<LinkKind>)
                .transpose()?
                .unwrap_or(LinkKind::Related);
            match (to, remove) {
                (None, false) => {
                    let links = memory.links(scope, from).await?;
                    if json {
                        print_json(&serde_json::json!({"results": links}))?;
                    } else {
                        for l in &links {
                            outln!(
                                "{} -> {}  {} {:.2} by {}  {}",
                                l.from,
                                l.to,
                                l.kind,
                                l.strength,
                                l.author,
                                l.reason.as_deref().unwrap_or("")
                            );
                        }
                    }
                }
                (None, true) => {
                    return Err(
                        Error::invalid("to", "--remove needs the linked memory's id").into(),
                    )
                }
                (Some(to), true) => {
                    let removed = memory.remove_link(scope, from, id_of(&to)?, kind).await?;
                    if !removed {
                        return Err(Error::not_found("link", to).into());
                    }
                    if json {
                        print_json(&serde_json::json!({"removed": true}))?;
                    } else {
                        outln!("link removed");
                    }
                }
                (Some(to), false) => {
                    if kind == LinkKind::Supersedes {
                        return Err(Error::invalid(
                            "kind",
                            "supersedes links are written by updates, not by callers",
                        )
                        .into());
                    }
                    let link = Link {
                        from,
                        to: id_of(&to)?,
                        kind,
                        strength,
                        author: Author::Caller,
                        created_at: chrono::Utc::now(),
                        reason,
                    };
                    memory.add_links(scope.clone(), vec![link]).await?;
                    let links = memory.links(scope, from).await?;
                    if json {
                        print_json(&serde_json::json!({"results": links}))?;
                    } else {
                        outln!("linked {from} -> {to}");
                    }
                }
            }
        }
        Command::Profile { action } => crate::profile::run(&memory, action, json).await?,
        Command::Sessions { action } => crate::log::sessions(&memory, action, json).await?,
        Command::Segments { action } => crate::log::segments(&memory, action, json).await?,
        Command::Jobs { action } => crate::jobs::jobs(&memory, action, json).await?,
        Command::History { scope, id } => {
            let events = memory.history(scope_of(&scope)?, id_of(&id)?).await?;
            if json {
                print_json(&serde_json::json!({"results": events}))?;
            } else {
                for e in &events {
                    outln!(
                        "{} {} {:?} -> {:?}",
                        e.created_at.to_rfc3339(),
                        e.event,
                        e.old_memory,
                        e.new_memory
                    );
                }
            }
        }
        Command::Reset { confirm } => {
            memory.reset(confirm.as_deref().unwrap_or("")).await?;
            if json {
                print_json(&serde_json::json!({"reset": true}))?;
            } else {
                outln!("store reset");
            }
        }
        Command::Import {
            scope,
            batch_size,
            file,
        } => crate::import::run(&memory, &scope, batch_size, &file, json).await?,
        Command::Export { file } => {
            let records = memory.export().await?;
            let mut out: Box<dyn Write> = match &file {
                Some(p) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("creating {}", p.display()))?,
                )),
                None => Box::new(std::io::BufWriter::new(crate::io::Stdout)),
            };
            for r in &records {
                serde_json::to_writer(&mut out, r)?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
        }
        Command::Context(args) => crate::context::run(&memory, args, json).await?,
        Command::Doctor => doctor(&memory, &location, json).await?,
        Command::Migrate { to } => {
            crate::migrate::run(&memory, &location, &to, cli.store_pool_size, json).await?
        }
        Command::Models { .. }
        | Command::Bench { .. }
        | Command::Eval { .. }
        | Command::Reembed { .. }
        | Command::Serve(_)
        | Command::Mcp { .. }
        | Command::Keys { .. } => {
            unreachable!("handled before opening the store")
        }
    }
    Ok(())
}

async fn doctor(memory: &Memory, location: &mnemo::StoreConfig, json: bool) -> anyhow::Result<()> {
    // Store work is blocking (and the PostgreSQL driver may not run on an async worker).
    let store = memory.store().clone();
    let (stats, integrity) =
        tokio::task::spawn_blocking(move || Ok::<_, Error>((store.stats()?, store.integrity()?)))
            .await??;
    let embedder = memory.embedder().await;
    let (model, dim, model_error) = match &embedder {
        Ok(e) => (Some(e.model_id().to_string()), Some(e.dimension()), None),
        Err(err) => (None, None, Some(err.to_string())),
    };
    let report = serde_json::json!({
        "mnemo_version": env!("CARGO_PKG_VERSION"),
        "schema_version": stats.schema_version,
        "store": {"kind": location.kind(), "location": location.describe(),
                  "memories": stats.memories, "messages": stats.messages, "file_bytes": stats.file_bytes,
                  "embedding_model": stats.embedding_model, "dimension": stats.dimension,
                  "consistent": integrity.is_consistent(), "integrity": integrity},
        "embedder": {"model": model, "dimension": dim, "error": model_error},
    });
    let healthy = embedder.is_ok() && integrity.is_consistent();
    if json && healthy {
        print_json(&report)?;
    } else if json {
        // stdout carries only the error object; the full report goes to stderr.
        eprintln!("{report}");
    } else {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    }
    if let Err(e) = embedder {
        return Err(e.into());
    }
    if !integrity.is_consistent() {
        return Err(Error::internal("store indexes disagree; see the integrity report").into());
    }
    Ok(())
}
