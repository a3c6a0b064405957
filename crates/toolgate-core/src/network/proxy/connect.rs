//! Every connection the proxy makes goes through [`open`]: judge the host, ask when the policy
//! says so, resolve the name (the proxy's own resolver, with a timeout), check every address,
//! and connect only to an address that was checked. No second resolution happens between the
//! check and the connect, so DNS rebinding has nothing to swap.

use std::net::{IpAddr, SocketAddr};

use tokio::net::TcpStream;

use super::session::{Failure, Refusal, Session};
use crate::network::ask::{AskAnswer, AskOutcome, AskRequest};
use crate::network::host::Host;
use crate::network::policy::{Denial, HostVerdict};
use crate::network::record::{DecidedBy, Decision};

/// Most addresses of one name that are tried in turn (all of them are checked).
const MAX_ADDRESSES_TRIED: usize = 8;

pub(crate) async fn open(
    session: &mut Session,
    host: &Host,
    port: u16,
) -> Result<TcpStream, Refusal> {
    session.target(host, port);
    if !session.within_limit() {
        return Err(session.over_limit());
    }
    decide(session, host, port).await?;
    let config = std::sync::Arc::clone(&session.call.config);
    let addresses = match host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => {
            match tokio::time::timeout(config.resolve_timeout, (config.lookup)(name.clone())).await
            {
                Err(_) => {
                    return Err(session.fail(
                        Failure::TimedOut,
                        format!(
                            "resolving {name} took longer than {} s",
                            config.resolve_timeout.as_secs()
                        ),
                    ))
                }
                Ok(Err(err)) => {
                    return Err(session.fail(
                        Failure::Unresolved,
                        format!("{name} could not be resolved ({err})"),
                    ))
                }
                Ok(Ok(addresses)) if addresses.is_empty() => {
                    return Err(session.fail(
                        Failure::Unresolved,
                        format!("{name} resolved to no address"),
                    ))
                }
                Ok(Ok(addresses)) => addresses,
            }
        }
    };
    let checked = check_addresses(session, host, port, addresses)?;
    let deadline = tokio::time::Instant::now() + config.connect_timeout;
    let mut last_error = None;
    for ip in checked.into_iter().take(MAX_ADDRESSES_TRIED) {
        let address = SocketAddr::new(ip, port);
        match tokio::time::timeout_at(deadline, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                session.connected(address);
                return Ok(stream);
            }
            Ok(Err(err)) => last_error = Some(format!("{address}: {err}")),
            Err(_) => {
                return Err(session.fail(
                    Failure::TimedOut,
                    format!(
                        "connecting took longer than {} s",
                        config.connect_timeout.as_secs()
                    ),
                ))
            }
        }
    }
    Err(session.fail(
        Failure::Refused,
        last_error.unwrap_or_else(|| "no address to connect to".into()),
    ))
}

/// The host-level decision, asking the run's handler when the policy says so.
async fn decide(session: &mut Session, host: &Host, port: u16) -> Result<(), Refusal> {
    let context = session.context();
    match context.policy.judge_host(host, port) {
        HostVerdict::Deny(denial) => Err(session.deny(denial)),
        HostVerdict::Allow { rule } => {
            session.decide(Decision::Allowed, DecidedBy::Rule, Some(rule));
            Ok(())
        }
        HostVerdict::Ask => {
            let request = AskRequest {
                host: host.to_string(),
                port,
                tool: context.tool.clone(),
                tool_call_id: context.tool_call_id.clone(),
            };
            let run = std::sync::Arc::clone(&context.run);
            let answered = run.answered(&request);
            let ended = session.call_ended();
            let asker = context
                .asker
                .clone()
                .filter(|_| answered.is_none() && ended.is_none());
            let Some(asker) = asker else {
                if let Some(outcome) = answered {
                    return settle(session, outcome);
                }
                let why = ended
                    .as_deref()
                    .or(context.nobody_to_ask.as_deref())
                    .unwrap_or("this call has no approval handler");
                let reason = format!(
                    "{} is not in network.allow, and network.ask has nobody to ask ({why})",
                    host.with_port(port)
                );
                return Err(session.deny(Denial {
                    decided_by: DecidedBy::NoHandler,
                    rule: None,
                    reason,
                    fix: Some(format!("allow it with network.allow: [\"{host}\"]")),
                }));
            };
            let timeout = session.call.config.ask_timeout;
            settle(session, run.ask(&asker, request, timeout).await)
        }
    }
}

/// Records how a question about a host ended: through, or refused with the reason.
fn settle(session: &mut Session, outcome: AskOutcome) -> Result<(), Refusal> {
    match outcome {
        AskOutcome::AlreadyAllowed => {
            session.decide(Decision::Allowed, DecidedBy::RunAllowance, None)
        }
        AskOutcome::Answered(AskAnswer::Approve)
        | AskOutcome::AnsweredBefore(AskAnswer::Approve) => {
            session.decide(Decision::AskedApproved, DecidedBy::User, None)
        }
        AskOutcome::Answered(AskAnswer::Deferred { reason })
        | AskOutcome::AnsweredBefore(AskAnswer::Deferred { reason }) => {
            return Err(session.deny(Denial {
                decided_by: DecidedBy::Deferred,
                rule: None,
                reason,
                fix: None,
            }));
        }
        AskOutcome::AnsweredBefore(AskAnswer::Always) => {
            session.decide(Decision::Allowed, DecidedBy::RunAllowance, None)
        }
        AskOutcome::Answered(AskAnswer::Always) => {
            session.decide(Decision::Always, DecidedBy::User, None)
        }
        AskOutcome::Answered(AskAnswer::Deny { reason })
        | AskOutcome::AnsweredBefore(AskAnswer::Deny { reason }) => {
            let reason = match reason {
                Some(reason) if !reason.trim().is_empty() => {
                    format!("denied when asked: {}", reason.trim())
                }
                _ => "denied when asked".to_string(),
            };
            return Err(session.deny(Denial {
                decided_by: DecidedBy::User,
                rule: None,
                reason,
                fix: None,
            }));
        }
    }
    Ok(())
}

/// Checks every address the name resolved to. A deny entry reaching any of them refuses the
/// connection; internal addresses no allow entry covers are left out, and when none is left
/// the connection is refused with the first one's reason. Only what is returned is connected
/// to.
fn check_addresses(
    session: &mut Session,
    host: &Host,
    port: u16,
    addresses: Vec<IpAddr>,
) -> Result<Vec<IpAddr>, Refusal> {
    let mut checked = Vec::new();
    let mut first_refusal = None;
    for ip in addresses {
        match session.context().policy.judge_address(host, ip, port) {
            Ok(()) => {
                if !checked.contains(&ip) {
                    checked.push(ip);
                }
            }
            Err(denial) if denial.decided_by == DecidedBy::Rule => return Err(session.deny(denial)),
            Err(denial) => {
                first_refusal.get_or_insert(denial);
            }
        }
    }
    match (checked.is_empty(), first_refusal) {
        (true, Some(denial)) => Err(session.deny(denial)),
        _ => Ok(checked),
    }
}
