//! Special files are refused, never opened into a hang: FIFOs (with and
//! without a writer), directories, character devices (`/dev/zero`,
//! `/dev/null`), Unix sockets; and `kind_name` for each type.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use talon_fs::{Symlinks, kind_name, open_regular, read_capped, read_capped_to_string};

use super::{Shape, mkfifo, promptly, shaped};

const BOTH: [Symlinks; 2] = [Symlinks::Follow, Symlinks::Refuse];

/// Every entry point on `path`, each with both symlink rules, each run
/// under the no-blocking guard.
fn every_read(path: &Path) -> Vec<Result<(), Shape>> {
    let path = path.to_owned();
    promptly(move || {
        let mut outcomes = Vec::new();
        for symlinks in BOTH {
            outcomes.push(shaped(open_regular(&path, symlinks)).map(drop));
            outcomes.push(shaped(read_capped(&path, 1 << 20, symlinks)).map(drop));
            outcomes.push(shaped(read_capped_to_string(&path, 1 << 20, symlinks)).map(drop));
        }
        outcomes
    })
}

fn refused(path: &Path, kind: &'static str) -> Vec<Result<(), Shape>> {
    (0..6)
        .map(|_| Err(Shape::NotRegular(path.to_owned(), kind)))
        .collect()
}

#[test]
fn a_fifo_without_a_writer_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    assert_eq!(every_read(&fifo), refused(&fifo, "FIFO"));
}

#[test]
fn a_fifo_with_a_writer_holding_it_open_is_refused_and_not_drained() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    // A reader end held here lets the writer open without blocking; the
    // writer then fills the pipe with bytes a read must not consume.
    let reader = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap()
    };
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    writer.write_all(b"secret").unwrap();
    assert_eq!(every_read(&fifo), refused(&fifo, "FIFO"));
    drop(writer);
    let mut left = Vec::new();
    std::io::Read::read_to_end(&mut &reader, &mut left).unwrap();
    assert_eq!(left, b"secret");
}

#[test]
fn a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    assert_eq!(every_read(&sub), refused(&sub, "directory"));
    // The same directory named with a trailing slash or `.` components.
    for path in [dir.path().join("sub/"), dir.path().join("sub/.")] {
        assert_eq!(every_read(&path), refused(&path, "directory"), "{path:?}");
    }
}

#[test]
fn endless_and_empty_devices_are_refused_before_any_read() {
    for device in ["/dev/zero", "/dev/null", "/dev/urandom"] {
        let path = Path::new(device);
        assert_eq!(
            every_read(path),
            refused(path, "character device"),
            "{device}"
        );
    }
}

#[test]
fn a_unix_socket_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("sock");
    let _listener = UnixListener::bind(&sock).unwrap();
    assert_eq!(every_read(&sock), refused(&sock, "socket"));
}

#[test]
fn kind_name_names_every_file_type() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let sock = dir.path().join("sock");
    let _listener = UnixListener::bind(&sock).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let names: Vec<(PathBuf, &str)> = [
        file.clone(),
        dir.path().to_owned(),
        fifo,
        sock,
        link,
        PathBuf::from("/dev/null"),
    ]
    .into_iter()
    .map(|path| {
        let name = kind_name(&std::fs::symlink_metadata(&path).unwrap().file_type());
        (path, name)
    })
    .collect();
    assert_eq!(
        names,
        [
            (file, "regular file"),
            (dir.path().to_owned(), "directory"),
            (dir.path().join("fifo"), "FIFO"),
            (dir.path().join("sock"), "socket"),
            (dir.path().join("link"), "symlink"),
            (PathBuf::from("/dev/null"), "character device"),
        ]
    );
}

#[test]
fn kind_name_names_a_block_device_when_one_is_present() {
    // Containers often have no block device at all; the loop device is the
    // likeliest to exist. Without one there is nothing to name.
    let Some(device) = ["/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1"]
        .into_iter()
        .map(Path::new)
        .find(|p| {
            use std::os::unix::fs::FileTypeExt;
            std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_block_device())
        })
    else {
        #[allow(clippy::print_stderr, reason = "a skipped case says why")]
        {
            eprintln!("skipped: no block device to name in this environment");
        }
        return;
    };
    assert_eq!(
        kind_name(&std::fs::symlink_metadata(device).unwrap().file_type()),
        "block device"
    );
    // Refused before it is opened: nothing is read from the disk.
    assert_eq!(
        shaped(read_capped(device, 1, Symlinks::Follow)),
        Err(Shape::NotRegular(device.to_owned(), "block device"))
    );
}
