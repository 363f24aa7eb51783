//! `mnemo context`: the context pack for a query under a token budget. Without `--json`,
//! stdout is exactly the prompt-ready rendering (so it can be piped into a prompt) and a line
//! on stderr says what it cost and what did not fit; with `--json`, the whole pack.

use crate::args::ContextArgs;
use crate::commands::scope_of;
use crate::io::print_json;
use crate::io::{out, outln};
use mnemo::Memory;
use mnemo_core::pack::ContextOptions;

pub(super) async fn run(memory: &Memory, args: ContextArgs, json: bool) -> anyhow::Result<()> {
    let req = mnemo::ContextRequest {
        scope: scope_of(&args.scope)?,
        query: args.query,
        budget_tokens: mnemo_server::service::budget_tokens(args.budget)?,
        options: ContextOptions {
            session_id: args.session_id,
            no_profile: args.no_profile,
            no_blocks: args.no_blocks,
            memory_candidates: None,
            tokenizer: args.tokenizer,
        },
    };
    let pack = memory.context(req).await?;
    if json {
        return print_json(&pack);
    }
    out!("{}", pack.rendered);
    if !pack.rendered.ends_with('\n') {
        outln!();
    }
    let items: usize = pack.sections.iter().map(|s| s.items.len()).sum();
    eprintln!(
        "{} of {} tokens ({}); {items} items in {} sections; {} left out",
        pack.used_tokens,
        pack.budget_tokens,
        pack.tokenizer,
        pack.sections.len(),
        pack.omitted
    );
    Ok(())
}
