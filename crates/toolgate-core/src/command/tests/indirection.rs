//! Attacks on the rules through programs that run other programs by their own means (git's
//! aliases, configuration, autocorrect and sub-commands; `pyenv exec`, `npx`, `npm exec`;
//! `make`), against real programs where they are installed. Each attack is first run without
//! toolgate and seen to push to a bare remote; then, with `git` preApproved and `git push`
//! blocked, every variant is refused and the remote stays as it was.

use std::path::Path;
use std::process::Command;

use super::attack::{fixture, installed, open_shell, repository, strings, Fixture};
use crate::command::*;

use Approval::{Ask, Blocked, PreApproved};

/// The branches of a bare repository.
fn heads(remote: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(remote.join("refs/heads"))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if let Ok(packed) = std::fs::read_to_string(remote.join("packed-refs")) {
        names.extend(
            packed
                .lines()
                .filter_map(|line| line.split_once(" refs/heads/"))
                .map(|(_, name)| name.to_string()),
        );
    }
    names.sort();
    names
}

/// Runs `program args…` without toolgate in the work directory (HOME outside it).
fn directly(f: &Fixture, program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .current_dir(&f.work)
        .env("HOME", &f.base)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

fn code(shell: &ShellToolset, command: &str) -> Option<&'static str> {
    shell
        .explain(command)
        .refusal
        .map(|refusal| refusal.error.code())
}

/// The issue's setting: git preApproved, git push blocked, everything else preApproved.
fn git_rules(f: &Fixture) -> ShellToolset {
    open_shell(f, &[("git", PreApproved), ("git push", Blocked)])
}

#[test]
fn git_aliases_autocorrect_and_pushing_sub_commands_never_push() {
    let f = fixture();
    let Some(git) = installed("git") else {
        return;
    };
    let remote = repository(&f, &git);
    let git = git.to_str().unwrap();
    // Without toolgate, each of these pushes (a branch of its own).
    for (args, branch) in [
        (&["-c", "alias.p=!git push -q origin main:a", "p"][..], "a"),
        (
            &[
                "-c",
                "help.autocorrect=immediate",
                "psuh",
                "-q",
                "origin",
                "main:b",
            ],
            "b",
        ),
        (
            &[
                "-c",
                "alias.p=send-pack",
                "p",
                remote.to_str().unwrap(),
                "main:c",
            ],
            "c",
        ),
        (&["-c", "alias.p=push", "p", "-q", "origin", "main:d"], "d"),
    ] {
        let output = directly(&f, git, args);
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert!(
            heads(&remote).contains(&branch.to_string()),
            "{args:?} did not push"
        );
    }
    let before = heads(&remote);

    let shell = git_rules(&f);
    let remote_text = remote.display().to_string();
    let shells = [
        "git -c 'alias.p=!git \"push\"' p origin main",
        "git -c 'alias.p=!exec git push' p",
        "git -c 'alias.p=!git-push' p origin main",
        "git -c \"alias.p=!git push\" p",
        "git -c alias.p='!git push' p",
        "git -c 'alias.p=!sh -c \"git push\"' p",
        "git -c 'alias.p=!f(){ git push; }; f' p",
        "git -c 'alias.p= !git push' p",
        "git -calias.p='!git push' p",
        "git -c 'ALIAS.P=!git push' P",
        "git -C . -c 'alias.p=!git push' p",
        "git -c 'alias.p=!git push' status",
        "git clone -c 'alias.p=!git push' . x",
    ];
    for command in shells {
        assert_eq!(
            code(&shell, command),
            Some("SHELL_NOT_ALLOWED"),
            "{command}"
        );
    }
    let blocked = [
        "git -c help.autocorrect=immediate psuh origin main".to_string(),
        "git -c help.autocorrect=1 psuh origin main".to_string(),
        "git -c help.autocorrect=prompt psuh origin main".to_string(),
        "git -c help.autocorrect=-1 psuh".to_string(),
        "git psuh origin main".to_string(),
        "git PUSH origin main".to_string(),
        format!("git -c alias.p=send-pack p {remote_text} main"),
        format!("git send-pack {remote_text} main"),
        "git -c alias.p=push p origin main".to_string(),
        "git -c alias.p='push' p origin main".to_string(),
        "git -c 'alias.p=push --force' p".to_string(),
        "git -c alias.p=push -c alias.q=p q origin".to_string(),
        "git -C . -c alias.p=push p".to_string(),
        "git -c alias.status=push status".to_string(),
        "git http-push origin".to_string(),
        "git remote-https origin".to_string(),
        "git bisect run git push".to_string(),
        "git for-each-repo --config=maintenance.repo push".to_string(),
    ];
    for command in &blocked {
        assert_eq!(code(&shell, command), Some("COMMAND_BLOCKED"), "{command}");
        let message = shell.prepare(command).unwrap_err().to_string();
        assert!(message.contains("git push"), "{command}: {message}");
    }
    let arguments = [
        "git --config-env=alias.p=PATH p",
        "git --config-env alias.p=PATH p",
        "git -c core.pager='git push' log",
        "git -c core.sshCommand='git push' fetch",
        "git -c core.fsmonitor=./x status",
        "git -c core.hooksPath=hooks commit -m x",
        "git -c credential.helper=./x fetch",
        "git -c diff.external=./x diff",
        "git -c include.path=./evil status",
        "git --exec-path=. status",
        "git rebase -x 'git push' HEAD~1",
        "git push --receive-pack=./x origin",
        "git fetch --upload-pack=./x origin",
        "git config core.fsmonitor ./x",
    ];
    for command in arguments {
        let code = code(&shell, command);
        assert!(
            matches!(code, Some("ARGUMENT_REJECTED" | "COMMAND_BLOCKED")),
            "{command}: {code:?}"
        );
    }
    assert_eq!(heads(&remote), before, "a refused command pushed");
    // Ordinary git still runs, aliases of other sub-commands included.
    assert!(shell.explain("git status").refusal.is_none());
    assert!(shell.explain("git -c alias.st=status st").refusal.is_none());
    assert!(shell.explain("git -c user.name=x log").refusal.is_none());
    assert!(shell
        .explain("git -c help.autocorrect=immediate status")
        .refusal
        .is_none());
}

#[test]
fn runners_are_judged_as_the_command_they_run() {
    let f = fixture();
    let Some(git) = installed("git") else {
        return;
    };
    let remote = repository(&f, &git);
    // Without toolgate these push, where the runner is installed.
    let mut proven = Vec::new();
    for (runner, args, branch) in [
        (
            "npx",
            &["--no-install", "git", "push", "-q", "origin", "main:npx"][..],
            "npx",
        ),
        (
            "npm",
            &["exec", "--", "git", "push", "-q", "origin", "main:npm"],
            "npm",
        ),
        (
            "pyenv",
            &["exec", "git", "push", "-q", "origin", "main:pyenv"],
            "pyenv",
        ),
    ] {
        let Some(program) = installed(runner) else {
            continue;
        };
        let output = directly(&f, program.to_str().unwrap(), args);
        if output.status.success() && heads(&remote).contains(&branch.to_string()) {
            proven.push(runner);
        }
    }
    eprintln!("runners that pushed without toolgate: {proven:?}");
    let before = heads(&remote);

    let shell = git_rules(&f);
    // The decision holds whether or not the runner is installed here.
    for command in [
        "pyenv exec git push origin main",
        "rbenv exec git push",
        "asdf exec git push",
        "mise exec -- git push",
        "mise x node@20 -- git push",
        "npx --no-install git push origin main",
        "npx git push",
        "npx -y git push",
        "npx --yes -- git push",
        "npx -p some-package git push",
        "npx git@2 push",
        "npx --unknown-flag git push",
        "npm exec -- git push origin main",
        "npm exec git push",
        "npm x -- git push",
        "npm exe -- git push",
        "pnpm exec git push",
        "pnpm dlx git push",
        "pnpx git push",
        "yarn dlx git push",
        "yarn exec git push",
        "bunx git push",
        "bun x git push",
        "uvx git push",
        "uvx --from x git push",
        "uv run git push",
        "uv run -- git push",
        "uv tool run git push",
        "pipx run git push",
        "poetry run git push",
        "bundle exec git push",
        "conda run -n base git push",
        "rustup run stable git push",
        "corepack npx git push",
        "npx npx git push",
        "pyenv exec npx --no-install git push",
        "npx pyenv exec git -c alias.p=push p",
        "pyenv-exec git push",
        "/usr/local/bin/npx git push",
        "./node_modules/.bin/npx git push",
    ] {
        assert_eq!(code(&shell, command), Some("COMMAND_BLOCKED"), "{command}");
        let message = shell.prepare(command).unwrap_err().to_string();
        assert!(message.contains("runs 'git"), "{command}: {message}");
    }
    // Absolute paths to the installed runners, too.
    for runner in ["npx", "npm", "pyenv"] {
        if let Some(program) = installed(runner) {
            let command = if runner == "npm" {
                format!("{} exec -- git push", program.display())
            } else if runner == "pyenv" {
                format!("{} exec git push", program.display())
            } else {
                format!("{} git push", program.display())
            };
            assert_eq!(code(&shell, &command), Some("COMMAND_BLOCKED"), "{command}");
            let real = std::fs::canonicalize(&program).unwrap();
            let link = f.base.join(format!("innocent-{runner}"));
            std::os::unix::fs::symlink(&real, &link).unwrap();
            for path in [&real, &link] {
                let command = command.replacen(
                    &program.display().to_string(),
                    &path.display().to_string(),
                    1,
                );
                assert_eq!(code(&shell, &command), Some("COMMAND_BLOCKED"), "{command}");
            }
        }
    }
    // Shells behind a runner are refused like any shell.
    for command in [
        "npx -c 'git push'",
        "npm exec -c 'git push'",
        "npx bash -c x",
        "pyenv exec sh",
    ] {
        assert_eq!(
            code(&shell, command),
            Some("SHELL_NOT_ALLOWED"),
            "{command}"
        );
    }
    // What the runner runs is checked like a command: paths confined.
    assert_eq!(
        code(&shell, "npx cat /etc/passwd"),
        Some("PATH_OUTSIDE_ROOT")
    );
    assert_eq!(heads(&remote), before, "a refused command pushed");
    // Loops and deep nesting end in a refusal, not a hang.
    for command in [
        "git -c alias.p=p p",
        "git -c alias.p=q -c alias.q=p p",
        "npx npx npx npx npx npx npx npx npx npx git status",
    ] {
        assert_eq!(
            code(&shell, command),
            Some("ARGUMENT_REJECTED"),
            "{command}"
        );
    }
    // Other commands through a runner go by their own rules.
    assert!(shell.explain("npx git status").refusal.is_none());
    // (pnpm may not be installed: the rules' decision is what counts.)
    let decided = shell.explain("pnpm -w exec git status").decision.unwrap();
    assert_eq!(decided.approval, PreApproved, "{decided:?}");
    let ask = open_shell(&f, &[("git push", Ask)]);
    assert_eq!(ask.explain("npx git push").verdict(), Verdict::Ask);
}

#[tokio::test(flavor = "multi_thread")]
async fn recipes_toolgate_cannot_see_are_as_strict_as_the_strictest_rule() {
    let f = fixture();
    let Some(git) = installed("git") else {
        return;
    };
    let remote = repository(&f, &git);
    std::fs::write(
        f.work.join("Makefile"),
        "deploy:\n\tgit push -q origin main:make\n",
    )
    .unwrap();
    std::fs::write(
        f.work.join("package.json"),
        r#"{"name": "x", "version": "1.0.0", "scripts": {"deploy": "git push -q origin main:npm"}}"#,
    )
    .unwrap();
    let make = installed("make");
    if let Some(make) = &make {
        let output = directly(&f, make.to_str().unwrap(), &["deploy"]);
        assert!(output.status.success(), "{output:?}");
        assert!(
            heads(&remote).contains(&"make".to_string()),
            "make did not push"
        );
    }
    let before = heads(&remote);

    let shell = git_rules(&f);
    for command in [
        "make deploy",
        "make",
        "make -C . deploy",
        "gmake deploy",
        "just deploy",
        "task deploy",
        "npm run deploy",
        "npm run-script deploy",
        "npm test",
        "npm start",
        "npm install",
        "npm i left-pad",
        "pnpm deploy",
        "yarn deploy",
        "yarn",
        "bun run deploy",
        "cargo run",
        "cargo r --release",
        "go run .",
        "go generate ./...",
        "go test -exec ./x ./...",
        "mise run deploy",
        "deno task deploy",
        "npx make deploy",
        "pyenv exec make deploy",
    ] {
        assert_eq!(code(&shell, command), Some("COMMAND_BLOCKED"), "{command}");
        let message = shell.prepare(command).unwrap_err().to_string();
        assert!(message.contains("may run anything"), "{command}: {message}");
        assert!(message.contains("rules[1]"), "{command}: {message}");
    }
    assert_eq!(heads(&remote), before);
    // Without the scripts, an install is judged as itself.
    assert!(shell
        .explain("npm install --ignore-scripts")
        .refusal
        .is_none());
    assert!(shell.explain("make --version").refusal.is_none());

    // With only `ask` rules, a recipe is asked about; with no rule but preApproved, it runs.
    let asking = open_shell(&f, &[("git push", Ask)]);
    assert_eq!(asking.explain("make deploy").verdict(), Verdict::Ask);
    let open = open_shell(&f, &[("make", PreApproved)]);
    assert_eq!(open.explain("make deploy").verdict(), Verdict::PreApproved);
    let strict = ShellToolset::new(
        &f.work,
        &ShellConfig {
            rules: vec![ShellRule {
                pattern: "make".into(),
                approval: PreApproved,
            }],
            default: None,
            ..Default::default()
        },
    )
    .unwrap();
    let message = strict.prepare("make deploy").unwrap_err().to_string();
    assert!(message.contains("no rule allows"), "{message}");
    if make.is_some() {
        let output = open.prepare("make deploy").unwrap().run().await.unwrap();
        assert_eq!(output.exit_code, Some(0), "{output:?}");
        assert!(heads(&remote).contains(&"make".to_string()));
    }
}

#[test]
fn cli_execute_runners_may_only_run_what_is_allowlisted() {
    let f = fixture();
    let Some(_) = installed("git") else {
        return;
    };
    let Some(_) = installed("npx") else {
        return;
    };
    let refusal = |binaries: &[&str], guardrail: Option<&str>, binary: &str, args: &[&str]| {
        let policy = CliExecute::new(
            &f.work,
            &CliExecuteConfig {
                allowed_binaries: strings(binaries),
                guardrails: config::Guardrails {
                    deny_commands: guardrail
                        .map(|pattern| config::DenyCommand {
                            pattern: pattern.into(),
                            message: Some("no pushing".into()),
                        })
                        .into_iter()
                        .collect(),
                    deny_output: Vec::new(),
                },
                ..Default::default()
            },
        )
        .unwrap();
        policy
            .check(binary, &strings(args), None)
            .err()
            .map(|refusal| (refusal.error.code(), refusal.error.to_string()))
    };
    for (binary, args) in [
        ("npx", &["--no-install", "git", "push"][..]),
        ("npx", &["-y", "git", "push"]),
        ("npx", &["--", "git", "push"]),
        ("npx", &["cowsay"]),
        ("npx", &["npx", "git", "push"]),
    ] {
        let (code, message) = refusal(&["npx"], None, binary, args).expect("refused");
        assert_eq!(code, "BINARY_NOT_ALLOWED", "{args:?}: {message}");
        assert!(message.contains("would run it"), "{message}");
    }
    // git is allowlisted too: npx may run it, and the guardrails see what runs.
    assert!(refusal(&["npx", "git"], None, "npx", &["git", "status"]).is_none());
    let (code, _) =
        refusal(&["npx", "git"], Some("^git push"), "npx", &["git", "push"]).expect("refused");
    assert_eq!(code, "GUARDRAIL_BLOCKED");
    // The guardrails see an alias spelled out: only the expansion says `push --force`.
    let (code, _) = refusal(
        &["git"],
        Some("push --force"),
        "git",
        &["-c", "alias.p=push", "p", "--force"],
    )
    .expect("refused");
    assert_eq!(code, "GUARDRAIL_BLOCKED");
    // git's own indirections under cli_execute.
    for (args, expected) in [
        (&["-c", "alias.p=!git push", "p"][..], "SHELL_NOT_ALLOWED"),
        (&["-c", "core.pager=./x", "log"], "ARGUMENT_REJECTED"),
        (
            &["--config-env=core.editor=PATH", "commit"],
            "ARGUMENT_REJECTED",
        ),
    ] {
        let (code, message) = refusal(&["git"], None, "git", args).expect("refused");
        assert_eq!(code, expected, "{args:?}: {message}");
    }
    if installed("make").is_some() {
        let (code, message) = refusal(&["make"], None, "make", &["deploy"]).expect("refused");
        assert_eq!(code, "COMMAND_BLOCKED", "{message}");
        assert!(message.contains("allowed_binaries"), "{message}");
        assert!(refusal(&["make"], None, "make", &["--version"]).is_none());
    }
    if installed("npm").is_some() {
        let (code, _) = refusal(&["npm"], None, "npm", &["run", "deploy"]).expect("refused");
        assert_eq!(code, "COMMAND_BLOCKED");
        let (code, _) =
            refusal(&["npm"], None, "npm", &["exec", "--", "git", "push"]).expect("refused");
        assert_eq!(code, "BINARY_NOT_ALLOWED");
    }
}
