//! A minimal OpenAI-compatible HTTP endpoint on 127.0.0.1 for tests of real HTTP clients: each
//! request body is handed to a responder that picks the status and body. One request per
//! connection (`Connection: close`), which every client handles. [`StubEndpoint::embeddings`]
//! is a ready responder for `/embeddings` serving hashed bag-of-words vectors.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

type Responder = dyn Fn(&Value) -> (u16, String) + Send + Sync;
/// What was seen of one request: path, authorization header, JSON body.
type Seen = (String, String, Value);

pub struct StubEndpoint {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    requests: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for StubEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StubEndpoint")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// A chat-completion body with the given content and usage.
pub fn completion(content: &str, prompt_tokens: u64) -> String {
    serde_json::json!({
        "id": "stub", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1}
    })
    .to_string()
}

/// An embeddings body holding `vectors[i]` at index `i`, listed last first so that clients must
/// order by `index` rather than trust the list order.
pub fn embeddings(vectors: &[Vec<f32>]) -> String {
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .rev()
        .map(|(i, v)| serde_json::json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    serde_json::json!({
        "object": "list", "data": data, "model": "stub",
        "usage": {"prompt_tokens": vectors.len(), "total_tokens": vectors.len()}
    })
    .to_string()
}

impl StubEndpoint {
    /// An `/embeddings` endpoint answering every input with its hashed bag-of-words vector of
    /// `dim` values ([`HashEmbedder::vector_in`](crate::HashEmbedder::vector_in)), so texts that
    /// share words are close. A body without an `input` list gets a 400.
    pub fn embeddings(dim: usize) -> Self {
        Self::start(move |body| match body["input"].as_array() {
            Some(input) => {
                let vectors: Vec<Vec<f32>> = input
                    .iter()
                    .map(|t| crate::HashEmbedder::vector_in(t.as_str().unwrap_or(""), dim))
                    .collect();
                (200, embeddings(&vectors))
            }
            None => (400, "{\"error\":\"input must be a list\"}".into()),
        })
    }

    pub fn start(responder: impl Fn(&Value) -> (u16, String) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let requests: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let responder: Arc<Responder> = Arc::new(responder);
        let (reqs, stop2) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    serve(stream, &reqs, responder.as_ref());
                }
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            requests,
            stop,
            addr,
            thread: Some(thread),
        }
    }

    /// `(authorization header, JSON body)` of every request so far.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|(_, auth, body)| (auth.clone(), body.clone()))
            .collect()
    }

    /// The request path (e.g. `/v1/embeddings`) of every request so far.
    pub fn paths(&self) -> Vec<String> {
        self.requests
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|(path, _, _)| path.clone())
            .collect()
    }
}

fn serve(stream: TcpStream, reqs: &Mutex<Vec<Seen>>, responder: &Responder) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let (mut length, mut auth) = (0usize, String::new());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    // Request line: `POST /v1/embeddings HTTP/1.1`.
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse().unwrap_or(0),
                "authorization" => auth = v.trim().to_string(),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, text) = responder(&value);
    reqs.lock().expect("not poisoned").push((path, auth, value));
    let mut out = stream;
    let _ = write!(
        out,
        "HTTP/1.1 {status} Stub\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = out.flush();
}

impl Drop for StubEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
