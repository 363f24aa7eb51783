//! Adds whose messages hold content parts ([`AddInput::Parts`]): turned into plain messages
//! before anything else looks at the add, by the rules of `mnemo_core::content`. Text parts
//! are joined in order; each image part is described by the chat model when it reads images
//! (`llm.vision`) and becomes a line `[image: …]` of its message, its reference (never its
//! bytes) kept in the add's metadata under `images`. Every image is checked before the first
//! model call, so a refused add costs no call.

use crate::{run_blocking, AddInput, AddRequest, Memory};
use mnemo_core::content::{describe_image, no_vision, ImagePart, Part};
use mnemo_core::pipeline::CallLog;
use mnemo_core::*;

/// The metadata key holding an add's image references.
pub(crate) const IMAGES_KEY: &str = "images";

impl Memory {
    /// Resolves `req`'s content parts in place (see the module); returns the model calls made.
    /// A request without parts is left as it is.
    pub(crate) async fn resolve_parts(&self, req: &mut AddRequest) -> Result<Vec<ModelCall>> {
        let AddInput::Parts(messages) = &req.input else {
            return Ok(Vec::new());
        };
        let vision = self.inner.chat.clone().filter(|_| self.inner.infer.vision);
        let mut images: Vec<(usize, usize, ImagePart)> = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let Content::Parts(parts) = &m.content else {
                continue;
            };
            for (j, p) in parts.iter().enumerate() {
                if let Part::ImageUrl { image_url } = p {
                    if vision.is_none() {
                        return Err(no_vision(&format!("messages[{i}].content[{j}]")));
                    }
                    images.push((i, j, image_url.clone()));
                }
            }
        }
        if !images.is_empty() && metadata_has_images(req.metadata.as_ref()) {
            return Err(Error::invalid(
                "metadata.images",
                "is written by mnemo for image parts; use another key",
            ));
        }
        let (descriptions, calls) = match vision {
            Some(model) if !images.is_empty() => {
                let parts: Vec<ImagePart> = images.iter().map(|(_, _, p)| p.clone()).collect();
                run_blocking(move || {
                    let mut log = CallLog::default();
                    let texts = parts
                        .iter()
                        .map(|p| describe_image(model.as_ref(), &mut log, p))
                        .collect::<Result<Vec<_>>>()?;
                    Ok((texts, log.calls))
                })
                .await?
            }
            _ => (Vec::new(), Vec::new()),
        };
        let described: std::collections::HashMap<(usize, usize), &str> = images
            .iter()
            .zip(&descriptions)
            .map(|((i, j, _), d)| ((*i, *j), d.as_str()))
            .collect();
        let mut out = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            let content = match &m.content {
                Content::Text(t) => t.clone(),
                Content::Parts(parts) => parts
                    .iter()
                    .enumerate()
                    .map(|(j, p)| match p {
                        Part::Text { text } => text.clone(),
                        Part::ImageUrl { .. } => {
                            format!("[image: {}]", described.get(&(i, j)).unwrap_or(&""))
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            out.push(InputMessage {
                role: m.role,
                content,
                name: m.name.clone(),
            });
        }
        if !images.is_empty() {
            let refs: Vec<serde_json::Value> = images
                .iter()
                .zip(&descriptions)
                .map(|((i, j, p), d)| {
                    let mut r = p.reference();
                    r["message"] = (*i).into();
                    r["part"] = (*j).into();
                    r["description"] = d.as_str().into();
                    r
                })
                .collect();
            let mut meta = match req.metadata.take() {
                Some(serde_json::Value::Object(m)) => m,
                None | Some(serde_json::Value::Null) => serde_json::Map::new(),
                Some(_) => return Err(Error::invalid("metadata", "must be a JSON object")),
            };
            meta.insert(IMAGES_KEY.into(), refs.into());
            req.metadata = Some(meta.into());
        }
        req.input = AddInput::Messages(out);
        Ok(calls)
    }
}

fn metadata_has_images(m: Option<&serde_json::Value>) -> bool {
    m.and_then(|m| m.get(IMAGES_KEY)).is_some()
}
