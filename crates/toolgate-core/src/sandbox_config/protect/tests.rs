use std::path::{Path, PathBuf};

use super::git_config::config_entries;
use super::*;
use crate::sandbox_config::{SandboxFields, SandboxScope};

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    (dir, root)
}

fn paths(list: &[GuardedPath], root: &Path) -> Vec<String> {
    let mut names: Vec<String> = list
        .iter()
        .map(|guarded| {
            guarded
                .path
                .strip_prefix(root)
                .unwrap_or(&guarded.path)
                .display()
                .to_string()
        })
        .collect();
    names.sort();
    names
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

#[test]
fn a_repository_s_git_configuration_is_protected_its_hooks_also_before_they_exist() {
    let (_dir, root) = scratch();
    let expected = [
        ".git/commondir",
        ".git/config",
        ".git/config.worktree",
        ".git/hooks",
        ".gitmodules",
    ];
    let none = GitEnv::default();
    assert!(
        git_guards_with(&root, &none).is_empty(),
        "no repository, nothing to protect"
    );
    git(&root, &["init", "-q"]);
    std::fs::remove_dir_all(root.join(".git/hooks")).unwrap();
    let guards = git_guards_with(&root, &none);
    assert_eq!(paths(guards.protected(), &root), expected);
    assert!(guards.protected()[0]
        .reason
        .contains("the work directory's"));
    assert!(guards.hidden().is_empty());
}

#[test]
fn the_enclosing_repository_and_its_hooks_path_and_includes_are_protected() {
    let (_dir, root) = scratch();
    git(&root, &["init", "-q"]);
    git(&root, &["config", "core.hooksPath", "githooks"]);
    git(&root, &["config", "include.path", "../extra.gitconfig"]);
    let work = root.join("examples/work");
    std::fs::create_dir_all(&work).unwrap();
    let guards = git_guards(&work);
    let protected = paths(guards.protected(), &root);
    for expected in [
        ".git/config",
        ".git/hooks",
        ".gitmodules",
        "githooks",
        "extra.gitconfig",
    ] {
        assert!(
            protected.contains(&expected.to_string()),
            "{expected} in {protected:?}"
        );
    }
    // In the work directory, only where a `.git` of its own would take git over.
    assert_eq!(
        protected
            .iter()
            .filter(|path| path.starts_with("examples/"))
            .collect::<Vec<_>>(),
        ["examples/work/.git"],
        "{protected:?}"
    );
    let reasons: Vec<&str> = guards
        .protected()
        .iter()
        .map(|guarded| guarded.reason.as_str())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("core.hooksPath")),
        "{reasons:?}"
    );
}

#[test]
fn a_worktree_s_git_file_is_followed_to_its_hooks_and_common_config() {
    let (_dir, root) = scratch();
    let main = root.join("main");
    std::fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q"]);
    git(&main, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&main, &["worktree", "add", "-q", "../tree"]);
    let tree = root.join("tree");
    let guards = git_guards(&tree);
    let protected = paths(guards.protected(), &root);
    for expected in [
        "tree/.git",
        "tree/.gitmodules",
        "main/.git/config",
        "main/.git/hooks",
        "main/.git/worktrees/tree/hooks",
        "main/.git/worktrees/tree/config.worktree",
        "main/.git/worktrees/tree/commondir",
    ] {
        assert!(
            protected.contains(&expected.to_string()),
            "{expected} in {protected:?}"
        );
    }
}

#[test]
fn protect_patterns_expand_to_what_exists_and_literal_names_also_when_missing() {
    let (_dir, root) = scratch();
    std::fs::create_dir_all(root.join("scripts/deep")).unwrap();
    std::fs::write(root.join("scripts/deep/run.sh"), "x").unwrap();
    std::fs::write(root.join("Makefile"), "x").unwrap();
    std::fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
    std::fs::write(root.join("node_modules/pkg/.npmrc"), "x").unwrap();
    let patterns: Vec<String> = ["Makefile", ".npmrc", "scripts/**", "*.mk"]
        .iter()
        .map(|p| p.to_string())
        .collect();
    let guards = protect_patterns(&root, &patterns, "sandbox.protect").unwrap();
    assert_eq!(
        paths(guards.protected(), &root),
        [".npmrc", "Makefile", "node_modules/pkg/.npmrc", "scripts"]
    );
    assert!(guards.protected()[0]
        .reason
        .starts_with("sandbox.protect '"));

    let bad = protect_patterns(&root, &["!x".into()], "w.yaml: sandbox.protect").unwrap_err();
    assert_eq!(bad.code(), "CONFIG_INVALID");
    assert!(
        bad.to_string().contains("w.yaml: sandbox.protect[0]"),
        "{bad}"
    );
    let many: Vec<String> = (0..300).map(|i| format!("f{i}")).collect();
    let err = protect_patterns(&root, &many, "sandbox.protect").unwrap_err();
    assert!(err.to_string().contains("at most 256"), "{err}");
}

#[test]
fn the_kernel_gets_protected_paths_inside_writable_roots_and_hidden_ones_inside_readable_ones() {
    let (_dir, root) = scratch();
    let work = root.join("work");
    let config = root.join("config");
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::fs::create_dir_all(&config).unwrap();
    let mut guards = Guards::default();
    guards.protect(&config.join("worker.yaml"), "worker file");
    guards.protect(&work.join("tools.ts"), "tools module");
    guards.protect(&work.join("sub"), "sandbox.protect 'sub/'");
    guards.protect(&work.join("sub/inner.txt"), "inside a protected directory");
    guards.protect(&work.join(".env"), "both");
    guards.hide(&work.join(".env"), "path rule '.env*' (blocked)");
    guards.protect(
        &work.join("./x/../tools.ts"),
        "same path, spelled otherwise",
    );
    let (protect, hide) = guards.for_policy(
        |path| path.starts_with(&work),
        |path| path.starts_with(&work) || path.starts_with(&config),
    );
    assert_eq!(protect, [work.join("sub"), work.join("tools.ts")]);
    assert_eq!(hide, [work.join(".env")]);
    assert_eq!(guards.protected().len(), 5, "one entry per path");

    let report = guards.report(
        |path| path.starts_with(&work),
        |path| path.starts_with(&work),
    );
    let outside = report
        .iter()
        .find(|line| line.path == config.join("worker.yaml"))
        .unwrap();
    assert!(!outside.enforced && !outside.exists);
    assert_eq!(outside.kind.as_str(), "protected");
    let inner = report
        .iter()
        .find(|line| line.path == work.join("sub/inner.txt"))
        .unwrap();
    assert!(inner.enforced, "covered by its protected directory");
}

#[test]
fn a_missing_path_is_named_where_it_would_be_created_symlinks_resolved() {
    let (_dir, root) = scratch();
    std::fs::create_dir(root.join("real")).unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    assert_eq!(
        real_path(&root.join("link/missing/file")),
        root.join("real/missing/file")
    );
    assert_eq!(real_path(&root.join("link/../real")), root.join("real"));
}

#[test]
fn scopes_protect_their_git_configuration_and_patterns_and_narrowing_adds_more() {
    let (_dir, root) = scratch();
    git(&root, &["init", "-q"]);
    std::fs::write(root.join("Makefile"), "x").unwrap();
    let fields: SandboxFields = serde_yaml::from_str("{ protect: [Makefile] }").unwrap();
    let scope = SandboxScope::new(&root, false, &fields, &root, "w.yaml: sandbox").unwrap();
    let policy = scope.policy().unwrap();
    assert!(policy.protect.contains(&root.join("Makefile")));
    assert!(policy.protect.contains(&root.join(".git/hooks")));
    assert!(policy.hide.is_empty());

    let narrower: SandboxFields = serde_yaml::from_str("{ protect: [build.sh] }").unwrap();
    let widening = crate::sandbox_config::Widening {
        setting: "sandbox",
        above: "the worker's sandbox",
        narrower: "a toolset",
        fix: "widen the worker-level `sandbox` instead",
    };
    let toolset = scope.narrow(&narrower, &root, &widening).unwrap();
    let policy = toolset.policy().unwrap();
    assert!(policy.protect.contains(&root.join("build.sh")));
    assert!(policy.protect.contains(&root.join("Makefile")));

    // A read-only work directory needs nothing protected inside it.
    let readonly = SandboxScope::new(&root, true, &fields, &root, "s").unwrap();
    assert!(readonly.policy().unwrap().protect.is_empty());
    assert!(readonly
        .guard_report()
        .iter()
        .all(|line| !line.enforced && line.kind == GuardKind::Protected));

    // A bad pattern names the setting.
    let bad: SandboxFields = serde_yaml::from_str("{ protect: ['a//b'] }").unwrap();
    let err = SandboxScope::new(&root, false, &bad, &root, "w.yaml: sandbox").unwrap_err();
    assert!(
        err.to_string().contains("w.yaml: sandbox: protect[0]"),
        "{err}"
    );
}

#[test]
fn toolsets_built_in_code_protect_their_tool_directories_and_server_scripts() {
    use crate::options::{parse, OptionValue};
    crate::test_support::launcher();
    let (_dir, root) = scratch();
    std::fs::create_dir(root.join("tools")).unwrap();
    std::fs::write(root.join("server.mjs"), "").unwrap();
    let options: crate::executables::ExecutableToolsOptions = parse(
        OptionValue::from(serde_json::json!({ "workDir": root, "dirs": ["tools"] })),
        false,
    )
    .unwrap();
    let (registry, _) = options.sandboxed_registry_options().unwrap();
    let run = registry.run.sandbox.expect("sandboxed");
    assert!(run.policy().protect.contains(&root.join("tools")));
    let options: crate::mcp::McpToolsetOptions = parse(
        OptionValue::from(serde_json::json!({
            "workDir": root,
            "servers": { "s": { "command": "node", "args": ["./server.mjs", "."] } }
        })),
        false,
    )
    .unwrap();
    let mcp = crate::mcp::McpToolset::from_options(options).unwrap();
    let sandbox = mcp.sandbox().sandbox.as_ref().expect("sandboxed");
    assert!(sandbox.policy().protect.contains(&root.join("server.mjs")));
    assert!(
        !sandbox.policy().protect.contains(&root),
        "the work directory itself is not a script"
    );
}

#[test]
fn includes_of_included_config_files_and_submodules_are_protected() {
    let (_dir, root) = scratch();
    let library = root.join("library");
    std::fs::create_dir(&library).unwrap();
    git(&library, &["init", "-q"]);
    git(&library, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let work = root.join("work");
    std::fs::create_dir(&work).unwrap();
    git(&work, &["init", "-q"]);
    git(&work, &["config", "include.path", "../team.gitconfig"]);
    std::fs::write(
        work.join("team.gitconfig"),
        "[include]\n\tpath = local.gitconfig\n",
    )
    .unwrap();
    std::fs::write(work.join("local.gitconfig"), "[core]\n").unwrap();
    git(
        &work,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            "../library",
            "libs/library",
        ],
    );
    // One more, named but not checked out yet.
    let mut modules = std::fs::read_to_string(work.join(".gitmodules")).unwrap();
    modules.push_str("[submodule \"other\"]\n\tpath = vendor/other\n\turl = ../library\n");
    modules.push_str("[submodule \"../escape\"]\n\tpath = ../escape\n");
    std::fs::write(work.join(".gitmodules"), modules).unwrap();
    let protected = paths(git_guards(&work).protected(), &root);
    for expected in [
        "work/team.gitconfig",
        "work/local.gitconfig",
        "work/.git/modules/libs/library/config",
        "work/.git/modules/libs/library/hooks",
        "work/.git/modules/libs/library/commondir",
        "work/libs/library/.git",
        "work/vendor/other/.git",
        "work/.git/modules/other/config",
        "work/.git/modules/vendor/other/hooks",
    ] {
        assert!(
            protected.contains(&expected.to_string()),
            "{expected} in {protected:?}"
        );
    }
    assert!(
        !protected.iter().any(|path| path.contains("escape")),
        "{protected:?}"
    );
}

#[test]
fn a_symlink_on_the_way_to_a_protected_file_is_protected_as_the_link() {
    let (_dir, root) = scratch();
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    std::fs::write(root.join("pkg/tools.mjs"), "").unwrap();
    std::os::unix::fs::symlink("pkg", root.join("lib")).unwrap();
    std::os::unix::fs::symlink("pkg/tools.mjs", root.join("entry.mjs")).unwrap();
    let mut guards = Guards::default();
    guards.protect(&root.join("lib/tools.mjs"), "the tools module");
    guards.protect(&root.join("entry.mjs"), "the tools module");
    assert_eq!(
        paths(guards.protected(), &root),
        ["entry.mjs", "lib", "pkg/tools.mjs"]
    );
    let link = guards
        .protected()
        .iter()
        .find(|guarded| guarded.path == root.join("lib"))
        .unwrap();
    assert!(
        link.reason.contains("symlink on the way"),
        "{}",
        link.reason
    );
}

// --- Hooks that are symlinks, hard links, husky, git config outside the repository, and
// git's config syntax.

/// A repository at `root` with the host's config left out (tests give their own).
fn repository(root: &Path) -> GitEnv {
    git(root, &["init", "-q"]);
    GitEnv::default()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn symlink(target: impl AsRef<Path>, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// What the kernel gets for a sandbox that writes (and reads) only `root`, relative to it.
fn kernel_list(guards: &Guards, root: &Path) -> Vec<String> {
    let inside = |path: &Path| path.starts_with(root);
    let (protect, _) = guards.for_policy(inside, inside);
    protect
        .iter()
        .map(|path| path.strip_prefix(root).unwrap().display().to_string())
        .collect()
}

fn reason_of(guards: &Guards, root: &Path, path: &str) -> String {
    let path = root.join(path);
    let inside = |path: &Path| path.starts_with(root);
    guards
        .report(inside, inside)
        .into_iter()
        .find(|line| line.path == path)
        .map(|line| line.reason)
        .unwrap_or_else(|| panic!("{} is not protected", path.display()))
}

#[test]
fn what_a_symlinked_hook_runs_is_protected_in_every_shape_of_link() {
    let (_dir, root) = scratch();
    let env = repository(&root);
    let hooks = root.join(".git/hooks");
    // Relative, the common setup.
    write(&root.join("scripts/pre-commit"), "#!/bin/sh\n");
    symlink("../../scripts/pre-commit", &hooks.join("pre-commit"));
    // Absolute.
    write(&root.join("tools/commit-msg.sh"), "#!/bin/sh\n");
    symlink(root.join("tools/commit-msg.sh"), &hooks.join("commit-msg"));
    // A chain whose middle link lies in a writable folder.
    write(&root.join("tools/real-push.sh"), "#!/bin/sh\n");
    symlink("real-push.sh", &root.join("tools/pre-push"));
    symlink("../../tools/pre-push", &hooks.join("pre-push"));
    // Dangling: a call could create the script it names.
    symlink("../../scripts/post-checkout", &hooks.join("post-checkout"));
    // Through a symlinked folder.
    write(&root.join("real-hooks/post-merge"), "#!/bin/sh\n");
    symlink("real-hooks", &root.join("hook-dir"));
    symlink("../../hook-dir/post-merge", &hooks.join("post-merge"));
    let guards = git_guards_with(&root, &env);
    let list = kernel_list(&guards, &root);
    for expected in [
        "scripts/pre-commit",
        "tools/commit-msg.sh",
        "tools/pre-push",
        "tools/real-push.sh",
        "scripts/post-checkout",
        "hook-dir",
        "real-hooks/post-merge",
    ] {
        assert!(
            list.contains(&expected.to_string()),
            "{expected} in {list:?}"
        );
    }
    assert!(
        reason_of(&guards, &root, "scripts/pre-commit").contains("symlinked hook"),
        "{}",
        reason_of(&guards, &root, "scripts/pre-commit")
    );
}

#[test]
fn what_a_symlinked_hook_in_core_hooks_path_or_a_submodule_runs_is_protected() {
    let (_dir, root) = scratch();
    let env = repository(&root);
    git(&root, &["config", "core.hooksPath", "githooks"]);
    write(&root.join("scripts/lint.sh"), "#!/bin/sh\n");
    symlink("../scripts/lint.sh", &root.join("githooks/pre-commit"));
    // A submodule's git directory with a linked hook.
    let module = root.join(".git/modules/lib");
    write(&module.join("HEAD"), "ref: refs/heads/main\n");
    write(
        &module.join("config"),
        "[core]\n\tworktree = ../../../lib\n",
    );
    write(&root.join("lib/hooks/check.sh"), "#!/bin/sh\n");
    symlink(
        "../../../../lib/hooks/check.sh",
        &module.join("hooks/pre-commit"),
    );
    let list = kernel_list(&git_guards_with(&root, &env), &root);
    for expected in ["githooks", "scripts/lint.sh", "lib/hooks/check.sh"] {
        assert!(
            list.contains(&expected.to_string()),
            "{expected} in {list:?}"
        );
    }
}

#[test]
fn another_name_of_a_protected_file_in_a_writable_root_is_protected_too() {
    let (_dir, root) = scratch();
    let work = root.join("work");
    std::fs::create_dir(&work).unwrap();
    let env = repository(&work);
    // A hook hard-linked to a script elsewhere in the work directory.
    write(&work.join("scripts/pre-commit"), "#!/bin/sh\n");
    std::fs::hard_link(
        work.join("scripts/pre-commit"),
        work.join(".git/hooks/pre-commit"),
    )
    .unwrap();
    // A tools module import with another name.
    write(&work.join("lib/util.mjs"), "export {}\n");
    std::fs::hard_link(work.join("lib/util.mjs"), work.join(".cache-u.mjs")).unwrap();
    // A worker file outside the writable root, linked into it.
    write(&root.join("config/worker.yaml"), "name: w\n");
    std::fs::hard_link(root.join("config/worker.yaml"), work.join("notes/w.txt")).unwrap_or_else(
        |_| {
            std::fs::create_dir_all(work.join("notes")).unwrap();
            std::fs::hard_link(root.join("config/worker.yaml"), work.join("notes/w.txt")).unwrap();
        },
    );
    // A file inside a protected folder.
    write(&work.join("conf/app.yaml"), "a: 1\n");
    std::fs::hard_link(work.join("conf/app.yaml"), work.join("app-copy.yaml")).unwrap();
    // Linked files nothing protects stay writable.
    write(&work.join("plain.txt"), "x\n");
    std::fs::hard_link(work.join("plain.txt"), work.join("plain2.txt")).unwrap();

    let mut guards = git_guards_with(&work, &env);
    guards.protect(&work.join("lib/util.mjs"), "imported by the tools module");
    guards.protect(&root.join("config/worker.yaml"), "the worker file of 'w'");
    guards.protect(&work.join("conf"), "sandbox.protect 'conf/'");
    let list = kernel_list(&guards, &work);
    for expected in [
        "scripts/pre-commit",
        ".cache-u.mjs",
        "notes/w.txt",
        "app-copy.yaml",
    ] {
        assert!(
            list.contains(&expected.to_string()),
            "{expected} in {list:?}"
        );
    }
    assert!(
        !list.iter().any(|path| path.starts_with("plain")),
        "{list:?}"
    );
    let reason = reason_of(&guards, &work, ".cache-u.mjs");
    assert!(
        reason.contains("another name of") && reason.contains("lib/util.mjs"),
        "{reason}"
    );
    // The scope's kernel policy has them too.
    let fields = crate::sandbox_config::SandboxFields::default();
    let scope = SandboxScope::new(&work, false, &fields, &work, "s")
        .unwrap()
        .with_guards(&guards);
    let policy = scope.policy().unwrap();
    assert!(policy.protect.contains(&work.join("scripts/pre-commit")));
    assert!(policy.protect.contains(&work.join("notes/w.txt")));
}

#[test]
fn other_names_are_looked_for_in_every_writable_root_holding_a_protected_path() {
    let (_dir, root) = scratch();
    let work = root.join("work");
    let extra = root.join("extra");
    std::fs::create_dir_all(&work).unwrap();
    write(&extra.join("tool.sh"), "#!/bin/sh\n");
    std::fs::hard_link(extra.join("tool.sh"), extra.join("deep/er/alias.sh")).unwrap_or_else(
        |_| {
            std::fs::create_dir_all(extra.join("deep/er")).unwrap();
            std::fs::hard_link(extra.join("tool.sh"), extra.join("deep/er/alias.sh")).unwrap();
        },
    );
    let mut guards = git_guards_with(&work, &GitEnv::default());
    guards.protect(&extra.join("tool.sh"), "an executable tool");
    let writable = |path: &Path| path.starts_with(&work) || path.starts_with(&extra);
    let (protect, _) = guards.for_policy(writable, writable);
    assert!(
        protect.contains(&extra.join("deep/er/alias.sh")),
        "{protect:?}"
    );
    // Not writable: nothing to protect there.
    let (protect, _) = guards.for_policy(|path| path.starts_with(&work), |_| true);
    assert!(protect.is_empty(), "{protect:?}");
}

#[test]
fn husky_s_hooks_path_protects_the_husky_folder_its_hooks_run() {
    for (hooks_path, husky) in [
        (".husky/_", true),
        (".husky/_/", true),
        ("./.husky/_", true),
        ("ABSOLUTE", true),
        ("config/_", false),
        (".husky", true),
    ] {
        let (_dir, root) = scratch();
        let env = repository(&root);
        let value = if hooks_path == "ABSOLUTE" {
            root.join(".husky/_").display().to_string()
        } else {
            hooks_path.to_string()
        };
        git(&root, &["config", "core.hooksPath", &value]);
        write(&root.join(".husky/_/h"), "#!/bin/sh\n");
        write(&root.join(".husky/pre-commit"), "npm test\n");
        write(&root.join("config/_/h"), "#!/bin/sh\n");
        let list = kernel_list(&git_guards_with(&root, &env), &root);
        assert_eq!(
            list.contains(&".husky".to_string()),
            husky,
            "{hooks_path}: {list:?}"
        );
        assert!(
            !list.contains(&"config".to_string()),
            "{hooks_path}: {list:?}"
        );
    }
}

#[test]
fn git_config_outside_the_repository_is_read_for_what_it_names_inside() {
    let (_dir, root) = scratch();
    let home = root.join("home");
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    let cases: [(&str, &str, &str); 7] = [
        (
            ".gitconfig",
            "[core]\n\thooksPath = .githooks\n",
            ".githooks",
        ),
        (
            ".config/git/config",
            "[core]\n\thooksPath = xdg-hooks # xdg\n",
            "xdg-hooks",
        ),
        (
            "etc/gitconfig",
            "[core] hooksPath = system-hooks\n",
            "system-hooks",
        ),
        (
            "custom-global",
            "[core]\n\tfsmonitor = ./tools/fsmonitor.sh\n",
            "tools/fsmonitor.sh",
        ),
        (
            ".gitconfig",
            "[include]\n\tpath = ~/team.gitconfig\n",
            "team-hooks", // named by the included file
        ),
        (
            ".gitconfig",
            "[includeIf \"onbranch:main\"]\n\tpath = WORK/missing/branch.gitconfig\n",
            "missing/branch.gitconfig",
        ),
        (
            "etc/gitconfig",
            "[core]\n\thooksPath = WORK/abs-hooks\n",
            "abs-hooks",
        ),
    ];
    for (file, text, expected) in cases {
        std::fs::remove_dir_all(&home).ok();
        let text = text.replace("WORK", &work.display().to_string());
        write(&home.join(file), &text);
        write(
            &home.join("team.gitconfig"),
            "[core]\n\thooksPath = team-hooks\n",
        );
        let env = GitEnv {
            home: Some(home.clone()),
            files: vec![
                home.join("etc/gitconfig"),
                home.join("custom-global"),
                home.join(".config/git/config"),
                home.join(".gitconfig"),
            ],
        };
        let guards = git_guards_with(&work, &env);
        let list = kernel_list(&guards, &work);
        assert!(
            list.contains(&expected.to_string()),
            "{file}: {expected} in {list:?}"
        );
        let reasons: Vec<&str> = guards
            .protected()
            .iter()
            .map(|g| g.reason.as_str())
            .collect();
        assert!(
            reasons.iter().any(|r| r.contains("the host's git config")),
            "{reasons:?}"
        );
    }
    // Outside any repository, an absolute hooksPath into the work directory still counts, and
    // a global config file inside it (a work directory that is the home) is protected.
    let plain = root.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    write(
        &plain.join(".gitconfig"),
        &format!("[core]\n\thooksPath = {}/hooks\n", plain.display()),
    );
    let env = GitEnv {
        home: Some(plain.clone()),
        files: vec![plain.join(".gitconfig"), plain.join(".config/git/config")],
    };
    let list = kernel_list(&git_guards_with(&plain, &env), &plain);
    assert_eq!(
        list,
        [".config/git/config", ".gitconfig", "hooks"],
        "{list:?}"
    );
}

#[test]
fn this_process_s_git_config_files_are_the_ones_git_reads() {
    let env = GitEnv::from_env();
    assert!(env.files.contains(&PathBuf::from("/etc/gitconfig")));
    if let Some(home) = std::env::var_os("HOME") {
        assert!(env.files.contains(&Path::new(&home).join(".gitconfig")));
        assert!(env
            .files
            .contains(&Path::new(&home).join(".config/git/config")));
    }
}

#[test]
fn files_commands_in_git_config_name_are_protected() {
    let (_dir, root) = scratch();
    let env = repository(&root);
    write(&root.join("run.sh"), "#!/bin/sh\n");
    write(&root.join(".git/config.extra"), "");
    let config = root.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(concat!(
        "[core]\n\tfsmonitor = ./scripts/fsmonitor.sh\n\tpager = less\n",
        "[filter \"lfs\"]\n\tclean = python3 tools/clean.py %f\n",
        "[alias]\n\tci = !sh run.sh --fast\n",
        "[hook \"lint\"]\n\tcommand = \"\\\"./hooks dir/lint.sh\\\"\"\n\tevent = pre-commit\n",
        "[diff \"img\"]\n\ttextconv = /usr/bin/env bin/textconv\n",
    ));
    std::fs::write(&config, text).unwrap();
    let list = kernel_list(&git_guards_with(&root, &env), &root);
    for expected in [
        "scripts/fsmonitor.sh",
        "tools/clean.py",
        "run.sh",
        "hooks dir/lint.sh",
        "bin/textconv",
    ] {
        assert!(
            list.contains(&expected.to_string()),
            "{expected} in {list:?}"
        );
    }
    assert!(!list.contains(&"less".to_string()), "{list:?}");
}

/// Each case: a config file, and every `name=value` (`name` alone: no `=`) git lists for it.
const CONFIG_SYNTAX: &[(&str, &[&str])] = &[
    (
        "[include]\n\tpath = ../team.gitconfig  # shared\n",
        &["include.path=../team.gitconfig"],
    ),
    (
        "[core]\n\thooksPath = .githooks ; team\n",
        &["core.hookspath=.githooks"],
    ),
    ("[include] path = ../x\n", &["include.path=../x"]),
    (
        "[includeIf \"gitdir:~/work/\"]\n\tpath = work.gitconfig\n",
        &["includeif.gitdir:~/work/.path=work.gitconfig"],
    ),
    (
        "[includeIf \"onbranch:a\\\"b\"]  PATH=x",
        &["includeif.onbranch:a\"b.path=x"],
    ),
    ("[CORE]\n  HooksPath =hooks\n", &["core.hookspath=hooks"]),
    (
        "[Filter \"LFS\"]\n\tClean = git-lfs clean -- %f\n",
        &["filter.LFS.clean=git-lfs clean -- %f"],
    ),
    ("[Core.Sub]\n\tkey = v\n", &["core.sub.key=v"]),
    (
        "[core]\n\thooksPath = \".git hooks\" # q\n",
        &["core.hookspath=.git hooks"],
    ),
    (
        "[core]\n\thooksPath = \"a;b#c\"\n",
        &["core.hookspath=a;b#c"],
    ),
    (
        "[core]\n\thooksPath = a\\\\b\\\"c\\td\n",
        &["core.hookspath=a\\b\"c\td"],
    ),
    ("[core]\n\thooksPath = a\\\n  b\n", &["core.hookspath=a  b"]),
    ("[core]\n\tv = a   b c  \n", &["core.v=a   b c"]),
    (
        "[core]\n\tbare\n\tother = \n",
        &["core.bare", "core.other="],
    ),
    ("[core]\r\n\thooksPath = crlf\r\n", &["core.hookspath=crlf"]),
    (
        "# top\n; also\n[a]\n# x = y\nk = 1\n[b \"s\"] ; c\nk = 2\n",
        &["a.k=1", "b.s.k=2"],
    ),
    ("[a] [b] k = v\n", &["b.k=v"]),
    ("[a]\n\tk = \"\" x\n", &["a.k=x"]),
    ("[a]\n\tk = x\"\" \n", &["a.k=x"]),
];

#[test]
fn git_config_is_read_as_git_reads_it() {
    let (_dir, root) = scratch();
    for (index, (text, expected)) in CONFIG_SYNTAX.iter().enumerate() {
        let ours: Vec<String> = config_entries(text)
            .iter()
            .map(|entry| match &entry.value {
                Some(value) => format!("{}={value}", entry.name()),
                None => entry.name(),
            })
            .collect();
        assert_eq!(&ours, expected, "case {index}: {text:?}");
        // And git agrees.
        let file = root.join(format!("case{index}"));
        std::fs::write(&file, text).unwrap();
        let out = std::process::Command::new("git")
            .args(["config", "--file"])
            .arg(&file)
            .args(["--list", "-z"])
            .output()
            .unwrap();
        assert!(out.status.success(), "case {index}: {out:?}");
        let git: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(|item| item.replacen('\n', "=", 1))
            .collect();
        assert_eq!(&git, expected, "case {index}, git: {text:?}");
    }
}

#[test]
fn a_line_git_refuses_is_skipped_and_the_rest_read() {
    for (text, expected) in [
        (
            "[core]\n\tbad line\n\thooksPath = x\n",
            vec!["core.hookspath=x"],
        ),
        (
            "[core]\n\tk = \"open\n\thooksPath = x\n",
            vec!["core.hookspath=x"],
        ),
        (
            "[core]\n\tk = a\\q\n\thooksPath = x\n",
            vec!["core.hookspath=x"],
        ),
        ("[bad\n[core]\n\thooksPath = x\n", vec!["core.hookspath=x"]),
        ("k = v\n[core]\nhooksPath = x", vec!["core.hookspath=x"]),
    ] {
        let ours: Vec<String> = config_entries(text)
            .iter()
            .map(|entry| {
                format!(
                    "{}={}",
                    entry.name(),
                    entry.value.clone().unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(ours, expected, "{text:?}");
    }
}

#[test]
fn trailing_comments_and_same_line_headers_do_not_hide_a_hooks_path_or_include() {
    let (_dir, root) = scratch();
    let env = repository(&root);
    let config = root.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[include] path = ../team.gitconfig  # shared\n");
    std::fs::write(&config, text).unwrap();
    write(
        &root.join("team.gitconfig"),
        "[CORE]\n\tHooksPath = \".githooks\" ; team\n[includeIf \"onbranch:main\"] path = more/x.gitconfig\n",
    );
    let list = kernel_list(&git_guards_with(&root, &env), &root);
    for expected in ["team.gitconfig", ".githooks", "more/x.gitconfig"] {
        assert!(
            list.contains(&expected.to_string()),
            "{expected} in {list:?}"
        );
    }
}

#[test]
fn a_changed_host_git_config_is_read_again() {
    let (_dir, root) = scratch();
    let work = root.join("work");
    let home = root.join("home");
    std::fs::create_dir_all(&work).unwrap();
    let env = GitEnv {
        home: Some(home.clone()),
        files: vec![home.join(".gitconfig")],
    };
    let hooks = |guards: &Guards| kernel_list(guards, &work).contains(&"hooks".to_string());
    // Missing at first: nothing of the work directory.
    assert!(!hooks(&git_guards_with(&work, &env)));
    // Made: its hooksPath into the work directory counts at the next call.
    let hooks_path = format!("[core]\n\thooksPath = {}/hooks\n", work.display());
    write(&home.join(".gitconfig"), &hooks_path);
    assert!(hooks(&git_guards_with(&work, &env)));
    // Moved to an included file: the include is followed, and a change there is seen too.
    write(&home.join(".gitconfig"), "[include]\n\tpath = team.inc\n");
    write(&home.join("team.inc"), "[user]\n\tname = x\n");
    assert!(!hooks(&git_guards_with(&work, &env)));
    write(&home.join("team.inc"), &hooks_path);
    assert!(hooks(&git_guards_with(&work, &env)));
    // The same reading again while nothing changed.
    assert!(hooks(&git_guards_with(&work, &env)));
}
