//! The slot word and its state machine (`slot.rs` `SlotState`/`ActiveWord`, `tying/machine.rs`
//! `tie_any`/`untie_any`/`take_inactive`), driven by random operation sequences from a mock
//! language and checked against a simple model after every step:
//! - a return of an object whose wrapper is alive gives that wrapper (`Revived`), otherwise a
//!   new one (`Created`);
//! - a release unties exactly when it names the slot's current wrapper (late finalizers of
//!   older generations leave the slot alone), and leaves Detached or Inactive as asked;
//! - the slot word decodes to the state the model expects (Active while a wrapper is tied);
//! - the object's strong count is its owners exactly: the native reference, one per wrapper
//!   not yet finalized, and the spares a serialized host's Active word counts;
//! - at the end every object and every cached block is freed.
//!
//! Both kinds of host run: locked (the JVM's path) and serialized (Python's and Node's, with
//! spare references in the word); objects come from the host's allocator (prefix slot) or the
//! builtin one (side table).

#![no_main]

mod common;

use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use common::Reader;
use libfuzzer_sys::fuzz_target;
use tether_core::slot::{ActiveWord, SlotLayout, SlotState, TAG_INACTIVE, TAG_LOCKED};
use tether_core::testing::Pair;
use tether_core::tying::{self, Previous, Returned, SideTable, Slot, TieHost};
use tether_core::{Any, ObjectHeader, ObjectRef};

struct Wrapper {
    obj: usize,
    generation: u64,
}

/// A wrapper's release, run when the test says (late finalizers included).
struct Finalizer {
    object: usize,
    weak: Weak<Wrapper>,
    obj: ObjectRef,
    generation: u64,
}

struct FuzzHost<const SERIALIZED: bool> {
    tag: u32,
    side: SideTable,
    pending: Mutex<Vec<Finalizer>>,
    /// Which model object a create is for (set before each tie).
    tying: AtomicUsize,
}

/// Cached wrapper blocks (Inactive words) still allocated.
static BLOCKS: AtomicUsize = AtomicUsize::new(0);

fn new_block() -> usize {
    BLOCKS.fetch_add(1, Ordering::SeqCst);
    Box::into_raw(Box::new(0u64)) as usize
}

fn free_block(block: usize) {
    // SAFETY: made by `new_block` and freed once, by whoever took it out of a slot.
    drop(unsafe { Box::from_raw(block as *mut u64) });
    BLOCKS.fetch_sub(1, Ordering::SeqCst);
}

unsafe extern "C" fn on_free(_ctx: *mut c_void, slot: *const std::sync::atomic::AtomicUsize) {
    // SAFETY: the allocator passes the slot of the object it is freeing.
    if let Some(block) = unsafe { tying::take_inactive(Slot::from_raw(slot)) } {
        free_block(block);
    }
}

fn dispose(word: usize) {
    // SAFETY: every Active word is a `Weak::into_raw` made in `create`, disposed of once.
    drop(unsafe { Weak::from_raw(word as *const Wrapper) });
}

// SAFETY: `revive` upgrades only a live wrapper and runs no language code; `create` returns a
// `Weak` pointer (8-aligned, a user-space address below 2^48) and its finalizer owns the
// object's reference; SERIALIZED hosts are only driven from the fuzzer's one thread.
unsafe impl<const S: bool> TieHost for FuzzHost<S> {
    type Handle = Arc<Wrapper>;
    type Error = ();
    type Prepared = ();
    const SERIALIZED: bool = S;

    unsafe fn revive(&self, word: usize) -> Option<Arc<Wrapper>> {
        // SAFETY: an Active word this host stored (see `create`); only borrowed here.
        ManuallyDrop::new(unsafe { Weak::from_raw(word as *const Wrapper) }).upgrade()
    }

    fn prepare(&self, _obj: &ObjectRef) -> Result<(), ()> {
        Ok(())
    }

    unsafe fn create(
        &self,
        _: &(),
        obj: ObjectRef,
        previous: Previous,
        generation: u64,
    ) -> Result<(Arc<Wrapper>, usize), ()> {
        match previous {
            Previous::Detached => {}
            Previous::Dying(word) => dispose(word),
            Previous::Inactive(block) => free_block(block),
        }
        let wrapper = Arc::new(Wrapper { obj: obj.as_ptr() as usize, generation });
        let object = self.tying.load(Ordering::Relaxed);
        let weak = Arc::downgrade(&wrapper);
        self.pending.lock().unwrap().push(Finalizer { object, weak: weak.clone(), obj, generation });
        Ok((wrapper, Weak::into_raw(weak) as usize))
    }
}

fn hosts() -> &'static (FuzzHost<false>, FuzzHost<true>) {
    static HOSTS: OnceLock<(FuzzHost<false>, FuzzHost<true>)> = OnceLock::new();
    HOSTS.get_or_init(|| {
        tether_core::init();
        let install = || {
            tether_core::alloc::install_frontend_allocator(SlotLayout::Full, tether_core::tying::Reserve::NONE, Some(on_free), std::ptr::null_mut())
                .expect("a frontend allocator")
        };
        let hosts = (FuzzHost::new(install()), FuzzHost::new(install()));
        tether_core::alloc::set_current_allocator(tether_core::alloc::BUILTIN_TAG).unwrap();
        hosts
    })
}

/// What the model knows of one object.
#[derive(Default)]
struct Model {
    /// The object's address (identity only).
    ptr: usize,
    /// The program's own (native) reference.
    native: Option<ObjectRef>,
    /// Strong handles the "language" holds.
    handles: Vec<Arc<Wrapper>>,
    /// The generation of the wrapper the slot names, while one is tied.
    tied: Option<u64>,
    /// That wrapper (its address, for identity).
    tied_wrapper: usize,
    /// Made by the host's allocator (a prefix slot), else tied through the side table.
    prefixed: bool,
}

impl<const S: bool> FuzzHost<S> {
    fn new(tag: u32) -> Self {
        FuzzHost { tag, side: SideTable::new(), pending: Mutex::new(Vec::new()), tying: AtomicUsize::new(0) }
    }

    fn word(&self, obj: usize) -> usize {
        let obj = obj as *mut ObjectHeader;
        // SAFETY: callers pass live objects.
        match unsafe { tying::slot_of::<Self>(obj, self.tag) } {
            Some(slot) => tying::peek(slot),
            None => self.side.existing(obj).map_or(0, |e| tying::peek(Slot::of(&e))),
        }
    }

    /// A reference to object `i` if it is alive (its native reference or a wrapper's).
    fn reference(&self, m: &Model, i: usize) -> Option<ObjectRef> {
        m.native.clone().or_else(|| self.pending.lock().unwrap().iter().find(|f| f.object == i).map(|f| f.obj.clone()))
    }

    fn check(&self, models: &[Model]) {
        let pending = self.pending.lock().unwrap();
        for (i, m) in models.iter().enumerate() {
            let wrappers = pending.iter().filter(|f| f.object == i).count();
            if m.native.is_none() && wrappers == 0 {
                continue; // freed (or about to be): nothing to look at
            }
            let word = self.word(m.ptr);
            let state = SlotState::decode(word);
            let spares = match state {
                SlotState::Active(a) => a.spares(S),
                _ => 0,
            };
            match (m.tied, state) {
                (Some(_), SlotState::Active(_)) => {}
                (None, SlotState::Detached) => {}
                (None, SlotState::Inactive(_)) if m.prefixed => {}
                (tied, state) => panic!("object {i}: model says tied={tied:?}, slot says {state:?} ({word:#x})"),
            }
            // SAFETY: alive (a native reference or an unfinalized wrapper holds it).
            let strong = unsafe { (*(m.ptr as *const ObjectHeader)).strong_count() };
            let owners = m.native.is_some() as u32 + wrappers as u32 + spares;
            assert_eq!(strong, owners, "object {i}: strong count {strong}, owners {owners} (spares {spares})");
        }
    }

    fn run(&self, r: &mut Reader<'_>) {
        let base_objects = tether_core::alloc::live_objects();
        let mut models: Vec<Model> = (0..1 + r.below(4))
            .map(|_| {
                let prefixed = r.below(4) != 0;
                let tag = if prefixed { self.tag } else { tether_core::alloc::BUILTIN_TAG };
                tether_core::alloc::set_current_allocator(tag).unwrap();
                let obj: ObjectRef = Pair::new(Any::int(1), Any::none()).into();
                tether_core::alloc::set_current_allocator(tether_core::alloc::BUILTIN_TAG).unwrap();
                assert_eq!(obj.header().alloc_tag, tag);
                Model { ptr: obj.as_ptr() as usize, native: Some(obj), prefixed, ..Model::default() }
            })
            .collect();
        for _ in 0..256 {
            if r.is_empty() {
                break;
            }
            let i = r.below(models.len());
            let op = r.below(6);
            if trace() {
                eprintln!(
                    "op {op} on object {i}: {:?}",
                    models
                        .iter()
                        .map(|m| (m.native.is_some(), m.handles.len(), m.tied, m.prefixed))
                        .collect::<Vec<_>>()
                );
            }
            match op {
                0 | 1 => self.tie(&mut models, i),
                2 => drop(models[i].handles.pop()),
                3 => self.finalize(&mut models, r.below(8), r.below(2) == 0),
                4 => drop(models[i].native.take()),
                _ => {
                    if models[i].native.is_none() {
                        models[i].native = self.reference(&models[i], i);
                    }
                }
            }
            codec(r.u64(), r.u8() as u32 | (r.u8() as u32) << 8);
            self.check(&models);
        }
        // Everything goes: the language's handles, then every finalizer, then native owners.
        models.iter_mut().for_each(|m| m.handles.clear());
        while !self.pending.lock().unwrap().is_empty() {
            self.finalize(&mut models, 0, false);
        }
        drop(models);
        assert_eq!(tether_core::alloc::live_objects(), base_objects, "objects leaked or freed twice");
        assert!(self.side.is_empty(), "side-table entries left behind");
    }

    fn tie(&self, models: &mut [Model], i: usize) {
        let Some(obj) = self.reference(&models[i], i) else { return };
        let live = models[i].handles.first().cloned().or_else(|| {
            let pending = self.pending.lock().unwrap();
            pending.iter().filter(|f| f.object == i).find_map(|f| f.weak.upgrade())
        });
        self.tying.store(i, Ordering::Relaxed);
        let returned = tying::tie_any(self, &(), self.tag, &self.side, obj).expect("create never fails here");
        let m = &mut models[i];
        match (returned, live) {
            (Returned::Revived(h), Some(live)) => {
                assert!(Arc::ptr_eq(&h, &live), "object {i}: revived another wrapper than the live one");
                m.handles.push(h);
            }
            (Returned::Created(h), None) => {
                assert_eq!(h.obj, m.ptr);
                m.tied = Some(h.generation);
                m.tied_wrapper = Arc::as_ptr(&h) as usize;
                m.handles.push(h);
            }
            (Returned::Created(_), Some(_)) => panic!("object {i}: a second wrapper while one is alive"),
            (Returned::Revived(_), None) => panic!("object {i}: revived a wrapper that is dead"),
            (Returned::Callable(_) | Returned::HostValue(_), _) => panic!("object {i}: neither a callable nor a host value"),
        }
    }

    /// Runs the `k`-th finalizer whose wrapper is dead (if any), caching a block if `cache`.
    fn finalize(&self, models: &mut [Model], k: usize, cache: bool) {
        let f = {
            let mut pending = self.pending.lock().unwrap();
            let dead: Vec<usize> = (0..pending.len()).filter(|&j| pending[j].weak.strong_count() == 0).collect();
            if dead.is_empty() {
                return;
            }
            pending.remove(dead[k % dead.len()])
        };
        let m = &mut models[f.object];
        let current = m.tied.is_some() && m.tied_wrapper == f.weak.as_ptr() as usize;
        if trace() {
            let side =
                self.side.existing(f.obj.as_ptr()).map(|e| (tying::peek(Slot::of(&e)), e.aux.load(Ordering::Relaxed)));
            eprintln!(
                "finalize object {} generation {} (current: {current}, model {:?}, side entry {side:x?})",
                f.object, f.generation, m.tied
            );
        }
        let cache = cache && m.prefixed; // side entries are never cached (no free hook for them)
        let replacement = if cache { new_block() | TAG_INACTIVE } else { 0 };
        // SAFETY: the finalizer still holds its +1, so the object is live.
        let untied =
            unsafe { tying::untie_any::<Self>(f.obj.as_ptr(), self.tag, &self.side, f.generation, replacement) };
        assert_eq!(untied.is_some(), current, "release of generation {} with {:?} tied", f.generation, m.tied);
        match untied {
            Some(word) => {
                dispose(word);
                m.tied = None;
            }
            None if cache => free_block(replacement & !TAG_INACTIVE),
            None => {}
        }
        drop(f.obj);
    }
}

/// `TETHER_FUZZ_TRACE=1` prints each step (for reading a crash input).
fn trace() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("TETHER_FUZZ_TRACE").is_some())
}

/// The word codec on any word and any wrapper/spares pair.
fn codec(word: u64, spares: u32) {
    let word = word as usize;
    let state = SlotState::decode(word);
    match state {
        SlotState::Locked => assert_ne!(word & TAG_LOCKED, 0),
        _ => assert_eq!(state.encode(), word, "{word:#x} does not encode back"),
    }
    assert_eq!(SlotState::decode(state.encode()), state);
    let wrapper = (word & ((1 << 48) - 1) & !3).max(4);
    let active = ActiveWord::new(wrapper, spares);
    assert_eq!((active.wrapper(true), active.spares(true)), (wrapper, spares));
    assert_eq!(SlotState::decode(active.word()), SlotState::Active(active));
    assert_eq!(active.with_spare_added().map(|a| a.spares(true)), (spares < 0xffff).then_some(spares + 1));
    assert_eq!(active.with_spare_taken().map(|a| a.spares(true)), spares.checked_sub(1));
}

fuzz_target!(|data: &[u8]| {
    let (locked, serialized) = hosts();
    let mut r = Reader::new(data);
    let before = BLOCKS.load(Ordering::SeqCst);
    if r.u8() % 2 == 0 {
        locked.run(&mut r);
    } else {
        serialized.run(&mut r);
    }
    assert_eq!(BLOCKS.load(Ordering::SeqCst), before, "cached blocks leaked");
});
