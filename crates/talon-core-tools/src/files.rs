//! `read`, `write` and `edit`: bounded operations on one regular file
//! opened through [`super::path::open`], plus the dispatch of the file
//! tools (`list` and `grep` live in [`super::search`]).

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::path::{self, Access};
use talon_tools::{ToolError, ToolErrorCode};

use super::{MAX_EDIT_BYTES, MAX_READ_BYTES, search};

/// The string argument `key` of tool `tool`.
pub(super) fn text_arg<'a>(tool: &str, args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args[key].as_str().ok_or_else(|| {
        ToolError::new(
            ToolErrorCode::InvalidArgument,
            format!("{tool} needs a string {key:?}"),
        )
    })
}

/// The optional non-negative integer argument `key`.
fn count_arg(tool: &str, args: &Value, key: &str) -> Result<Option<u64>, ToolError> {
    match &args[key] {
        Value::Null => Ok(None),
        value => value.as_u64().map(Some).ok_or_else(|| {
            ToolError::new(
                ToolErrorCode::InvalidArgument,
                format!("{tool}: {key:?} must be a non-negative integer"),
            )
        }),
    }
}

fn io_error(rel: &Path, error: &std::io::Error) -> ToolError {
    ToolError::new(
        ToolErrorCode::IoError,
        format!("{}: {error}", rel.display()),
    )
}

/// Runs file tool `name` (blocking).
pub(super) fn run(root: &Path, name: &str, args: &Value) -> Result<Value, ToolError> {
    match name {
        "read" => read(root, args),
        "write" => write(
            root,
            text_arg(name, args, "path")?,
            text_arg(name, args, "content")?,
        ),
        "edit" => edit(
            root,
            text_arg(name, args, "path")?,
            text_arg(name, args, "old")?,
            text_arg(name, args, "new")?,
        ),
        "list" => search::list(
            root,
            args["path"].as_str().unwrap_or("."),
            args["glob"].as_str(),
        ),
        "grep" => search::grep(
            root,
            text_arg(name, args, "pattern")?,
            args["path"].as_str().unwrap_or("."),
            args["glob"].as_str(),
        ),
        other => Err(ToolError::new(
            ToolErrorCode::UnknownTool,
            format!("no core tool {other:?}"),
        )),
    }
}

/// `bytes` cut to the end of its last complete UTF-8 character, when the
/// cut fell inside one (so a following window starts on a character).
pub(super) fn trim_partial_char(bytes: &mut Vec<u8>) {
    if let Err(e) = std::str::from_utf8(bytes)
        && e.error_len().is_none()
    {
        bytes.truncate(e.valid_up_to());
    }
}

/// Reads a window of at most [`MAX_READ_BYTES`] from `offset`, never more.
fn read(root: &Path, args: &Value) -> Result<Value, ToolError> {
    let given = text_arg("read", args, "path")?;
    let offset = count_arg("read", args, "offset")?.unwrap_or(0);
    let limit = count_arg("read", args, "limit")?
        .map_or(MAX_READ_BYTES, |l| usize::try_from(l).unwrap_or(usize::MAX))
        .min(MAX_READ_BYTES);
    let opened = path::open(root, given, Access::Read)?;
    let rel = opened.rel;
    let mut file = opened.file;
    let size = opened.size;
    let mut window = Vec::with_capacity(limit.min(usize::try_from(size).unwrap_or(usize::MAX)));
    if offset < size {
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| io_error(&rel, &e))?;
        (&mut file)
            .take(limit as u64)
            .read_to_end(&mut window)
            .map_err(|e| io_error(&rel, &e))?;
    }
    let end = offset.saturating_add(window.len() as u64);
    let truncated = end < size;
    if truncated {
        trim_partial_char(&mut window);
    }
    let next = offset.saturating_add(window.len() as u64);
    let mut out = json!({"path": rel.display().to_string(),
                         "content": String::from_utf8_lossy(&window),
                         "bytes": size, "truncated": truncated});
    if offset > 0 {
        out["offset"] = json!(offset);
    }
    if truncated {
        out["nextOffset"] = json!(next);
    }
    Ok(out)
}

/// A regular file's whole content and its real path in the workspace, if
/// it exists and holds at most `max` bytes (`Ok(None)` when it does not
/// exist); opened as `read` opens it.
pub(super) fn snapshot(
    root: &Path,
    given: &str,
    max: u64,
) -> Result<Option<(String, Vec<u8>)>, ToolError> {
    let opened = match path::open(root, given, Access::Read) {
        Ok(opened) => opened,
        Err(error) if error.code == ToolErrorCode::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let rel = opened.rel;
    if opened.size > max {
        return Err(ToolError::new(
            ToolErrorCode::TooLarge,
            format!("{} is over {max} bytes", rel.display()),
        ));
    }
    let mut bytes = Vec::new();
    (&opened.file)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(&rel, &e))?;
    if bytes.len() as u64 > max {
        return Err(ToolError::new(
            ToolErrorCode::TooLarge,
            format!("{} grew over {max} bytes", rel.display()),
        ));
    }
    Ok(Some((rel.display().to_string(), bytes)))
}

/// Creates or overwrites a regular file (never through a link that leaves).
fn write(root: &Path, given: &str, content: &str) -> Result<Value, ToolError> {
    let opened = path::open(root, given, Access::Write)?;
    let rel = opened.rel;
    let mut file = opened.file;
    file.write_all(content.as_bytes())
        .map_err(|e| io_error(&rel, &e))?;
    Ok(json!({"path": rel.display().to_string(), "bytes": content.len()}))
}

/// Replaces the single occurrence of `old` in a file of at most
/// [`MAX_EDIT_BYTES`].
fn edit(root: &Path, given: &str, old: &str, new: &str) -> Result<Value, ToolError> {
    if old.is_empty() {
        return Err(ToolError::new(
            ToolErrorCode::InvalidArgument,
            "edit: \"old\" must not be empty",
        ));
    }
    let opened = path::open(root, given, Access::Edit)?;
    let rel = opened.rel;
    let shown = rel.display().to_string();
    let too_large = || {
        ToolError::new(
            ToolErrorCode::TooLarge,
            format!(
                "{shown}: the file is larger than {MAX_EDIT_BYTES} bytes, too large to edit; use exec"
            ),
        )
    };
    if opened.size > MAX_EDIT_BYTES {
        return Err(too_large());
    }
    let mut file = opened.file;
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(&rel, &e))?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(too_large());
    }
    let content = String::from_utf8(bytes).map_err(|_| {
        ToolError::new(
            ToolErrorCode::NotText,
            format!("{shown}: the file is not UTF-8 text"),
        )
    })?;
    match content.matches(old).count() {
        0 => Err(ToolError::new(
            ToolErrorCode::NoMatch,
            format!("{shown}: the text to replace was not found"),
        )),
        1 => {
            let updated = content.replacen(old, new, 1);
            file.seek(SeekFrom::Start(0))
                .and_then(|_| file.write_all(updated.as_bytes()))
                .and_then(|()| file.set_len(updated.len() as u64))
                .map_err(|e| io_error(&rel, &e))?;
            Ok(json!({"path": shown, "replaced": 1}))
        }
        n => Err(ToolError::new(
            ToolErrorCode::AmbiguousMatch,
            format!("{shown}: the text occurs {n} times; give more context so it occurs once"),
        )),
    }
}
