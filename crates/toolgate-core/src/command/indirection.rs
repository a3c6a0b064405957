//! Programs that run other programs by their own means: git's aliases, configuration and
//! sub-commands ([`super::git`]), and the runners of version managers, package managers and
//! build tools ([`super::runners`]: `pyenv exec`, `npx`, `npm exec`, `uv run`, `make`, …).
//!
//! Such a program is recognised like a rule's program: by the name it is run under or resolves
//! to (without version or extension; `<name>-<sub>` is `<name> <sub>`, as git and pyenv
//! dispatch), and by *file* (a hard link or symlink under another name). What it runs is then
//! [`Runs`]: the commands it visibly runs (`npx git push` runs `git push`; `git -c
//! alias.p=push p` runs `git push`), which the callers judge like the command itself — by the
//! same rules, the allowlist, the same checks — and whether it also runs something toolgate
//! cannot see (a Makefile's recipes, a `package.json` script, a git alias from a configuration
//! file). Forms that hand a command line to a shell (`npx -c`, `git -c alias.p='!…'`) are
//! refused outright.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use super::program::{FileId, Program};
use super::runners::{self, RUNNERS};
use super::runs::Runs;
use super::{git, Layer, Refusal};
use crate::error::Error;

/// How many programs deep a runner may run a runner (`npx pnpm dlx uvx …`).
pub(crate) const MAX_DEPTH: usize = 8;
/// How many commands one command may be judged as, in all (ambiguous forms and nesting).
pub(crate) const MAX_JUDGED: usize = 64;

/// A program that runs others: git, or one of the [`RUNNERS`] (by index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Git,
    Runner(usize),
}

impl Kind {
    fn names(self) -> &'static [&'static str] {
        match self {
            Kind::Git => &["git"],
            Kind::Runner(index) => RUNNERS[index].names,
        }
    }

    fn all() -> impl Iterator<Item = Kind> {
        std::iter::once(Kind::Git).chain((0..RUNNERS.len()).map(Kind::Runner))
    }

    fn has_sub_commands(self) -> bool {
        match self {
            Kind::Git => true,
            Kind::Runner(index) => !RUNNERS[index].subs.is_empty(),
        }
    }

    /// The kind whose name `form` is.
    fn named(form: &str) -> Option<Kind> {
        Kind::all().find(|kind| kind.names().contains(&form))
    }
}

/// The forms of a name compared with the table: lowercase, without what follows the first `.`,
/// and without trailing version digits (`Make4.3` → `make`, `npx-cli.js` → `npx-cli`).
fn name_forms(name: &str) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let before_dot = lower.split('.').next().unwrap_or(&lower).to_string();
    let strip = |text: &str| {
        text.trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
            .to_string()
    };
    let mut forms = Vec::new();
    for form in [
        lower.clone(),
        before_dot.clone(),
        strip(&before_dot),
        strip(&lower),
    ] {
        if !form.is_empty() && !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

fn basename(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}

/// The files of git and of the runners in the program directories, by (device, inode), so that
/// one reached through a link under another name is still recognised.
#[derive(Debug, Clone, Default)]
pub(crate) struct Indirections {
    ids: Vec<(FileId, Kind)>,
    /// Where `git-<word>` and `cargo-<word>` programs are looked for.
    dirs: Vec<PathBuf>,
}

impl Indirections {
    /// Looks for every name in `dirs` and in git's own directories (cached per directory and
    /// its modification time, for the whole process).
    pub fn find(dirs: &[PathBuf]) -> Self {
        let mut all: Vec<PathBuf> = dirs.to_vec();
        for dir in super::program::core_dirs("git") {
            let dir = PathBuf::from(dir);
            if !all.contains(&dir) && dir.is_dir() {
                all.push(dir);
            }
        }
        let mut ids = Vec::new();
        for dir in &all {
            for found in scan(dir) {
                if !ids.contains(&found) {
                    ids.push(found);
                }
            }
        }
        Self { ids, dirs: all }
    }

    /// What runs others in `text` (the program as the command names it, `program` as found):
    /// each kind it is, with the arguments as that kind sees them (`git-push x` is git with
    /// `push x`).
    fn kinds(
        &self,
        text: &str,
        program: Option<&Program>,
        args: &[String],
    ) -> Vec<(Kind, Vec<String>)> {
        let mut found: Vec<(Kind, Vec<String>)> = Vec::new();
        // Every reading is kept: `npm-cli.js exec …` is npm with `cli.js exec …` by its dashed
        // name, and npm with `exec …` by its real name.
        let add = |found: &mut Vec<(Kind, Vec<String>)>, kind: Kind, args: Vec<String>| {
            if !found
                .iter()
                .any(|(known, seen)| *known == kind && *seen == args)
            {
                found.push((kind, args));
            }
        };
        let run_as = program.map_or_else(|| basename(Path::new(text)), |p| basename(&p.path));
        let run_as = if run_as.is_empty() {
            text.to_string()
        } else {
            run_as
        };
        for form in name_forms(&run_as) {
            if let Some(kind) = Kind::named(&form) {
                add(&mut found, kind, args.to_vec());
            }
        }
        // `<name>-<sub>`: how git and the `*env` version managers dispatch.
        let lower = run_as.to_ascii_lowercase();
        for (at, _) in lower.match_indices('-') {
            let (name, sub) = (&lower[..at], &run_as[at + 1..]);
            if let Some(kind) = Kind::named(name).filter(|kind| kind.has_sub_commands()) {
                if !sub.is_empty() {
                    add(
                        &mut found,
                        kind,
                        std::iter::once(sub.to_string())
                            .chain(args.iter().cloned())
                            .collect(),
                    );
                }
            }
        }
        if let Some(program) = program {
            let real = basename(&program.real);
            let mut forms = name_forms(&real);
            let extra: Vec<String> = forms
                .iter()
                .filter_map(|form| form.strip_suffix("-cli").map(str::to_string))
                .collect();
            forms.extend(extra);
            for form in forms {
                if let Some(kind) = Kind::named(&form) {
                    add(&mut found, kind, args.to_vec());
                }
            }
            if let Some(id) = program.id {
                let same_file: Vec<Kind> = self
                    .ids
                    .iter()
                    .filter(|(known, _)| *known == id)
                    .map(|(_, kind)| *kind)
                    .collect();
                // A file that is several programs (rustup is also cargo and rustc) is the one
                // whose name it is run under; under any other name it may be any of them.
                if !found.iter().any(|(kind, _)| same_file.contains(kind)) {
                    for kind in same_file {
                        add(&mut found, kind, args.to_vec());
                    }
                }
            }
        }
        found
    }

    /// Whether a program `<prefix>-<word>` exists where git or cargo would look for it.
    fn external(&self, prefix: &str, word: &str) -> bool {
        if word.is_empty() || word.contains('/') {
            return false;
        }
        let name = format!("{prefix}-{word}");
        self.dirs.iter().any(|dir| dir.join(&name).is_file())
    }

    /// What `text args…` runs besides its own program; a refusal for forms that hand a command
    /// line to a shell or name programs toolgate cannot check.
    pub fn runs(
        &self,
        text: &str,
        program: Option<&Program>,
        args: &[String],
    ) -> Result<Runs, Refusal> {
        let mut runs = Runs::default();
        for (kind, args) in self.kinds(text, program, args) {
            let found = match kind {
                Kind::Git => {
                    let git_text = sibling(text, "git");
                    git::analyse(&git_text, &args, &|word| self.external("git", word))?
                }
                Kind::Runner(index) => {
                    runners::analyse(&RUNNERS[index], text, &args, &|prefix, word| {
                        self.external(prefix, word)
                    })?
                }
            };
            runs.merge(found);
        }
        Ok(runs)
    }
}

/// `text` with its last component replaced by `name` (`/usr/lib/git-core/git-push` →
/// `/usr/lib/git-core/git`), or `name` for a bare program name.
fn sibling(text: &str, name: &str) -> String {
    match text.rfind('/') {
        Some(at) => format!("{}{name}", &text[..=at]),
        None => name.to_string(),
    }
}

/// What a scan of one directory found, and the directory's modification time then.
type Scan = (Option<SystemTime>, Vec<(FileId, Kind)>);

/// The runner names found in `dir`, by file (cached per directory and modification time).
fn scan(dir: &Path) -> Vec<(FileId, Kind)> {
    static SCANS: OnceLock<Mutex<HashMap<PathBuf, Scan>>> = OnceLock::new();
    let scans = SCANS.get_or_init(Default::default);
    let modified = std::fs::metadata(dir).and_then(|meta| meta.modified()).ok();
    if let Some((when, found)) = scans.lock().ok().and_then(|scans| scans.get(dir).cloned()) {
        if when == modified && modified.is_some() {
            return found;
        }
    }
    let mut found = Vec::new();
    for kind in Kind::all() {
        for name in kind.names() {
            if let Ok(meta) = std::fs::metadata(dir.join(name)) {
                if meta.is_file() {
                    found.push(((meta.dev(), meta.ino()), kind));
                }
            }
        }
    }
    if let Ok(mut scans) = scans.lock() {
        scans.insert(dir.to_path_buf(), (modified, found.clone()));
    }
    found
}

/// A refusal for nesting beyond [`MAX_DEPTH`] or judging more than [`MAX_JUDGED`] commands.
pub(crate) fn too_deep(command: &[String]) -> Refusal {
    Refusal::new(
        Layer::Arguments,
        Error::ArgumentRejected(format!(
            "'{}' runs programs that run programs more than {MAX_DEPTH} deep (or in more than {MAX_JUDGED} readings); run the innermost command itself",
            super::arguments::quote(&command.join(" ")).trim_matches('\'')
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn runners_are_known_by_name_version_and_dashed_form() {
        let found = Indirections::default();
        let kinds = |text: &str, list: &[&str]| -> Vec<(Kind, Vec<String>)> {
            found.kinds(text, None, &args(list))
        };
        assert_eq!(kinds("git", &["push"]), [(Kind::Git, args(&["push"]))]);
        assert_eq!(kinds("/usr/bin/GIT2", &["push"])[0].0, Kind::Git);
        assert_eq!(
            kinds("/usr/lib/git-core/git-send-pack", &["x"]),
            [(Kind::Git, args(&["send-pack", "x"]))]
        );
        let pyenv = kinds("pyenv-exec", &["git", "push"]);
        assert_eq!(pyenv.len(), 1);
        assert_eq!(pyenv[0].1, args(&["exec", "git", "push"]));
        // The real file of npm is `npm-cli.js`: npm with `exec …`, whatever the dashed reading.
        let program = Program {
            path: "/x/npm-cli.js".into(),
            real: "/x/npm-cli.js".into(),
            id: None,
            loader: false,
        };
        let npm = found.kinds("/x/npm-cli.js", Some(&program), &args(&["exec", "git"]));
        assert!(
            npm.iter().any(|(_, seen)| *seen == args(&["exec", "git"])),
            "{npm:?}"
        );
        assert_eq!(kinds("make4.3", &[]).len(), 1);
        assert_eq!(kinds("npx", &[]).len(), 1);
        assert!(kinds("gitx", &["push"]).is_empty());
        assert!(kinds("makeself", &[]).is_empty());
        assert!(kinds("ls", &[]).is_empty());
        assert_eq!(
            sibling("/usr/lib/git-core/git-push", "git"),
            "/usr/lib/git-core/git"
        );
        assert_eq!(sibling("git-push", "git"), "git");
    }

    #[test]
    fn a_link_under_another_name_is_known_by_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("npx-cli.js");
        std::fs::write(&real, "#!/bin/true\n").unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::hard_link(&real, bin.join("npx")).unwrap();
        std::fs::hard_link(&real, dir.path().join("innocent")).unwrap();
        let found = Indirections::find(std::slice::from_ref(&bin));
        let program = Program {
            path: dir.path().join("innocent"),
            real: dir.path().join("innocent"),
            id: super::super::program::identity(&dir.path().join("innocent")),
            loader: false,
        };
        let kinds = found.kinds("./innocent", Some(&program), &args(&["git", "push"]));
        assert_eq!(kinds.len(), 1, "{kinds:?}");
        // And by the real basename of a symlink (`npx` → `npx-cli.js`).
        std::os::unix::fs::symlink(&real, dir.path().join("other")).unwrap();
        let program = Program {
            path: dir.path().join("other"),
            real: real.clone(),
            id: None,
            loader: false,
        };
        assert_eq!(found.kinds("./other", Some(&program), &[]).len(), 1);
    }
}
