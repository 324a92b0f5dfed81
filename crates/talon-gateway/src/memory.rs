//! Giving the heap that ended runs freed back to the operating system.
//!
//! glibc's allocator keeps freed memory in its arenas for reuse and only
//! returns the top of each heap. A run allocates and frees tens of
//! megabytes (model turns, a VM's buffers, tool catalogs) across worker
//! threads, so on a long-lived gateway RSS creeps up over the first
//! thousand runs and stays there while the heap in use is flat (measured
//! in `docs/benchmarks.md`). Streams do the same: an unread stream's
//! frames, once it closes, leave free pages behind. `malloc_trim(0)` also
//! releases the free pages inside each heap; a trimmer calls it on a
//! blocking thread, at most once per [`TRIM_EVERY`], and only after runs
//! have ended (or streams and sockets closed) since the last time. On
//! other allocators it does nothing.

use std::time::Duration;

/// The least time between two trims.
pub(crate) const TRIM_EVERY: Duration = Duration::from_secs(2);

/// Trims after what `ended` counts (runs, closed streams) ends, until it
/// closes.
pub(crate) async fn trim_after(mut ended: tokio::sync::watch::Receiver<u64>) {
    while ended.changed().await.is_ok() {
        tokio::time::sleep(TRIM_EVERY).await;
        // Whatever ended during the sleep is covered by this trim.
        ended.borrow_and_update();
        match tokio::task::spawn_blocking(release_free_heap).await {
            Ok(released) => tracing::trace!(released, "trimmed the heap"),
            Err(error) => tracing::debug!(%error, "the heap trim did not run"),
        }
    }
}

/// Returns free heap pages to the operating system; whether any were.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_heap() -> bool {
    #[allow(
        unsafe_code,
        reason = "malloc_trim takes no pointers and only walks glibc's own arenas under their locks"
    )]
    // SAFETY: see the reason above; it is safe to call from any thread.
    let released = unsafe { libc::malloc_trim(0) };
    released != 0
}

/// Other allocators return memory on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_heap() -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    fn rss_bytes() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
        let pages: u64 = statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        pages * 4096
    }

    #[test]
    fn free_pages_inside_the_heap_go_back_to_the_system() {
        // 48 MiB in blocks below the mmap threshold, then one block above
        // them that stays: the freed ones are a hole inside the heap,
        // which glibc keeps until it is trimmed.
        let blocks: Vec<Vec<u8>> = (0..12_288).map(|i| vec![i as u8; 4096]).collect();
        let pin = vec![1u8; 4096];
        drop(blocks);
        let before = rss_bytes();
        assert!(release_free_heap());
        let after = rss_bytes();
        assert!(
            before.saturating_sub(after) > 32 << 20,
            "RSS {before} before the trim, {after} after"
        );
        assert_eq!(pin.len(), 4096);
    }

    #[tokio::test(start_paused = true)]
    async fn the_trimmer_stops_with_the_engine() {
        let (ended, watched) = tokio::sync::watch::channel(0u64);
        let trimmer = tokio::spawn(trim_after(watched));
        ended.send_modify(|n| *n += 1);
        tokio::time::sleep(TRIM_EVERY * 2).await;
        drop(ended);
        tokio::time::timeout(TRIM_EVERY * 4, trimmer)
            .await
            .expect("the trimmer ended")
            .expect("without panicking");
    }
}
