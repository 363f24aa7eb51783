//! How much embedding a conversation add costs: each new turn's text is embedded at most once,
//! whatever the context windows, so a change that multiplies embedding work fails here rather
//! than only in benchmarks.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory, WindowIndexing};
use mnemo_testkit::engines;
use mnemo_testkit::HashEmbedder;
use std::sync::{Arc, Mutex};

/// Records every call and the texts it carried.
#[derive(Default)]
struct Recording(Mutex<Vec<Vec<String>>>);

impl Recording {
    fn calls(&self) -> Vec<Vec<String>> {
        self.0.lock().unwrap().clone()
    }
    fn texts(&self) -> Vec<String> {
        self.calls().concat()
    }
    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

impl Embedder for Recording {
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL_ID
    }
    fn dimension(&self) -> usize {
        HashEmbedder::DIM
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.0
            .lock()
            .unwrap()
            .push(texts.iter().map(|t| t.to_string()).collect());
        HashEmbedder.embed(texts)
    }
}

fn engine(embedder: Arc<dyn Embedder>, indexing: WindowIndexing) -> (Memory, engines::TestStore) {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts_with(store, embedder, RankParams::default(), indexing).unwrap();
    (m, dir)
}

fn session(scope: &Scope, id: &str, turns: &[(&str, &str)]) -> AddRequest {
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(
        turns
            .iter()
            .map(|(name, content)| InputMessage {
                role: Role::User,
                content: content.to_string(),
                name: Some(name.to_string()),
            })
            .collect(),
    );
    req.session_id = Some(id.into());
    req
}

const TURNS: &[(&str, &str)] = &[
    ("Ana", "Which marathon are you training for?"),
    ("Ben", "Berlin, in September!"),
    ("Ana", "Is the course flat?"),
    ("Ben", "Very flat, good for a personal best."),
    ("Ana", "Who is coaching you?"),
    ("Ben", "My neighbour, a retired sprinter."),
];

#[tokio::test]
async fn a_session_add_embeds_each_new_turn_once_in_one_call() {
    let rec = Arc::new(Recording::default());
    let (m, _dir) = engine(rec.clone(), WindowIndexing::default());
    let scope = Scope::user("u").unwrap();
    let out = m.add(session(&scope, "s1", TURNS)).await.unwrap();
    assert_eq!(out.results.len(), TURNS.len());
    let calls = rec.calls();
    assert_eq!(calls.len(), 1, "one embedder call per add: {calls:?}");
    let texts = rec.texts();
    assert_eq!(
        texts.len(),
        TURNS.len(),
        "one text per turn, not one per context window: {texts:?}"
    );
    for (name, content) in TURNS {
        let n = texts.iter().filter(|t| t.contains(content)).count();
        assert_eq!(n, 1, "{content:?} was embedded {n} times");
        assert!(texts.contains(&format!("{name}: {content}")));
    }
    // What `mnemo bench --conversations` times the embedder alone on is exactly that work.
    assert_eq!(
        m.raw_embedding_texts(&session(&scope, "s9", TURNS))
            .unwrap(),
        texts
    );
}

#[tokio::test]
async fn a_later_add_embeds_its_new_turns_once_and_takes_earlier_ones_from_the_cache() {
    let rec = Arc::new(Recording::default());
    // As `Memory::open` wraps every embedder: the earlier turns' lines are cached.
    let cached = Arc::new(CachedEmbedder::new(rec.clone(), 100));
    let (m, _dir) = engine(cached, WindowIndexing::default());
    let scope = Scope::user("u").unwrap();
    m.add(session(&scope, "s1", &TURNS[..4])).await.unwrap();
    rec.clear();
    m.add(session(&scope, "s1", &TURNS[4..])).await.unwrap();
    assert_eq!(
        rec.texts(),
        vec![
            "Ana: Who is coaching you?".to_string(),
            "Ben: My neighbour, a retired sprinter.".to_string()
        ],
        "only the new turns reach the model"
    );

    // Without a cache the earlier turns in the window are embedded again, but never more than
    // the window reaches, and each new turn still once.
    let rec = Arc::new(Recording::default());
    let (m, _dir) = engine(rec.clone(), WindowIndexing::default());
    m.add(session(&scope, "s1", &TURNS[..4])).await.unwrap();
    rec.clear();
    m.add(session(&scope, "s1", &TURNS[4..])).await.unwrap();
    let texts = rec.texts();
    let before = WindowIndexing::default().embed_before;
    assert!(texts.len() <= 2 + before, "{texts:?}");
    for (_, content) in &TURNS[4..] {
        assert_eq!(texts.iter().filter(|t| t.contains(content)).count(), 1);
    }
}

#[tokio::test]
async fn a_turn_is_found_densely_by_its_neighbours_words() {
    let scope = Scope::user("u").unwrap();
    let (windows, _d1) = engine(Arc::new(HashEmbedder), WindowIndexing::default());
    let (alone, _d2) = engine(Arc::new(HashEmbedder), WindowIndexing::plain());
    // "Berlin, in September!" shares no word with the question; its window does.
    let score = |m: Memory| {
        let scope = scope.clone();
        async move {
            m.add(session(&scope, "s1", TURNS)).await.unwrap();
            let mut req = SearchRequest::new(scope, "marathon training", TURNS.len());
            req.mode = SearchMode::Dense;
            let hits = m.search(req).await.unwrap().results;
            hits.iter()
                .find(|h| h.memory.text == "Berlin, in September!")
                .map_or(0.0, |h| h.scores.dense)
        }
    };
    let (with, without) = (score(windows).await, score(alone).await);
    assert!(
        with > 0.2,
        "the window vector carries the question's words: {with}"
    );
    assert!(without < with, "alone {without}, in its window {with}");
}
