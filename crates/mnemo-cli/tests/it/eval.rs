//! `mnemo eval locomo` end to end: the real embedding model, a small LoCoMo-shaped file, and QA
//! through a real HTTP answer endpoint on 127.0.0.1.

use crate::{mnemo, run_err, run_ok};
use mnemo_testkit::stub_http::{completion, StubEndpoint};

fn tiny_dataset(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("tiny.json");
    std::fs::write(&path, mnemo_testkit::locomo_tiny().to_string()).unwrap();
    path
}

#[test]
fn eval_locomo_writes_report_markdown_and_plots_with_qa_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let data = tiny_dataset(dir.path());
    let stub = StubEndpoint::start(|body| {
        let prompt = body["messages"][1]["content"].as_str().unwrap_or("");
        let question = prompt.rsplit("Question:").next().unwrap_or("");
        let answer = if prompt.contains("Verdict:") {
            "CORRECT"
        } else if question.contains("greyhound") {
            "Biscuit"
        } else {
            "No information available"
        };
        (200, completion(answer, 40))
    });
    let out = dir.path().join("report.json");
    let md = dir.path().join("report.md");
    let plots = dir.path().join("plots");
    let report = run_ok(
        mnemo(&dir.path().join("data"))
            .args(["eval", "locomo", "--top-k", "5", "--data"])
            .arg(&data)
            .arg("--out")
            .arg(&out)
            .arg("--markdown")
            .arg(&md)
            .arg("--plots")
            .arg(&plots)
            .args(["--answer-model", "stub-model", "--answer-base-url"])
            .arg(&stub.base_url),
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        report, written,
        "stdout carries the same report as the file"
    );
    let keys: Vec<&String> = written["retrieval"].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 9);
    assert_eq!(written["counts"]["turns"], 7);
    assert_eq!(written["counts"]["questions_without_evidence"], 1);
    assert_eq!(written["per_category"]["4"]["recall@5"], 1.0);
    assert!(written["baselines"]["bm25"]["retrieval"]["recall@20"].is_number());
    assert_eq!(written["qa"]["questions"], 3);
    assert_eq!(written["qa"]["per_category"]["4"]["f1"], 1.0);
    assert_eq!(written["qa"]["mean_prompt_tokens"], 40.0);
    assert_eq!(
        written["config"]["embedder"],
        "all-MiniLM-L6-v2/onnx-int8-dq"
    );
    // 3 answers and 2 judgements (the adversarial question is scored without the judge).
    assert_eq!(stub.requests().len(), 5);

    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("plots/recall_at_k.svg"), "{text}");
    for name in ["recall_at_k", "recall_by_category", "search_latency"] {
        let p = plots.join(format!("{name}.svg"));
        assert!(
            std::fs::metadata(&p).unwrap().len() > 100,
            "{}",
            p.display()
        );
        // A PNG beside it only in a build with the png-plots feature (scripts/test.sh's).
        let png = plots.join(format!("{name}.png"));
        if cfg!(feature = "png-plots") {
            assert!(
                std::fs::metadata(&png).unwrap().len() > 100,
                "{}",
                png.display()
            );
        } else {
            assert!(!png.exists(), "{}", png.display());
        }
    }
    assert!(
        !dir.path()
            .join("data/eval")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "the stores the run built are removed"
    );
}

#[test]
fn eval_without_answer_model_skips_qa_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let data = tiny_dataset(dir.path());
    let out = dir.path().join("r.json");
    let output = mnemo(&dir.path().join("data"))
        .args(["eval", "locomo", "--no-baselines", "--data"])
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("QA skipped"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(report["qa"]["skipped"]
        .as_str()
        .unwrap()
        .contains("no answer model"));

    let missing = dir.path().join("nope.json");
    let (_, err) = run_err(
        mnemo(&dir.path().join("data"))
            .args(["eval", "locomo", "--data"])
            .arg(&missing)
            .arg("--out")
            .arg(&out),
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope.json"),
        "{err}"
    );
    let (_, err) = run_err(
        mnemo(&dir.path().join("data"))
            .args(["eval", "locomo", "--answer-model", "m", "--data"])
            .arg(&data)
            .arg("--out")
            .arg(&out),
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--answer-base-url"),
        "{err}"
    );
}

/// `mnemo eval temporal` on a two-session file: the report on stdout equals the `--out` file,
/// the matched share and granularities follow the tagger, and the unparsable answer is listed.
#[test]
fn eval_temporal_reports_matched_share_per_granularity_and_unparsed_answers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("temporal.json");
    let file = serde_json::json!([{
        "sample_id": "t1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "We adopted Biscuit two weeks ago."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "I'm going camping next month!"}
            ],
            "session_2_date_time": "9:00 am on 14 July, 2023",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "Nice to see you."}
            ]
        },
        "qa": [
            {"question": "When adopt?", "answer": "Two weeks before 8 May 2023", "evidence": ["D1:1"], "category": 2},
            {"question": "When camping?", "answer": "June 2023", "evidence": ["D1:2"], "category": 2},
            {"question": "When meet?", "answer": "13 July 2023", "evidence": ["D2:1"], "category": 2},
            {"question": "How long?", "answer": "three years", "evidence": ["D2:1"], "category": 2}
        ]
    }]);
    std::fs::write(&data, file.to_string()).unwrap();
    let out = dir.path().join("temporal-report.json");
    let report = run_ok(
        mnemo(&dir.path().join("data"))
            .args(["eval", "temporal", "--data"])
            .arg(&data)
            .arg("--out")
            .arg(&out),
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        report, written,
        "stdout carries the same report as the file"
    );
    assert_eq!(written["questions"], 4);
    assert_eq!(written["parsed"], 3);
    assert_eq!(written["matched"], 2);
    assert!((written["matched_share"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(written["per_granularity"]["week"]["matched"], 1);
    assert_eq!(written["per_granularity"]["month"]["matched"], 1);
    assert_eq!(written["per_granularity"]["day"]["matched"], 0);
    assert_eq!(written["unparsed"][0]["answer"], "three years");
    assert_eq!(written["misses"][0]["question"], "When meet?");

    let (_, err) = run_err(
        mnemo(&dir.path().join("data"))
            .args(["eval", "temporal", "--data"])
            .arg(dir.path().join("missing.json")),
    );
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("missing.json"), "{err}");
}
