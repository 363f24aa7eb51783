//! The raw pipeline (`infer = false`): each message becomes one `raw` memory whose provenance is
//! that message. A turn alone is often unfindable ("Yes, last Friday!"), so each is indexed
//! with its neighbours ([`WindowIndexing`]): the lexical index text repeats the turn's own line
//! and adds the lines around it, and the stored vector is a length-weighted sum of the vectors
//! of the lines in a smaller window. Every distinct line is embedded once per batch
//! ([`distinct_lines`]), however many windows it falls in; the caller embeds them (one model
//! call) and [`raw_memories`] turns the vectors into memories. No model and no store here: the
//! caller reads the earlier turns and commits the memories.

use crate::embed::l2_normalize;
use crate::entity::extract_entities;
use crate::memory::{Message, Metadata, NewMemory, Timestamp};
use crate::scope::Scope;
use std::collections::HashMap;

/// What a raw memory is indexed with besides its own text. The extra text changes how a memory
/// is found, never what it says or what it was derived from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowIndexing {
    /// Earlier messages of the same scope (and session, when given) in the lexical index text.
    /// They come from the same call first, then from the stored message log.
    pub before: usize,
    /// Later messages of the same call in the lexical index text.
    pub after: usize,
    /// Earlier messages in the text that is embedded (at most `before`).
    pub embed_before: usize,
    /// Later messages in the text that is embedded (at most `after`).
    pub embed_after: usize,
    /// Prefix each line with the speaker's name when the message has one.
    pub speaker: bool,
    /// How many times the memory's own line appears in the lexical index text: a field boost,
    /// so a turn that says the words outranks the neighbours that only surround them.
    pub own_weight: usize,
}

impl Default for WindowIndexing {
    fn default() -> Self {
        Self {
            before: 2,
            after: 2,
            embed_before: 2,
            embed_after: 2,
            speaker: true,
            own_weight: 3,
        }
    }
}

impl WindowIndexing {
    /// Index text equals the memory text: what a plain vector store does.
    pub fn plain() -> Self {
        Self {
            before: 0,
            after: 0,
            embed_before: 0,
            embed_after: 0,
            speaker: false,
            own_weight: 1,
        }
    }
}

/// What one raw memory is indexed and embedded with.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexText {
    /// The lexical index text (stored only when it differs from the memory text).
    pub index: String,
    /// The lines whose vectors make the stored embedding, as (index into
    /// [`CallIndex::lines`], weight): the memory's own line and its embed window.
    pub embed: Vec<(usize, f32)>,
}

/// The indexing of one add call's messages.
#[derive(Debug, Clone, PartialEq)]
pub struct CallIndex {
    /// The line of every turn the call's windows reach: the stored earlier turns first, then
    /// the call's messages. Each is embedded once.
    pub lines: Vec<String>,
    /// One per message of the call, in order.
    pub texts: Vec<IndexText>,
}

/// A message as one line of an index text: with its speaker's name when asked and known.
pub fn line(m: &Message, speaker: bool) -> String {
    match (&m.name, speaker) {
        (Some(n), true) => format!("{n}: {}", m.content),
        _ => m.content.clone(),
    }
}

/// Index texts of the messages of one call: each message's own line first, then up to
/// `before` earlier messages (this call first, then `prior`, the scope's stored log) and
/// `after` later ones of this call. The embedding is made from the lines of the embed window.
pub fn index_texts_for(messages: &[Message], prior: &[Message], cfg: &WindowIndexing) -> CallIndex {
    let all: Vec<&Message> = prior.iter().chain(messages).collect();
    let lines: Vec<String> = all.iter().map(|m| line(m, cfg.speaker)).collect();
    let offset = prior.len();
    let (embed_before, embed_after) = (
        cfg.embed_before.min(cfg.before),
        cfg.embed_after.min(cfg.after),
    );
    let texts: Vec<IndexText> = (0..messages.len())
        .map(|i| {
            let at = offset + i;
            let neighbours = |before: usize, after: usize| {
                (at.saturating_sub(before)..at).chain((at + 1..lines.len()).take(after))
            };
            let mut index = lines[at].clone();
            for _ in 1..cfg.own_weight.max(1) {
                index.push('\n');
                index.push_str(&lines[at]);
            }
            for j in neighbours(cfg.before, cfg.after) {
                index.push('\n');
                index.push_str(&lines[j]);
            }
            let embed = std::iter::once(at)
                .chain(neighbours(embed_before, embed_after))
                .map(|j| (j, line_weight(&lines[j])))
                .collect();
            IndexText { index, embed }
        })
        .collect();
    // Only the lines some window reaches need a vector.
    let first = offset.saturating_sub(embed_before);
    let mut call = CallIndex { lines, texts };
    if first > 0 {
        call.lines.drain(..first);
        for t in &mut call.texts {
            t.embed.iter_mut().for_each(|(j, _)| *j -= first);
        }
    }
    call
}

/// The lines of a batch of calls to embed, each distinct line once.
#[derive(Debug, Clone, PartialEq)]
pub struct LineBatch {
    /// The texts to embed, in first-seen order.
    pub texts: Vec<String>,
    /// Per call, per line of [`CallIndex::lines`]: its index in `texts` (empty for a call that
    /// embeds nothing).
    pub slots: Vec<Vec<usize>>,
}

/// Each distinct line of `calls` once; `None` is a call that embeds nothing (a replayed add).
/// Earlier turns from the stored log are lines too; an embedder with a cache answers them
/// without model work.
pub fn distinct_lines(calls: &[Option<&CallIndex>]) -> LineBatch {
    let mut line_slot: HashMap<&str, usize> = HashMap::new();
    let mut texts: Vec<String> = Vec::new();
    let slots = calls
        .iter()
        .map(|call| {
            let Some(call) = call else {
                return Vec::new();
            };
            call.lines
                .iter()
                .map(|l| {
                    *line_slot.entry(l.as_str()).or_insert_with(|| {
                        texts.push(l.clone());
                        texts.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    LineBatch { texts, slots }
}

/// The fields every raw memory of one add shares.
#[derive(Debug, Clone, Copy)]
pub struct RawInput<'a> {
    pub scope: &'a Scope,
    pub messages: &'a [Message],
    pub metadata: &'a Metadata,
    pub expires_at: Option<Timestamp>,
}

/// The raw memories of one call, one per message, from its [`CallIndex`], the call's `slots`
/// of a [`LineBatch`] and the vectors of that batch's texts (`line_vectors[i]` of `texts[i]`).
/// A slot or vector that is missing gives an empty vector, never a panic; the caller checks
/// that the embedder answered one vector per text.
pub fn raw_memories(
    input: &RawInput<'_>,
    call: &CallIndex,
    slots: &[usize],
    line_vectors: &[Vec<f32>],
) -> Vec<NewMemory> {
    input
        .messages
        .iter()
        .zip(&call.texts)
        .map(|(m, t)| {
            let vector = window_vector(t.embed.iter().filter_map(|(at, w)| {
                let v = line_vectors.get(*slots.get(*at)?)?;
                Some((v.as_slice(), *w))
            }));
            let mut memory = NewMemory::raw(
                m,
                input.scope,
                input.metadata.clone(),
                input.expires_at,
                vector,
            );
            memory.index_text = Some(t.index.clone()).filter(|i| *i != m.content);
            memory.entities = extract_entities(&m.content);
            memory.event_time =
                super::event_time::of_message(m, &crate::time::TaggerOptions::default());
            memory
        })
        .collect()
}

/// Per message of a call: its own line's vector and text, for pooling into a page vector (no
/// text embedded twice); `None` where the vector is missing.
pub fn own_lines<'a>(
    call: &'a CallIndex,
    slots: &[usize],
    line_vectors: &'a [Vec<f32>],
) -> Vec<Option<(&'a [f32], &'a str)>> {
    call.texts
        .iter()
        .map(|t| {
            let at = t.embed.first()?.0;
            let v = line_vectors.get(*slots.get(at)?)?;
            Some((v.as_slice(), call.lines.get(at)?.as_str()))
        })
        .collect()
}

/// Drops from the raw memories' index texts every line that is not part of some `allowed`
/// line: for turns hidden (deleted, erased) between reading the window and committing. An index
/// text left equal to the memory text is not stored.
pub fn drop_unlisted_lines(memories: &mut [NewMemory], allowed: &[String]) {
    for n in memories
        .iter_mut()
        .filter(|m| m.kind == crate::memory::MemoryKind::Raw)
    {
        if let Some(t) = &n.index_text {
            let kept: Vec<&str> = t
                .split('\n')
                .filter(|l| allowed.iter().any(|a| a.contains(l)))
                .collect();
            let kept = kept.join("\n");
            n.index_text = Some(kept).filter(|k| *k != n.text);
        }
    }
}

/// A line's share of its window's vector: its length, so the window vector approximates the
/// mean-pooled embedding of the window's text (each token counts once) without embedding the
/// window's text: each turn is embedded once instead of once per window it falls in.
fn line_weight(line: &str) -> f32 {
    line.chars().count().max(1) as f32
}

/// The unit-length weighted sum of unit vectors; a window of one line is that line's vector.
fn window_vector<'a>(parts: impl Iterator<Item = (&'a [f32], f32)>) -> Vec<f32> {
    let parts: Vec<(&[f32], f32)> = parts.collect();
    if let [(v, _)] = parts.as_slice() {
        return v.to_vec();
    }
    let mut out = vec![0.0; parts.first().map_or(0, |(v, _)| v.len())];
    for (v, w) in parts {
        out.iter_mut().zip(v).for_each(|(o, x)| *o += w * x);
    }
    l2_normalize(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Role;

    fn msg(scope: &Scope, name: &str, text: &str) -> Message {
        Message::new(
            scope,
            Role::User,
            Some(name.to_string()),
            text.to_string(),
            chrono::Utc::now(),
        )
    }

    #[test]
    fn a_turn_is_indexed_with_its_neighbours_and_its_own_line_first() {
        let scope = Scope::user("u").unwrap();
        let ms = vec![
            msg(&scope, "A", "one"),
            msg(&scope, "B", "two"),
            msg(&scope, "A", "three"),
        ];
        let call = index_texts_for(&ms, &[], &WindowIndexing::default());
        assert_eq!(call.lines, vec!["A: one", "B: two", "A: three"]);
        assert_eq!(
            call.texts[1].index,
            "B: two\nB: two\nB: two\nA: one\nA: three"
        );
        let embedded: Vec<usize> = call.texts[1].embed.iter().map(|(j, _)| *j).collect();
        assert_eq!(embedded, vec![1, 0, 2]);
    }

    #[test]
    fn lines_beyond_every_embed_window_are_not_embedded() {
        let scope = Scope::user("u").unwrap();
        let prior: Vec<Message> = (0..5).map(|i| msg(&scope, "A", &format!("p{i}"))).collect();
        let ms = vec![msg(&scope, "B", "now")];
        let cfg = WindowIndexing {
            before: 3,
            embed_before: 1,
            ..WindowIndexing::default()
        };
        let call = index_texts_for(&ms, &prior, &cfg);
        // p0 and p1 reach neither window; p2 is only in the lexical window.
        assert_eq!(call.lines, vec!["A: p4", "B: now"]);
        assert!(call.texts[0].index.contains("A: p2"));
        assert_eq!(call.texts[0].embed.len(), 2);
    }

    #[test]
    fn a_line_shared_by_calls_is_embedded_once() {
        let scope = Scope::user("u").unwrap();
        let a = index_texts_for(&[msg(&scope, "A", "same")], &[], &WindowIndexing::plain());
        let b = index_texts_for(&[msg(&scope, "B", "same")], &[], &WindowIndexing::plain());
        let batch = distinct_lines(&[Some(&a), None, Some(&b)]);
        assert_eq!(batch.texts, vec!["same"]);
        assert_eq!(batch.slots, vec![vec![0], vec![], vec![0]]);
    }

    #[test]
    fn a_memory_vector_is_the_length_weighted_unit_sum_of_its_window() {
        let scope = Scope::user("u").unwrap();
        let ms = vec![msg(&scope, "A", "x"), msg(&scope, "A", "yyyy")];
        let cfg = WindowIndexing {
            speaker: false,
            ..WindowIndexing::default()
        };
        let call = index_texts_for(&ms, &[], &cfg);
        let batch = distinct_lines(&[Some(&call)]);
        let vectors = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        let meta = Metadata::new();
        let input = RawInput {
            scope: &scope,
            messages: &ms,
            metadata: &meta,
            expires_at: None,
        };
        let mems = raw_memories(&input, &call, &batch.slots[0], &vectors);
        assert_eq!(mems.len(), 2);
        // "x" (weight 1) and "yyyy" (weight 4): the sum (1, 4) normalised.
        let n = (17f32).sqrt();
        assert!((mems[0].vector[0] - 1.0 / n).abs() < 1e-6);
        assert!((mems[0].vector[1] - 4.0 / n).abs() < 1e-6);
        assert_eq!(mems[0].sources, vec![ms[0].id]);
        // A missing vector is an empty one, not a panic.
        let none = raw_memories(&input, &call, &[], &vectors);
        assert!(none.iter().all(|m| m.vector.is_empty()));
    }

    #[test]
    fn hidden_lines_leave_the_index_text() {
        let scope = Scope::user("u").unwrap();
        let m = msg(&scope, "A", "kept");
        let mut mem = NewMemory::raw(&m, &scope, Metadata::new(), None, vec![]);
        mem.index_text = Some("A: kept\nA: gone".into());
        let mut mems = vec![mem];
        drop_unlisted_lines(&mut mems, &["A: kept".to_string()]);
        assert_eq!(mems[0].index_text.as_deref(), Some("A: kept"));
        // An index text left equal to the memory text is not stored.
        mems[0].index_text = Some("kept\ngone".into());
        drop_unlisted_lines(&mut mems, &["kept".to_string()]);
        assert_eq!(mems[0].index_text, None);
    }
}
