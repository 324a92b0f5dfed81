//! How list methods page, written once for the gateway and the fakes: a
//! bounded `limit` (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]) and an
//! opaque `cursor`, the previous page's `nextCursor`. Lists the gateway
//! builds in memory (agents, models, tools, environments) page with
//! [`page_after`]: the cursor names the last item of the previous page.

use super::bounded::Cursor;
use super::error::ApiError;

pub use super::caps::{DEFAULT_LIMIT, MAX_LIMIT};

/// The page size for an asked `limit`: the default, clamped to
/// `1..=MAX_LIMIT`.
pub fn limit(asked: Option<u32>) -> u32 {
    asked.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
}

/// One page of `items` (in their list's order): those after the item
/// whose `id` is `cursor` (from the start without one), at most
/// [`limit`]`(asked)`, and the next page's cursor when more follow. A
/// cursor that names no item (it was deleted since) is `cursor_expired`:
/// list again from the start.
pub fn page_after<T>(
    mut items: Vec<T>,
    cursor: Option<&str>,
    asked: Option<u32>,
    id: impl Fn(&T) -> &str,
) -> Result<(Vec<T>, Option<Cursor>), ApiError> {
    if let Some(cursor) = cursor {
        let Some(at) = items.iter().position(|item| id(item) == cursor) else {
            return Err(super::refuse::cursor_item_gone());
        };
        items.drain(..=at);
    }
    let limit = limit(asked) as usize;
    let more = items.len() > limit;
    items.truncate(limit);
    let next = more
        .then(|| items.last().map(|item| Cursor::new(id(item).to_owned())))
        .flatten();
    Ok((items, next))
}
