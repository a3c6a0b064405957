//! Finding the workers a worker may call. A path is taken as written; a bare name is looked up
//! beside the file, in its `workers/` folder and its `worker_paths`, then, as golem-forge's
//! name-based registry does, anywhere in the project, nearest folder first.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::split_document;
use crate::limits::{MAX_WORKER_SEARCH_DEPTH, MAX_WORKER_SEARCH_ENTRIES};

/// Largest worker file read to learn the name it declares.
const MAX_NAME_SCAN_BYTES: u64 = 1024 * 1024;

/// Files that mark a project root, in golem-forge's order of priority.
const PROJECT_MARKERS: [&str; 7] = [
    "golem-forge.config.yaml",
    "golem-forge.config.yml",
    ".golem-forge.json",
    ".llm-do",
    "golem-forge.config.json",
    "package.json",
    ".git",
];

/// Finds an allowed worker: a path relative to `dir`, or a bare name looked up in `bases` as a
/// file name (`<name>.worker`, `<name>.yaml`, `<name>.yml`, `<name>/index.worker`,
/// `<name>/main.worker`), then as the `name` a worker file in `bases` declares (golem-forge's
/// name-based registry: `analyzer.worker` with `name: pdf_analyzer` answers `pdf_analyzer`),
/// then in the project and in `search_paths`, the golem-forge program's `workerPaths`
/// ([`search_project`]). Also returns the file-name candidates looked at before the one found
/// (all of them when it was found by its declared name or in the project): a file made at one
/// of those would be found instead, so they are protected like the worker file.
///
/// A worker the project search finds comes with a warning when the search went through
/// `writable` (the work directory): a `.worker` file made in a nearer folder there, or one
/// declaring the name beside the worker file, would be found instead at the next load (no path
/// can be protected against that; naming the worker by its path can).
pub(super) fn find_worker(
    dir: &Path,
    bases: &[PathBuf],
    search_paths: &[PathBuf],
    entry: &str,
    writable: &Path,
) -> std::result::Result<FoundWorker, String> {
    let mut candidates = Vec::new();
    let mut searched = Vec::new();
    let found = find_worker_in(
        dir,
        bases,
        search_paths,
        entry,
        &mut candidates,
        &mut searched,
    )?;
    let overlaps = |folder: &PathBuf| folder.starts_with(writable) || writable.starts_with(folder);
    // Only a project search's result can be taken over by a file made elsewhere (a name
    // candidate is protected; a second declaration beside the worker file is an error).
    let through = (!searched.is_empty())
        .then(|| searched.iter().chain(bases).find(|folder| overlaps(folder)))
        .flatten();
    let warning = through.map(|folder| {
        format!(
            "allowed worker '{entry}' was found by searching the project ({}), and the search goes through '{}', which the agent can write (the work directory '{}'): a worker file made there would be found instead at the next load; name it by its path ('{}'), or keep the worker files outside the work directory",
            found.display(),
            folder.display(),
            writable.display(),
            pathdiff(&found, dir),
        )
    });
    let before = candidates
        .iter()
        .position(|candidate| candidate.is_file())
        .unwrap_or(candidates.len());
    candidates.truncate(before);
    Ok(FoundWorker {
        path: found,
        lookups: candidates,
        warning,
    })
}

/// A called worker's file, where a file would be found before it, and why its lookup is not
/// safe from the agent (see [`find_worker`]).
pub(super) struct FoundWorker {
    pub path: PathBuf,
    pub lookups: Vec<PathBuf>,
    pub warning: Option<String>,
}

fn find_worker_in(
    dir: &Path,
    bases: &[PathBuf],
    search_paths: &[PathBuf],
    entry: &str,
    looked_at: &mut Vec<PathBuf>,
    project_searched: &mut Vec<PathBuf>,
) -> std::result::Result<PathBuf, String> {
    let is_path = entry.contains('/')
        || [".worker", ".yaml", ".yml"]
            .iter()
            .any(|ext| entry.ends_with(ext));
    let candidates: Vec<PathBuf> = if is_path {
        vec![dir.join(entry)]
    } else {
        let mut list = Vec::new();
        for base in bases {
            for ext in ["worker", "yaml", "yml"] {
                list.push(base.join(format!("{entry}.{ext}")));
            }
            list.push(base.join(entry).join("index.worker"));
            list.push(base.join(entry).join("main.worker"));
        }
        list
    };
    looked_at.extend(candidates.iter().cloned());
    for candidate in &candidates {
        if candidate.is_file() {
            return canonical(candidate);
        }
    }
    let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    if is_path {
        return Err(format!(
            "allowed worker '{entry}' was not found; looked for {}",
            tried.join(", ")
        ));
    }
    let declared = workers_declaring(bases, entry);
    match declared.as_slice() {
        [one] => return canonical(one),
        [] => {}
        several => {
            return Err(format!(
                "allowed worker '{entry}' is declared by several files: {}; name one by its path",
                list(several)
            ))
        }
    }
    let search = search_project(dir, search_paths, entry);
    match search.found.as_slice() {
        [one] => {
            project_searched.extend(search.searched.iter().cloned());
            return canonical(one);
        }
        [] => {}
        several => {
            return Err(format!(
                "allowed worker '{entry}' matches several worker files under '{}': {}; name one by its path, or list its folder in worker_paths",
                search.searched.last().map(|p| p.display().to_string()).unwrap_or_default(),
                list(several)
            ))
        }
    }
    let cut_short = if search.cut_short {
        format!(
            " (the search stopped after {MAX_WORKER_SEARCH_ENTRIES} entries; list the worker's folder in worker_paths)"
        )
    } else {
        String::new()
    };
    Err(format!(
        "allowed worker '{entry}' was not found; looked for {}, for a worker file in {} declaring name '{entry}', and for a .worker file named or declaring '{entry}' under {}{cut_short}",
        tried.join(", "),
        list(bases),
        list(&search.searched),
    ))
}

fn canonical(path: &Path) -> std::result::Result<PathBuf, String> {
    std::fs::canonicalize(path).map_err(|err| format!("{}: {err}", path.display()))
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Deserialize)]
struct Declared {
    name: String,
}

/// The name a worker file declares, if it is small enough, parses, and has one.
fn declared_name(file: &Path) -> Option<String> {
    let fits = std::fs::metadata(file)
        .is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_NAME_SCAN_BYTES);
    let text = fits.then(|| std::fs::read_to_string(file).ok()).flatten()?;
    let (yaml, _, _) = split_document(&text, file).ok()?;
    crate::yaml::from_str::<Declared>(yaml)
        .ok()
        .map(|declared| declared.name)
}

/// The worker files directly in `bases` (and their `<dir>/index.worker`, `<dir>/main.worker`)
/// whose front matter or YAML declares `name: <name>`. Files that do not parse are skipped: they
/// are not what was asked for, and loading them is not this lookup's business.
fn workers_declaring(bases: &[PathBuf], name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for base in bases {
        let Ok(entries) = std::fs::read_dir(base) else {
            continue;
        };
        let mut files: Vec<PathBuf> = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files.push(path.join("index.worker"));
                files.push(path.join("main.worker"));
            } else if path
                .extension()
                .is_some_and(|ext| ext == "worker" || ext == "yaml" || ext == "yml")
            {
                files.push(path);
            }
        }
        files.sort();
        for file in files {
            if declared_name(&file).is_some_and(|declared| declared == name)
                && !found.contains(&file)
            {
                found.push(file);
            }
        }
    }
    found
}

/// What the project-wide search saw.
struct ProjectSearch {
    /// The matches in the nearest folder that had any.
    found: Vec<PathBuf>,
    /// The folders searched, nearest first.
    searched: Vec<PathBuf>,
    /// Whether the entry budget ran out.
    cut_short: bool,
}

/// golem-forge's registry: `.worker` files anywhere in the project whose file name
/// (`<name>.worker`), folder (`<name>/main.worker`, `<name>/index.worker`) or declared `name`
/// is `entry`. The project root is the nearest folder holding a golem-forge config,
/// `package.json` or `.git`; without one, only the worker's own folder is searched. The search
/// goes from the worker's folder up to the root, each folder recursively (hidden folders and
/// `node_modules` skipped, symlinked folders not followed), then `search_paths` (golem-forge's
/// `workerPaths`; without a program config, the root's `workers` and `.workers`); the first
/// folder with a match decides, and two matches there are an error rather than a guess.
fn search_project(dir: &Path, search_paths: &[PathBuf], entry: &str) -> ProjectSearch {
    let root = dir
        .ancestors()
        .find(|folder| PROJECT_MARKERS.iter().any(|m| folder.join(m).exists()));
    let mut levels: Vec<PathBuf> = match root {
        Some(root) => dir
            .ancestors()
            .take_while(|folder| folder.starts_with(root))
            .map(Path::to_path_buf)
            .collect(),
        None => vec![dir.to_path_buf()],
    };
    if !search_paths.is_empty() {
        levels.extend(search_paths.iter().cloned());
    } else if let Some(root) = root {
        levels.push(root.join("workers"));
        levels.push(root.join(".workers"));
    }
    let mut search = ProjectSearch {
        found: Vec::new(),
        searched: Vec::new(),
        cut_short: false,
    };
    let mut budget = MAX_WORKER_SEARCH_ENTRIES;
    let mut previous: Option<PathBuf> = None;
    for level in levels {
        if !level.is_dir() || search.searched.contains(&level) {
            continue;
        }
        let mut found = Vec::new();
        scan(
            &level,
            previous.as_deref(),
            entry,
            0,
            &mut budget,
            &mut found,
        );
        search.searched.push(level.clone());
        found.sort();
        found.dedup();
        if !found.is_empty() {
            search.found = found;
            return search;
        }
        if budget == 0 {
            search.cut_short = true;
            return search;
        }
        previous = Some(level);
    }
    search
}

/// Collects, below `folder`, the `.worker` files that answer `entry`; skips `skip` (a folder
/// already searched), hidden folders, `node_modules` and symlinked folders.
fn scan(
    folder: &Path,
    skip: Option<&Path>,
    entry: &str,
    depth: usize,
    budget: &mut usize,
    found: &mut Vec<PathBuf>,
) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let mut children: Vec<(PathBuf, bool)> = Vec::new();
    for dir_entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(kind) = dir_entry.file_type() else {
            continue;
        };
        let path = dir_entry.path();
        let name = dir_entry.file_name();
        let name = name.to_string_lossy();
        if kind.is_dir() {
            if !name.starts_with('.') && name != "node_modules" && Some(path.as_path()) != skip {
                children.push((path, true));
            }
        } else if name.ends_with(".worker") && path.is_file() {
            children.push((path, false));
        }
    }
    children.sort();
    for (path, is_dir) in children {
        if is_dir {
            if depth < MAX_WORKER_SEARCH_DEPTH {
                scan(&path, skip, entry, depth + 1, budget, found);
            }
        } else if answers(&path, entry) {
            if let Ok(path) = std::fs::canonicalize(&path) {
                found.push(path);
            }
        }
    }
}

/// Whether the `.worker` file at `path` answers the name `entry`.
fn answers(path: &Path, entry: &str) -> bool {
    let stem = path.file_stem().map(|s| s.to_string_lossy());
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|s| s.to_string_lossy());
    let is_entry_point = matches!(stem.as_deref(), Some("main" | "index"));
    stem.as_deref() == Some(entry)
        || (is_entry_point && folder.as_deref() == Some(entry))
        || declared_name(path).is_some_and(|declared| declared == entry)
}

#[cfg(test)]
mod tests;

/// `path` relative to `base` when it lies below it, else as it is.
fn pathdiff(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).map_or_else(
        |_| path.display().to_string(),
        |relative| relative.display().to_string(),
    )
}
