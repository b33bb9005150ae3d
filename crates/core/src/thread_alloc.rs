//! Per-thread allocation state, in one cache line per thread found by its [`thread_token`] (as
//! `thread_spares` finds a spare cell): no thread-local access on the way, which in a shared
//! library is a `__tls_get_addr` call (~11 instructions) per allocation and per free.
//!
//! - The process's count of live objects (allocated through the registry, not yet freed): each
//!   thread adds to a counter only it writes (a plain load and store), and [`total`] sums them.
//!   A shared atomic counter cost two locked instructions per object, about a tenth of a
//!   construction and release in CPython (issue 18's W4).
//! - The frontend allocator's last freed block ([`Own::keep_block`], [`Own::take_block`]): the next
//!   allocation of the same layout on the thread gets it back, still in the L1 cache.
//!   mimalloc hands out a page's other blocks first (a free goes to the page's local list,
//!   which it collects only once the page's free list is empty), so an object made and dropped
//!   in a loop walked a whole 64 KiB page of 96-byte blocks, each allocation a cache miss.
//!
//! The owner word stays in the cell here (unlike `thread_spares`, whose owner words live apart):
//! the lookup runs on every allocation and free, and through a separate owner array it cost 10
//! instructions per construct-and-drop (Python W4 1089 -> 1099); a probe reads another thread's
//! cell only after a hash collision, and allocations run mostly under a language's lock.
//!
//! Locking: a thread claims a free cell with a compare-and-swap of its owner word (from its
//! thread-local claim, whose destructor hands it back); a thread that cannot (its probe run
//! taken, or exiting) adds to `RETIRED` and keeps no block. Handing back (the count folded into
//! `RETIRED`, the block freed, the cell zeroed and freed) and [`total`] both run under `EXITS`,
//! so a sum never counts an exiting thread twice or not at all. A cell is written only by its
//! owner; its count is read by anyone (relaxed: the count is exact once the threads that
//! changed it are joined or otherwise synchronised with), its block by no one else.

use std::alloc::Layout;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::thread_owners::{probe_start, thread_token, CELLS, PROBES};

/// Blocks larger than this are not kept: a thread that stops allocating holds at most this
/// much.
pub(crate) const MAX_KEPT_BLOCK: usize = 512;

/// One thread's allocation state, alone on its cache line (its owner writes it on every
/// allocation and free).
#[repr(C, align(64))]
struct ThreadCell {
    /// The owning thread's token; 0 while free.
    owner: AtomicUsize,
    /// Objects this thread allocated minus those it freed.
    count: AtomicI64,
    /// The last block the frontend allocator freed on this thread, kept; null when none.
    block: AtomicPtr<u8>,
    /// That block's layout: size and alignment.
    block_size: AtomicUsize,
    block_align: AtomicUsize,
}

const _: () = assert!(std::mem::size_of::<ThreadCell>() == 64);

static TABLE: [ThreadCell; CELLS] = [const {
    ThreadCell {
        owner: AtomicUsize::new(0),
        count: AtomicI64::new(0),
        block: AtomicPtr::new(std::ptr::null_mut()),
        block_size: AtomicUsize::new(0),
        block_align: AtomicUsize::new(0),
    }
}; CELLS];
/// What exited threads counted, and what threads without a cell added.
static RETIRED: AtomicI64 = AtomicI64::new(0);
/// Held while a thread hands its cell back and while [`total`] sums.
static EXITS: Mutex<()> = Mutex::new(());

fn exits() -> std::sync::MutexGuard<'static, ()> {
    EXITS.lock().unwrap_or_else(|e| e.into_inner())
}

/// This thread's claim on a cell, handed back when the thread exits.
struct Claim(&'static ThreadCell);

impl Drop for Claim {
    fn drop(&mut self) {
        let cell = self.0;
        let block = cell.block.swap(std::ptr::null_mut(), Ordering::Relaxed);
        if !block.is_null() {
            let (size, align) = (cell.block_size.load(Ordering::Relaxed), cell.block_align.load(Ordering::Relaxed));
            // SAFETY: kept by `Own::keep_block`, whose caller gave up the block allocated with this layout.
            unsafe { std::alloc::dealloc(block, Layout::from_size_align_unchecked(size, align)) };
        }
        let _exits = exits();
        RETIRED.fetch_add(cell.count.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        // Release: the next owner sees the cell emptied.
        cell.owner.store(0, Ordering::Release);
    }
}

thread_local! {
    static CLAIM: std::cell::RefCell<Option<Claim>> = const { std::cell::RefCell::new(None) };
}

/// The calling thread's cell: the first of its probe run, nearly always; else found or claimed
/// out of line. `None` when it has none and cannot claim one.
#[inline(always)]
fn own_cell() -> Option<&'static ThreadCell> {
    let token = thread_token();
    first_probe(token).or_else(|| cell_elsewhere(token))
}

/// The cell of the thread of `token` if it is the first of its probe run.
#[inline(always)]
fn first_probe(token: usize) -> Option<&'static ThreadCell> {
    let cell = &TABLE[probe_start(token)];
    (cell.owner.load(Ordering::Relaxed) == token).then_some(cell)
}

#[cold]
#[inline(never)]
fn cell_elsewhere(token: usize) -> Option<&'static ThreadCell> {
    let start = probe_start(token);
    let run = || (0..PROBES).map(|i| &TABLE[(start + i) % CELLS]);
    if let Some(cell) = run().find(|c| c.owner.load(Ordering::Relaxed) == token) {
        return Some(cell);
    }
    // Claimed only together with the thread-local that hands it back; none once the thread's
    // thread-locals are being destroyed.
    CLAIM
        .try_with(|claim| {
            let cell = run().find(|c| {
                // Acquire: the previous owner emptied the cell before it let go.
                c.owner.compare_exchange(0, token, Ordering::Acquire, Ordering::Relaxed).is_ok()
            })?;
            *claim.borrow_mut() = Some(Claim(cell));
            Some(cell)
        })
        .ok()
        .flatten()
}

/// The calling thread's cell, found once for an allocation or a free and used for both its
/// count and its kept block (each looked it up on its own before: a second hash and owner
/// compare per allocation and per free). `None` inside: the thread has no cell.
#[derive(Clone, Copy)]
pub(crate) struct Own(Option<&'static ThreadCell>);

/// The calling thread's [`Own`] cell.
#[inline(always)]
pub(crate) fn own() -> Own {
    Own(own_cell())
}

/// The calling thread's [`Own`] cell when it is the first of its probe run (nearly always),
/// found with no call: for the allocator's fast path, which takes the long way on `None`.
#[inline(always)]
pub(crate) fn own_at_first_probe() -> Option<Own> {
    first_probe(thread_token()).map(|cell| Own(Some(cell)))
}

impl Own {
    /// Count `delta` more live objects.
    #[inline(always)]
    pub(crate) fn add(self, delta: i64) {
        match self.0 {
            Some(cell) => cell.count.store(cell.count.load(Ordering::Relaxed) + delta, Ordering::Relaxed),
            None => {
                RETIRED.fetch_add(delta, Ordering::Relaxed);
            }
        }
    }

    /// Keep freed `block` (of `layout`, at most [`MAX_KEPT_BLOCK`] bytes) for this thread's
    /// next allocation of that layout, in place of the block kept before, which comes back for
    /// the caller to free (the newest is the one still in the cache); `block` itself comes back
    /// when the thread has no cell.
    ///
    /// # Safety
    /// `block` was allocated by the global allocator with `layout`, and the caller gives it up.
    #[inline(always)]
    pub(crate) unsafe fn keep_block(self, block: *mut u8, layout: Layout) -> Option<(*mut u8, Layout)> {
        debug_assert!(layout.size() <= MAX_KEPT_BLOCK);
        let Some(cell) = self.0 else { return Some((block, layout)) };
        let old = cell.block.load(Ordering::Relaxed);
        let kept_before = (!old.is_null()).then(|| {
            // SAFETY: the layout stored with the kept block, a valid one.
            let layout = unsafe {
                Layout::from_size_align_unchecked(
                    cell.block_size.load(Ordering::Relaxed),
                    cell.block_align.load(Ordering::Relaxed),
                )
            };
            (old, layout)
        });
        cell.block_size.store(layout.size(), Ordering::Relaxed);
        cell.block_align.store(layout.align(), Ordering::Relaxed);
        cell.block.store(block, Ordering::Relaxed);
        kept_before
    }

    /// Does this thread keep a block (a cell-less thread keeps none)?
    #[cfg(test)]
    pub(crate) fn keeps_block(self) -> bool {
        self.0.is_some_and(|cell| !cell.block.load(Ordering::Relaxed).is_null())
    }

    /// This thread's kept block, if it has the layout of `size` and `align`: the caller owns
    /// it (as if the global allocator had just returned it). Null otherwise. (A kept block's
    /// layout is a valid one, so a caller may take the numbers unchecked when this returns a
    /// block.)
    #[inline(always)]
    pub(crate) fn take_block(self, size: usize, align: usize) -> *mut u8 {
        let Some(cell) = self.0 else { return std::ptr::null_mut() };
        let block = cell.block.load(Ordering::Relaxed);
        if block.is_null()
            || cell.block_size.load(Ordering::Relaxed) != size
            || cell.block_align.load(Ordering::Relaxed) != align
        {
            return std::ptr::null_mut();
        }
        cell.block.store(std::ptr::null_mut(), Ordering::Relaxed);
        block
    }
}

/// Live objects in the process: every thread's count and the retired ones.
pub(crate) fn total() -> i64 {
    let _exits = exits();
    RETIRED.load(Ordering::Relaxed) + TABLE.iter().map(|c| c.count.load(Ordering::Relaxed)).sum::<i64>()
}
