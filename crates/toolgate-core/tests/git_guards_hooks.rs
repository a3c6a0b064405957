//! Git hooks a sandboxed process could change by another route than the protected path: a hook
//! that is a symlink or a hard link to a script elsewhere in the work directory, husky's hooks
//! folder, and a `core.hooksPath` set in git config outside the repository. Each case plants
//! the layout, runs the attack as a real program under the sandbox the work directory's git
//! guards give, then runs `git commit` on the host and checks the original hook ran.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{text, view_available, Fixture};
use toolgate_core::exec;
use toolgate_core::sandbox_config::protect::{git_guards_with, GitEnv};

const ORIGINAL: &str = "#!/bin/sh\necho original-hook\n";

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `git` on the host in `dir`, with `home` as its home and no system config.
fn git(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_CONFIG_GLOBAL")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs")
}

struct Case {
    f: Fixture,
    home: PathBuf,
}

impl Case {
    /// A repository as the work directory, with an empty home outside it; `None` (the test is
    /// skipped) where the view cannot be built.
    fn new() -> Option<Self> {
        if !view_available() {
            eprintln!("skipped: no view here");
            return None;
        }
        let f = Fixture::new();
        let home = f.root.join("home");
        std::fs::create_dir(&home).unwrap();
        assert!(git(&f.work, &home, &["init", "-q"]).status.success());
        Some(Case { f, home })
    }

    /// Runs `script` under the sandbox of the work directory's git guards, then `git commit`
    /// on the host: what the hook printed.
    async fn attack_then_commit(&self, script: &str) -> String {
        let env = GitEnv {
            home: Some(self.home.clone()),
            files: vec![self.home.join(".gitconfig")],
        };
        let guards = git_guards_with(&self.f.work, &env);
        let work = &self.f.work;
        let inside = |path: &Path| path.starts_with(work);
        let mut policy = self.f.policy();
        policy.protect = guards.for_policy(inside, inside).0;
        let request = self.f.request_with(policy, "/bin/sh", &["-c", script]);
        let out = exec::run(request).await.unwrap();
        assert!(out.sandboxed);
        eprintln!(
            "attack: {}{} {:?}",
            text(&out.stdout),
            text(&out.stderr),
            out.protected
        );
        let commit = git(
            work,
            &self.home,
            &["commit", "-q", "--allow-empty", "-m", "x"],
        );
        format!("{}{}", text(&commit.stdout), text(&commit.stderr))
    }
}

const PWN: &str = "printf '#!/bin/sh\\necho PWNED\\n'";

#[tokio::test]
async fn a_symlinked_hook_s_script_cannot_be_changed() {
    let Some(case) = Case::new() else { return };
    let work = &case.f.work;
    write(&work.join("scripts/pre-commit"), ORIGINAL);
    std::os::unix::fs::symlink(
        "../../scripts/pre-commit",
        work.join(".git/hooks/pre-commit"),
    )
    .unwrap();
    for attack in [
        format!("{PWN} > scripts/pre-commit"),
        format!("{PWN} >> scripts/pre-commit"),
        format!("rm -f scripts/pre-commit; {PWN} > scripts/pre-commit"),
        format!("{PWN} > x && mv -f x scripts/pre-commit"),
    ] {
        let said = case.attack_then_commit(&attack).await;
        assert!(
            said.contains("original-hook") && !said.contains("PWNED"),
            "{attack}: {said}"
        );
    }
}

#[tokio::test]
async fn a_hard_linked_hook_cannot_be_changed_through_its_other_name() {
    let Some(case) = Case::new() else { return };
    let work = &case.f.work;
    write(&work.join("scripts/pre-commit"), ORIGINAL);
    std::fs::hard_link(
        work.join("scripts/pre-commit"),
        work.join(".git/hooks/pre-commit"),
    )
    .unwrap();
    for attack in [
        format!("{PWN} > scripts/pre-commit"),
        format!("{PWN} >> scripts/pre-commit"),
        "python3 -c \"open('scripts/pre-commit','r+').write('#!/bin/sh\\necho PWNED\\n')\""
            .to_string(),
    ] {
        let said = case.attack_then_commit(&attack).await;
        assert!(
            said.contains("original-hook") && !said.contains("PWNED"),
            "{attack}: {said}"
        );
    }
}

#[tokio::test]
async fn husky_s_hooks_cannot_be_changed() {
    let Some(case) = Case::new() else { return };
    let work = &case.f.work;
    assert!(
        git(work, &case.home, &["config", "core.hooksPath", ".husky/_"])
            .status
            .success()
    );
    // What husky 9 installs: each hook in `_` runs `.husky/<hook>` through `_/h`.
    write(
        &work.join(".husky/_/pre-commit"),
        "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"\n",
    );
    write(
        &work.join(".husky/_/h"),
        "#!/usr/bin/env sh\nn=$(basename \"$0\")\ns=$(dirname \"$(dirname \"$0\")\")/$n\n[ ! -f \"$s\" ] && exit 0\nsh -e \"$s\" \"$@\"\n",
    );
    write(&work.join(".husky/pre-commit"), ORIGINAL);
    for attack in [
        format!("{PWN} > .husky/pre-commit"),
        format!("rm -f .husky/pre-commit; {PWN} > .husky/pre-commit"),
        format!("{PWN} > .husky/pre-push"),
    ] {
        let said = case.attack_then_commit(&attack).await;
        assert!(
            said.contains("original-hook") && !said.contains("PWNED"),
            "{attack}: {said}"
        );
    }
}

#[tokio::test]
async fn a_hooks_path_from_the_global_config_cannot_be_planted() {
    let Some(case) = Case::new() else { return };
    let work = &case.f.work;
    write(&work.join(".git/hooks/pre-commit"), ORIGINAL);
    for config in [
        "[core]\n\thooksPath = .githooks ; the team's\n",
        "[core] hooksPath = \".githooks\"\n",
        "[include]\n\tpath = team.gitconfig # shared\n",
    ] {
        std::fs::write(case.home.join(".gitconfig"), config).unwrap();
        std::fs::write(
            case.home.join("team.gitconfig"),
            "[CORE]\n\tHooksPath = .githooks\n",
        )
        .unwrap();
        let attack = format!(
            "mkdir -p .githooks && {PWN} > .githooks/pre-commit && chmod +x .githooks/pre-commit"
        );
        let said = case.attack_then_commit(&attack).await;
        assert!(!said.contains("PWNED"), "{config}: {said}");
        assert!(!work.join(".githooks/pre-commit").exists(), "{config}");
    }
}
