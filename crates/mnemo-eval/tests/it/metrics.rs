//! The metric code on small hand-made cases.

use mnemo_eval::metrics::*;

fn turns(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn single_evidence_recall_hit_and_mrr() {
    let evidence = turns(&["D1:3"]);
    let retrieved = vec![turns(&["D1:1"]), turns(&["D1:2"]), turns(&["D1:3"])];
    let s = score_question(&evidence, &retrieved).unwrap();
    assert_eq!(s.recall, [0.0, 1.0, 1.0, 1.0]);
    assert_eq!(s.hit, [0.0, 1.0, 1.0, 1.0]);
    assert!((s.reciprocal_rank - 1.0 / 3.0).abs() < 1e-12);
}

#[test]
fn multi_evidence_counts_each_turn_once() {
    let evidence = turns(&["D1:1", "D2:5", "D3:9"]);
    let mut retrieved = vec![turns(&["D2:5"]), turns(&["D2:5"])];
    retrieved.extend((0..3).map(|i| turns(&[&format!("D9:{i}")])));
    retrieved.push(turns(&["D1:1"])); // rank 6
    let s = score_question(&evidence, &retrieved).unwrap();
    assert!((s.recall[0] - 1.0 / 3.0).abs() < 1e-12, "recall@1");
    assert!(
        (s.recall[1] - 1.0 / 3.0).abs() < 1e-12,
        "a repeat adds nothing"
    );
    assert!((s.recall[2] - 2.0 / 3.0).abs() < 1e-12, "recall@10");
    assert_eq!(s.hit, [1.0; 4]);
    assert_eq!(s.reciprocal_rank, 1.0);
}

#[test]
fn derived_memory_covers_several_turns() {
    let evidence = turns(&["D1:1", "D1:2"]);
    let s = score_question(&evidence, &[turns(&["D1:1", "D1:2", "D1:7"])]).unwrap();
    assert_eq!(s.recall, [1.0; 4]);
}

#[test]
fn no_evidence_is_left_out_and_misses_score_zero() {
    assert!(score_question(&[], &[turns(&["D1:1"])]).is_none());
    let s = score_question(&turns(&["D1:1"]), &[]).unwrap();
    assert_eq!(s, QuestionScores::default());
}

#[test]
fn accumulator_means_use_schema_keys() {
    let mut t = RetrievalTally::default();
    let e = turns(&["D1:1"]);
    t.push(4, &score_question(&e, &[turns(&["D1:1"])]).unwrap());
    t.push(2, &score_question(&e, &[turns(&["D1:2"])]).unwrap());
    let s = t.summary();
    let keys: Vec<&str> = s.retrieval.keys().map(String::as_str).collect();
    for k in [
        "recall@1",
        "recall@5",
        "recall@10",
        "recall@20",
        "hit@1",
        "hit@5",
        "hit@10",
        "hit@20",
        "mrr",
    ] {
        assert!(keys.contains(&k), "{k}");
    }
    assert_eq!(keys.len(), 9);
    assert_eq!(s.retrieval["recall@10"], 0.5);
    assert_eq!(s.per_category["4"]["mrr"], 1.0);
    assert_eq!(s.per_category["2"]["mrr"], 0.0);
}

#[test]
fn normalisation_strips_case_punctuation_and_articles() {
    assert_eq!(normalize_answer("The Cat, and a Dog!"), "cat dog");
    assert_eq!(normalize_answer("  7   May 2023. "), "7 may 2023");
}

#[test]
fn f1_stems_and_ignores_articles() {
    assert_eq!(
        token_f1("She was painting sunsets", "painted the sunset at dawn"),
        0.5
    );
    assert_eq!(token_f1("The sunrise", "sunrise"), 1.0);
    assert_eq!(token_f1("", "x"), 0.0);
    // precision 1/2, recall 1/1 -> 2/3
    assert!((token_f1("7 May", "May") - 2.0 / 3.0).abs() < 1e-12);
}

#[test]
fn multi_hop_splits_on_commas() {
    let f = answer_f1(
        1,
        "psychology, counseling",
        "Psychology, counseling certification",
    );
    // "psychology" matches exactly (1.0); "counseling certification" best matches "counseling"
    // with precision 1, recall 1/2 -> 2/3.
    assert!((f - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12, "{f}");
}

#[test]
fn adversarial_scores_declining() {
    assert_eq!(answer_f1(5, "No information available.", "anything"), 1.0);
    assert_eq!(answer_f1(5, "It was not mentioned", "anything"), 1.0);
    assert_eq!(answer_f1(5, "Paris", "Paris"), 0.0);
    assert_eq!(
        answer_f1(3, "counseling", "counseling; because she likes it"),
        1.0
    );
}

#[test]
fn bleu1_clips_and_penalises_brevity() {
    assert_eq!(bleu1("cat cat cat", "cat"), 1.0 / 3.0);
    let short = bleu1("cat", "cat sat mat");
    assert!((short - (1.0f64 - 3.0).exp()).abs() < 1e-12, "{short}");
    assert_eq!(bleu1("dog", "cat"), 0.0);
}

#[test]
fn percentiles_by_nearest_rank() {
    let v: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(percentile(&v, 0.5), 50.0);
    assert_eq!(percentile(&v, 0.95), 95.0);
    assert_eq!(percentile(&[], 0.5), 0.0);
    assert_eq!(percentile(&[3.0], 0.99), 3.0);
}
