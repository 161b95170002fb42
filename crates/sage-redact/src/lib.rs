//! # sage-redact
//!
//! The one redaction rule of every HTTP client in sage-rs (embedders, paraphrasers, judges,
//! hub downloads): what may be printed, logged, cached or written into a result about a server.
//!
//! Keys and passwords reach this code in three ways: as a key the client holds, as `user:pass@`
//! inside a URL the user typed, and echoed back inside a server's error body (some servers repeat
//! the request, headers included). [`redact`] removes all three from any text; [`redact_url`] and
//! [`url_host`] are the forms of a URL that results and identities carry.
#![deny(missing_docs)]

/// `text` with the home folder ($HOME) written as `~`: a result file or report names a user's
/// own dataset or data folder without the account it lives under.
pub fn home_relative(text: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) => home_relative_to(text, &home),
        Err(_) => text.to_owned(),
    }
}

fn home_relative_to(text: &str, home: &str) -> String {
    let home = home.trim_end_matches('/');
    if home.is_empty() {
        text.to_owned()
    } else if text == home {
        "~".to_owned()
    } else {
        text.replace(&format!("{home}/"), "~/")
    }
}

/// Query parameters whose value is a credential (compared case-insensitively).
const SECRET_PARAMS: &[&str] = &[
    "key",
    "api_key",
    "apikey",
    "api-key",
    "token",
    "access_token",
    "auth",
    "password",
    "secret",
    "sig",
    "signature",
];

/// What stands in for a removed secret.
pub const REDACTED: &str = "***";

/// Most characters of a server's answer quoted in an error message.
pub const EXCERPT_CHARS: usize = 300;

/// `url` without the password of its `user:pass@` part and with secret query values replaced,
/// e.g. `http://alice:pw@host:8080/v1?key=abc` → `http://alice:***@host:8080/v1?key=***`.
/// Text that is not a URL comes back with the same two rules applied wherever they match.
pub fn redact_url(url: &str) -> String {
    let mut out = strip_userinfo_passwords(url);
    out = redact_query_values(&out);
    out
}

/// `host[:port]` of a URL, nothing else (no scheme, credentials, path or query): what results
/// record about a server. Empty when `url` has no host.
pub fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_owned()
}

/// `text` with every one of `secrets` (of at least 4 characters) removed, with any copy of one
/// in another case or cut short (any run of [`SECRET_RUN`] of its characters), URL passwords and
/// secret query values removed, `Bearer` tokens hidden, control characters escaped (so a server
/// cannot clear the terminal or print lines that look like sage's own), and cut to
/// [`EXCERPT_CHARS`] characters: the form in which any server answer or request detail may appear
/// in an error or a log.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = redact_secret_runs(text, secrets);
    out = redact_url(&out);
    out = redact_bearer(&out);
    excerpt(&escape_controls(&out), EXCERPT_CHARS)
}

/// Characters of a secret that, found in this order anywhere (in any case), are removed: long
/// enough that no word of an error message matches a random key by chance, short enough that a
/// key echoed with a character dropped or added still goes.
pub const SECRET_RUN: usize = 8;

/// `text` with every run of at least [`SECRET_RUN`] characters (or a whole secret shorter than
/// that, of at least 4) that also occurs in one of `secrets`, compared case-insensitively,
/// replaced by [`REDACTED`].
fn redact_secret_runs(text: &str, secrets: &[&str]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let folded: Vec<char> = chars.iter().map(|c| c.to_ascii_lowercase()).collect();
    let mut hidden = vec![false; chars.len()];
    for secret in secrets {
        let secret: Vec<char> = secret.chars().map(|c| c.to_ascii_lowercase()).collect();
        if secret.len() < 4 {
            continue;
        }
        let run = secret.len().min(SECRET_RUN);
        let windows: std::collections::HashSet<&[char]> = secret.windows(run).collect();
        for (start, window) in folded.windows(run).enumerate() {
            if windows.contains(window) {
                hidden[start..start + run].fill(true);
            }
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut in_secret = false;
    for (c, hide) in chars.into_iter().zip(hidden) {
        if hide && !in_secret {
            out.push_str(REDACTED);
        } else if !hide {
            out.push(c);
        }
        in_secret = hide;
    }
    out
}

/// `text` with control characters (C0, DEL, C1) and the invisible bidirectional and zero-width
/// format characters written as escapes (`\n`, `\r`, `\t`, `\u{1b}`): what a server sent is shown,
/// never obeyed by the terminal.
pub fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') =>
            {
                out.push_str(&c.escape_unicode().to_string())
            }
            c => out.push(c),
        }
    }
    out
}

/// The first `max` characters of `text`, with `…` when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        head + "…"
    } else {
        head
    }
}

/// `scheme://user:pass@` → `scheme://user:***@` wherever it occurs in `text`.
fn strip_userinfo_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace() || c == '"')
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match authority.rsplit_once('@') {
            Some((userinfo, host)) => {
                let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
                if userinfo.contains(':') {
                    out.push_str(&format!("{user}:{REDACTED}@{host}"));
                } else {
                    // a lone userinfo is a token as often as a user name (https://TOKEN@host)
                    out.push_str(&format!("{REDACTED}@{host}"));
                }
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

/// `name=value` with a secret `name` after `?` or `&` → `name=***`.
fn redact_query_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(['?', '&']) {
        let (head, tail) = rest.split_at(pos + 1);
        out.push_str(head);
        let name_end = tail.find('=').unwrap_or(0);
        let name = &tail[..name_end];
        let is_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
        if is_name && SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name)) {
            let value_len = tail[name_end + 1..]
                .find(|c: char| matches!(c, '&' | '#' | '"' | '\'') || c.is_whitespace())
                .unwrap_or(tail.len() - name_end - 1);
            out.push_str(name);
            out.push('=');
            out.push_str(REDACTED);
            rest = &tail[name_end + 1 + value_len..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// `Bearer <token>` → `Bearer ***` (an echoed Authorization header).
fn redact_bearer(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("Bearer ") {
        let (head, tail) = rest.split_at(pos + "Bearer ".len());
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ','))
            .unwrap_or(tail.len());
        out.push_str(REDACTED);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_home_folder_is_written_as_a_tilde() {
        let home_relative = super::home_relative_to;
        assert_eq!(
            home_relative("/home/ana/data/tickets.csv", "/home/ana/"),
            "~/data/tickets.csv"
        );
        assert_eq!(home_relative("/home/ana", "/home/ana"), "~");
        assert_eq!(
            home_relative("/home/anabel/x", "/home/ana"),
            "/home/anabel/x"
        );
        assert_eq!(home_relative("data/x.csv", ""), "data/x.csv");
    }

    use super::*;

    #[test]
    fn url_passwords_and_secret_parameters_are_removed() {
        assert_eq!(
            redact_url("http://alice:s3cret@127.0.0.1:8080/v1?key=abc&x=1"),
            "http://alice:***@127.0.0.1:8080/v1?key=***&x=1"
        );
        assert_eq!(redact_url("https://tok3n@host/v1"), "https://***@host/v1");
        assert_eq!(
            redact_url("http://host/v1?model=a"),
            "http://host/v1?model=a"
        );
        assert_eq!(
            redact_url("see https://u:p@a/x and https://v:q@b/y?API_KEY=zz"),
            "see https://u:***@a/x and https://v:***@b/y?API_KEY=***"
        );
    }

    #[test]
    fn host_is_all_that_is_kept() {
        assert_eq!(
            url_host("http://u:p@127.0.0.1:7997/v1?key=a"),
            "127.0.0.1:7997"
        );
        assert_eq!(url_host("https://api.openai.com/v1"), "api.openai.com");
        assert_eq!(url_host("localhost:80"), "localhost:80");
    }

    #[test]
    fn server_bodies_lose_keys_tokens_and_length() {
        let body = format!(
            "{{\"error\":\"bad key sk-live-123456\",\"echo\":\"Authorization: Bearer sk-live-123456\",\"pad\":\"{}\"}}",
            "x".repeat(500)
        );
        let shown = redact(&body, &["sk-live-123456"]);
        assert!(!shown.contains("sk-live"), "{shown}");
        assert!(shown.contains("Bearer ***"), "{shown}");
        assert!(shown.chars().count() <= EXCERPT_CHARS + 1);
        assert!(shown.ends_with('…'));
        // short secrets are not blanked everywhere (a 1-letter key would shred the message)
        assert_eq!(redact("abc", &["a"]), "abc");
    }

    #[test]
    fn near_copies_of_a_key_go_too() {
        let key = "sk-test-0123456789";
        for echoed in [
            "sk-test-012345678",
            "SK-TEST-0123456789",
            "k-test-0123456789",
            "Sk-TeSt-01234",
        ] {
            let shown = redact(&format!("key {echoed} refused"), &[key]);
            assert_eq!(shown, "key *** refused", "{echoed}");
        }
        // runs shorter than SECRET_RUN stay: "sk-test" alone is not the key
        assert_eq!(redact("sk-test 0123", &[key]), "sk-test 0123");
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        let shown = redact("bad\u{1b}[2J\r\nsage: note: ok\u{7}\u{202e}", &[]);
        assert_eq!(shown, "bad\\u{1b}[2J\\r\\nsage: note: ok\\u{7}\\u{202e}");
        assert!(!shown.chars().any(char::is_control));
    }
}
