//! Shell rules: token-prefix patterns with an approval each.
//!
//! A pattern is split like a command: its first word names a program, the rest are words the
//! command's arguments must start with. Every rule can match **exactly**; `ask` and `blocked`
//! rules can also match **loosely**, which only ever makes a decision stricter.
//!
//! - **Exactly**: the command runs the same file as the pattern's program (same device and
//!   inode, every symlink followed) under the same basename — or, when either cannot be
//!   resolved, is spelled the same — and its arguments start with the pattern's words
//!   (`git status` matches `git status -s`, not `gitx status` or `git statusx`).
//! - **Loosely** (`ask`/`blocked` only): the program is the pattern's program by *file* — any
//!   file named like it in the PATH and usual program directories (`/usr/lib/git-core/git`, a
//!   hard link under another name) — or by *name* — the basename it is run under or resolves
//!   to, in any case and without a version or extension (`GIT`, `git2`, `git.exe`); a program
//!   run as `<name>-<sub>` is also `<name> <sub>` (`git-push` is `git push`, `docker-compose` is
//!   `docker compose`), which is how multi-call programs such as git dispatch on their name.
//!   The pattern's words must then appear in order, with only options (`-C .`, `-c a=b`,
//!   `--no-pager`, each option possibly followed by its value) before and between them:
//!   `git -C . push` and `git --git-dir=x -c a=b push` match `git push`. (What a program runs
//!   by its own means — `git -c alias.p=push p`, `npx git push` — is judged as a command of its
//!   own, see [`super::indirection`].)
//!
//! The match that covers the most of the command wins (exact: the pattern's word count; loose:
//! up to the last word matched, options included); equal spans resolve to the strictest
//! approval, then to the first rule. A command no rule matches gets the default, and with no
//! default it is blocked. Identity by file is not used for loose matches when the pattern's
//! program is a multi-call binary that becomes the program it is run as (coreutils, busybox):
//! there the name decides what runs.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::config::{Approval, ShellRule};
use super::engine::Engine;
use super::program::{core_dirs, FileId, Program};
use super::split::split_command;
use crate::error::{Error, Result};

/// What identifies the program of a command for rule matching.
#[derive(Debug, Clone)]
pub(crate) struct ProgramKey {
    text: String,
    /// The basename it is run under (its `argv[0]`).
    basename: String,
    /// The basename of the file it resolves to.
    real_basename: Option<String>,
    id: Option<FileId>,
}

impl ProgramKey {
    pub fn new(text: &str, program: Option<&Program>) -> Self {
        Self {
            text: text.to_string(),
            basename: basename(Path::new(text)),
            real_basename: program.map(|program| basename(&program.real)),
            id: program.and_then(|program| program.id),
        }
    }
}

/// The program of a rule's pattern.
#[derive(Debug, Clone)]
struct RuleProgram {
    text: String,
    basename: String,
    /// The file the pattern's program resolves to.
    id: Option<FileId>,
    /// Every file of that name in the program directories, for loose matches.
    ids: Vec<FileId>,
    /// The name forms a loose match accepts.
    names: Vec<String>,
}

impl RuleProgram {
    fn new(text: &str, program: Option<&Program>, engine: &Engine) -> Self {
        let basename = basename(Path::new(text));
        let real = program.map(|program| basename_of_file(&program.real));
        let multi_call = [Some(basename.as_str()), real.as_deref()]
            .into_iter()
            .flatten()
            .any(is_multi_call);
        let mut names = name_forms(&basename);
        let mut ids = Vec::new();
        if !multi_call {
            if let Some(real) = &real {
                names.extend(name_forms(real));
            }
            ids.extend(program.and_then(|program| program.id));
            for dir in engine
                .program_dirs()
                .iter()
                .map(|dir| dir.as_path())
                .chain(core_dirs(&basename).iter().map(Path::new))
            {
                if let Ok(meta) = std::fs::metadata(dir.join(&basename)) {
                    let id = (meta.dev(), meta.ino());
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
        }
        names.dedup();
        Self {
            text: text.to_string(),
            basename,
            id: program.and_then(|program| program.id),
            ids,
            names,
        }
    }

    fn is_exactly(&self, key: &ProgramKey) -> bool {
        match (self.id, key.id) {
            (Some(mine), Some(theirs)) => mine == theirs && self.basename == key.basename,
            _ => self.text == key.text,
        }
    }

    fn is_loosely(&self, view: &View) -> bool {
        view.id.is_some_and(|id| self.ids.contains(&id))
            || view.names.iter().any(|name| self.names.contains(name))
    }
}

/// Multi-call binaries that become the program they are run as.
fn is_multi_call(name: &str) -> bool {
    name_forms(name)
        .iter()
        .any(|form| matches!(form.as_str(), "coreutils" | "busybox" | "toybox"))
}

/// A command as a loose match sees it: the names and file of its program, and its arguments.
struct View<'a> {
    names: Vec<String>,
    id: Option<FileId>,
    args: Vec<&'a str>,
}

/// The views of a command: as run, and for each `-` in the name it is run under, as
/// `<before> <after> args…` (`git-push origin` is also `git push origin`). Aliases and other
/// programs a command runs are not views: they are commands of their own, judged by the same
/// rules ([`super::indirection`]).
fn views<'a>(key: &'a ProgramKey, args: &'a [String]) -> Vec<View<'a>> {
    let mut names = name_forms(&key.basename);
    if let Some(real) = &key.real_basename {
        names.extend(name_forms(real));
    }
    let mut all = vec![View {
        names,
        id: key.id,
        args: args.iter().map(String::as_str).collect(),
    }];

    for (at, _) in key.basename.match_indices('-') {
        let (program, sub) = (&key.basename[..at], &key.basename[at + 1..]);
        if program.is_empty() || sub.is_empty() {
            continue;
        }
        all.push(View {
            names: name_forms(program),
            id: None,
            args: std::iter::once(sub)
                .chain(args.iter().map(String::as_str))
                .collect(),
        });
    }
    all
}

/// The forms of a name a loose match compares: lowercase, and without what follows the first
/// `.` and without trailing version digits (`Python3.11` → `python3.11`, `python3`, `python`).
fn name_forms(name: &str) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let before_dot = lower.split('.').next().unwrap_or(&lower).to_string();
    let strip = |text: &str| {
        text.trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
            .to_string()
    };
    let mut forms = Vec::new();
    for form in [strip(&lower), strip(&before_dot), before_dot, lower] {
        if !form.is_empty() && !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// An argument that is an option, which a loose match may skip (`-C`, `--no-pager`, `-c`).
fn is_option(arg: &str) -> bool {
    arg.len() > 1 && arg.starts_with('-')
}

/// How far into `args` the loose match of `words` reaches: the words in order, with only
/// options (each possibly followed by one value) before and between them. `None` when they do
/// not match. Linear in `words.len() * args.len()`.
fn loose_span(words: &[String], args: &[&str]) -> Option<usize> {
    // `reach[j]`: the next word can be looked for at `args[j]`.
    let mut reach = vec![false; args.len() + 2];
    reach[0] = true;
    for word in words {
        let mut next = vec![false; args.len() + 2];
        for j in 0..args.len() {
            if !reach[j] {
                continue;
            }
            if args[j].eq_ignore_ascii_case(word) {
                next[j + 1] = true;
            }
            if is_option(args[j]) {
                reach[j + 1] = true;
                if !args[j].contains('=') {
                    reach[j + 2] = true;
                }
            }
        }
        reach = next;
    }
    (0..=args.len()).rev().find(|&j| reach[j])
}

fn basename(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.to_string_lossy().into_owned(),
        |name| name.to_string_lossy().into_owned(),
    )
}

fn basename_of_file(path: &Path) -> String {
    basename(path)
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
    /// When the decision is that of a command the command runs (`npx git push` runs `git
    /// push`), or of what it may run unseen (`make`): how it runs it.
    pub via: Option<String>,
    /// When the rules of a calling worker made the decision (they bind every worker it calls):
    /// that worker, as `the calling worker 'top' (/w/top.yaml)`.
    pub caller: Option<String>,
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
    program: RuleProgram,
    words: Vec<String>,
}

impl CompiledRule {
    /// How much of the command this rule covers, or `None` when it does not match.
    fn span(&self, key: &ProgramKey, args: &[String], views: &[View]) -> Option<usize> {
        let exact = (self.program.is_exactly(key)
            && self.words.len() <= args.len()
            && self.words.iter().zip(args).all(|(want, got)| want == got))
        .then_some(self.words.len());
        if self.approval == Approval::PreApproved {
            return exact;
        }
        views
            .iter()
            .filter(|view| self.program.is_loosely(view))
            .filter_map(|view| loose_span(&self.words, &view.args))
            .chain(exact)
            .max()
    }
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

    /// The program of each rule that lets a command run (not `blocked`), as its pattern
    /// names it.
    pub fn runnable_programs(&self) -> impl Iterator<Item = &str> {
        self.rules
            .iter()
            .filter(|rule| rule.approval != Approval::Blocked)
            .map(|rule| rule.program.text.as_str())
    }

    /// The approval for a command whose program is `program` and whose arguments are `args`.
    pub fn decide(&self, program: &ProgramKey, args: &[String]) -> RuleDecision {
        let views = if self
            .rules
            .iter()
            .any(|rule| rule.approval != Approval::PreApproved)
        {
            views(program, args)
        } else {
            Vec::new()
        };
        let best = self
            .rules
            .iter()
            .filter_map(|rule| Some((rule.span(program, args, &views)?, rule)))
            .max_by(|(a_span, a), (b_span, b)| {
                (a_span, a.approval)
                    .cmp(&(b_span, b.approval))
                    // the first of equal rules wins: max_by keeps the last maximum
                    .then(b.index.cmp(&a.index))
            })
            .map(|(_, rule)| rule);
        match (best, self.default) {
            (Some(rule), _) => rule.decision(),
            (None, Some(default)) => RuleDecision {
                approval: default,
                source: DecisionSource::Default,
                via: None,
                caller: None,
            },
            (None, None) => RuleDecision {
                approval: Approval::Blocked,
                source: DecisionSource::NoDefault,
                via: None,
                caller: None,
            },
        }
    }

    /// The strictest decision any command could get: the strictest rule (the first of equals)
    /// or the default, whichever is stricter (no default: blocked). What a program that may run
    /// anything unseen (`make`) gets at least.
    pub fn strictest(&self) -> RuleDecision {
        let fallback = match self.default {
            Some(default) => RuleDecision {
                approval: default,
                source: DecisionSource::Default,
                via: None,
                caller: None,
            },
            None => RuleDecision {
                approval: Approval::Blocked,
                source: DecisionSource::NoDefault,
                via: None,
                caller: None,
            },
        };
        let rule = self
            .rules
            .iter()
            .max_by(|a, b| a.approval.cmp(&b.approval).then(b.index.cmp(&a.index)));
        match rule {
            Some(rule) if rule.approval > fallback.approval => rule.decision(),
            _ => fallback,
        }
    }
}

impl CompiledRule {
    fn decision(&self) -> RuleDecision {
        RuleDecision {
            approval: self.approval,
            source: DecisionSource::Rule(RuleMatch {
                index: self.index,
                pattern: self.pattern.clone(),
                approval: self.approval,
            }),
            via: None,
            caller: None,
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
        if let Err(Error::ShellNotAllowed { reason, .. }) =
            engine.check_not_trampoline(&program_text, program.as_ref())
        {
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
        program: RuleProgram::new(&program_text, program.as_ref(), engine),
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
    fn global_options_before_the_sub_command_do_not_dodge_a_stricter_rule() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path());
        let set = rules(
            &[
                ("git push", Blocked),
                ("git reset --hard", Ask),
                ("git status", PreApproved),
                ("git push --dry-run", PreApproved),
            ],
            Some(PreApproved),
            &e,
        );
        for command in [
            "git -C . push",
            "git -c a=b push origin",
            "git --no-pager push",
            "git --git-dir=.git --work-tree=. push",
            "git -C . -c x=y --no-pager push --force",
            "git -p push",
            "git PUSH",
        ] {
            assert_eq!(decide(&set, &e, command).approval, Blocked, "{command}");
        }
        assert_eq!(decide(&set, &e, "git -C . reset --hard").approval, Ask);
        assert_eq!(decide(&set, &e, "git -c x=y reset -q --hard").approval, Ask);
        // preApproved never matches loosely: options in front fall back to the default or to
        // a stricter rule.
        assert_eq!(
            decide(&set, &e, "git -C . push --dry-run").approval,
            Blocked
        );
        assert_eq!(decide(&set, &e, "git push --dry-run").approval, PreApproved);
        assert_eq!(
            decide(&set, &e, "git -C . status").source,
            DecisionSource::Default
        );
        // A word that is not an option in front is not skipped.
        assert_eq!(decide(&set, &e, "git log push").approval, PreApproved);
        assert_eq!(
            decide(&set, &e, "git status push").approval,
            PreApproved,
            "git status has the longer exact match"
        );
    }

    #[test]
    fn a_blocked_program_matches_under_every_path_link_and_dashed_form() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path());
        let Ok(git) = e.resolve_program("git") else {
            eprintln!("skipped: git is not installed");
            return;
        };
        let set = rules(&[("git push", Blocked)], Some(PreApproved), &e);
        let mut commands = vec![
            format!("{} push", git.path.display()),
            format!("{} push", git.real.display()),
        ];
        // Every other git installation on this machine, and git's own dashed forms.
        for dir in core_dirs("git").into_iter().chain(
            crate::command::trampoline::PROGRAM_DIRS
                .iter()
                .map(|d| d.to_string()),
        ) {
            let candidate = Path::new(&dir).join("git");
            if candidate.is_file() {
                commands.push(format!("{} push origin", candidate.display()));
            }
            let dashed = Path::new(&dir).join("git-push");
            if dashed.is_file() {
                commands.push(format!("{} origin main", dashed.display()));
            }
        }
        let links = dir.path().join("links");
        std::fs::create_dir(&links).unwrap();
        std::os::unix::fs::symlink(&git.real, links.join("innocent")).unwrap();
        commands.push(format!("{} push", links.join("innocent").display()));
        if std::fs::hard_link(&git.real, links.join("hardlinked")).is_ok() {
            commands.push(format!("{} push", links.join("hardlinked").display()));
            std::fs::hard_link(&git.real, links.join("git-push")).unwrap();
            commands.push(format!("{} origin", links.join("git-push").display()));
        }
        for command in &commands {
            assert_eq!(decide(&set, &e, command).approval, Blocked, "{command}");
        }
        assert!(commands.len() >= 5, "{commands:?}");
        // Other sub-commands under the same spellings are not blocked.
        let status = format!("{} status", links.join("innocent").display());
        assert_eq!(decide(&set, &e, &status).approval, PreApproved);
    }

    #[test]
    fn loose_spans_follow_options_and_values() {
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(loose_span(&words(&["push"]), &["push"]), Some(1));
        assert_eq!(
            loose_span(&words(&["push"]), &["-C", ".", "push", "x"]),
            Some(3)
        );
        assert_eq!(loose_span(&words(&["push"]), &["--a=b", "push"]), Some(2));
        assert_eq!(loose_span(&words(&["push"]), &["log", "push"]), None);
        assert_eq!(loose_span(&words(&["push"]), &["--a=b", "x", "push"]), None);
        assert_eq!(
            loose_span(&words(&["reset", "--hard"]), &["reset", "-q", "--hard"]),
            Some(3)
        );
        assert_eq!(loose_span(&words(&[]), &["x"]), Some(0));
        assert_eq!(loose_span(&words(&["a"]), &[]), None);
        assert_eq!(
            name_forms("Python3.11"),
            ["python", "python3", "python3.11"]
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
