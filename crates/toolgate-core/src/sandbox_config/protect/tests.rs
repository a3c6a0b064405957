use std::path::{Path, PathBuf};

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
    assert!(
        git_guards(&root).is_empty(),
        "no repository, nothing to protect"
    );
    git(&root, &["init", "-q"]);
    std::fs::remove_dir_all(root.join(".git/hooks")).unwrap();
    let guards = git_guards(&root);
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
