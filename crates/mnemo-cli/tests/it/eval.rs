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
