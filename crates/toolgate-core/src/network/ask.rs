//! `ask: true`: a host neither allowed nor denied goes to the run's approval handler.
//!
//! The handler ([`Asker`]) answers approve (this connection), `always` (this host and port for
//! the rest of the run) or deny (with a reason the client is sent). What `always` allows is
//! kept in the run's [`RunAllowances`], which every call of the run shares. While a question is
//! pending, other connections of the run to the same host and port from the same tool wait for
//! its answer instead of asking again. An answer that never comes (the handler failed or took
//! longer than the proxy's ask timeout) is a refusal.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

/// What the handler is asked: the contract's `input: { host, port, tool }` of an approval
/// request with `toolName: 'network'`, and the call it is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AskRequest {
    pub host: String,
    pub port: u16,
    /// The tool whose process asked.
    pub tool: String,
    /// The tool call whose process asked.
    pub tool_call_id: String,
}

/// The handler's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskAnswer {
    /// This connection (and the ones waiting with it).
    Approve,
    /// This host and port, for the rest of the run.
    Always,
    /// Refused, with a reason the client is sent.
    Deny { reason: Option<String> },
    /// Not answered now: the run stops for the question after this call (a deferred run,
    /// which cannot pause a running process), so this connection is refused with `reason`;
    /// an approval given when the run resumes lets the call be retried.
    Deferred { reason: String },
}

/// The run's approval handler for connections.
pub trait Asker: Send + Sync {
    fn ask(&self, request: AskRequest) -> Pin<Box<dyn Future<Output = AskAnswer> + Send>>;
}

impl<F, Fut> Asker for F
where
    F: Fn(AskRequest) -> Fut + Send + Sync,
    Fut: Future<Output = AskAnswer> + Send + 'static,
{
    fn ask(&self, request: AskRequest) -> Pin<Box<dyn Future<Output = AskAnswer> + Send>> {
        Box::pin(self(request))
    }
}

/// Who answered and how, as the proxy records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AskOutcome {
    /// An earlier `always` of this run covers it; nobody was asked.
    AlreadyAllowed,
    /// An answer given before for the next call of the tool (when a deferred run resumed):
    /// approve or deny, for every connection of this call.
    AnsweredBefore(AskAnswer),
    Answered(AskAnswer),
}

type PendingKey = (String, u16, String);

/// An answer for the next call of a tool to a host and port, and the call that took it.
type NextCall = HashMap<(String, u16, String), (AskAnswer, Option<String>)>;

/// What one run allowed with `always`, and the questions it has pending. Shared by every
/// call of the run (put the same `Arc` in each call's context).
#[derive(Default)]
pub struct RunAllowances {
    always: Mutex<HashSet<(String, u16)>>,
    next_call: Mutex<NextCall>,
    pending: Mutex<HashMap<PendingKey, watch::Receiver<Option<AskAnswer>>>>,
}

impl fmt::Debug for RunAllowances {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunAllowances")
            .field("always", &self.always())
            .finish_non_exhaustive()
    }
}

impl RunAllowances {
    /// An empty set for a new run.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The `host:port` pairs answered `always`, sorted.
    pub fn always(&self) -> Vec<(String, u16)> {
        let mut pairs: Vec<_> = lock(&self.always).iter().cloned().collect();
        pairs.sort();
        pairs
    }

    /// Records `always` for `host:port` (a resumed run restores its earlier answers this way).
    pub fn allow_always(&self, host: &str, port: u16) {
        lock(&self.always).insert((host.to_string(), port));
    }

    /// Answers `host:port` for the next call of `tool` (every connection of that one call),
    /// approve or deny: a deferred run's answer, given when it resumes, for the call the model
    /// retries. `always` is [`allow_always`](Self::allow_always).
    pub fn answer_next_call(&self, host: &str, port: u16, tool: &str, answer: AskAnswer) {
        lock(&self.next_call).insert((host.to_string(), port, tool.to_string()), (answer, None));
    }

    /// The answer for the next call that covers this connection of a call; the first call
    /// that connects takes it.
    fn next_call_answer(&self, request: &AskRequest) -> Option<AskAnswer> {
        let key = (request.host.clone(), request.port, request.tool.clone());
        match lock(&self.next_call).get_mut(&key) {
            Some((answer, taker @ None)) => {
                *taker = Some(request.tool_call_id.clone());
                Some(answer.clone())
            }
            Some((answer, Some(taker))) if *taker == request.tool_call_id => Some(answer.clone()),
            _ => None,
        }
    }

    /// What the run answered already for this connection (an earlier `always`, or an answer
    /// given for the next call of its tool when a deferred run resumed), asking nobody: a
    /// resumed run may have no handler, and these answers still hold.
    pub(crate) fn answered(&self, request: &AskRequest) -> Option<AskOutcome> {
        if self.allows(&request.host, request.port) {
            return Some(AskOutcome::AlreadyAllowed);
        }
        self.next_call_answer(request)
            .map(AskOutcome::AnsweredBefore)
    }

    fn allows(&self, host: &str, port: u16) -> bool {
        lock(&self.always).contains(&(host.to_string(), port))
    }

    /// Asks `asker` about `request`, or waits for the same question already pending, or
    /// answers from an earlier `always`. The question runs in its own task, so a connection
    /// that gives up does not cancel it for the others waiting.
    pub(crate) async fn ask(
        self: &Arc<Self>,
        asker: &Arc<dyn Asker>,
        request: AskRequest,
        timeout: Duration,
    ) -> AskOutcome {
        if let Some(outcome) = self.answered(&request) {
            return outcome;
        }
        let key = (request.host.clone(), request.port, request.tool.clone());
        let mut answer = {
            let mut pending = lock(&self.pending);
            // Checked again under the lock: an answer may have just arrived.
            if self.allows(&request.host, request.port) {
                return AskOutcome::AlreadyAllowed;
            }
            match pending.get(&key) {
                Some(waiting) => waiting.clone(),
                None => {
                    let (sender, receiver) = watch::channel(None);
                    pending.insert(key.clone(), receiver.clone());
                    let run = Arc::clone(self);
                    let asker = Arc::clone(asker);
                    tokio::spawn(async move {
                        // Removes the question when the task ends, answered or not (a
                        // handler that panics ends it too).
                        let pending = PendingGuard {
                            run: Arc::clone(&run),
                            key,
                        };
                        let answer = tokio::time::timeout(timeout, asker.ask(request.clone()))
                            .await
                            .unwrap_or_else(|_| AskAnswer::Deny {
                                reason: Some(format!(
                                    "nobody answered the approval request within {} s",
                                    timeout.as_secs()
                                )),
                            });
                        if answer == AskAnswer::Always {
                            run.allow_always(&request.host, request.port);
                        }
                        // No longer pending before the answer is out: a connection that
                        // comes after the answer asks again (an approval is for the
                        // connections that waited for it).
                        drop(pending);
                        let _ = sender.send(Some(answer));
                    });
                    receiver
                }
            }
        };
        let answered = answer
            .wait_for(Option::is_some)
            .await
            .map(|value| value.clone());
        match answered {
            Ok(Some(answer)) => AskOutcome::Answered(answer),
            // The question's task ended without an answer: the handler panicked.
            _ => AskOutcome::Answered(AskAnswer::Deny {
                reason: Some("the approval handler failed without an answer".into()),
            }),
        }
    }
}

struct PendingGuard {
    run: Arc<RunAllowances>,
    key: PendingKey,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        lock(&self.run.pending).remove(&self.key);
    }
}

/// A poisoned lock only means another thread panicked while holding it; the sets stay usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn request(host: &str, tool: &str) -> AskRequest {
        AskRequest {
            host: host.into(),
            port: 443,
            tool: tool.into(),
            tool_call_id: "call".into(),
        }
    }

    fn counting(answer: AskAnswer, delay: Duration) -> (Arc<dyn Asker>, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&count);
        let asker = move |_request: AskRequest| {
            seen.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            async move {
                tokio::time::sleep(delay).await;
                answer
            }
        };
        (Arc::new(asker), count)
    }

    #[tokio::test]
    async fn concurrent_questions_share_one_answer() {
        let run = RunAllowances::new();
        let (asker, count) = counting(AskAnswer::Approve, Duration::from_millis(100));
        let asks = (0..5).map(|_| {
            let run = Arc::clone(&run);
            let asker = Arc::clone(&asker);
            tokio::spawn(async move {
                run.ask(&asker, request("a.test", "shell"), Duration::from_secs(5))
                    .await
            })
        });
        // All five are started before any is awaited.
        let asks: Vec<_> = asks.collect();
        for outcome in futures_join(asks.into_iter()).await {
            assert_eq!(outcome, AskOutcome::Answered(AskAnswer::Approve));
        }
        assert_eq!(count.load(Ordering::SeqCst), 1, "asked once");
        // Approve is for those connections only: the next one asks again.
        run.ask(&asker, request("a.test", "shell"), Duration::from_secs(5))
            .await;
        assert_eq!(count.load(Ordering::SeqCst), 2);
        // Another tool asks for itself.
        run.ask(&asker, request("a.test", "other"), Duration::from_secs(5))
            .await;
        assert_eq!(count.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn always_holds_for_the_rest_of_the_run() {
        let run = RunAllowances::new();
        let (asker, count) = counting(AskAnswer::Always, Duration::ZERO);
        let first = run
            .ask(&asker, request("a.test", "shell"), Duration::from_secs(5))
            .await;
        assert_eq!(first, AskOutcome::Answered(AskAnswer::Always));
        let later = run
            .ask(
                &asker,
                request("a.test", "other-tool"),
                Duration::from_secs(5),
            )
            .await;
        assert_eq!(later, AskOutcome::AlreadyAllowed);
        assert_eq!(count.load(Ordering::SeqCst), 1);
        assert_eq!(run.always(), vec![("a.test".to_string(), 443)]);
        // Another run knows nothing of it.
        let other_run = RunAllowances::new();
        let fresh = other_run
            .ask(&asker, request("a.test", "shell"), Duration::from_secs(5))
            .await;
        assert_eq!(fresh, AskOutcome::Answered(AskAnswer::Always));
    }

    #[tokio::test]
    async fn an_approval_for_the_next_call_is_taken_by_one_call_only() {
        let run = RunAllowances::new();
        run.answer_next_call("a.test", 443, "shell", AskAnswer::Approve);
        run.answer_next_call(
            "b.test",
            443,
            "shell",
            AskAnswer::Deny {
                reason: Some("no".into()),
            },
        );
        let (asker, count) = counting(AskAnswer::Deny { reason: None }, Duration::ZERO);
        let call = |id: &str, tool: &str| AskRequest {
            tool_call_id: id.into(),
            ..request("a.test", tool)
        };
        let timeout = Duration::from_secs(5);
        // Another tool does not take it.
        let other = run.ask(&asker, call("c1", "cli_execute"), timeout).await;
        assert!(matches!(
            other,
            AskOutcome::Answered(AskAnswer::Deny { .. })
        ));
        // The first call of the tool takes it, for every connection it makes.
        for _ in 0..3 {
            let taken = run.ask(&asker, call("c2", "shell"), timeout).await;
            assert_eq!(taken, AskOutcome::AnsweredBefore(AskAnswer::Approve));
        }
        let denied = AskRequest {
            host: "b.test".into(),
            ..call("c2", "shell")
        };
        assert!(matches!(
            run.ask(&asker, denied, timeout).await,
            AskOutcome::AnsweredBefore(AskAnswer::Deny { reason: Some(_) })
        ));
        // The next call is asked again.
        let later = run.ask(&asker, call("c3", "shell"), timeout).await;
        assert!(matches!(
            later,
            AskOutcome::Answered(AskAnswer::Deny { .. })
        ));
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn silence_and_failure_are_refusals() {
        let run = RunAllowances::new();
        let (slow, _) = counting(AskAnswer::Approve, Duration::from_secs(30));
        let outcome = run
            .ask(&slow, request("a.test", "shell"), Duration::from_millis(50))
            .await;
        assert!(
            matches!(outcome, AskOutcome::Answered(AskAnswer::Deny { reason: Some(reason) }) if reason.contains("nobody answered"))
        );
        let panicking: Arc<dyn Asker> = Arc::new(|_request: AskRequest| async move {
            if true {
                panic!("handler bug");
            }
            AskAnswer::Approve
        });
        let outcome = run
            .ask(
                &panicking,
                request("b.test", "shell"),
                Duration::from_secs(5),
            )
            .await;
        assert!(matches!(
            outcome,
            AskOutcome::Answered(AskAnswer::Deny { .. })
        ));
        // The failed question does not stay pending.
        let (asker, count) = counting(AskAnswer::Approve, Duration::ZERO);
        run.ask(&asker, request("b.test", "shell"), Duration::from_secs(5))
            .await;
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    async fn futures_join<T: Send + 'static>(
        handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
    ) -> Vec<T> {
        let mut out = Vec::new();
        for handle in handles {
            out.push(handle.await.unwrap());
        }
        out
    }
}
