//! Message content as chat clients send it: a string, or a list of OpenAI-style parts
//! (`[{"type": "text", "text": …}, {"type": "image_url", "image_url": {"url": …}}]`, the form
//! LangChain and the OpenAI SDK send by default). Every surface (REST, the Mem0 routes, MCP,
//! Python) parses content with [`Content::from_json`], so a part means the same everywhere.
//!
//! The rules: text parts are joined in order, one line each; an image part becomes text only
//! through a chat model that sees images ([`describe_image`], when `llm.vision` is on), and is
//! otherwise refused naming its index — never dropped. An image's bytes are never stored: the
//! memory keeps the model's description and a reference ([`ImagePart::reference`]), which for a
//! `data:` URL is its media type and digest, not the data.

use crate::chat::{ChatMessage, ChatModel, ChatRequest};
use crate::error::{Error, Result};
use crate::memory::Role;
use crate::pipeline::CallLog;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The longest image URL taken (a `data:` URL carries the image itself): 20 MB.
pub const MAX_IMAGE_URL_BYTES: usize = 20 << 20;

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text { text: String },
    ImageUrl { image_url: ImagePart },
}

/// An image part: an `http(s)` URL or a `data:` URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImagePart {
    pub url: String,
}

/// A message's content: a plain string, or parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

/// A message whose content may hold parts (the add input of a surface that takes them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentMessage {
    pub role: Role,
    pub content: Content,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Content {
    /// Reads content as a client sent it; `field` names it in errors (`messages[2].content`),
    /// and a bad part is named by its index (`messages[2].content[1]`).
    pub fn from_json(field: &str, v: &Value) -> Result<Self> {
        match v {
            Value::String(s) => Ok(Content::Text(s.clone())),
            Value::Array(items) => {
                let parts = items
                    .iter()
                    .enumerate()
                    .map(|(j, item)| part_of(&format!("{field}[{j}]"), item))
                    .collect::<Result<Vec<_>>>()?;
                if parts.is_empty() {
                    return Err(Error::invalid(field, "a list of parts must not be empty"));
                }
                Ok(Content::Parts(parts))
            }
            _ => Err(Error::invalid(
                field,
                "must be a string or a list of parts ({\"type\": \"text\", \"text\": …})",
            )),
        }
    }

    /// Whether any part is an image.
    pub fn has_images(&self) -> bool {
        matches!(self, Content::Parts(p) if p.iter().any(|p| matches!(p, Part::ImageUrl { .. })))
    }

    /// The text of content without images: text parts joined in order, one line each. An
    /// image part is refused naming its index (it needs a vision model, see [`describe_image`]).
    pub fn text(&self, field: &str) -> Result<String> {
        match self {
            Content::Text(s) => Ok(s.clone()),
            Content::Parts(parts) => {
                let mut lines = Vec::with_capacity(parts.len());
                for (j, p) in parts.iter().enumerate() {
                    match p {
                        Part::Text { text } => lines.push(text.as_str()),
                        Part::ImageUrl { .. } => return Err(no_vision(&format!("{field}[{j}]"))),
                    }
                }
                Ok(lines.join("\n"))
            }
        }
    }
}

/// The error of an image part no model may read.
pub fn no_vision(field: &str) -> Error {
    Error::invalid(
        field,
        "an image part needs a chat model that reads images (set llm.vision = true with a vision model); it is never dropped silently",
    )
}

fn part_of(field: &str, v: &Value) -> Result<Part> {
    let kind = v.get("type").and_then(Value::as_str).ok_or_else(|| {
        Error::invalid(
            field,
            "a part must be an object with a \"type\" (text or image_url)",
        )
    })?;
    match kind {
        "text" => match v.get("text") {
            Some(Value::String(t)) => Ok(Part::Text { text: t.clone() }),
            _ => Err(Error::invalid(
                field,
                "a text part needs \"text\" (a string)",
            )),
        },
        "image_url" => {
            // OpenAI sends {"url": …, "detail": …}; some clients a bare string.
            let url = match v.get("image_url") {
                Some(Value::String(u)) => Some(u.as_str()),
                Some(Value::Object(o)) => o.get("url").and_then(Value::as_str),
                _ => None,
            }
            .map(str::to_string)
            .ok_or_else(|| {
                Error::invalid(field, "an image_url part needs \"image_url\": {\"url\": …}")
            })?;
            check_image_url(field, &url)?;
            Ok(Part::ImageUrl {
                image_url: ImagePart { url },
            })
        }
        other => Err(Error::invalid(
            field,
            format!("part type {other:?} is not supported (text or image_url)"),
        )),
    }
}

fn check_image_url(field: &str, url: &str) -> Result<()> {
    if url.len() > MAX_IMAGE_URL_BYTES {
        return Err(Error::invalid(
            field,
            format!("an image URL may hold at most {MAX_IMAGE_URL_BYTES} bytes"),
        ));
    }
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if !(lower.starts_with("http://")
        || lower.starts_with("https://")
        || lower.starts_with("data:"))
    {
        return Err(Error::invalid(
            field,
            "an image URL must be http://, https:// or data:",
        ));
    }
    Ok(())
}

impl ImagePart {
    /// What a memory keeps of the image: an `http(s)` URL as given; for a `data:` URL its
    /// media type and SHA-256 digest, never the data.
    pub fn reference(&self) -> Value {
        match self.url.strip_prefix("data:").or_else(|| {
            self.url
                .get(..5)
                .filter(|p| p.eq_ignore_ascii_case("data:"))
                .map(|_| &self.url[5..])
        }) {
            Some(rest) => {
                let media = rest.split([';', ',']).next().unwrap_or_default();
                let digest = hex::encode(Sha256::digest(self.url.as_bytes()));
                json!({ "media_type": media, "sha256": digest })
            }
            None => json!({ "url": self.url }),
        }
    }
}

/// The instruction a vision model describes an image under.
const DESCRIBE_PROMPT: &str = "Describe this image for a memory of the conversation it was \
shared in: what it shows, any text in it, and any fact about the people in the conversation it \
reveals. Answer with plain sentences, no preamble.";

/// Asks `model` (which reads images) to describe one image; the call is recorded in `log`. An
/// empty answer is a model-output error, never an empty memory.
pub fn describe_image(
    model: &dyn ChatModel,
    log: &mut CallLog,
    image: &ImagePart,
) -> Result<String> {
    let req = ChatRequest {
        messages: vec![ChatMessage {
            images: vec![image.url.clone()],
            ..ChatMessage::user(DESCRIBE_PROMPT)
        }],
        max_tokens: Some(400),
        temperature: Some(0.0),
        json: false,
    };
    let answer = log.chat(model, "describe_image", &req)?;
    let text = answer.content.trim();
    if text.is_empty() {
        return Err(Error::ModelOutput {
            model: model.model_id().into(),
            step: "describe_image".into(),
            reason: "the model described the image with an empty answer".into(),
        });
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(v: Value) -> Result<Content> {
        Content::from_json("messages[0].content", &v)
    }

    #[test]
    fn text_parts_are_joined_in_order() {
        let c = content(json!([
            {"type": "text", "text": "I moved to Oslo"},
            {"type": "text", "text": "last spring"}
        ]))
        .unwrap();
        assert_eq!(c.text("f").unwrap(), "I moved to Oslo\nlast spring");
        assert_eq!(content(json!("plain")).unwrap().text("f").unwrap(), "plain");
    }

    #[test]
    fn unknown_and_malformed_parts_are_refused_by_index() {
        for (v, needle) in [
            (
                json!([{"type": "text", "text": "a"}, {"type": "audio", "data": "x"}]),
                "content[1]",
            ),
            (json!([{"text": "no type"}]), "content[0]"),
            (json!([{"type": "text", "text": 3}]), "content[0]"),
            (
                json!([{"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}]),
                "content[0]",
            ),
            (json!([]), "content"),
            (json!(7), "content"),
        ] {
            let e = content(v.clone()).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidInput { field, .. } if field.ends_with(needle)),
                "{v}: {e:?}"
            );
        }
    }

    #[test]
    fn an_image_without_vision_is_refused_naming_its_index() {
        let c = content(json!([
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}}
        ]))
        .unwrap();
        assert!(c.has_images());
        let e = c.text("messages[0].content").unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput { field, .. } if field == "messages[0].content[1]"),
            "{e:?}"
        );
    }

    #[test]
    fn a_data_url_is_referenced_by_digest_never_by_its_bytes() {
        let url = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==";
        let r = ImagePart { url: url.into() }.reference();
        assert_eq!(r["media_type"], "image/png");
        assert_eq!(r["sha256"].as_str().unwrap().len(), 64);
        assert!(!r.to_string().contains("iVBOR"), "{r}");
        let web = ImagePart {
            url: "https://example.org/cat.png".into(),
        };
        assert_eq!(
            web.reference(),
            json!({"url": "https://example.org/cat.png"})
        );
    }
}
