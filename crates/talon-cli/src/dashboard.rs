//! `talon dashboard`: a new one-time sign-in link to the dashboard of the
//! gateway whose store a config names (an operator's tool, like `talon
//! token create`: it writes the code's hash to the store, so any node of
//! that store honours it). The link carries the code in its fragment,
//! which a browser never sends to a server; it works once, within 15
//! minutes, and signs in for 12 hours at most
//! (`talon_gateway::browser`). With no root admin token live (revoked,
//! expired) it mints nothing: a link is always under a token an admin can
//! revoke.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use talon_gateway::browser;

use crate::gateway::{DEFAULT_LISTEN, fail, runtime, store_config};

/// `talon dashboard`.
#[derive(Debug, clap::Args)]
pub struct DashboardArgs {
    /// What the sign-in may do: `admin` (the default), `app`, `viewer`, or
    /// `observer` (reads everything, acts on nothing).
    #[arg(long, default_value = "admin")]
    preset: String,
    /// The dashboard's URL as a browser reaches it, its base path included
    /// (default `http://127.0.0.1:7420` and `gateway.controlUi.basePath`).
    #[arg(long)]
    url: Option<String>,
    /// The view to land on after signing in (`/inbox`, `/runs/run_1`).
    #[arg(long)]
    next: Option<String>,
    /// The config file (default: $TALON_CONFIG, else ~/.talon/talon.json5
    /// if present).
    #[arg(long)]
    config: Option<PathBuf>,
}

/// Mints the link and prints it, alone on its line.
pub fn run(args: DashboardArgs) -> ExitCode {
    let preset = match crate::tokens::preset_named(&args.preset) {
        Ok(preset) => preset,
        Err(code) => return code,
    };
    let (config, store) = match store_config(args.config.as_deref()) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let base_path = match config.dashboard_base_path() {
        Ok(base) => base,
        Err(e) => return fail(2, &e.to_string()),
    };
    let url = args
        .url
        .clone()
        .unwrap_or_else(|| format!("http://{DEFAULT_LISTEN}{base_path}"));
    let parsed = url::Url::parse(&url);
    let plain = parsed.as_ref().is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https")
            && u.username().is_empty()
            && u.password().is_none()
            && u.query().is_none()
            && u.fragment().is_none()
            && !u.path().ends_with("//")
            && u.host().is_some()
    });
    if !plain {
        return fail(
            2,
            &format!("--url {url:?}: give the gateway's http(s) URL, e.g. http://127.0.0.1:7420"),
        );
    }
    if let Some(next) = &args.next
        && !browser::is_local_path(next)
    {
        return fail(
            2,
            &format!("--next {next:?}: give a path of the dashboard, e.g. /inbox"),
        );
    }
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let store = match talon_store::open(&store).await {
            Ok(store) => store,
            Err(e) => return fail(1, &e.to_string()),
        };
        let now = store.now_ms();
        let admin = match browser::root_admin(&store, now).await {
            Ok(Some(admin)) => admin,
            Ok(None) => {
                return fail(
                    1,
                    "no live admin token in this store (revoked or expired): a sign-in link is minted under it",
                );
            }
            Err(e) => return fail(1, &e.to_string()),
        };
        let minted =
            browser::mint_login(&store, preset.scopes().to_vec(), Some(&admin), now).await;
        store.close().await;
        match minted {
            Ok(code) => {
                let _ = writeln!(std::io::stdout(), "{}", code.link(&url, args.next.as_deref()));
                ExitCode::SUCCESS
            }
            Err(e) => fail(1, &e.to_string()),
        }
    })
}
