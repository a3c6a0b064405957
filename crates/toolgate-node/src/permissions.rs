//! What a person sees of a tool input before approving it, and saved approvals: the rules of
//! the project permissions file that a plan read, what saving a call would write, and saving
//! it. Inputs cross as JSON text (serde_json's depth limit makes a hostile nesting an error).

use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use toolgate_core::permissions::SavedBy;
use toolgate_core::run::review;
use toolgate_core::Error;

use crate::error::sync;
use crate::worker::WorkerPlan;

fn parse_input(text: &str) -> toolgate_core::Result<Value> {
    serde_json::from_str(text).map_err(|err| {
        Error::InvalidInput(format!(
            "the tool input is not JSON toolgate can read: {err}"
        ))
    })
}

fn index(value: u32) -> usize {
    value as usize
}

/// A tool input as a person reviewing an approval request sees it.
#[napi(object, object_from_js = false)]
pub struct InputReview {
    /// The whole input for a person to read (keys and values as lines, strings as they are,
    /// long whitespace runs counted, invisible and control characters named), or, when it is
    /// too long, its first part and a notice with its size and SHA-256. Safe to print.
    pub review: String,
    /// Whether `review` shows the whole input. When false, offer no "always" and no "save".
    pub reviewable: bool,
    /// The size of the input as canonical JSON (keys sorted), in bytes.
    pub input_bytes: f64,
    /// SHA-256 (hex) of the input as canonical JSON.
    pub input_sha256: String,
}

/// The review of a tool input (JSON text): the one display rule of every approval surface.
#[napi]
pub fn review_input(env: Env, input_json: String) -> napi::Result<InputReview> {
    sync(&env, "reviewInput", || {
        let reviewed = review::review_input(&parse_input(&input_json)?);
        Ok(InputReview {
            review: reviewed.review,
            reviewable: reviewed.reviewable,
            input_bytes: reviewed.input_bytes as f64,
            input_sha256: reviewed.input_sha256,
        })
    })
}

/// What answering "save" to a call would write.
#[napi(object, object_from_js = false)]
pub struct SaveOffer {
    /// The project permissions file the rule goes to.
    pub file: String,
    /// The rule in words (`worker w: shell command exactly: git status`).
    pub rule: String,
}

/// What saving a call of `toolName` by worker `index` of the plan would write, or `null` when
/// it cannot be saved (its input is too long to review, or it has nothing to save).
#[napi]
pub fn plan_save_offer(
    env: Env,
    plan: &WorkerPlan,
    index: u32,
    tool_name: String,
    input_json: String,
    argv: Option<Vec<String>>,
) -> napi::Result<Option<SaveOffer>> {
    sync(&env, "planSaveOffer", || {
        let input = parse_input(&input_json)?;
        Ok(plan
            .inner
            .save_offer(self::index(index), &tool_name, &input, argv.as_deref())?
            .map(|offer| SaveOffer {
                file: offer.file.display().to_string(),
                rule: offer.rule,
            }))
    })
}

/// The saved rule covering a call, as JSON text (`worker`, `tool`, `kind`, the scope, `rule`,
/// `saved`, `by`, `file`, `line`), or `null`.
#[napi]
pub fn plan_saved_rule_for(
    env: Env,
    plan: &WorkerPlan,
    index: u32,
    tool_name: String,
    input_json: String,
    argv: Option<Vec<String>>,
) -> napi::Result<Option<String>> {
    sync(&env, "planSavedRuleFor", || {
        let input = parse_input(&input_json)?;
        let Some(rule) =
            plan.inner
                .saved_rule_for(self::index(index), &tool_name, &input, argv.as_deref())?
        else {
            return Ok(None);
        };
        let file = plan
            .inner
            .permissions()
            .map(|permissions| permissions.path().to_path_buf())
            .unwrap_or_default();
        Ok(Some(rule.to_json(&file).to_string()))
    })
}

/// Saves a call's scope as a rule in the plan's project permissions file (`by`: `terminal`,
/// `deferred-answer`, `mcp-elicitation` or `approval-handler`). Returns the rule as JSON text
/// (as `planSavedRuleFor`), with its line and date.
#[napi]
pub fn plan_save_rule(
    env: Env,
    plan: &WorkerPlan,
    index: u32,
    tool_name: String,
    input_json: String,
    argv: Option<Vec<String>>,
    by: String,
) -> napi::Result<String> {
    sync(&env, "planSaveRule", || {
        let input = parse_input(&input_json)?;
        let by = SavedBy::parse(&by)?;
        let rule =
            plan.inner
                .save_rule(self::index(index), &tool_name, &input, argv.as_deref(), by)?;
        let file = plan
            .inner
            .permissions()
            .map(|permissions| permissions.path().to_path_buf())
            .unwrap_or_default();
        Ok(rule.to_json(&file).to_string())
    })
}

/// Every rule of the plan's project permissions file, as JSON text (a list, each as
/// `planSavedRuleFor` returns it): where each came from, for `toolgate check`.
#[napi]
pub fn plan_saved_rules(env: Env, plan: &WorkerPlan) -> napi::Result<String> {
    sync(&env, "planSavedRules", || {
        Ok(Value::Array(plan.inner.saved_rules()).to_string())
    })
}

/// The plan's project permissions file (it may not exist yet).
#[napi]
pub fn plan_permissions_file(env: Env, plan: &WorkerPlan) -> napi::Result<Option<String>> {
    sync(&env, "planPermissionsFile", || {
        Ok(plan
            .inner
            .permissions()
            .map(|permissions| permissions.path().display().to_string()))
    })
}
