//! Symlinks as the last component: `Refuse` refuses every one (whatever it
//! points at, dangling or looping), `Follow` follows to a regular file only
//! and applies the type check to the target; symlinks in earlier
//! components are always followed (no path confinement).

use std::os::unix::fs::symlink;
use std::path::Path;

use talon_fs::{Symlinks, open_regular, read_capped, read_capped_to_string};

use super::{Shape, mkfifo, promptly, shaped};

/// `read_capped` on `path` under the no-blocking guard.
fn read(path: &Path, symlinks: Symlinks) -> Result<Vec<u8>, Shape> {
    let path = path.to_owned();
    promptly(move || shaped(read_capped(&path, 1 << 16, symlinks)))
}

#[test]
fn a_symlink_to_a_file_is_followed_or_refused_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("target.txt"), "x").unwrap();
    let link = dir.path().join("link");
    symlink("target.txt", &link).unwrap();
    assert_eq!(read(&link, Symlinks::Follow), Ok(b"x".to_vec()));
    assert_eq!(
        read(&link, Symlinks::Refuse),
        Err(Shape::NotRegular(link.clone(), "symlink"))
    );
    assert_eq!(
        shaped(open_regular(&link, Symlinks::Refuse)).map(drop),
        Err(Shape::NotRegular(link.clone(), "symlink"))
    );
    assert_eq!(
        shaped(read_capped_to_string(&link, 1, Symlinks::Follow)),
        Ok("x".to_owned())
    );
}

#[test]
fn a_chain_of_symlinks_is_followed_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("end.txt"), "end").unwrap();
    symlink("end.txt", p.join("l1")).unwrap();
    symlink("l1", p.join("l2")).unwrap();
    symlink(p.join("l2"), p.join("l3")).unwrap();
    assert_eq!(read(&p.join("l3"), Symlinks::Follow), Ok(b"end".to_vec()));
    assert_eq!(
        read(&p.join("l3"), Symlinks::Refuse),
        Err(Shape::NotRegular(p.join("l3"), "symlink"))
    );
}

#[test]
fn a_followed_symlink_still_meets_the_type_check_and_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    mkfifo(&p.join("fifo"));
    std::fs::create_dir(p.join("dir")).unwrap();
    std::fs::write(p.join("big"), [b'a'; 100]).unwrap();
    let cases = [
        ("to-fifo", p.join("fifo"), "FIFO"),
        ("to-dir", p.join("dir"), "directory"),
        ("to-zero", "/dev/zero".into(), "character device"),
        ("to-null", "/dev/null".into(), "character device"),
    ];
    for (name, target, kind) in cases {
        let link = p.join(name);
        symlink(&target, &link).unwrap();
        // The error names the path asked for, not the target.
        assert_eq!(
            read(&link, Symlinks::Follow),
            Err(Shape::NotRegular(link.clone(), kind)),
            "{name}"
        );
        assert_eq!(
            read(&link, Symlinks::Refuse),
            Err(Shape::NotRegular(link.clone(), "symlink")),
            "{name}"
        );
    }
    let link = p.join("to-big");
    symlink("big", &link).unwrap();
    assert_eq!(
        shaped(read_capped(&link, 99, Symlinks::Follow)),
        Err(Shape::TooLarge(link.clone(), 99))
    );
}

#[test]
fn a_dangling_symlink_is_not_found_when_followed_and_refused_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("dangling");
    symlink("nowhere", &link).unwrap();
    assert_eq!(
        read(&link, Symlinks::Follow),
        Err(Shape::NotFound(link.clone()))
    );
    assert_eq!(
        read(&link, Symlinks::Refuse),
        Err(Shape::NotRegular(link.clone(), "symlink"))
    );
}

#[test]
fn a_symlink_loop_fails_without_spinning() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    symlink("loop2", p.join("loop1")).unwrap();
    symlink("loop1", p.join("loop2")).unwrap();
    symlink("self", p.join("self")).unwrap();
    for name in ["loop1", "self"] {
        let link = p.join(name);
        assert_eq!(
            read(&link, Symlinks::Follow),
            Err(Shape::Io(link.clone(), Some(libc::ELOOP))),
            "{name}"
        );
        assert_eq!(
            read(&link, Symlinks::Refuse),
            Err(Shape::NotRegular(link.clone(), "symlink")),
            "{name}"
        );
    }
}

#[test]
fn symlinks_before_the_last_component_are_followed_even_when_refusing() {
    // `Refuse` is about the last component only (`O_NOFOLLOW`); confining
    // paths is the caller's business.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir(p.join("real")).unwrap();
    std::fs::write(p.join("real/f.txt"), "inside").unwrap();
    symlink("real", p.join("alias")).unwrap();
    let through = p.join("alias/f.txt");
    for symlinks in [Symlinks::Follow, Symlinks::Refuse] {
        assert_eq!(
            read(&through, symlinks),
            Ok(b"inside".to_vec()),
            "{symlinks:?}"
        );
    }
    // And a symlink to a directory, as the last component, is a symlink
    // to refuse or a directory to refuse.
    let alias = p.join("alias");
    assert_eq!(
        read(&alias, Symlinks::Refuse),
        Err(Shape::NotRegular(alias.clone(), "symlink"))
    );
    assert_eq!(
        read(&alias, Symlinks::Follow),
        Err(Shape::NotRegular(alias.clone(), "directory"))
    );
}

#[test]
fn a_symlink_swapped_for_a_file_is_judged_as_it_is_at_read_time() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("target"), "t").unwrap();
    let path = p.join("name");
    std::fs::write(&path, "plain").unwrap();
    assert_eq!(read(&path, Symlinks::Refuse), Ok(b"plain".to_vec()));
    std::fs::remove_file(&path).unwrap();
    symlink("target", &path).unwrap();
    assert_eq!(
        read(&path, Symlinks::Refuse),
        Err(Shape::NotRegular(path.clone(), "symlink"))
    );
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    assert_eq!(
        read(&path, Symlinks::Follow),
        Err(Shape::NotRegular(path.clone(), "FIFO"))
    );
}
