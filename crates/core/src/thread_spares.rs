//! Spare references kept per thread, for hosts whose slots no lock serialises (the JVM).
//!
//! Returning an object whose wrapper is alive hands the frontend a +1 it does not need;
//! dropping it is an atomic decrement, and the callee's conversion of the next borrowed
//! argument is an atomic increment. Serialized hosts keep that +1 in the slot word
//! (`tying::take_spare`). A JVM slot has no such lock (any thread may pass a wrapper), so the
//! +1 goes to a cell owned by the calling thread instead, and the thread's next call with the
//! same wrapper lends it (`AnyView::lent_object`): `echo(x)` then touches no atomic.
//!
//! A cell holds at most one entry: an object, one strong reference to it, and the generation
//! of the wrapper it was kept for. The protocol that lets the owner use plain loads and
//! stores while a release on another thread takes entries out:
//!
//! - The owner writes its cell only during a call that holds the entry's wrapper: it keeps a
//!   result's +1 only into an empty cell, and takes an entry only for an argument whose
//!   wrapper has the entry's generation.
//! - When a wrapper is released (closed, or cleaned after it became unreachable), no call
//!   holding it runs or will run, and every such call happened before the release (the
//!   language's guarantee: `Reference.reachabilityFence` happens-before the Cleaner's
//!   action, specified in `java.lang.ref` since JDK 23 and HotSpot's behaviour before; or
//!   the caller's promise not to close a wrapper in use). The release [`ThreadSpares::steal`]s every entry of its
//!   object and generation. Those entries are stable by the first rule (no owner writes a
//!   non-empty cell unless it holds that generation's wrapper), so a compare-and-swap on
//!   the entry's object word is the only synchronisation needed.
//!
//! So entries never outlive their wrapper and an object dies exactly when it did without
//! them; between a keep and the release the owner's calls need no atomic instruction.
//!
//! Cells are found by the thread's [`thread_token`], hashed into a fixed table with a short
//! probe (`thread_owners`, whose owner words live apart from the cells); a thread that finds
//! no free cell simply keeps no spares. A thread hands its cell back when it exits (a
//! thread-local destructor drops the entry and clears the owner).

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

use crate::arc::ObjectRef;
use crate::object::{dec_ref, ObjectHeader};
pub use crate::thread_owners::thread_token;
use crate::thread_owners::{Owners, CELLS};

/// One thread's cell, alone on its cache line (owners write theirs on every call). Its owner
/// is in the table's [`Owners`].
#[repr(C, align(64))]
struct Cell {
    /// The object of the entry, null when empty; the entry owns one strong reference.
    obj: AtomicPtr<ObjectHeader>,
    /// The generation of the wrapper the entry was kept for.
    generation: AtomicU64,
    /// The owner's own flag ([`SpareCell::mark`]); only the owner reads or writes it.
    marked: AtomicBool,
}

const _: () = assert!(std::mem::size_of::<Cell>() == 64);

impl Cell {
    const fn new() -> Cell {
        Cell {
            obj: AtomicPtr::new(std::ptr::null_mut()),
            generation: AtomicU64::new(0),
            marked: AtomicBool::new(false),
        }
    }
}

/// A table of per-thread cells; a frontend keeps one in a static.
pub struct ThreadSpares {
    owners: Owners,
    cells: [Cell; CELLS],
    /// Bit `i` set once cell `i` has an owner: what a steal scans.
    claimed: AtomicU64,
}

impl Default for ThreadSpares {
    fn default() -> Self {
        Self::new()
    }
}

impl ThreadSpares {
    pub const fn new() -> ThreadSpares {
        ThreadSpares { owners: Owners::new(), cells: [const { Cell::new() }; CELLS], claimed: AtomicU64::new(0) }
    }

    /// The calling thread's cell, claiming a free one on its first call; `None` when the
    /// cells it may use are all taken (it then keeps no spares).
    #[inline]
    pub fn cell(&'static self) -> Option<SpareCell<'static>> {
        let token = thread_token();
        match self.owners.find(token) {
            Some(index) => Some(self.spare_cell(index)),
            None => self.claim(token),
        }
    }

    /// [`ThreadSpares::cell`] without claiming one: `None` for a thread that has none.
    #[inline]
    pub fn claimed_cell(&'static self) -> Option<SpareCell<'static>> {
        self.owners.find(thread_token()).map(|index| self.spare_cell(index))
    }

    #[inline(always)]
    fn spare_cell(&'static self, index: usize) -> SpareCell<'static> {
        SpareCell { cell: &self.cells[index], _owner_thread: std::marker::PhantomData }
    }

    /// Claim a free cell of the calling thread's probe run (`token` is the thread's) and
    /// arrange to hand it back when the thread exits.
    #[cold]
    fn claim(&'static self, token: usize) -> Option<SpareCell<'static>> {
        let index = self.owners.claim(token)?;
        if OWNED.try_with(|owned| owned.0.borrow_mut().push((self, index))).is_err() {
            // The thread is exiting: nothing would hand the cell back.
            self.owners.release(index);
            return None;
        }
        self.claimed.fetch_or(1 << index, Ordering::Release);
        Some(self.spare_cell(index))
    }

    /// A wrapper of `generation` for `obj` was released: drop every entry kept for it.
    /// Returns how many there were. The caller still holds a reference to `obj` (the
    /// wrapper's, dropped after this), so none of these drops frees it.
    ///
    /// # Safety
    /// `obj` is live, and no call holding that wrapper runs or will run: every one happened
    /// before this release.
    pub unsafe fn steal(&self, obj: *mut ObjectHeader, generation: u64) -> u32 {
        if generation == 0 {
            return 0; // never kept (see `SpareCell::keep`)
        }
        let mut claimed = self.claimed.load(Ordering::Acquire);
        let mut stolen = 0;
        while claimed != 0 {
            let cell = &self.cells[claimed.trailing_zeros() as usize];
            claimed &= claimed - 1;
            // Acquire: the owner wrote the generation before publishing the object.
            if cell.obj.load(Ordering::Acquire) == obj
                && cell.generation.load(Ordering::Relaxed) == generation
                && cell.obj.compare_exchange(obj, std::ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed).is_ok()
            {
                // SAFETY: the entry's strong reference, now ours; the caller's keeps `obj` alive.
                unsafe { dec_ref(obj) };
                stolen += 1;
            }
        }
        stolen
    }

    /// Entries held right now (a snapshot, for tests and diagnostics).
    pub fn held(&self) -> usize {
        self.cells.iter().filter(|c| !c.obj.load(Ordering::Relaxed).is_null()).count()
    }
}

thread_local! {
    /// The cells the thread owns, handed back (entry dropped, owner cleared) when it exits.
    /// Only claims touch it: calls find their cell by [`thread_token`], which needs no
    /// thread-local access (a `__tls_get_addr` call in a shared library).
    static OWNED: OwnedCells = const { OwnedCells(std::cell::RefCell::new(Vec::new())) };
}

/// The tables and cell indices the thread owns.
struct OwnedCells(std::cell::RefCell<Vec<(&'static ThreadSpares, usize)>>);

impl Drop for OwnedCells {
    fn drop(&mut self) {
        for (table, index) in self.0.get_mut().drain(..) {
            let cell = &table.cells[index];
            let obj = cell.obj.load(Ordering::Acquire);
            // A release may be stealing the entry right now: whoever swaps it out drops it.
            if !obj.is_null()
                && cell.obj.compare_exchange(obj, std::ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed).is_ok()
            {
                // SAFETY: the entry's strong reference, now ours.
                unsafe { dec_ref(obj) };
            }
            cell.marked.store(false, Ordering::Relaxed);
            table.owners.release(index);
        }
    }
}

/// The calling thread's cell. Not `Send`: only its owner may use it.
pub struct SpareCell<'a> {
    cell: &'a Cell,
    _owner_thread: std::marker::PhantomData<*const ()>,
}

impl SpareCell<'_> {
    /// Take the entry if it was kept for `obj`'s wrapper of `generation`; the caller then owns
    /// its strong reference (to lend to a call).
    ///
    /// # Safety
    /// The caller holds the wrapper of `generation`, which is the one tied to `obj`, for the
    /// duration of this call.
    #[inline]
    pub unsafe fn take(&self, obj: *mut ObjectHeader, generation: u64) -> bool {
        // Only this thread writes a non-empty cell, and a release steals only entries of
        // generations whose wrappers nobody holds: an entry of `generation` is ours to take.
        if self.cell.obj.load(Ordering::Relaxed) == obj && self.cell.generation.load(Ordering::Relaxed) == generation {
            self.cell.obj.store(std::ptr::null_mut(), Ordering::Relaxed);
            true
        } else {
            false
        }
    }

    /// Keep `obj` (a strong reference the caller does not need) if the cell is empty; gives it
    /// back otherwise.
    ///
    /// # Safety
    /// The caller holds the wrapper of `generation`, which is the one tied to `obj`, for the
    /// duration of this call (so its release, which steals the entry, comes after).
    #[inline]
    pub unsafe fn keep(&self, obj: ObjectRef, generation: u64) -> Option<ObjectRef> {
        // Generation 0 names no wrapper: its releases never steal.
        if generation == 0 || !self.cell.obj.load(Ordering::Relaxed).is_null() {
            return Some(obj);
        }
        self.cell.generation.store(generation, Ordering::Relaxed);
        // Release: a steal that sees the object sees its generation.
        self.cell.obj.store(obj.into_raw(), Ordering::Release);
        None
    }

    /// Put back the entry [`SpareCell::take`] took for `obj`'s wrapper of `generation`, when
    /// the call it was lent to returned `obj` (a strong reference). `take` leaves the
    /// generation in place, so this is one store where [`SpareCell::keep`] writes both; gives
    /// `obj` back when the cell holds another entry or generation now (a nested call kept one).
    ///
    /// # Safety
    /// As [`SpareCell::keep`].
    #[inline]
    pub unsafe fn restore(&self, obj: ObjectRef, generation: u64) -> Option<ObjectRef> {
        if !self.cell.obj.load(Ordering::Relaxed).is_null()
            || self.cell.generation.load(Ordering::Relaxed) != generation
        {
            return Some(obj);
        }
        // Release: as in `keep` (the generation, this thread's own earlier write, comes first).
        self.cell.obj.store(obj.into_raw(), Ordering::Release);
        None
    }

    /// [`SpareCell::restore`] for a caller that knows nothing has used the cell since its
    /// `take` (the JVM's critical downcalls: the thread, marked, runs no other entry that could
    /// keep or take a spare; a steal never writes an empty cell): the store alone.
    ///
    /// # Safety
    /// As [`SpareCell::keep`]; this thread took the entry for `obj`'s wrapper with
    /// [`SpareCell::take`] and has kept, taken or restored none since.
    #[inline]
    pub unsafe fn restore_untouched(&self, obj: ObjectRef) {
        debug_assert!(self.cell.obj.load(Ordering::Relaxed).is_null(), "the taken entry's room is empty");
        // Release: as in `keep` (the generation, this thread's own earlier write, comes first).
        self.cell.obj.store(obj.into_raw(), Ordering::Release);
    }

    /// Set or clear the owning thread's flag, which lives here because the cell is the one
    /// per-thread place a frontend finds without a thread-local access (a `__tls_get_addr`
    /// call in a shared library). The JVM marks a thread inside a critical downcall with it.
    #[inline]
    pub fn mark(&self, on: bool) {
        self.cell.marked.store(on, Ordering::Relaxed);
    }

    /// The flag [`SpareCell::mark`] set.
    #[inline]
    pub fn marked(&self) -> bool {
        self.cell.marked.load(Ordering::Relaxed)
    }
}
