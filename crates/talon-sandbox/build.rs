//! Obtains the pinned `quickjs.wasm` from the npm package `quickjs-wasi`.
//!
//! Order of sources:
//! 1. `TALON_QUICKJS_WASM=/path/to/quickjs.wasm`: a local copy, checked
//!    against the pinned SHA-256 of the module.
//! 2. The cache (`$TALON_CACHE_DIR`, else `$XDG_CACHE_HOME/talon`, else
//!    `$HOME/.cache/talon`): a module fetched earlier and checked again.
//! 3. `npm pack quickjs-wasi@<version>`: the tarball's SHA-512 must equal
//!    the pinned npm integrity, then `package/quickjs.wasm` is extracted and
//!    its SHA-256 checked.
//!
//! Any failure is a build error that says what to do. Nothing fetched is
//! committed; the module is copied into `OUT_DIR` and embedded from there.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a build script talks to cargo through stdout and reports failures on stderr"
)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use sha2::{Digest, Sha256, Sha512};

const PACKAGE: &str = "quickjs-wasi";
const VERSION: &str = "3.7.0";
/// `npm view quickjs-wasi@3.7.0 dist.integrity`
const TARBALL_INTEGRITY: &str = "sha512-6nOShBtCglrQL6yH+hptIfEdA1WlSmvY/Mm5Ypn9IvtsaDsrYIg8x+xoIXQt02w66a0f1eLTAj1lhfgAbJ4WVw==";
/// SHA-256 of `package/quickjs.wasm` inside that tarball.
const WASM_SHA256: &str = "c0bd8f296e18cf074969f6401b9ecb72609a1323818ec2b9bf7a8f8d740d1363";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=TALON_QUICKJS_WASM");
    println!("cargo::rerun-if-env-changed=TALON_CACHE_DIR");
    if let Err(message) = run() {
        eprintln!("\nerror: talon-sandbox cannot obtain quickjs.wasm: {message}\n");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?);
    let wasm = if let Ok(local) = std::env::var("TALON_QUICKJS_WASM") {
        let bytes =
            std::fs::read(&local).map_err(|e| format!("TALON_QUICKJS_WASM={local}: {e}"))?;
        check_wasm(&bytes).map_err(|e| format!("TALON_QUICKJS_WASM={local}: {e}"))?;
        bytes
    } else {
        let cache = cache_dir()?
            .join("npm")
            .join(format!("{PACKAGE}-{VERSION}"));
        let cached = cache.join("quickjs.wasm");
        match std::fs::read(&cached) {
            Ok(bytes) if check_wasm(&bytes).is_ok() => bytes,
            _ => {
                let bytes = fetch_with_npm(&cache)?;
                write_atomic(&cached, &bytes)?;
                bytes
            }
        }
    };
    write_atomic(&out_dir.join("quickjs.wasm"), &wasm)?;
    println!("cargo::rustc-env=TALON_QUICKJS_WASI_VERSION={VERSION}");
    println!("cargo::rustc-env=TALON_QUICKJS_WASM_SHA256={WASM_SHA256}");
    Ok(())
}

fn cache_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("TALON_CACHE_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("talon"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        return Ok(PathBuf::from(home).join(".cache").join("talon"));
    }
    Err("no cache directory: set TALON_CACHE_DIR or HOME".into())
}

fn check_wasm(bytes: &[u8]) -> Result<(), String> {
    let digest = hex(&Sha256::digest(bytes));
    if digest == WASM_SHA256 {
        Ok(())
    } else {
        Err(format!(
            "SHA-256 mismatch: expected {WASM_SHA256}, got {digest}"
        ))
    }
}

fn fetch_with_npm(cache: &Path) -> Result<Vec<u8>, String> {
    std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let spec = format!("{PACKAGE}@{VERSION}");
    let output = Command::new("npm")
        .args(["pack", &spec, "--silent", "--pack-destination"])
        .arg(cache)
        .output()
        .map_err(|e| {
            format!(
                "running `npm pack {spec}` failed ({e}). Install Node.js and npm \
                 (e.g. `apt-get install -y nodejs npm`) or point TALON_QUICKJS_WASM at a \
                 verified copy of quickjs.wasm"
            )
        })?;
    if !output.status.success() {
        return Err(format!(
            "`npm pack {spec}` exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let tarball = cache.join(format!("{PACKAGE}-{VERSION}.tgz"));
    let tgz = std::fs::read(&tarball).map_err(|e| format!("{}: {e}", tarball.display()))?;
    let integrity = format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha512::digest(&tgz))
    );
    if integrity != TARBALL_INTEGRITY {
        let _ = std::fs::remove_file(&tarball);
        return Err(format!(
            "integrity mismatch for {spec}: expected {TARBALL_INTEGRITY}, got {integrity}"
        ));
    }
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tgz.as_slice()));
    let entries = archive
        .entries()
        .map_err(|e| format!("{spec} tarball: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("{spec} tarball: {e}"))?;
        let is_module = entry
            .path()
            .map(|p| p.as_ref() == Path::new("package/quickjs.wasm"))
            .unwrap_or(false);
        if is_module {
            let mut bytes = Vec::new();
            entry
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{spec} tarball: {e}"))?;
            check_wasm(&bytes).map_err(|e| format!("{spec}: package/quickjs.wasm {e}"))?;
            return Ok(bytes);
        }
    }
    Err(format!("{spec} tarball has no package/quickjs.wasm"))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if std::fs::read(path).is_ok_and(|existing| existing == bytes) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
