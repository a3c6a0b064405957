//! What an "always" answer covers. By default exactly the call that was approved: the same tool
//! with the same input (keys in any order). A wider scope is only ever an explicit choice, made
//! by the person who answers, after it was shown to them:
//!
//! - `prefix` (command tools: `shell`, `cli_execute`): every command whose words start with the
//!   given words, compared word by word like a shell rule's pattern (`rm -rf` covers
//!   `rm -rf build` and `rm -rf src`, not `rm -r x` or `rmdir`). The words must cover the call
//!   being answered.
//! - `tool`: every call of the tool.
//!
//! Approving `rm -rf build` "always" therefore never approves `rm -rf src` unless the person
//! chose the prefix `rm -rf` and saw the sentence that says so.
//!
//! A network request (`toolName: 'network'`, input `{ host, port, tool }`: the egress proxy
//! asking about a host) is answered "always" for that host and port, from any tool, for the
//! rest of the run; no wider scope exists for it (hosts are widened with `network.allow`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::canonical::canonical_json;
use super::review::{inline, review_input};
use crate::command::split_command;
use crate::error::{Error, Result};
use crate::limits::MAX_PREFIX_PATTERN_BYTES;

/// How far an "always" answer reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ScopeKind {
    /// Exactly this call: same tool, same input.
    Call,
    /// Commands whose words start with `prefix`.
    Prefix,
    /// Every call of the tool.
    Tool,
}

/// An "always" answer's reach, with the sentence shown to the person who picks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlwaysScope {
    pub kind: ScopeKind,
    /// The tool the answer is for.
    pub tool: String,
    /// The worker whose tool it is (its name: unique in a worker graph). Workers of one run
    /// share the run's answers, and two of them may each have a tool of the same name: an
    /// answer covers only the worker it was given for. Empty outside a worker run.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub worker: String,
    /// `call`: the input of the approved call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// `prefix`: the words a command must start with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Vec<String>>,
    /// What the scope covers, in words ("exactly this command: rm -rf build").
    pub description: String,
}

/// The scope a person picks for "always": exactly this call (the default), commands starting
/// with some words, or every call of the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeChoice {
    Call,
    Tool,
    /// Words, split like a shell command (`rm -rf`).
    Prefix(String),
}

impl ScopeChoice {
    /// Reads `'call'`, `'tool'` or `{ prefix: 'rm -rf' }` (absent means `'call'`).
    pub fn from_value(value: Option<&Value>) -> Result<Self> {
        let wrong = || {
            Error::InvalidInput(format!(
                "the scope of an 'always' answer is 'call', 'tool' or {{ prefix: \"<words>\" }}, got {}",
                short(&value.map(canonical_json).unwrap_or_default())
            ))
        };
        match value {
            None | Some(Value::Null) => Ok(ScopeChoice::Call),
            Some(Value::String(name)) => match name.as_str() {
                "call" => Ok(ScopeChoice::Call),
                "tool" => Ok(ScopeChoice::Tool),
                _ => Err(wrong()),
            },
            Some(Value::Object(map)) if map.len() == 1 => match map.get("prefix") {
                Some(Value::String(words)) => Ok(ScopeChoice::Prefix(words.clone())),
                _ => Err(wrong()),
            },
            _ => Err(wrong()),
        }
    }
}

impl AlwaysScope {
    /// The default scope of "always" for a call: exactly this call. `argv` is the command's
    /// words for command tools (it only changes the description).
    pub fn exact(tool: &str, input: &Value, argv: Option<&[String]>, worker: &str) -> Self {
        if let Some((host, port)) = network_destination(tool, input) {
            return Self {
                kind: ScopeKind::Call,
                tool: tool.to_string(),
                worker: String::new(),
                input: Some(serde_json::json!({ "host": host, "port": port })),
                prefix: None,
                description: format!(
                    "connections to {} from any tool, for the rest of the run",
                    short(&format!("{host}:{port}"))
                ),
            };
        }
        let description = match argv {
            Some(words) => format!(
                "exactly this command: {} (the same {} input; nothing else)",
                short(&display_words(words)),
                tool_of(tool, worker)
            ),
            None => {
                // The input itself is shown once, above the choices (`review`): the sentence
                // names it by size and digest instead of repeating it.
                let review = review_input(input);
                format!(
                    "exactly this call: {} with this input ({} bytes, sha256 {}…), nothing else",
                    tool_of(tool, worker),
                    review.input_bytes,
                    &review.input_sha256[..16]
                )
            }
        };
        Self {
            kind: ScopeKind::Call,
            tool: tool.to_string(),
            worker: worker.to_string(),
            input: Some(input.clone()),
            prefix: None,
            description,
        }
    }

    /// The scope a person chose for a call. A prefix must be words the command starts with, so
    /// that it covers the call being answered; it is only for command tools (`argv` given).
    pub fn choose(
        tool: &str,
        input: &Value,
        argv: Option<&[String]>,
        choice: &ScopeChoice,
        worker: &str,
    ) -> Result<Self> {
        if tool == NETWORK_TOOL && *choice != ScopeChoice::Call {
            return Err(Error::InvalidInput(
                "an 'always' answer about a network host covers that host and port only; to reach more hosts, list them in the sandbox's network.allow".into(),
            ));
        }
        match choice {
            ScopeChoice::Call => Ok(Self::exact(tool, input, argv, worker)),
            ScopeChoice::Tool => Ok(Self {
                kind: ScopeKind::Tool,
                tool: tool.to_string(),
                worker: worker.to_string(),
                input: None,
                prefix: None,
                description: format!(
                    "every call of {}, whatever its input, for the rest of the run",
                    tool_of(tool, worker)
                ),
            }),
            ScopeChoice::Prefix(pattern) => {
                let Some(words) = argv else {
                    return Err(Error::InvalidInput(format!(
                        "a prefix scope is only for command tools (shell, cli_execute); for {tool} choose 'call' (this exact call) or 'tool' (every call)"
                    )));
                };
                let prefix = prefix_words(pattern)?;
                if !words.starts_with(&prefix) {
                    return Err(Error::InvalidInput(format!(
                        "the prefix {} does not cover the command being approved ({}); give words the command starts with",
                        short(&display_words(&prefix)),
                        short(&display_words(words))
                    )));
                }
                Ok(Self {
                    kind: ScopeKind::Prefix,
                    tool: tool.to_string(),
                    worker: worker.to_string(),
                    input: None,
                    description: format!(
                        "every {} command starting with {} (word by word){}, for the rest of the run",
                        short(tool),
                        short(&display_words(&prefix)),
                        of_worker(worker)
                    ),
                    prefix: Some(prefix),
                })
            }
        }
    }

    /// Checks a scope handed back by the SDK or read from a state: the fields match the kind.
    pub fn check(&self) -> Result<()> {
        let consistent = match self.kind {
            ScopeKind::Call => self.input.is_some() && self.prefix.is_none(),
            ScopeKind::Prefix => {
                self.input.is_none() && self.prefix.as_ref().is_some_and(|words| !words.is_empty())
            }
            ScopeKind::Tool => self.input.is_none() && self.prefix.is_none(),
        };
        if consistent && !self.tool.is_empty() {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "an 'always' scope of kind {:?} for tool '{}' has the wrong fields; use the scope objects toolgate returns",
                self.kind, self.tool
            )))
        }
    }

    /// Whether this scope covers a call of `worker`'s `tool` with `input` (and, for command
    /// tools, the command's words `argv`). A network host's answer covers it from any worker.
    pub fn covers(&self, worker: &str, tool: &str, input: &Value, argv: Option<&[String]>) -> bool {
        if self.tool != tool || (tool != NETWORK_TOOL && self.worker != worker) {
            return false;
        }
        if tool == NETWORK_TOOL {
            // Host and port, whichever tool asks.
            let approved = self.input.as_ref().and_then(|approved| {
                Some((
                    approved.get("host")?.as_str()?.to_ascii_lowercase(),
                    approved.get("port")?.as_u64()?,
                ))
            });
            return self.kind == ScopeKind::Call
                && approved.is_some()
                && approved == network_destination(tool, input);
        }
        match self.kind {
            ScopeKind::Tool => true,
            ScopeKind::Call => self
                .input
                .as_ref()
                .is_some_and(|approved| canonical_json(approved) == canonical_json(input)),
            ScopeKind::Prefix => match (&self.prefix, argv) {
                (Some(prefix), Some(words)) => !prefix.is_empty() && words.starts_with(prefix),
                _ => false,
            },
        }
    }
}

/// The tool name of the egress proxy's approval requests.
pub const NETWORK_TOOL: &str = "network";

/// The host and port of a network request (`{ host, port, tool }` with `toolName: 'network'`).
fn network_destination(tool: &str, input: &Value) -> Option<(String, u64)> {
    if tool != NETWORK_TOOL {
        return None;
    }
    let host = input.get("host")?.as_str()?;
    let port = input.get("port")?.as_u64()?;
    input.get("tool")?.as_str()?;
    Some((host.to_ascii_lowercase(), port))
}

/// Whether any of `scopes` covers the call of `worker`'s `tool`.
pub fn covered(
    scopes: &[AlwaysScope],
    worker: &str,
    tool: &str,
    input: &Value,
    argv: Option<&[String]>,
) -> bool {
    scopes
        .iter()
        .any(|scope| scope.covers(worker, tool, input, argv))
}

/// A tool named for a person: `deploy`, or `deploy of the worker 'helper'`.
fn tool_of(tool: &str, worker: &str) -> String {
    format!("{}{}", short(tool), of_worker(worker))
}

/// ` of the worker 'helper'`, or nothing outside a worker run.
fn of_worker(worker: &str) -> String {
    if worker.is_empty() {
        String::new()
    } else {
        format!(" of the worker '{}'", short(worker))
    }
}

fn prefix_words(pattern: &str) -> Result<Vec<String>> {
    if pattern.len() > MAX_PREFIX_PATTERN_BYTES {
        return Err(Error::InvalidInput(format!(
            "the prefix of an 'always' answer is {} bytes; at most {MAX_PREFIX_PATTERN_BYTES} are accepted",
            pattern.len()
        )));
    }
    let words = split_command(pattern).map_err(|err| {
        Error::InvalidInput(format!(
            "the prefix {} cannot be split into words: {err}",
            short(pattern)
        ))
    })?;
    if words.is_empty() {
        return Err(Error::InvalidInput(
            "the prefix of an 'always' answer is empty; give at least the program (e.g. 'git status')".into(),
        ));
    }
    Ok(words)
}

/// Words as a person would type them: plain words bare, others in single quotes.
pub fn display_words(words: &[String]) -> String {
    words
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./~-".contains(c));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Text for a sentence: shown by the review rule (nothing invisible, no JSON escaping), long
/// text cut with a count of what was left out (the whole input is shown beside the sentence).
fn short(text: &str) -> String {
    inline(text, 200)
}

#[cfg(test)]
mod network_tests {
    use super::*;

    #[test]
    fn always_for_a_network_request_is_its_host_and_port_from_any_tool() {
        let asked =
            serde_json::json!({ "host": "registry.npmjs.org", "port": 443, "tool": "shell" });
        let scope = AlwaysScope::exact(NETWORK_TOOL, &asked, None, "");
        assert_eq!(
            scope.description,
            "connections to registry.npmjs.org:443 from any tool, for the rest of the run"
        );
        scope.check().unwrap();
        let from_another_tool =
            serde_json::json!({ "host": "registry.npmjs.org", "port": 443, "tool": "cli_execute" });
        assert!(scope.covers("", NETWORK_TOOL, &from_another_tool, None));
        for other in [
            serde_json::json!({ "host": "registry.npmjs.org", "port": 80, "tool": "shell" }),
            serde_json::json!({ "host": "evil.test", "port": 443, "tool": "shell" }),
            serde_json::json!({ "host": "registry.npmjs.org", "port": 443 }),
        ] {
            assert!(!scope.covers("", NETWORK_TOOL, &other, None), "{other}");
        }
        // Not a tool called "network" of another kind: the scope is for the proxy's requests.
        assert!(!scope.covers("", "shell", &asked, None));
        // No wider scope: that would open every host.
        let err =
            AlwaysScope::choose(NETWORK_TOOL, &asked, None, &ScopeChoice::Tool, "").unwrap_err();
        assert!(err.to_string().contains("network.allow"), "{err}");
        let tool_wide = AlwaysScope {
            kind: ScopeKind::Tool,
            tool: NETWORK_TOOL.into(),
            worker: String::new(),
            input: None,
            prefix: None,
            description: String::new(),
        };
        assert!(!tool_wide.covers("", NETWORK_TOOL, &asked, None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(text: &str) -> Vec<String> {
        split_command(text).unwrap()
    }

    fn shell(command: &str) -> (Value, Vec<String>) {
        (json!({ "command": command }), words(command))
    }

    #[test]
    fn always_covers_exactly_the_approved_call_by_default() {
        let (input, argv) = shell("rm -rf build");
        let scope = AlwaysScope::exact("shell", &input, Some(&argv), "");
        assert!(
            scope
                .description
                .contains("exactly this command: rm -rf build"),
            "{}",
            scope.description
        );
        assert!(scope.covers("", "shell", &input, Some(&argv)));
        for other in ["rm -rf src", "rm -rf build src", "rm -rf", "rm  -rf  build"] {
            let (input, argv) = shell(other);
            assert!(!scope.covers("", "shell", &input, Some(&argv)), "{other}");
        }
        let (input, argv) = shell("rm -rf build");
        assert!(!scope.covers("", "cli_execute", &input, Some(&argv)));
        // npm run test does not cover npm run deploy:prod
        let (input, argv) = shell("npm run test");
        let scope = AlwaysScope::exact("shell", &input, Some(&argv), "");
        let (other, other_argv) = shell("npm run deploy:prod");
        assert!(!scope.covers("", "shell", &other, Some(&other_argv)));
    }

    #[test]
    fn exact_scopes_of_other_tools_compare_the_whole_input_in_any_key_order() {
        let input = json!({ "path": "a.txt", "content": "x" });
        let scope = AlwaysScope::exact("write_file", &input, None, "");
        assert!(scope.covers(
            "",
            "write_file",
            &json!({ "content": "x", "path": "a.txt" }),
            None
        ));
        assert!(!scope.covers(
            "",
            "write_file",
            &json!({ "content": "y", "path": "a.txt" }),
            None
        ));
        assert!(!scope.covers("", "write_file", &json!({ "path": "a.txt" }), None));
        assert!(!scope.covers(
            "",
            "write_file",
            &json!({ "path": "a.txt", "content": "x", "mode": 1 }),
            None
        ));
        assert!(
            scope.description.contains("exactly this call: write_file"),
            "{}",
            scope.description
        );
    }

    #[test]
    fn a_prefix_must_cover_the_call_and_matches_word_by_word() {
        let (input, argv) = shell("rm -rf build");
        let choice = ScopeChoice::Prefix("rm -rf".into());
        let scope = AlwaysScope::choose("shell", &input, Some(&argv), &choice, "").unwrap();
        assert!(
            scope.description.contains("starting with rm -rf"),
            "{}",
            scope.description
        );
        for covered_command in ["rm -rf build", "rm -rf src", "rm -rf"] {
            let (input, argv) = shell(covered_command);
            assert!(
                scope.covers("", "shell", &input, Some(&argv)),
                "{covered_command}"
            );
        }
        for other in [
            "rm -r build",
            "rmdir -rf x",
            "rm -rfv x",
            "sudo rm -rf x",
            "'rm -rf' x",
        ] {
            let (input, argv) = shell(other);
            assert!(!scope.covers("", "shell", &input, Some(&argv)), "{other}");
        }
        // a prefix that does not cover the call being answered is refused
        for bad in ["rm -r", "rm -rf src", "git", "rm -rf build extra"] {
            let err = AlwaysScope::choose(
                "shell",
                &input,
                Some(&argv),
                &ScopeChoice::Prefix(bad.into()),
                "",
            )
            .unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT", "{bad}");
            assert!(err.to_string().contains("does not cover"), "{err}");
        }
        for bad in ["", "   ", "rm | x", "rm $(x)"] {
            let err = AlwaysScope::choose(
                "shell",
                &input,
                Some(&argv),
                &ScopeChoice::Prefix(bad.into()),
                "",
            )
            .unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT", "{bad:?}");
        }
        let long = "a ".repeat(MAX_PREFIX_PATTERN_BYTES);
        assert!(
            AlwaysScope::choose("shell", &input, Some(&argv), &ScopeChoice::Prefix(long), "")
                .is_err()
        );
    }

    #[test]
    fn a_prefix_is_only_for_command_tools_and_tool_scope_is_explicit() {
        let input = json!({ "path": "a" });
        let err = AlwaysScope::choose(
            "write_file",
            &input,
            None,
            &ScopeChoice::Prefix("a".into()),
            "",
        )
        .unwrap_err();
        assert!(err.to_string().contains("only for command tools"), "{err}");
        let scope =
            AlwaysScope::choose("write_file", &input, None, &ScopeChoice::Tool, "").unwrap();
        assert!(scope.covers("", "write_file", &json!({ "path": "b" }), None));
        assert!(!scope.covers("", "read_file", &json!({ "path": "b" }), None));
        assert!(scope.description.contains("every call of write_file"));
    }

    #[test]
    fn choices_are_read_strictly() {
        assert_eq!(ScopeChoice::from_value(None).unwrap(), ScopeChoice::Call);
        assert_eq!(
            ScopeChoice::from_value(Some(&json!("tool"))).unwrap(),
            ScopeChoice::Tool
        );
        assert_eq!(
            ScopeChoice::from_value(Some(&json!({ "prefix": "git status" }))).unwrap(),
            ScopeChoice::Prefix("git status".into())
        );
        for bad in [
            json!("all"),
            json!(1),
            json!({ "prefix": 1 }),
            json!({ "prefix": "a", "x": 1 }),
            json!([]),
        ] {
            assert_eq!(
                ScopeChoice::from_value(Some(&bad)).unwrap_err().code(),
                "INVALID_INPUT",
                "{bad}"
            );
        }
    }

    #[test]
    fn scopes_with_fields_that_contradict_their_kind_are_refused() {
        let mut scope = AlwaysScope::exact("shell", &json!({}), None, "");
        assert!(scope.check().is_ok());
        scope.input = None;
        assert!(scope.check().is_err());
        let forged = AlwaysScope {
            kind: ScopeKind::Prefix,
            tool: "shell".into(),
            worker: String::new(),
            input: None,
            prefix: Some(vec![]),
            description: String::new(),
        };
        assert!(forged.check().is_err());
        assert!(!forged.covers("", "shell", &json!({}), Some(&words("rm x"))));
    }

    #[test]
    fn descriptions_quote_odd_words_and_stay_short() {
        assert_eq!(
            display_words(&words("git commit -m 'a b'")),
            "git commit -m 'a b'"
        );
        let long = json!({ "content": "x".repeat(5000) });
        assert!(
            AlwaysScope::exact("write_file", &long, None, "")
                .description
                .chars()
                .count()
                < 300
        );
    }

    #[test]
    fn descriptions_are_never_json_escaped_twice_and_hide_nothing() {
        // The input is shown once, in the review; the sentence names it by size and digest.
        let input = json!({ "content": "approved with a\n\"quote\"", "path": "a.txt" });
        let description = AlwaysScope::exact("write_file", &input, None, "").description;
        assert!(!description.contains('\\'), "{description}");
        assert!(!description.contains("approved with"), "{description}");
        let review = review_input(&input);
        assert!(
            description.contains(&format!(
                "{} bytes, sha256 {}",
                review.input_bytes,
                &review.input_sha256[..16]
            )),
            "{description}"
        );
        // command words: quoted as typed, control characters named, long words cut with a count
        let argv = vec![
            "python3".to_string(),
            "-c".to_string(),
            format!("print(1){};import os", " ".repeat(4100)),
        ];
        let description = AlwaysScope::exact("shell", &json!({}), Some(&argv), "").description;
        assert!(
            description.contains("⟨4100 spaces⟩;import os"),
            "{description}"
        );
        let argv = vec!["echo".to_string(), "\u{1b}]52;c;aGk=\u{7}".to_string()];
        let description = AlwaysScope::exact("shell", &json!({}), Some(&argv), "").description;
        assert!(
            description.contains("⟨ESC⟩]52;c;aGk=⟨BEL⟩"),
            "{description}"
        );
        assert!(!description.contains('\u{1b}'), "{description}");
        let argv = vec!["echo".to_string(), "y".repeat(1000)];
        let description = AlwaysScope::exact("shell", &json!({}), Some(&argv), "").description;
        assert!(description.contains("more characters⟩"), "{description}");
    }

    #[test]
    fn an_answer_covers_the_tool_of_the_worker_it_was_given_for_only() {
        let input = json!({ "target": "prod" });
        for choice in [ScopeChoice::Call, ScopeChoice::Tool] {
            let scope = AlwaysScope::choose("deploy", &input, None, &choice, "helper").unwrap();
            assert!(scope.covers("helper", "deploy", &input, None));
            // The caller's own tool of the same name, an unnamed worker, another worker.
            for worker in ["main", "", "helper2", "Helper"] {
                assert!(!scope.covers(worker, "deploy", &input, None), "{worker}");
            }
            assert!(
                scope.description.contains("of the worker 'helper'"),
                "{}",
                scope.description
            );
        }
        let argv = words("rm -rf build");
        let prefix = AlwaysScope::choose(
            "shell",
            &json!({ "command": "rm -rf build" }),
            Some(&argv),
            &ScopeChoice::Prefix("rm -rf".into()),
            "helper",
        )
        .unwrap();
        assert!(prefix.covers("helper", "shell", &json!({}), Some(&argv)));
        assert!(!prefix.covers("main", "shell", &json!({}), Some(&argv)));
        // A scope from before workers were named (no `worker` field) covers unnamed calls only.
        let old: AlwaysScope = serde_json::from_value(json!({
            "kind": "tool", "tool": "deploy", "description": "every call"
        }))
        .unwrap();
        assert!(old.covers("", "deploy", &input, None));
        assert!(!old.covers("main", "deploy", &input, None));
        // A network host's answer holds for every worker of the run.
        let asked = json!({ "host": "example.com", "port": 443, "tool": "shell" });
        let host = AlwaysScope::exact(NETWORK_TOOL, &asked, None, "helper");
        assert!(host.covers("main", NETWORK_TOOL, &asked, None));
    }
}
