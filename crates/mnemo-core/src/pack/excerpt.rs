//! Query-focused excerpts of long turns: a pack may show the sentences of a turn that share
//! words with the query (in their order, the cuts marked `…`) instead of the whole turn, so a
//! budget holds more of the conversation. Short turns, and every sentence that fits, stay as
//! they are; a sentence is never cut inside.

use crate::text::words;

/// Two words match when equal or sharing their first five characters (a cheap stem: `adopted`
/// and `adoption`).
fn matches(word: &str, term: &str) -> bool {
    if word == term {
        return true;
    }
    let stem = |w: &str| w.char_indices().nth(5).map(|(i, _)| i);
    match (stem(word), stem(term)) {
        (Some(a), Some(b)) => word[..a] == term[..b],
        _ => false,
    }
}

/// Sentences of `text`: cut after `.`, `!` or `?` followed by whitespace.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let ends = matches!(c, '.' | '!' | '?')
            && chars.get(k + 1).is_some_and(|(_, n)| n.is_whitespace());
        if ends {
            let end = i + c.len_utf8();
            out.push(text[start..end].trim());
            start = end;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out.retain(|s| !s.is_empty());
    out
}

/// `text` cut to about `max_words` words: the sentences with the most query terms (ties: the
/// earlier), at least one, shown in their order; `text` itself when it is short enough or no
/// sentence shares a term with the query.
pub fn excerpt(text: &str, terms: &[String], max_words: usize) -> String {
    let all = sentences(text);
    let count = |s: &str| words(s).count();
    if all.len() < 2 || count(text) <= max_words {
        return text.trim().to_string();
    }
    let score: Vec<usize> = all
        .iter()
        .map(|s| {
            let ws: Vec<String> = words(s).collect();
            terms
                .iter()
                .filter(|t| ws.iter().any(|w| matches(w, t)))
                .count()
        })
        .collect();
    if score.iter().all(|&s| s == 0) {
        return text.trim().to_string();
    }
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| score[b].cmp(&score[a]).then(a.cmp(&b)));
    let mut keep = vec![false; all.len()];
    let mut used = 0;
    for i in order {
        let n = count(all[i]);
        if used > 0 && (used + n > max_words || score[i] == 0) {
            continue;
        }
        keep[i] = true;
        used += n;
    }
    let mut out = String::new();
    let mut last: Option<usize> = None;
    for (i, s) in all.iter().enumerate().filter(|(i, _)| keep[*i]) {
        let gap = match last {
            None => i > 0,
            Some(l) => i > l + 1,
        };
        if gap {
            out.push_str(if out.is_empty() { "… " } else { " … " });
        } else if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(s);
        last = Some(i);
    }
    if last.is_some_and(|l| l + 1 < all.len()) {
        out.push_str(" …");
    }
    out
}

/// [`excerpt`], clipped harder: a kept sentence longer than `max_words` words shows only the
/// words around its query terms (`max_words / 2` each side of the first and last match), and a
/// turn none of whose sentences shares a query term shows the start of its most contentful
/// sentence (the most words that are not stopwords), `max_words` words at most. Every cut is
/// marked `…`. Packs use it to hold more turns in a small budget.
pub fn clipped_excerpt(text: &str, terms: &[String], max_words: usize) -> String {
    let all = sentences(text);
    let count = |s: &str| words(s).count();
    if count(text) <= max_words {
        return text.trim().to_string();
    }
    let hit = |tok: &str| words(tok).any(|w| terms.iter().any(|t| matches(&w, t)));
    let matched = all.iter().any(|s| s.split_whitespace().any(hit));
    if !matched {
        let content = |s: &str| words(s).filter(|w| !crate::text::is_stopword(w)).count();
        let best = all
            .iter()
            .enumerate()
            .max_by(|(i, a), (j, b)| content(a).cmp(&content(b)).then(j.cmp(i)))
            .map(|(i, _)| i)
            .unwrap_or(0);
        let toks: Vec<&str> = all
            .get(best)
            .map_or(Vec::new(), |s| s.split_whitespace().collect());
        return window(&toks, 0, max_words.max(1), best > 0, best + 1 < all.len());
    }
    let kept = excerpt(text, terms, max_words);
    let radius = (max_words / 2).max(1);
    let parts: Vec<String> = sentences(&kept)
        .into_iter()
        .map(|s| {
            let toks: Vec<&str> = s.split_whitespace().collect();
            let marks: Vec<usize> = (0..toks.len()).filter(|&i| hit(toks[i])).collect();
            match (marks.first(), marks.last()) {
                (Some(&a), Some(&b)) if words(s).count() > max_words => {
                    let from = a.saturating_sub(radius);
                    window(&toks, from, b + radius + 1 - from, false, false)
                }
                _ => s.to_string(),
            }
        })
        .collect();
    let mut out = parts.join(" ");
    // Joined marks of adjacent cuts read as one.
    while out.contains("… …") {
        out = out.replace("… …", "…");
    }
    out
}

/// The `len` whitespace tokens of `toks` from `from`, with `…` where anything was left out
/// before (`more_before`, or tokens before `from`) or after.
fn window(toks: &[&str], from: usize, len: usize, more_before: bool, more_after: bool) -> String {
    let to = (from + len).min(toks.len());
    let mut out = String::new();
    if from > 0 || more_before {
        out.push_str("… ");
    }
    out.push_str(&toks[from.min(to)..to].join(" "));
    if to < toks.len() || more_after {
        out.push_str(" …");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(q: &str) -> Vec<String> {
        crate::text::query_terms(q)
    }

    #[test]
    fn keeps_the_sentences_that_share_the_query_in_order() {
        let t = "Hey Mel! So good to see you. I went to the adoption agency yesterday. \
                 It was a long day. The kids were great though.";
        let e = excerpt(t, &terms("When did Caroline go to the adoption agency?"), 8);
        assert_eq!(e, "… I went to the adoption agency yesterday. …");
        let e = excerpt(t, &terms("adopted kids"), 12);
        assert_eq!(
            e,
            "… I went to the adoption agency yesterday. … The kids were great though."
        );
    }

    #[test]
    fn clipped_excerpts_keep_the_words_around_matches_or_the_most_contentful_start() {
        let t = "Hey Mel! Yesterday, after a long and tiring week at work, I finally went to \
                 the adoption agency downtown with my sister and we talked for hours. Bye!";
        let e = clipped_excerpt(t, &terms("adoption agency"), 6);
        assert_eq!(e, "… went to the adoption agency downtown with my …");
        let e = clipped_excerpt(t, &terms("pottery"), 5);
        assert_eq!(e, "… Yesterday, after a long and …");
        assert_eq!(
            clipped_excerpt("Short and sweet.", &terms("x"), 5),
            "Short and sweet."
        );
    }

    #[test]
    fn short_or_unmatched_turns_stay_whole() {
        let t = "I like tea. Green tea mostly.";
        assert_eq!(excerpt(t, &terms("coffee"), 3), t);
        assert_eq!(excerpt(t, &terms("tea"), 50), t);
        assert_eq!(
            excerpt("One long sentence about tea", &terms("tea"), 2),
            "One long sentence about tea"
        );
    }
}
