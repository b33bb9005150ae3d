//! A mock frontend for the tying state machine: wrappers are `Arc<Wrapper>`, the slot word is
//! a `Weak<Wrapper>` pointer (like a Node weak reference or a JNI weak global ref), and each
//! wrapper's release runs as a separate, possibly late, "finalizer" the test triggers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tether_core::tying::{self, Previous, SideTable, TieHost, TAG_INACTIVE};
use tether_core::{ObjectHeader, ObjectRef, Result};

/// The language-side object: knows its native object and the generation it was tied with.
pub struct Wrapper {
    pub obj: *mut ObjectHeader,
    pub generation: u64,
}
// SAFETY: the pointer is an identity only; the native reference lives in the finalizer.
unsafe impl Send for Wrapper {}
// SAFETY: as above.
unsafe impl Sync for Wrapper {}

/// What a wrapper's finalizer needs (never the wrapper itself, as with the JVM's Cleaner).
struct Finalizer {
    weak: Weak<Wrapper>,
    obj: ObjectRef,
    generation: u64,
}

pub struct MockHost {
    pub tag: u32,
    pub side: SideTable,
    pending: Mutex<Vec<Finalizer>>,
    /// Per object address: wrappers created, and how many were created while another
    /// wrapper of the same object was still alive (must stay 0).
    pub created: Mutex<HashMap<usize, usize>>,
    live: Mutex<HashMap<usize, Weak<Wrapper>>>,
    pub duplicates: AtomicUsize,
    pub dying_seen: AtomicUsize,
    pub inactive_seen: AtomicUsize,
    pub words_disposed: AtomicUsize,
}

/// Cached "wrapper memory" blocks (Inactive slots) still allocated.
pub static BLOCKS_LIVE: AtomicUsize = AtomicUsize::new(0);

fn new_block() -> usize {
    BLOCKS_LIVE.fetch_add(1, Ordering::SeqCst);
    Box::into_raw(Box::new(0u64)) as usize
}

fn free_block(block: usize) {
    // SAFETY: made by `new_block`, freed once (whoever takes it out of the slot).
    drop(unsafe { Box::from_raw(block as *mut u64) });
    BLOCKS_LIVE.fetch_sub(1, Ordering::SeqCst);
}

/// The free hook: an object with an Inactive slot is freed, so its cached block goes too.
unsafe extern "C" fn on_free(_ctx: *mut c_void, slot: *const AtomicUsize) {
    // SAFETY: the allocator passes the slot of the object it is freeing, valid during the hook.
    if let Some(block) = unsafe { tying::take_inactive(tying::Slot::from_raw(slot)) } {
        free_block(block);
    }
}

fn dispose_word(word: usize) {
    // SAFETY: every Active word was made by `Weak::into_raw` in `create` and is disposed once.
    drop(unsafe { Weak::from_raw(word as *const Wrapper) });
}

/// The process's one mock frontend (its allocator is installed once, at first use).
pub fn host() -> &'static MockHost {
    static HOST: OnceLock<MockHost> = OnceLock::new();
    HOST.get_or_init(|| {
        tether_core::init(); // registry objects made now keep the builtin tag: side-table path
        let tag = tether_core::alloc::install_frontend_allocator(
            MockHost::LAYOUT,
            tether_core::tying::Reserve::NONE,
            Some(on_free),
            std::ptr::null_mut(),
        )
        .unwrap();
        MockHost {
            tag,
            side: SideTable::new(),
            pending: Mutex::new(Vec::new()),
            created: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            duplicates: AtomicUsize::new(0),
            dying_seen: AtomicUsize::new(0),
            inactive_seen: AtomicUsize::new(0),
            words_disposed: AtomicUsize::new(0),
        }
    })
}

// SAFETY: `revive` upgrades only a live wrapper; `create` returns a `Weak` pointer (aligned,
// so bits 0 and 1 are clear) and its finalizer owns the `ObjectRef`.
unsafe impl TieHost for MockHost {
    type Handle = Arc<Wrapper>;
    type Error = tether_core::Error;
    type Prepared = ();

    fn prepare(&self, _obj: &ObjectRef) -> Result<()> {
        Ok(())
    }

    unsafe fn revive(&self, word: usize) -> Option<Arc<Wrapper>> {
        // SAFETY: an Active word is a `Weak::into_raw` pointer this host stored; we only borrow it.
        let weak = ManuallyDrop::new(unsafe { Weak::from_raw(word as *const Wrapper) });
        weak.upgrade()
    }

    unsafe fn create(
        &self,
        _: &(),
        obj: ObjectRef,
        previous: Previous,
        generation: u64,
    ) -> Result<(Arc<Wrapper>, usize)> {
        match previous {
            Previous::Detached => {}
            Previous::Dying(word) => {
                self.dying_seen.fetch_add(1, Ordering::SeqCst);
                self.words_disposed.fetch_add(1, Ordering::SeqCst);
                dispose_word(word);
            }
            Previous::Inactive(block) => {
                self.inactive_seen.fetch_add(1, Ordering::SeqCst);
                free_block(block); // a real frontend would revive the wrapper in this memory
            }
        }
        let ptr = obj.as_ptr();
        let wrapper = Arc::new(Wrapper { obj: ptr, generation });
        {
            let mut live = self.live.lock().unwrap();
            if live.get(&(ptr as usize)).is_some_and(|w| w.upgrade().is_some()) {
                self.duplicates.fetch_add(1, Ordering::SeqCst);
            }
            live.insert(ptr as usize, Arc::downgrade(&wrapper));
        }
        *self.created.lock().unwrap().entry(ptr as usize).or_default() += 1;
        self.pending.lock().unwrap().push(Finalizer { weak: Arc::downgrade(&wrapper), obj, generation });
        let word = Weak::into_raw(Arc::downgrade(&wrapper)) as usize;
        Ok((wrapper, word))
    }
}

impl MockHost {
    /// Return `obj` to the "language".
    pub fn tie(&self, obj: ObjectRef) -> Arc<Wrapper> {
        tying::tie_any(self, &(), self.tag, &self.side, obj).expect("tie").into_handle()
    }

    /// Run the finalizers of dead wrappers. With `cache`, a wrapper's slot becomes Inactive
    /// (a cached block kept for revival) instead of Detached.
    pub fn run_finalizers(&self, cache: bool) -> usize {
        self.run_finalizers_as::<MockHost>(cache)
    }

    /// [`Self::run_finalizers`] through host type `H` (which must be the one that tied these
    /// wrappers: it decides where a slot keeps its spares).
    pub fn run_finalizers_as<H: TieHost>(&self, cache: bool) -> usize {
        let dead: Vec<Finalizer> = {
            let mut pending = self.pending.lock().unwrap();
            let (dead, alive): (Vec<_>, Vec<_>) = pending.drain(..).partition(|f| f.weak.strong_count() == 0);
            *pending = alive;
            dead
        };
        let n = dead.len();
        for f in dead {
            let replacement = if cache { new_block() | TAG_INACTIVE } else { 0 };
            // SAFETY: the finalizer still holds its +1, so the object is live.
            match unsafe { tying::untie_any::<H>(f.obj.as_ptr(), self.tag, &self.side, f.generation, replacement) } {
                Some(word) => {
                    self.words_disposed.fetch_add(1, Ordering::SeqCst);
                    dispose_word(word);
                }
                None if cache => free_block(replacement & !TAG_INACTIVE), // not ours to cache
                None => {}
            }
            drop(f.obj);
        }
        n
    }

    pub fn created_for(&self, obj: *mut ObjectHeader) -> usize {
        self.created.lock().unwrap().get(&(obj as usize)).copied().unwrap_or(0)
    }

    /// The slot word of `obj` (prefix or side table), 0 when it has no side entry.
    pub fn slot_word(&self, obj: *mut ObjectHeader) -> usize {
        // SAFETY: callers pass live objects.
        match unsafe { tying::slot_of::<MockHost>(obj, self.tag) } {
            Some(slot) => tying::peek(slot),
            None => self.side.existing(obj).map_or(0, |e| tying::peek(tying::Slot::of(&e))),
        }
    }
}
