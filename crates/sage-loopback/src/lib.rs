//! A minimal HTTP/1.1 server on 127.0.0.1 for tests: provider stand-ins that follow each
//! documented wire format, and a fault-injecting proxy in front of a real server. No traffic
//! leaves the loopback interface.
//!
//! Its own crate, not a feature of sage-remote: a test-only feature that dev-dependencies turn on
//! gave sage-remote, and every crate above it, a second set of features, so a build of one
//! package (maturin's of the Python wheel) compiled them all again. Tests take this crate as a
//! dev-dependency; nothing shipped depends on it.
#![deny(missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use sage_remote::{Protocol, RemoteOptions};

/// A request as received.
#[derive(Clone, Debug)]
pub struct Request {
    /// `POST`, `GET`, ...
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// The first header named `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// What the server does with a request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Answers with a status, extra headers and a body.
    Respond {
        /// HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Body.
        body: Vec<u8>,
    },
    /// Closes the connection without answering.
    Drop,
    /// Waits, then closes without answering (a client time-out).
    Stall(Duration),
    /// Announces a body of `length` bytes, sends `sent`, then closes (an oversized or lying
    /// answer, with no need to hold what it claims).
    Announce {
        /// The Content-Length announced.
        length: u64,
        /// What is actually sent.
        sent: Vec<u8>,
    },
    /// Announces the whole body's length but sends only its first `keep` bytes, then closes.
    Truncate {
        /// Body announced.
        body: Vec<u8>,
        /// Bytes actually sent.
        keep: usize,
    },
}

impl Reply {
    /// A JSON answer with `status`.
    pub fn json(status: u16, value: &serde_json::Value) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A running loopback server; stopped when dropped.
pub struct Server {
    port: u16,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Serves `handler` on a free loopback port, each connection on its own thread.
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("bound").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (count, halt) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if halt.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (handler, count) = (handler.clone(), count.clone());
                std::thread::spawn(move || serve_connection(stream, &*handler, &count));
            }
        });
        Server {
            port,
            requests,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // wake the accept loop so it sees the flag
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve_connection(stream: TcpStream, handler: &Handler, count: &AtomicUsize) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut writer = stream;
    loop {
        let Some(request) = read_request(&mut reader) else {
            return;
        };
        count.fetch_add(1, Ordering::SeqCst);
        match handler(&request) {
            Reply::Respond {
                status,
                headers,
                body,
            } => {
                let mut head = format!(
                    "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n",
                    reason(status),
                    body.len()
                );
                for (n, v) in headers {
                    head.push_str(&format!("{n}: {v}\r\n"));
                }
                head.push_str("\r\n");
                if writer.write_all(head.as_bytes()).is_err() || writer.write_all(&body).is_err() {
                    return;
                }
                let _ = writer.flush();
            }
            Reply::Drop => return,
            Reply::Stall(wait) => {
                std::thread::sleep(wait);
                return;
            }
            Reply::Announce { length, sent } => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n");
                let _ = writer.write_all(head.as_bytes());
                let _ = writer.write_all(&sent);
                let _ = writer.flush();
                return;
            }
            Reply::Truncate { body, keep } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                let _ = writer.write_all(head.as_bytes());
                let _ = writer.write_all(&body[..keep.min(body.len())]);
                let _ = writer.flush();
                return;
            }
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (n, v) = h.split_once(':')?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Forwards `request` to `upstream` (`http://host:port`) and returns its answer as a reply.
pub fn forward(upstream: &str, request: &Request) -> Reply {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    let mut call = agent.post(&format!("{upstream}{}", request.path));
    for (n, v) in &request.headers {
        if matches!(n.as_str(), "content-type" | "authorization") {
            call = call.header(n, v);
        }
    }
    match call.send(&request.body[..]) {
        Ok(mut response) => {
            let status = response.status().as_u16();
            let body = response
                .body_mut()
                .with_config()
                .limit(1 << 30)
                .read_to_vec()
                .unwrap_or_default();
            Reply::Respond {
                status,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body,
            }
        }
        Err(_) => Reply::Drop,
    }
}

// Provider stand-ins: each provider's documented request, response and error bodies, for the
// tests of remote embedders here and of the cache in front of them (sage-embed).

/// The key a [`provider`] stand-in accepts.
pub const STAND_IN_KEY: &str = "sk-test-0123456789";

/// The stand-in's vector of `text` in `role_field`: 6 values from a hash, so any mix-up of
/// texts, order or role shows.
pub fn stand_in_vector(text: &str, role_field: Option<&str>) -> Vec<f32> {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes().chain(role_field.unwrap_or("").bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    (0..6)
        .map(|i| ((h >> (i * 8)) & 0xff) as f32 / 255.0 - 0.5)
        .collect()
}

/// Texts and the role field of a request body, per protocol.
pub fn request_texts(protocol: Protocol, body: &Value) -> (Vec<String>, Option<String>) {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };
    match protocol {
        Protocol::OpenAi => (strings(&body["input"]), None),
        Protocol::Voyage => (
            strings(&body["input"]),
            body.get("input_type")
                .and_then(Value::as_str)
                .map(String::from),
        ),
        Protocol::Cohere => (
            strings(&body["texts"]),
            body["input_type"].as_str().map(String::from),
        ),
        Protocol::Gemini => {
            let requests = body["requests"].as_array().unwrap();
            let texts = requests
                .iter()
                .map(|r| {
                    r["content"]["parts"][0]["text"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            (texts, requests[0]["taskType"].as_str().map(String::from))
        }
    }
}

/// A provider stand-in: checks the path and key header as documented, answers with
/// [`stand_in_vector`] in the provider's response shape (OpenAI-style lists in reverse index order,
/// to prove placement by `index`), and with the provider's error body on a wrong key.
pub fn provider(
    protocol: Protocol,
    model: &'static str,
) -> impl Fn(&Request) -> Reply + Send + Sync {
    move |req: &Request| {
        let expected_path = match protocol {
            Protocol::OpenAi | Protocol::Voyage => "/v1/embeddings".to_owned(),
            Protocol::Cohere => "/v2/embed".to_owned(),
            Protocol::Gemini => format!("/v1beta/models/{model}:batchEmbedContents"),
        };
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, expected_path);
        let key_ok = match protocol {
            Protocol::Gemini => req.header("x-goog-api-key") == Some(STAND_IN_KEY),
            _ => req.header("authorization") == Some(&format!("Bearer {STAND_IN_KEY}")),
        };
        if !key_ok {
            let body = match protocol {
                Protocol::OpenAi => {
                    json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
                }
                Protocol::Voyage => json!({"detail": "Provided API key is invalid."}),
                Protocol::Cohere => json!({"message": "invalid api token"}),
                Protocol::Gemini => {
                    json!({"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}})
                }
            };
            return Reply::json(
                if protocol == Protocol::Gemini {
                    400
                } else {
                    401
                },
                &body,
            );
        }
        let body = req.json();
        let (texts, role) = request_texts(protocol, &body);
        let vectors: Vec<Vec<f32>> = texts
            .iter()
            .map(|t| stand_in_vector(t, role.as_deref()))
            .collect();
        let answer = match protocol {
            Protocol::OpenAi | Protocol::Voyage => {
                let data: Vec<Value> = vectors
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                    .collect();
                json!({"object": "list", "data": data, "model": model,
                       "usage": {"prompt_tokens": texts.len() * 3, "total_tokens": texts.len() * 3}})
            }
            Protocol::Cohere => {
                json!({"id": "abc", "embeddings": {"float": vectors}, "texts": texts,
                                        "meta": {"billed_units": {"input_tokens": texts.len() * 3}}})
            }
            Protocol::Gemini => {
                json!({"embeddings": vectors.iter().map(|v| json!({"values": v})).collect::<Vec<_>>()})
            }
        };
        Reply::json(200, &answer)
    }
}

/// `options` that reach a [`provider`] stand-in and fail fast: its key, short time-outs and
/// backoffs.
pub fn stand_in_options(options: RemoteOptions) -> RemoteOptions {
    RemoteOptions {
        api_key: Some(STAND_IN_KEY.into()),
        timeout: Duration::from_millis(1500),
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(40),
        ..options
    }
}

/// `n` distinct texts, not all ASCII.
pub fn stand_in_texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text number {i} ünï")).collect()
}
