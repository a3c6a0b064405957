//! Decisions of a worker run that outlive one approval prompt: what an "always" answer covers
//! ([`always`]), how a call the model made is recorded when toolgate refused it ([`outcome`]),
//! the authenticated state of a run that waits for approvals in another process or request
//! ([`state`], [`ledger`], [`fingerprint`]), and what a person sees of a call's input before
//! approving it ([`review`]). What a durable run pins and may repeat is the
//! plan's to say (`worker::durable`).
//!
//! The SDK runs the agent loop; everything here is what it asks before it acts: whether an
//! earlier "always" covers a call, whether a state it is handed was issued by this application
//! for this worker and was never resumed before, and whether the answers match what was asked.

pub mod always;
mod canonical;
pub(crate) mod crypto;
pub mod fingerprint;
pub mod ledger;
pub mod options;
pub mod outcome;
pub mod review;
pub mod state;

pub use always::{AlwaysScope, ScopeChoice, ScopeKind};
pub use canonical::canonical_json;
pub use options::{AgentSettingsOptions, AuditOptions, ResumeWorkerOptions, RunWorkerOptions};
pub use outcome::{refusal_of, CallDecision, DecidedBy, Refusal};
pub use review::{review_input, InputReview};
pub use state::{
    check_secret, resume, seal, Answer, AnsweredApproval, PendingApproval, PendingDraft,
    ResumedRun, RunStateDraft, SealedRun,
};
