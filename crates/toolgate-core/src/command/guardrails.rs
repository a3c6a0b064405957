//! Regex guardrails of `cli_execute`: `deny_commands` refuse a command line before it runs;
//! `deny_output` block or redact what it printed. Patterns are compiled once, when the tool is
//! built; an invalid pattern, or one that matches the empty string (it would match everything),
//! is a `CONFIG_INVALID` error, never skipped.

use regex::bytes::{NoExpand, Regex as BytesRegex};
use regex::Regex;

use super::config::{Guardrails, OutputAction};
use crate::error::{Error, Result};

/// What replaces a redacted match.
pub const REDACTED: &str = "[REDACTED]";

/// Compiled `deny_commands`.
#[derive(Debug, Clone, Default)]
pub(crate) struct CommandGuardrails {
    deny: Vec<(Regex, String)>,
}

/// Compiled `deny_output`: block patterns are checked first, on the raw output; then redact
/// patterns replace their matches.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutputGuardrails {
    block: Vec<BytesRegex>,
    redact: Vec<BytesRegex>,
}

/// Compiles both lists.
pub(crate) fn compile(config: &Guardrails) -> Result<(CommandGuardrails, OutputGuardrails)> {
    let mut commands = CommandGuardrails::default();
    for (index, entry) in config.deny_commands.iter().enumerate() {
        let place = format!("guardrails.deny_commands[{index}].pattern");
        let regex =
            Regex::new(&entry.pattern).map_err(|err| invalid(&place, &entry.pattern, &err))?;
        refuse_empty_match(&place, &entry.pattern, regex.is_match(""))?;
        let message = entry.message.clone().unwrap_or_else(|| {
            format!(
                "the command matches the deny_commands pattern '{}'",
                entry.pattern
            )
        });
        commands.deny.push((regex, message));
    }
    let mut output = OutputGuardrails::default();
    for (index, entry) in config.deny_output.iter().enumerate() {
        let place = format!("guardrails.deny_output[{index}].pattern");
        let regex =
            BytesRegex::new(&entry.pattern).map_err(|err| invalid(&place, &entry.pattern, &err))?;
        refuse_empty_match(&place, &entry.pattern, regex.is_match(b""))?;
        match entry.action {
            OutputAction::Block => output.block.push(regex),
            OutputAction::Redact => output.redact.push(regex),
        }
    }
    Ok((commands, output))
}

fn invalid(place: &str, pattern: &str, err: &regex::Error) -> Error {
    Error::ConfigInvalid(format!(
        "{place} '{pattern}' is not a valid regular expression: {err}; fix the pattern (Rust regex syntax)"
    ))
}

fn refuse_empty_match(place: &str, pattern: &str, matches_empty: bool) -> Result<()> {
    if matches_empty {
        return Err(Error::ConfigInvalid(format!(
            "{place} '{pattern}' matches the empty string, so it would match everything; make it match something"
        )));
    }
    Ok(())
}

impl CommandGuardrails {
    /// Refuses the command line `binary + " " + args` with `GUARDRAIL_BLOCKED` and the
    /// configured message when a pattern matches.
    pub fn check(&self, binary: &str, args: &[String]) -> Result<()> {
        if self.deny.is_empty() {
            return Ok(());
        }
        let line = std::iter::once(binary)
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        match self.deny.iter().find(|(regex, _)| regex.is_match(&line)) {
            Some((_, message)) => Err(Error::GuardrailBlocked(message.clone())),
            None => Ok(()),
        }
    }
}

impl OutputGuardrails {
    pub fn is_empty(&self) -> bool {
        self.block.is_empty() && self.redact.is_empty()
    }

    /// Fails with `OUTPUT_BLOCKED` when a block pattern matches either stream (the output is
    /// not returned), else returns both streams with every redact match replaced.
    pub fn apply(&self, stdout: Vec<u8>, stderr: Vec<u8>) -> Result<(Vec<u8>, Vec<u8>)> {
        self.check_blocked(&stdout, &stderr)?;
        Ok((self.redact_all(stdout), self.redact_all(stderr)))
    }

    /// [`apply`](Self::apply) for several sets at once (a tool's own and its calling workers'):
    /// every block pattern is checked on the raw output first, then every redaction applies.
    pub fn apply_all(
        sets: &[std::sync::Arc<OutputGuardrails>],
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    ) -> Result<(Vec<u8>, Vec<u8>)> {
        for set in sets {
            set.check_blocked(&stdout, &stderr)?;
        }
        let (mut stdout, mut stderr) = (stdout, stderr);
        for set in sets {
            stdout = set.redact_all(stdout);
            stderr = set.redact_all(stderr);
        }
        Ok((stdout, stderr))
    }

    fn check_blocked(&self, stdout: &[u8], stderr: &[u8]) -> Result<()> {
        for regex in &self.block {
            for (name, stream) in [("stdout", stdout), ("stderr", stderr)] {
                if regex.is_match(stream) {
                    return Err(Error::OutputBlocked(format!(
                        "the command ran, but its {name} matches the deny_output pattern '{}', so the output is withheld",
                        regex.as_str()
                    )));
                }
            }
        }
        Ok(())
    }

    fn redact_all(&self, mut stream: Vec<u8>) -> Vec<u8> {
        for regex in &self.redact {
            if regex.is_match(&stream) {
                stream = regex
                    .replace_all(&stream, NoExpand(REDACTED.as_bytes()))
                    .into_owned();
            }
        }
        stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::config::{DenyCommand, DenyOutput};

    fn guardrails(
        commands: &[(&str, Option<&str>)],
        output: &[(&str, OutputAction)],
    ) -> Guardrails {
        Guardrails {
            deny_commands: commands
                .iter()
                .map(|(pattern, message)| DenyCommand {
                    pattern: pattern.to_string(),
                    message: message.map(str::to_string),
                })
                .collect(),
            deny_output: output
                .iter()
                .map(|(pattern, action)| DenyOutput {
                    pattern: pattern.to_string(),
                    action: *action,
                })
                .collect(),
        }
    }

    #[test]
    fn deny_commands_match_the_joined_command_line() {
        let (commands, _) = compile(&guardrails(
            &[
                (r"^git push.*--force", Some("no force pushes")),
                (r"rm -rf", None),
            ],
            &[],
        ))
        .unwrap();
        let err = commands
            .check("git", &["push".into(), "origin".into(), "--force".into()])
            .unwrap_err();
        assert_eq!(err.code(), "GUARDRAIL_BLOCKED");
        assert_eq!(err.to_string(), "no force pushes");
        let err = commands
            .check("rm", &["-rf".into(), "x".into()])
            .unwrap_err();
        assert!(err.to_string().contains("rm -rf"), "{err}");
        commands
            .check("git", &["push".into(), "origin".into()])
            .unwrap();
    }

    #[test]
    fn block_is_checked_before_redact_and_on_the_raw_output() {
        let (_, output) = compile(&guardrails(
            &[],
            &[
                ("sk-[A-Za-z0-9]{8,}", OutputAction::Redact),
                ("BEGIN [A-Z ]*PRIVATE KEY", OutputAction::Block),
            ],
        ))
        .unwrap();
        let (out, err) = output
            .apply(
                b"key sk-abcdefgh123 ok $1".to_vec(),
                b"sk-zzzzzzzzz".to_vec(),
            )
            .unwrap();
        assert_eq!(out, b"key [REDACTED] ok $1");
        assert_eq!(err, b"[REDACTED]");
        let blocked = output
            .apply(b"x".to_vec(), b"-----BEGIN RSA PRIVATE KEY-----".to_vec())
            .unwrap_err();
        assert_eq!(blocked.code(), "OUTPUT_BLOCKED");
        assert!(blocked.to_string().contains("stderr"), "{blocked}");
        assert!(!blocked.to_string().contains("-----BEGIN"), "{blocked}");
        // invalid UTF-8 cannot hide a match
        let (out, _) = output
            .apply(b"\xff\xfesk-abcdefghij".to_vec(), Vec::new())
            .unwrap();
        assert_eq!(out, b"\xff\xfe[REDACTED]");
    }

    #[test]
    fn invalid_and_match_everything_patterns_are_config_errors() {
        for config in [
            guardrails(&[("(", None)], &[]),
            guardrails(&[("x*", None)], &[]),
            guardrails(&[], &[("[", OutputAction::Redact)]),
            guardrails(&[], &[("a|", OutputAction::Block)]),
        ] {
            let err = compile(&config).unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID");
            assert!(err.to_string().contains("guardrails.deny_"), "{err}");
        }
    }
}
