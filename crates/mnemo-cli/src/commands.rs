//! The subcommands: [`run`] sends each to its handler in `commands/` (one file per command or
//! group), and the helpers they share turn flags into the library's types.
//!
//! Commands that start a server, measure, install models or re-embed open what they need
//! themselves; every other command runs against the one store the global flags name, opened
//! here before its handler is called.

mod add;
mod bench;
mod context;
mod delete;
mod doctor;
mod erase;
mod eval;
mod export;
mod get;
mod graph;
mod history;
mod import;
mod jobs;
mod link;
mod list;
mod log;
mod migrate;
mod models;
mod profile;
mod reembed;
mod reset;
mod search;
mod serve;
mod update;

use crate::args::{Cli, Command, EvalWorkload, RemoteEmbedderArgs, ScopeArgs};
use mnemo::{Memory, MemoryConfig};
use mnemo_core::{Error, MemoryId, MemoryKind, Scope};

pub(crate) async fn run(cli: Cli) -> anyhow::Result<()> {
    let json = cli.json;
    match &cli.command {
        Command::Models { action } => return models::run(&cli, action, json).await,
        Command::Bench(args) => return bench::run(config_of(&cli)?, args, json).await,
        Command::Eval {
            workload: EvalWorkload::Locomo(args),
        } => return eval::locomo(config_of(&cli)?, (**args).clone(), json).await,
        Command::Eval {
            workload: EvalWorkload::Correctness(args),
        } => return eval::correctness(config_of(&cli)?, args.clone(), json).await,
        Command::Eval {
            workload: EvalWorkload::Relations(args),
        } => return eval::relations(args, json),
        Command::Serve(args) => return serve::serve(&cli, args, json).await,
        Command::Mcp { api_key } => return serve::mcp(&cli, api_key).await,
        Command::Keys { action } => return serve::keys(&cli, action, json).await,
        Command::Reembed { batch_size } => {
            return reembed::run(config_of(&cli)?, *batch_size, json).await
        }
        _ => {}
    }
    let config = config_of(&cli)?;
    let location = config.store_config();
    let memory = Memory::open(config).await?;
    match cli.command {
        Command::Add(args) => add::run(&memory, args, json).await,
        Command::Search(args) => search::run(&memory, args, json).await,
        Command::Get(args) => get::run(&memory, args, json).await,
        Command::List(args) => list::run(&memory, args, json).await,
        Command::Update(args) => update::run(&memory, args, json).await,
        Command::Delete(args) => delete::run(&memory, args, json).await,
        Command::Erase(args) => erase::run(&memory, args, json).await,
        Command::DeleteAll(args) => delete::all(&memory, args, json).await,
        Command::Link(args) => link::run(&memory, args, json).await,
        Command::Profile { action } => profile::run(&memory, action, json).await,
        Command::Sessions { action } => log::sessions(&memory, action, json).await,
        Command::Segments { action } => log::segments(&memory, action, json).await,
        Command::Jobs { action } => jobs::jobs(&memory, action, json).await,
        Command::History(args) => history::run(&memory, args, json).await,
        Command::Graph(args) => graph::run(&memory, args, json).await,
        Command::Reset { confirm } => reset::run(&memory, confirm, json).await,
        Command::Import(args) => {
            import::run(&memory, &args.scope, args.batch_size, &args.file, json).await
        }
        Command::Export { file } => export::run(&memory, file).await,
        Command::Context(args) => context::run(&memory, args, json).await,
        Command::Doctor => doctor::run(&memory, &location, json).await,
        Command::Migrate { to } => {
            migrate::run(&memory, &location, &to, cli.store_pool_size, json).await
        }
        Command::Models { .. }
        | Command::Bench(_)
        | Command::Eval { .. }
        | Command::Reembed { .. }
        | Command::Serve(_)
        | Command::Mcp { .. }
        | Command::Keys { .. } => Err(anyhow::anyhow!(
            "internal: this command is run before the store is opened"
        )),
    }
}

pub(crate) fn scope_of(s: &ScopeArgs) -> Result<Scope, Error> {
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
pub(crate) fn config_of(cli: &Cli) -> Result<MemoryConfig, Error> {
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
