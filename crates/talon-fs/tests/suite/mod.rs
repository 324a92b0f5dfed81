//! Shared helpers: an `FsError` reduced to a comparable value, FIFOs made
//! without `nix`, and a guard that fails a call which blocks instead of
//! hanging the suite.

mod caps;
mod failures;
mod regular;
mod special;
mod symlinks;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use talon_fs::FsError;

/// An [`FsError`] as a value tests compare whole (`std::io::Error` is not
/// `PartialEq`, so an I/O failure is kept as its errno).
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    NotFound(PathBuf),
    NotRegular(PathBuf, &'static str),
    TooLarge(PathBuf, u64),
    NotUtf8(PathBuf),
    Io(PathBuf, Option<i32>),
}

impl From<FsError> for Shape {
    fn from(error: FsError) -> Self {
        match error {
            FsError::NotFound { path } => Shape::NotFound(path),
            FsError::NotRegular { path, kind } => Shape::NotRegular(path, kind),
            FsError::TooLarge { path, cap } => Shape::TooLarge(path, cap),
            FsError::NotUtf8 { path } => Shape::NotUtf8(path),
            FsError::Io { path, source } => Shape::Io(path, source.raw_os_error()),
        }
    }
}

/// A result with its error reduced to a [`Shape`].
pub fn shaped<T>(result: talon_fs::Result<T>) -> Result<T, Shape> {
    result.map_err(Shape::from)
}

/// Makes a FIFO at `path` with the `mkfifo` command.
pub fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}: {status}", path.display());
}

/// Runs `f` on a thread and waits for its answer: a call that blocks (an
/// open of a FIFO with no writer, a read of an endless device) fails the
/// test after a generous deadline instead of hanging the suite.
pub fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the call blocked (or panicked) instead of answering")
}
