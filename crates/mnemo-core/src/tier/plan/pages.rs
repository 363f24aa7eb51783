//! Pages from the messages an add logs.
//!
//! **The pairing rule.** Messages are walked in order; a message and the one after it form one
//! page when the second answers the first:
//! - a `user` turn followed by an `assistant` turn (the usual chat exchange);
//! - two `user` turns by two *different named* speakers (LoCoMo-style logs, where both people
//!   are users and only their names tell them apart: Ana asks, Ben answers).
//!
//! Anything else is a lone page: an assistant turn that opens an add, a user turn followed by
//! another of the same (or an unnamed) speaker, a tool turn. Pairing never crosses adds: a
//! question logged by one add and its answer logged by the next are two pages.

use crate::memory::{Message, Role};
use crate::scope::Scope;
use crate::tier::NewPage;
use std::ops::Range;

/// The message ranges of `messages` that form one page each, in order (see the module doc).
pub fn exchanges(messages: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let pair = messages
            .get(i + 1)
            .is_some_and(|next| answers(&messages[i], next));
        let end = if pair { i + 2 } else { i + 1 };
        out.push(i..end);
        i = end;
    }
    out
}

fn answers(first: &Message, next: &Message) -> bool {
    match (first.role, next.role) {
        (Role::User, Role::Assistant) => true,
        (Role::User, Role::User) => match (&first.name, &next.name) {
            (Some(a), Some(b)) => !a.trim().eq_ignore_ascii_case(b.trim()),
            _ => false,
        },
        _ => false,
    }
}

/// Who a page line names: the speaker's name, else the role.
fn speaker(m: &Message) -> String {
    match m.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => m.role.to_string(),
    }
}

/// A page's text: one `speaker: content` line per message.
pub fn page_text(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| format!("{}: {}", speaker(m), m.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A token estimate for when no tokenizer is configured: four tokens per three words, about
/// what BPE tokenizers such as cl100k give English prose. Callers that have a real tokenizer
/// pass it instead (every function here takes the count as a parameter).
pub fn estimate_tokens(text: &str) -> u32 {
    let words = text.split_whitespace().count() as u64;
    u32::try_from(words.saturating_mul(4).div_ceil(3)).unwrap_or(u32::MAX)
}

/// The page of one exchange (`messages` non-empty, in order): its text, tokens, time, session
/// and rule keywords. `neighbours` are the words of the texts the keywords are judged against
/// (the session's window: a word every recent page uses says little about this one), each
/// split once by [`crate::note::word_set`].
pub fn new_page(
    scope: &Scope,
    messages: &[Message],
    vector: Vec<f32>,
    neighbours: &[&std::collections::HashSet<String>],
    tokens: &dyn Fn(&str) -> u32,
) -> NewPage {
    let text = page_text(messages);
    let first = messages.first();
    NewPage {
        id: crate::memory::PageId::new(),
        scope: scope.clone(),
        session_id: first.and_then(|m| m.session_id.clone()),
        message_ids: messages.iter().map(|m| m.id).collect(),
        tokens: tokens(&text),
        at: first.map_or_else(chrono::Utc::now, |m| m.created_at),
        vector,
        keywords: crate::note::rule_keywords_against(&text, neighbours),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: Role, name: Option<&str>, content: &str) -> Message {
        let scope = Scope::user("u").unwrap();
        let mut m = Message::new(
            &scope,
            role,
            name.map(String::from),
            content.into(),
            chrono::Utc::now(),
        );
        m.session_id = Some("s".into());
        m
    }

    #[test]
    fn user_and_assistant_turns_pair_and_strays_stand_alone() {
        let ms = vec![
            msg(Role::Assistant, None, "hello"),
            msg(Role::User, None, "hi"),
            msg(Role::Assistant, None, "how can I help?"),
            msg(Role::User, None, "one"),
            msg(Role::User, None, "two"),
            msg(Role::Tool, None, "{}"),
        ];
        assert_eq!(exchanges(&ms), vec![0..1, 1..3, 3..4, 4..5, 5..6]);
    }

    #[test]
    fn named_users_pair_by_speaker_change() {
        let ms = vec![
            msg(Role::User, Some("Ana"), "Which marathon?"),
            msg(Role::User, Some("Ben"), "Berlin!"),
            msg(Role::User, Some("Ana"), "Flat?"),
            msg(Role::User, Some("ana"), "I mean the course."),
            msg(Role::User, Some("Ben"), "Very."),
        ];
        assert_eq!(exchanges(&ms), vec![0..2, 2..3, 3..5]);
        assert!(exchanges(&[]).is_empty());
    }

    #[test]
    fn a_page_has_one_line_per_message_and_the_first_message_time() {
        let ms = vec![
            msg(
                Role::User,
                Some("Ana"),
                "Which marathon are you training for?",
            ),
            msg(Role::Assistant, None, "Berlin, in September."),
        ];
        let scope = Scope::user("u").unwrap();
        let p = new_page(&scope, &ms, vec![1.0], &[], &estimate_tokens);
        assert_eq!(
            p.text,
            "Ana: Which marathon are you training for?\nassistant: Berlin, in September."
        );
        assert_eq!(p.message_ids, vec![ms[0].id, ms[1].id]);
        assert_eq!(p.at, ms[0].created_at);
        assert_eq!(p.session_id.as_deref(), Some("s"));
        assert_eq!(p.tokens, estimate_tokens(&p.text));
        assert!(
            p.keywords.iter().any(|k| k == "marathon"),
            "{:?}",
            p.keywords
        );
        let counted = new_page(&scope, &ms, vec![1.0], &[], &|_| 7);
        assert_eq!(counted.tokens, 7, "the caller's tokenizer counts");
    }

    #[test]
    fn the_estimate_is_four_tokens_per_three_words() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("one two three"), 4);
        assert_eq!(estimate_tokens("one"), 2);
    }
}
