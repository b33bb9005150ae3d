//! Model tests of the slot word's locked path: loom runs each scenario under every
//! interleaving of the atomic operations on the slot (`--cfg loom` makes them loom's), so a
//! transition whose compare-and-swap is weakened to a load and a store fails here.
//! Run with `cargo xtask loom` (RUSTFLAGS="--cfg loom" in its own target directory).
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use loom::thread;
use tether_core::boundary::{Frontend, Previous, Returned, TieHost};
use tether_core::testing::Pair;
use tether_core::{Any, ObjectHeader, ObjectRef};

/// A language object owning +1 on its native object until released.
struct Wrapper {
    obj: *mut ObjectHeader,
    generation: u64,
}
// SAFETY: the pointer is an identity plus a reference released once, by `release`.
unsafe impl Send for Wrapper {}
// SAFETY: as above.
unsafe impl Sync for Wrapper {}

/// A host whose slot word is a `Weak<Wrapper>`. `SERIALIZED` false: wrappers may be released on
/// any thread (the JVM's shape), so every transition locks the slot; true: every step runs
/// under one host lock (the GIL's shape), which the model schedules.
#[derive(Default)]
struct WeakHost<const SERIALIZED: bool> {
    creates: AtomicUsize,
}

type Jvmish = WeakHost<false>;
type Serialized = WeakHost<true>;

// SAFETY: `revive` upgrades live wrappers only; `create` returns an aligned `Weak` pointer (a
// user-space address) and the wrapper owns the reference it is given; the serialized models
// take the host lock around every step.
unsafe impl<const SERIALIZED: bool> TieHost for WeakHost<SERIALIZED> {
    type Handle = Arc<Wrapper>;
    type Error = ();
    type Prepared = ();
    const SERIALIZED: bool = SERIALIZED;

    unsafe fn revive(&self, word: usize) -> Option<Arc<Wrapper>> {
        // SAFETY: an Active word is a `Weak::into_raw` of ours, borrowed here.
        std::mem::ManuallyDrop::new(unsafe { Weak::from_raw(word as *const Wrapper) }).upgrade()
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
        if let Previous::Dying(word) | Previous::Inactive(word) = previous {
            dispose(word);
        }
        self.creates.fetch_add(1, Ordering::SeqCst);
        let w = Arc::new(Wrapper { obj: obj.into_raw(), generation });
        Ok((w.clone(), Weak::into_raw(Arc::downgrade(&w)) as usize))
    }
}

fn dispose(word: usize) {
    // SAFETY: made by `Weak::into_raw` in `create`, disposed of once by whoever took it out.
    drop(unsafe { Weak::from_raw(word as *const Wrapper) });
}

fn frontend() -> &'static Frontend<Jvmish> {
    static FRONTEND: OnceLock<Frontend<Jvmish>> = OnceLock::new();
    FRONTEND.get_or_init(|| {
        tether_core::init();
        let f = Frontend::new();
        f.install_allocator(None).expect("install");
        f
    })
}

/// The wrapper's release (its Cleaner): untie if it still owns the slot, drop its +1.
fn release(w: &Wrapper) {
    // SAFETY: each wrapper's +1 is given up once, here.
    if let Some(word) = unsafe { frontend().release(w.obj, w.generation, 0) } {
        dispose(word);
    }
}

fn new_object() -> ObjectRef {
    Pair::new(Any::int(1), Any::none()).into()
}

#[test]
fn two_threads_returning_one_object_get_one_wrapper() {
    let f = frontend();
    loom::model(move || {
        let host = Arc::new(Jvmish::default());
        let obj = new_object();
        let (other_host, other_obj) = (host.clone(), obj.clone());
        let t = thread::spawn(move || f.return_object(&other_host, other_obj).unwrap().into_handle());
        let mine = f.return_object(&host, obj.clone()).unwrap().into_handle();
        let theirs = t.join().unwrap();
        assert!(Arc::ptr_eq(&mine, &theirs), "one canonical wrapper");
        assert_eq!(host.creates.load(Ordering::SeqCst), 1, "made once");
        drop(theirs);
        // The last language reference went: the wrapper's release runs.
        let wrapper = Arc::try_unwrap(mine).ok().expect("the only handle left");
        release(&wrapper);
        assert_eq!(obj.header().strong_count(), 1, "every extra +1 released");
    });
}

#[test]
fn a_release_racing_a_return_never_loses_the_new_wrapper() {
    let f = frontend();
    loom::model(move || {
        let host = Arc::new(Jvmish::default());
        let obj = new_object();
        let old = f.return_object(&host, obj.clone()).unwrap().into_handle();
        let old = Arc::try_unwrap(old).ok().expect("the only handle");
        // The old wrapper is unreachable; its release runs on the Cleaner thread while the
        // object is returned again here.
        let cleaner = thread::spawn(move || release(&old));
        let returned = f.return_object(&host, obj.clone()).unwrap();
        cleaner.join().unwrap();
        assert!(returned.is_created(), "a dead wrapper is never revived");
        let new = returned.into_handle();
        // The slot names the new wrapper whatever the order: a second return revives it.
        match f.return_object(&host, obj.clone()).unwrap() {
            Returned::Revived(again) => assert!(Arc::ptr_eq(&again, &new)),
            Returned::Created(_) | Returned::Callable(_) | Returned::HostValue(_) => {
                panic!("the new wrapper was lost from the slot")
            }
        }
        let new = Arc::try_unwrap(new).ok().expect("the only handle");
        release(&new);
        assert_eq!(obj.header().strong_count(), 1);
    });
}

/// A serialized domain on the same slots as `frontend()`.
fn serialized() -> &'static Frontend<Serialized> {
    static FRONTEND: OnceLock<Frontend<Serialized>> = OnceLock::new();
    FRONTEND.get_or_init(|| {
        let f = Frontend::new();
        f.adopt_allocator(frontend().tag());
        f
    })
}

#[test]
fn a_claimed_spare_and_a_return_of_the_same_object_keep_the_count_in_any_order() {
    let f = serialized();
    loom::model(move || {
        let lock = Arc::new(loom::sync::Mutex::new(()));
        let obj = new_object();
        let (w, word) = {
            let _held = lock.lock().unwrap();
            let w = f.return_object(&Serialized::default(), obj.clone()).unwrap().into_handle();
            drop(f.return_object(&Serialized::default(), obj.clone()).unwrap()); // one spare in the slot
            let word = Arc::downgrade(&w).as_ptr() as usize;
            (w, word)
        };
        let (echo_lock, echo_obj) = (lock.clone(), obj.clone());
        let echo = thread::spawn(move || {
            let _held = echo_lock.lock().unwrap();
            let ptr = echo_obj.as_ptr();
            let mut call = f.leaf_call(true);
            // SAFETY: under the host lock; the wrapper (kept by the main thread) holds `ptr`.
            unsafe {
                let mut view = call.wrapper_argument(0, tether_core::AnyView::from_object_ptr(ptr), word, false);
                if let Some((0, lent)) = call.commit() {
                    view = lent;
                }
                assert!(view.is_lent(), "the spare is lent once every argument is converted");
                assert_eq!(call.settle(Some(ptr)), Some(0), "echo(x) returns its claimed argument");
            }
        });
        {
            let _held = lock.lock().unwrap();
            drop(f.return_object(&Serialized::default(), obj.clone()).unwrap());
            // another spare kept
        }
        echo.join().unwrap();
        let _held = lock.lock().unwrap();
        let w = Arc::try_unwrap(w).ok().expect("the only handle");
        // SAFETY: the wrapper's +1, given up once, under the host lock.
        if let Some(word) = unsafe { f.release(w.obj, w.generation, 0) } {
            dispose(word);
        }
        assert_eq!(obj.header().strong_count(), 1, "every spare went with the wrapper");
    });
}
