//! Shell rules: token-prefix patterns with an approval each.
//!
//! A pattern is split like a command and matches a command whose words start with the
//! pattern's words (`git` matches `git status`, not `gitx`; `git push` matches
//! `git push origin main`). The program word matches by identity, not by spelling: `git`,
//! `/usr/bin/git` and a symlink to it match the same rules when they have the same basename and
//! resolve to the same file, while a different file that happens to be called `git` (a script
//! `./git` in the work directory) does not. A program that cannot be resolved matches by its
//! exact text.
//!
//! Among the matching rules the longest pattern wins; equal lengths resolve to the strictest
//! approval. A command no rule matches gets the default, and with no default it is blocked.

use std::path::{Path, PathBuf};

use super::config::{Approval, ShellRule};
use super::engine::{Engine, Program};
use super::split::split_command;
use super::trampoline::refusal_reason;
use crate::error::{Error, Result};

/// What identifies a program for rule matching.
#[derive(Debug, Clone)]
pub(crate) struct ProgramKey {
    text: String,
    basename: String,
    real: Option<PathBuf>,
}

impl ProgramKey {
    pub fn new(text: &str, program: Option<&Program>) -> Self {
        Self {
            text: text.to_string(),
            basename: basename(text),
            real: program.map(|program| program.real.clone()),
        }
    }

    fn same_program(&self, other: &ProgramKey) -> bool {
        match (&self.real, &other.real) {
            (Some(mine), Some(theirs)) => self.basename == other.basename && mine == theirs,
            _ => self.text == other.text,
        }
    }
}

fn basename(text: &str) -> String {
    Path::new(text).file_name().map_or_else(
        || text.to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// The rule that decided a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleMatch {
    /// Position in the `rules` list (0-based).
    pub index: usize,
    pub pattern: String,
    pub approval: Approval,
}

/// Where a decision came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionSource {
    /// The longest (then strictest) matching rule.
    Rule(RuleMatch),
    /// No rule matched; the toolset's default applied.
    Default,
    /// No rule matched and there is no default: blocked.
    NoDefault,
}

/// The approval a command gets and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleDecision {
    pub approval: Approval,
    pub source: DecisionSource,
}

impl RuleDecision {
    /// The rule that matched, if one did.
    pub fn rule(&self) -> Option<&RuleMatch> {
        match &self.source {
            DecisionSource::Rule(rule) => Some(rule),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
struct CompiledRule {
    index: usize,
    pattern: String,
    approval: Approval,
    program: ProgramKey,
    words: Vec<String>,
}

/// The compiled rules of one shell toolset.
#[derive(Debug, Clone)]
pub(crate) struct RuleSet {
    rules: Vec<CompiledRule>,
    default: Option<Approval>,
}

impl RuleSet {
    /// Compiles `rules`; each pattern's program is resolved once, with `engine`. A pattern that
    /// cannot be split, is empty, or would allow a shell or trampoline is `CONFIG_INVALID`.
    pub fn new(rules: &[ShellRule], default: Option<Approval>, engine: &Engine) -> Result<Self> {
        let compiled = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| compile(index, rule, engine))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            rules: compiled,
            default,
        })
    }

    /// The approval for a command whose program is `program` and whose arguments are `args`.
    pub fn decide(&self, program: &ProgramKey, args: &[String]) -> RuleDecision {
        let best = self
            .rules
            .iter()
            .filter(|rule| {
                rule.program.same_program(program)
                    && rule.words.len() <= args.len()
                    && rule.words.iter().zip(args).all(|(want, got)| want == got)
            })
            .max_by(|a, b| {
                (a.words.len(), a.approval)
                    .cmp(&(b.words.len(), b.approval))
                    // the first of equal rules wins: max_by keeps the last maximum
                    .then(b.index.cmp(&a.index))
            });
        match (best, self.default) {
            (Some(rule), _) => RuleDecision {
                approval: rule.approval,
                source: DecisionSource::Rule(RuleMatch {
                    index: rule.index,
                    pattern: rule.pattern.clone(),
                    approval: rule.approval,
                }),
            },
            (None, Some(default)) => RuleDecision {
                approval: default,
                source: DecisionSource::Default,
            },
            (None, None) => RuleDecision {
                approval: Approval::Blocked,
                source: DecisionSource::NoDefault,
            },
        }
    }
}

fn compile(index: usize, rule: &ShellRule, engine: &Engine) -> Result<CompiledRule> {
    let place = format!("rules[{index}] (pattern '{}')", rule.pattern);
    let mut words = split_command(&rule.pattern)
        .map_err(|err| Error::ConfigInvalid(format!("{place}: {err}")))?;
    if words.is_empty() {
        return Err(Error::ConfigInvalid(format!(
            "{place} is empty; give the program and, optionally, its first arguments, such as 'git status'"
        )));
    }
    let program_text = words.remove(0);
    let program = engine.resolve_program(&program_text).ok();
    if rule.approval != Approval::Blocked {
        let real = program
            .as_ref()
            .map(|program| program.real.to_string_lossy().into_owned());
        let reason =
            refusal_reason(&program_text).or_else(|| real.as_deref().and_then(refusal_reason));
        if let Some(reason) = reason {
            return Err(Error::ConfigInvalid(format!(
                "{place} gives '{program_text}' the approval {}, but it can never run: {reason}. Remove the rule or make it blocked",
                rule.approval.as_str()
            )));
        }
    }
    Ok(CompiledRule {
        index,
        pattern: rule.pattern.clone(),
        approval: rule.approval,
        program: ProgramKey::new(&program_text, program.as_ref()),
        words,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(dir: &Path) -> Engine {
        Engine::new(dir, &[], &[], None, None).unwrap()
    }

    fn rules(list: &[(&str, Approval)], default: Option<Approval>, engine: &Engine) -> RuleSet {
        let list: Vec<ShellRule> = list
            .iter()
            .map(|(pattern, approval)| ShellRule {
                pattern: pattern.to_string(),
                approval: *approval,
            })
            .collect();
        RuleSet::new(&list, default, engine).unwrap()
    }

    fn decide(set: &RuleSet, engine: &Engine, command: &str) -> RuleDecision {
        let mut words = split_command(command).unwrap();
        let program_text = words.remove(0);
        let program = engine.resolve_program(&program_text).ok();
        set.decide(&ProgramKey::new(&program_text, program.as_ref()), &words)
    }

    use Approval::{Ask, Blocked, PreApproved};

    #[test]
    fn patterns_match_token_by_token_and_the_longest_wins() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path());
        let set = rules(
            &[("ls", PreApproved), ("ls -la", Ask), ("cat /etc", Blocked)],
            Some(Ask),
            &e,
        );
        assert_eq!(decide(&set, &e, "ls").approval, PreApproved);
        assert_eq!(decide(&set, &e, "ls src").approval, PreApproved);
        let longest = decide(&set, &e, "ls -la src");
        assert_eq!(longest.approval, Ask);
        assert_eq!(longest.rule().unwrap().index, 1);
        // `ls` does not match `lsblk`, and `-la` does not match `-lah`
        assert_eq!(decide(&set, &e, "lsblk").source, DecisionSource::Default);
        assert_eq!(decide(&set, &e, "ls -lah").rule().unwrap().index, 0);
        assert_eq!(
            decide(&set, &e, "cat /etc/passwd").source,
            DecisionSource::Default
        );
    }

    #[test]
    fn equal_lengths_resolve_to_the_strictest_and_no_default_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path());
        let set = rules(
            &[
                ("ls x", PreApproved),
                ("ls x", Blocked),
                ("ls x", Ask),
                ("/bin/ls y", Ask),
                ("ls y", PreApproved),
            ],
            None,
            &e,
        );
        let tie = decide(&set, &e, "ls x");
        assert_eq!(tie.approval, Blocked);
        assert_eq!(tie.rule().unwrap().index, 1);
        assert_eq!(decide(&set, &e, "/usr/bin/ls y").approval, Ask);
        let unmatched = decide(&set, &e, "true");
        assert_eq!(unmatched.approval, Blocked);
        assert_eq!(unmatched.source, DecisionSource::NoDefault);
    }

    #[test]
    fn a_program_matches_by_identity_not_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path());
        let set = rules(&[("ls", PreApproved)], Some(Ask), &e);
        let real_ls = e.resolve_program("ls").unwrap();
        assert_eq!(
            decide(&set, &e, &real_ls.path.display().to_string()).approval,
            PreApproved
        );
        // a different file called ls is not the ls the rule means
        let fake = dir.path().join("ls");
        std::fs::write(&fake, "#!/bin/true\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert_eq!(decide(&set, &e, "./ls").source, DecisionSource::Default);
        // an unresolvable program matches by its text
        let set = rules(
            &[("no-such-program-xyz push", Blocked)],
            Some(PreApproved),
            &e,
        );
        assert_eq!(
            decide(&set, &e, "no-such-program-xyz push now").approval,
            Blocked
        );
    }

    #[test]
    fn bad_patterns_are_config_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path());
        for (pattern, approval, needle) in [
            ("", Ask, "empty"),
            ("git | x", Ask, "shell syntax"),
            ("bash", PreApproved, "never run"),
            ("sh -c", Ask, "never run"),
        ] {
            let err = RuleSet::new(
                &[ShellRule {
                    pattern: pattern.into(),
                    approval,
                }],
                None,
                &e,
            )
            .unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID");
            assert!(err.to_string().contains(needle), "{err}");
            assert!(err.to_string().contains("rules[0]"), "{err}");
        }
        // blocking a shell explicitly is fine
        rules(&[("sudo", Blocked)], None, &e);
    }
}
