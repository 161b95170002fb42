//! The HTTP side of a remote embedder: bounded concurrency, rate ceilings, retries.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use sage_core::Role;
use sage_redact::{redact, redact_url, url_host};

use super::answer::{self, Answer};
use super::protocol::Protocol;
use super::{RemoteOptions, RemoteSpec};
use crate::error::{RemoteError, Result};

/// Most bytes of an error answer read: enough for any provider's error object.
const MAX_ERROR_BYTES: u64 = 64 << 10;

/// Waits of at least this long are announced on stderr (what for, and until when).
const ANNOUNCED_WAIT: Duration = Duration::from_secs(5);

/// Requests sent and retried so far.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ClientStats {
    pub requests: u64,
    pub retries: u64,
}

pub(super) struct Client {
    protocol: Protocol,
    model: String,
    url: String,
    host: String,
    key: Option<String>,
    /// Everything that must never be shown: the key and a URL password.
    secrets: Vec<String>,
    dimensions: Option<usize>,
    agent: ureq::Agent,
    concurrency: usize,
    max_retries: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    seed: u64,
    /// The longest wait between two attempts, whatever a `Retry-After` asks for.
    longest_wait: Duration,
    limiter: RateLimiter,
    requests: AtomicU64,
    retries: AtomicU64,
}

/// One failed attempt: whether another may succeed, how long the server asked us to wait.
struct Failure {
    retryable: bool,
    retry_after: Option<Duration>,
    message: String,
}

impl Failure {
    /// A failure that another attempt cannot fix.
    fn fatal(message: String) -> Failure {
        Failure {
            retryable: false,
            retry_after: None,
            message,
        }
    }
}

impl Client {
    pub(super) fn new(spec: &RemoteSpec, options: &RemoteOptions) -> Client {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(options.timeout))
            .http_status_as_error(false)
            // a redirect would be followed as a GET without the body, possibly to another host
            // and without the key, and whatever answered would be taken for the embeddings
            .max_redirects(0)
            .build()
            .into();
        let mut secrets: Vec<String> = options.api_key.iter().cloned().collect();
        if let Some(password) = url_password(&spec.base_url) {
            secrets.push(password);
        }
        Client {
            protocol: spec.protocol,
            model: spec.model.clone(),
            url: spec.protocol.url(&spec.base_url, &spec.model),
            host: url_host(&spec.base_url),
            key: options.api_key.clone(),
            secrets,
            dimensions: options.dimensions,
            agent,
            concurrency: options.concurrency.max(1),
            max_retries: options.max_retries,
            initial_backoff: options.initial_backoff,
            max_backoff: options.max_backoff,
            seed: options.seed,
            longest_wait: longest_wait(options),
            limiter: RateLimiter::new(options.requests_per_minute, options.tokens_per_minute),
            requests: AtomicU64::new(0),
            retries: AtomicU64::new(0),
        }
    }

    pub(super) fn stats(&self) -> ClientStats {
        ClientStats {
            requests: self.requests.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
        }
    }

    fn error(&self, message: String) -> RemoteError {
        RemoteError::Remote {
            provider: format!("{} at {}", self.protocol.name(), self.host),
            message: self.shown(&message),
        }
    }

    /// `text` as it may be shown: through the one redaction rule, with this client's secrets.
    fn shown(&self, text: &str) -> String {
        redact(
            text,
            &self.secrets.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    }

    /// Sends every batch (`(start, end)` ranges of `texts`), at most `concurrency` at once, and
    /// hands each answer to `deliver` on this thread as it arrives, with the batch's estimated
    /// tokens. After the first error no new batch starts; answers already on their way are
    /// still delivered, then the error is returned.
    pub(super) fn run(
        &self,
        texts: &[&str],
        tokens: &[u64],
        batches: &[(usize, usize)],
        role: Role,
        width: &AtomicUsize,
        deliver: &mut dyn FnMut(usize, Answer, u64) -> Result<()>,
    ) -> Result<()> {
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let mut first_error: Option<RemoteError> = None;
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel::<(usize, Result<Answer>)>();
            for _ in 0..self.concurrency.min(batches.len()) {
                let tx = tx.clone();
                let (next, stop) = (&next, &stop);
                scope.spawn(move || loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let b = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(start, end)) = batches.get(b) else {
                        break;
                    };
                    let estimate: u64 = tokens[start..end].iter().sum();
                    let answer = self.request(&texts[start..end], estimate, role, width, b as u64);
                    if answer.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if tx.send((b, answer)).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (b, answer) in rx {
                let (start, end) = batches[b];
                let delivered =
                    answer.and_then(|a| deliver(start, a, tokens[start..end].iter().sum()));
                if let Err(e) = delivered {
                    stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(e);
                }
            }
        });
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One batch, retried until it gives a valid answer or the retries run out. `width` is the
    /// width answers have had so far (0: none yet), which bounds what an answer may hold.
    fn request(
        &self,
        texts: &[&str],
        estimate: u64,
        role: Role,
        width: &AtomicUsize,
        batch: u64,
    ) -> Result<Answer> {
        let body = self
            .protocol
            .body(&self.model, texts, role, self.dimensions)
            .to_string();
        let mut attempt = 0u32;
        loop {
            self.limiter.acquire(estimate);
            self.requests.fetch_add(1, Ordering::Relaxed);
            let known = match width.load(Ordering::Relaxed) {
                0 => self.dimensions,
                w => Some(w),
            };
            let failure = match self.attempt(&body, texts.len(), known) {
                Ok(answer) => return Ok(answer),
                Err(f) => f,
            };
            if !failure.retryable || attempt >= self.max_retries {
                let tries = match (failure.retryable, attempt) {
                    (false, _) => String::new(),
                    (true, 0) => " (after 1 attempt)".to_owned(),
                    (true, n) => format!(" (after {} attempts)", n + 1),
                };
                return Err(self.error(format!("{}{tries}", failure.message)));
            }
            if let Some(asked) = failure.retry_after.filter(|r| *r > self.longest_wait) {
                return Err(self.error(format!(
                    "the server asks to wait {} s before trying again (Retry-After), longer than \
                     this run waits between attempts ({} s: the longer of --request-timeout and \
                     the longest backoff); nothing more was sent. Its answer: {}",
                    asked.as_secs(),
                    self.longest_wait.as_secs(),
                    failure.message,
                )));
            }
            self.retries.fetch_add(1, Ordering::Relaxed);
            let wait = self.backoff(batch, attempt, failure.retry_after);
            if wait >= ANNOUNCED_WAIT {
                eprintln!(
                    "sage: {} at {}: {}; waiting {} s (until {}) before attempt {} of {}",
                    self.protocol.name(),
                    self.host,
                    self.shown(&failure.message),
                    wait.as_secs(),
                    clock_after(wait),
                    attempt + 2,
                    self.max_retries + 1
                );
            }
            std::thread::sleep(wait);
            attempt += 1;
        }
    }

    fn attempt(
        &self,
        body: &str,
        count: usize,
        width: Option<usize>,
    ) -> std::result::Result<Answer, Failure> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json");
        if let Some(key) = &self.key {
            let (name, value) = self.protocol.key_header(key);
            request = request.header(name, &value);
        }
        let transport = |e: ureq::Error| Failure {
            // time-outs, resets and refused connections are worth another try
            retryable: true,
            retry_after: None,
            message: format!("request failed: {e}"),
        };
        let mut response = request.send(body.as_bytes()).map_err(transport)?;
        let status = response.status().as_u16();
        let headers = response.headers();
        let retry_after = retry_after(headers);
        if (300..400).contains(&status) {
            let location = headers
                .get("location")
                .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned())
                .unwrap_or_else(|| "nowhere (no Location)".into());
            return Err(Failure::fatal(format!(
                "HTTP {status}: {} redirects the request to {}; an embedding request is never \
                 re-sent elsewhere: if the server moved, name its new address in the spec",
                self.url_shown(),
                redact_url(&location)
            )));
        }
        if (200..300).contains(&status) {
            let cap = answer::byte_cap(count, width);
            let announced = headers
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let encoded = headers.get("content-encoding").is_some();
            if let Some(length) = announced.filter(|&l| l > cap && !encoded) {
                return Err(Failure::fatal(format!(
                    "HTTP {status} announces an answer of {length} bytes, more than the {cap} \
                     that {count} vectors can take; it was not read"
                )));
            }
            return answer::read(self.protocol, response.body_mut().as_reader(), count, width)
                .map_err(|refused| Failure {
                    retryable: !refused.oversized,
                    retry_after: None,
                    message: format!("HTTP {status} with a malformed answer: {}", refused.message),
                });
        }
        let mut text = Vec::new();
        response
            .body_mut()
            .as_reader()
            .take(MAX_ERROR_BYTES)
            .read_to_end(&mut text)
            .map_err(|e| Failure {
                retryable: true,
                retry_after,
                message: format!("HTTP {status}, answer cut off: {e}"),
            })?;
        let text = String::from_utf8_lossy(&text);
        let reason = self
            .protocol
            .error_message(&text)
            .unwrap_or_else(|| text.into_owned());
        // sage's own words around it are never cut
        let reason = sage_redact::excerpt(&reason, 200);
        Err(Failure {
            retryable: matches!(status, 408 | 409 | 425 | 429) || status >= 500,
            retry_after,
            message: format!("HTTP {status}: {reason}"),
        })
    }

    /// The request URL as it may be shown.
    fn url_shown(&self) -> String {
        redact_url(&self.url)
    }

    /// Exponential backoff with equal jitter, seeded by batch and attempt (so a re-run waits the
    /// same), and never shorter than what the server asked for.
    fn backoff(&self, batch: u64, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let ceiling = self
            .initial_backoff
            .saturating_mul(1u32 << attempt.min(20))
            .min(self.max_backoff);
        let unit = (splitmix64(self.seed ^ batch.rotate_left(20) ^ u64::from(attempt)) >> 11)
            as f64
            / (1u64 << 53) as f64;
        let jittered = ceiling.mul_f64(0.5 + 0.5 * unit);
        retry_after.map_or(jittered, |r| r.max(jittered))
    }
}

/// The longest a run waits between two attempts: the longer of one request's time limit and
/// the longest backoff. A server asking for more (`Retry-After`) gets an error at once, not hours
/// of silent sleep.
fn longest_wait(options: &RemoteOptions) -> Duration {
    options.timeout.max(options.max_backoff)
}

/// The UTC wall-clock time `wait` from now, `HH:MM:SS UTC`.
fn clock_after(wait: Duration) -> String {
    let at = std::time::SystemTime::now() + wait;
    let secs = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let day = secs % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        day / 3600,
        day % 3600 / 60,
        day % 60
    )
}

/// `Retry-After` in seconds (or OpenAI's `retry-after-ms`); HTTP dates are left to the backoff.
fn retry_after(headers: &ureq::http::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms.min(1e12) / 1e3));
    }
    let secs = header("retry-after")?.trim().parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)))
}

/// The password of a `user:pass@` URL.
fn url_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    Some(
        userinfo
            .split_once(':')
            .map_or(userinfo, |(_, p)| p)
            .to_owned(),
    )
    .filter(|p| !p.is_empty())
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Requests-per-minute and tokens-per-minute ceilings as two token buckets that refill
/// continuously; a request larger than a whole minute's tokens waits for a full bucket.
struct RateLimiter {
    rpm: Option<f64>,
    tpm: Option<f64>,
    state: Mutex<(f64, f64, Instant)>,
}

impl RateLimiter {
    fn new(rpm: Option<u32>, tpm: Option<u64>) -> RateLimiter {
        let rpm = rpm.map(f64::from).filter(|r| *r > 0.0);
        let tpm = tpm.map(|t| t as f64).filter(|t| *t > 0.0);
        RateLimiter {
            state: Mutex::new((rpm.unwrap_or(0.0), tpm.unwrap_or(0.0), Instant::now())),
            rpm,
            tpm,
        }
    }

    fn acquire(&self, tokens: u64) {
        if self.rpm.is_none() && self.tpm.is_none() {
            return;
        }
        loop {
            let wait = {
                let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let now = Instant::now();
                let minutes = now.duration_since(s.2).as_secs_f64() / 60.0;
                s.2 = now;
                if let Some(r) = self.rpm {
                    s.0 = (s.0 + minutes * r).min(r);
                }
                if let Some(t) = self.tpm {
                    s.1 = (s.1 + minutes * t).min(t);
                }
                let want_tokens = self.tpm.map_or(0.0, |t| (tokens as f64).min(t));
                let request_short = self.rpm.map_or(0.0, |r| (1.0 - s.0).max(0.0) / r);
                let tokens_short = self.tpm.map_or(0.0, |t| (want_tokens - s.1).max(0.0) / t);
                let short = request_short.max(tokens_short);
                if short <= 0.0 {
                    s.0 -= 1.0;
                    s.1 -= want_tokens;
                    return;
                }
                Duration::from_secs_f64(short * 60.0)
            };
            std::thread::sleep(wait.max(Duration::from_millis(1)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_seeded_and_honours_retry_after() {
        let spec = RemoteSpec::parse("openai:m@http://127.0.0.1:1/v1").unwrap();
        let c = Client::new(&spec, &RemoteOptions::default());
        let a: Vec<Duration> = (0..8).map(|n| c.backoff(3, n, None)).collect();
        let b: Vec<Duration> = (0..8).map(|n| c.backoff(3, n, None)).collect();
        assert_eq!(a, b, "same seed, same waits");
        assert!(a[0] >= Duration::from_millis(250) && a[0] <= Duration::from_millis(500));
        assert!(a[7] <= Duration::from_secs(60));
        assert!(a[4] > a[0]);
        assert_eq!(
            c.backoff(3, 0, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
    }

    #[test]
    fn url_passwords_are_found() {
        assert_eq!(url_password("http://u:pw@h/v1").as_deref(), Some("pw"));
        assert_eq!(url_password("https://tok@h").as_deref(), Some("tok"));
        assert_eq!(url_password("http://h/v1?x=@"), None);
    }

    #[test]
    fn the_token_ceiling_spaces_requests() {
        // 600 tokens a minute = 10 a second: three requests of 5 tokens after a 10-token burst
        // need about a second more
        let limiter = RateLimiter::new(None, Some(600));
        limiter.acquire(600);
        let start = Instant::now();
        limiter.acquire(5);
        limiter.acquire(5);
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(900), "{waited:?}");
    }
}
