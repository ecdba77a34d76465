//! The `phiguard models …` sub-commands as plain functions (no clap types): `list`, `pull`
//! (through a [`DownloadManager`], with a progress bar; Ctrl-C cancels and keeps the partial
//! download), `import`, `rm` and `verify`. Each returns the text to print; the caller maps
//! errors to exit codes.

use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};

use super::catalog::Catalog;
use super::download::Downloader;
use super::error::{ModelError, Result};
use super::manager::{DownloadInfo, DownloadManager, DownloadObserver};
use super::store::{FileStatus, Installed, ModelSource, Store};

/// A table of the catalog and the installed models: id, status (`bundled`, `installed`,
/// `imported`, `partial`, `available`, `build` for an entry built on the machine, `missing`),
/// family, parameters, size and licence.
///
/// # Errors
/// [`super::ModelError::Io`] if the store cannot be listed.
pub fn list(store: &Store, catalog: &Catalog) -> Result<String> {
    let installed = store.installed()?;
    let mut rows: Vec<[String; 6]> = Vec::new();
    for e in catalog.entries() {
        let here = installed.iter().find(|m| m.id == e.id);
        let status = match (here, e.bundled) {
            (Some(_), true) => "bundled",
            (None, true) => "missing",
            (Some(_), false) => "installed",
            (None, false) if e.build.is_some() => "build",
            (None, false) if store.partial_dir(&e.id).is_ok_and(|d| d.is_dir()) => "partial",
            (None, false) => "available",
        };
        let size = match here {
            Some(m) => human_bytes(m.size_bytes),
            None => format!("~{}", human_bytes(e.approx_size_bytes())),
        };
        rows.push([
            e.id.clone(),
            status.to_owned(),
            e.family.clone(),
            format!("{}M", e.params_millions),
            size,
            e.license.clone(),
        ]);
    }
    for m in installed.iter().filter(|m| catalog.get(&m.id).is_none()) {
        let status = match m.source {
            ModelSource::Bundled => "bundled",
            ModelSource::Imported => "imported",
            ModelSource::Downloaded => "installed",
        };
        rows.push([
            m.id.clone(),
            status.to_owned(),
            m.family.clone(),
            "-".to_owned(),
            human_bytes(m.size_bytes),
            m.license.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    let header = ["ID", "STATUS", "FAMILY", "PARAMS", "SIZE", "LICENSE"].map(str::to_owned);
    Ok(table(&header, &rows))
}

/// Downloads a catalog model with a progress bar on stderr (hidden when `show_progress` is
/// false or stderr is not a terminal). The pull goes through a [`DownloadManager`] like the
/// admin API's; Ctrl-C cancels it there, and the partial files stay for a resume.
///
/// # Errors
/// As [`Downloader::pull`].
pub async fn pull(
    downloader: &Downloader,
    store: &Store,
    id: &str,
    show_progress: bool,
) -> Result<Installed> {
    let bar = if show_progress {
        ProgressBar::new(0)
    } else {
        ProgressBar::hidden()
    };
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:20!} [{bar:32}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    let manager = DownloadManager::new();
    let pull = match manager.start(downloader, store, id, Bar(bar.clone())) {
        Ok(pull) => pull,
        Err(e) => {
            let e = ModelError::from(e);
            bar.abandon_with_message(e.to_string());
            return Err(e);
        }
    };
    let watcher = tokio::spawn({
        let (manager, id) = (manager.clone(), pull.id().to_owned());
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                // Finished already when it fails: nothing left to stop.
                let _ = manager.cancel(&id);
            }
        }
    });
    let result = pull.run().await;
    watcher.abort();
    result
}

/// The progress bar of [`pull`], as its [`DownloadObserver`].
struct Bar(ProgressBar);

impl DownloadObserver for Bar {
    fn progress(&self, info: &DownloadInfo, file: &str) {
        self.0.set_length(info.total_bytes);
        self.0.set_position(info.bytes);
        if !file.is_empty() {
            self.0.set_message(file.to_owned());
        }
    }

    fn finished(&self, _info: &DownloadInfo, outcome: &Result<Installed>) {
        match outcome {
            Ok(_) => self.0.finish_with_message("done"),
            Err(e) => self.0.abandon_with_message(e.to_string()),
        }
    }
}

/// Imports a local model folder; returns a one-line summary.
///
/// # Errors
/// As [`Store::import`].
pub fn import(store: &Store, dir: &Path, id: Option<&str>) -> Result<String> {
    let m = store.import(dir, id)?;
    Ok(format!(
        "imported {} ({}, {}, {} labels)",
        m.id,
        m.family,
        human_bytes(m.size_bytes),
        m.labels.len()
    ))
}

/// Removes an installed model (or its partial download); returns a one-line summary.
///
/// # Errors
/// As [`Store::remove`].
pub fn rm(store: &Store, id: &str) -> Result<String> {
    store.remove(id)?;
    Ok(format!("removed {id}"))
}

/// Re-hashes a model's files; returns the report text and whether every file matched.
///
/// # Errors
/// As [`Store::verify`].
pub fn verify(store: &Store, id: &str) -> Result<(String, bool)> {
    let report = store.verify(id)?;
    let rows: Vec<[String; 2]> = report
        .files
        .iter()
        .map(|f| {
            let status = match f.status {
                FileStatus::Ok => "ok",
                FileStatus::Mismatch => "CHANGED",
                FileStatus::Missing => "MISSING",
            };
            [f.name.clone(), status.to_owned()]
        })
        .collect();
    let mut text = table(&["FILE".to_owned(), "STATUS".to_owned()], &rows);
    let ok = report.ok();
    text.push_str(if ok {
        "all files match\n"
    } else {
        "verification failed: the model's files changed since installation\n"
    });
    Ok((text, ok))
}

/// `1.5 MB`-style size (powers of 1000, as model sizes are quoted).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn table<const N: usize>(header: &[String; N], rows: &[[String; N]]) -> String {
    let mut widths = header.each_ref().map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::error::io;

    #[test]
    fn sizes_read_like_model_cards() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(7524), "7.5 kB");
        assert_eq!(human_bytes(568_000_000), "568.0 MB");
    }

    #[test]
    fn list_shows_catalog_and_imports() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(io("tempdir"))?;
        let store = Store::with_bundled(tmp.path().join("m"), None)?;
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hub/phiguard-test/tiny-bert");
        store.import(&fixture, Some("local/tiny"))?;
        let text = list(&store, &Catalog::builtin()?)?;
        let line = |id: &str| text.lines().find(|l| l.starts_with(id)).map(str::to_owned);
        assert!(text.starts_with("ID"));
        assert!(line("phiguard-deid").is_some_and(|l| l.contains("missing")));
        assert!(line("OpenMed/OpenMed-PII-SuperClinical-Small-44M-v1")
            .is_some_and(|l| l.contains("available") && l.contains("deberta-v2")));
        assert!(line("local/tiny").is_some_and(|l| l.contains("imported")));
        let (report, ok) = verify(&store, "local/tiny")?;
        assert!(ok, "{report}");
        Ok(())
    }
}
