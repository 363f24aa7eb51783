//! `mnemo profile refresh|show`: the user profile and knowledge.

use crate::args::ProfileAction;
use crate::io::outln;
use crate::io::print_json;
use mnemo::{Memory, ProfileOptions};
use mnemo_core::*;

pub(super) async fn run(memory: &Memory, action: ProfileAction, json: bool) -> anyhow::Result<()> {
    match action {
        ProfileAction::Refresh {
            user_id,
            agent_id,
            instructions,
        } => {
            let scope = Scope::from_parts(Some(&user_id), agent_id.as_deref(), None)?;
            let options = ProfileOptions {
                instructions,
                request_id: None,
            };
            let out = memory.refresh_profile(scope, options).await?;
            for w in &out.warnings {
                eprintln!("warning: {w}");
            }
            if json {
                print_json(&out)?;
            } else {
                outln!("{} pages analysed", out.pages_analysed);
                for r in &out.results {
                    match &r.reason {
                        Some(why) => outln!("{} {}  {}  ({why})", r.event, r.id, r.memory),
                        None => outln!("{} {}  {}", r.event, r.id, r.memory),
                    }
                }
            }
        }
        ProfileAction::Show { user_id } => {
            let profile = memory.profile(Scope::user(&user_id)?).await?;
            if json {
                print_json(&serde_json::json!({ "profile": profile }))?;
            } else {
                match profile {
                    Some(p) => outln!(
                        "{}  (profile {}, since {})",
                        p.text,
                        p.id,
                        p.created_at.to_rfc3339()
                    ),
                    None => outln!("no profile yet for {user_id}"),
                }
            }
        }
    }
    Ok(())
}
