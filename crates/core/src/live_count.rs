//! The process's count of live objects (allocated through the registry, not yet freed),
//! kept per thread: each thread adds to a counter only it writes (a plain load and store), and
//! [`total`] sums them. A shared atomic counter cost two locked instructions per object, about
//! a tenth of a construction and release in CPython (issue 18's W4).
//!
//! Locking: `SHARDS` (the live threads' counters) and `RETIRED` change together under the
//! `SHARDS` mutex when a thread exits, so a sum never counts an exiting thread twice or not at
//! all. A counter is written only by its thread and read by anyone (relaxed: the count is
//! exact once the threads that changed it are joined or otherwise synchronised with).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

/// The counters of live threads, and of exited ones ready for reuse (zeroed).
struct Shards {
    live: Vec<&'static AtomicI64>,
    spare: Vec<&'static AtomicI64>,
}

static SHARDS: Mutex<Shards> = Mutex::new(Shards { live: Vec::new(), spare: Vec::new() });
/// What exited threads counted, and changes made while a thread's own counter was gone.
static RETIRED: AtomicI64 = AtomicI64::new(0);

fn shards() -> std::sync::MutexGuard<'static, Shards> {
    SHARDS.lock().unwrap_or_else(|e| e.into_inner())
}

/// This thread's counter, registered on first use and folded into `RETIRED` at thread exit.
struct ThreadShard(&'static AtomicI64);

impl ThreadShard {
    fn register() -> Self {
        let mut shards = shards();
        let counter = shards.spare.pop().unwrap_or_else(|| Box::leak(Box::new(AtomicI64::new(0))));
        shards.live.push(counter);
        ThreadShard(counter)
    }
}

impl Drop for ThreadShard {
    fn drop(&mut self) {
        let mut shards = shards();
        RETIRED.fetch_add(self.0.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        shards.live.retain(|c| !std::ptr::eq(*c, self.0));
        shards.spare.push(self.0);
    }
}

thread_local! {
    static SHARD: ThreadShard = ThreadShard::register();
}

/// Count `delta` more live objects.
#[inline]
pub(crate) fn add(delta: i64) {
    let counted = SHARD.try_with(|shard| {
        let counter = shard.0;
        counter.store(counter.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    });
    if counted.is_err() {
        // This thread's counter is gone (a free during thread-local destruction).
        RETIRED.fetch_add(delta, Ordering::Relaxed);
    }
}

/// Live objects in the process: every thread's count and the retired ones.
pub(crate) fn total() -> i64 {
    let shards = shards();
    RETIRED.load(Ordering::Relaxed) + shards.live.iter().map(|c| c.load(Ordering::Relaxed)).sum::<i64>()
}
