//! The runners: programs whose purpose includes running another program (`pyenv exec`, `npx`,
//! `uv run`, `bundle exec`) or the commands of a file in the work directory (`make`, `just`,
//! `npm run`, `cargo run`). One table, [`RUNNERS`], says for each how to find what it runs:
//!
//! - [`Form::Command`]: the command begins at the first operand after the options (`--` ends
//!   them; options that take a value are listed, and an unknown option is read both with and
//!   without a value, so no reading escapes); `npx --no-install git push` runs `git push`.
//! - [`Form::After`]: the command follows a marker (`mise exec node@20 -- git push`).
//! - [`Form::Unknowable`]: what runs is written in a file toolgate does not read (a Makefile,
//!   `package.json` scripts) or is the project's own program (`cargo run`, `go run`).
//! - [`Form::Shell`]: the runner hands a command line to a shell (`npx -c`, `bun exec`):
//!   refused, as toolgate never runs a shell.
//!
//! `docs/commands.md` lists the table in prose; keep the two together.

use super::runs::{Inner, Runs};
use super::{Layer, Refusal};
use crate::error::Error;

/// How a runner (or one of its sub-commands) finds what it runs.
#[derive(Debug)]
pub(crate) enum Form {
    /// It runs nothing else.
    Itself,
    /// It runs the command that begins at its first operand (after `Options::skip` operands).
    Command(Options),
    /// It runs the command after one of the markers; without one, `Form` applies.
    After(&'static [&'static str], Options, &'static Form),
    /// The sub-command word itself begins the command (`corepack pnpm …` runs `pnpm …`).
    SubIsCommand,
    /// It runs commands toolgate cannot see.
    Unknowable(&'static str),
    /// Like [`Form::Unknowable`], unless one of these flags turns that off (`--ignore-scripts`).
    UnknowableUnless(&'static [&'static str], &'static str),
    /// Its first operand names what runs: one of `known` (or none) is its own; any other is
    /// [`Form::Unknowable`] for the reason given.
    Named(&'static [&'static str], &'static str),
    /// A sub-command that is itself a runner with sub-commands (`uv tool run`).
    Nested(&'static Runner),
    /// A program `<runner>-<word>` if one exists (a plugin, which is judged as itself); else
    /// [`Form::Unknowable`] (an alias from a configuration file).
    PluginOr(&'static str, &'static str),
    /// It runs a command line with a shell: refused.
    Shell(&'static str),
    /// It runs nothing else, but some of its options name a command (refused wherever they
    /// stand); with `bundled`, its first argument may be a cluster of option letters without a
    /// dash (`tar xIf prog`).
    Options(Options, bool),
    /// `find`: each `-exec`/`-execdir`/`-ok`/`-okdir` runs the command up to `;` or `+`.
    Find,
    /// ssh, scp, sftp: `-o` options that run a command or load code (`ProxyCommand`,
    /// `LocalCommand`, `PKCS11Provider`, …) and configuration files (`-F`) are refused.
    Ssh,
}

/// The options of a runner or sub-command, as far as finding the command needs them.
#[derive(Debug)]
pub(crate) struct Options {
    /// Options that take a value (`-p pkg`, `--package=pkg`).
    pub valued: &'static [&'static str],
    /// Options that take none.
    pub flags: &'static [&'static str],
    /// Options whose value is a command line for a shell (`-c`, `--call`): refused.
    pub shell: &'static [&'static str],
    /// Options that set the environment of what runs (`--env`, `--env-file`): refused, since
    /// a variable such as `LD_PRELOAD` or `GIT_CONFIG_PARAMETERS` changes what a program does.
    pub environment: &'static [&'static str],
    /// Options whose presence anywhere makes it run a program toolgate cannot judge
    /// (`go test -exec`).
    pub unknowable: &'static [&'static str],
    /// Operands before the command (`rustup run <toolchain> …`).
    pub skip: usize,
    /// The command's first word is a package (`npx cowsay@1`): judged without its version.
    pub package: bool,
}

impl Options {
    const NONE: Options = Options {
        valued: &[],
        flags: &[],
        shell: &[],
        environment: &[],
        unknowable: &[],
        skip: 0,
        package: false,
    };
}

/// One runner: its names and what each of its sub-commands does.
#[derive(Debug)]
pub(crate) struct Runner {
    /// The names it is run under (compared without version or extension).
    pub names: &'static [&'static str],
    /// Its own options before a sub-command.
    pub options: Options,
    /// Its sub-commands; empty for a runner without any (`npx`, `make`), which `otherwise`
    /// describes.
    pub subs: &'static [(&'static [&'static str], Form)],
    /// What an unlisted sub-command does, or the runner without sub-commands.
    pub otherwise: Form,
    /// Sub-commands may be shortened to a unique prefix and written in camelCase (npm).
    pub abbreviations: bool,
    /// What it does without a sub-command (bare `yarn` installs).
    pub bare: Form,
}

const fn runner(names: &'static [&'static str], otherwise: Form) -> Runner {
    Runner {
        names,
        options: Options::NONE,
        subs: &[],
        otherwise,
        abbreviations: false,
        bare: Form::Itself,
    }
}

const fn with_subs(
    names: &'static [&'static str],
    options: Options,
    subs: &'static [(&'static [&'static str], Form)],
    otherwise: Form,
) -> Runner {
    Runner {
        names,
        options,
        subs,
        otherwise,
        abbreviations: false,
        bare: Form::Itself,
    }
}

const PLAIN: Form = Form::Command(Options::NONE);
const STARTS_A_SHELL: Form = Form::Shell("without a command it starts a shell");
const LIFECYCLE: &str = "runs the packages' lifecycle scripts (preinstall, install, postinstall, prepare, …), which toolgate cannot see; add --ignore-scripts to run it without them";
const PACKAGE_SCRIPT: &str = "runs a script of package.json, which toolgate cannot see";
const SCRIPT_OR_BIN: &str =
    "runs the package.json script of that name (or a package's program), which toolgate cannot see";
const INITIALIZER: &str =
    "runs an initializer package (create-<name>), whose code toolgate cannot see";
const IGNORE_SCRIPTS: &[&str] = &["--ignore-scripts"];

/// `exec` of the `*env` version managers: the command follows directly.
const ENV_EXEC: &[(&[&str], Form)] = &[(&["exec"], PLAIN)];

const NPX_OPTIONS: Options = Options {
    valued: &[
        "-p",
        "--package",
        "--prefix",
        "-w",
        "--workspace",
        "--registry",
        "--cache",
        "--userconfig",
        "--node-options",
        "--script-shell",
        "--loglevel",
    ],
    flags: &[
        "-y",
        "--yes",
        "--no",
        "--no-install",
        "-q",
        "--quiet",
        "--ignore-existing",
        "--prefer-offline",
        "--prefer-online",
        "--offline",
        "-ws",
        "--workspaces",
        "--include-workspace-root",
        "-s",
        "--silent",
    ],
    shell: &["-c", "--call", "--shell"],
    environment: &[],
    unknowable: &[],
    skip: 0,
    package: true,
};

const DLX_OPTIONS: Options = Options {
    valued: &["-p", "--package", "--filter", "-F", "--dir", "-C"],
    flags: &["-q", "--quiet", "--silent", "-s", "-r", "--recursive"],
    shell: &["-c", "--shell-mode"],
    environment: &[],
    unknowable: &[],
    skip: 0,
    package: true,
};

const UVX_OPTIONS: Options = Options {
    valued: &[
        "--from",
        "--with",
        "--with-editable",
        "--with-requirements",
        "--python",
        "-p",
        "--index",
        "--default-index",
        "--index-url",
        "--extra-index-url",
        "--directory",
        "--project",
        "--cache-dir",
        "--constraints",
        "--overrides",
    ],
    flags: &[
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "--isolated",
        "--offline",
        "--no-cache",
        "-n",
    ],
    shell: &[],
    environment: &["--env-file"],
    unknowable: &[],
    skip: 0,
    package: true,
};

const UV_RUN_OPTIONS: Options = Options {
    valued: &[
        "--with",
        "--with-editable",
        "--with-requirements",
        "--python",
        "-p",
        "--package",
        "--extra",
        "--group",
        "--only-group",
        "--no-group",
        "--index",
        "--default-index",
        "--directory",
        "--project",
        "--cache-dir",
    ],
    flags: &[
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "--isolated",
        "--offline",
        "--no-sync",
        "--frozen",
        "--locked",
        "--all-extras",
        "--no-dev",
        "--script",
        "--no-project",
        "-s",
    ],
    shell: &[],
    environment: &["--env-file"],
    unknowable: &[],
    skip: 0,
    package: false,
};

const MISE_EXEC_OPTIONS: Options = Options {
    valued: &["-C", "--cd", "-E", "--env", "-j", "--jobs"],
    flags: &[
        "--raw",
        "--no-prepare",
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "-y",
        "--yes",
    ],
    shell: &["-c", "--command"],
    environment: &[],
    unknowable: &[],
    skip: 0,
    package: false,
};

const CONDA_RUN_OPTIONS: Options = Options {
    valued: &["-n", "--name", "-p", "--prefix", "--cwd", "-a", "--arch"],
    flags: &[
        "--no-capture-output",
        "--live-stream",
        "--debug-wrapper-scripts",
        "-v",
        "--verbose",
    ],
    shell: &[],
    environment: &[],
    unknowable: &[],
    skip: 0,
    package: false,
};

const MISE_TASKS: &str = "runs tasks from mise's configuration files, which toolgate cannot see";

/// The npm commands that run nothing else; listed so that abbreviations resolve as npm
/// resolves them.
const NPM_OWN: &[&str] = &[
    "access",
    "adduser",
    "audit",
    "bugs",
    "cache",
    "completion",
    "config",
    "c",
    "deprecate",
    "diff",
    "dist-tag",
    "docs",
    "doctor",
    "edit",
    "explain",
    "find-dupes",
    "fund",
    "get",
    "help",
    "help-search",
    "hook",
    "login",
    "logout",
    "ls",
    "ll",
    "la",
    "list",
    "org",
    "outdated",
    "owner",
    "ping",
    "pkg",
    "prefix",
    "profile",
    "prune",
    "query",
    "repo",
    "root",
    "sbom",
    "search",
    "set",
    "shrinkwrap",
    "star",
    "stars",
    "team",
    "token",
    "undeprecate",
    "uninstall",
    "unpublish",
    "unstar",
    "view",
    "v",
    "info",
    "show",
    "whoami",
    "r",
    "rm",
    "remove",
    "un",
    "unlink",
];

const NPM_SUBS: &[(&[&str], Form)] = &[
    (&["exec", "x"], Form::Command(NPX_OPTIONS)),
    (
        &[
            "run",
            "run-script",
            "rum",
            "urn",
            "test",
            "t",
            "tst",
            "start",
            "stop",
            "restart",
        ],
        Form::Unknowable(PACKAGE_SCRIPT),
    ),
    (
        &["explore"],
        Form::Shell("npm explore runs a command line in a package's folder"),
    ),
    (
        &[
            "install",
            "i",
            "in",
            "ins",
            "inst",
            "insta",
            "instal",
            "isnt",
            "isnta",
            "isntal",
            "isntall",
            "add",
            "ci",
            "clean-install",
            "ic",
            "install-clean",
            "isntall-clean",
            "install-test",
            "it",
            "install-ci-test",
            "cit",
            "rebuild",
            "rb",
            "pack",
            "publish",
            "version",
            "update",
            "up",
            "upgrade",
            "udpate",
            "link",
            "ln",
            "dedupe",
            "ddp",
        ],
        Form::UnknowableUnless(IGNORE_SCRIPTS, LIFECYCLE),
    ),
    (&["init", "create", "innit"], Form::Named(&[], INITIALIZER)),
    (NPM_OWN, Form::Itself),
];

const PNPM_SUBS: &[(&[&str], Form)] = &[
    (
        &["exec"],
        Form::Command(Options {
            valued: &["--filter", "-F", "--resume-from", "--dir", "-C"],
            flags: &[
                "-r",
                "--recursive",
                "--parallel",
                "--no-bail",
                "--report-summary",
            ],
            shell: &["-c", "--shell-mode"],
            environment: &[],
            unknowable: &[],
            skip: 0,
            package: false,
        }),
    ),
    (&["dlx"], Form::Command(DLX_OPTIONS)),
    (
        &[
            "run",
            "run-script",
            "test",
            "t",
            "tst",
            "start",
            "restart",
            "stop",
        ],
        Form::Unknowable(PACKAGE_SCRIPT),
    ),
    (
        &[
            "install",
            "i",
            "add",
            "update",
            "up",
            "upgrade",
            "rebuild",
            "rb",
            "pack",
            "publish",
            "link",
            "ln",
            "import",
            "install-test",
            "it",
            "dedupe",
            "deploy",
            "fetch",
        ],
        Form::UnknowableUnless(IGNORE_SCRIPTS, LIFECYCLE),
    ),
    (&["create"], Form::Named(&[], INITIALIZER)),
    (
        &[
            "list",
            "ls",
            "ll",
            "la",
            "why",
            "outdated",
            "audit",
            "store",
            "config",
            "c",
            "root",
            "bin",
            "licenses",
            "patch",
            "patch-commit",
            "patch-remove",
            "server",
            "setup",
            "init",
            "remove",
            "rm",
            "uninstall",
            "un",
            "unlink",
            "prune",
            "self-update",
            "doctor",
            "view",
            "info",
            "show",
            "v",
            "env",
            "catalog",
            "help",
            "approve-builds",
            "ignored-builds",
        ],
        Form::Itself,
    ),
];

const YARN_SUBS: &[(&[&str], Form)] = &[
    (&["run", "test", "start"], Form::Unknowable(SCRIPT_OR_BIN)),
    (&["exec"], PLAIN),
    (&["dlx"], Form::Command(DLX_OPTIONS)),
    (
        &["workspace", "workspaces"],
        Form::Unknowable("runs commands or scripts in the workspaces"),
    ),
    (
        &[
            "install", "add", "up", "upgrade", "link", "pack", "publish", "version", "rebuild",
        ],
        Form::UnknowableUnless(IGNORE_SCRIPTS, LIFECYCLE),
    ),
    (&["create"], Form::Named(&[], INITIALIZER)),
    (
        &[
            "node",
            "info",
            "why",
            "list",
            "outdated",
            "config",
            "cache",
            "audit",
            "bin",
            "check",
            "constraints",
            "dedupe",
            "explain",
            "init",
            "global",
            "help",
            "licenses",
            "login",
            "logout",
            "npm",
            "owner",
            "patch",
            "plugin",
            "remove",
            "search",
            "set",
            "stage",
            "tag",
            "team",
            "unlink",
            "unplug",
            "upgrade-interactive",
            "version",
        ],
        Form::Itself,
    ),
];

const BUNX_OPTIONS: Options = Options {
    valued: &["-p", "--package"],
    flags: &["--bun", "--silent", "--verbose"],
    shell: &[],
    environment: &[],
    unknowable: &[],
    skip: 0,
    package: true,
};

const BUN_SUBS: &[(&[&str], Form)] = &[
    (&["x"], Form::Command(BUNX_OPTIONS)),
    (
        &["run"],
        Form::Unknowable("runs a package.json script, a file or a package's program"),
    ),
    (
        &["exec"],
        Form::Shell("bun exec runs a command line with bun's shell"),
    ),
    (
        &["install", "i", "add", "a", "update", "link"],
        Form::UnknowableUnless(IGNORE_SCRIPTS, LIFECYCLE),
    ),
    (&["create", "c"], Form::Named(&[], INITIALIZER)),
    (
        &[
            "build",
            "init",
            "pm",
            "unlink",
            "remove",
            "rm",
            "outdated",
            "publish",
            "upgrade",
            "completions",
            "repl",
            "help",
            "patch",
            "audit",
            "info",
            "why",
            "test",
        ],
        Form::Itself,
    ),
];

const CARGO_OWN: &[&str] = &[
    "build",
    "b",
    "check",
    "c",
    "clean",
    "doc",
    "d",
    "new",
    "init",
    "add",
    "remove",
    "test",
    "t",
    "bench",
    "update",
    "search",
    "publish",
    "install",
    "uninstall",
    "fetch",
    "fix",
    "generate-lockfile",
    "help",
    "locate-project",
    "login",
    "logout",
    "metadata",
    "owner",
    "package",
    "pkgid",
    "read-manifest",
    "report",
    "rustc",
    "rustdoc",
    "tree",
    "vendor",
    "verify-project",
    "version",
    "yank",
    "info",
];

const CARGO_SUBS: &[(&[&str], Form)] = &[
    (
        &["run", "r"],
        Form::Unknowable(
            "builds and runs the project's own program, whose code toolgate cannot see",
        ),
    ),
    (CARGO_OWN, Form::Itself),
];

/// The tools `go tool` ships; any other name is a tool dependency of the module.
const GO_TOOLS: &[&str] = &[
    "addr2line",
    "asm",
    "buildid",
    "cgo",
    "compile",
    "covdata",
    "cover",
    "dist",
    "distpack",
    "doc",
    "fix",
    "link",
    "nm",
    "objdump",
    "pack",
    "pprof",
    "preprofile",
    "test2json",
    "trace",
    "vet",
];

const GO_EXEC: &[&str] = &["-exec", "--exec", "-toolexec", "--toolexec"];

const GO_SUBS: &[(&[&str], Form)] = &[
    (
        &["run"],
        Form::Unknowable("builds and runs the named program, whose code toolgate cannot see"),
    ),
    (
        &["generate"],
        Form::Unknowable("runs the commands written in //go:generate comments"),
    ),
    (
        &["tool"],
        Form::Named(
            GO_TOOLS,
            "runs a tool dependency of the module, whose code toolgate cannot see",
        ),
    ),
];

const UV_TOOL: Runner = with_subs(
    &["uv tool"],
    Options::NONE,
    &[(&["run"], Form::Command(UVX_OPTIONS))],
    Form::Itself,
);

/// Every runner toolgate knows. Names are compared without version or extension.
pub(crate) static RUNNERS: &[Runner] = &[
    // Version managers.
    with_subs(
        &[
            "pyenv", "rbenv", "nodenv", "goenv", "jenv", "plenv", "luaenv", "phpenv", "scalaenv",
            "swiftenv", "crenv", "exenv",
        ],
        Options::NONE,
        ENV_EXEC,
        Form::Itself,
    ),
    with_subs(
        &["asdf"],
        Options::NONE,
        &[
            (&["exec"], PLAIN),
            (
                &["env"],
                Form::Command(Options {
                    skip: 1,
                    ..Options::NONE
                }),
            ),
        ],
        Form::Itself,
    ),
    with_subs(
        &["mise", "rtx"],
        Options {
            valued: &["-C", "--cd", "-E", "--env", "-j", "--jobs", "--log-level"],
            flags: &["-q", "--quiet", "-v", "--verbose", "-y", "--yes", "--raw"],
            ..Options::NONE
        },
        &[
            (&["exec", "x"], Form::After(&["--"], MISE_EXEC_OPTIONS, &STARTS_A_SHELL)),
            (
                &["run", "r", "watch", "w", "tasks", "task", "t"],
                Form::Unknowable(MISE_TASKS),
            ),
            (&["en"], STARTS_A_SHELL),
            (
                &[
                    "activate", "alias", "backends", "bin-paths", "cache", "completion", "config",
                    "cfg", "current", "deactivate", "direnv", "doctor", "dr", "edit", "env", "e",
                    "fmt", "generate", "implode", "install", "i", "install-into", "latest",
                    "link", "ln", "ls", "list", "ls-remote", "outdated", "plugins", "p", "prune",
                    "registry", "reshim", "search", "self-update", "set", "settings", "shell",
                    "sh", "sync", "tool", "trust", "uninstall", "unset", "unuse", "upgrade",
                    "up", "use", "u", "usage", "version", "where", "which",
                ],
                Form::Itself,
            ),
        ],
        Form::Unknowable(MISE_TASKS),
    ),
    with_subs(
        &["volta"],
        Options::NONE,
        &[(
            &["run"],
            Form::Command(Options {
                valued: &["--node", "--npm", "--pnpm", "--yarn"],
                flags: &["--bundled-npm", "--no-yarn", "--no-pnpm", "--verbose", "--quiet"],
                environment: &["--env"],
                ..Options::NONE
            }),
        )],
        Form::Itself,
    ),
    with_subs(
        &["fnm"],
        Options::NONE,
        &[(
            &["exec"],
            Form::Command(Options {
                valued: &["--using"],
                flags: &["--using-file"],
                ..Options::NONE
            }),
        )],
        Form::Itself,
    ),
    with_subs(
        &["n"],
        Options::NONE,
        &[(
            &["exec"],
            Form::Command(Options {
                skip: 1,
                ..Options::NONE
            }),
        )],
        Form::Itself,
    ),
    with_subs(
        &["rustup"],
        Options::NONE,
        &[(
            &["run"],
            Form::Command(Options {
                flags: &["--install"],
                skip: 1,
                ..Options::NONE
            }),
        )],
        Form::Itself,
    ),
    with_subs(
        &["conda", "mamba", "micromamba"],
        Options::NONE,
        &[(&["run"], Form::Command(CONDA_RUN_OPTIONS))],
        Form::Itself,
    ),
    // Python project and package tools.
    with_subs(
        &["pipenv"],
        Options::NONE,
        &[(&["run"], PLAIN), (&["shell"], STARTS_A_SHELL)],
        Form::Itself,
    ),
    with_subs(
        &["poetry"],
        Options {
            valued: &["-C", "--directory", "-P", "--project"],
            flags: &["-q", "--quiet", "-v", "-vv", "-vvv", "-n", "--no-interaction"],
            ..Options::NONE
        },
        &[(&["run"], PLAIN), (&["shell"], STARTS_A_SHELL)],
        Form::Itself,
    ),
    with_subs(
        &["pdm"],
        Options {
            valued: &["-p", "--project"],
            ..Options::NONE
        },
        &[(
            &["run"],
            Form::Unknowable("runs a script of pyproject.toml (or a command), which toolgate cannot see"),
        )],
        Form::Itself,
    ),
    with_subs(
        &["hatch"],
        Options::NONE,
        &[
            (
                &["run"],
                Form::Unknowable("runs the scripts of hatch's environments, which toolgate cannot see"),
            ),
            (&["shell"], STARTS_A_SHELL),
        ],
        Form::Itself,
    ),
    with_subs(
        &["rye"],
        Options::NONE,
        &[(
            &["run"],
            Form::Unknowable("runs a script of pyproject.toml (or a command), which toolgate cannot see"),
        )],
        Form::Itself,
    ),
    with_subs(
        &["pixi"],
        Options::NONE,
        &[
            (
                &["run"],
                Form::Unknowable("runs the tasks of pixi.toml, which toolgate cannot see"),
            ),
            (&["exec", "x"], PLAIN),
            (&["shell"], STARTS_A_SHELL),
        ],
        Form::Itself,
    ),
    with_subs(
        &["uv"],
        Options {
            valued: &["--directory", "--project", "--cache-dir", "--config-file"],
            flags: &["-q", "--quiet", "-v", "--verbose", "--offline", "--no-cache"],
            ..Options::NONE
        },
        &[
            (&["run"], Form::Command(UV_RUN_OPTIONS)),
            (&["tool"], Form::Nested(&UV_TOOL)),
        ],
        Form::Itself,
    ),
    runner(&["uvx"], Form::Command(UVX_OPTIONS)),
    with_subs(
        &["pipx"],
        Options::NONE,
        &[(
            &["run"],
            Form::Command(Options {
                valued: &["--spec", "--python", "--index-url", "-i", "--pip-args"],
                flags: &["--no-cache", "--pypackages", "--verbose", "-v", "--quiet", "-q"],
                package: true,
                ..Options::NONE
            }),
        )],
        Form::Itself,
    ),
    // Ruby.
    with_subs(
        &["bundle", "bundler"],
        Options::NONE,
        &[(
            &["exec"],
            Form::Command(Options {
                valued: &["--gemfile"],
                flags: &["--keep-file-descriptors"],
                ..Options::NONE
            }),
        )],
        Form::Itself,
    ),
    // JavaScript package managers.
    runner(&["npx"], Form::Command(NPX_OPTIONS)),
    Runner {
        names: &["npm"],
        options: Options {
            valued: &[
                "--prefix",
                "-w",
                "--workspace",
                "--loglevel",
                "--userconfig",
                "--registry",
                "--cache",
            ],
            flags: &[
                "-g",
                "--global",
                "-s",
                "--silent",
                "-q",
                "--quiet",
                "-d",
                "--ws",
                "--workspaces",
                "--include-workspace-root",
                "-y",
                "--yes",
            ],
            shell: &[],
            environment: &[],
            unknowable: &[],
            skip: 0,
            package: false,
        },
        subs: NPM_SUBS,
        otherwise: Form::Itself,
        abbreviations: true,
        bare: Form::Itself,
    },
    with_subs(
        &["pnpm"],
        Options {
            valued: &["--filter", "-F", "--dir", "-C"],
            flags: &["-r", "--recursive", "-s", "--silent", "-w", "--workspace-root"],
            ..Options::NONE
        },
        PNPM_SUBS,
        Form::Unknowable(SCRIPT_OR_BIN),
    ),
    runner(&["pnpx"], Form::Command(DLX_OPTIONS)),
    Runner {
        names: &["yarn", "yarnpkg"],
        options: Options {
            valued: &["--cwd"],
            flags: &["-s", "--silent"],
            ..Options::NONE
        },
        subs: YARN_SUBS,
        otherwise: Form::Unknowable(SCRIPT_OR_BIN),
        abbreviations: false,
        bare: Form::UnknowableUnless(IGNORE_SCRIPTS, LIFECYCLE),
    },
    with_subs(
        &["bun"],
        Options {
            valued: &["--cwd", "-c", "--config"],
            flags: &["--silent", "--bun", "-b"],
            ..Options::NONE
        },
        BUN_SUBS,
        Form::Unknowable("runs the package.json script, file or package program of that name"),
    ),
    runner(&["bunx"], Form::Command(BUNX_OPTIONS)),
    with_subs(
        &["deno"],
        Options::NONE,
        &[(
            &["task"],
            Form::Unknowable("runs the tasks of deno.json, which toolgate cannot see"),
        )],
        Form::Itself,
    ),
    with_subs(
        &["corepack"],
        Options::NONE,
        &[(
            &["npm", "npx", "pnpm", "pnpx", "yarn", "yarnpkg"],
            Form::SubIsCommand,
        )],
        Form::Itself,
    ),
    // Build tools that run the project's program or the commands of a file.
    with_subs(
        &["cargo"],
        Options {
            valued: &["-C", "-Z", "--color", "--manifest-path", "-j", "--jobs"],
            flags: &[
                "-q",
                "--quiet",
                "-v",
                "-vv",
                "--verbose",
                "--frozen",
                "--locked",
                "--offline",
            ],
            unknowable: &["--config"],
            ..Options::NONE
        },
        CARGO_SUBS,
        Form::PluginOr(
            "cargo",
            "is no cargo command and no cargo-<name> program, so cargo runs it as an alias from .cargo/config.toml, which toolgate cannot see",
        ),
    ),
    with_subs(
        &["go"],
        Options {
            valued: &["-C"],
            unknowable: GO_EXEC,
            ..Options::NONE
        },
        GO_SUBS,
        Form::Itself,
    ),
    runner(
        &["make", "gmake", "bmake", "pmake", "remake", "mingw32-make", "colormake"],
        Form::Unknowable("runs the recipes of a Makefile, which toolgate cannot see"),
    ),
    runner(
        &["just"],
        Form::Unknowable("runs the recipes of a justfile, which toolgate cannot see"),
    ),
    runner(
        &["task", "go-task"],
        Form::Unknowable("runs the tasks of a Taskfile, which toolgate cannot see"),
    ),
    runner(
        &["rake"],
        Form::Unknowable("runs the tasks of a Rakefile, which toolgate cannot see"),
    ),
    runner(
        &["ninja", "samu"],
        Form::Unknowable("runs the commands of build.ninja, which toolgate cannot see"),
    ),
    runner(
        &["mage"],
        Form::Unknowable("runs the targets of a magefile, which toolgate cannot see"),
    ),
    runner(
        &["invoke", "inv"],
        Form::Unknowable("runs the tasks of tasks.py, which toolgate cannot see"),
    ),
    runner(
        &["scons"],
        Form::Unknowable("runs the build of an SConstruct file, which toolgate cannot see"),
    ),
    runner(
        &["gradle", "gradlew"],
        Form::Unknowable("runs the build of a Gradle build file, which toolgate cannot see"),
    ),
    runner(
        &["mvn", "mvnw"],
        Form::Unknowable("runs the plugins of a Maven pom.xml, which toolgate cannot see"),
    ),
    runner(
        &["ant"],
        Form::Unknowable("runs the targets of build.xml, which toolgate cannot see"),
    ),
    runner(
        &["bazel", "bazelisk"],
        Form::Unknowable("runs the rules of Bazel's BUILD files, which toolgate cannot see"),
    ),
    runner(
        &["cmake"],
        Form::Unknowable("runs build tools, scripts (-P) and commands (-E) CMake is given"),
    ),
    runner(
        &["meson"],
        Form::Unknowable("runs the build of meson.build, which toolgate cannot see"),
    ),
    runner(
        &["tox"],
        Form::Unknowable("runs the commands of tox.ini, which toolgate cannot see"),
    ),
    runner(
        &["nox"],
        Form::Unknowable("runs the sessions of noxfile.py, which toolgate cannot see"),
    ),
    runner(
        &["pre-commit"],
        Form::Unknowable("runs the hooks of .pre-commit-config.yaml, which toolgate cannot see"),
    ),
    runner(
        &["turbo", "nx", "lerna"],
        Form::Unknowable("runs the scripts of the workspace's packages, which toolgate cannot see"),
    ),
    runner(
        &["concurrently", "npm-run-all", "run-s", "run-p", "nodemon"],
        Form::Unknowable("runs command lines or package.json scripts, which toolgate cannot judge"),
    ),
    runner(
        &["foreman", "honcho", "overmind"],
        Form::Unknowable("runs the processes of a Procfile, which toolgate cannot see"),
    ),
    with_subs(
        &["devbox"],
        Options::NONE,
        &[
            (
                &["run"],
                Form::Unknowable("runs the scripts of devbox.json (or a command), which toolgate cannot see"),
            ),
            (&["shell"], STARTS_A_SHELL),
        ],
        Form::Itself,
    ),
    with_subs(
        &["nix"],
        Options::NONE,
        &[
            (
                &["run"],
                Form::Unknowable("runs a flake's program, whose code toolgate cannot see"),
            ),
            (
                &["develop", "shell"],
                Form::After(&["-c", "--command"], Options::NONE, &STARTS_A_SHELL),
            ),
        ],
        Form::Itself,
    ),
    runner(
        &["nix-shell"],
        Form::Shell("nix-shell runs a shell (or a command line with --run)"),
    ),
    with_subs(
        &["direnv"],
        Options::NONE,
        &[(
            &["exec"],
            Form::Shell("direnv exec runs .envrc, a shell script, before the command"),
        )],
        Form::Itself,
    ),
    runner(
        &["xcrun"],
        Form::Command(Options {
            valued: &["--sdk", "--toolchain"],
            flags: &[
                "-v",
                "--verbose",
                "-l",
                "--log",
                "-n",
                "--no-cache",
                "-k",
                "--kill-cache",
                "-r",
                "--run",
            ],
            ..Options::NONE
        }),
    ),
    // Programs with an option or action that runs another program.
    runner(&["find", "gfind", "bfs"], Form::Find),
    runner(
        &["rsync"],
        Form::Options(
            Options {
                shell: &["-e", "--rsh"],
                ..Options::NONE
            },
            false,
        ),
    ),
    runner(
        &["tar", "gtar", "bsdtar"],
        Form::Options(
            Options {
                shell: &[
                    "--to-command",
                    "--use-compress-program",
                    "-I",
                    "--checkpoint-action",
                    "--info-script",
                    "--new-volume-script",
                    "-F",
                ],
                ..Options::NONE
            },
            true,
        ),
    ),
    runner(
        &["sort"],
        Form::Options(
            Options {
                shell: &["--compress-program"],
                ..Options::NONE
            },
            false,
        ),
    ),
    runner(
        &["zip"],
        Form::Options(
            Options {
                shell: &["-TT", "--unzip-command"],
                ..Options::NONE
            },
            false,
        ),
    ),
    runner(&["ssh", "scp", "sftp", "autossh"], Form::Ssh),
];

/// Arguments that only print a version or help: the runner then runs nothing.
const ONLY_PRINTS: &[&str] = &["--version", "-V", "--help", "-h"];

fn shell_refusal(program: &str, why: &str) -> Refusal {
    Refusal::new(
        Layer::ShellOrTrampoline,
        Error::ShellNotAllowed {
            binary: program.to_string(),
            reason: format!(
                "{why}, and toolgate never runs a shell; give the program and its arguments instead"
            ),
        },
    )
}

/// What `runner` (run as `program`) does with `args`. `external(prefix, word)` says whether a
/// program `<prefix>-<word>` exists (cargo plugins).
pub(crate) fn analyse(
    runner: &'static Runner,
    program: &str,
    args: &[String],
    external: &dyn Fn(&str, &str) -> bool,
) -> Result<Runs, Refusal> {
    if args.len() == 1 && ONLY_PRINTS.contains(&args[0].as_str()) {
        return Ok(Runs::default());
    }
    let mut runs = Runs::default();
    note_unknowable_options(program, &runner.options, args, &mut runs);
    if runner.subs.is_empty() {
        apply(&runner.otherwise, program, "", args, external, &mut runs)?;
        return Ok(runs);
    }
    let positions = operand_positions(&runner.options, args, 0);
    if positions.is_empty() {
        apply(&runner.bare, program, "", args, external, &mut runs)?;
    }
    for at in positions {
        let word = args[at].as_str();
        let rest = &args[at + 1..];
        let forms = sub_forms(runner, word);
        if forms.is_empty() {
            apply(&runner.otherwise, program, word, rest, external, &mut runs)?;
        }
        for form in forms {
            match form {
                Form::SubIsCommand => runs.commands.push(Inner::new(
                    args[at..].to_vec(),
                    format!("'{program} {word}' runs it"),
                )),
                form => apply(form, program, word, rest, external, &mut runs)?,
            }
        }
    }
    Ok(runs)
}

/// The forms of the sub-command `word` (several when an abbreviation is ambiguous).
fn sub_forms(runner: &'static Runner, word: &str) -> Vec<&'static Form> {
    let exact: Vec<&Form> = runner
        .subs
        .iter()
        .filter(|(names, _)| names.contains(&word))
        .map(|(_, form)| form)
        .collect();
    if !exact.is_empty() || !runner.abbreviations {
        return exact;
    }
    // npm: `runScript` is `run-script`, and any unique prefix is the command.
    let mut kebab = String::new();
    for c in word.chars() {
        if c.is_ascii_uppercase() {
            kebab.push('-');
            kebab.push(c.to_ascii_lowercase());
        } else {
            kebab.push(c);
        }
    }
    let mut found: Vec<&Form> = Vec::new();
    for (names, form) in runner.subs {
        if names
            .iter()
            .any(|name| *name == kebab || (!kebab.is_empty() && name.starts_with(kebab.as_str())))
            && !found.iter().any(|known| std::ptr::eq(*known, form))
        {
            found.push(form);
        }
    }
    found
}

fn apply(
    form: &'static Form,
    program: &str,
    sub: &str,
    args: &[String],
    external: &dyn Fn(&str, &str) -> bool,
    runs: &mut Runs,
) -> Result<(), Refusal> {
    let named = if sub.is_empty() {
        program.to_string()
    } else {
        format!("{program} {sub}")
    };
    match form {
        Form::Itself => {}
        Form::Command(options) => {
            let starts = command_starts(options, args);
            // Only the runner's own options, before the command, are its options.
            let before = starts.iter().copied().min().unwrap_or(args.len());
            check_options(&named, options, &args[..before], runs)?;
            for at in starts {
                runs.commands.push(command_at(options, args, at, &named));
            }
        }
        Form::After(markers, options, otherwise) => {
            match args.iter().position(|arg| markers.contains(&arg.as_str())) {
                Some(at) => {
                    check_options(&named, options, &args[..at], runs)?;
                    if at + 1 < args.len() {
                        runs.commands
                            .push(command_at(options, args, at + 1, &named));
                    }
                }
                None => {
                    check_options(&named, options, args, runs)?;
                    apply(otherwise, program, sub, args, external, runs)?;
                }
            }
        }
        Form::SubIsCommand => {}
        Form::Unknowable(why) => runs.unknowable = Some(format!("{named} {why}")),
        Form::UnknowableUnless(flags, why) => {
            let off = args.iter().any(|arg| {
                flags
                    .iter()
                    .any(|flag| arg == flag || *arg == format!("{flag}=true"))
            });
            if !off {
                runs.unknowable = Some(format!("{named} {why}"));
            }
        }
        Form::Named(known, why) => {
            let operand = args.iter().find(|arg| !arg.starts_with('-'));
            if let Some(operand) = operand.filter(|operand| !known.contains(&operand.as_str())) {
                runs.unknowable = Some(format!("{named} {operand} {why}"));
            }
        }
        Form::Nested(inner) => {
            let found = analyse(inner, &named, args, external)?;
            runs.commands.extend(found.commands);
            if runs.unknowable.is_none() {
                runs.unknowable = found.unknowable;
            }
        }
        Form::PluginOr(prefix, why) => {
            if !external(prefix, sub) {
                runs.unknowable = Some(format!("{named}: '{sub}' {why}"));
            }
        }
        Form::Shell(why) => return Err(shell_refusal(program, &format!("{named}: {why}"))),
        Form::Options(options, bundled) => {
            if *bundled {
                if let Some(first) = args.first().filter(|first| !first.starts_with('-')) {
                    check_options(&named, options, &[format!("-{first}")], runs)?;
                }
            }
            check_options(&named, options, args, runs)?;
        }
        Form::Find => {
            let mut at = 0;
            while at < args.len() {
                let action = args[at].as_str();
                if !matches!(action, "-exec" | "-execdir" | "-ok" | "-okdir") {
                    at += 1;
                    continue;
                }
                let end = args[at + 1..]
                    .iter()
                    .position(|arg| arg == ";" || arg == "+")
                    .map_or(args.len(), |offset| at + 1 + offset);
                if end > at + 1 {
                    runs.commands.push(Inner::new(
                        args[at + 1..end].to_vec(),
                        format!("'{named} {action}' runs it"),
                    ));
                }
                at = end + 1;
            }
        }
        Form::Ssh => check_ssh(&named, args)?,
    }
    Ok(())
}

/// `-o` keys of ssh that run a command or load code.
const SSH_COMMAND_KEYS: &[&str] = &[
    "proxycommand",
    "localcommand",
    "permitlocalcommand",
    "knownhostscommand",
    "pkcs11provider",
    "securitykeyprovider",
    "include",
];

/// Refuses ssh options that make it run a command or read a configuration file.
fn check_ssh(program: &str, args: &[String]) -> Result<(), Refusal> {
    let refuse = |index: usize, arg: &str, why: &str| {
        Refusal::new(
            Layer::Arguments,
            Error::ArgumentRejected(format!(
                "args[{index}] ({}) {why} for {program}, which toolgate cannot check; remove it",
                super::arguments::quote(arg)
            )),
        )
    };
    for (index, arg) in args.iter().enumerate() {
        if arg == "--" {
            break;
        }
        let option_value = if arg == "-o" {
            args.get(index + 1).map(String::as_str)
        } else {
            arg.strip_prefix("-o").filter(|_| !arg.starts_with("--"))
        };
        if let Some(value) = option_value {
            let key = value
                .split(|c: char| c == '=' || c.is_whitespace())
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            if SSH_COMMAND_KEYS.contains(&key.as_str()) {
                return Err(refuse(index, value, "names a command or code to load"));
            }
        }
        if arg.starts_with('-') && !arg.starts_with("--") {
            let cluster = &arg[1..];
            // Letters after a value-taking option are its value (`-oX`), not options.
            for letter in cluster.chars() {
                if letter == 'F' {
                    return Err(refuse(
                        index,
                        arg,
                        "reads more options from a configuration file",
                    ));
                }
                if letter == 'S' && program.starts_with("scp") {
                    return Err(refuse(
                        index,
                        arg,
                        "names the program used for the connection",
                    ));
                }
                if "bcDEeiIJLlmOoopQRSWw".contains(letter) {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// The inner command starting at `args[at]`; a package's version is dropped from its name.
fn command_at(options: &Options, args: &[String], at: usize, named: &str) -> Inner {
    let mut argv = args[at..].to_vec();
    if options.package {
        argv[0] = without_version(&argv[0]).to_string();
    }
    Inner::new(argv, format!("'{named}' runs it"))
}

/// `cowsay@1.2` → `cowsay`, `@scope/pkg@latest` → `@scope/pkg`.
fn without_version(spec: &str) -> &str {
    match spec.rfind('@') {
        Some(at) if at > 0 => &spec[..at],
        _ => spec,
    }
}

/// Whether `arg` is the option `name`: exactly, with `=value`, as an unambiguous abbreviation of
/// a long option (three letters at least), or for a short option anywhere in a cluster.
fn is_option(arg: &str, name: &str) -> bool {
    if let Some(long) = name.strip_prefix("--") {
        let Some(given) = arg.strip_prefix("--") else {
            return false;
        };
        let given = given.split('=').next().unwrap_or(given);
        given == long || (given.len() >= 3 && long.starts_with(given))
    } else if let Some(letter) = name.strip_prefix('-').filter(|rest| rest.len() == 1) {
        arg.strip_prefix('-')
            .filter(|cluster| !cluster.starts_with('-'))
            .is_some_and(|cluster| cluster.contains(letter))
    } else {
        arg == name
    }
}

/// Refuses shell and environment options in `args` (the runner's own, up to `--`) and notes
/// those that make it unknowable.
fn check_options(
    program: &str,
    options: &Options,
    args: &[String],
    runs: &mut Runs,
) -> Result<(), Refusal> {
    for (index, arg) in args.iter().enumerate() {
        if arg == "--" {
            break;
        }
        if !arg.starts_with('-') {
            continue;
        }
        if let Some(name) = options.shell.iter().find(|name| is_option(arg, name)) {
            return Err(shell_refusal(
                program,
                &format!("its option '{name}' (args[{index}]) runs a command line with a shell"),
            ));
        }
        if let Some(name) = options.environment.iter().find(|name| is_option(arg, name)) {
            return Err(Refusal::new(
                Layer::Arguments,
                Error::ArgumentRejected(format!(
                    "args[{index}] ('{arg}') is {program}'s option '{name}', which sets the environment of the program it runs (a variable such as LD_PRELOAD changes what any program does); remove it"
                )),
            ));
        }
    }
    note_unknowable_options(program, options, args, runs);
    Ok(())
}

/// Notes the options anywhere in `args` that make the runner run programs or configuration
/// toolgate cannot check (`go test -exec`, `cargo --config`).
fn note_unknowable_options(program: &str, options: &Options, args: &[String], runs: &mut Runs) {
    if let Some(name) = options.unknowable.iter().find(|name| {
        args.iter()
            .any(|arg| arg == *name || arg.starts_with(&format!("{name}=")) || is_option(arg, name))
    }) {
        runs.unknowable = Some(format!(
            "{program}'s option '{name}' makes it run programs or configuration toolgate cannot check"
        ));
    }
}

/// The positions of `args` from `from` on where an operand may stand after the options (each
/// unknown option read both with and without a value). Stops at the first operand of each
/// reading; after `--` the next argument is an operand.
fn operand_positions(options: &Options, args: &[String], from: usize) -> Vec<usize> {
    let mut reach = vec![false; args.len() + 2];
    reach[from] = true;
    let mut found = Vec::new();
    for index in from..args.len() {
        if !reach[index] {
            continue;
        }
        let arg = args[index].as_str();
        if arg == "--" {
            if index + 1 < args.len() {
                found.push(index + 1);
            }
            continue;
        }
        // `+nightly` (cargo's toolchain) is an option here.
        let is_option = (arg.starts_with('-') && arg.len() > 1) || arg.starts_with('+');
        if !is_option {
            found.push(index);
            continue;
        }
        let name = arg.split('=').next().unwrap_or(arg);
        if options.flags.contains(&arg) || arg.starts_with('+') {
            reach[index + 1] = true;
        } else if options.valued.contains(&name) {
            reach[index + if arg.contains('=') { 1 } else { 2 }] = true;
        } else if options.valued.iter().any(|valued| {
            valued.len() == 2 && arg.len() > 2 && arg.starts_with(valued) && !arg.starts_with("--")
        }) {
            // A short option with its value attached (`-pcowsay`).
            reach[index + 1] = true;
        } else {
            reach[index + 1] = true;
            if !arg.contains('=') {
                reach[index + 2] = true;
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// Where the command of a [`Form::Command`] may start: the operand after `skip` operands, in
/// every reading of the options.
fn command_starts(options: &Options, args: &[String]) -> Vec<usize> {
    let mut starts = operand_positions(options, args, 0);
    for _ in 0..options.skip {
        let mut next = Vec::new();
        for at in starts {
            for found in operand_positions(options, args, at + 1) {
                if !next.contains(&found) {
                    next.push(found);
                }
            }
        }
        starts = next;
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    fn find(name: &str) -> &'static Runner {
        RUNNERS
            .iter()
            .find(|runner| runner.names.contains(&name))
            .unwrap()
    }

    fn analysed(name: &str, list: &[&str]) -> Result<Runs, Refusal> {
        analyse(find(name), name, &args(list), &|_, word| word == "clippy")
    }

    fn commands(name: &str, list: &[&str]) -> Vec<Vec<String>> {
        let runs =
            analysed(name, list).unwrap_or_else(|refusal| panic!("{list:?}: {}", refusal.error));
        runs.commands.into_iter().map(|inner| inner.argv).collect()
    }

    fn unknowable(name: &str, list: &[&str]) -> bool {
        analysed(name, list).unwrap().unknowable.is_some()
    }

    #[test]
    fn visible_commands_are_found_with_and_without_flags() {
        let git_push = args(&["git", "push"]);
        for (name, list) in [
            ("pyenv", &["exec", "git", "push"][..]),
            ("rbenv", &["exec", "git", "push"]),
            ("asdf", &["exec", "git", "push"]),
            ("mise", &["exec", "--", "git", "push"]),
            ("mise", &["x", "node@20", "--", "git", "push"]),
            ("mise", &["-C", ".", "x", "--", "git", "push"]),
            ("npx", &["git", "push"]),
            ("npx", &["--no-install", "git", "push"]),
            ("npx", &["-y", "git", "push"]),
            ("npx", &["--yes", "--", "git", "push"]),
            ("npx", &["-p", "some-package", "git", "push"]),
            ("npx", &["--package=some-package", "git", "push"]),
            ("npx", &["git@2.1.0", "push"]),
            ("npm", &["exec", "--", "git", "push"]),
            ("npm", &["exec", "git", "push"]),
            ("npm", &["x", "git", "push"]),
            ("npm", &["--prefix", ".", "exec", "--", "git", "push"]),
            ("npm", &["exe", "--", "git", "push"]),
            ("pnpm", &["exec", "git", "push"]),
            ("pnpm", &["dlx", "git", "push"]),
            ("pnpx", &["git", "push"]),
            ("yarn", &["dlx", "git", "push"]),
            ("yarn", &["exec", "git", "push"]),
            ("bunx", &["git", "push"]),
            ("bun", &["x", "git", "push"]),
            ("uvx", &["git", "push"]),
            ("uvx", &["--from", "pkg", "git", "push"]),
            ("uv", &["run", "git", "push"]),
            ("uv", &["run", "--with", "x", "--", "git", "push"]),
            ("uv", &["tool", "run", "git", "push"]),
            ("pipx", &["run", "git", "push"]),
            ("pipx", &["run", "--spec", "x", "git", "push"]),
            ("poetry", &["run", "git", "push"]),
            ("poetry", &["-C", ".", "run", "git", "push"]),
            ("bundle", &["exec", "git", "push"]),
            ("conda", &["run", "-n", "base", "git", "push"]),
            ("rustup", &["run", "stable", "git", "push"]),
            ("volta", &["run", "--node", "20", "git", "push"]),
            ("fnm", &["exec", "--using=20", "git", "push"]),
            ("pixi", &["exec", "git", "push"]),
            ("nix", &["develop", "-c", "git", "push"]),
            ("corepack", &["npx", "git", "push"]),
            ("xcrun", &["git", "push"]),
        ] {
            let found = commands(name, list);
            let expected = if name == "corepack" {
                args(&["npx", "git", "push"])
            } else {
                git_push.clone()
            };
            assert!(found.contains(&expected), "{name} {list:?}: {found:?}");
        }
        // An unknown option is read with and without a value: both readings are judged.
        let found = commands("npx", &["--new-flag", "git", "push"]);
        assert!(found.contains(&git_push), "{found:?}");
        assert!(found.contains(&args(&["push"])), "{found:?}");
    }

    #[test]
    fn shell_and_environment_forms_are_refused() {
        for (name, list) in [
            ("npx", &["-c", "git push"][..]),
            ("npx", &["--call", "git push"]),
            ("npx", &["--call=git push"]),
            ("npx", &["-yc", "git push"]),
            ("npm", &["exec", "-c", "git push"]),
            ("npm", &["exec", "--call", "git push"]),
            ("pnpm", &["dlx", "-c", "git push"]),
            ("mise", &["exec", "-c", "git push"]),
            ("mise", &["exec", "node@20"]),
            ("bun", &["exec", "git push"]),
            ("npm", &["explore", "x", "--", "git push"]),
            ("poetry", &["shell"]),
            ("direnv", &["exec", ".", "git", "push"]),
            ("nix-shell", &["--run", "git push"]),
        ] {
            let refusal = analysed(name, list).expect_err(&format!("{name} {list:?}"));
            assert_eq!(refusal.error.code(), "SHELL_NOT_ALLOWED", "{name} {list:?}");
        }
        for (name, list) in [
            ("uv", &["run", "--env-file", ".env", "git", "push"][..]),
            ("volta", &["run", "--env", "A=B", "git"]),
        ] {
            let refusal = analysed(name, list).expect_err(&format!("{name} {list:?}"));
            assert_eq!(refusal.error.code(), "ARGUMENT_REJECTED", "{name} {list:?}");
        }
    }

    #[test]
    fn recipes_and_the_projects_own_programs_cannot_be_seen() {
        for (name, list) in [
            ("make", &[][..]),
            ("make", &["deploy"]),
            ("make", &["-n"]),
            ("gmake", &["-C", "x"]),
            ("just", &["push"]),
            ("task", &["build"]),
            ("cargo", &["run"]),
            ("cargo", &["r", "--release"]),
            ("cargo", &["+nightly", "run"]),
            ("cargo", &["my-alias"]),
            ("cargo", &["--config", "alias.b='run'", "b"]),
            ("go", &["run", "."]),
            ("go", &["generate", "./..."]),
            ("go", &["test", "-exec", "./x", "./..."]),
            ("go", &["build", "-toolexec=./x"]),
            ("go", &["tool", "mytool"]),
            ("npm", &["run", "deploy"]),
            ("npm", &["run-script", "deploy"]),
            ("npm", &["runScript", "deploy"]),
            ("npm", &["test"]),
            ("npm", &["start"]),
            ("npm", &["install"]),
            ("npm", &["i", "left-pad"]),
            ("npm", &["init", "vite"]),
            ("pnpm", &["run", "x"]),
            ("pnpm", &["deploy-it"]),
            ("yarn", &["run", "x"]),
            ("yarn", &["x"]),
            ("bun", &["run", "x"]),
            ("bun", &["x.ts"]),
            ("mise", &["run", "x"]),
            ("mise", &["build"]),
            ("pdm", &["run", "x"]),
            ("deno", &["task", "x"]),
            ("nix", &["run", "."]),
            ("rake", &[]),
            ("gradlew", &["build"]),
        ] {
            assert!(unknowable(name, list), "{name} {list:?}");
        }
        for (name, list) in [
            ("make", &["--version"][..]),
            ("npm", &["ls"]),
            ("npm", &["install", "--ignore-scripts"]),
            ("npm", &["init", "-y"]),
            ("npm", &["view", "x"]),
            ("pnpm", &["ls"]),
            ("cargo", &["build"]),
            ("cargo", &["clippy"]),
            ("go", &["build", "./..."]),
            ("go", &["tool", "cover"]),
            ("pyenv", &["versions"]),
            ("mise", &["ls"]),
            ("uv", &["sync"]),
        ] {
            let runs = analysed(name, list).unwrap();
            assert!(runs.is_nothing(), "{name} {list:?}: {runs:?}");
        }
    }

    #[test]
    fn options_that_run_a_program_are_judged_or_refused() {
        assert_eq!(
            commands("find", &[".", "-name", "x", "-exec", "git", "push", ";"]),
            [args(&["git", "push"])]
        );
        assert_eq!(
            commands(
                "find",
                &[".", "-execdir", "git", "push", "{}", "+", "-ok", "rm", "{}", ";"]
            ),
            [args(&["git", "push", "{}"]), args(&["rm", "{}"])]
        );
        assert!(commands("find", &[".", "-name", "x", "-delete"]).is_empty());
        for (name, list) in [
            ("rsync", &["-e", "sh -c x", "a", "b"][..]),
            ("rsync", &["-avze", "x", "a", "b"]),
            ("rsync", &["--rsh=x", "a", "b"]),
            ("tar", &["--to-command=git push", "-xf", "a.tar"]),
            ("tar", &["-I", "./x", "-xf", "a.tar"]),
            ("tar", &["--use-compress-program=./x", "-xf", "a.tar"]),
            ("tar", &["xIf", "./x", "a.tar"]),
            (
                "tar",
                &["--checkpoint-action=exec=git push", "-cf", "a.tar", "."],
            ),
            ("sort", &["--compress-program=./x", "f"]),
            ("zip", &["-TT", "./x", "a.zip", "f"]),
        ] {
            let refusal = analysed(name, list).expect_err(&format!("{name} {list:?}"));
            assert_eq!(refusal.error.code(), "SHELL_NOT_ALLOWED", "{name} {list:?}");
        }
        for (name, list) in [
            ("ssh", &["-o", "ProxyCommand=git push", "host"][..]),
            ("ssh", &["-oProxyCommand git push", "host"]),
            ("ssh", &["-o", "proxycommand=x", "host"]),
            (
                "ssh",
                &[
                    "-o",
                    "LocalCommand=x",
                    "-o",
                    "PermitLocalCommand=yes",
                    "host",
                ],
            ),
            ("ssh", &["-o", "PKCS11Provider=./lib.so", "host"]),
            ("ssh", &["-F", "./config", "host"]),
            ("ssh", &["-vF./config", "host"]),
            ("scp", &["-S", "./x", "a", "host:b"]),
            ("sftp", &["-o", "ProxyCommand=x", "host"]),
        ] {
            let refusal = analysed(name, list).expect_err(&format!("{name} {list:?}"));
            assert_eq!(refusal.error.code(), "ARGUMENT_REJECTED", "{name} {list:?}");
        }
        for (name, list) in [
            ("tar", &["-xzf", "a.tar.gz"][..]),
            ("tar", &["xzf", "a.tar.gz"]),
            ("rsync", &["-avz", "--exclude", "x", "a", "b"]),
            ("sort", &["-u", "f"]),
            (
                "ssh",
                &["-o", "StrictHostKeyChecking=no", "-p", "22", "host", "ls"],
            ),
            ("ssh", &["-i", "key-F", "host"]),
        ] {
            assert!(
                analysed(name, list).unwrap().is_nothing(),
                "{name} {list:?}"
            );
        }
    }

    #[test]
    fn package_versions_and_abbreviations() {
        assert_eq!(without_version("cowsay@1.2"), "cowsay");
        assert_eq!(without_version("@scope/pkg@latest"), "@scope/pkg");
        assert_eq!(without_version("@scope/pkg"), "@scope/pkg");
        assert!(is_option("--cal=x", "--call"));
        assert!(!is_option("--ca", "--call"));
        assert!(is_option("-qc", "-c"));
        assert!(!is_option("--c", "-c"));
    }
}
