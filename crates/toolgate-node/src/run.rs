//! Runs: options of `runWorker` and friends, "always" scopes, recorded decisions, worker
//! fingerprints, sealed and resumed run states, and the audit log. Values that come from the
//! model or from a stored state (tool inputs, conversations, answers) cross as JSON text and are
//! parsed by serde_json, whose depth limit turns a hostile nesting into an error, not a crash.

use std::path::{Path, PathBuf};

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use toolgate_core::audit::AuditLog;
use toolgate_core::run::{
    self, fingerprint, ledger::Ledger, outcome, AgentSettingsOptions, AlwaysScope, AuditOptions,
    ResumeWorkerOptions, RunWorkerOptions, ScopeChoice,
};
use toolgate_core::{Error, ErrorCode};

use crate::error::{guarded, sync, Settled};
use crate::js_value;
use crate::worker::WorkerPlan;

fn parse_json(text: &str, what: &str) -> toolgate_core::Result<Value> {
    serde_json::from_str(text)
        .map_err(|err| Error::InvalidInput(format!("{what} is not JSON toolgate can read: {err}")))
}

fn to_json_text<T: serde::Serialize>(value: &T) -> toolgate_core::Result<String> {
    serde_json::to_string(value).map_err(|err| Error::Internal(format!("writing JSON: {err}")))
}

/// The audit log of a run, checked: the file, absolute, and its redaction patterns.
#[napi(object, object_from_js = false)]
pub struct CheckedAudit {
    pub file: String,
    pub redact: Vec<String>,
}

fn check_audit(audit: Option<AuditOptions>) -> toolgate_core::Result<Option<CheckedAudit>> {
    let Some(audit) = audit else {
        return Ok(None);
    };
    let file = std::path::absolute(&audit.file).map_err(|err| {
        Error::ConfigInvalid(format!(
            "audit.file '{}' cannot be made absolute: {err}",
            audit.file.display()
        ))
    })?;
    // Compiles the patterns now, so that a bad one fails before anything runs.
    AuditLog::new(&file, &audit.redact)?;
    Ok(Some(CheckedAudit {
        file: file.display().to_string(),
        redact: audit.redact,
    }))
}

/// `runWorker` / `streamWorker` options, checked.
#[napi(object, object_from_js = false)]
pub struct CheckedRunWorkerOptions {
    pub max_steps: Option<u32>,
    pub state_secret: Option<String>,
    pub audit: Option<CheckedAudit>,
}

/// Reads `runWorker` / `streamWorker` options strictly (functions, signals and models are the
/// SDK's); a `stateSecret` too short to authenticate anything is refused.
#[napi]
pub fn check_run_worker_options(
    env: Env,
    options: Option<Unknown<'_>>,
) -> napi::Result<CheckedRunWorkerOptions> {
    sync(&env, "runWorker", || {
        let options: RunWorkerOptions = js_value::config(&env, options)?;
        if let Some(secret) = &options.state_secret {
            run::check_secret(secret)?;
        }
        Ok(CheckedRunWorkerOptions {
            max_steps: options
                .max_steps
                .map(|steps| u32::try_from(steps.0).unwrap_or(u32::MAX)),
            state_secret: options.state_secret,
            audit: check_audit(options.audit)?,
        })
    })
}

/// `resumeWorker` options, checked.
#[napi(object, object_from_js = false)]
pub struct CheckedResumeWorkerOptions {
    pub state_secret: String,
    pub state_ledger: Option<String>,
    pub audit: Option<CheckedAudit>,
}

/// Reads `resumeWorker` options strictly; `stateSecret` is required.
#[napi]
pub fn check_resume_worker_options(
    env: Env,
    options: Option<Unknown<'_>>,
) -> napi::Result<CheckedResumeWorkerOptions> {
    sync(&env, "resumeWorker", || {
        let options: ResumeWorkerOptions = js_value::config(&env, options)?;
        run::check_secret(&options.state_secret)?;
        Ok(CheckedResumeWorkerOptions {
            state_secret: options.state_secret,
            state_ledger: options.state_ledger.map(|dir| {
                std::path::absolute(&dir)
                    .unwrap_or(dir)
                    .display()
                    .to_string()
            }),
            audit: check_audit(options.audit)?,
        })
    })
}

/// Reads `toAgentSettings` options strictly; returns `maxSteps`, if given.
#[napi]
pub fn check_agent_settings_options(
    env: Env,
    options: Option<Unknown<'_>>,
) -> napi::Result<Option<u32>> {
    sync(&env, "toAgentSettings", || {
        let options: AgentSettingsOptions = js_value::config(&env, options)?;
        Ok(options
            .max_steps
            .map(|steps| u32::try_from(steps.0).unwrap_or(u32::MAX)))
    })
}

/// The scope an "always" answer to a call covers: `choice` is `'call'` (the default: exactly
/// this call), `'tool'` (every call of the tool) or `{ prefix: 'rm -rf' }` (command tools:
/// commands starting with these words; they must cover this call). `argv` is the command's
/// words for command tools; `worker` the name of the worker whose tool it is (the answer covers
/// that worker's tool only). Returns the scope as JSON text, with its `description`.
#[napi]
pub fn always_scope(
    env: Env,
    tool_name: String,
    input_json: String,
    argv: Option<Vec<String>>,
    choice: Option<Unknown<'_>>,
    worker: Option<String>,
) -> napi::Result<String> {
    sync(&env, "alwaysScope", || {
        let input = parse_json(&input_json, "the tool input")?;
        let choice: Option<Value> = match choice {
            Some(value) => js_value::input(&env, Some(value))?,
            None => None,
        };
        let choice = ScopeChoice::from_value(choice.as_ref())?;
        to_json_text(&AlwaysScope::choose(
            &tool_name,
            &input,
            argv.as_deref(),
            &choice,
            worker.as_deref().unwrap_or_default(),
        )?)
    })
}

/// Whether one of the "always" scopes (JSON text of a list of scopes made by `alwaysScope`)
/// covers a call of the tool `tool_name` of `worker`.
#[napi]
pub fn always_covers(
    env: Env,
    scopes_json: String,
    tool_name: String,
    input_json: String,
    argv: Option<Vec<String>>,
    worker: Option<String>,
) -> napi::Result<bool> {
    sync(&env, "alwaysCovers", || {
        let scopes: Vec<AlwaysScope> = serde_json::from_str(&scopes_json).map_err(|err| {
            Error::InvalidInput(format!("the 'always' scopes cannot be read: {err}"))
        })?;
        scopes.iter().try_for_each(AlwaysScope::check)?;
        let input = parse_json(&input_json, "the tool input")?;
        Ok(run::always::covered(
            &scopes,
            worker.as_deref().unwrap_or_default(),
            &tool_name,
            &input,
            argv.as_deref(),
        ))
    })
}

/// How a call is recorded.
#[napi(string_enum)]
pub enum CallDecision {
    #[napi(value = "preApproved")]
    PreApproved,
    #[napi(value = "approved")]
    Approved,
    #[napi(value = "always")]
    Always,
    #[napi(value = "denied")]
    Denied,
    #[napi(value = "blocked")]
    Blocked,
    #[napi(value = "refused")]
    Refused,
    #[napi(value = "unknown-tool")]
    UnknownTool,
    #[napi(value = "invalid-input")]
    InvalidInput,
}

impl From<outcome::CallDecision> for CallDecision {
    fn from(decision: outcome::CallDecision) -> Self {
        match decision {
            outcome::CallDecision::PreApproved => CallDecision::PreApproved,
            outcome::CallDecision::Approved => CallDecision::Approved,
            outcome::CallDecision::Always => CallDecision::Always,
            outcome::CallDecision::Denied => CallDecision::Denied,
            outcome::CallDecision::Blocked => CallDecision::Blocked,
            outcome::CallDecision::Refused => CallDecision::Refused,
            outcome::CallDecision::UnknownTool => CallDecision::UnknownTool,
            outcome::CallDecision::InvalidInput => CallDecision::InvalidInput,
        }
    }
}

/// Who made a recorded decision.
#[napi(string_enum = "kebab-case")]
pub enum DecidedBy {
    Config,
    Rule,
    User,
    Flag,
    Saved,
    Always,
    NoHandler,
    Policy,
    Schema,
}

impl From<outcome::DecidedBy> for DecidedBy {
    fn from(source: outcome::DecidedBy) -> Self {
        match source {
            outcome::DecidedBy::Config => DecidedBy::Config,
            outcome::DecidedBy::Rule => DecidedBy::Rule,
            outcome::DecidedBy::User => DecidedBy::User,
            outcome::DecidedBy::Flag => DecidedBy::Flag,
            outcome::DecidedBy::Saved => DecidedBy::Saved,
            outcome::DecidedBy::Always => DecidedBy::Always,
            outcome::DecidedBy::NoHandler => DecidedBy::NoHandler,
            outcome::DecidedBy::Policy => DecidedBy::Policy,
            outcome::DecidedBy::Schema => DecidedBy::Schema,
        }
    }
}

/// A refusal: the decision recorded for a call whose tool raised an error, and who made it.
#[napi(object, object_from_js = false)]
pub struct Refusal {
    pub decision: CallDecision,
    pub decided_by: DecidedBy,
}

/// The refusal an error code stands for (`COMMAND_BLOCKED`: blocked by a rule), or `null` when
/// the tool ran and failed (a timeout, an I/O error) or the code is unknown.
#[napi]
pub fn refusal_of(env: Env, code: String) -> napi::Result<Option<Refusal>> {
    sync(&env, "refusalOf", || {
        Ok(ErrorCode::ALL
            .into_iter()
            .find(|known| known.as_str() == code)
            .and_then(outcome::refusal_of)
            .map(|refusal| Refusal {
                decision: refusal.decision.into(),
                decided_by: refusal.decided_by.into(),
            }))
    })
}

/// The binding of a planned worker graph (see `docs/agent.md`, deferred runs): every policy
/// that decides a call (work directories, tools, approvals, rules, sandboxes) and every file's
/// content. A run state carries it; a resume with a worker whose binding differs is refused.
#[napi]
pub fn worker_plan_fingerprint(env: Env, plan: &WorkerPlan) -> napi::Result<String> {
    sync(&env, "workerPlanFingerprint", || plan.inner.binding())
}

/// The binding of a worker, from a JSON description: its name, instructions, the binding of
/// the plan it was loaded from (`plan`, when it was), and its tools with their descriptions,
/// approvals and bindings (what toolgate built each with).
#[napi]
pub fn worker_description_fingerprint(env: Env, description_json: String) -> napi::Result<String> {
    sync(&env, "workerDescriptionFingerprint", || {
        Ok(fingerprint::description_fingerprint(&parse_json(
            &description_json,
            "the worker description",
        )?))
    })
}

/// A sealed run state.
#[napi(object, object_from_js = false)]
pub struct SealedRunState {
    /// The state, JSON text to store or send unchanged.
    pub state: String,
    pub run_id: String,
    /// The pending requests (`id`, `toolName`, `input`, `scope`, …) as JSON text.
    pub pending_json: String,
}

/// Seals the state of a run that stopped for approvals (a draft as JSON text: worker,
/// fingerprint, runId?, steps, maxSteps, always, pending, usage, messages).
#[napi]
pub fn seal_run_state(
    env: Env,
    draft_json: String,
    secret: String,
) -> napi::Result<SealedRunState> {
    sync(&env, "sealRunState", || {
        let draft: run::RunStateDraft = serde_json::from_str(&draft_json).map_err(|err| {
            Error::InvalidInput(format!("the run state draft cannot be read: {err}"))
        })?;
        let sealed = run::seal(draft, &secret)?;
        Ok(SealedRunState {
            state: sealed.state,
            run_id: sealed.run_id,
            pending_json: to_json_text(&sealed.pending)?,
        })
    })
}

/// Checks a state and its answers (JSON text) and records it resumed in the ledger (default:
/// a private directory in the system's temporary directory). Returns the run to continue as
/// JSON text: runId, worker, steps, maxSteps, always, usage, messages, answers.
#[napi]
pub fn resume_run_state(
    env: Env,
    state: String,
    secret: String,
    fingerprint: String,
    answers_json: String,
    ledger_dir: Option<String>,
) -> napi::Result<String> {
    sync(&env, "resumeRunState", || {
        let answers = parse_json(&answers_json, "the answers")?;
        let ledger = Ledger::open(ledger_dir.as_deref().map(Path::new))?;
        let resumed = run::resume(&state, &secret, &fingerprint, &answers, &ledger)?;
        let answers: Vec<Value> = resumed
            .answers
            .iter()
            .map(|answer| {
                serde_json::json!({
                    "pending": answer.pending,
                    "approved": answer.approved,
                    "reason": answer.reason,
                    "always": answer.always,
                    "save": answer.save,
                })
            })
            .collect();
        to_json_text(&serde_json::json!({
            "runId": resumed.run_id,
            "worker": resumed.worker,
            "steps": resumed.steps,
            "maxSteps": resumed.max_steps,
            "always": resumed.always,
            "usage": resumed.usage,
            "messages": resumed.messages,
            "answers": answers,
        }))
    })
}

/// The `deny_output` patterns of every worker of a plan (the audit log redacts them).
#[napi]
pub fn plan_redaction_patterns(env: Env, plan: &WorkerPlan) -> napi::Result<Vec<String>> {
    sync(&env, "planRedactionPatterns", || {
        Ok(plan.inner.redaction_patterns())
    })
}

/// Appends events (each JSON text) to an audit log as redacted JSON lines and flushes the file
/// to disk, off the JavaScript thread.
#[napi(ts_return_type = "Promise<void>")]
pub async fn append_audit_log(
    file: String,
    redact: Vec<String>,
    events: Vec<String>,
) -> Settled<()> {
    guarded("appendAuditLog", async move {
        tokio::task::spawn_blocking(move || {
            let log = AuditLog::new(&PathBuf::from(file), &redact)?;
            let events = events
                .iter()
                .map(|event| parse_json(event, "an audit event"))
                .collect::<toolgate_core::Result<Vec<_>>>()?;
            log.append(&events)
        })
        .await
        .map_err(|err| Error::Internal(format!("appendAuditLog: {err}")))?
    })
    .await
}

/// The identity of a planned worker graph for a durable run, as JSON text: its fingerprint,
/// each worker's name, file and work directory, and a SHA-256 digest of every file. Throws
/// `CONFIG_INVALID` naming a file that changed since the plan was made.
#[napi]
pub fn worker_plan_identity(env: Env, plan: &WorkerPlan) -> napi::Result<String> {
    sync(&env, "workerPlanIdentity", || {
        to_json_text(&toolgate_core::worker::durable::plan_identity(&plan.inner)?)
    })
}

/// Checks that a plan has the identity (JSON text from `workerPlanIdentity`) the durable run
/// `runId` started with. Throws `CONFIG_INVALID` naming the first file (or worker) that differs.
#[napi]
pub fn check_worker_plan_identity(
    env: Env,
    plan: &WorkerPlan,
    identity_json: String,
    run_id: String,
) -> napi::Result<()> {
    sync(&env, "checkWorkerPlanIdentity", || {
        let expected: toolgate_core::worker::durable::PlanIdentity =
            serde_json::from_str(&identity_json).map_err(|err| {
                Error::InvalidInput(format!(
                    "the recorded identity of run '{run_id}' is not one toolgate wrote: {err}"
                ))
            })?;
        toolgate_core::worker::durable::check_plan_identity(&plan.inner, &expected, &run_id)
    })
}

/// The tools of a plan's top worker whose calls only read (the file tools that read, list and
/// search): a durable run may repeat a call of one after the process running it died.
#[napi]
pub fn worker_plan_read_only_tools(env: Env, plan: &WorkerPlan) -> napi::Result<Vec<String>> {
    sync(&env, "workerPlanReadOnlyTools", || {
        Ok(
            toolgate_core::worker::durable::read_only_tools(&plan.inner)?
                .into_iter()
                .map(String::from)
                .collect(),
        )
    })
}
