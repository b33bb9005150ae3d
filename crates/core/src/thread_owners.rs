//! Which thread owns each cell of a per-thread table: a thread finds its cell by hashing its
//! [`thread_token`] and probing a short run from there. `thread_spares` keeps its owner words
//! here; `thread_alloc` keeps its in its cells, on the same hash and probe run (see there).
//!
//! The owner words live apart from the cells. A cell is written by its owner on every call,
//! so a probe that read another thread's owner word in that thread's cell (a thread whose
//! hash slot was taken before it claimed) moved that cell's line between the cores on every
//! call while both threads ran. The owner words change only when a thread claims or hands
//! back a cell, so every core keeps their lines cached.
//!
//! Locking: a thread claims a free cell with a compare-and-swap of its owner word (0 to its
//! token, acquire: the previous owner emptied the cell before it let go) and hands it back
//! with a release store of 0 once the cell is empty; the owner word is otherwise only read.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Cells in a table. (`ThreadSpares::steal` scans a 64-bit mask of the claimed ones.)
pub(crate) const CELLS: usize = 64;
/// Cells a thread tries, from its hash, before giving up on a cell.
pub(crate) const PROBES: usize = 4;

/// The owner word of each cell of one table: a thread's token, 0 while free.
#[repr(C, align(64))]
pub(crate) struct Owners([AtomicUsize; CELLS]);

impl Owners {
    pub(crate) const fn new() -> Owners {
        Owners([const { AtomicUsize::new(0) }; CELLS])
    }

    /// The cell the thread of `token` owns, if it owns one in its probe run.
    #[inline(always)]
    pub(crate) fn find(&self, token: usize) -> Option<usize> {
        let start = probe_start(token);
        (0..PROBES).map(|i| (start + i) % CELLS).find(|&index| self.0[index].load(Ordering::Relaxed) == token)
    }

    /// Claim the first free cell of `token`'s probe run for it, if one is free.
    #[cold]
    pub(crate) fn claim(&self, token: usize) -> Option<usize> {
        let start = probe_start(token);
        (0..PROBES).map(|i| (start + i) % CELLS).find(|&index| {
            // Acquire: the previous owner emptied the cell before it let go.
            self.0[index].compare_exchange(0, token, Ordering::Acquire, Ordering::Relaxed).is_ok()
        })
    }

    /// Hand cell `index` back; its owner emptied it first.
    pub(crate) fn release(&self, index: usize) {
        // Release: the next owner sees the cell emptied.
        self.0[index].store(0, Ordering::Release);
    }
}

const _: () = assert!(CELLS.is_power_of_two() && CELLS <= 64);

/// The first cell a thread (`token`) tries: a multiplicative hash of its token.
#[inline(always)]
pub(crate) fn probe_start(token: usize) -> usize {
    (token >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CELLS.trailing_zeros())
}

/// A number that names the calling thread among the live ones: its thread pointer (the TLS
/// ABI's thread control block address), which the C library reuses only after the thread,
/// thread-local destructors included, is gone. One instruction on x86-64 and aarch64 Linux.
#[inline(always)]
pub fn thread_token() -> usize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    {
        let tp: usize;
        // SAFETY: the x86-64 TLS ABI keeps the thread pointer at %fs:0 (the TCB's self link);
        // reading it has no side effects.
        unsafe {
            std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags))
        };
        tp
    }
    #[cfg(all(target_arch = "aarch64", target_os = "linux", not(miri)))]
    {
        let tp: usize;
        // SAFETY: reading the thread pointer register has no side effects.
        unsafe { std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags)) };
        tp
    }
    #[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(miri))))]
    {
        thread_local! {
            static MARK: u8 = const { 0 };
        }
        MARK.with(|m| m as *const u8 as usize)
    }
}
