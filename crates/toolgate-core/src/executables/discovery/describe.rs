//! Answering protocol tools: from the previous snapshot, from the on-disk cache, else by
//! running `description`, at most `parallelism` at a time.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::scan::{scan_all, Found, ScannedDirectory};
use super::snapshot::{ProtocolOutcome, Snapshot};
use super::{CacheMode, DiscoveryOptions, DiscoveryStats};
use crate::executables::cache::{default_cache_dir, DescriptionCache, Fingerprint};
use crate::executables::protocol;

/// What is known before any description runs, and what is left to ask.
pub(super) struct Plan {
    pub(super) scanned: Vec<ScannedDirectory>,
    pub(super) snapshot: Snapshot,
    pub(super) answers: HashMap<PathBuf, ProtocolOutcome>,
    pub(super) to_describe: Vec<(PathBuf, Fingerprint)>,
    pub(super) cache: DescriptionCache,
    pub(super) stats: DiscoveryStats,
}

/// Scans the directories and answers every protocol tool it can from memory, then from the
/// disk cache (blocking file system work).
pub(super) fn plan(options: &DiscoveryOptions, previous: &Snapshot, force: bool) -> Plan {
    let mut stats = DiscoveryStats::default();
    let (scanned, mut snapshot, listed) = scan_all(&options.directories, previous, force);
    stats.listed_directories = listed;

    let mut answers: HashMap<PathBuf, ProtocolOutcome> = HashMap::new();
    let mut unknown: Vec<(PathBuf, Fingerprint)> = Vec::new();
    let mut asked = HashSet::new();
    for found in scanned.iter().flat_map(|dir| &dir.found) {
        let Found::Protocol {
            real, fingerprint, ..
        } = found
        else {
            continue;
        };
        if !asked.insert(real.clone()) {
            continue; // two symlinks to one program: one answer
        }
        match previous.protocol.get(real) {
            Some((known, outcome)) if !force && known == fingerprint => {
                stats.from_memory += 1;
                answers.insert(real.clone(), outcome.clone());
                snapshot
                    .protocol
                    .insert(real.clone(), (*fingerprint, outcome.clone()));
            }
            _ => unknown.push((real.clone(), *fingerprint)),
        }
    }

    // The disk cache is only opened when memory did not know everything, so a refresh of an
    // unchanged registry neither reads nor writes it.
    let mut cache = DescriptionCache::disabled();
    if !unknown.is_empty() && options.cache != CacheMode::Off {
        if let Some(dir) = options.cache_dir.clone().or_else(default_cache_dir) {
            cache = DescriptionCache::open(&dir);
        }
    }
    let mut to_describe = Vec::new();
    for (real, fingerprint) in unknown {
        let cached = (options.cache == CacheMode::Use && !force)
            .then(|| cache.get(&real, &fingerprint).cloned())
            .flatten();
        match cached {
            Some(description) => {
                stats.from_cache += 1;
                snapshot
                    .protocol
                    .insert(real.clone(), (fingerprint, Ok(description.clone())));
                answers.insert(real, Ok(description));
            }
            None => to_describe.push((real, fingerprint)),
        }
    }
    Plan {
        scanned,
        snapshot,
        answers,
        to_describe,
        cache,
        stats,
    }
}

/// Runs `description` for every tool, at most `options.parallelism` at once.
pub(super) async fn describe_all(
    tools: Vec<(PathBuf, Fingerprint)>,
    options: &DiscoveryOptions,
) -> Vec<(PathBuf, Fingerprint, ProtocolOutcome)> {
    let permits = Arc::new(tokio::sync::Semaphore::new(options.parallelism));
    let env = Arc::new(options.env.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for (index, (real, fingerprint)) in tools.into_iter().enumerate() {
        let permits = Arc::clone(&permits);
        let env = Arc::clone(&env);
        let sandbox = options.sandbox.clone();
        let timeout = options.description_timeout;
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("never closed");
            let outcome = protocol::describe(&real, &env, timeout, sandbox.as_ref())
                .await
                .map_err(|refusal| refusal.reason);
            (index, real, fingerprint, outcome)
        });
    }
    let mut results = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(result) => results.push(result),
            Err(err) => std::panic::resume_unwind(err.into_panic()),
        }
    }
    results.sort_by_key(|(index, ..)| *index);
    results
        .into_iter()
        .map(|(_, real, fingerprint, outcome)| (real, fingerprint, outcome))
        .collect()
}
