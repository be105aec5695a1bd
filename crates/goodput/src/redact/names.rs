//! Which names are secret: the one rule for environment variables (`HF_TOKEN`),
//! flags (`--api-key`), assignments and query parameters (`api_key=`,
//! `?access_token=`) and quoted keys (`"token": "X"`), used by the redaction of any
//! text and by the command lines written to the report
//! (`drive::engine::command`).
//!
//! A name is split into words at `-` and `_`, case ignored. It is secret when one
//! of its words is one of [`SECRET_WORDS`] or ends with one of [`SECRET_ENDINGS`]
//! (`APIKEY`, `HFTOKEN`, `clientSecret`), unless the whole name is one of
//! [`NOT_SECRET`]. So `--api-key`, `DB_PASS`, `SERVICE_AUTH`, `GITHUB_PAT`,
//! `AWS_CREDENTIALS`, `SESSION_COOKIE` and `PRIVATE_PEM` are secret, and
//! `--max-num-batched-tokens` (`tokens` is not `token`), `--author`,
//! `--enable-prefix-caching` and `SESSION_ID` (`session` alone is not a secret
//! word) are not.

use std::sync::LazyLock;

use regex::Regex;

/// Words that make a name secret.
pub const SECRET_WORDS: [&str; 14] = [
    "key",
    "apikey",
    "token",
    "secret",
    "password",
    "passwd",
    "pass",
    "pwd",
    "auth",
    "authorization",
    "pat",
    "credential",
    "credentials",
    "cookie",
];

/// Endings that make a word secret, the word itself included (`APIKEY`,
/// `HFTOKEN`, `clientSecret`, `dbpassword`, `PRIVATE_PEM`).
pub const SECRET_ENDINGS: [&str; 6] = ["key", "token", "secret", "password", "passwd", "pem"];

/// Names the rule would take that hold no secret: the shell's working
/// directories and ssh-agent's socket (their values, paths, would otherwise be
/// redacted from every path in every output).
pub const NOT_SECRET: [&str; 3] = ["PWD", "OLDPWD", "SSH_AUTH_SOCK"];

/// Whether `name` (a variable, a flag without or with its dashes, a parameter)
/// is secret, by the rule of this module.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.trim_start_matches('-');
    if NOT_SECRET.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        return false;
    }
    name.split(['-', '_']).any(|w| {
        let w = w.to_ascii_lowercase();
        SECRET_WORDS.contains(&w.as_str()) || SECRET_ENDINGS.iter().any(|e| w.ends_with(e))
    })
}

/// Whether an environment variable holds a secret ([`is_secret_name`]).
pub fn is_secret_env(name: &str) -> bool {
    is_secret_name(name)
}

/// Whether a flag names a secret: it starts with `-` and its name is secret
/// (`--api-key`, `--hf-token`, `--db-pass`, `--auth`).
pub fn is_secret_flag(flag: &str) -> bool {
    flag.starts_with('-') && is_secret_name(flag)
}

/// A secret value in text: up to a space, quote, backslash (so an escape of JSON
/// or TOML text is never cut), separator, `&` or `#` (the next query parameter or
/// the fragment), or bracket.
pub const VALUE: &str = r#"[^\s"'`,;&#\\<>(){}\[\]]+"#;

/// A name the rule may take: word-aligned, one of its words secret. Every match is
/// checked with [`is_secret_name`] (which alone knows [`NOT_SECRET`]).
fn name_pattern() -> String {
    let word = format!(
        "(?:[a-z0-9]*(?:{})|{})",
        SECRET_ENDINGS.join("|"),
        SECRET_WORDS.join("|")
    );
    format!("(?:[a-z0-9]+[-_])*{word}(?:[-_][a-z0-9]+)*")
}

/// The patterns whose `value` group is a secret, when their `name` group (if any)
/// is a secret name.
pub static VALUED: LazyLock<[Regex; 4]> = LazyLock::new(|| {
    let re = |p: String| Regex::new(&p).expect("a valid static pattern");
    let name = name_pattern();
    [
        // The user information of a URL.
        re(r#"(?i)\b[a-z][a-z0-9+.-]*://(?P<value>[^/\s@"'\\<>?#]+)@"#.into()),
        // `--api-key X`, `--api-key=X`, `--hf-token X`: a flag, so a dash that starts
        // a word (not the one in `2928-token`); a value that is not itself a flag.
        re(format!(
            r#"(?i)(?:^|[\s"'(\[,])--?(?P<name>{name})(?:=|\s+)(?P<value>[^-\s"'`,;&#\\<>(){{}}\[\]]{VALUE_REST})"#,
            VALUE_REST = "[^\\s\"'`,;&#\\\\<>(){}\\[\\]]*"
        )),
        // `HF_TOKEN=X`, `api_key=X`, `?access_token=X&...`.
        re(format!(r"(?i)\b(?P<name>{name})=(?P<value>{VALUE})")),
        // `"token": "X"`, `'password': 'a phrase'`.
        re(format!(
            r#"(?i)["'](?P<name>{name})["']\s*:\s*["'](?P<value>[^"'\\\r\n]+)"#
        )),
    ]
});
