//! `mnemo eval relations`: precision and recall of the rule relation extractor
//! ([`mnemo_core::relation::extract_relations`]) against hand labels, and its cost per turn.
//!
//! Two label sets ship with the crate: `data/relations-own.json` (50 sentences written for the
//! purpose, text included) and `data/relations-dev-labels.json` (150 LoCoMo dev turns, by
//! reference only: `sample_id` + `dia_id`, the text is read from the dataset file given with
//! `--data`). A predicted triple is right when a labelled one of the same turn has the same
//! predicate, the same subject and a matching object after [`normalize_entity`] — `partner_of`,
//! `sibling_of`, `friend_of` and `family_of` in either direction; an object matches one of the
//! label's `|`-separated spellings when equal, or when every word of the shorter one is in the
//! longer ("long walks" for "long walks on the beach"). Each label is matched at most once.
//!
//! Cost: every turn of the measured texts run through the extractor and, as the baseline in the
//! same run, through the entity extractor that a raw add already runs per turn; medians over
//! repeats, reported as nanoseconds per turn and as the ratio of the two.

use crate::locomo;
use anyhow::{bail, Context, Result};
use mnemo_core::entity::{extract_entities, normalize_entity};
use mnemo_core::relation::{extract_relations, RelationCandidate};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

const OWN: &str = include_str!("../data/relations-own.json");
const DEV_LABELS: &str = include_str!("../data/relations-dev-labels.json");
const SYMMETRIC: &[&str] = &["partner_of", "sibling_of", "friend_of", "family_of"];
/// Passes over the texts for the timing; the median pass is reported.
const TIMING_PASSES: usize = 7;

#[derive(Deserialize)]
struct OwnFile {
    sentences: Vec<OwnSentence>,
}
#[derive(Deserialize)]
struct OwnSentence {
    speaker: String,
    text: String,
    relations: Vec<[String; 3]>,
}
#[derive(Deserialize)]
struct DevFile {
    turns: Vec<DevTurn>,
}
#[derive(Deserialize)]
struct DevTurn {
    sample_id: String,
    dia_id: String,
    relations: Vec<[String; 3]>,
}

/// One labelled text.
struct Item {
    id: String,
    speaker: String,
    text: String,
    gold: Vec<[String; 3]>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    pub labelled: usize,
    pub predicted: usize,
    pub correct: usize,
    pub precision: f64,
    pub recall: f64,
}

impl Counts {
    fn finish(&mut self) {
        let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        self.precision = ratio(self.correct, self.predicted);
        self.recall = ratio(self.correct, self.labelled);
    }
}

/// The score of one label set.
#[derive(Debug, Clone, Serialize)]
pub struct SetScore {
    pub name: String,
    pub texts: usize,
    pub texts_with_relations: usize,
    pub overall: Counts,
    pub per_predicate: BTreeMap<String, Counts>,
    /// Predicted triples no label matched: `id: subject | predicate | object`.
    pub wrong: Vec<String>,
    /// Labelled triples nothing predicted matched.
    pub missed: Vec<String>,
}

/// Cost per turn of the rules against the entity extractor, same texts, same run.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    pub turns: usize,
    pub passes: usize,
    pub relations_ns_per_turn: f64,
    pub entities_ns_per_turn: f64,
    pub ratio_to_entities: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RelationsReport {
    pub sets: Vec<SetScore>,
    pub timing: Timing,
}

/// Scores the own set, and the dev labels when the LoCoMo file is given (`labels` replaces the
/// built-in dev labels); times the extractor on every turn of the dataset (or the own set).
pub fn run_relations(data: Option<&Path>, labels: Option<&Path>) -> Result<RelationsReport> {
    let own: OwnFile = serde_json::from_str(OWN).context("built-in own relation labels")?;
    let own_items: Vec<Item> = own
        .sentences
        .into_iter()
        .enumerate()
        .map(|(i, s)| Item {
            id: format!("own-{}", i + 1),
            speaker: s.speaker,
            text: s.text,
            gold: s.relations,
        })
        .collect();
    let mut sets = vec![score("own", &own_items)];
    let mut timed: Vec<(String, String)> = own_items
        .iter()
        .map(|i| (i.text.clone(), i.speaker.clone()))
        .collect();
    match (data, labels) {
        (None, Some(_)) => bail!("--labels needs --data (the dataset the labels refer to)"),
        (None, None) => {}
        (Some(data), labels) => {
            let conversations = locomo::load(data)?;
            let label_text = match labels {
                Some(p) => std::fs::read_to_string(p)
                    .with_context(|| format!("reading {}", p.display()))?,
                None => DEV_LABELS.to_string(),
            };
            let dev: DevFile = serde_json::from_str(&label_text).context("relation labels")?;
            let turns: HashMap<(&str, &str), (&str, &str)> = conversations
                .iter()
                .flat_map(|c| {
                    c.turns().map(move |t| {
                        let key = (c.sample_id.as_str(), t.dia_id.as_str());
                        (key, (t.speaker.as_str(), t.text.as_str()))
                    })
                })
                .collect();
            let mut items = Vec::with_capacity(dev.turns.len());
            for t in dev.turns {
                let Some((speaker, text)) = turns.get(&(t.sample_id.as_str(), t.dia_id.as_str()))
                else {
                    bail!(
                        "labelled turn {} {} is not in {}",
                        t.sample_id,
                        t.dia_id,
                        data.display()
                    );
                };
                items.push(Item {
                    id: format!("{} {}", t.sample_id, t.dia_id),
                    speaker: speaker.to_string(),
                    text: text.to_string(),
                    gold: t.relations,
                });
            }
            sets.push(score("dev", &items));
            timed = turns
                .values()
                .map(|(s, t)| (t.to_string(), s.to_string()))
                .collect();
        }
    }
    Ok(RelationsReport {
        sets,
        timing: time(&timed),
    })
}

fn score(name: &str, items: &[Item]) -> SetScore {
    let mut overall = Counts::default();
    let mut per: BTreeMap<String, Counts> = BTreeMap::new();
    let (mut wrong, mut missed) = (Vec::new(), Vec::new());
    for item in items {
        let predicted = extract_relations(&item.text, Some(&item.speaker));
        let mut used = vec![false; item.gold.len()];
        for p in &predicted {
            let hit = (0..item.gold.len()).find(|&g| !used[g] && matches(p, &item.gold[g]));
            per.entry(p.predicate.clone()).or_default().predicted += 1;
            overall.predicted += 1;
            match hit {
                Some(g) => {
                    used[g] = true;
                    per.entry(p.predicate.clone()).or_default().correct += 1;
                    overall.correct += 1;
                }
                None => wrong.push(format!(
                    "{}: {} | {} | {}",
                    item.id, p.subject, p.predicate, p.object
                )),
            }
        }
        for (g, gold) in item.gold.iter().enumerate() {
            per.entry(gold[1].clone()).or_default().labelled += 1;
            overall.labelled += 1;
            if !used[g] {
                missed.push(format!("{}: {}", item.id, gold.join(" | ")));
            }
        }
    }
    overall.finish();
    per.values_mut().for_each(Counts::finish);
    SetScore {
        name: name.to_string(),
        texts: items.len(),
        texts_with_relations: items.iter().filter(|i| !i.gold.is_empty()).count(),
        overall,
        per_predicate: per,
        wrong,
        missed,
    }
}

/// Whether a predicted triple is the labelled one (see the module docs).
fn matches(p: &RelationCandidate, gold: &[String; 3]) -> bool {
    if p.predicate != gold[1] {
        return false;
    }
    let same = |a: &str, b: &str| normalize_entity(a) == normalize_entity(b);
    let object_ok = |predicted: &str, labelled: &str| {
        labelled.split('|').any(|alt| {
            let (a, b) = (normalize_entity(predicted), normalize_entity(alt));
            let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
            let long_words: Vec<&str> = long.split_whitespace().collect();
            !short.is_empty() && short.split_whitespace().all(|w| long_words.contains(&w))
        })
    };
    (same(&p.subject, &gold[0]) && object_ok(&p.object, &gold[2]))
        || (SYMMETRIC.contains(&gold[1].as_str())
            && same(&p.object, &gold[0])
            && object_ok(&p.subject, &gold[2]))
}

/// Median pass time per turn, rules and the entity baseline interleaved pass by pass.
fn time(turns: &[(String, String)]) -> Timing {
    let mut rules = Vec::with_capacity(TIMING_PASSES);
    let mut entities = Vec::with_capacity(TIMING_PASSES);
    let mut sink = 0usize;
    for _ in 0..TIMING_PASSES {
        let started = Instant::now();
        for (text, speaker) in turns {
            sink += extract_relations(text, Some(speaker)).len();
        }
        rules.push(started.elapsed().as_nanos() as f64);
        let started = Instant::now();
        for (text, _) in turns {
            sink += extract_entities(text).len();
        }
        entities.push(started.elapsed().as_nanos() as f64);
    }
    std::hint::black_box(sink);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] / turns.len().max(1) as f64
    };
    let (r, e) = (median(&mut rules), median(&mut entities));
    Timing {
        turns: turns.len(),
        passes: TIMING_PASSES,
        relations_ns_per_turn: r,
        entities_ns_per_turn: e,
        ratio_to_entities: if e > 0.0 { r / e } else { 0.0 },
    }
}
