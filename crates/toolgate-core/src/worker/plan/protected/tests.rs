//! Every kind of protected path a plan computes, the hidden paths of blocked rules (inherited by
//! called workers), what the tools modules' imports add, and the layout with the configuration
//! outside the work directory, where nothing needs the kernel's help.

use std::path::{Path, PathBuf};

use super::*;
use crate::sandbox_config::GuardKind;
use crate::worker::test_support::{dir, write};
use crate::worker::{plan_worker, LoadOptions};

fn git_init(dir: &Path) {
    let output = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "{output:?}");
}

/// The kernel lists of the shell toolset's prepared sandbox of worker `index`.
fn shell_lists(plan: &WorkerPlan, index: usize) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let shell = plan.workers()[index]
        .shell
        .as_ref()
        .expect("a shell toolset");
    let policy = shell.sandbox().expect("sandboxed").policy();
    (policy.protect.clone(), policy.hide.clone())
}

const OLD_LAYOUT: &str = "\
name: main
sandbox:
  protect: [Makefile]
toolsets:
  custom: { module: ./tools.ts }
  shell: { default: ask }
  executables: {}
  code_agent:
    approval:
      paths:
        - { pattern: '.env*', approval: blocked }
  mcp:
    servers:
      files: { command: node, args: [./server.js, --root=.] }
  workers:
    allowed_workers: [helper]
";

#[test]
fn with_the_configuration_in_the_work_directory_every_sandbox_protects_all_of_it() {
    let temp = dir();
    let d = temp.path.clone();
    git_init(&d);
    let top = write(&d, "worker.yaml", OLD_LAYOUT);
    write(&d, "tools.ts", "export const x = 1;\n");
    write(&d, "server.js", "// an MCP server\n");
    write(&d, "Makefile", "all:\n");
    write(&d, ".env", "TOKEN=1\n");
    write(&d, "config/.env.local", "TOKEN=2\n");
    write(&d, "toolgate-tools/hello.sh", "#!/bin/sh\necho hi\n");
    write(
        &d,
        "workers/helper.yaml",
        "name: helper\ntoolsets:\n  shell: { default: ask }\n",
    );
    let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    let (protect, hide) = shell_lists(&plan, 0);
    for expected in [
        "worker.yaml",
        "workers/helper.yaml",
        "tools.ts",
        "server.js",
        "toolgate-tools",
        "Makefile",
        ".git/hooks",
        ".git/config",
        ".gitmodules",
        "toolgate.permissions.yaml",
        "golem-forge.config.yaml",
        "golem-forge.config.yml",
        "workers/golem-forge.config.yaml",
        // Where a file named for the called worker would be found first (none exist yet).
        "helper.worker",
        "helper.yaml",
        "helper.yml",
        "helper/index.worker",
        "helper/main.worker",
        "workers/helper.worker",
    ] {
        assert!(
            protect.contains(&d.join(expected)),
            "{expected} not in {protect:#?}"
        );
    }
    // Not the ones looked at after the file found.
    assert!(!protect.contains(&d.join("workers/helper.yml")));
    assert_eq!(hide, [d.join(".env"), d.join("config/.env.local")]);
    // The called worker's processes protect the same files and hide what its caller blocks.
    let (child_protect, child_hide) = shell_lists(&plan, 1);
    assert!(child_protect.contains(&d.join("worker.yaml")));
    assert_eq!(child_hide, hide);
    // Every process toolset gets the lists.
    let planned = &plan.workers()[0];
    let mcp = planned
        .mcp
        .as_ref()
        .unwrap()
        .sandbox()
        .sandbox
        .as_ref()
        .unwrap();
    assert!(mcp.policy().protect.contains(&d.join("tools.ts")));
    let registry = planned.executables.as_ref().unwrap();
    let run = registry.options().run.sandbox.as_ref().unwrap();
    assert!(run.policy().protect.contains(&d.join("toolgate-tools")));
    let discovery = registry.options().discovery.sandbox.as_ref().unwrap();
    assert_eq!(
        discovery.policy().hide,
        hide,
        "descriptions cannot read .env either"
    );

    // The report names every path with its reason.
    let report = plan.guarded_paths(0).unwrap();
    assert_eq!(
        report.iter().map(|s| s.sandbox).collect::<Vec<_>>(),
        ["worker", "shell", "executables", "mcp"]
    );
    let worker = &report[0].paths;
    let reason = |path: &str| {
        worker
            .iter()
            .find(|line| line.path == d.join(path))
            .unwrap_or_else(|| panic!("{path} not reported"))
    };
    assert!(reason("worker.yaml")
        .reason
        .contains("worker file of 'main'"));
    assert!(reason("tools.ts").reason.contains("tools module of 'main'"));
    assert!(reason("server.js").reason.contains("MCP server 'files'"));
    assert!(reason("toolgate-tools")
        .reason
        .contains("executable-tool directory"));
    assert!(reason("Makefile").reason.contains("protect 'Makefile'"));
    assert!(reason(".git/config").reason.contains("git config"));
    assert!(reason("toolgate.permissions.yaml")
        .reason
        .contains("permissions"));
    let env = reason(".env");
    assert_eq!(env.kind, GuardKind::Hidden);
    assert!(env.reason.contains("'.env*' (blocked)"), "{}", env.reason);
    assert!(env.enforced && env.exists);
    assert!(!reason("toolgate.permissions.yaml").exists);

    // The file tools refuse to change the same files.
    let files: Vec<PathBuf> = plan
        .file_protection(0)
        .unwrap()
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    assert!(files.contains(&d.join("worker.yaml")) && files.contains(&d.join("tools.ts")));
}

#[test]
fn what_a_tools_module_imports_is_protected_once_reported() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "worker.yaml",
        "name: main\ntoolsets:\n  custom: { module: ./tools.ts }\n  shell: { default: ask }\n  cli_execute: { allowed_binaries: [cat] }\n",
    );
    write(&d, "tools.ts", "import './lib/helper';\n");
    write(&d, "lib/helper.ts", "export {};\n");
    write(&d, "node_modules/zod/index.js", "\n");
    write(&d, "node_modules/@scope/pkg/dist/x.js", "\n");
    let mut plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    let (before, _) = shell_lists(&plan, 0);
    assert!(!before.contains(&d.join("lib/helper.ts")));
    write(&d, "node_modules/toolgate/package.json", "{}\n");
    plan.protect_module_imports(
        &[ModuleImports {
            worker: 0,
            files: vec![
                d.join("tools.ts"),
                d.join("lib/helper.ts"),
                d.join("node_modules/zod/index.js"),
                d.join("node_modules/@scope/pkg/dist/x.js"),
            ],
        }],
        Some(&d.join("node_modules/toolgate")),
    )
    .unwrap();
    for lists in [shell_lists(&plan, 0).0, {
        let cli = plan.workers()[0].cli_execute.as_ref().unwrap();
        cli.sandbox().unwrap().policy().protect.clone()
    }] {
        // The whole node_modules folder: a package's own imports are found there, and
        // toolgate's addon, launcher and `.bin` shim are beside its package.
        for expected in ["lib/helper.ts", "node_modules", ".npmrc"] {
            assert!(lists.contains(&d.join(expected)), "{expected}: {lists:#?}");
        }
    }
    let report = &plan.guarded_paths(0).unwrap()[0].paths;
    let helper = report
        .iter()
        .find(|line| line.path == d.join("lib/helper.ts"))
        .unwrap();
    assert!(
        helper.reason.contains("imported by the tools module"),
        "{}",
        helper.reason
    );
    let files = plan.file_protection(0).unwrap();
    assert!(files
        .iter()
        .any(|(path, _)| path == &d.join("lib/helper.ts")));

    // A checkout of toolgate is not protected (it may be the work directory itself).
    let before = shell_lists(&plan, 0).0;
    plan.protect_module_imports(&[], Some(&d)).unwrap();
    assert_eq!(shell_lists(&plan, 0).0, before);
    let err = plan
        .protect_module_imports(
            &[ModuleImports {
                worker: 0,
                files: vec![PathBuf::from("relative.ts")],
            }],
            None,
        )
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    let err = plan
        .protect_module_imports(
            &[ModuleImports {
                worker: 7,
                files: Vec::new(),
            }],
            None,
        )
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
}

#[test]
fn with_the_configuration_outside_the_work_directory_the_kernel_protects_nothing() {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir(d.join("workspace")).unwrap();
    let top = write(
        &d,
        "worker.yaml",
        "name: main\nsandbox: { root: workspace }\ntoolsets:\n  custom: { module: ./tools.ts }\n  shell: { default: ask }\n",
    );
    write(&d, "tools.ts", "export const x = 1;\n");
    let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    let (protect, hide) = shell_lists(&plan, 0);
    let w = d.join("workspace");
    assert!(protect.is_empty(), "{protect:?}");
    assert!(hide.is_empty());
    // Still reported, as protected without the kernel's help.
    let report = &plan.guarded_paths(0).unwrap()[1].paths;
    let worker = report
        .iter()
        .find(|line| line.path == d.join("worker.yaml"))
        .unwrap();
    assert!(!worker.enforced);
    assert!(plan
        .file_protection(0)
        .unwrap()
        .iter()
        .all(|(path, _)| path.starts_with(&w)));
}

#[test]
fn a_bad_protect_pattern_names_the_worker_file() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "worker.yaml",
        "name: main\nsandbox:\n  protect: ['!Makefile']\ntoolsets:\n  shell: { default: ask }\n",
    );
    let err = plan_worker(&top, &LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    let message = err.to_string();
    assert!(
        message.contains("worker.yaml: sandbox: protect[0]"),
        "{message}"
    );
}

#[test]
fn what_an_mcp_servers_environment_names_as_code_is_protected_and_data_is_not() {
    let temp = dir();
    let d = temp.path.clone();
    write(&d, "hook.js", "require('./hook-helper.js');\n");
    write(&d, "hook-helper.js", "\n");
    write(&d, "loader.mjs", "\n");
    write(&d, "pylib/helpers.py", "\n");
    write(&d, "startup.py", "\n");
    write(&d, "memory.json", "{}\n");
    write(&d, "data/notes.txt", "\n");
    write(&d, "server.js", "\n");
    let env: Vec<(String, String)> = [
        (
            "NODE_OPTIONS",
            "--require ./hook.js --import=./loader.mjs --max-old-space-size=64",
        ),
        ("PYTHONPATH", "./pylib:.:/usr/lib/python3"),
        ("PYTHONSTARTUP", "startup.py"),
        ("MEMORY_FILE_PATH", "./memory.json"),
        ("DATA_DIR", "data"),
    ]
    .iter()
    .map(|(name, value)| (name.to_string(), value.to_string()))
    .collect();
    let mut found = scripts_inside(&d, "node", &["server.js".to_string()], &env);
    found.sort();
    let expected: Vec<PathBuf> = [
        "__pycache__",
        "hook-helper.js",
        "hook.js",
        "loader.mjs",
        "pylib",
        "server.js",
        "startup.py",
    ]
    .iter()
    .map(|name| d.join(name))
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn code_named_without_its_extension_in_node_options_is_protected() {
    let temp = dir();
    let d = temp.path.clone();
    write(&d, "h3.js", "\n");
    write(&d, "h4.cjs", "\n");
    write(&d, "server.js", "\n");
    for value in ["-r ./h3 --require=./h4", "--require ./h3 --require h4"] {
        let env = vec![("NODE_OPTIONS".to_string(), value.to_string())];
        let mut found = scripts_inside(&d, "node", &["server.js".to_string()], &env);
        found.sort();
        found.dedup();
        // What Node loads (`h3.js`), and the bare name, where a file made would be loaded.
        let expected: Vec<PathBuf> = ["h3", "h3.js", "h4", "h4.cjs", "server.js"]
            .iter()
            .map(|name| d.join(name))
            .collect();
        assert_eq!(found, expected, "{value}");
    }
}

#[test]
fn code_variables_in_every_spelling_name_their_code() {
    let temp = dir();
    let d = temp.path.clone();
    for file in [
        "hooks/quoted.cjs",
        "hooks/my hook.cjs",
        "hooks/single.cjs",
        "perl/lib/M.pm",
        "ruby/x.rb",
        "audit/a.so",
        "agent/a.jar",
        "npm/h.cjs",
        "lua/init.lua",
        "lua/mods/m.lua",
        "n2/h.mjs",
        "tcl/pkg/pkgIndex.tcl",
        "r/profile.R",
        "git/config",
        "npm/rc",
        "server.js",
    ] {
        write(&d, file, "\n");
    }
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "NODE_OPTIONS",
            r#"--require "./hooks/quoted.cjs""#,
            &["hooks/quoted.cjs"],
        ),
        (
            "NODE_OPTIONS",
            r#"--require="./hooks/quoted.cjs""#,
            &["hooks/quoted.cjs"],
        ),
        (
            "NODE_OPTIONS",
            r#"-r "./hooks/my hook.cjs""#,
            &["hooks/my hook.cjs"],
        ),
        (
            "NODE_OPTIONS",
            "--require './hooks/single.cjs'",
            &["hooks/single.cjs"],
        ),
        ("PERL5OPT", "-I./perl/lib -Mstrict", &["perl/lib"]),
        ("RUBYOPT", "-r./ruby/x.rb", &["ruby/x.rb"]),
        ("LD_AUDIT", "./audit/a.so", &["audit/a.so"]),
        (
            "JAVA_TOOL_OPTIONS",
            "-javaagent:./agent/a.jar",
            &["agent/a.jar"],
        ),
        (
            "npm_config_node_options",
            "--require ./npm/h.cjs",
            &["npm/h.cjs"],
        ),
        (
            "NPM_CONFIG_NODE_OPTIONS",
            "--require ./npm/h.cjs",
            &["npm/h.cjs"],
        ),
        // Missing, spelled as a path: watched, a folder made there would run.
        ("PYTHONUSERBASE", "./userbase", &["userbase"]),
        ("LD_PRELOAD", "./not-yet.so", &["not-yet.so"]),
        ("LUA_INIT", "@./lua/init.lua", &["lua/init.lua"]),
        ("LUA_PATH_5_4", "./lua/mods/?.lua;;", &["lua/mods"]),
        ("LUA_CPATH", "./lua/mods/?.so", &["lua/mods"]),
        ("NODE_OPTIONS", "--import ./n2/h%2emjs", &["n2/h.mjs"]),
        ("TCLLIBPATH", "./tcl/pkg", &["tcl/pkg"]),
        ("R_PROFILE_USER", "./r/profile.R", &["r/profile.R"]),
        ("GIT_CONFIG_GLOBAL", "./git/config", &["git/config"]),
        ("NPM_CONFIG_USERCONFIG", "./npm/rc", &["npm/rc"]),
        ("PYTHONPYCACHEPREFIX", "./pycache", &["pycache"]),
    ];
    for (name, value, expected) in cases {
        let env = vec![(name.to_string(), value.to_string())];
        let found = scripts_inside(&d, "node", &["server.js".to_string()], &env);
        for path in *expected {
            assert!(found.contains(&d.join(path)), "{name}={value}: {found:?}");
        }
        // An option's number or a module name is no file.
        assert!(!found.contains(&d.join("strict")), "{found:?}");
    }
    let env = vec![(
        "NODE_OPTIONS".to_string(),
        "--max-old-space-size=4096".to_string(),
    )];
    assert_eq!(
        scripts_inside(&d, "node", &["server.js".to_string()], &env),
        [d.join("server.js")]
    );
}

#[test]
fn what_an_mcp_server_runs_through_its_launcher_is_protected() {
    let temp = dir();
    let d = temp.path.clone();
    let run = |command: &str, args: &[&str]| {
        let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        let mut found: Vec<String> = scripts_inside(&d, command, &args, &[])
            .iter()
            .map(|path| path.strip_prefix(&d).unwrap().display().to_string())
            .collect();
        found.sort();
        found.dedup();
        found
    };
    // `-m pkg.module`: the module and the package it is in.
    write(&d, "srv/__init__.py", "\n");
    write(&d, "srv/server.py", "from .tools import v\n");
    write(&d, "srv/tools.py", "\n");
    assert_eq!(
        run("python3", &["-m", "srv.server"]),
        // (`srv/server` too: a folder made there would be imported instead)
        [
            "srv",
            "srv/__pycache__",
            "srv/server",
            "srv/server.py",
            "srv/tools",
            "srv/tools.py"
        ]
    );
    // A package manager's script, with its pre-script, and what that imports.
    write(
        &d,
        "package.json",
        r#"{"scripts": {"prestart": "node prepare.cjs", "start": "node server.cjs --port 1"}}"#,
    );
    write(&d, "server.cjs", "require('./lib.cjs');\n");
    write(&d, "lib.cjs", "\n");
    write(&d, "prepare.cjs", "\n");
    assert_eq!(
        run("npm", &["start", "--silent"]),
        ["lib.cjs", "package.json", "prepare.cjs", "server.cjs"]
    );
    assert_eq!(
        run("pnpm", &["run", "start"]),
        ["lib.cjs", "package.json", "prepare.cjs", "server.cjs"]
    );
    // Code on the command line, and an env file's code variables.
    write(&d, "helpers.py", "\n");
    write(&d, "hook.cjs", "\n");
    write(
        &d,
        ".env",
        "NODE_OPTIONS=--require ./hook.cjs\nDB=./data.db\n",
    );
    assert_eq!(
        run("python3", &["-c", "import helpers; helpers.main()"]),
        ["__pycache__", "helpers", "helpers.py"]
    );
    assert_eq!(
        run("bash", &["-c", "exec node server.cjs"]),
        ["lib.cjs", "server.cjs"]
    );
    assert_eq!(
        run("node", &["--env-file=.env", "server.cjs"]),
        [".env", "hook.cjs", "lib.cjs", "server.cjs"]
    );
    // A virtual environment in the work directory, and a project runner's project.
    write(&d, ".venv/pyvenv.cfg", "home = /usr/bin\n");
    std::fs::create_dir_all(d.join(".venv/bin")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3", d.join(".venv/bin/python")).unwrap();
    write(&d, "pyproject.toml", "[project]\nname = 'srv'\n");
    assert_eq!(
        run(".venv/bin/python", &["helpers.py"]),
        [".venv", "__pycache__", "helpers.py"]
    );
    assert_eq!(
        run("uv", &["run", "helpers.py"]),
        [".venv", "__pycache__", "helpers.py", "pyproject.toml"]
    );
    // A script named through a symlink: by its name, so that the link is protected with it.
    write(&d, "code/server.mjs", "\n");
    std::os::unix::fs::symlink("code/server.mjs", d.join("srv.mjs")).unwrap();
    assert_eq!(run("node", &["./srv.mjs"]), ["srv.mjs"]);
}

#[test]
fn an_mcp_argument_names_what_the_server_loads_inside_the_work_directory() {
    let temp = dir();
    let d = temp.path.clone();
    write(&d, "srv/main.py", "\n");
    write(&d, "pkg/__init__.py", "\n");
    write(&d, "server.js", "\n");
    write(&d, "tool.py", "\n");
    write(&d, "data/notes.txt", "\n");
    let run = |command: &str, args: &[&str]| {
        let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        let mut found = scripts_inside(&d, command, &args, &[]);
        // Python's cache beside a module read (see the next test).
        found.retain(|path| !path.ends_with("__pycache__"));
        found
    };
    // Files anywhere on the command line; in the program's place, folders and completed names.
    for (command, args, expected) in [
        ("python3", vec!["srv/main.py"], vec![d.join("srv/main.py")]),
        (
            "python3",
            vec!["x", "--entry=srv/main.py"],
            vec![d.join("srv/main.py")],
        ),
        ("node", vec!["srv"], vec![d.join("srv")]),
        ("python3", vec!["-m", "pkg"], vec![d.join("pkg")]),
        (
            "python3",
            vec!["-u", "-m", "tool"],
            vec![d.join("tool"), d.join("tool.py")],
        ),
        (
            "node",
            vec!["./server"],
            vec![d.join("./server"), d.join("server.js")],
        ),
        ("./server.js", vec![], vec![d.join("server.js")]),
        // A folder that is not in the program's place is data it works on.
        (
            "node",
            vec!["server.js", "./data", "."],
            vec![d.join("server.js")],
        ),
        (
            "node",
            vec!["server.js", "--root=."],
            vec![d.join("server.js")],
        ),
        ("npx", vec!["-y", "some-package", "/etc/hostname"], vec![]),
    ] {
        assert_eq!(run(command, &args), expected, "{command} {args:?}");
    }
    // The work directory itself in the program's place: what `node .` runs.
    write(&d, "package.json", "{ \"main\": \"srv/main.js\" }\n");
    write(&d, "srv/main.js", "\n");
    for word in [".", "./"] {
        let points = run("node", &[word]);
        for expected in ["package.json", "srv/main.js", "index.js", "__main__.py"] {
            assert!(
                points.contains(&d.join(expected)),
                "{word}: {expected}: {points:?}"
            );
        }
        assert!(
            !points.contains(&d),
            "{word}: never the work directory itself"
        );
    }
    assert_eq!(
        package_folder(Path::new("/p/node_modules/a/node_modules/@s/b/x.js")),
        Some(PathBuf::from("/p/node_modules/a/node_modules/@s/b"))
    );
    assert_eq!(package_folder(Path::new("/p/src/x.ts")), None);
    assert_eq!(
        packages_folder(Path::new("/p/node_modules/a/node_modules/@s/b/x.js")),
        Some(PathBuf::from("/p/node_modules"))
    );
    assert_eq!(packages_folder(Path::new("/p/src/x.ts")), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_config_and_the_discovered_tools_files_are_protected() {
    let temp = dir();
    let d = temp.path.clone();
    write(&d, "golem-forge.config.yaml", "model: openai:gpt-4o-mini\n");
    let top = write(
        &d,
        "agents/main.worker",
        "---\nname: main\nsandbox: { root: .. }\ntoolsets:\n  executables: { dirs: [../tools] }\n  shell: { default: ask }\n---\nHelp.\n",
    );
    let tool = write(
        &d,
        "tools/hello.sh",
        "#!/bin/sh\nif [ \"$1\" = description ]; then echo '{\"name\":\"hello\",\"description\":\"Says hello\",\"input_schema\":{\"type\":\"object\"}}'; else echo '{}'; fi\n",
    );
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    plan.discover().await.unwrap();
    let registry = plan.workers()[0].executables.as_ref().unwrap();
    assert_eq!(registry.tools().len(), 1, "{:?}", registry.diagnostics());
    let (protect, _) = shell_lists(&plan, 0);
    for expected in [
        "golem-forge.config.yaml",
        "agents/main.worker",
        // where golem-forge would find a config of the worker's own folder
        "agents/golem-forge.config.yaml",
        "tools",
    ] {
        assert!(
            protect.contains(&d.join(expected)),
            "{expected}: {protect:#?}"
        );
    }
    let report = &plan.guarded_paths(0).unwrap()[0].paths;
    let reason = |path: &Path| {
        report
            .iter()
            .find(|line| line.path == path)
            .map(|line| line.reason.clone())
            .unwrap_or_default()
    };
    assert!(reason(&d.join("golem-forge.config.yaml")).contains("program config of 'main'"));
    assert!(reason(&tool).contains("the executable tool 'hello' of 'main'"));
}

#[test]
fn a_toolset_that_widens_its_own_sandbox_still_protects_the_permissions_file() {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir(d.join("extra")).unwrap();
    let top = write(
        &d,
        "worker.yaml",
        "name: main
toolsets:
  shell: { default: ask, sandbox: { network: true, write: [./extra], mode: best-effort } }
  cli_execute: { allowed_binaries: [ls], sandbox: { network: true } }
",
    );
    // Missing, then written by a save: both times it is in every sandbox's protect list.
    for existing in [false, true] {
        if existing {
            write(&d, PERMISSIONS_FILE_NAME, "version: 1\nrules: []\n");
        }
        let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
        let (protect, _) = shell_lists(&plan, 0);
        assert!(
            protect.contains(&d.join(PERMISSIONS_FILE_NAME)),
            "{protect:?}"
        );
        let cli = plan.workers()[0].cli_execute.as_ref().unwrap();
        let policy = cli.sandbox().expect("sandboxed").policy();
        assert!(policy.protect.contains(&d.join(PERMISSIONS_FILE_NAME)));
        assert!(plan
            .file_protection(0)
            .unwrap()
            .iter()
            .any(|(path, _)| path == &d.join(PERMISSIONS_FILE_NAME)));
    }
}

#[test]
fn a_symlink_on_the_way_to_the_worker_file_is_protected_as_the_link() {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir_all(d.join("real/conf")).unwrap();
    write(
        &d.join("real/conf"),
        "worker.yaml",
        "name: main\nsandbox: { root: ../.. }\ntoolsets:\n  shell: { default: ask }\n",
    );
    std::os::unix::fs::symlink("real/conf", d.join("conflink")).unwrap();
    let plan = plan_worker(&d.join("conflink/worker.yaml"), &LoadOptions::default()).unwrap();
    let (protect, _) = shell_lists(&plan, 0);
    assert!(protect.contains(&d.join("conflink")), "{protect:?}");
    assert!(
        protect.contains(&d.join("real/conf/worker.yaml")),
        "{protect:?}"
    );
}

#[test]
fn a_node_launcher_on_the_host_protects_what_decides_the_code_it_runs() {
    for (sandbox, on_the_host) in [("sandbox: { mode: off }", true), ("", false)] {
        for server in [
            "{ command: npx, args: [-y, some-server] }",
            "{ command: npm, args: [run, -s, serve] }",
            "{ command: /usr/bin/node, args: [server.mjs] }",
        ] {
            let temp = dir();
            let d = temp.path.clone();
            write(&d, "server.mjs", "\n");
            let top = write(
                &d,
                "worker.yaml",
                &format!(
                    "name: main\ntoolsets:\n  shell: {{ default: ask }}\n  mcp: {{ servers: {{ s: {server} }}, {sandbox} }}\n"
                ),
            );
            let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
            let (protect, _) = shell_lists(&plan, 0);
            for file in ["node_modules", "package.json", ".npmrc"] {
                assert_eq!(
                    protect.contains(&d.join(file)),
                    on_the_host,
                    "{server} {sandbox}: {file} in {protect:#?}"
                );
            }
        }
    }
}

#[test]
fn a_blocked_rule_naming_a_missing_path_hides_it_for_processes_too() {
    use crate::approval::Decision;
    use crate::fs::rules::PathRule;
    let temp = dir();
    let d = temp.path.clone();
    write(&d, ".env.example", "A=1\n");
    let rules: Vec<PathRule> = [
        "/.env",
        ".env.local",
        "/config/.env",
        "/secrets/",
        ".env*",
        "**/*.pem",
        "/.env.example",
    ]
    .iter()
    .map(|pattern| PathRule {
        pattern: pattern.to_string(),
        approval: Decision::Blocked,
    })
    .chain(std::iter::once(PathRule {
        pattern: "/notes.md".into(),
        approval: Decision::Ask,
    }))
    .collect();
    let guards = hidden_by(&d, &rules, "w.yaml").unwrap();
    let mut hidden: Vec<PathBuf> = guards
        .report(|_| true, |_| true)
        .iter()
        .map(|entry| entry.path.clone())
        .collect();
    hidden.sort();
    // The existing file every pattern matches, and each literal blocked path that is missing;
    // not the wildcard patterns' (nothing to name), nor a rule that only asks.
    let expected: Vec<PathBuf> = [
        ".env",
        ".env.example",
        ".env.local",
        "config/.env",
        "secrets",
    ]
    .iter()
    .map(|name| d.join(name))
    .collect();
    assert_eq!(hidden, expected);
}
