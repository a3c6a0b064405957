//! git's own ways of running other programs, and of running one of its sub-commands under
//! another name.
//!
//! - **Configuration in the arguments** (`-c key=value`, `--config-env key=VAR`, `clone -c`,
//!   `clone --config`, `git config key value`): a value that begins with `!` is a shell command
//!   for git (aliases, credential helpers, submodule update); keys that name a program
//!   (`core.pager`, `core.sshCommand`, `core.fsmonitor`, `core.hooksPath`, `diff.external`,
//!   `credential.helper`, `gpg.program`, `filter.<x>.clean`, …) make git run it, most through a
//!   shell; `include.path` reads more configuration from a file. All are refused: toolgate
//!   cannot check what they run.
//! - **Aliases** defined with `-c alias.<name>=<value>` are spelled out: `git -c alias.p=push p`
//!   is judged as `git push`. One defined through `--config-env` is refused (its value is not in
//!   the command).
//! - **Sub-commands under other names**: `send-pack`, `http-push` and `receive-pack` push;
//!   `fetch-pack`, `upload-pack` and `http-fetch` fetch; the `remote-<transport>` helpers do
//!   both. Each is judged as the sub-command it is (`git send-pack` as `git push`).
//! - **Unknown sub-commands**: a word that is neither a git command nor a `git-<word>` program
//!   is looked up as an alias in git's configuration files, or corrected to a similar command
//!   (`help.autocorrect`: `git psuh` pushes). toolgate cannot see either, so such a command
//!   could run anything git can.
//! - **Options that run a command**: `rebase --exec`, `bisect run`, `submodule foreach`,
//!   `filter-branch --*-filter`, `difftool --extcmd`, `--upload-pack`, `--receive-pack`,
//!   `--exec`, `send-email --sendmail-cmd`, `grep --open-files-in-pager=<pager>`,
//!   `daemon --access-hook`, `init`/`clone --template`, `--exec-path=<dir>`. Those that take a
//!   command line run it with a shell and are refused; `bisect run <cmd…>` and `for-each-repo`
//!   run a visible command, which is judged.

use super::runs::{Inner, Runs};
use super::split::split_command;
use super::{Layer, Refusal};
use crate::error::Error;

/// git's commands (builtins and the programs git ships), as `git --list-cmds=main` lists them,
/// and newer ones. A word that is none of these and no `git-<word>` program is an alias or a
/// typo git may correct.
const COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archimport",
    "archive",
    "backfill",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout--worker",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "citool",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-cache--daemon",
    "credential-store",
    "cvsexportcommit",
    "cvsimport",
    "cvsserver",
    "daemon",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-pairs",
    "diff-tree",
    "difftool",
    "difftool--helper",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "fsmonitor--daemon",
    "gc",
    "get-tar-commit-id",
    "gitk",
    "gitweb",
    "grep",
    "gui",
    "hash-object",
    "help",
    "hook",
    "http-backend",
    "http-fetch",
    "http-push",
    "imap-send",
    "index-pack",
    "init",
    "init-db",
    "instaweb",
    "interpret-trailers",
    "last-modified",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-octopus",
    "merge-one-file",
    "merge-ours",
    "merge-recursive",
    "merge-recursive-ours",
    "merge-recursive-theirs",
    "merge-resolve",
    "merge-subtree",
    "merge-tree",
    "mergetool",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "p4",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "pickaxe",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "quiltimport",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "refs",
    "remote",
    "remote-ext",
    "remote-fd",
    "remote-ftp",
    "remote-ftps",
    "remote-http",
    "remote-https",
    "repack",
    "replace",
    "replay",
    "repo",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-email",
    "send-pack",
    "sh-i18n--envsubst",
    "shell",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "submodule--helper",
    "svn",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-archive--writer",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "web--browse",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Sub-commands that do what another one does, for the rules: `git send-pack` pushes.
const SAME_AS: &[(&str, &[&str])] = &[
    ("send-pack", &["push"]),
    ("http-push", &["push"]),
    ("receive-pack", &["push"]),
    ("fetch-pack", &["fetch"]),
    ("upload-pack", &["fetch"]),
    ("http-fetch", &["fetch"]),
    ("remote-http", &["push", "fetch"]),
    ("remote-https", &["push", "fetch"]),
    ("remote-ftp", &["push", "fetch"]),
    ("remote-ftps", &["push", "fetch"]),
];

/// Global options that take a value (`-C <dir>`, `--git-dir=<dir>`).
const VALUED: &[&str] = &[
    "-C",
    "-c",
    "--config-env",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--attr-source",
    "--list-cmds",
];

/// Global options without a value.
const FLAGS: &[&str] = &[
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--bare",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--html-path",
    "--man-path",
    "--info-path",
    "--exec-path",
    "-v",
    "--version",
    "-h",
    "--help",
];

/// Configuration sections all of whose keys name programs (or pagers, editors, drivers).
const PROGRAM_SECTIONS: &[&str] = &[
    "pager",
    "guitool",
    "difftool",
    "mergetool",
    "man",
    "browser",
    "instaweb",
    "filter",
    "sendemail",
    "gpg",
    "trailer",
    "web",
];

/// Variable names that name a program in any section (`core.pager`, `diff.<x>.textconv`,
/// `credential.helper`, `remote.<x>.uploadpack`).
const PROGRAM_NAMES: &[&str] = &[
    "sshcommand",
    "pager",
    "editor",
    "fsmonitor",
    "hookspath",
    "askpass",
    "gitproxy",
    "alternaterefscommand",
    "external",
    "command",
    "cmd",
    "program",
    "helper",
    "driver",
    "textconv",
    "clean",
    "smudge",
    "process",
    "uploadpack",
    "receivepack",
    "packobjectshook",
    "templatedir",
    "difffilter",
    "browser",
    "vcs",
    "defaultkeycommand",
    "sendmailcmd",
    "smtpserver",
    "tocmd",
    "cccmd",
    "headercmd",
    "httpd",
    "accesshook",
];

/// Sub-command options whose value is a command git runs (most through a shell): (sub-command,
/// long options, short option letters).
const COMMAND_OPTIONS: &[(&str, &[&str], &str)] = &[
    ("rebase", &["exec"], "x"),
    ("difftool", &["extcmd"], "x"),
    ("fetch", &["upload-pack"], ""),
    ("pull", &["upload-pack"], ""),
    ("clone", &["upload-pack", "template"], "u"),
    ("ls-remote", &["upload-pack"], "u"),
    ("push", &["receive-pack", "exec"], ""),
    ("send-pack", &["receive-pack", "exec"], ""),
    ("archive", &["exec"], ""),
    ("init", &["template"], ""),
    ("init-db", &["template"], ""),
    ("daemon", &["access-hook"], ""),
    ("grep", &["open-files-in-pager"], ""),
    (
        "send-email",
        &[
            "sendmail-cmd",
            "smtp-server",
            "to-cmd",
            "cc-cmd",
            "header-cmd",
        ],
        "",
    ),
    (
        "filter-branch",
        &[
            "setup",
            "env-filter",
            "tree-filter",
            "index-filter",
            "parent-filter",
            "msg-filter",
            "commit-filter",
            "tag-name-filter",
        ],
        "",
    ),
];

/// Sub-commands that run programs toolgate cannot see, and what they run.
const UNKNOWABLE: &[(&str, &str)] = &[
    ("hook", "runs a hook script of the repository"),
    ("instaweb", "starts a web server program"),
    ("web--browse", "starts a browser program"),
];

fn refused(layer: Layer, error: Error) -> Refusal {
    Refusal::new(layer, error)
}

fn shell_refusal(what: &str) -> Refusal {
    refused(
        Layer::ShellOrTrampoline,
        Error::ShellNotAllowed {
            binary: "git".into(),
            reason: format!(
                "{what}, which git runs with a shell, and toolgate never runs a shell; run the commands themselves"
            ),
        },
    )
}

fn argument_refusal(index: usize, arg: &str, why: &str) -> Refusal {
    refused(
        Layer::Arguments,
        Error::ArgumentRejected(format!(
            "args[{index}] ({}) {why}",
            super::arguments::quote(arg)
        )),
    )
}

/// A configuration definition found in the arguments.
struct Definition<'a> {
    /// Index of the argument that holds it.
    index: usize,
    key: &'a str,
    /// `None` for `--config-env` (the value is in an environment variable) and for a key
    /// without `=` (boolean true).
    value: Option<&'a str>,
    from_environment: bool,
}

/// Every configuration definition in `args`: `-c k=v`, `-ck=v`, `--config-env[=]k=VAR`,
/// `--config[=]k=v` (clone). Found anywhere, so that `clone -c` and a `-c` after the
/// sub-command are seen too; whether it is an option there is not for this check to guess.
fn definitions(args: &[String]) -> Vec<Definition<'_>> {
    let mut found = Vec::new();
    for (index, arg) in args.iter().enumerate() {
        let next = || args.get(index + 1).map(String::as_str);
        let (text, at, from_environment) = if arg == "-c" || arg == "--config" {
            match next() {
                Some(text) => (text, index + 1, false),
                None => continue,
            }
        } else if arg == "--config-env" {
            match next() {
                Some(text) => (text, index + 1, true),
                None => continue,
            }
        } else if let Some(text) = arg.strip_prefix("--config-env=") {
            (text, index, true)
        } else if let Some(text) = arg.strip_prefix("--config=") {
            (text, index, false)
        } else if let Some(text) = arg.strip_prefix("-c").filter(|text| !text.is_empty()) {
            (text, index, false)
        } else {
            continue;
        };
        let (key, value) = match text.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (text, None),
        };
        if !key.contains('.') {
            continue;
        }
        found.push(Definition {
            index: at,
            key,
            value: if from_environment { None } else { value },
            from_environment,
        });
    }
    found
}

/// Why a configuration key (with its value) is refused, or `None`.
fn refusal_of_key(key: &str, value: Option<&str>) -> Option<String> {
    let lower = key.to_ascii_lowercase();
    let section = lower.split('.').next().unwrap_or("");
    let name = lower.rsplit('.').next().unwrap_or("");
    if value.is_some_and(|value| value.trim_start().starts_with('!')) {
        return Some(format!(
            "sets git's '{key}' to a value starting with '!', which git runs as a shell command, and toolgate never runs a shell"
        ));
    }
    if section == "alias" {
        return None;
    }
    if matches!(section, "include" | "includeif") {
        return Some(format!(
            "sets git's '{key}', which makes git read more configuration (aliases, programs to run) from a file toolgate cannot check"
        ));
    }
    if section == "protocol"
        && (name == "allow" || lower.contains(".ext.") || lower.contains(".fd."))
    {
        return Some(format!(
            "sets git's '{key}', which lets git use transports that run commands"
        ));
    }
    if section == "help" && matches!(name, "browser" | "format") {
        return Some(format!(
            "sets git's '{key}', which names a program git runs"
        ));
    }
    if PROGRAM_SECTIONS.contains(&section) || PROGRAM_NAMES.contains(&name) {
        return Some(format!(
            "sets git's '{key}', which names a program git runs (most through a shell), so toolgate cannot check what runs"
        ));
    }
    None
}

/// The aliases defined before `before` (name, value), after refusing every definition in the
/// whole command that names a program or is a shell command.
fn checked_definitions(args: &[String]) -> Result<Vec<(usize, &str, &str)>, Refusal> {
    let mut aliases = Vec::new();
    for definition in definitions(args) {
        let arg = &args[definition.index];
        if let Some(why) = refusal_of_key(definition.key, definition.value) {
            if definition
                .value
                .is_some_and(|value| value.trim_start().starts_with('!'))
            {
                return Err(shell_refusal(&format!(
                    "args[{}] ({}) sets '{}' to a shell command ('!…')",
                    definition.index,
                    super::arguments::quote(arg),
                    definition.key
                )));
            }
            return Err(argument_refusal(
                definition.index,
                arg,
                &format!("{why}; remove it (configure git in the repository instead)"),
            ));
        }
        let lower = definition.key.to_ascii_lowercase();
        if let Some(name) = lower.strip_prefix("alias.") {
            if definition.from_environment {
                return Err(argument_refusal(
                    definition.index,
                    arg,
                    "defines a git alias whose value comes from an environment variable, so toolgate cannot see what it runs; define it with -c alias.<name>=<value> or run the command itself",
                ));
            }
            // `alias.<name>` and `alias.<name>.command`: the name is what follows `alias.`.
            let name = name.strip_suffix(".command").unwrap_or(name);
            let start = "alias.".len();
            let name = &definition.key[start..start + name.len()];
            aliases.push((definition.index, name, definition.value.unwrap_or("")));
        }
    }
    Ok(aliases)
}

/// The positions where git's sub-command may be: after the global options, each of which may
/// take a value (an unknown one both ways). `Err` for `--exec-path=<dir>`.
fn sub_command_positions(args: &[String]) -> Result<Vec<usize>, Refusal> {
    let mut reach = vec![false; args.len() + 2];
    reach[0] = true;
    let mut found = Vec::new();
    for (index, arg) in args.iter().enumerate() {
        if !reach[index] {
            continue;
        }
        if let Some(dir) = arg.strip_prefix("--exec-path=") {
            return Err(argument_refusal(
                index,
                arg,
                &format!(
                    "makes git run its sub-commands and helpers from '{dir}', programs toolgate cannot check; remove it"
                ),
            ));
        }
        if arg == "--" || !arg.starts_with('-') || arg.len() == 1 {
            found.push(index);
            continue;
        }
        let name = arg.split('=').next().unwrap_or(arg);
        let attached = arg.contains('=') || (arg.starts_with("-c") && arg.len() > 2);
        if FLAGS.contains(&arg.as_str()) {
            reach[index + 1] = true;
        } else if VALUED.contains(&name) {
            reach[index + if attached { 1 } else { 2 }] = true;
        } else {
            reach[index + 1] = true;
            if !attached {
                reach[index + 2] = true;
            }
        }
    }
    Ok(found)
}

/// What `git <args>` runs besides git itself. `program` is the git to name in the commands it
/// runs; `external(word)` says whether a `git-<word>` program exists where git looks.
pub(crate) fn analyse(
    program: &str,
    args: &[String],
    external: &dyn Fn(&str) -> bool,
) -> Result<Runs, Refusal> {
    let aliases = checked_definitions(args)?;
    let mut runs = Runs::default();
    for at in sub_command_positions(args)? {
        let sub = args[at].as_str();
        if sub == "--" {
            continue;
        }
        let globals = &args[..at];
        let rest = &args[at + 1..];
        let command = |words: &[&str]| -> Vec<String> {
            std::iter::once(program.to_string())
                .chain(globals.iter().cloned())
                .chain(words.iter().map(|word| word.to_string()))
                .chain(rest.iter().cloned())
                .collect()
        };
        let known = COMMANDS.contains(&sub) || external(sub);
        if let Some((_, _, value)) = aliases
            .iter()
            .rev()
            .find(|(index, name, _)| *index < at && name.eq_ignore_ascii_case(sub))
        {
            let words = split_command(value).map_err(|err| {
                argument_refusal(
                    at,
                    sub,
                    &format!(
                        "is the git alias '{value}', which cannot be read as git reads it ({err}); run the command itself"
                    ),
                )
            })?;
            if words.is_empty() {
                return Err(argument_refusal(at, sub, "is a git alias with no value"));
            }
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            runs.commands.push(Inner::new(
                command(&words),
                format!("'{sub}' is the git alias '{value}'"),
            ));
            if !known {
                continue;
            }
        }
        if let Some((_, same)) = SAME_AS.iter().find(|(name, _)| *name == sub) {
            for equivalent in *same {
                runs.commands.push(Inner::new(
                    command(&[*equivalent]),
                    format!("git {sub} does what git {equivalent} does"),
                ));
            }
        }
        match sub {
            "shell" => return Err(shell_refusal("'git shell' is git's restricted login shell")),
            "remote-ext" | "remote-fd" => {
                return Err(argument_refusal(
                    at,
                    sub,
                    "is git's transport that runs a command or uses inherited descriptors; give a repository URL or a path",
                ))
            }
            _ => {}
        }
        if let Some((_, what)) = UNKNOWABLE.iter().find(|(name, _)| *name == sub) {
            runs.unknowable = Some(format!("git {sub} {what}"));
            continue;
        }
        if !known {
            runs.unknowable = Some(format!(
                "'{sub}' is not a git command, so git looks it up as an alias in its configuration files or corrects it to a similar command (help.autocorrect), and toolgate cannot tell what runs"
            ));
            continue;
        }
        check_command_options(sub, at, args)?;
        match sub {
            "bisect" if rest.first().map(String::as_str) == Some("run") => {
                let Some(inner) = rest.get(1..).filter(|inner| !inner.is_empty()) else {
                    continue;
                };
                if inner[0].contains(SHELL_META) {
                    return Err(shell_refusal(&format!(
                        "'git bisect run {}' names a command with shell syntax",
                        inner[0]
                    )));
                }
                runs.commands.push(Inner::new(
                    inner.to_vec(),
                    "git bisect run runs it".to_string(),
                ));
            }
            "submodule" | "submodule--helper" if rest.iter().any(|arg| arg == "foreach") => {
                return Err(shell_refusal("'git submodule foreach' runs a command line"));
            }
            "for-each-repo" => {
                let operands = first_operand(rest, &["--config"]).map_or(&[][..], |at| &rest[at..]);
                if !operands.is_empty() {
                    let mut inner = vec![program.to_string()];
                    inner.extend(operands.iter().cloned());
                    runs.commands.push(Inner::new(
                        inner,
                        "git for-each-repo runs it in each repository".to_string(),
                    ));
                }
            }
            "config" => check_config_writes(at, args)?,
            _ => {}
        }
    }
    Ok(runs)
}

/// Where the operands of `args` start: after options (those in `valued` take the next
/// argument as their value) and after `--`.
fn first_operand(args: &[String], valued: &[&str]) -> Option<usize> {
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        if arg == "--" {
            return (index + 1 < args.len()).then_some(index + 1);
        }
        if !arg.starts_with('-') {
            return Some(index);
        }
        index += if valued.contains(&arg.as_str()) { 2 } else { 1 };
    }
    None
}

/// The characters that make git run a command through `sh -c` instead of directly.
const SHELL_META: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '"', '\'', ' ', '\t', '*', '?', '[', '#',
    '~', '=', '%',
];

/// Refuses a sub-command option that names a command (`rebase --exec`, `push --receive-pack`),
/// also abbreviated (`--ex=`, as git accepts any unique prefix) or in a cluster (`-ix`).
fn check_command_options(sub: &str, at: usize, args: &[String]) -> Result<(), Refusal> {
    let Some((_, long, short)) = COMMAND_OPTIONS.iter().find(|(name, _, _)| *name == sub) else {
        return Ok(());
    };
    for (index, arg) in args.iter().enumerate().skip(at + 1) {
        if arg == "--" {
            break;
        }
        let hit = if let Some(name) = arg.strip_prefix("--") {
            let name = name.split('=').next().unwrap_or(name);
            !name.is_empty() && long.iter().any(|option| option.starts_with(name))
        } else if let Some(cluster) = arg.strip_prefix('-') {
            // `-O<pager>` for grep; other short options here take their value separately too.
            (sub == "grep" && cluster.starts_with('O') && cluster.len() > 1)
                || cluster.chars().any(|letter| short.contains(letter))
        } else {
            false
        };
        if hit {
            return Err(argument_refusal(
                index,
                arg,
                &format!(
                    "makes git {sub} run a command (or copy hooks) toolgate cannot check; run the commands themselves"
                ),
            ));
        }
    }
    Ok(())
}

/// `git config <key> <value>` (and `config set`, `--add`, `--replace-all`) writing a key that
/// names a program, or an alias that is a shell command: refused like the same key in `-c`.
fn check_config_writes(at: usize, args: &[String]) -> Result<(), Refusal> {
    const READS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "get",
        "-l",
        "--list",
        "list",
        "--unset",
        "--unset-all",
        "unset",
        "--remove-section",
        "remove-section",
        "--rename-section",
        "rename-section",
    ];
    let rest = &args[at + 1..];
    if rest.iter().any(|arg| READS.contains(&arg.as_str())) {
        return Ok(());
    }
    let operands: Vec<(usize, &String)> = rest
        .iter()
        .enumerate()
        .filter(|(_, arg)| !arg.starts_with('-') && arg.as_str() != "set")
        .map(|(offset, arg)| (at + 1 + offset, arg))
        .collect();
    for (position, (index, key)) in operands.iter().enumerate() {
        if !key.contains('.') {
            continue;
        }
        let value = operands.get(position + 1).map(|(_, value)| value.as_str());
        if let Some(why) = refusal_of_key(key, value.or(Some(""))) {
            return Err(argument_refusal(
                *index,
                key,
                &format!("{why}; toolgate does not write such settings"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    fn no_externals(_: &str) -> bool {
        false
    }

    fn analysed(list: &[&str]) -> Result<Runs, Refusal> {
        analyse("git", &args(list), &no_externals)
    }

    fn commands(list: &[&str]) -> Vec<Vec<String>> {
        analysed(list)
            .unwrap_or_else(|refusal| panic!("{list:?}: {}", refusal.error))
            .commands
            .into_iter()
            .map(|inner| inner.argv)
            .collect()
    }

    fn refusal(list: &[&str]) -> (Layer, String, String) {
        match analysed(list) {
            Ok(runs) => panic!("{list:?} passed: {runs:?}"),
            Err(refusal) => (
                refusal.layer,
                refusal.error.code().to_string(),
                refusal.error.to_string(),
            ),
        }
    }

    #[test]
    fn shell_aliases_and_program_keys_are_refused_in_every_spelling() {
        for list in [
            &["-c", "alias.p=!git \"push\"", "p", "origin"][..],
            &["-c", "alias.p=!exec git push", "p"],
            &["-c", "alias.p=!git-push", "p"],
            &["-c", "alias.p=!sh -c 'git push'", "p"],
            &["-c", "alias.p=!f(){ git push; }; f", "p"],
            &["-c", "alias.p= !git push", "p"],
            &["-calias.p=!git push", "p"],
            &["-c", "ALIAS.P=!git push", "p"],
            &["-c", "alias.p.command=!git push", "p"],
            &["-c", "credential.helper=!touch x", "status"],
            &["-c", "submodule.x.update=!git push", "submodule", "update"],
            &["clone", "-c", "alias.p=!git push", "src", "dst"],
        ] {
            let (layer, code, message) = refusal(list);
            assert_eq!(code, "SHELL_NOT_ALLOWED", "{list:?}: {message}");
            assert_eq!(layer, Layer::ShellOrTrampoline);
            assert!(message.contains("shell"), "{message}");
        }
        for list in [
            &["-c", "core.pager=sh -c x", "log"][..],
            &["-c", "core.sshCommand=touch x", "fetch"],
            &["-c", "CORE.SSHCOMMAND=touch x", "fetch"],
            &["-c", "core.editor=x", "commit"],
            &["-c", "core.fsmonitor=./x", "status"],
            &["-c", "core.hooksPath=hooks", "commit"],
            &["-c", "diff.external=./x", "diff"],
            &["-c", "diff.x.textconv=./x", "diff"],
            &["-c", "filter.x.clean=./x", "add", "."],
            &["-c", "credential.helper=store", "fetch"],
            &["-c", "credential.https://x.helper=./x", "fetch"],
            &["-c", "remote.origin.uploadpack=./x", "fetch"],
            &["-c", "remote.origin.receivepack=./x", "push"],
            &["-c", "protocol.ext.allow=always", "fetch"],
            &["-c", "protocol.allow=always", "fetch"],
            &["-c", "sequence.editor=./x", "rebase", "-i"],
            &["-c", "gpg.program=./x", "commit", "-S"],
            &["-c", "gpg.ssh.defaultKeyCommand=./x", "commit", "-S"],
            &["-c", "uploadpack.packObjectsHook=./x", "fetch"],
            &["-c", "include.path=./evil", "status"],
            &["-c", "includeIf.gitdir:/.path=./evil", "status"],
            &["-c", "init.templateDir=./t", "init", "x"],
            &["-c", "core.fsmonitor", "status"],
            &["--config-env", "core.pager=PATH", "log"],
            &["--config-env=core.editor=LANG", "commit"],
            &["--config-env=alias.p=PATH", "p"],
            &["clone", "--config", "core.hooksPath=h", "src", "dst"],
            &["clone", "--config=core.fsmonitor=./x", "src", "dst"],
            &["config", "core.fsmonitor", "./x"],
            &["config", "set", "core.pager", "./x"],
            &["config", "--add", "credential.helper", "./x"],
            &["config", "include.path", "./evil"],
            &["--exec-path=./evil", "status"],
            &["rebase", "-x", "git push"],
            &["rebase", "--exec=git push"],
            &["rebase", "--ex", "git push"],
            &["rebase", "-ix", "git push"],
            &["fetch", "--upload-pack=touch x; git-upload-pack", "."],
            &["fetch", "--upload", "x", "."],
            &["clone", "-u", "x", "src", "dst"],
            &["clone", "--template=./t", "src", "dst"],
            &["init", "--template", "./t"],
            &["ls-remote", "--upload-pack=x", "."],
            &["push", "--receive-pack=x", "origin"],
            &["push", "--exec=x", "origin"],
            &["archive", "--exec=x", "--remote=.", "HEAD"],
            &["difftool", "-x", "./x"],
            &["difftool", "--extcmd=./x"],
            &["grep", "-O./x", "needle"],
            &["grep", "--open-files-in-pager=./x", "needle"],
            &["send-email", "--sendmail-cmd=./x", "p.patch"],
            &["filter-branch", "--tree-filter", "git push", "HEAD"],
            &["daemon", "--access-hook=./x"],
            &["remote-ext", "origin", "sh -c x"],
        ] {
            let (_, code, message) = refusal(list);
            assert_eq!(code, "ARGUMENT_REJECTED", "{list:?}: {message}");
            assert!(message.contains("args["), "{message}");
        }
        for list in [
            &["submodule", "foreach", "git push"][..],
            &["submodule--helper", "foreach", "git push"],
            &[
                "-C",
                ".",
                "submodule",
                "--quiet",
                "foreach",
                "--recursive",
                "git push",
            ],
            &["shell", "-c", "x"],
        ] {
            assert_eq!(refusal(list).1, "SHELL_NOT_ALLOWED", "{list:?}");
        }
    }

    #[test]
    fn aliases_are_spelled_out_and_equivalent_sub_commands_named() {
        assert_eq!(
            commands(&["-c", "alias.p=push", "p", "origin"]),
            [args(&["git", "-c", "alias.p=push", "push", "origin"])]
        );
        assert_eq!(
            commands(&["-c", "alias.p=push --force", "-C", ".", "p"]),
            [args(&[
                "git",
                "-c",
                "alias.p=push --force",
                "-C",
                ".",
                "push",
                "--force"
            ])]
        );
        // Quoting inside the value is read as git reads it.
        assert_eq!(
            commands(&["-c", "alias.p='push' \"origin\"", "p"]),
            [args(&[
                "git",
                "-c",
                "alias.p='push' \"origin\"",
                "push",
                "origin"
            ])]
        );
        // An alias of an alias, and one for send-pack, which pushes.
        let nested = commands(&["-c", "alias.p=send-pack", "p", "origin"]);
        assert_eq!(
            nested,
            [args(&[
                "git",
                "-c",
                "alias.p=send-pack",
                "send-pack",
                "origin"
            ])]
        );
        assert_eq!(
            commands(&["send-pack", "origin", "main"]),
            [args(&["git", "push", "origin", "main"])]
        );
        assert_eq!(
            commands(&["-C", ".", "remote-https", "origin"]),
            [
                args(&["git", "-C", ".", "push", "origin"]),
                args(&["git", "-C", ".", "fetch", "origin"])
            ]
        );
        assert_eq!(
            commands(&["bisect", "run", "git", "push"]),
            [args(&["git", "push"])]
        );
        assert_eq!(
            commands(&["for-each-repo", "--config=maintenance.repo", "push"]),
            [args(&["git", "push"])]
        );
        // Nothing else runs for ordinary commands, and harmless keys pass.
        assert!(commands(&["-c", "user.name=x", "-c", "color.ui=never", "status"]).is_empty());
        assert!(commands(&["log", "-c", "--oneline"]).is_empty());
        assert!(commands(&["config", "--get", "core.pager"]).is_empty());
        assert!(commands(&["config", "user.name", "x"]).is_empty());
        assert!(commands(&["rebase", "-i", "HEAD~2"]).is_empty());
    }

    #[test]
    fn unknown_sub_commands_cannot_be_seen_through() {
        for list in [
            &["psuh", "origin"][..],
            &["-c", "help.autocorrect=immediate", "psuh"],
            &["-c", "help.autocorrect=1", "psuh"],
            &["-c", "help.autocorrect=prompt", "psuh"],
            &["PUSH"],
            &["-C", ".", "p"],
            &["hook", "run", "pre-commit"],
        ] {
            let runs = analysed(list).unwrap();
            assert!(runs.unknowable.is_some(), "{list:?}");
        }
        // An unknown option before the sub-command is read both ways.
        let runs = analysed(&["--new-option", "psuh", "status"]).unwrap();
        assert!(runs.unknowable.is_some());
        // A `git-<word>` program is what git runs for <word>, before any alias.
        let runs = analyse("git", &args(&["lfs", "pull"]), &|word| word == "lfs").unwrap();
        assert!(runs.unknowable.is_none());
        assert!(analysed(&["status"]).unwrap().unknowable.is_none());
    }
}
