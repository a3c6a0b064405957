//! The engine `cli_execute` and the shell toolset share: program resolution, the shell and
//! trampoline check, argument text checks, path confinement, the child's environment and the
//! limits. Everything here is built once per tool.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::arguments::check_argument_text;
use super::environment::{child_environment, lookup};
use super::indirection::Indirections;
use super::paths::Confinement;
use super::program::{identity, Program};
use super::programs::{self, Families};
use super::runs::Runs;
use super::trampoline::{
    is_dynamic_loader, refusal_reason, refusal_reason_as, RefusedFiles, LOADER, PROGRAM_DIRS,
};
use super::{Layer, Refusal};
use crate::error::{Error, Result};
use crate::exec::{self, ExecRequest, DEFAULT_MAX_OUTPUT_BYTES};
use crate::limits::{DEFAULT_COMMAND_TIMEOUT, MAX_ARGUMENTS, MAX_ARGUMENT_BYTES};
use crate::sandbox::Sandbox;

/// The shared policy and limits of one tool.
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    confinement: Confinement,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    max_output_bytes: usize,
    /// The child's PATH directories, then the usual program directories.
    program_dirs: Vec<PathBuf>,
    /// Shells and trampolines in `program_dirs`, by file.
    refused: RefusedFiles,
    /// Programs whose own argument handling is checked, by file.
    families: Families,
    /// git and the runners, by file: programs that run other programs by their own means.
    indirections: Indirections,
    /// The kernel sandbox every call runs under; `None` only when it was turned off.
    sandbox: Option<Arc<Sandbox>>,
}

impl Engine {
    /// Builds the engine for `work_dir`. `read_roots` are absolute or relative to `work_dir`;
    /// `timeout` is in seconds.
    pub fn new(
        work_dir: &Path,
        read_roots: &[PathBuf],
        env_passthrough: &[String],
        timeout: Option<f64>,
        max_output_bytes: Option<u64>,
    ) -> Result<Self> {
        let confinement = Confinement::new(work_dir, read_roots)?;
        let env = child_environment(env_passthrough)?;
        let timeout = match timeout {
            None => DEFAULT_COMMAND_TIMEOUT,
            Some(seconds) => Duration::try_from_secs_f64(seconds)
                .ok()
                .filter(|duration| !duration.is_zero() && *duration <= crate::limits::MAX_TIMEOUT)
                .ok_or_else(|| {
                    Error::ConfigInvalid(format!(
                        "timeout is {seconds}; give a number of seconds greater than 0 and at most {}",
                        crate::limits::MAX_TIMEOUT.as_secs()
                    ))
                })?,
        };
        let max_output_bytes = match max_output_bytes {
            None => DEFAULT_MAX_OUTPUT_BYTES,
            Some(0) => {
                return Err(Error::ConfigInvalid(
                    "max_output_bytes is 0; give a number of bytes greater than 0".into(),
                ))
            }
            Some(bytes) => usize::try_from(bytes).unwrap_or(usize::MAX),
        };
        let mut program_dirs: Vec<PathBuf> = Vec::new();
        let search_path = lookup(&env, "PATH").cloned().unwrap_or_default();
        for dir in std::env::split_paths(&search_path)
            .filter(|dir| dir.is_absolute())
            .chain(PROGRAM_DIRS.iter().map(PathBuf::from))
        {
            if !program_dirs.contains(&dir) {
                program_dirs.push(dir);
            }
        }
        let refused = RefusedFiles::scan(program_dirs.iter().map(PathBuf::as_path));
        let families = Families::find(program_dirs.iter().map(PathBuf::as_path));
        let indirections = Indirections::find(&program_dirs);
        Ok(Self {
            confinement,
            env,
            timeout,
            max_output_bytes,
            program_dirs,
            refused,
            families,
            indirections,
            sandbox: None,
        })
    }

    /// Runs every call under `sandbox` (`None`: unconfined, as `sandbox: false` asks).
    pub fn set_sandbox(&mut self, sandbox: Option<Arc<Sandbox>>) {
        self.sandbox = sandbox;
    }

    /// The sandbox calls run under.
    pub fn sandbox(&self) -> Option<&Arc<Sandbox>> {
        self.sandbox.as_ref()
    }

    /// The child's PATH directories (absolute ones), then the usual program directories.
    pub fn program_dirs(&self) -> &[PathBuf] {
        &self.program_dirs
    }

    /// The canonical work directory (the child's cwd).
    pub fn work_dir(&self) -> &Path {
        self.confinement.work_dir()
    }

    /// The PATH the child gets, which is also where programs are looked up.
    pub fn search_path(&self) -> String {
        lookup(&self.env, "PATH")
            .map(|path| path.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Finds `name` the way the child's PATH would: a bare name on PATH, a name with a `/`
    /// relative to the work directory.
    pub fn resolve_program(&self, name: &str) -> Result<Program> {
        let path = exec::resolve_program(name.as_ref(), self.work_dir(), &self.env)?;
        self.resolve_program_at(&path).map_err(|err| match err {
            Error::BinaryNotFound { searched, .. } => Error::BinaryNotFound {
                program: name.to_string(),
                searched,
            },
            other => other,
        })
    }

    /// The program started from `path` (already found): its real file, identity and kind.
    pub fn resolve_program_at(&self, path: &Path) -> Result<Program> {
        let real = std::fs::canonicalize(path).map_err(|err| Error::BinaryNotFound {
            program: path.display().to_string(),
            searched: format!(" ('{}' cannot be resolved: {err})", path.display()),
        })?;
        Ok(Program {
            id: identity(&real),
            loader: is_dynamic_loader(&real),
            path: path.to_path_buf(),
            real,
        })
    }

    /// Refuses argument text (`$(`, backticks, CR, LF, NUL, `file:` URLs, git's command
    /// transports), then what `program` would make of its arguments (curl's URL globs, option
    /// files), then arguments that could name a file outside the work directory and the read
    /// roots.
    pub fn check_arguments(
        &self,
        program: &Program,
        args: &[String],
    ) -> std::result::Result<(), Refusal> {
        check_argument_sizes(args).map_err(|error| Refusal::new(Layer::Arguments, error))?;
        for (index, arg) in args.iter().enumerate() {
            check_argument_text(index, arg)
                .map_err(|error| Refusal::new(Layer::Arguments, error))?;
        }
        if let Some(family) = self.families.of(program) {
            programs::check(family, args).map_err(|error| Refusal::new(Layer::Arguments, error))?;
        }
        for (index, arg) in args.iter().enumerate() {
            self.confinement
                .check_argument(index, arg)
                .map_err(|error| Refusal::new(Layer::Paths, error))?;
        }
        Ok(())
    }

    /// What `text args…` runs besides its own program (`program` as found, when it was):
    /// the commands it visibly runs and whether it may run something toolgate cannot see. A
    /// refusal for forms that hand a command line to a shell or name programs toolgate cannot
    /// check (see [`super::indirection`]).
    pub fn runs(
        &self,
        text: &str,
        program: Option<&Program>,
        args: &[String],
    ) -> std::result::Result<Runs, Refusal> {
        self.indirections.runs(text, program, args)
    }

    /// The argument checks of a command another command runs: those of
    /// [`check_arguments`](Self::check_arguments) when its program was found, else the text and
    /// path checks alone. Errors say which command they concern (`within`).
    pub fn check_inner_arguments(
        &self,
        program: Option<&Program>,
        args: &[String],
        within: &str,
    ) -> std::result::Result<(), Refusal> {
        let checked = match program {
            Some(program) => self.check_arguments(program, args),
            None => check_argument_sizes(args)
                .map_err(|error| Refusal::new(Layer::Arguments, error))
                .and_then(|()| {
                    args.iter().enumerate().try_for_each(|(index, arg)| {
                        check_argument_text(index, arg)
                            .map_err(|error| Refusal::new(Layer::Arguments, error))
                    })
                })
                .and_then(|()| {
                    args.iter().enumerate().try_for_each(|(index, arg)| {
                        self.confinement
                            .check_argument(index, arg)
                            .map_err(|error| Refusal::new(Layer::Paths, error))
                    })
                }),
        };
        checked.map_err(|refusal| Refusal::new(refusal.layer, in_command(refusal.error, within)))
    }

    /// The request for an already checked command: no shell, cwd = the work directory, a
    /// private, empty HOME/TMPDIR for the call, the reduced environment, the timeout, the
    /// output cap and the tool's kernel sandbox.
    pub fn request(&self, program: &Path, args: &[String], stdin: Option<Vec<u8>>) -> ExecRequest {
        let mut request = ExecRequest::new(program.as_os_str(), self.work_dir())
            .args(args)
            .timeout(self.timeout)
            .max_output_bytes(self.max_output_bytes)
            .private_dirs();
        request.env = self.env.clone();
        request.stdin = stdin;
        request.sandbox = self.sandbox.clone();
        request
    }
}

/// Programs found by name, remembered like a shell's command hash: a name is looked up on PATH
/// once, and again only when the file it led to is gone or is no longer the same file (checked
/// with one `stat` per use). Names with a `/` are not remembered.
#[derive(Debug, Default)]
pub(crate) struct ProgramCache {
    found: Mutex<HashMap<String, Program>>,
}

impl ProgramCache {
    pub fn resolve(&self, engine: &Engine, name: &str) -> Result<Program> {
        if name.contains('/') {
            return engine.resolve_program(name);
        }
        let remembered = self
            .found
            .lock()
            .ok()
            .and_then(|found| found.get(name).cloned());
        if let Some(program) = remembered {
            if program.id.is_some() && identity(&program.path) == program.id {
                return Ok(program);
            }
        }
        let program = engine.resolve_program(name)?;
        if let Ok(mut found) = self.found.lock() {
            found.insert(name.to_string(), program.clone());
        }
        Ok(program)
    }
}

impl Engine {
    /// Refuses a shell or trampoline: by the name asked for, by the real basename of the file it
    /// resolves to, by that file being one of the refused programs under another name (a hard
    /// link), and by the file being a dynamic loader. A single-binary coreutils run under the
    /// name of one of its ordinary programs is that program.
    pub fn check_not_trampoline(&self, asked: &str, program: Option<&Program>) -> Result<()> {
        let refuse = |reason: String| {
            Err(Error::ShellNotAllowed {
                binary: asked.to_string(),
                reason,
            })
        };
        if let Some(reason) = refusal_reason(asked) {
            return refuse(reason.to_string());
        }
        let Some(program) = program else {
            return Ok(());
        };
        let asked_base = basename(&program.path);
        let real = program.real.to_string_lossy();
        if let Some(reason) = refusal_reason_as(&basename(&program.real), &asked_base) {
            return refuse(format!("it resolves to '{real}'; {reason}"));
        }
        if let Some((name, path)) = program.id.and_then(|id| self.refused.get(id)) {
            if let Some(reason) = refusal_reason_as(name, &asked_base) {
                return refuse(format!(
                    "it is the same file as '{}'; {reason}",
                    path.display()
                ));
            }
        }
        if program.loader {
            return refuse(format!("it resolves to '{real}'; {LOADER}"));
        }
        Ok(())
    }
}

/// `error` with a note of the command it concerns: `(in 'git push', which 'npx git push'
/// runs)`. The code stays the same.
pub(crate) fn in_command(error: Error, within: &str) -> Error {
    let note = |message: String| format!("{message} (in {within})");
    match error {
        Error::ArgumentRejected(message) => Error::ArgumentRejected(note(message)),
        Error::InvalidInput(message) => Error::InvalidInput(note(message)),
        Error::PathOutsideRoot { path, root, detail } => Error::PathOutsideRoot {
            path,
            root,
            detail: format!("{detail} (in {within})"),
        },
        Error::ShellNotAllowed { binary, reason } => Error::ShellNotAllowed {
            binary,
            reason: note(reason),
        },
        other => other,
    }
}

/// The last component of `path`, as text.
fn basename(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}

/// Refuses more than [`MAX_ARGUMENTS`] arguments or one longer than [`MAX_ARGUMENT_BYTES`]:
/// `execve` would fail with E2BIG, and the checks after this one walk every argument.
fn check_argument_sizes(args: &[String]) -> Result<()> {
    if args.len() > MAX_ARGUMENTS {
        return Err(Error::InvalidInput(format!(
            "{} arguments given; the limit is {MAX_ARGUMENTS}. Pass long lists in a file (many programs read one with @file or --files-from) or on stdin",
            args.len()
        )));
    }
    if let Some((index, arg)) = args
        .iter()
        .enumerate()
        .find(|(_, arg)| arg.len() > MAX_ARGUMENT_BYTES)
    {
        return Err(Error::InvalidInput(format!(
            "args[{index}] is {} bytes long; the limit for one argument is {MAX_ARGUMENT_BYTES} bytes. Put long data in a file or on stdin",
            arg.len()
        )));
    }
    Ok(())
}
