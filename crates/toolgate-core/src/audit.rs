//! The audit log of worker runs: one JSON line per event (run start and end, every tool call
//! with its decision and who made it), appended to a file and flushed to disk (`fsync`) when the
//! run ends. What is written is redacted first:
//!
//! - every `deny_output` pattern of the worker's graph (block and redact patterns alike: output
//!   a guardrail keeps from the model is kept from the log too; the plan lists them,
//!   `WorkerPlan::redaction_patterns`), plus patterns the caller adds;
//! - the value of every environment variable whose name contains `KEY`, `SECRET`, `TOKEN` or
//!   `PASSWORD` (any case), when it is at least [`MIN_SECRET_VALUE_BYTES`] long — shorter values
//!   (`1`, `true`) would redact ordinary words.
//!
//! Every string of an event is redacted, at any depth (inputs, errors, reasons); keys are not.

use std::borrow::Cow;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::REDACTED;
use crate::error::{Error, Result};
use crate::limits::{
    MAX_AUDIT_PATTERNS, MAX_REGEX_BYTES, MAX_REGEX_COMPILED_BYTES, MAX_REGEX_DFA_BYTES,
    MIN_SECRET_VALUE_BYTES,
};

/// Parts of an environment variable's name that mark its value as a secret.
pub const SECRET_NAME_PARTS: [&str; 4] = ["KEY", "SECRET", "TOKEN", "PASSWORD"];

/// `audit` in a worker file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// The JSON Lines file runs of this worker append to, relative to the worker file
    /// (`./.toolgate/audit.jsonl`).
    pub file: PathBuf,
}

/// Replaces secrets in text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    patterns: Vec<Regex>,
    secrets: Vec<String>,
}

impl Redactor {
    /// Compiles `patterns` (Rust `regex` syntax) and takes the secret values of `env`.
    pub fn new<K: AsRef<str>, V: AsRef<str>>(
        patterns: &[String],
        env: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self> {
        Ok(Self {
            patterns: compile(patterns)?,
            secrets: secret_values(env),
        })
    }

    /// `text` with every secret and every pattern match replaced by `[REDACTED]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        for pattern in &self.patterns {
            if let Cow::Owned(replaced) = pattern.replace_all(&out, regex::NoExpand(REDACTED)) {
                out = Cow::Owned(replaced);
            }
        }
        out
    }

    /// Redacts every string in `value`, at any depth.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact(text) {
                    *text = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_value(item)),
            Value::Object(map) => map.values_mut().for_each(|item| self.redact_value(item)),
            _ => {}
        }
    }
}

fn compile(patterns: &[String]) -> Result<Vec<Regex>> {
    if patterns.len() > MAX_AUDIT_PATTERNS {
        return Err(Error::ConfigInvalid(format!(
            "the audit log takes at most {MAX_AUDIT_PATTERNS} redaction patterns, not {}",
            patterns.len()
        )));
    }
    patterns
        .iter()
        .enumerate()
        .map(|(index, pattern)| {
            let place = format!("audit redaction pattern {index}");
            if pattern.len() > MAX_REGEX_BYTES {
                return Err(Error::ConfigInvalid(format!(
                    "{place} is {} bytes; at most {MAX_REGEX_BYTES} are accepted",
                    pattern.len()
                )));
            }
            let regex = RegexBuilder::new(pattern)
                .size_limit(MAX_REGEX_COMPILED_BYTES)
                .dfa_size_limit(MAX_REGEX_DFA_BYTES)
                .build()
                .map_err(|err| Error::ConfigInvalid(format!("{place} '{pattern}' is not a valid regular expression: {err}")))?;
            if regex.is_match("") {
                return Err(Error::ConfigInvalid(format!(
                    "{place} '{pattern}' matches the empty string, so it would redact everything; make it match only secrets"
                )));
            }
            Ok(regex)
        })
        .collect()
}

/// The values of secret-named variables, longest first (a secret containing another is
/// replaced whole).
fn secret_values<K: AsRef<str>, V: AsRef<str>>(
    env: impl IntoIterator<Item = (K, V)>,
) -> Vec<String> {
    let mut secrets: Vec<String> = env
        .into_iter()
        .filter(|(name, value)| {
            let name = name.as_ref().to_ascii_uppercase();
            SECRET_NAME_PARTS.iter().any(|part| name.contains(part))
                && value.as_ref().len() >= MIN_SECRET_VALUE_BYTES
        })
        .map(|(_, value)| value.as_ref().to_string())
        .collect();
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    secrets.dedup();
    secrets
}

/// An audit log file and its redaction patterns.
#[derive(Debug, Clone)]
pub struct AuditLog {
    file: PathBuf,
    patterns: Vec<Regex>,
}

impl AuditLog {
    /// A log appending to `file` (absolute), redacting `patterns`.
    pub fn new(file: &Path, patterns: &[String]) -> Result<Self> {
        if !file.is_absolute() {
            return Err(Error::ConfigInvalid(format!(
                "the audit log '{}' must be an absolute path",
                file.display()
            )));
        }
        Ok(Self {
            file: file.to_path_buf(),
            patterns: compile(patterns)?,
        })
    }

    /// The file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Appends `events` as redacted JSON lines in one write, then flushes the file to disk.
    /// The secrets of the environment are read now, so that a key set during the run is
    /// redacted too. Creates the file (mode 0600) and its directory when they do not exist.
    pub fn append(&self, events: &[Value]) -> Result<()> {
        let redactor = Redactor {
            patterns: self.patterns.clone(),
            secrets: secret_values(std::env::vars_os().filter_map(|(name, value)| {
                Some((name.into_string().ok()?, value.into_string().ok()?))
            })),
        };
        let mut buffer = String::new();
        for event in events {
            let mut event = event.clone();
            redactor.redact_value(&mut event);
            buffer.push_str(&event.to_string());
            buffer.push('\n');
        }
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|err| Error::io("creating the audit log directory", dir, err))?;
        }
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&self.file)
            .map_err(|err| Error::io("opening the audit log", &self.file, err))?;
        file.write_all(buffer.as_bytes())
            .map_err(|err| Error::io("appending to the audit log", &self.file, err))?;
        file.sync_all()
            .map_err(|err| Error::io("flushing the audit log", &self.file, err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns_and_secret_variables_are_redacted_at_any_depth() {
        let env = [
            ("OPENAI_API_KEY", "sk-live-abcdef123456"),
            ("db_password", "hunter22"),
            ("GITHUB_TOKEN", "ghp_short"),
            ("TOKENIZERS_PARALLELISM", "false"),
            ("HOME", "/home/user/secret-place"),
        ];
        let redactor = Redactor::new(&["AKIA[0-9A-Z]{16}".to_string()], env).unwrap();
        let mut event = json!({
            "input": { "command": "curl -H 'Authorization: sk-live-abcdef123456' x" },
            "list": ["hunter22", "AKIAABCDEFGHIJKLMNOP", "ghp_short", "false"],
            "home": "/home/user/secret-place",
            "n": 5
        });
        redactor.redact_value(&mut event);
        let text = event.to_string();
        for secret in [
            "sk-live-abcdef123456",
            "hunter22",
            "AKIAABCDEFGHIJKLMNOP",
            "ghp_short",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("Authorization: [REDACTED]"), "{text}");
        // short values and variables whose names mark no secret stay
        assert!(text.contains("\"false\""), "{text}");
        assert!(text.contains("/home/user/secret-place"), "{text}");
        assert_eq!(event["n"], json!(5));
    }

    #[test]
    fn bad_patterns_are_refused() {
        let none: [(&str, &str); 0] = [];
        for bad in ["(", "a*", &"a".repeat(MAX_REGEX_BYTES + 1)] {
            let err = Redactor::new(&[bad.to_string()], none).unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID", "{bad}");
        }
        assert!(AuditLog::new(Path::new("relative.jsonl"), &[]).is_err());
    }

    #[test]
    fn a_worker_file_names_its_log_relative_to_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        let options = crate::worker::LoadOptions::default();
        let worker = crate::worker::parse_worker(
            "name: w\naudit: { file: ./.toolgate/audit.jsonl }\n",
            &path,
            &options,
        )
        .unwrap();
        assert_eq!(
            worker.audit_file,
            Some(dir.path().join(".toolgate/audit.jsonl"))
        );
        let err = crate::worker::parse_worker("name: w\naudit: { path: x }\n", &path, &options)
            .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("w.yaml:2"), "{err}");
    }

    #[test]
    fn events_are_appended_as_lines() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("logs/audit.jsonl");
        let log = AuditLog::new(&file, &["sk-[a-z]+".to_string()]).unwrap();
        log.append(&[
            json!({ "event": "run-start" }),
            json!({ "event": "tool-call", "input": "sk-abc" }),
        ])
        .unwrap();
        log.append(&[json!({ "event": "run-end" })]).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1]["input"], json!("[REDACTED]"));
        assert_eq!(lines[2]["event"], json!("run-end"));
    }
}
