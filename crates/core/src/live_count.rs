//! The process's count of live objects (allocated through the registry, not yet freed),
//! kept per thread: each thread adds to a counter only it writes (a plain load and store), and
//! [`total`] sums them. A shared atomic counter cost two locked instructions per object, about
//! a tenth of a construction and release in CPython (issue 18's W4).
//!
//! A thread finds its counter by its [`thread_token`] in a fixed table, as it finds its spare
//! cell (`thread_spares`): no thread-local access on the way, which in a shared library is a
//! `__tls_get_addr` call, one per allocation and one per free (~11 instructions each).
//!
//! Locking: a thread claims a free counter with a compare-and-swap of its owner word (from its
//! thread-local claim, whose destructor hands it back); a thread that cannot (its probe run
//! taken, or exiting) adds to `RETIRED` instead. Handing back (the count folded into
//! `RETIRED`, the counter zeroed and freed) and [`total`] both run under `EXITS`, so a sum
//! never counts an exiting thread twice or not at all. A counter is written only by its
//! owner and read by anyone (relaxed: the count is exact once the threads that changed it
//! are joined or otherwise synchronised with).

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::thread_spares::{probe_start, thread_token, PROBES, CELLS};

/// One thread's counter, alone on its cache line (its owner writes it on every allocation).
#[repr(C, align(64))]
struct Counter {
    /// The owning thread's token; 0 while free.
    owner: AtomicUsize,
    count: AtomicI64,
}

const _: () = assert!(std::mem::size_of::<Counter>() == 64);

static COUNTERS: [Counter; CELLS] =
    [const { Counter { owner: AtomicUsize::new(0), count: AtomicI64::new(0) } }; CELLS];
/// What exited threads counted, and what threads without a counter added.
static RETIRED: AtomicI64 = AtomicI64::new(0);
/// Held while a thread hands its counter back and while [`total`] sums.
static EXITS: Mutex<()> = Mutex::new(());

fn exits() -> std::sync::MutexGuard<'static, ()> {
    EXITS.lock().unwrap_or_else(|e| e.into_inner())
}

/// This thread's claim on a counter, handed back when the thread exits.
struct Claim(&'static Counter);

impl Drop for Claim {
    fn drop(&mut self) {
        let _exits = exits();
        RETIRED.fetch_add(self.0.count.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        // Release: the next owner sees the counter zeroed.
        self.0.owner.store(0, Ordering::Release);
    }
}

thread_local! {
    static CLAIM: std::cell::RefCell<Option<Claim>> = const { std::cell::RefCell::new(None) };
}

/// Count `delta` more live objects.
#[inline]
pub(crate) fn add(delta: i64) {
    let token = thread_token();
    // The first counter of the thread's probe run: nearly always its own.
    let counter = &COUNTERS[probe_start(token)];
    if counter.owner.load(Ordering::Relaxed) == token {
        counter.count.store(counter.count.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    } else {
        add_elsewhere(token, delta);
    }
}

/// [`add`] for a thread whose counter is not the first of its probe run, or that has none yet.
#[cold]
#[inline(never)]
fn add_elsewhere(token: usize, delta: i64) {
    let start = probe_start(token);
    let run = || (0..PROBES).map(|i| &COUNTERS[(start + i) % CELLS]);
    let counter = run().find(|c| c.owner.load(Ordering::Relaxed) == token).or_else(|| {
        // Claimed only together with the thread-local that hands it back; none once the
        // thread's thread-locals are being destroyed.
        CLAIM
            .try_with(|claim| {
                let counter = run().find(|c| {
                    // Acquire: the previous owner zeroed the counter before it let go.
                    c.owner.compare_exchange(0, token, Ordering::Acquire, Ordering::Relaxed).is_ok()
                })?;
                *claim.borrow_mut() = Some(Claim(counter));
                Some(counter)
            })
            .ok()
            .flatten()
    });
    match counter {
        Some(c) => c.count.store(c.count.load(Ordering::Relaxed) + delta, Ordering::Relaxed),
        None => {
            RETIRED.fetch_add(delta, Ordering::Relaxed);
        }
    }
}

/// Live objects in the process: every thread's count and the retired ones.
pub(crate) fn total() -> i64 {
    let _exits = exits();
    RETIRED.load(Ordering::Relaxed) + COUNTERS.iter().map(|c| c.count.load(Ordering::Relaxed)).sum::<i64>()
}
