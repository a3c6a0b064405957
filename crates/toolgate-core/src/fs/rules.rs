//! Path rules of the file toolsets (`approval.paths`): gitignore-style patterns relative to the
//! work directory, each with a decision, matched against paths as resolved inside it.
//!
//! The pattern language is a subset of `.gitignore`'s:
//! - a pattern with a `/` at its start or in its middle is anchored to the work directory
//!   (`/build`, `.git/**`, `src/*.ts`); one without matches a name at any depth (`.env*`);
//! - a trailing `/` matches directories only (and, so that a refusal never says whether
//!   something exists, paths that do not exist and symlinks);
//! - `*`, `?` and `[...]` stay within one component, `**` spans components (`a/**/b`), `\`
//!   escapes; `{a,b}` alternatives are accepted too (an extension);
//! - a rule about a directory covers everything inside it, and `dir/**` also covers `dir`
//!   itself; `**` alone is the rule for the work directory, so every path falls back to it;
//! - `!` negation is refused: each rule carries its own decision, so an exception is a more
//!   specific rule.
//!
//! Which rule decides a path: the one that matches the deepest part of it (a rule about a file
//! beats a rule about its directory); among rules matching equally deep, the one with the most
//! non-wildcard characters; then the strictest. As in git, nothing inside a blocked directory
//! can be opened again by a rule about something inside it.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::pattern::check_glob;
use crate::approval::Decision;
use crate::error::{Error, Result};
use crate::limits::MAX_PATH_RULES;

/// One entry of `approval.paths`: a pattern and the decision for the paths it matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathRule {
    /// A gitignore-style pattern relative to the work directory, e.g. `.env*`, `.git/**`,
    /// `/build/`, `src/**/*.ts` (no `!` negation).
    pub pattern: String,
    /// What a file tool call on a matching path needs.
    pub approval: Decision,
}

/// What a path is, as far as the rules care: directory-only patterns match directories, and
/// also paths that do not exist and symlinks, so that a decision never depends on whether
/// something exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    /// Does not exist, or a symlink (judged as written; its target is judged on its own).
    Unknown,
}

/// The rule that decided a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRef {
    /// Where the rule list is, e.g. `code_agent approval.paths`.
    pub place: Arc<str>,
    /// The rule's position in its list, from 0.
    pub index: usize,
    pub pattern: String,
    pub approval: Decision,
}

impl RuleRef {
    /// `code_agent approval.paths[0] '.env*' (blocked)`, for messages.
    pub fn describe(&self) -> String {
        format!(
            "{}[{}] '{}' ({})",
            self.place,
            self.index,
            self.pattern,
            self.approval.as_str()
        )
    }
}

#[derive(Debug)]
struct Compiled {
    rule: RuleRef,
    dir_only: bool,
    /// Non-wildcard characters: the tie-breaker between rules matching equally deep.
    literal: usize,
}

/// A compiled `approval.paths` list.
#[derive(Debug)]
pub struct PathRules {
    rules: Vec<Compiled>,
    /// Rules whose pattern is `**`: the decision of the work directory itself.
    root: Vec<usize>,
    /// The other rules' globs; glob `i` is rule `globbed[i]`.
    set: GlobSet,
    globbed: Vec<usize>,
}

impl PathRules {
    /// Compiles `rules`; `place` names the list in messages (`code_agent approval.paths`).
    /// `case_insensitive` is for work directories on a file system that ignores case. Errors
    /// are `CONFIG_INVALID` naming the rule.
    pub fn new(rules: &[PathRule], place: &str, case_insensitive: bool) -> Result<PathRules> {
        if rules.len() > MAX_PATH_RULES {
            return Err(Error::ConfigInvalid(format!(
                "{place} has {} rules; at most {MAX_PATH_RULES} are allowed. Cover several paths with one pattern (e.g. 'secrets/**')",
                rules.len()
            )));
        }
        let place: Arc<str> = Arc::from(place);
        let mut compiled = Vec::with_capacity(rules.len());
        let mut root = Vec::new();
        let mut builder = GlobSetBuilder::new();
        let mut globbed = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            let invalid = |reason: String| {
                Error::ConfigInvalid(format!(
                    "{place}[{index}]: pattern '{}' {reason}",
                    rule.pattern
                ))
            };
            check_glob(&format!("{place}[{index}] pattern"), &rule.pattern)
                .map_err(|err| Error::ConfigInvalid(err.to_string()))?;
            let parsed = parse(&rule.pattern).map_err(invalid)?;
            match &parsed.glob {
                None => root.push(index),
                Some(glob) => {
                    let glob = GlobBuilder::new(glob)
                        .literal_separator(true)
                        .backslash_escape(true)
                        .case_insensitive(case_insensitive)
                        .build()
                        .map_err(|err| invalid(format!("is not a valid glob: {}", err.kind())))?;
                    builder.add(glob);
                    globbed.push(index);
                }
            }
            compiled.push(Compiled {
                rule: RuleRef {
                    place: Arc::clone(&place),
                    index,
                    pattern: rule.pattern.clone(),
                    approval: rule.approval,
                },
                dir_only: parsed.dir_only,
                literal: parsed.literal,
            });
        }
        let set = builder.build().map_err(|err| {
            Error::ConfigInvalid(format!(
                "{place}: the patterns are too complex to match with ({err}); use simpler ones"
            ))
        })?;
        Ok(PathRules {
            rules: compiled,
            root,
            set,
            globbed,
        })
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether some rule is `blocked`.
    pub fn has_blocked(&self) -> bool {
        self.rules
            .iter()
            .any(|compiled| compiled.rule.approval == Decision::Blocked)
    }

    /// The rule that names `relative` itself or a directory above it, leaving out the `**`
    /// rule for every path: a rule written for this path (`/tools.ts`, `src/**`), as opposed to
    /// the fallback of the whole work directory.
    pub fn decide_explicit(&self, relative: &Path, kind: EntryKind) -> Option<RuleRef> {
        self.decide_with(relative, kind, false)
    }

    /// The rule that decides `relative` (a normalised path below the work directory; empty
    /// or `.` is the work directory), or `None` when no rule matches it or a directory above it.
    pub fn decide(&self, relative: &Path, kind: EntryKind) -> Option<RuleRef> {
        self.decide_with(relative, kind, true)
    }

    /// Whether a `blocked` rule decides `relative`, for a walk from the work directory that
    /// enters only directories this returned `false` for (`fs::expand`). Such an entry whose own
    /// path no pattern matches has its parent's decision, known not to be `blocked` (at the top:
    /// the `**` rules'), so one glob match answers for most entries.
    pub fn blocks_in_walk(&self, relative: &Path, kind: EntryKind) -> bool {
        if !self.set.is_match(relative) {
            let top = relative.components().count() <= 1;
            return top
                && self
                    .best(self.root.iter().copied())
                    .is_some_and(|root| root.rule.approval == Decision::Blocked);
        }
        self.decide(relative, kind)
            .is_some_and(|rule| rule.approval == Decision::Blocked)
    }

    fn decide_with(&self, relative: &Path, kind: EntryKind, root: bool) -> Option<RuleRef> {
        let components: Vec<&std::ffi::OsStr> = relative
            .components()
            .filter_map(|component| match component {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        let mut best = if root {
            self.best(self.root.iter().copied())
        } else {
            None
        };
        let mut prefix = PathBuf::new();
        let mut matched = Vec::new();
        for (depth, name) in components.iter().enumerate() {
            if depth > 0 && best.is_some_and(|rule| rule.rule.approval == Decision::Blocked) {
                // A blocked directory: nothing inside it is opened again.
                break;
            }
            prefix.push(name);
            let kind = if depth + 1 < components.len() {
                EntryKind::Dir
            } else {
                kind
            };
            self.set.matches_into(&prefix, &mut matched);
            let here = self.best(
                matched
                    .iter()
                    .map(|&glob| self.globbed[glob])
                    .filter(|&index| !self.rules[index].dir_only || kind != EntryKind::File),
            );
            if here.is_some() {
                best = here;
            }
        }
        best.map(|compiled| compiled.rule.clone())
    }

    /// The most specific of `candidates`: most non-wildcard characters, then the strictest,
    /// then the first.
    fn best(&self, candidates: impl Iterator<Item = usize>) -> Option<&Compiled> {
        candidates.map(|index| &self.rules[index]).max_by(|a, b| {
            (a.literal, a.rule.approval)
                .cmp(&(b.literal, b.rule.approval))
                .then(b.rule.index.cmp(&a.rule.index))
        })
    }
}

/// A pattern turned into a glob over paths relative to the work directory.
struct Parsed {
    /// `None` for the work directory itself (`**`).
    glob: Option<String>,
    dir_only: bool,
    literal: usize,
}

fn parse(pattern: &str) -> std::result::Result<Parsed, String> {
    if pattern.is_empty() {
        return Err("is empty; use '**' for every path".into());
    }
    if pattern.trim() != pattern {
        return Err("starts or ends with whitespace; remove it (a name with such spaces can be matched with '?')".into());
    }
    if pattern.starts_with('!') {
        return Err("starts with '!': negation is not supported, because each rule carries its own approval. Write the exception as a more specific rule instead (e.g. { pattern: '.env.example', approval: preApproved } beside { pattern: '.env*', approval: blocked }); to match a name that starts with '!', write '\\!'".into());
    }
    let dir_only = pattern.ends_with('/');
    let body = pattern.trim_end_matches('/');
    if body.len() + 1 < pattern.len() {
        return Err("ends with more than one '/'; write one".into());
    }
    let leading = body.starts_with('/');
    let body = body.strip_prefix('/').unwrap_or(body);
    if body.is_empty() {
        return Err("names the work directory itself; use '**' for every path".into());
    }
    for component in body.split('/') {
        match component {
            "" => return Err("has an empty component ('//'); write one '/'".into()),
            "." | ".." => {
                return Err(format!(
                    "has a '{component}' component; patterns match paths as resolved inside the work directory, which never contain '.' or '..'"
                ))
            }
            _ => {}
        }
    }
    let anchored = leading || body.contains('/');
    let mut glob = body;
    while let Some(stripped) = glob.strip_suffix("/**") {
        glob = stripped;
    }
    let literal = literal_chars(pattern);
    if glob == "**" {
        return Ok(Parsed {
            glob: None,
            dir_only,
            literal,
        });
    }
    let glob = if anchored {
        glob.to_string()
    } else {
        format!("**/{glob}")
    };
    Ok(Parsed {
        glob: Some(glob),
        dir_only,
        literal,
    })
}

/// The characters of a pattern that are not wildcards (`*`, `?`, `[...]`, `{`, `}`, `,`) or
/// escapes: a longer literal part is a more specific pattern.
fn literal_chars(pattern: &str) -> usize {
    let mut count = 0;
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if chars.next().is_some() && !in_class {
                    count += 1;
                }
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '*' | '?' | '{' | '}' | ',' => {}
            _ => count += 1,
        }
    }
    count
}

#[cfg(test)]
mod tests;
