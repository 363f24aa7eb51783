//! [`join_score`](super::join_score) with each side prepared once.
//!
//! A plan scores every page leaving a short-term window against every active segment of its
//! scope. Scored pair by pair, each score recomputed both vectors' norms and compared every
//! page keyword with every segment keyword, ignoring ASCII case: most of a plan's time, and it
//! grows with the scope's segments. Here a page's squared norm and lower-cased keywords are
//! computed once per page, and a segment's once per segment (again after a page joins it), so
//! a pair costs one dot product and a few set lookups. The arithmetic is the same, in the same
//! order, so each score is the same number to the bit.

use super::Segment;
use std::collections::HashSet;

/// A page's side of a join score: its squared norm and its keywords in ASCII lower case (in
/// order, repeats kept: each counts in the overlap as it did).
pub(crate) struct PageSide {
    norm_sq: f32,
    keywords: Vec<String>,
}

impl PageSide {
    pub(crate) fn new(vector: &[f32], keywords: &[String]) -> Self {
        Self {
            norm_sq: crate::embed::dot(vector, vector),
            keywords: keywords.iter().map(|k| k.to_ascii_lowercase()).collect(),
        }
    }
}

/// A segment's side: its vector's squared norm and its keywords in ASCII lower case.
pub(crate) struct SegmentSide {
    norm_sq: f32,
    keywords: HashSet<String>,
}

impl SegmentSide {
    pub(crate) fn new(segment: &Segment) -> Self {
        Self {
            norm_sq: crate::embed::dot(&segment.vector, &segment.vector),
            keywords: segment
                .keywords
                .iter()
                .map(|k| k.to_ascii_lowercase())
                .collect(),
        }
    }
}

/// `0.7 · cosine + 0.3 · overlap` of a page (`page_vector`, `page`) and a segment
/// (`segment_vector`, `segment`), as [`super::join_score`] defines it: the cosine is 0 for
/// empty, mismatched or zero vectors; the overlap is the share of the page's keywords the
/// segment lists (two keywords match when equal ignoring ASCII case), 0 when the page has none.
pub(crate) fn score(
    page_vector: &[f32],
    page: &PageSide,
    segment_vector: &[f32],
    segment: &SegmentSide,
) -> f32 {
    let cos = if page_vector.len() != segment_vector.len()
        || page_vector.is_empty()
        || page.norm_sq == 0.0
        || segment.norm_sq == 0.0
    {
        0.0
    } else {
        crate::embed::dot(page_vector, segment_vector)
            / (page.norm_sq.sqrt() * segment.norm_sq.sqrt())
    };
    let overlap = if page.keywords.is_empty() {
        0.0
    } else {
        let hits = page
            .keywords
            .iter()
            .filter(|k| segment.keywords.contains(*k))
            .count();
        hits as f32 / page.keywords.len() as f32
    };
    0.7 * cos + 0.3 * overlap
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The score as it was computed pair by pair before the sides were prepared.
    fn pairwise(page_vector: &[f32], page_keywords: &[String], segment: &Segment) -> f32 {
        let cos = crate::tier::cosine(page_vector, &segment.vector);
        let overlap = if page_keywords.is_empty() {
            0.0
        } else {
            let hits = page_keywords
                .iter()
                .filter(|k| segment.keywords.iter().any(|s| s.eq_ignore_ascii_case(k)))
                .count();
            hits as f32 / page_keywords.len() as f32
        };
        0.7 * cos + 0.3 * overlap
    }

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn float(&mut self) -> f32 {
            (self.next() % 2001) as f32 / 1000.0 - 1.0
        }
    }

    #[test]
    fn prepared_sides_score_every_pair_as_the_pairwise_definition_does() {
        let words = [
            "Tea", "tea", "TEA", "chess", "Oslo", "oslo", "Ärzte", "ärzte", "é",
        ];
        let mut rng = Lcg(7);
        let mut seg = crate::tier::tests::segment(0, 0, chrono::Utc::now());
        let mut checked = 0;
        for case in 0..2000 {
            let dim = [0usize, 3, 8, 384][case % 4];
            let seg_dim = if case % 17 == 0 { dim + 1 } else { dim };
            let zero = case % 23 == 0;
            let page_vector: Vec<f32> = (0..dim)
                .map(|_| if zero { 0.0 } else { rng.float() })
                .collect();
            seg.vector = (0..seg_dim).map(|_| rng.float()).collect();
            let pick = |rng: &mut Lcg, n: u64| -> Vec<String> {
                (0..rng.next() % n)
                    .map(|_| words[(rng.next() % words.len() as u64) as usize].to_string())
                    .collect()
            };
            let page_keywords = pick(&mut rng, 6);
            seg.keywords = pick(&mut rng, 8);
            let want = pairwise(&page_vector, &page_keywords, &seg);
            let got = score(
                &page_vector,
                &PageSide::new(&page_vector, &page_keywords),
                &seg.vector,
                &SegmentSide::new(&seg),
            );
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "case {case}: {got} != {want}"
            );
            assert_eq!(
                crate::tier::join_score(&page_vector, &page_keywords, &seg).to_bits(),
                want.to_bits()
            );
            checked += usize::from(want != 0.0);
        }
        // Most cases score above zero, so the comparison is not of zeros.
        assert!(checked > 1500, "{checked}");
    }
}
