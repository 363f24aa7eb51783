//! Content parts (`AddInput::Parts`): text parts joined in order; an image part described by a
//! chat model that reads images, kept as the description and a reference, never its bytes;
//! refused, naming its index, without such a model.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, InferConfig, Memory};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::{json, Value};
use std::sync::Arc;

/// The bytes of the test image (base64 of "ABCDEFGH"), which no stored record may hold.
const IMAGE_B64: &str = "QUJDREVGR0g=";

fn data_url() -> String {
    format!("data:image/png;base64,{IMAGE_B64}")
}

fn engine(vision: bool) -> (Memory, Arc<ScriptedChat>, engines::TestStore) {
    let dir = engines::fresh_store();
    let chat = Arc::new(ScriptedChat::new("scripted:vision", |req| {
        assert!(
            req.messages.iter().any(|m| !m.images.is_empty()),
            "only image descriptions are asked for: {req:?}"
        );
        Ok("A red bicycle leaning on a blue wall.".into())
    }));
    let m = Memory::from_parts(dir.store(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_chat(
            chat.clone(),
            InferConfig {
                vision,
                ..InferConfig::default()
            },
        );
    (m, chat, dir)
}

fn parts(content: Value) -> AddRequest {
    let msg = ContentMessage {
        role: Role::User,
        content: Content::from_json("messages[0].content", &content).unwrap(),
        name: None,
    };
    AddRequest {
        input: AddInput::from_content(vec![msg]),
        ..AddRequest::text(Scope::user("ana").unwrap(), "")
    }
}

fn with_image() -> AddRequest {
    parts(json!([
        {"type": "text", "text": "my new bike"},
        {"type": "image_url", "image_url": {"url": data_url(), "detail": "low"}}
    ]))
}

async fn export_text(m: &Memory) -> String {
    m.export()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn memories(m: &Memory) -> Vec<mnemo::core::Memory> {
    m.export()
        .await
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            ExportRecord::Memory(m) => Some(*m),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_parts_are_joined_in_order() {
    let (m, chat, _d) = engine(false);
    m.add(parts(json!([
        {"type": "text", "text": "I moved to Oslo"},
        {"type": "text", "text": "in May"}
    ])))
    .await
    .unwrap();
    let stored = memories(&m).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].text, "I moved to Oslo\nin May");
    assert!(chat.requests().is_empty(), "no model call for text");
}

#[tokio::test]
async fn a_described_image_is_stored_as_text_with_its_reference_never_its_bytes() {
    let (m, chat, _d) = engine(true);
    let out = m.add(with_image()).await.unwrap();
    assert!(
        out.usage.iter().any(|u| u.purpose == "describe_image"),
        "{:?}",
        out.usage
    );
    let seen = chat.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].messages[0].images, vec![data_url()]);
    let stored = memories(&m).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].text,
        "my new bike\n[image: A red bicycle leaning on a blue wall.]"
    );
    let img = &stored[0].metadata["images"][0];
    assert_eq!(img["media_type"], "image/png");
    assert_eq!(img["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(
        (img["message"].clone(), img["part"].clone()),
        (json!(0), json!(1))
    );
    assert_eq!(img["description"], "A red bicycle leaning on a blue wall.");
    assert!(img.get("url").is_none(), "a data: URL is not kept: {img}");
    let all = export_text(&m).await;
    assert!(!all.contains(IMAGE_B64), "an image's bytes were stored");
    assert!(!all.contains("base64,"), "a data: URL was stored");

    // A web image keeps its URL.
    let (m, _chat, _d) = engine(true);
    m.add(parts(json!([
        {"type": "image_url", "image_url": {"url": "https://example.org/bike.jpg"}}
    ])))
    .await
    .unwrap();
    let stored = memories(&m).await;
    assert_eq!(
        stored[0].metadata["images"][0]["url"],
        "https://example.org/bike.jpg"
    );
}

/// An async add describes the image before queueing: the job never carries the bytes.
#[tokio::test]
async fn a_queued_add_carries_the_description_not_the_image() {
    let (m, chat, _d) = engine(true);
    let job = m.enqueue_add(with_image()).await.unwrap();
    assert_eq!(chat.requests().len(), 1);
    let payload = job.payload.to_string();
    assert!(!payload.contains(IMAGE_B64), "{payload}");
    assert!(payload.contains("A red bicycle"), "{payload}");
}

#[tokio::test]
async fn without_vision_an_image_part_is_refused_by_its_index_and_nothing_is_written() {
    let (m, chat, _d) = engine(false);
    for e in [
        m.add(with_image()).await.unwrap_err(),
        m.enqueue_add(with_image()).await.unwrap_err(),
    ] {
        assert!(
            matches!(&e, Error::InvalidInput { field, .. } if field == "messages[0].content[1]"),
            "{e:?}"
        );
    }
    assert!(chat.requests().is_empty());
    assert!(export_text(&m).await.is_empty(), "nothing was written");
}

#[tokio::test]
async fn a_callers_images_key_is_refused_on_an_add_with_images() {
    let (m, chat, _d) = engine(true);
    let mut req = with_image();
    req.metadata = Some(json!({"images": "mine"}));
    let e = m.add(req).await.unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput { field, .. } if field == "metadata.images"),
        "{e:?}"
    );
    assert!(chat.requests().is_empty());
}
