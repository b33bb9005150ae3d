//! The boundary engine (boundary.rs) driven by a mock serialized language: returning objects
//! (revived before anything is prepared, created with what the host prepared, the host's own
//! errors), releasing wrappers (the word to dispose of, slot and thread spares taken back), a
//! result that is one of the call's arguments, the leaf call's claimed spare, and the rule that
//! frontends compose no tying primitive themselves.

mod common;

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;
use std::rc::{Rc, Weak};
use std::sync::OnceLock;

use std::mem::MaybeUninit;
use tether_core::alloc::live_objects;

use tether_core::boundary::{
    argument_message, ArgumentSource, Called, ClaimMode, Frontend, LeafCall, Previous, Returned, TieHost,
};
use tether_core::function::{FunctionObj, FUNC_LEAF};
use tether_core::host_value::{HostLanguage, HostValueObj};
use tether_core::testing::Pair;
use tether_core::thread_spares::ThreadSpares;
use tether_core::tying::CHARGE;
use tether_core::Function;
use tether_core::{Any, AnyView, ObjectArc, ObjectHeader, ObjectRef};

/// A language object: owns +1 on `obj` until released.
struct Wrapper {
    obj: Cell<*mut ObjectHeader>,
    generation: u64,
    class: &'static str,
}

#[derive(Debug, PartialEq)]
enum LangError {
    NoClass,
    OutOfMemory,
    /// A TypeError raised for another language's host value (its message).
    Foreign(String),
}

/// A serialized language (one thread, like a Node env): the slot word is a `Weak<Wrapper>`.
/// `AT_ONCE` picks its claim mode (Python's, or Node's).
#[derive(Default)]
struct Lang<const AT_ONCE: bool = true> {
    prepares: Cell<usize>,
    creates: Cell<usize>,
    fail_prepare: Cell<bool>,
    fail_create: Cell<bool>,
    /// What the last `create` saw in the slot.
    previous: RefCell<Option<Previous>>,
    /// Functions made from this language's callables (by address), and those callables.
    callables: RefCell<Vec<(usize, Rc<Wrapper>)>>,
}

// SAFETY: `revive` upgrades a live wrapper only, running nothing else; `create` returns a
// `Weak` pointer (aligned, a user-space address) and the wrapper owns the reference it gets;
// the tests call every protocol step from one thread (`SERIALIZED`).
unsafe impl<const AT_ONCE: bool> TieHost for Lang<AT_ONCE> {
    type Handle = Rc<Wrapper>;
    type Error = LangError;
    type Prepared = &'static str;
    const SERIALIZED: bool = true;
    const CLAIM_MODE: ClaimMode = if AT_ONCE { ClaimMode::AtOnce } else { ClaimMode::AfterConversion };

    unsafe fn revive(&self, word: usize) -> Option<Rc<Wrapper>> {
        // SAFETY: an Active word is a `Weak::into_raw` pointer of ours; only borrowed here.
        ManuallyDrop::new(unsafe { Weak::from_raw(word as *const Wrapper) }).upgrade()
    }

    fn callable_of(&self, func: &ObjectRef) -> Result<Option<Rc<Wrapper>>, LangError> {
        let callables = self.callables.borrow();
        Ok(callables.iter().find(|(f, _)| *f == func.as_ptr() as usize).map(|(_, c)| c.clone()))
    }

    fn host_value_of(&self, value: &HostValueObj) -> Result<Option<Rc<Wrapper>>, LangError> {
        let raw = value.value_for(&MOCK_LANGUAGE).map_err(|e| LangError::Foreign(e.message().to_string()))?;
        // SAFETY: values of MOCK_LANGUAGE are `Rc::into_raw` pointers the HostValue owns.
        let held = ManuallyDrop::new(unsafe { Rc::from_raw(raw as *const Wrapper) });
        Ok(Some(Rc::clone(&held)))
    }

    fn prepare(&self, _obj: &ObjectRef) -> Result<&'static str, LangError> {
        self.prepares.set(self.prepares.get() + 1);
        if self.fail_prepare.get() {
            return Err(LangError::NoClass);
        }
        Ok("PairClass")
    }

    unsafe fn create(
        &self,
        class: &&'static str,
        obj: ObjectRef,
        previous: Previous,
        generation: u64,
    ) -> Result<(Rc<Wrapper>, usize), LangError> {
        *self.previous.borrow_mut() = Some(previous);
        if let Previous::Dying(word) = previous {
            dispose(word); // taken out of the slot: ours to dispose of, whatever happens next
        }
        if self.fail_create.get() {
            drop(obj);
            return Err(LangError::OutOfMemory);
        }
        self.creates.set(self.creates.get() + 1);
        let w = Rc::new(Wrapper { obj: Cell::new(obj.into_raw()), generation, class });
        Ok((w.clone(), Weak::into_raw(Rc::downgrade(&w)) as usize))
    }
}

fn dispose(word: usize) {
    // SAFETY: every Active word was made by `Weak::into_raw` and is disposed of once.
    drop(unsafe { Weak::from_raw(word as *const Wrapper) });
}

static SPARES: ThreadSpares = ThreadSpares::new();

/// The test process's one domain (its allocator installed once, at first use).
fn frontend() -> &'static Frontend<Lang> {
    static FRONTEND: OnceLock<Frontend<Lang>> = OnceLock::new();
    FRONTEND.get_or_init(|| {
        tether_core::init();
        let f = Frontend::with_thread_spares(&SPARES);
        f.install_allocator(None).expect("install");
        f
    })
}

/// A second domain of the same kind whose host claims after conversion, on the same slots.
fn frontend_after() -> &'static Frontend<Lang<false>> {
    static FRONTEND: OnceLock<Frontend<Lang<false>>> = OnceLock::new();
    FRONTEND.get_or_init(|| {
        let f = Frontend::new();
        f.adopt_allocator(frontend().tag());
        f
    })
}

/// One `echo(x)` leaf call in domain `f`: the claimed spare is lent and comes back as the result.
/// `prefixed`: the host vouches that its allocator made `obj` (the slot is read without the
/// header's tag check), as a host whose wrapper records it does.
fn echo_claimed<const AT_ONCE: bool>(f: &Frontend<Lang<AT_ONCE>>, obj: &ObjectRef, word: usize, prefixed: bool) {
    let (ptr, counted) = (obj.as_ptr(), obj.header().strong_count());
    let mut call = f.leaf_call(true);
    // SAFETY: one thread; the wrapper keeps `ptr` alive; the "callee" adopts lent views; the
    // frontend's allocator made `obj` (every caller's `new_pair`).
    unsafe {
        let mut view = call.wrapper_argument(0, AnyView::from_object_ptr(ptr), word, prefixed);
        if let Some((0, lent)) = call.commit() {
            view = lent;
        }
        assert!(view.is_lent(), "AT_ONCE={AT_ONCE}: the spare is lent to the callee");
        // echo(x): the callee hands its lent +1 back as the result.
        assert_eq!(call.settle(Some(ptr)), Some(0), "AT_ONCE={AT_ONCE}: the result is argument 0");
    }
    assert_eq!(obj.header().strong_count(), counted, "AT_ONCE={AT_ONCE}: no count changed");
}

/// The language lets go of `w` (what its finalizer does): release, dispose of the word.
fn finalize(w: Rc<Wrapper>) {
    let obj = w.obj.replace(std::ptr::null_mut());
    let generation = w.generation;
    drop(w);
    // SAFETY: the wrapper's +1, given up once.
    if let Some(word) = unsafe { frontend().release(obj, generation, 0) } {
        dispose(word);
    }
}

fn new_pair() -> ObjectRef {
    Pair::new(Any::int(1), Any::none()).into()
}

#[test]
fn a_live_wrapper_is_revived_before_anything_is_prepared() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let base = live_objects();
    let obj = new_pair();
    assert_eq!(obj.header().alloc_tag, f.tag(), "made by the domain's allocator");
    let first = f.return_object(&lang, obj.clone()).unwrap();
    assert!(first.is_created());
    let w = first.into_handle();
    assert_eq!(w.class, "PairClass", "created with what prepare returned");
    assert_eq!((lang.prepares.get(), lang.creates.get()), (1, 1));
    assert_eq!(*lang.previous.borrow(), Some(Previous::Detached));
    for _ in 0..3 {
        match f.return_object(&lang, obj.clone()).unwrap() {
            Returned::Revived(again) => assert!(Rc::ptr_eq(&again, &w)),
            Returned::Created(_) | Returned::Callable(_) | Returned::HostValue(_) => {
                panic!("a second wrapper for a live one")
            }
        }
    }
    assert_eq!(lang.prepares.get(), 1, "reviving prepares nothing");
    assert_eq!(obj.header().strong_count(), 5, "ours, the wrapper's, and three returns kept as spares");
    finalize(w);
    assert_eq!(obj.header().strong_count(), 1, "the release took back the wrapper's +1 and every spare");
    drop(obj);
    assert_eq!(live_objects(), base);
}

#[test]
fn host_failures_come_back_as_the_host_error_and_leak_nothing() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let base = live_objects();
    // An object of the builtin allocator: no slot, tied through the side table.
    tether_core::alloc::set_current_allocator(tether_core::alloc::BUILTIN_TAG).unwrap();
    let side_obj: ObjectRef = tether_core::containers::ArrayObj::new(vec![Any::int(1)]).into();
    tether_core::alloc::set_current_allocator(f.tag()).unwrap();
    assert_ne!(side_obj.header().alloc_tag, f.tag());
    let entries = f.side_entries();
    lang.fail_prepare.set(true);
    assert_eq!(f.return_object(&lang, new_pair()).err(), Some(LangError::NoClass));
    lang.fail_prepare.set(false);
    lang.fail_create.set(true);
    assert_eq!(f.return_object(&lang, new_pair()).err(), Some(LangError::OutOfMemory));
    assert_eq!(f.return_object(&lang, side_obj.clone()).err(), Some(LangError::OutOfMemory));
    assert_eq!(f.side_entries(), entries, "a failed create leaves no side entry behind");
    lang.fail_create.set(false);
    let w = f.return_object(&lang, side_obj.clone()).unwrap().into_handle();
    assert_eq!(f.side_entries(), entries + 1);
    assert!(Rc::ptr_eq(&w, &f.return_object(&lang, side_obj.clone()).unwrap().into_handle()));
    finalize(w);
    assert_eq!(f.side_entries(), entries, "the release pruned the entry");
    drop(side_obj);
    assert_eq!(live_objects(), base);
}

#[test]
fn a_failed_create_after_a_dying_wrapper_releases_the_slot_spares() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let obj = new_pair();
    let old = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    drop(f.return_object(&lang, obj.clone()).unwrap()); // a spare in the slot
    let (old_obj, old_generation) = (old.obj.get(), old.generation);
    drop(old); // dying: its release has not run yet
    assert_eq!(obj.header().strong_count(), 3);
    lang.fail_create.set(true);
    assert_eq!(f.return_object(&lang, obj.clone()).err(), Some(LangError::OutOfMemory));
    lang.fail_create.set(false);
    assert_eq!(obj.header().strong_count(), 2, "the spare went with the failed create");
    // SAFETY: the old wrapper's +1, given up once.
    assert_eq!(unsafe { f.release(old_obj, old_generation, 0) }, None, "the slot is Detached");
    assert_eq!(obj.header().strong_count(), 1);
    let again = f.return_object(&lang, obj.clone()).unwrap();
    assert!(again.is_created());
    assert_eq!(*lang.previous.borrow(), Some(Previous::Detached));
    finalize(again.into_handle());
    assert_eq!(obj.header().strong_count(), 1);
}

#[test]
fn a_late_release_of_an_older_wrapper_leaves_the_new_one_alone() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let obj = new_pair();
    let old = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    let (old_obj, old_generation) = (old.obj.get(), old.generation);
    drop(old); // dead, its release not run yet: the slot's word no longer revives
    let new = f.return_object(&lang, obj.clone()).unwrap();
    assert!(new.is_created());
    assert!(matches!(*lang.previous.borrow(), Some(Previous::Dying(_))));
    let new = new.into_handle();
    assert_ne!(new.generation, old_generation);
    // SAFETY: the old wrapper's +1, given up once.
    assert_eq!(unsafe { f.release(old_obj, old_generation, 0) }, None, "not the slot's wrapper any more");
    assert!(Rc::ptr_eq(&new, &f.return_object(&lang, obj.clone()).unwrap().into_handle()));
    finalize(new);
    assert_eq!(obj.header().strong_count(), 1);
}

#[test]
fn a_wrapper_holding_the_only_reference_takes_it_back_without_an_untie() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let obj = new_pair();
    let w = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    let ptr = obj.as_ptr();
    let word = Rc::downgrade(&w).as_ptr() as usize;
    // SAFETY: serialized (one thread); `ptr` is live (ours and the wrapper's references).
    assert!(unsafe { f.take_sole(ptr) }.is_none(), "another reference: the wrapper unties as usual");
    drop(obj);
    let live = live_objects();
    // The language lets go of its wrapper, which held the only reference.
    assert_eq!(w.obj.replace(std::ptr::null_mut()), ptr);
    drop(w);
    // SAFETY: the wrapper's +1, the object's only reference; serialized.
    let held = unsafe { f.take_sole(ptr) }.expect("the only reference comes back");
    // SAFETY: the object is live until `held` goes.
    let slot = unsafe { tether_core::tying::slot_of::<Lang>(ptr, f.tag()) }.expect("a prefixed object");
    assert_eq!(tether_core::tying::peek(slot) & 0xffff_ffff_ffff, word, "the slot still names the wrapper");
    drop(held);
    assert_eq!(live_objects(), live - 1, "the object died with its wrapper");
    dispose(word); // the mock's word owns a `Weak`, which an untie would have handed back
}

#[test]
fn a_result_whose_only_reference_is_its_own_decodes_no_argument() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let arg = new_pair();
    let w = f.return_object(&lang, arg.clone()).unwrap().into_handle();
    let word = Rc::downgrade(&w).as_ptr() as usize;
    let decoded = Cell::new(0);
    let args = || [(0, arg.as_ptr(), word)].into_iter().inspect(|_| decoded.set(decoded.get() + 1));
    // SAFETY: serialized; the argument's wrapper owns its +1.
    unsafe {
        let back = f.result_argument(new_pair(), args(), None).expect_err("a new object is no argument");
        assert_eq!((decoded.get(), back.header().strong_count()), (0, 1), "no argument read, nothing kept");
        assert_eq!(f.result_argument(arg.clone(), args(), None).ok(), Some(0));
        assert_eq!(decoded.get(), 1, "a shared object is looked for among the arguments");
    }
    finalize(w);
    assert_eq!(arg.header().strong_count(), 1);
}

#[test]
fn a_result_that_is_an_argument_goes_back_as_that_wrapper() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let obj = new_pair();
    let w = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    let word = Rc::downgrade(&w).as_ptr() as usize;
    let other = new_pair();
    // SAFETY: serialized (one thread); the wrappers own their +1 and are released below.
    unsafe {
        let args = [(0, other.as_ptr(), 8), (1, obj.as_ptr(), word)];
        assert_eq!(f.result_argument(obj.clone(), args, None).ok(), Some(1), "argument 1 is the result");
        let stale = [(0, obj.as_ptr(), word + 8)];
        assert!(f.result_argument(obj.clone(), stale, None).is_err(), "another wrapper word is not canonical");
        assert!(f.result_argument(obj.clone(), [(0, other.as_ptr(), 8)], None).is_err(), "not an argument");
    }
    assert_eq!(obj.header().strong_count(), 3, "ours, the wrapper's, one kept as a spare");
    finalize(w);
    assert_eq!(obj.header().strong_count(), 1);
}

#[test]
fn a_leaf_call_returning_its_claimed_argument_never_writes_the_slot() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let obj = new_pair();
    let ptr = obj.as_ptr();
    let w = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    drop(f.return_object(&lang, obj.clone()).unwrap()); // one spare in the slot
    let word = Rc::downgrade(&w).as_ptr() as usize;
    echo_claimed(f, &obj, word, false);
    echo_claimed(f, &obj, word, true);
    echo_claimed(frontend_after(), &obj, word, false);
    // A call that returns something else consumes the claim: the callee released the spare.
    let mut call = f.leaf_call(true);
    let before = obj.header().strong_count();
    // SAFETY: as above.
    unsafe {
        let view = call.wrapper_argument(0, AnyView::from_object_ptr(ptr), word, false);
        view.release_if_lent(); // what a callee that only reads its argument does
        assert_eq!(call.settle(None), None);
    }
    assert_eq!(obj.header().strong_count(), before - 1, "the spare was spent");
    // An abandoned call gives back only what it took out of slots: the claimed spare never
    // left its slot; the same object's second argument took a spare beyond it, released now.
    drop(f.return_object(&lang, obj.clone()).unwrap());
    drop(f.return_object(&lang, obj.clone()).unwrap());
    let before = obj.header().strong_count();
    let mut call = f.leaf_call(true);
    // SAFETY: as above; the views never reach a callee.
    unsafe {
        let claimed = call.wrapper_argument(0, AnyView::from_object_ptr(ptr), word, true);
        let taken = call.wrapper_argument(1, AnyView::from_object_ptr(ptr), word, true);
        assert!(claimed.is_lent() && taken.is_lent(), "each lent a spare of its own");
        call.abandon([&claimed, &taken]);
    }
    assert_eq!(obj.header().strong_count(), before - 1, "the taken spare released, once");
    finalize(w);
    assert_eq!(obj.header().strong_count(), 1);
}

#[test]
fn a_later_argument_is_lent_a_spare_of_a_bulk_charge() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    // A constructor: its fields adopt what they are lent (`Pair(x, x)`).
    let pair = Function::from_typed("t.pair", |x: Any, y: Any| -> ObjectRef { Pair::new(x, y).into() }).leaf();
    let obj = new_pair();
    let w = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    assert_eq!(obj.header().strong_count(), 2, "ours and the wrapper's: no spare yet");
    // The first argument, with no spare to claim, is borrowed (its field adds a reference);
    // the second charges the slot with CHARGE references at once and is lent one of them.
    let (called, first, _) = drive(f, &pair, &[Ok(&w), Ok(&w)]);
    assert_eq!(called, Ok(Called::Result));
    let charged = 2 + 2 + CHARGE - 1;
    assert_eq!(obj.header().strong_count(), 2 + 2 + (CHARGE - 1), "two fields, CHARGE - 1 spares");
    // Later calls, in either claim mode, lend both from the slot: no reference is added.
    let (_, second, _) = drive(f, &pair, &[Ok(&w), Ok(&w)]);
    assert_eq!(obj.header().strong_count(), charged + 2 - 2, "two more fields, two spares fewer");
    let (_, third, _) = drive(frontend_after(), &pair, &[Ok(&w), Ok(&w)]);
    assert_eq!(obj.header().strong_count(), charged + 4 - 4);
    drop((first, second, third));
    assert_eq!(obj.header().strong_count(), 2 + (CHARGE - 1) - 4, "the spares left in the slot");
    // The wrapper's release takes back what is left of the charge.
    finalize(w);
    assert_eq!(obj.header().strong_count(), 1);
}

#[test]
fn a_release_takes_back_the_spares_threads_kept_for_its_wrapper() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let obj = new_pair();
    let w = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    // SAFETY: `obj` is live.
    let generation = unsafe { f.generation_of(obj.as_ptr()) }.expect("a slot with generations");
    assert_eq!(generation, w.generation);
    let cell = SPARES.cell().expect("a cell for this thread");
    // SAFETY: this thread holds the wrapper of `generation`.
    assert!(unsafe { cell.keep(obj.clone(), generation) }.is_none(), "kept");
    assert_eq!(obj.header().strong_count(), 3);
    finalize(w);
    assert_eq!(obj.header().strong_count(), 1, "the thread's spare went with the wrapper");
    assert_eq!(SPARES.held(), 0);
}

#[test]
fn a_leaf_call_without_lending_borrows() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let obj = new_pair();
    let w = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    drop(f.return_object(&lang, obj.clone()).unwrap());
    let mut call = f.leaf_call(false);
    // SAFETY: one thread; the wrapper keeps the object alive.
    let view: AnyView<'_> = unsafe { call.wrapper_argument(0, AnyView::from_object_ptr(obj.as_ptr()), 0, false) };
    assert!(!view.is_lent());
    // SAFETY: as above.
    assert_eq!(unsafe { call.settle(Some(obj.as_ptr())) }, None);
    finalize(w);
    assert_eq!(obj.header().strong_count(), 1);
}

#[test]
fn a_cell_field_read_returns_the_live_wrapper_of_the_object_it_holds() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let inner = new_pair();
    let outer: ObjectRef = Pair::new(Any::object(inner.clone()), Any::int(5)).into();
    let info = tether_core::types::type_info(outer.type_index()).unwrap();
    let getter = |name| tether_core::types::find_field(info, name).unwrap().getter();
    let (first, second) = (getter("first"), getter("second"));
    let ties = |t: i32| t >= tether_core::TypeIndex::OBJECT;
    // SAFETY: live getters and a live object; the cells live as long as `outer`.
    let (first, second) = unsafe {
        (
            tether_core::cell::direct_cell(tether_core::ObjectArc::as_ptr(&first.0), outer.as_ptr())
                .expect("a cell field"),
            tether_core::cell::direct_cell(tether_core::ObjectArc::as_ptr(&second.0), outer.as_ptr())
                .expect("a cell field"),
        )
    };
    // SAFETY: one thread (the serialized host's lock); `revive` runs no language code.
    unsafe {
        assert!(f.live_in_cell(&lang, first, ties).is_none(), "no wrapper yet: the caller copies and ties");
        let w = f.return_object(&lang, inner.clone()).unwrap().into_handle();
        let counted = inner.header().strong_count();
        let read = f.live_in_cell(&lang, first, ties).expect("the live wrapper");
        assert!(Rc::ptr_eq(&read, &w));
        assert_eq!(inner.header().strong_count(), counted, "no count changed");
        let at_once = f.live_in_free_cell(&lang, first, ties).expect("the live wrapper, the cell free");
        assert!(Rc::ptr_eq(&at_once, &w));
        drop(at_once);
        let while_held = first.with_view(|_| f.live_in_free_cell(&lang, first, ties));
        assert!(while_held.is_none(), "a cell another reader holds: none at once, no wait");
        assert!(f.live_in_cell(&lang, second, ties).is_none(), "an int is no wrapper");
        assert!(f.live_in_cell(&lang, first, |_| false).is_none(), "a kind the host converts");
        drop(read);
        finalize(w);
    }
    drop(outer);
    assert_eq!(inner.header().strong_count(), 1);
}

#[test]
fn a_function_made_from_a_language_callable_comes_back_as_that_callable() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let func: ObjectRef = tether_core::function::get_global("testing.echo").unwrap().0.into();
    let callable = Rc::new(Wrapper { obj: Cell::new(std::ptr::null_mut()), generation: 0, class: "callable" });
    lang.callables.borrow_mut().push((func.as_ptr() as usize, callable.clone()));
    for _ in 0..2 {
        match f.return_object(&lang, func.clone()).unwrap() {
            Returned::Callable(c) => assert!(Rc::ptr_eq(&c, &callable)),
            other => panic!("expected the callable, got {:?}", other.is_created()),
        }
    }
    assert_eq!(lang.prepares.get(), 0, "nothing was prepared or tied");
    lang.callables.borrow_mut().clear();
    let w = f.return_object(&lang, func.clone()).unwrap();
    assert!(w.is_created(), "any other Function is tied as usual");
    finalize(w.into_handle());
}

/// The mock language's values are `Rc<Wrapper>`s; `release` counts what it dropped.
static MOCK_LANGUAGE: HostLanguage = HostLanguage { name: "Mock", release: release_mock_value };
static OTHER_LANGUAGE: HostLanguage = HostLanguage { name: "Other", release: release_mock_value };
static RELEASED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn release_mock_value(value: *mut std::ffi::c_void) {
    // SAFETY: every mock host value owns one `Rc::into_raw` reference.
    drop(unsafe { Rc::from_raw(value as *const Wrapper) });
    RELEASED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

fn mock_host_value(language: &'static HostLanguage, value: &Rc<Wrapper>) -> ObjectRef {
    // SAFETY: the HostValue owns the reference `into_raw` gives up; `release_mock_value` drops it.
    unsafe { HostValueObj::new(Rc::into_raw(value.clone()) as *mut std::ffi::c_void, language, "Payload") }.into()
}

#[test]
fn a_host_value_comes_back_as_the_language_value_itself_and_releases_it_when_it_dies() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let base = live_objects();
    let released = RELEASED.load(std::sync::atomic::Ordering::Relaxed);
    let payload = Rc::new(Wrapper { obj: Cell::new(std::ptr::null_mut()), generation: 0, class: "Payload" });
    let held = mock_host_value(&MOCK_LANGUAGE, &payload);
    assert_eq!(Rc::strong_count(&payload), 2, "the HostValue holds one reference");
    for _ in 0..2 {
        match f.return_object(&lang, held.clone()).unwrap() {
            Returned::HostValue(v) => assert!(Rc::ptr_eq(&v, &payload)),
            other => panic!("expected the value itself, got a wrapper (created: {})", other.is_created()),
        }
    }
    assert_eq!((lang.prepares.get(), lang.creates.get()), (0, 0), "nothing was prepared or tied");
    // A typed parameter names the language's type.
    let add = tether_core::function::get_global("testing.add").unwrap();
    let message = add.call(&[AnyView::object(&held), AnyView::int(1)]).unwrap_err().message().to_string();
    assert_eq!(message, "testing.add() argument 'a' must be int, not Payload");
    drop((held, add));
    assert_eq!(Rc::strong_count(&payload), 1, "released with the native object");
    assert_eq!(RELEASED.load(std::sync::atomic::Ordering::Relaxed), released + 1);
    assert_eq!(live_objects(), base);
}

#[test]
fn another_languages_host_value_is_the_hosts_type_error() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let payload = Rc::new(Wrapper { obj: Cell::new(std::ptr::null_mut()), generation: 0, class: "Payload" });
    let err = f.return_object(&lang, mock_host_value(&OTHER_LANGUAGE, &payload)).map(|_| ()).unwrap_err();
    assert_eq!(
        err,
        LangError::Foreign(
            "Payload (a Other value) held by native code cannot be used from Mock: host values only go back to their own language"
                .into()
        )
    );
    assert_eq!(Rc::strong_count(&payload), 1, "the refused value was released with its object");
}

#[test]
fn a_class_hint_outlives_the_wrappers_and_their_generations() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let obj = new_pair();
    // SAFETY: `obj` is live (we hold it).
    unsafe {
        assert_eq!(f.class_hint(obj.as_ptr()), 0);
        assert!(f.set_class_hint(obj.as_ptr(), 7));
    }
    for _ in 0..3 {
        let w = f.return_object(&lang, obj.clone()).unwrap();
        assert!(w.is_created());
        // SAFETY: as above.
        assert_eq!(unsafe { f.class_hint(obj.as_ptr()) }, 7, "a create rewrites the generation only");
        finalize(w.into_handle());
    }
    // An object of another allocator has no prefix slot: no hint is kept.
    let foreign: ObjectRef = tether_core::function::get_global("testing.echo").unwrap().0.into();
    // SAFETY: `foreign` is live.
    assert!(!unsafe { f.set_class_hint(foreign.as_ptr(), 3) });
}

static CALLABLES: tether_core::boundary::CallableRegistry = tether_core::boundary::CallableRegistry::new();
/// Every mock callable shares this key, as colliding identity hashes do.
const SHARED_KEY: usize = 7;

unsafe extern "C" fn mock_call(_f: *mut ObjectHeader, _args: *const AnyView<'_>, _n: i32, _result: *mut Any) -> i32 {
    0
}

unsafe extern "C" fn mock_drop(data: *mut std::ffi::c_void) {
    CALLABLES.forget(SHARED_KEY, data as usize);
}

/// The Function for mock callable `callable` (a number standing for its identity).
fn function_for(callable: usize, made: &Cell<usize>) -> tether_core::Function {
    let f = CALLABLES.function_for(
        SHARED_KEY,
        |handle| handle == callable,
        || {
            made.set(made.get() + 1);
            // SAFETY: `mock_call` does nothing; `mock_drop` only forgets the entry.
            let f = unsafe {
                tether_core::Function::from_raw_parts(mock_call, callable as *mut _, Some(mock_drop), "cb", -1, 0)
            };
            Ok::<_, ()>((f, callable))
        },
    );
    f.unwrap()
}

#[test]
fn a_callable_has_one_function_while_that_lives() {
    let _g = common::serial();
    let base = live_objects();
    let made = Cell::new(0);
    let (a1, a2, b) = (function_for(100, &made), function_for(100, &made), function_for(200, &made));
    assert!(ObjectArc::ptr_eq(&a1.0, &a2.0), "one callable, one Function");
    assert!(!ObjectArc::ptr_eq(&a1.0, &b.0), "colliding keys, other callable: its own Function");
    assert_eq!((made.get(), CALLABLES.len()), (2, 2));
    drop((a1, a2));
    assert_eq!(CALLABLES.len(), 1, "the dead Function's drop hook forgot it");
    let again = function_for(100, &made);
    assert_eq!(made.get(), 3, "a new Function once the old one died");
    assert!(ObjectArc::ptr_eq(&b.0, &function_for(200, &made).0));
    drop((again, b));
    assert!(CALLABLES.is_empty());
    assert_eq!(live_objects(), base);
}

static LENT_CALLABLES: tether_core::boundary::CallableRegistry = tether_core::boundary::CallableRegistry::new();
static LENT: tether_core::boundary::LentFunctions = tether_core::boundary::LentFunctions::new();
/// Mock callables whose Function released them (their `data`, recorded by the drop hook).
static LENT_RELEASED: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn lent_drop(data: *mut std::ffi::c_void) {
    if data.is_null() {
        return; // a shell that came back
    }
    LENT_CALLABLES.forget(data as usize, data as usize);
    LENT_RELEASED.lock().unwrap().push(data as usize);
}

/// A shell for the mock language's callables: no callable until lent.
fn lent_shell(made: &Cell<usize>) -> tether_core::Function {
    made.set(made.get() + 1);
    // SAFETY: `mock_call` does nothing; `lent_drop` only records and forgets a set `data`.
    unsafe { tether_core::Function::from_raw_parts(mock_call, std::ptr::null_mut(), Some(lent_drop), "cb", -1, 0) }
}

/// A lent Function whose call kept nothing goes back as the one spare shell: no
/// registration, no reference to the callable; one that something kept is the caller's to
/// register, and is then the callable's Function like any other.
#[test]
fn a_lent_function_comes_back_unless_kept() {
    let _g = common::serial();
    let made = Cell::new(0);
    // SAFETY: this test is the mock host; the serial guard is its lock.
    unsafe { LENT.prepare(|| lent_shell(&made)) };
    let base = live_objects();
    let (cb, other) = (0x1000usize, 0x2000usize);
    // SAFETY: as above, for every step below; the callables are numbers that stay "alive".
    unsafe {
        let first = LENT.lend(cb, cb as *mut _, || lent_shell(&made));
        let shell = first.function().as_object_ptr();
        assert_eq!(first.function().0.data as usize, cb, "aimed at the callable");
        assert!(LENT.in_flight(cb).is_some_and(|f| f.as_object_ptr() == shell), "found while its call runs");
        assert!(LENT.in_flight(other).is_none());
        // A nested call with another callable: the spare is out, so a second shell is made.
        let nested = LENT.lend(other, other as *mut _, || lent_shell(&made));
        assert_ne!(nested.function().as_object_ptr(), shell);
        assert_eq!(LENT.reclaim(nested).map_err(drop), Ok(()));
        assert_eq!(LENT.reclaim(first).map_err(drop), Ok(()), "nothing kept it");
        assert!(LENT.in_flight(cb).is_none(), "its call is over");
        assert_eq!(live_objects(), base, "one spare at rest, the surplus shell freed");
        let again = LENT.lend(cb, cb as *mut _, || lent_shell(&made));
        let shells = made.get();
        // The callee keeps it: it escapes and is registered, its spare replaced.
        let kept = again.function().clone();
        let escaped = LENT.reclaim(again).expect_err("kept by the callee");
        LENT_CALLABLES.register(cb, cb, &escaped);
        LENT.prepare(|| lent_shell(&made));
        assert_eq!(made.get(), shells + 1, "a new spare for the next call");
        drop(escaped);
        assert!(LENT_CALLABLES.live(cb, |h| h == cb).is_some_and(|f| f.as_object_ptr() == kept.as_object_ptr()));
        assert!(LENT_CALLABLES.live(other, |h| h == other).is_none());
        assert!(LENT_RELEASED.lock().unwrap().is_empty());
        drop(kept);
        assert_eq!(
            LENT_RELEASED.lock().unwrap().drain(..).collect::<Vec<_>>(),
            [cb],
            "released once, by its drop hook"
        );
        assert!(LENT_CALLABLES.live(cb, |h| h == cb).is_none() && LENT_CALLABLES.is_empty(), "and forgotten");
    }
    assert_eq!(live_objects(), base);
}

/// `try_lend` takes the spare shell when there is one and the in-flight list has room, makes a
/// shell otherwise, and turns a shell it cannot make into the MemoryError; what it lends
/// comes back as any lent Function does.
#[test]
fn a_try_lend_makes_a_shell_only_without_a_spare_and_turns_allocation_failure_into_a_memory_error() {
    let _g = common::serial();
    let made = Cell::new(0);
    // SAFETY: this test is the mock host; the serial guard is its lock.
    unsafe { LENT.prepare(|| lent_shell(&made)) };
    let base = live_objects();
    let (cb, other, third) = (0x3000usize, 0x4000usize, 0x5000usize);
    let no_memory = || -> Function { std::panic::panic_any(tether_core::alloc::OutOfMemory { size: 64, align: 8 }) };
    // SAFETY: as above, for every step below; the callables are numbers that stay "alive".
    unsafe {
        let first = LENT.try_lend(cb, cb as *mut _, || lent_shell(&made)).expect("lent");
        assert_eq!(first.function().0.data as usize, cb, "aimed at the callable");
        assert!(LENT.in_flight(cb).is_some_and(|f| f.as_object_ptr() == first.function().as_object_ptr()));
        let shells = made.get();
        let nested = LENT.try_lend(other, other as *mut _, || lent_shell(&made)).expect("lent");
        assert_eq!(made.get(), shells + 1, "no spare while the first is out: a new shell");
        let e = LENT.try_lend(third, third as *mut _, no_memory).map(drop).unwrap_err();
        assert_eq!(e.kind(), "MemoryError", "{e}");
        assert!(LENT.in_flight(third).is_none(), "nothing lent when the shell could not be made");
        assert_eq!(LENT.reclaim(nested).map_err(drop), Ok(()));
        assert_eq!(LENT.reclaim(first).map_err(drop), Ok(()), "nothing kept it");
        assert!(LENT.in_flight(cb).is_none());
        let shells = made.get();
        let again = LENT.try_lend(cb, cb as *mut _, no_memory).expect("the spare is back: nothing to allocate");
        assert_eq!(made.get(), shells, "the spare was used");
        assert_eq!(LENT.reclaim(again).map_err(drop), Ok(()));
    }
    assert_eq!(live_objects(), base, "one spare at rest");
    assert!(LENT_RELEASED.lock().unwrap().is_empty(), "no callable was kept");
}

/// Frontends adapt the protocol; they never compose the slot transitions themselves.
#[test]
#[cfg_attr(miri, ignore)] // reads source files
fn frontends_call_no_tying_primitive() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut offenders = Vec::new();
    for frontend in ["crates/python/src", "crates/node/src", "crates/java/src"] {
        for entry in walk(&root.join(frontend)) {
            let text = std::fs::read_to_string(&entry).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                // The leaf call's steps are the driver's (`Frontend::call`), not a frontend's.
                let leaf_steps = [".leaf_call(", ".settle(", ".commit(", ".abandon("].iter().any(|s| code.contains(s));
                if code.contains("tying::") || code.contains("tether_core::tying") || leaf_steps {
                    offenders.push(format!("{}:{}: {}", entry.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "use tether_core::boundary (Frontend::call for calls) instead:\n{}",
        offenders.join("\n")
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The mock language's arguments of one call: wrappers (`Ok`) or values that fail to convert
/// (`Err`), like a Python object native code cannot take.
struct LangArguments<'a> {
    args: &'a [Result<&'a Rc<Wrapper>, &'static str>],
    converted: usize,
    unlocked_calls: usize,
}

// SAFETY: a wrapper argument's view comes from `LeafCall::wrapper_argument` (leaf) or borrows
// the wrapper's object, which the caller's `Rc` keeps alive for the call.
unsafe impl<const AT_ONCE: bool> ArgumentSource<Lang<AT_ONCE>> for LangArguments<'_> {
    type Error = String;

    unsafe fn convert<'v>(
        &mut self,
        index: usize,
        leaf: Option<&mut LeafCall<'_, Lang<AT_ONCE>>>,
        view: &mut MaybeUninit<AnyView<'v>>,
    ) -> Result<(), String> {
        let w = self.args[index].map_err(|e| e.to_string())?;
        self.converted += 1;
        let word = Rc::downgrade(w).as_ptr() as usize;
        view.write(match leaf {
            // SAFETY: one thread; the wrapper's +1 outlives the call.
            Some(leaf) => unsafe { leaf.wrapper_argument(index, AnyView::from_object_ptr(w.obj.get()), word, false) },
            // SAFETY: as above.
            None => unsafe { AnyView::from_object_ptr(w.obj.get()) },
        });
        Ok(())
    }

    fn unlocked(&mut self, call: impl FnOnce() -> i32) -> i32 {
        self.unlocked_calls += 1;
        call()
    }

    fn argument_failed(function: &FunctionObj, index: usize, error: String) -> String {
        argument_message(function, index, &error)
    }

    fn failed(error: tether_core::Error) -> String {
        format!("{}: {}", error.kind(), error.message())
    }
}

/// What a driven call saw: how many arguments converted, how many times it ran unlocked.
struct Seen {
    converted: usize,
    unlocked_calls: usize,
}

/// Call `function` through the driver with `args`.
fn drive<const AT_ONCE: bool>(
    f: &Frontend<Lang<AT_ONCE>>,
    function: &Function,
    args: &[Result<&Rc<Wrapper>, &'static str>],
) -> (Result<Called, String>, Any, Seen) {
    let mut result = Any::none();
    let leaf = function.flags() & FUNC_LEAF != 0;
    let mut source = LangArguments { args, converted: 0, unlocked_calls: 0 };
    let func = tether_core::ObjectArc::as_ptr(&function.0);
    // SAFETY: one thread (the host's "lock"); `func` is live and the wrappers outlive the call.
    let called = unsafe { f.call::<2, _>(func, &function.0, args.len(), leaf, &mut source, &mut result) };
    (called, result, Seen { converted: source.converted, unlocked_calls: source.unlocked_calls })
}

#[test]
fn the_call_driver_returns_the_claimed_argument_names_failing_arguments_and_gives_back_what_it_lent() {
    let _g = common::serial();
    let (f, lang) = (frontend(), Lang::default());
    let echo = Function::from_typed("t.echo", |x: Any| x).leaf();
    let first = Function::from_typed("t.first", |x: Any, _y: Any| x).leaf();
    let fail =
        Function::from_typed("t.fail", |_x: Any| -> tether_core::Result<()> { Err(tether_core::Error::value("no")) });
    let obj = new_pair();
    let w = f.return_object(&lang, obj.clone()).unwrap().into_handle();
    drop(f.return_object(&lang, obj.clone()).unwrap()); // a spare in the slot
    let counted = obj.header().strong_count();

    // echo(x) in a leaf call: x's own wrapper comes back, no count changed, the cell is None.
    let (called, result, source) = drive(f, &echo, &[Ok(&w)]);
    assert_eq!(called, Ok(Called::Argument(0)));
    assert!(result.view().as_object_ptr().is_none());
    assert_eq!((source.converted, source.unlocked_calls), (1, 0), "a leaf call runs as is");
    assert_eq!(obj.header().strong_count(), counted);
    // The same through the host that claims after conversion.
    assert_eq!(drive(frontend_after(), &echo, &[Ok(&w)]).0, Ok(Called::Argument(0)));
    assert_eq!(obj.header().strong_count(), counted);

    // An argument that fails: the call never runs, the error names it, nothing lent is lost
    // (the first argument was lent the slot's spare).
    for f_first in [true, false] {
        let (called, _, source) = if f_first {
            drive(f, &first, &[Ok(&w), Err("cannot pass a lamp")])
        } else {
            drive(frontend_after(), &first, &[Ok(&w), Err("cannot pass a lamp")])
        };
        assert_eq!(called, Err("t.first() argument 2: cannot pass a lamp".to_string()));
        assert_eq!(source.converted, 1);
        assert_eq!(obj.header().strong_count(), counted, "the lent spare went back");
    }

    // A call that is not a leaf runs unlocked, its arguments borrowed; its native error comes
    // back as the host's.
    let (called, _, source) = drive(f, &fail, &[Ok(&w)]);
    assert_eq!(called, Err("ValueError: no".to_string()));
    assert_eq!(source.unlocked_calls, 1);
    assert_eq!(obj.header().strong_count(), counted);

    // A result that is no claimed argument waits in the caller's cell: a's slot has no spare
    // to claim (b's spare, lent, is consumed by the callee).
    let other = new_pair();
    let ow = f.return_object(&lang, other.clone()).unwrap().into_handle();
    let (called, result, _) = drive(f, &first, &[Ok(&ow), Ok(&w)]);
    assert_eq!(called, Ok(Called::Result));
    assert_eq!(result.view().as_object_ptr(), Some(other.as_ptr()));
    drop(result);
    assert_eq!(other.header().strong_count(), 2, "ours and a's wrapper's");
    finalize(ow);
    finalize(w);
    assert_eq!(obj.header().strong_count(), 1);
    assert_eq!(other.header().strong_count(), 1);
}

#[test]
#[cfg_attr(miri, ignore = "reads the sources")]
fn safety_comments_give_their_reason() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut offenders = Vec::new();
    for dir in ["crates/core/src", "crates/python/src", "crates/node/src", "crates/java/src"] {
        for entry in walk(&root.join(dir)) {
            let text = std::fs::read_to_string(&entry).unwrap();
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.starts_with("// SAFETY: forwarded") || line.starts_with("// SAFETY: as above") {
                    offenders.push(format!("{}:{}: {line}", entry.display(), n + 1));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "say the reason, not \"forwarded\" / \"as above\":\n{}", offenders.join("\n"));
}
