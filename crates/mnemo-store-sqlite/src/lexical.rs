//! The derived in-memory BM25 index that answers lexical queries.
//!
//! FTS5 inside the database is the durable lexical index (checked by `integrity`, usable from
//! any SQLite tool, and the fallback before the derived indexes exist). Scoring every FTS5 match
//! of common words costs milliseconds at 100k memories, so queries go to this index instead:
//! postings per stemmed term, scored term-at-a-time into a dense accumulator. A small scope in
//! a large store is scored document by document from its members' own terms instead
//! ([`Lexical::search_among`]): the postings of common words hold every scope's documents. It
//! follows the same change log as the vector graph and is rebuilt from SQLite on open.
//!
//! Words reach the stemmer cut to `text::MAX_TOKEN_CHARS` (Porter2 is quadratic in a word's
//! length on runs such as `yyyy…`), and a document keeps its first `text::MAX_INDEXED_TOKENS`
//! words, so indexing, the rebuild on open and every query stay linear in their text.

use mnemo_core::text::{words, MAX_INDEXED_TOKENS};
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::{HashMap, HashSet};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The words `analyze` hands to the stemmer: `text::words` (lower-cased, each cut to
/// `MAX_TOKEN_CHARS`), the first `MAX_INDEXED_TOKENS` of them.
fn stem_inputs(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text).take(MAX_INDEXED_TOKENS)
}

pub(crate) struct Lexical {
    stemmer: Stemmer,
    terms: HashMap<String, u32>,
    /// Per term: (doc key, doc version, term frequency). Entries of an older version are stale.
    postings: Vec<Vec<(u32, u32, u16)>>,
    df: Vec<u32>,
    /// Per doc key: whether indexed, current version, length in tokens, and its distinct term
    /// ids (ascending) with their frequencies.
    present: Vec<bool>,
    /// `(version, length)` side by side: the scoring loop reads both for every posting, and one
    /// cache line read beats two.
    doc: Vec<(u32, u32)>,
    doc_terms: Vec<Vec<(u32, u16)>>,
    docs: u32,
    total_len: u64,
    scratch: parking_lot::Mutex<Vec<Vec<f32>>>,
}

impl Lexical {
    pub(crate) fn new() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            terms: HashMap::new(),
            postings: Vec::new(),
            df: Vec::new(),
            present: Vec::new(),
            doc: Vec::new(),
            doc_terms: Vec::new(),
            docs: 0,
            total_len: 0,
            scratch: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// Lower-cased, stemmed word tokens (the same analysis for documents and queries).
    pub(crate) fn analyze(&self, text: &str) -> Vec<String> {
        stem_inputs(text)
            .map(|w| self.stemmer.stem(&w).into_owned())
            .collect()
    }

    fn slot(&mut self, key: u64) -> Option<usize> {
        let k = usize::try_from(key)
            .ok()
            .filter(|k| *k < u32::MAX as usize)?;
        if k >= self.doc.len() {
            self.present.resize(k + 1, false);
            self.doc.resize(k + 1, (0, 0));
            self.doc_terms.resize(k + 1, Vec::new());
        }
        Some(k)
    }

    pub(crate) fn remove(&mut self, key: u64) {
        let Some(k) = self.slot(key) else { return };
        if !self.present[k] {
            return;
        }
        self.present[k] = false;
        for (t, _) in std::mem::take(&mut self.doc_terms[k]) {
            self.df[t as usize] = self.df[t as usize].saturating_sub(1);
        }
        self.docs = self.docs.saturating_sub(1);
        self.total_len -= u64::from(self.doc[k].1);
        self.doc[k].1 = 0;
        // Bumping the version makes every existing posting of this doc stale.
        self.doc[k].0 = self.doc[k].0.wrapping_add(1);
    }

    pub(crate) fn put(&mut self, key: u64, text: &str) {
        self.remove(key);
        let Some(k) = self.slot(key) else { return };
        let tokens = self.analyze(text);
        let mut tf: HashMap<u32, u16> = HashMap::new();
        for tok in tokens.iter() {
            let next = self.terms.len() as u32;
            let id = *self.terms.entry(tok.clone()).or_insert(next);
            if id as usize == self.postings.len() {
                self.postings.push(Vec::new());
                self.df.push(0);
            }
            let e = tf.entry(id).or_insert(0);
            *e = e.saturating_add(1);
        }
        self.doc[k].0 = self.doc[k].0.wrapping_add(1).max(1);
        let v = self.doc[k].0;
        let mut ids: Vec<(u32, u16)> = tf.into_iter().collect();
        ids.sort_unstable();
        for &(id, tf) in &ids {
            self.postings[id as usize].push((k as u32, v, tf));
            self.df[id as usize] += 1;
        }
        self.doc_terms[k] = ids;
        self.present[k] = true;
        self.doc[k].1 = tokens.len() as u32;
        self.docs += 1;
        self.total_len += tokens.len() as u64;
    }

    /// The best `limit` documents passing `keep`, by BM25 over the query's terms.
    pub(crate) fn search(
        &self,
        terms: &[String],
        limit: usize,
        keep: impl Fn(u64) -> bool,
    ) -> Vec<(u64, f32)> {
        self.search_among(terms, limit, None, keep)
    }

    /// [`Self::search`] where every document `keep` passes is among `docs` (a small scope's
    /// members). When those hold fewer terms than the query's postings across the whole store,
    /// each of them is scored from its own terms instead, so a small scope's search costs what
    /// it holds, not what every other scope holds. The scores are the same either way (the same
    /// sums, term by term in query order) and so is the answer.
    pub(crate) fn search_among(
        &self,
        terms: &[String],
        limit: usize,
        docs: Option<&HashSet<u64>>,
        keep: impl Fn(u64) -> bool,
    ) -> Vec<(u64, f32)> {
        if self.docs == 0 || limit == 0 {
            return Vec::new();
        }
        let query = self.query_terms(terms);
        let avgdl = (self.total_len as f32 / self.docs as f32).max(1.0);
        let postings: usize = query
            .iter()
            .map(|(id, _)| self.postings[*id as usize].len())
            .sum();
        match docs {
            Some(docs) if docs.len().saturating_mul(query.len()) < postings => {
                let scored = docs.iter().filter_map(|&d| {
                    let score = self.doc_score(d, &query, avgdl)?;
                    Some((d, score))
                });
                select(scored, limit, keep)
            }
            _ => self.search_postings(&query, avgdl, limit, keep),
        }
    }

    /// The query's distinct known term ids, in query order, with their idf.
    fn query_terms(&self, terms: &[String]) -> Vec<(u32, f32)> {
        let n = self.docs as f32;
        // A set beside the list: `Vec::contains` made a query of many distinct words quadratic.
        let (mut ids, mut seen): (Vec<(u32, f32)>, HashSet<u32>) = (Vec::new(), HashSet::new());
        for t in terms {
            for stem in self.analyze(t) {
                let Some(&id) = self.terms.get(&stem) else {
                    continue;
                };
                let df = self.df[id as usize] as f32;
                if df > 0.0 && seen.insert(id) {
                    ids.push((id, (1.0 + (n - df + 0.5) / (df + 0.5)).ln()));
                }
            }
        }
        ids
    }

    /// A term's BM25 share in a document of `len` tokens where it occurs `tf` times.
    fn share(idf: f32, tf: u16, len: u32, avgdl: f32) -> f32 {
        let tf = f32::from(tf);
        let norm = K1 * (1.0 - B + B * len as f32 / avgdl);
        idf * tf * (K1 + 1.0) / (tf + norm)
    }

    /// One document's score from its own terms; `None` when it is not indexed or shares no
    /// term with the query.
    fn doc_score(&self, key: u64, query: &[(u32, f32)], avgdl: f32) -> Option<f32> {
        let k = usize::try_from(key).ok()?;
        if !*self.present.get(k)? {
            return None;
        }
        let (own, len) = (&self.doc_terms[k], self.doc[k].1);
        let mut score = 0.0f32;
        let mut hit = false;
        for &(id, idf) in query {
            if let Ok(i) = own.binary_search_by_key(&id, |(t, _)| *t) {
                score += Self::share(idf, own[i].1, len, avgdl);
                hit = true;
            }
        }
        hit.then_some(score)
    }

    /// Every document of the query's postings, scored term-at-a-time into a dense accumulator.
    fn search_postings(
        &self,
        query: &[(u32, f32)],
        avgdl: f32,
        limit: usize,
        keep: impl Fn(u64) -> bool,
    ) -> Vec<(u64, f32)> {
        // Pooled accumulators, zeroed again after use, save clearing one float per document on
        // every query.
        let mut acc = self.scratch.lock().pop().unwrap_or_default();
        if acc.len() < self.doc.len() {
            acc.resize(self.doc.len(), 0.0);
        }
        let mut touched: Vec<u32> = Vec::new();
        for &(id, idf) in query {
            for &(doc, v, tf) in &self.postings[id as usize] {
                let d = doc as usize;
                let (version, len) = self.doc[d];
                if version != v {
                    continue;
                }
                if acc[d] == 0.0 {
                    touched.push(doc);
                }
                acc[d] += Self::share(idf, tf, len, avgdl);
            }
        }
        // The accumulator is cleared as the selection reads it.
        let scored = touched
            .iter()
            .map(|&d| (u64::from(d), std::mem::take(&mut acc[d as usize])));
        let best = select(scored, limit, keep);
        let mut pool = self.scratch.lock();
        if pool.len() < 8 {
            pool.push(acc);
        }
        best
    }

    pub(crate) fn docs(&self) -> u64 {
        u64::from(self.docs)
    }
}

/// The best `limit` of `scored` passing `keep`, by score then key: a bounded buffer, cut back
/// to the best `limit` whenever it fills, whose cut-off score then turns most documents away
/// with one comparison. `keep` (the caller's filter) runs only on documents that clear it.
fn select(
    scored: impl Iterator<Item = (u64, f32)>,
    limit: usize,
    keep: impl Fn(u64) -> bool,
) -> Vec<(u64, f32)> {
    let cmp = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let cap = limit.saturating_mul(4).max(16);
    let mut best: Vec<(u64, f32)> = Vec::with_capacity(cap);
    let mut floor = f32::NEG_INFINITY;
    for (d, score) in scored {
        if score < floor || !keep(d) {
            continue;
        }
        best.push((d, score));
        if best.len() == cap {
            best.select_nth_unstable_by(limit - 1, cmp);
            best.truncate(limit);
            floor = best.iter().map(|h| h.1).fold(f32::INFINITY, f32::min);
        }
    }
    best.sort_by(cmp);
    best.truncate(limit);
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_core::text::MAX_TOKEN_CHARS;
    use proptest::prelude::*;

    /// One character of each Unicode general category but Cs (no `char` is a surrogate), and a
    /// letter whose lower case is two characters.
    const CATEGORY_SAMPLES: [char; 30] = [
        'A', 'y', 'ǅ', 'ʰ', '中', '\u{301}', '\u{903}', '\u{20DD}', '٣', 'Ⅻ', '½', '_', '-', '(',
        ')', '«', '»', '!', '+', '$', '^', '©', ' ', '\u{2028}', '\u{2029}', '\u{0}', '\u{200B}',
        '\u{E000}', '\u{378}', 'İ',
    ];

    /// Long runs of one unit (an ASCII letter of either case, a character of any category,
    /// punctuation, a short mixed word), several runs one after another.
    fn pathological() -> impl Strategy<Value = String> {
        let unit = prop_oneof![
            (b'a'..=b'z').prop_map(|b| char::from(b).to_string()),
            (b'A'..=b'Z').prop_map(|b| char::from(b).to_string()),
            proptest::sample::select(CATEGORY_SAMPLES.to_vec()).prop_map(String::from),
            proptest::sample::select(vec![".", "'", "-", "!?", "\n", "ay", "yay", "ies", "Y y"])
                .prop_map(String::from),
            "[a-zA-Z0-9 .,'-]{1,12}",
        ];
        proptest::collection::vec((unit, 1usize..120_000), 1..4).prop_map(|runs| {
            runs.into_iter()
                .map(|(u, n)| u.repeat((n / u.chars().count()).max(1)))
                .collect()
        })
    }

    /// What stemming `text` may cost: Porter2's worst case is quadratic in a word's length
    /// (`yyyy…` rewrites the word once per letter), so each word counts its length squared.
    fn stemmer_work(text: &str) -> usize {
        stem_inputs(text).map(|w| w.chars().count().pow(2)).sum()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The probe's `POST /v1/memories` with a megabyte of `y` took 41 s: one word, 10¹²
        /// units of stemmer work. Work is counted, not timed.
        #[test]
        fn stemmer_work_is_linear_in_the_text(text in pathological()) {
            let chars = text.chars().count();
            // Lower-casing may double a word's characters (`İ`); cutting bounds each word.
            let work = stemmer_work(&text);
            prop_assert!(
                work <= 2 * MAX_TOKEN_CHARS * chars,
                "{} units of work for {} characters", work, chars
            );
            prop_assert!(stem_inputs(&text).count() <= MAX_INDEXED_TOKENS);
        }
    }

    #[test]
    fn a_run_of_y_costs_the_stemmer_linear_work_and_still_matches_itself() {
        let run = "y".repeat(100_000);
        assert!(
            stemmer_work(&run) <= MAX_TOKEN_CHARS * run.len(),
            "{}",
            stemmer_work(&run)
        );
        let mut lex = Lexical::new();
        lex.put(1, &format!("{} tail", run.to_uppercase()));
        lex.put(2, "other words");
        // The query is cut the same way, so the long word still finds its document.
        let hits = lex.search(std::slice::from_ref(&run), 10, |_| true);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1]);
        let many: String = (0..MAX_INDEXED_TOKENS + 10)
            .map(|i| format!("w{i} "))
            .collect();
        lex.put(3, &many);
        assert!(lex
            .search(&[format!("w{}", MAX_INDEXED_TOKENS + 5)], 10, |_| true)
            .is_empty());
        assert_eq!(lex.search(&["w7".into()], 10, |_| true)[0].0, 3);
    }

    #[test]
    fn ranks_rare_terms_higher_and_forgets_removed_and_replaced_text() {
        let mut lex = Lexical::new();
        lex.put(1, "Maya went hiking in the Alps");
        lex.put(2, "Tom went to the market");
        lex.put(3, "Maya likes markets");
        let hits = lex.search(&["hiking".into(), "went".into()], 10, |_| true);
        assert_eq!(hits[0].0, 1);
        assert_eq!(hits.len(), 2);
        // Stemming: "markets" and "market" meet.
        let hits = lex.search(&["market".into()], 10, |_| true);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>().len(), 2);
        lex.put(1, "Maya went sailing");
        assert!(lex.search(&["hiking".into()], 10, |_| true).is_empty());
        lex.remove(2);
        assert!(lex.search(&["tom".into()], 10, |_| true).is_empty());
        assert_eq!(lex.docs(), 2);
        let only3 = lex.search(&["maya".into()], 10, |k| k == 3);
        assert_eq!(only3, vec![(3, only3[0].1)]);
    }

    #[test]
    fn the_bounded_selection_equals_a_full_ranking() {
        let mut lex = Lexical::new();
        for i in 0..3000u64 {
            let text = format!(
                "{} {} {}",
                ["red", "blue", "green"][(i % 3) as usize],
                ["fox", "dog"][(i % 2) as usize],
                "word ".repeat((i % 7) as usize)
            );
            lex.put(i + 1, &text);
        }
        let terms = ["red".to_string(), "dog".into(), "word".into()];
        let keep = |k: u64| !k.is_multiple_of(5);
        // A limit above the number of matches never cuts the buffer: a full ranking.
        let full = lex.search(&terms, 10_000, keep);
        assert!(full.len() > 2000 && full.iter().all(|(k, _)| keep(*k)));
        for limit in [1, 10, 30, 100] {
            assert_eq!(
                lex.search(&terms, limit, keep),
                full[..limit],
                "limit {limit}"
            );
        }
    }

    /// Small-scope documents given new text by [`small_scope_store`].
    const REPLACED: [u64; 8] = [1, 154, 205, 256, 307, 358, 409, 460];

    /// A small scope's members in a store where the query's words are everywhere: the words
    /// of 40 small-scope documents and 2,000 others, some replaced or removed.
    fn small_scope_store() -> (Lexical, HashSet<u64>) {
        let words = [
            "tea", "hiking", "alps", "market", "chess", "garden", "sailing", "maya",
        ];
        let mut lex = Lexical::new();
        let mut small = HashSet::new();
        for i in 0..2040u64 {
            let text: Vec<&str> = (0..(3 + i % 5))
                .map(|j| words[((i * 7 + j * 3 + i / 11) % 8) as usize])
                .collect();
            lex.put(i + 1, &text.join(" "));
            if i % 51 == 0 {
                small.insert(i + 1);
            }
        }
        // Replaced and removed documents, in and out of the small scope.
        for k in REPLACED {
            lex.put(k, "maya plays chess in the garden, chess every day");
        }
        for k in [52u64, 103, 500, 501] {
            lex.remove(k);
        }
        (lex, small)
    }

    #[test]
    fn a_small_scope_scored_from_its_own_terms_ranks_as_the_postings_do() {
        let (lex, small) = small_scope_store();
        assert!(small.len() >= 40);
        let queries: [&[&str]; 4] = [
            &["chess", "garden"],
            &["maya", "tea", "hiking"],
            &["sailing"],
            &["market", "alps", "unknownword"],
        ];
        for terms in queries {
            let terms: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
            let query = lex.query_terms(&terms);
            let postings: usize = query
                .iter()
                .map(|(id, _)| lex.postings[*id as usize].len())
                .sum();
            // The members hold far fewer terms than the postings: they are scored one by one.
            assert!(small.len() * query.len() < postings, "{terms:?}");
            for limit in [1, 5, 100] {
                // `keep` passes the scope, except one member: the filter still applies.
                let keep = |k: u64| small.contains(&k) && k != 52 && k != 154;
                let by_postings = lex.search(&terms, limit, keep);
                let by_members = lex.search_among(&terms, limit, Some(&small), keep);
                assert!(!by_postings.is_empty(), "{terms:?}");
                // The same documents, order and scores, to the bit.
                assert_eq!(by_members, by_postings, "{terms:?} limit {limit}");
            }
        }
        // A removed member is found by neither way; a replaced one by its new text only.
        let chess = lex.search_among(&["chess".into()], 100, Some(&small), |k| small.contains(&k));
        assert!(chess.iter().all(|(k, _)| *k != 52));
        assert!(REPLACED
            .iter()
            .all(|k| small.contains(k) && chess.iter().any(|(c, _)| c == k)));
    }
}
