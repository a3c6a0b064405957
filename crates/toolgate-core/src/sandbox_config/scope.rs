//! A sandbox setting resolved against its work directory and the level above it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::network::ScopeNetwork;
use super::protect::{git_guards, protect_patterns, GuardReport, Guards};
use super::{SandboxFields, SandboxModeName};
use crate::error::{Error, Result};
use crate::sandbox::version_managers::version_manager_parts;
use crate::sandbox::{Sandbox, SandboxLimits, SandboxMode, SandboxPolicy};

/// How many prepared sandboxes [`prepare_cached`] keeps.
const CACHED_SANDBOXES: usize = 16;

/// A sandbox with every setting decided: what a tool's processes may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxScope {
    pub mode: SandboxModeName,
    pub network: ScopeNetwork,
    /// Extra read/execute roots, canonical.
    pub read: Vec<PathBuf>,
    /// Extra writable roots, canonical.
    pub write: Vec<PathBuf>,
    /// The work directory, canonical: writable unless `readonly`.
    pub work_dir: PathBuf,
    pub readonly: bool,
    /// Each call's limits (`None`: the default).
    pub limits: SandboxLimits,
    /// Protected and hidden paths: the work directory's git configuration, what `protect`
    /// patterns match, and (for a worker) the files of its graph and its blocked path rules.
    pub guards: Guards,
}

/// Where a narrowing setting was written and what to do instead of widening, for the error.
#[derive(Debug, Clone, Copy)]
pub struct Widening<'a> {
    /// The setting being applied, as the user wrote it: `/w/a.worker: toolsets.shell.sandbox`.
    pub setting: &'a str,
    /// Whose sandbox it narrows: `the worker's sandbox`, `the sandbox of its caller '/w/top.worker'`.
    pub above: &'a str,
    /// Who may only narrow: `a toolset`, `a called worker`.
    pub narrower: &'a str,
    /// What to do instead: `widen the worker-level \`sandbox\` instead`.
    pub fix: &'a str,
}

/// A tool's prepared sandbox: `None` when its mode is `off`, with the one best-effort warning
/// of this process when this preparation was the first to have one.
#[derive(Debug, Clone)]
pub struct ToolSandbox {
    pub scope: SandboxScope,
    pub sandbox: Option<Arc<Sandbox>>,
    pub warning: Option<String>,
}

impl SandboxScope {
    /// A scope on its own (a TypeScript toolset, `exec`, the top worker): the defaults
    /// (`enforce`, no network, no roots) overridden by `fields`. Relative roots resolve against
    /// `base`; `~/` is this user's home. `setting` names the option in errors. Every root must
    /// exist (`CONFIG_INVALID`).
    pub fn new(
        work_dir: &Path,
        readonly: bool,
        fields: &SandboxFields,
        base: &Path,
        setting: &str,
    ) -> Result<Self> {
        let work_dir = std::fs::canonicalize(work_dir).map_err(|err| {
            Error::ConfigInvalid(format!(
                "{setting}: the work directory '{}' cannot be used ({err}); give an existing directory",
                work_dir.display()
            ))
        })?;
        // The file tools and the worker's other toolsets may write here, whatever this
        // scope's processes may: no grant is taken through a symlink in it.
        crate::sandbox::paths::note_writable(std::slice::from_ref(&work_dir));
        let mut guards = git_guards(&work_dir);
        guards.extend(&protect_patterns(
            &work_dir,
            fields.protect.as_deref().unwrap_or_default(),
            &format!("{setting}: protect"),
        )?);
        Ok(SandboxScope {
            mode: fields.mode.unwrap_or(SandboxModeName::Enforce),
            network: ScopeNetwork::new(fields.network.as_ref()),
            read: resolve_roots(fields.read.as_deref(), base, setting, "read")?,
            write: resolve_roots(fields.write.as_deref(), base, setting, "write")?,
            work_dir,
            readonly,
            limits: fields
                .limits
                .map(|limits| limits.to_limits())
                .unwrap_or_default(),
            guards,
        })
    }

    /// This scope with the paths of `guards` protected or hidden too.
    pub fn with_guards(&self, guards: &Guards) -> Self {
        let mut guarded = self.clone();
        guarded.guards.extend(guards);
        guarded
    }

    /// Every protected and hidden path of this scope with its reason, and whether the kernel
    /// acts on it here (see [`Guards::report`]).
    pub fn guard_report(&self) -> Vec<GuardReport> {
        self.guards
            .report(|path| self.can_write(path), |path| self.can_read(path))
    }

    /// The sandbox of a tool built on its own (a TypeScript toolset): its `sandbox` option
    /// (relative roots against the work directory) and `readOnly`. `CONFIG_INVALID` for
    /// `readOnly` without a sandbox (only the kernel can keep a program from writing).
    pub fn standalone(
        work_dir: &Path,
        read_only: bool,
        sandbox: Option<&SandboxFields>,
    ) -> Result<Self> {
        let fields = sandbox.cloned().unwrap_or_default();
        let scope = SandboxScope::new(work_dir, read_only, &fields, work_dir, "option 'sandbox'")?;
        if read_only && scope.policy().is_none() {
            return Err(Error::ConfigInvalid(
                "options 'readOnly: true' and 'sandbox: false' contradict each other: only the kernel sandbox can keep programs from writing; remove one".into(),
            ));
        }
        Ok(scope)
    }

    /// This scope narrowed by `fields`: an absent key keeps this scope's value; a present one
    /// may only be stricter (mode), off (network), or name roots this scope already reaches
    /// (a read root inside the work directory or a read or write root, a write root inside a
    /// writable one). Anything wider is `CONFIG_INVALID`, in the words of `widening`.
    pub fn narrow(&self, fields: &SandboxFields, base: &Path, widening: &Widening) -> Result<Self> {
        let refuse = |what: String| {
            Error::ConfigInvalid(format!(
                "{}: {what}, which widens {}; {} may only narrow it (network off, fewer roots, a stricter mode): {}",
                widening.setting, widening.above, widening.narrower, widening.fix
            ))
        };
        // The called worker's own network joins the access above it (never the toolset
        // rule of `with_fields`, which may widen inside one file).
        let keys = SandboxFields {
            network: None,
            ..fields.clone()
        };
        let mut narrowed = self.with_fields(&keys, base, widening.setting)?;
        narrowed.network = self
            .network
            .for_called(fields.network.as_ref())
            .map_err(refuse)?;
        narrowed.check_within(self, widening)?;
        Ok(narrowed)
    }

    /// This scope with the keys `fields` writes replacing its own, unchecked: a toolset's
    /// `sandbox` inside its own worker file, which is the author's choice for that toolset and
    /// may widen the worker's (issue 22 §8). Roots resolve against `base`; `setting` names the
    /// key in errors (a root that does not exist is `CONFIG_INVALID`). `network` joins the
    /// worker's own setting ([`ScopeNetwork::for_toolset`]) and never reaches past what the
    /// worker's callers leave it (`CONFIG_INVALID`).
    pub fn with_fields(&self, fields: &SandboxFields, base: &Path, setting: &str) -> Result<Self> {
        let mut adjusted = self.clone();
        if let Some(mode) = fields.mode {
            adjusted.mode = mode;
        }
        adjusted.network = self
            .network
            .for_toolset(fields.network.as_ref())
            .map_err(|what| {
                Error::ConfigInvalid(format!(
                    "{setting}: {what}, which the worker's callers do not allow; a toolset may widen its own worker's network, but a called worker and its toolsets only narrow their caller's: widen the calling worker's `sandbox.network` instead"
                ))
            })?;
        if let Some(read) = &fields.read {
            adjusted.read = resolve_roots(Some(read), base, setting, "read")?;
        }
        if let Some(write) = &fields.write {
            adjusted.write = resolve_roots(Some(write), base, setting, "write")?;
        }
        if let Some(limits) = &fields.limits {
            // Only a key written counts (an absent one keeps the value above).
            adjusted.limits = overlay_limits(&self.limits, &limits.to_limits());
        }
        if let Some(patterns) = &fields.protect {
            // More protection only ever narrows, so a toolset's patterns join the worker's.
            let setting = format!("{setting}: protect");
            adjusted
                .guards
                .extend(&protect_patterns(&self.work_dir, patterns, &setting)?);
        }
        Ok(adjusted)
    }

    /// What this scope reaches that `outer` does not, in words, or `None` when it is inside
    /// `outer`: a less strict mode, the network where `outer` has none, a read root `outer`
    /// cannot read, a write root (or a writable work directory) `outer` cannot write, a work
    /// directory outside `outer`'s, a limit higher than `outer`'s.
    pub fn widening_over(&self, outer: &SandboxScope) -> Option<String> {
        if self.mode.strictness() < outer.mode.strictness() {
            return Some(format!(
                "mode is '{}' where it is '{}'",
                self.mode.as_str(),
                outer.mode.as_str()
            ));
        }
        if let Some(what) = self.network.widening_over(&outer.network) {
            return Some(what);
        }
        if let Some(root) = self.read.iter().find(|root| !outer.can_read(root)) {
            return Some(format!(
                "read root '{}' is not readable there",
                root.display()
            ));
        }
        if let Some(root) = self.write.iter().find(|root| !outer.can_write(root)) {
            return Some(format!(
                "write root '{}' is not writable there",
                root.display()
            ));
        }
        if !outer.can_read(&self.work_dir) {
            return Some(format!(
                "the work directory '{}' is outside it",
                self.work_dir.display()
            ));
        }
        for ((name, value), (_, above)) in self
            .limits
            .effective()
            .into_iter()
            .zip(outer.limits.effective())
        {
            if let Some(above) = above {
                match value {
                    Some(value) if value <= above => {}
                    Some(value) => {
                        return Some(format!("limits.{name} is {value} where it is {above}"))
                    }
                    None => return Some(format!("limits.{name} is unlimited where it is {above}")),
                }
            }
        }
        if !self.readonly && !outer.can_write(&self.work_dir) {
            return Some(format!(
                "the work directory '{}' is writable where it is read-only",
                self.work_dir.display()
            ));
        }
        None
    }

    /// `CONFIG_INVALID`, in the words of `widening`, when this scope reaches anything `outer`
    /// does not ([`widening_over`](Self::widening_over)).
    pub fn check_within(&self, outer: &SandboxScope, widening: &Widening) -> Result<()> {
        match self.widening_over(outer) {
            None => Ok(()),
            Some(what) => Err(Error::ConfigInvalid(format!(
                "{}: {what}, which widens {}; {} may only narrow it (network off, fewer roots, a stricter mode): {}",
                widening.setting, widening.above, widening.narrower, widening.fix
            ))),
        }
    }

    /// This scope for a called worker whose work directory is `work_dir` (the caller's, or a
    /// directory inside it) and which is read-only when it or its caller is.
    pub fn within(&self, work_dir: &Path, readonly: bool) -> Result<Self> {
        let work_dir = std::fs::canonicalize(work_dir).map_err(|err| {
            Error::ConfigInvalid(format!(
                "the work directory '{}' cannot be used ({err})",
                work_dir.display()
            ))
        })?;
        if !work_dir.starts_with(&self.work_dir) {
            return Err(Error::ConfigInvalid(format!(
                "the work directory '{}' is outside its caller's '{}'; a called worker may only narrow its caller's sandbox",
                work_dir.display(),
                self.work_dir.display()
            )));
        }
        let mut guards = self.guards.clone();
        guards.extend(&git_guards(&work_dir));
        Ok(SandboxScope {
            work_dir,
            readonly: self.readonly || readonly,
            guards,
            ..self.clone()
        })
    }

    /// This scope with `roots` (resolved against `base`) readable too: `cli_execute`'s
    /// `read_roots`, which path arguments may name, so the program can read what it was
    /// allowed to be given. With `within`, each root must already be readable in that scope
    /// (a worker's), else `CONFIG_INVALID` in the words of the widening.
    pub fn with_read_roots(
        &self,
        roots: &[PathBuf],
        base: &Path,
        within: Option<(&SandboxScope, &Widening)>,
    ) -> Result<Self> {
        if roots.is_empty() {
            return Ok(self.clone());
        }
        let setting = within.map_or("read_roots", |(_, widening)| widening.setting);
        let roots = resolve_roots(Some(roots), base, setting, "read_roots")?;
        if let Some((outer, widening)) = within {
            if let Some(outside) = roots.iter().find(|root| !outer.can_read(root)) {
                return Err(Error::ConfigInvalid(format!(
                    "{}: read_roots entry '{}' is not readable in {}, so programs could not read what they are given: {}",
                    widening.setting,
                    outside.display(),
                    widening.above,
                    widening.fix
                )));
            }
        }
        let mut widened = self.clone();
        for root in roots {
            if !widened.can_read(&root) {
                widened.read.push(root);
            }
        }
        Ok(widened)
    }

    /// The scope of an executable tool's `description` run at discovery, before anyone was
    /// asked: the same mode, no network, nothing writable but its private directory.
    pub fn for_discovery(&self) -> Self {
        let mut read = self.read.clone();
        for root in &self.write {
            if !read.contains(root) {
                read.push(root.clone());
            }
        }
        SandboxScope {
            network: ScopeNetwork::off(),
            read,
            write: Vec::new(),
            readonly: true,
            ..self.clone()
        }
    }

    /// Whether processes under this scope can read `path` (canonical).
    pub fn can_read(&self, path: &Path) -> bool {
        path.starts_with(&self.work_dir)
            || self
                .read
                .iter()
                .chain(&self.write)
                .any(|root| path.starts_with(root))
    }

    /// Whether processes under this scope can write `path` (canonical).
    pub fn can_write(&self, path: &Path) -> bool {
        (!self.readonly && path.starts_with(&self.work_dir))
            || self.write.iter().any(|root| path.starts_with(root))
    }

    /// The kernel policy of this scope, or `None` when its mode is `off`. Besides the scope's
    /// own roots, the parts of the [version managers](crate::sandbox::version_managers) on this
    /// process's `PATH` that their shims use are readable: the shims are how `python3` or
    /// `ruby` are found there.
    pub fn policy(&self) -> Option<SandboxPolicy> {
        let mode = match self.mode {
            SandboxModeName::Enforce => SandboxMode::Enforce,
            SandboxModeName::BestEffort => SandboxMode::BestEffort,
            SandboxModeName::Off => return None,
        };
        let mut read = self.read.clone();
        let search_path = std::env::var_os("PATH").unwrap_or_default();
        for part in version_manager_parts(&search_path) {
            if !self.can_read(&part) {
                read.push(part);
            }
        }
        let (protect, hide) = self
            .guards
            .for_policy(|path| self.can_write(path), |path| self.can_read(path));
        Some(SandboxPolicy {
            mode,
            network: self.network.mode(),
            hosts: self.network.host_policy(),
            read,
            write: self.write.clone(),
            work_dir: self.work_dir.clone(),
            readonly: self.readonly,
            protect,
            hide,
            limits: self.limits,
        })
    }

    /// Prepares the sandbox of one tool (once; its calls share it). `SANDBOX_UNAVAILABLE`
    /// under `enforce` where the kernel or the launcher is missing.
    pub fn build(&self) -> Result<ToolSandbox> {
        if self.mode == SandboxModeName::Off && self.network.host_policy().is_some() {
            return Err(Error::ConfigInvalid(format!(
                "sandbox: network is {}, but the mode is 'off': without the sandbox nothing keeps programs to those hosts; turn the sandbox on (mode 'enforce' or 'best-effort'), or give network: true",
                self.network.describe()
            )));
        }
        let sandbox = self
            .policy()
            .map(Sandbox::prepare)
            .transpose()?
            .map(Arc::new);
        let warning = sandbox.as_ref().and_then(|sandbox| sandbox.warning_once());
        Ok(ToolSandbox {
            scope: self.clone(),
            sandbox,
            warning,
        })
    }
}

/// `outer`'s limits with the keys `inner` sets replacing them (whether that widens is
/// [`SandboxScope::widening_over`]'s to say).
fn overlay_limits(outer: &SandboxLimits, inner: &SandboxLimits) -> SandboxLimits {
    SandboxLimits {
        processes: inner.processes.or(outer.processes),
        memory_mb: inner.memory_mb.or(outer.memory_mb),
        tmp_mb: inner.tmp_mb.or(outer.tmp_mb),
        cpu_seconds: inner.cpu_seconds.or(outer.cpu_seconds),
        file_size_mb: inner.file_size_mb.or(outer.file_size_mb),
    }
}

/// Prepares `scope`, reusing one prepared for an equal scope before (`exec` is called per
/// process, and a preparation probes paths and compiles filters). The scope's roots are
/// canonical, so a symlink that now leads elsewhere makes a different scope.
pub fn prepare_cached(scope: &SandboxScope) -> Result<ToolSandbox> {
    static CACHE: Mutex<Vec<(SandboxScope, Option<Arc<Sandbox>>)>> = Mutex::new(Vec::new());
    let known = {
        let cache = CACHE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cache
            .iter()
            .find(|(cached, _)| cached == scope)
            .map(|(_, sandbox)| sandbox.clone())
    };
    if let Some(sandbox) = known {
        return Ok(ToolSandbox {
            scope: scope.clone(),
            sandbox,
            warning: None,
        });
    }
    let built = scope.build()?;
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if cache.len() >= CACHED_SANDBOXES {
        cache.remove(0);
    }
    cache.push((scope.clone(), built.sandbox.clone()));
    Ok(built)
}

/// Roots made absolute (`~/` = this user's home, else against `base`) and canonical; each
/// must exist.
fn resolve_roots(
    roots: Option<&[PathBuf]>,
    base: &Path,
    setting: &str,
    key: &str,
) -> Result<Vec<PathBuf>> {
    let mut resolved: Vec<PathBuf> = Vec::new();
    for root in roots.unwrap_or_default() {
        let path = expand_home(root, setting, key)?;
        if let Some(link) = crate::sandbox::paths::link_inside_writable(&base.join(&path), &[]) {
            return Err(Error::ConfigInvalid(format!(
                "{setting}: {key} entry '{}' leads through the symlink '{}', which is inside a directory sandboxed processes may write: one could point it anywhere, so toolgate does not follow it. Give the real path it stands for",
                root.display(),
                link.display()
            )));
        }
        let real = std::fs::canonicalize(base.join(&path)).map_err(|err| {
            Error::ConfigInvalid(format!(
                "{setting}: {key} entry '{}' cannot be used ({err}); give an existing path, absolute, relative to '{}', or under ~/",
                root.display(),
                base.display()
            ))
        })?;
        if !resolved.contains(&real) {
            resolved.push(real);
        }
    }
    Ok(resolved)
}

/// `root` with a leading `~` replaced by this user's home (`HOME`); other paths as they are.
pub(crate) fn expand_home(root: &Path, setting: &str, key: &str) -> Result<PathBuf> {
    let Ok(rest) = root.strip_prefix("~") else {
        return Ok(root.to_path_buf());
    };
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
        .ok_or_else(|| {
            Error::ConfigInvalid(format!(
                "{setting}: {key} entry '{}' starts with ~ but HOME is not set to an absolute path; give the absolute path",
                root.display()
            ))
        })?;
    Ok(home.join(rest))
}
