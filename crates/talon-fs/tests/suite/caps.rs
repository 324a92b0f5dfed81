//! The cap holds whatever the file's reported size: a sparse file of
//! 16 GiB is refused after reading one byte past the cap, a procfs file
//! that reports size 0 is read by its content, and a file growing while it
//! is read is refused.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use talon_fs::{Symlinks, read_capped, read_capped_to_string};

use super::{Shape, promptly, shaped};

#[test]
fn a_huge_sparse_file_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(16 << 30).unwrap();
    drop(file);
    for cap in [0, 1, 4096, 1 << 20] {
        let path2 = path.clone();
        assert_eq!(
            promptly(move || shaped(read_capped(&path2, cap, Symlinks::Refuse))),
            Err(Shape::TooLarge(path.clone(), cap)),
            "cap {cap}"
        );
    }
    // The string variant checks the cap before the encoding: zeros are
    // UTF-8, but too many of them are still too many.
    assert_eq!(
        shaped(read_capped_to_string(&path, 4096, Symlinks::Follow)),
        Err(Shape::TooLarge(path.clone(), 4096))
    );
}

#[test]
fn a_sparse_file_within_the_cap_reads_as_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(1 << 16).unwrap();
    drop(file);
    assert_eq!(
        shaped(read_capped(&path, 1 << 16, Symlinks::Refuse)),
        Ok(vec![0; 1 << 16])
    );
    assert_eq!(
        shaped(read_capped_to_string(&path, 1 << 16, Symlinks::Refuse)),
        Ok("\0".repeat(1 << 16))
    );
}

#[test]
fn a_procfs_file_reporting_size_zero_is_read_by_its_content() {
    // /proc/self/cmdline reports 0 bytes but holds this process's argv,
    // each argument ended by a NUL; it is stable for the process's life.
    let path = std::path::Path::new("/proc/self/cmdline");
    assert_eq!(std::fs::metadata(path).unwrap().len(), 0);
    let mut expected = Vec::new();
    for arg in std::env::args_os() {
        expected.extend_from_slice(arg.as_bytes());
        expected.push(0);
    }
    assert_eq!(
        shaped(read_capped(path, expected.len() as u64, Symlinks::Follow)),
        Ok(expected.clone())
    );
    let cap = expected.len() as u64 - 1;
    assert_eq!(
        shaped(read_capped(path, cap, Symlinks::Follow)),
        Err(Shape::TooLarge(path.to_owned(), cap))
    );
}

#[test]
fn a_file_growing_during_the_read_is_refused_while_it_grows() {
    const CAP: u64 = 1 << 20;
    const CHUNK: usize = 1 << 16;
    // Bounded so a broken cap fails the test instead of filling the disk.
    const MOST: u64 = 256 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("growing.log");
    let mut file = std::fs::File::create(&path).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (past_cap, past_cap_seen) = mpsc::channel();
    let writer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let chunk = vec![b'g'; CHUNK];
            let mut written = 0u64;
            // Appends until told to stop (or the bound), signalling once
            // the file holds more than the cap.
            while !stop.load(Ordering::Relaxed) && written < MOST {
                file.write_all(&chunk).unwrap();
                written += CHUNK as u64;
                if written > CAP && written <= CAP + CHUNK as u64 {
                    past_cap.send(()).unwrap();
                }
            }
            written
        })
    };
    // Once the file holds more than the cap, a read must end (the writer
    // is still appending) and refuse it.
    past_cap_seen.recv().unwrap();
    let got = shaped(read_capped(&path, CAP, Symlinks::Refuse));
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(got, Err(Shape::TooLarge(path.clone(), CAP)));
}

#[test]
fn a_file_grown_past_the_cap_between_reads_is_refused_on_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    std::fs::write(&path, [b'x'; 10]).unwrap();
    assert_eq!(
        shaped(read_capped(&path, 10, Symlinks::Refuse)),
        Ok(vec![b'x'; 10])
    );
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"y").unwrap();
    assert_eq!(
        shaped(read_capped(&path, 10, Symlinks::Refuse)),
        Err(Shape::TooLarge(path.clone(), 10))
    );
    // Truncated back, it fits again.
    file.set_len(3).unwrap();
    assert_eq!(
        shaped(read_capped(&path, 10, Symlinks::Refuse)),
        Ok(b"xxx".to_vec())
    );
}
