//! The synthetic workload: chat-like sentences and questions from a fixed seed, so every run
//! (and a `--search-only` rerun) sees the same texts.

/// A small deterministic generator (xorshift64*), so every run sees the same texts.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

const NAMES: &[&str] = &[
    "Maya", "Tom", "Priya", "Luis", "Anna", "Kenji", "Sara", "Omar", "Lena", "Jack", "Ines", "Wei",
];
const PLACES: &[&str] = &[
    "Lisbon",
    "the lake house",
    "Berlin",
    "her office",
    "the farmers market",
    "Osaka",
    "the gym",
    "Denver",
    "the library",
    "Nairobi",
    "the beach",
    "Toronto",
];
const ACTS: &[&str] = &[
    "started learning the cello",
    "ran a half marathon",
    "adopted a rescue dog",
    "switched to a vegan diet",
    "began a pottery class",
    "finished a novel about sailors",
    "planted tomatoes and basil",
    "booked a trip",
    "fixed an old bicycle",
    "joined a chess club",
    "painted a sunset",
    "changed jobs to product design",
];
const WHEN: &[&str] = &[
    "last weekend",
    "yesterday",
    "in March",
    "two weeks ago",
    "this morning",
    "over the summer",
    "on Friday",
    "last year",
];
const FEEL: &[&str] = &[
    "and loved it",
    "but found it hard",
    "with a friend",
    "to relax",
    "after months of planning",
    "for the first time",
    "because a coworker suggested it",
    "and wants to do it again",
];

pub(super) fn sentence(r: &mut Rng, i: usize) -> String {
    format!(
        "{} {} at {} {} {} (note {i})",
        r.pick(NAMES),
        r.pick(ACTS),
        r.pick(PLACES),
        r.pick(WHEN),
        r.pick(FEEL)
    )
}

pub(super) fn question(r: &mut Rng) -> String {
    format!(
        "What did {} do at {} {}?",
        r.pick(NAMES),
        r.pick(PLACES),
        r.pick(WHEN)
    )
}
