//! Links the `talon` binary with packed relative relocations (`DT_RELR`)
//! where the C library that will load it understands them.
//!
//! A position-independent Rust binary carries one 24-byte `.rela.dyn`
//! entry per pointer in its read-only data; the loader reads them all at
//! every start, so they sit in every process's resident memory (7.6 MB of
//! the debug binary, a `config check`'s largest single cost). `DT_RELR`
//! packs them into a bitmap (60 KB). glibc reads it from 2.36; an older
//! glibc refuses to load such a binary, so the flag is only passed when
//! building natively against glibc 2.36 or newer.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if relr_is_understood() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// A native glibc build (the binary will be loaded by this glibc or a
/// newer one) whose glibc is 2.36 or newer.
fn relr_is_understood() -> bool {
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    let glibc_target = std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
        && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    native && glibc_target && glibc_at_least(2, 36)
}

/// The host's glibc, as `getconf GNU_LIBC_VERSION` reports it
/// ("glibc 2.36"); anything else (no getconf, musl) counts as too old.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    out.status.success() && found >= (major, minor)
}
