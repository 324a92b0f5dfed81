//! `talon tools search|describe`: search a catalog file from the shell.
//!
//! A catalog file is a JSON array of tools (`name`, `description`,
//! `parameters`, optional `source`, `owner`, `label`). Exit status: 0 on
//! success, 1 when an id is not in the catalog, 2 for bad usage or a bad
//! file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use talon_fs::Symlinks;
use talon_protocol::ToolDefinition;
use talon_tools::{Catalog, CatalogBuilder, RunScope, Semantic, ToolPolicy};

/// `talon tools ...`
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Rank a catalog's tools for a query (or for each line of a file).
    Search(SearchArgs),
    /// Print one catalog entry in full, schema included.
    Describe(DescribeArgs),
}

/// Arguments of `talon tools search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The catalog file.
    #[arg(long)]
    catalog: PathBuf,
    /// At most this many hits (clamped to 1..=50).
    #[arg(long, default_value_t = 8)]
    limit: usize,
    /// One query per line; prints one JSON line per query, in order.
    #[arg(long, conflicts_with = "query")]
    queries: Option<PathBuf>,
    /// Rank by BM25F alone, without the embedding table.
    #[arg(long)]
    lexical: bool,
    /// The query.
    #[arg(required_unless_present = "queries")]
    query: Option<String>,
}

/// Arguments of `talon tools describe`.
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The catalog file.
    #[arg(long)]
    catalog: PathBuf,
    /// The catalog id, `<source>:<owner>:<tool-name>`.
    id: String,
}

pub fn run(command: ToolsCommand) -> ExitCode {
    let result = match command {
        ToolsCommand::Search(args) => search(&args),
        ToolsCommand::Describe(args) => describe(&args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "talon tools: {message}");
            ExitCode::from(2)
        }
    }
}

/// The largest catalog file read (10,000 tools with schemas are ~20 MB).
const MAX_CATALOG_BYTES: u64 = 64 << 20;
/// The largest queries file read.
const MAX_QUERIES_BYTES: u64 = 16 << 20;

fn load(path: &Path, semantic: Semantic) -> Result<Catalog, String> {
    let text = talon_fs::read_capped_to_string(path, MAX_CATALOG_BYTES, Symlinks::Follow)
        .map_err(|e| e.to_string())?;
    let tools: Vec<ToolDefinition> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a JSON array of tools: {e}", path.display()))?;
    let catalog = CatalogBuilder::new(RunScope::default())
        .semantic(semantic)
        .declared(tools)
        .build(&ToolPolicy::new())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // A file the operator wrote should hold no tool a run would leave out.
    if !catalog.rejected().is_empty() {
        let reasons: Vec<String> = catalog.rejected().iter().map(ToString::to_string).collect();
        return Err(format!("{}: {}", path.display(), reasons.join("; ")));
    }
    Ok(catalog)
}

fn search(args: &SearchArgs) -> Result<ExitCode, String> {
    let semantic = if args.lexical {
        Semantic::Off
    } else {
        Semantic::Shared
    };
    let catalog = load(&args.catalog, semantic)?;
    let limit = args.limit.clamp(1, 50);
    let queries: Vec<String> = match (&args.queries, &args.query) {
        (Some(path), _) => {
            talon_fs::read_capped_to_string(path, MAX_QUERIES_BYTES, Symlinks::Follow)
                .map_err(|e| e.to_string())?
                .lines()
                .map(str::to_owned)
                .collect()
        }
        (None, Some(query)) => vec![query.clone()],
        (None, None) => return Err("a query or --queries FILE is required".into()),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for query in queries {
        let hits = catalog.search(&query, limit);
        let line = serde_json::to_string(&hits).map_err(|e| e.to_string())?;
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn describe(args: &DescribeArgs) -> Result<ExitCode, String> {
    let catalog = load(&args.catalog, Semantic::Off)?;
    let Some(entry) = catalog.describe(&args.id) else {
        let _ = writeln!(
            std::io::stderr(),
            "talon tools: no tool with id {:?} in {}",
            args.id,
            args.catalog.display()
        );
        return Ok(ExitCode::from(1));
    };
    let mut value = serde_json::to_value(&entry.tool).map_err(|e| e.to_string())?;
    if let Some(object) = value.as_object_mut() {
        object.insert("id".into(), serde_json::Value::String(entry.id.clone()));
    }
    let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
    writeln!(std::io::stdout(), "{text}").map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}
