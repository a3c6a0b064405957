//! The state of a run that stopped for approvals, so that another request or process can give
//! the answers and continue it (`runWorker(…, { onApproval: 'defer' })`, then `resumeWorker`).
//!
//! The state is self-contained JSON: the conversation, the step count, the "always" answers so
//! far, the pending requests and the worker's fingerprint. Its body is authenticated with
//! HMAC-SHA256 under the application's `stateSecret`, so it can travel through a browser or a
//! database: any change — to the input of a pending call, its tool, the conversation, the
//! "always" answers — makes it invalid. A resume is refused (`STATE_INVALID`) when
//!
//! - the signature does not match (changed, or issued under another secret);
//! - the worker's binding differs: its files, work directory, tools, approvals, rules or sandbox
//!   (see [`super::fingerprint`]; the message names the parts);
//! - the state expired, or was already resumed once (see [`super::ledger`]);
//! - an answer names a request this state never asked.
//!
//! Nothing runs before every check has passed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::always::{AlwaysScope, ScopeChoice};
use super::crypto::{hmac_hex, hmac_matches, random_hex};
use super::ledger::Ledger;
use super::review::review_input;
use crate::error::{Error, Result};
use crate::limits::{
    MAX_ALWAYS_SCOPES, MAX_PENDING, MAX_REASON_BYTES, MAX_STATE_BYTES, MIN_SECRET_BYTES,
    STATE_MAX_AGE_MS,
};

/// The `format` of a state.
pub const STATE_FORMAT: &str = "toolgate-run-state";
/// The version of the state layout this core writes and reads.
pub const STATE_VERSION: u32 = 1;

/// Separates the signed body from any other use of the secret.
const MAC_DOMAIN: &[u8] = b"toolgate-run-state-v1\n";

/// A call waiting for approval, as the SDK reports it when the run stops.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PendingDraft {
    pub tool_call_id: String,
    /// The AI SDK's approval id (answered with a `tool-approval-response`).
    pub approval_id: String,
    pub tool_name: String,
    pub input: Value,
    /// The command's words, for command tools (what a prefix scope is matched against).
    #[serde(default)]
    pub argv: Option<Vec<String>>,
}

/// What the SDK hands over when a run stops for approvals.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunStateDraft {
    /// The worker's name (for messages).
    pub worker: String,
    /// The worker's fingerprint (see [`super::fingerprint`]).
    pub fingerprint: String,
    /// The id of the run, kept across resumes (a new one when absent).
    #[serde(default)]
    pub run_id: Option<String>,
    /// Model steps taken so far.
    pub steps: u32,
    pub max_steps: u32,
    /// "Always" answers given so far.
    pub always: Vec<AlwaysScope>,
    pub pending: Vec<PendingDraft>,
    /// Token usage so far (opaque to the core).
    pub usage: Value,
    /// The conversation so far, ending with the approval requests (opaque to the core).
    pub messages: Value,
}

/// A pending request as the caller sees it: `id` is what an answer names, `scope` what
/// "always" would cover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PendingApproval {
    pub id: String,
    pub tool_call_id: String,
    pub approval_id: String,
    pub tool_name: String,
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    pub scope: AlwaysScope,
    /// The input as a person reviews it ([`super::review`]): whole, or cut with a notice.
    #[serde(default)]
    pub review: String,
    /// Whether `review` shows the whole input; when false only `approve` or `deny` is accepted.
    #[serde(default)]
    pub reviewable: bool,
    /// The size of the input as canonical JSON, in bytes.
    #[serde(default)]
    pub input_bytes: usize,
    /// SHA-256 (hex) of the input as canonical JSON.
    #[serde(default)]
    pub input_sha256: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StateBody {
    id: String,
    run_id: String,
    issued_at_ms: u64,
    worker: String,
    fingerprint: String,
    steps: u32,
    max_steps: u32,
    always: Vec<AlwaysScope>,
    pending: Vec<PendingApproval>,
    usage: Value,
    messages: Value,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    format: String,
    version: u32,
    /// The body as JSON text: the exact bytes the tag covers.
    body: String,
    /// HMAC-SHA256 of the body, hex.
    mac: String,
}

/// A sealed state and what the caller shows or stores with it.
#[derive(Debug, Clone)]
pub struct SealedRun {
    /// The state: JSON text, to store or send as it is.
    pub state: String,
    pub run_id: String,
    pub pending: Vec<PendingApproval>,
}

/// An answer to a pending request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Approve,
    Always(ScopeChoice),
    /// Approve, and save the call's scope as a rule in the project permissions file.
    Save,
    Deny(Option<String>),
}

impl Answer {
    /// Reads `'approve' | 'always' | 'save' | 'deny'`, `{ decision: 'approve' | 'always' |
    /// 'save', scope? }` or `{ decision: 'deny', reason? }`.
    pub fn from_value(value: &Value, id: &str) -> Result<Self> {
        let wrong = || {
            Error::InvalidInput(format!(
                "the answer for '{id}' is not one of 'approve', 'always', 'save', 'deny', {{ decision: 'deny', reason }} or {{ decision: 'always', scope }}"
            ))
        };
        let (decision, rest) = match value {
            Value::String(decision) => (decision.as_str(), serde_json::Map::new()),
            Value::Object(map) => match map.get("decision") {
                Some(Value::String(decision)) => {
                    let mut rest = map.clone();
                    rest.remove("decision");
                    (decision.as_str(), rest)
                }
                _ => return Err(wrong()),
            },
            _ => return Err(wrong()),
        };
        let only = |allowed: &[&str]| -> Result<()> {
            match rest.keys().find(|key| !allowed.contains(&key.as_str())) {
                Some(key) => Err(Error::InvalidInput(format!(
                    "the answer for '{id}' has an unknown key '{key}'; a '{decision}' answer takes {}",
                    if allowed.is_empty() { "no other key".to_string() } else { allowed.join(", ") }
                ))),
                None => Ok(()),
            }
        };
        match decision {
            "approve" => only(&[]).map(|()| Answer::Approve),
            "save" => only(&[]).map(|()| Answer::Save),
            "always" => {
                only(&["scope"])?;
                ScopeChoice::from_value(rest.get("scope")).map(Answer::Always)
            }
            "deny" => {
                only(&["reason"])?;
                let reason = match rest.get("reason") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(reason)) if reason.len() <= MAX_REASON_BYTES => {
                        Some(reason.clone()).filter(|reason| !reason.trim().is_empty())
                    }
                    Some(Value::String(reason)) => {
                        return Err(Error::InvalidInput(format!(
                            "the reason for '{id}' is {} bytes; at most {MAX_REASON_BYTES} are accepted",
                            reason.len()
                        )))
                    }
                    Some(_) => return Err(wrong()),
                };
                Ok(Answer::Deny(reason))
            }
            _ => Err(wrong()),
        }
    }
}

/// A pending request with the answer given to it.
#[derive(Debug, Clone)]
pub struct AnsweredApproval {
    pub pending: PendingApproval,
    pub approved: bool,
    /// Why it was denied, when the answer said.
    pub reason: Option<String>,
    /// The scope an "always" answer covers from now on.
    pub always: Option<AlwaysScope>,
    /// The answer was `save`: the SDK writes the call's scope to the project permissions file.
    pub save: bool,
}

/// A state that passed every check, with its answers resolved.
#[derive(Debug, Clone)]
pub struct ResumedRun {
    pub run_id: String,
    pub worker: String,
    pub steps: u32,
    pub max_steps: u32,
    /// The "always" answers so far, the new ones included.
    pub always: Vec<AlwaysScope>,
    pub usage: Value,
    pub messages: Value,
    /// One per pending request, in the order they were asked.
    pub answers: Vec<AnsweredApproval>,
}

/// Refuses a secret too short to authenticate anything.
pub fn check_secret(secret: &str) -> Result<()> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(Error::ConfigInvalid(format!(
            "stateSecret is {} bytes; it must be at least {MIN_SECRET_BYTES} bytes of secret text (e.g. crypto.randomBytes(32).toString('hex'), or TOOLGATE_STATE_SECRET for the CLI), the same in every process that resumes the run",
            secret.len()
        )));
    }
    Ok(())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Seals the state of a run that stopped for approvals: gives each pending request an id and
/// the scope "always" would cover, and signs the whole.
pub fn seal(draft: RunStateDraft, secret: &str) -> Result<SealedRun> {
    check_secret(secret)?;
    if draft.pending.is_empty() || draft.pending.len() > MAX_PENDING {
        return Err(Error::InvalidInput(format!(
            "a run state holds 1 to {MAX_PENDING} pending requests, not {}",
            draft.pending.len()
        )));
    }
    check_always(&draft.always)?;
    if !draft.messages.is_array() {
        return Err(Error::InvalidInput(
            "the conversation of a run state is a list of messages".into(),
        ));
    }
    let mut pending = Vec::with_capacity(draft.pending.len());
    for call in draft.pending {
        // Pending calls are the top worker's (a called worker's approvals are never deferred).
        let scope = AlwaysScope::exact(
            &call.tool_name,
            &call.input,
            call.argv.as_deref(),
            &draft.worker,
        );
        let review = review_input(&call.input);
        pending.push(PendingApproval {
            id: random_hex(6)?,
            tool_call_id: call.tool_call_id,
            approval_id: call.approval_id,
            tool_name: call.tool_name,
            input: call.input,
            argv: call.argv,
            scope,
            review: review.review,
            reviewable: review.reviewable,
            input_bytes: review.input_bytes,
            input_sha256: review.input_sha256,
        });
    }
    let run_id = match draft.run_id {
        Some(id) if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) => id,
        Some(id) => {
            return Err(Error::InvalidInput(format!(
                "the run id '{}' is not one toolgate issues",
                id.escape_debug()
            )))
        }
        None => random_hex(16)?,
    };
    let body = StateBody {
        id: random_hex(16)?,
        run_id: run_id.clone(),
        issued_at_ms: now_ms(),
        worker: draft.worker,
        fingerprint: draft.fingerprint,
        steps: draft.steps,
        max_steps: draft.max_steps,
        always: draft.always,
        pending: pending.clone(),
        usage: draft.usage,
        messages: draft.messages,
    };
    let body = serde_json::to_string(&body)
        .map_err(|err| Error::Internal(format!("writing a run state: {err}")))?;
    if body.len() > MAX_STATE_BYTES {
        return Err(Error::InvalidInput(format!(
            "the run state would be {} bytes; at most {MAX_STATE_BYTES} are accepted (the conversation is too long to store)",
            body.len()
        )));
    }
    let mac = hmac_hex(secret.as_bytes(), &[MAC_DOMAIN, body.as_bytes()].concat())?;
    let envelope = Envelope {
        format: STATE_FORMAT.into(),
        version: STATE_VERSION,
        body,
        mac,
    };
    let state = serde_json::to_string(&envelope)
        .map_err(|err| Error::Internal(format!("writing a run state: {err}")))?;
    Ok(SealedRun {
        state,
        run_id,
        pending,
    })
}

fn check_always(always: &[AlwaysScope]) -> Result<()> {
    if always.len() > MAX_ALWAYS_SCOPES {
        return Err(Error::InvalidInput(format!(
            "a run keeps at most {MAX_ALWAYS_SCOPES} 'always' answers, not {}",
            always.len()
        )));
    }
    always.iter().try_for_each(AlwaysScope::check)
}

fn not_a_state(detail: &str) -> Error {
    Error::StateInvalid(format!(
        "this is not a run state toolgate issued ({detail}); pass the `state` string runWorker or a previous resume returned, unchanged"
    ))
}

/// `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Checks a state and the answers to it, and marks it resumed in `ledger`. Every check comes
/// before the mark, so a refused resume leaves the state usable; a state that passed is never
/// accepted again.
pub fn resume(
    state: &str,
    secret: &str,
    fingerprint: &str,
    answers: &Value,
    ledger: &Ledger,
) -> Result<ResumedRun> {
    check_secret(secret)?;
    if state.len() > MAX_STATE_BYTES {
        return Err(not_a_state(&format!(
            "it is {} bytes, more than any state toolgate writes",
            state.len()
        )));
    }
    let envelope: Envelope = serde_json::from_str(state)
        .map_err(|err| not_a_state(&format!("not the JSON of a state: {err}")))?;
    if envelope.format != STATE_FORMAT {
        return Err(not_a_state(&format!(
            "its format is '{}'",
            envelope.format.escape_debug()
        )));
    }
    if envelope.version != STATE_VERSION {
        return Err(Error::StateInvalid(format!(
            "the run state has version {}, and this toolgate reads version {STATE_VERSION}; finish it with the toolgate version that issued it, or start a new run",
            envelope.version
        )));
    }
    let signed = [MAC_DOMAIN, envelope.body.as_bytes()].concat();
    if !hmac_matches(secret.as_bytes(), &signed, &envelope.mac)? {
        return Err(Error::StateInvalid(
            "the run state's signature does not match: it was changed after toolgate issued it, or it was issued with another stateSecret. Nothing ran; resume the state exactly as it was returned, with the same secret, or start a new run".into(),
        ));
    }
    let body: StateBody = serde_json::from_str(&envelope.body)
        .map_err(|err| not_a_state(&format!("its body cannot be read: {err}")))?;
    if body.fingerprint != fingerprint {
        let parts = super::fingerprint::differing_parts(&body.fingerprint, fingerprint);
        let what = if parts.is_empty() {
            "a file of its graph, its work directory, its tools or a policy that decides its calls changed since".to_string()
        } else {
            format!("it differs in its {}", join_and(&parts))
        };
        return Err(Error::StateInvalid(format!(
            "the run state was issued for another worker than this '{}': {what}. A state is bound to exactly the worker that issued it (work directory, tools, approvals, rules and sandbox included), and approvals given for one are never applied to another; resume it with that worker, or start a new run",
            body.worker
        )));
    }
    let age = now_ms().saturating_sub(body.issued_at_ms);
    if age > STATE_MAX_AGE_MS {
        return Err(Error::StateInvalid(format!(
            "the run state was issued {} hours ago; states expire after {} days. Start a new run",
            age / 3_600_000,
            STATE_MAX_AGE_MS / 86_400_000
        )));
    }
    check_always(&body.always)?;
    let answered = match_answers(&body.pending, answers)?;
    let mut always = body.always;
    for answer in &answered {
        if let Some(scope) = &answer.always {
            if !always.contains(scope) {
                always.push(scope.clone());
            }
        }
    }
    check_always(&always)?;
    ledger.consume(&body.id)?;
    Ok(ResumedRun {
        run_id: body.run_id,
        worker: body.worker,
        steps: body.steps,
        max_steps: body.max_steps,
        always,
        usage: body.usage,
        messages: body.messages,
        answers: answered,
    })
}

fn describe_pending(pending: &[PendingApproval]) -> String {
    pending
        .iter()
        .map(|request| format!("{} ({})", request.id, request.tool_name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn match_answers(pending: &[PendingApproval], answers: &Value) -> Result<Vec<AnsweredApproval>> {
    let Value::Object(answers) = answers else {
        return Err(Error::InvalidInput(
            "answers map each pending request id to 'approve', 'always', 'save', 'deny' or { decision: 'deny', reason }".into(),
        ));
    };
    if let Some(foreign) = answers
        .keys()
        .find(|id| !pending.iter().any(|request| &request.id == *id))
    {
        return Err(Error::StateInvalid(format!(
            "the answers name '{}', which this state never asked for (it waits for {}); answer only the pending requests of this state",
            foreign.escape_debug(),
            describe_pending(pending)
        )));
    }
    pending
        .iter()
        .map(|request| {
            let value = answers.get(&request.id).ok_or_else(|| {
                Error::InvalidInput(format!(
                    "no answer for pending request '{}' ({}); answer every pending request ({})",
                    request.id,
                    request.tool_name,
                    describe_pending(pending)
                ))
            })?;
            let answer = Answer::from_value(value, &request.id)?;
            if matches!(answer, Answer::Always(_) | Answer::Save) {
                // Decided again from the input itself: a state written before the review
                // fields existed carries none.
                let review = review_input(&request.input);
                if !review.reviewable {
                    return Err(Error::InvalidInput(format!(
                        "'{}' cannot be answered 'always' or 'save': its input ({} bytes, sha256 {}) is too long to review, so it may only be approved once ('approve') or denied",
                        request.id, review.input_bytes, review.input_sha256
                    )));
                }
            }
            let save = answer == Answer::Save;
            let (approved, reason, always) = match answer {
                Answer::Approve | Answer::Save => (true, None, None),
                Answer::Deny(reason) => (false, reason, None),
                Answer::Always(choice) => {
                    let scope = AlwaysScope::choose(
                        &request.tool_name,
                        &request.input,
                        request.argv.as_deref(),
                        &choice,
                        &request.scope.worker,
                    )?;
                    (true, None, Some(scope))
                }
            };
            Ok(AnsweredApproval {
                pending: request.clone(),
                approved,
                reason,
                always,
                save,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &str = "0123456789abcdef0123456789abcdef-test";

    fn draft() -> RunStateDraft {
        RunStateDraft {
            worker: "w".into(),
            fingerprint: "f1".into(),
            run_id: None,
            steps: 1,
            max_steps: 20,
            always: vec![],
            pending: vec![
                PendingDraft {
                    tool_call_id: "call-1".into(),
                    approval_id: "ap-1".into(),
                    tool_name: "shell".into(),
                    input: json!({ "command": "rm -rf build" }),
                    argv: Some(vec!["rm".into(), "-rf".into(), "build".into()]),
                },
                PendingDraft {
                    tool_call_id: "call-2".into(),
                    approval_id: "ap-2".into(),
                    tool_name: "write_file".into(),
                    input: json!({ "path": "a", "content": "x" }),
                    argv: None,
                },
            ],
            usage: json!({ "inputTokens": 10 }),
            messages: json!([{ "role": "user", "content": "go" }]),
        }
    }

    /// Issue 23 §6: a state resumed on a worker that differs in any part of its binding is
    /// refused, and the message names the parts; nothing is marked resumed.
    #[test]
    fn a_state_is_bound_to_the_worker_that_issued_it_and_says_what_differs() {
        use super::super::fingerprint::description_fingerprint;
        let worker = |binding: Value, tools: Value| {
            let mut described = json!({
                "name": "w",
                "instructions": "i",
                "tools": [{ "name": "file_write", "description": "d", "approval": "ask", "binding": binding }],
            });
            if let Some(extra) = tools.as_array() {
                described["tools"]
                    .as_array_mut()
                    .unwrap()
                    .extend(extra.iter().cloned());
            }
            description_fingerprint(&described)
        };
        let binding = json!({ "workDir": "/w/a", "rules": { "paths": [] }, "sandbox": null });
        let issued = worker(binding.clone(), json!([]));
        let (_dir, ledger) = ledger();
        let sealed = seal(
            RunStateDraft {
                fingerprint: issued.clone(),
                ..draft()
            },
            SECRET,
        )
        .unwrap();
        let given = answers(&sealed, json!("approve"), json!("approve"));
        let cases = [
            (
                worker(
                    json!({ "workDir": "/w/b", "rules": { "paths": [] }, "sandbox": null }),
                    json!([]),
                ),
                "work directories",
            ),
            (
                worker(
                    json!({ "workDir": "/w/a", "rules": { "paths": [{ "pattern": "x", "approval": "ask" }] }, "sandbox": null }),
                    json!([]),
                ),
                "rules",
            ),
            (
                worker(
                    json!({ "workDir": "/w/a", "rules": { "paths": [] }, "sandbox": false }),
                    json!([]),
                ),
                "sandbox",
            ),
            (
                worker(
                    binding.clone(),
                    json!([{ "name": "extra", "description": "", "approval": "ask" }]),
                ),
                "tools",
            ),
        ];
        for (here, part) in cases {
            let err = resume(&sealed.state, SECRET, &here, &given, &ledger).unwrap_err();
            assert_eq!(err.code(), "STATE_INVALID", "{part}");
            assert!(
                err.to_string().contains(&format!("differs in its {part}")),
                "{err}"
            );
        }
        resume(&sealed.state, SECRET, &issued, &given, &ledger).unwrap();
    }

    fn ledger() -> (tempfile::TempDir, Ledger) {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(Some(dir.path())).unwrap();
        (dir, ledger)
    }

    fn answers(sealed: &SealedRun, first: Value, second: Value) -> Value {
        json!({ sealed.pending[0].id.clone(): first, sealed.pending[1].id.clone(): second })
    }

    /// Changes the body of a state and keeps its old tag.
    fn tamper(state: &str, change: impl Fn(&mut Value)) -> String {
        let mut envelope: Value = serde_json::from_str(state).unwrap();
        let mut body: Value = serde_json::from_str(envelope["body"].as_str().unwrap()).unwrap();
        change(&mut body);
        envelope["body"] = Value::String(body.to_string());
        envelope.to_string()
    }

    #[test]
    fn a_sealed_state_resumes_once_with_its_answers() {
        let sealed = seal(draft(), SECRET).unwrap();
        assert_eq!(sealed.pending.len(), 2);
        assert_ne!(sealed.pending[0].id, sealed.pending[1].id);
        assert!(sealed.pending[0]
            .scope
            .description
            .contains("exactly this command"));
        let (_dir, ledger) = ledger();
        let given = answers(
            &sealed,
            json!("always"),
            json!({ "decision": "deny", "reason": "not now" }),
        );
        let resumed = resume(&sealed.state, SECRET, "f1", &given, &ledger).unwrap();
        assert_eq!(resumed.run_id, sealed.run_id);
        assert!(resumed.answers[0].approved);
        assert_eq!(resumed.always.len(), 1);
        assert!(!resumed.answers[1].approved);
        assert_eq!(resumed.answers[1].reason.as_deref(), Some("not now"));
        assert_eq!(
            resumed.messages,
            json!([{ "role": "user", "content": "go" }])
        );
        // replay of the same state
        let err = resume(&sealed.state, SECRET, "f1", &given, &ledger).unwrap_err();
        assert_eq!(err.code(), "STATE_INVALID");
        assert!(err.to_string().contains("already resumed"), "{err}");
    }

    #[test]
    fn pending_requests_carry_their_review_and_may_be_saved_unless_too_long() {
        let sealed = seal(draft(), SECRET).unwrap();
        assert_eq!(sealed.pending[0].review, "command: rm -rf build");
        assert!(sealed.pending[0].reviewable);
        assert_eq!(sealed.pending[0].input_sha256.len(), 64);
        let (_dir, ledger) = ledger();
        let given = answers(&sealed, json!("save"), json!({ "decision": "save" }));
        let resumed = resume(&sealed.state, SECRET, "f1", &given, &ledger).unwrap();
        assert!(resumed
            .answers
            .iter()
            .all(|answer| answer.approved && answer.save));
        assert!(
            resumed.always.is_empty(),
            "a saved rule is written by the SDK, not kept as always"
        );
        assert_eq!(
            Answer::from_value(&json!({ "decision": "save", "scope": "tool" }), "x")
                .unwrap_err()
                .code(),
            "INVALID_INPUT"
        );
        // an input too long to review: approve or deny only
        let mut long = draft();
        long.pending[1].input = json!({ "path": "a", "content": format!("x{}os.remove", "ab".repeat(crate::limits::MAX_REVIEW_BYTES)) });
        let sealed = seal(long, SECRET).unwrap();
        assert!(!sealed.pending[1].reviewable);
        assert!(sealed.pending[1]
            .review
            .contains(&sealed.pending[1].input_sha256));
        for refused in [
            json!("always"),
            json!("save"),
            json!({ "decision": "always", "scope": "tool" }),
        ] {
            let given = answers(&sealed, json!("approve"), refused.clone());
            let err = resume(&sealed.state, SECRET, "f1", &given, &ledger).unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT", "{refused}");
            assert!(err.to_string().contains("too long to review"), "{err}");
        }
        let given = answers(&sealed, json!("approve"), json!("approve"));
        assert!(
            resume(&sealed.state, SECRET, "f1", &given, &ledger).is_ok(),
            "nothing was consumed by the refusals"
        );
    }

    #[test]
    fn every_change_to_the_body_is_refused() {
        let sealed = seal(draft(), SECRET).unwrap();
        let (_dir, ledger) = ledger();
        let given = answers(&sealed, json!("approve"), json!("approve"));
        type Change = Box<dyn Fn(&mut Value)>;
        let changes: Vec<(&str, Change)> = vec![
            (
                "changed input",
                Box::new(|b| b["pending"][0]["input"]["command"] = json!("rm -rf /")),
            ),
            (
                "changed tool",
                Box::new(|b| b["pending"][1]["toolName"] = json!("delete_file")),
            ),
            (
                "changed conversation",
                Box::new(|b| b["messages"][0]["content"] = json!("other")),
            ),
            (
                "added always",
                Box::new(|b| {
                    b["always"] = json!([{ "kind": "tool", "tool": "shell", "description": "" }])
                }),
            ),
            (
                "changed fingerprint",
                Box::new(|b| b["fingerprint"] = json!("f2")),
            ),
            ("more steps", Box::new(|b| b["maxSteps"] = json!(100000))),
        ];
        for (what, change) in changes {
            let forged = tamper(&sealed.state, change);
            let err = resume(&forged, SECRET, "f1", &given, &ledger).unwrap_err();
            assert_eq!(err.code(), "STATE_INVALID", "{what}");
            assert!(
                err.to_string().contains("signature does not match"),
                "{what}: {err}"
            );
        }
        // the untouched state still resumes: refusals did not consume it
        resume(&sealed.state, SECRET, "f1", &given, &ledger).unwrap();
    }

    #[test]
    fn another_secret_worker_or_format_is_refused() {
        let sealed = seal(draft(), SECRET).unwrap();
        let (_dir, ledger) = ledger();
        let given = answers(&sealed, json!("approve"), json!("deny"));
        let other_secret = "another secret that is long enough!!";
        assert_eq!(
            resume(&sealed.state, other_secret, "f1", &given, &ledger)
                .unwrap_err()
                .code(),
            "STATE_INVALID"
        );
        let err = resume(&sealed.state, SECRET, "f2", &given, &ledger).unwrap_err();
        assert!(
            err.to_string().contains("another worker than this 'w'"),
            "{err}"
        );
        for bad in [
            "",
            "{}",
            "[]",
            "null",
            r#"{"format":"x","version":1,"body":"{}","mac":""}"#,
        ] {
            assert_eq!(
                resume(bad, SECRET, "f1", &given, &ledger)
                    .unwrap_err()
                    .code(),
                "STATE_INVALID",
                "{bad}"
            );
        }
        let mut envelope: Value = serde_json::from_str(&sealed.state).unwrap();
        envelope["version"] = json!(2);
        let err = resume(&envelope.to_string(), SECRET, "f1", &given, &ledger).unwrap_err();
        assert!(err.to_string().contains("version 2"), "{err}");
        assert_eq!(check_secret("short").unwrap_err().code(), "CONFIG_INVALID");
        assert_eq!(seal(draft(), "short").unwrap_err().code(), "CONFIG_INVALID");
    }

    #[test]
    fn foreign_or_missing_answers_are_refused_without_consuming_the_state() {
        let sealed = seal(draft(), SECRET).unwrap();
        let older = seal(draft(), SECRET).unwrap();
        let (_dir, ledger) = ledger();
        let mut foreign = answers(&sealed, json!("approve"), json!("approve"));
        foreign[older.pending[0].id.clone()] = json!("approve");
        let err = resume(&sealed.state, SECRET, "f1", &foreign, &ledger).unwrap_err();
        assert_eq!(err.code(), "STATE_INVALID");
        assert!(err.to_string().contains("never asked"), "{err}");
        let missing = json!({ sealed.pending[0].id.clone(): "approve" });
        let err = resume(&sealed.state, SECRET, "f1", &missing, &ledger).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("no answer"), "{err}");
        for bad in [
            json!("maybe"),
            json!({ "decision": "approve", "reason": "x" }),
            json!(1),
            json!({ "decision": "deny", "reason": 5 }),
        ] {
            let given = answers(&sealed, bad.clone(), json!("approve"));
            assert_eq!(
                resume(&sealed.state, SECRET, "f1", &given, &ledger)
                    .unwrap_err()
                    .code(),
                "INVALID_INPUT",
                "{bad}"
            );
        }
        // a prefix that does not cover the call, or a prefix for a tool without a command
        let given = answers(
            &sealed,
            json!({ "decision": "always", "scope": { "prefix": "rm -rf src" } }),
            json!("approve"),
        );
        assert_eq!(
            resume(&sealed.state, SECRET, "f1", &given, &ledger)
                .unwrap_err()
                .code(),
            "INVALID_INPUT"
        );
        let given = answers(
            &sealed,
            json!("approve"),
            json!({ "decision": "always", "scope": { "prefix": "a" } }),
        );
        assert_eq!(
            resume(&sealed.state, SECRET, "f1", &given, &ledger)
                .unwrap_err()
                .code(),
            "INVALID_INPUT"
        );
        // still resumable
        let given = answers(
            &sealed,
            json!({ "decision": "always", "scope": { "prefix": "rm -rf" } }),
            json!({ "decision": "always", "scope": "tool" }),
        );
        let resumed = resume(&sealed.state, SECRET, "f1", &given, &ledger).unwrap();
        assert_eq!(resumed.always.len(), 2);
    }

    #[test]
    fn an_expired_state_is_refused() {
        let sealed = seal(draft(), SECRET).unwrap();
        let mut envelope: Value = serde_json::from_str(&sealed.state).unwrap();
        let mut body: Value = serde_json::from_str(envelope["body"].as_str().unwrap()).unwrap();
        body["issuedAtMs"] = json!(now_ms() - STATE_MAX_AGE_MS - 1000);
        let text = body.to_string();
        envelope["body"] = Value::String(text.clone());
        envelope["mac"] =
            json!(hmac_hex(SECRET.as_bytes(), &[MAC_DOMAIN, text.as_bytes()].concat()).unwrap());
        let (_dir, ledger) = ledger();
        let given = answers(&sealed, json!("approve"), json!("approve"));
        let err = resume(&envelope.to_string(), SECRET, "f1", &given, &ledger).unwrap_err();
        assert!(err.to_string().contains("expire"), "{err}");
    }

    #[test]
    fn drafts_are_checked() {
        let mut empty = draft();
        empty.pending.clear();
        assert_eq!(seal(empty, SECRET).unwrap_err().code(), "INVALID_INPUT");
        let mut bad_run = draft();
        bad_run.run_id = Some("../x".into());
        assert_eq!(seal(bad_run, SECRET).unwrap_err().code(), "INVALID_INPUT");
        let mut bad_messages = draft();
        bad_messages.messages = json!({});
        assert_eq!(
            seal(bad_messages, SECRET).unwrap_err().code(),
            "INVALID_INPUT"
        );
        let sealed = seal(draft(), SECRET).unwrap();
        let mut kept = draft();
        kept.run_id = Some(sealed.run_id.clone());
        assert_eq!(seal(kept, SECRET).unwrap().run_id, sealed.run_id);
    }
}
