//! `AnyCell`: a settable `Any` field that any thread may read or replace.
//!
//! Reflected fields are read far more often than written, and every read clones the value
//! (one reference-count increment for an object). A `Mutex<Any>` adds two locked instructions
//! per read: the lock, and the unlock's swap (it must see parked waiters). This cell takes one:
//! a compare-and-swap to enter and a plain release store to leave, spinning, then yielding,
//! under contention. Its critical sections are a 16-byte move or a reference-count increment,
//! never user code: a replaced value is dropped after the cell is released.
//!
//! The lock is the top bit of the value's own head word (the top bit of `small_len`, which no
//! owned value sets: lengths are at most 7 and `LENT_MARK` marks views only), so the cell is
//! the size of an `Any`: a two-field object is 16 bytes smaller than with a separate flag.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::any::{Any, AnyView};
use crate::arc::ObjectBox;
use crate::error::{Error, Result};
use crate::function::{arity_error, run_closure, FunctionObj, FUNC_CELL_GETTER};
use crate::object::ObjectHeader;

/// The head-word bit that says the cell is held.
const HELD: u64 = 1 << 63;

pub struct AnyCell {
    /// The value's head word, with [`HELD`] set while a thread holds the cell.
    head: AtomicU64,
    /// The value's payload (with its provenance); only touched while the cell is held.
    payload: UnsafeCell<*mut u8>,
}

// SAFETY: the payload is only reached while the cell is held, so at most one thread touches it
// at a time; `Any` may move between threads (objects are `Send + Sync` by the object contract).
unsafe impl Sync for AnyCell {}
// SAFETY: the raw payload pointer is an owned `Any`'s, and an `Any` may move between threads
// (objects are `Send + Sync` by the object contract).
unsafe impl Send for AnyCell {}

const _: () = {
    const fn is_send<T: Send>() {}
    is_send::<Any>();
    assert!(std::mem::size_of::<AnyCell>() == std::mem::size_of::<Any>());
};

/// Holds the cell; puts `head` back (releasing it) when dropped.
struct Held<'a> {
    cell: &'a AnyCell,
    head: u64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.cell.head.store(self.head, Ordering::Release);
    }
}

impl AnyCell {
    pub fn new(value: Any) -> Self {
        let (head, payload) = value.into_words();
        debug_assert!(head & HELD == 0, "an owned value never sets the cell's lock bit");
        AnyCell { head: AtomicU64::new(head), payload: UnsafeCell::new(payload) }
    }

    #[inline]
    fn hold(&self) -> Held<'_> {
        let mut spins = 0u32;
        loop {
            let head = self.head.load(Ordering::Relaxed);
            if head & HELD == 0
                && self.head.compare_exchange_weak(head, head | HELD, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                return Held { cell: self, head };
            }
            crate::spin::backoff(&mut spins);
        }
    }

    /// A copy of the value (a new reference for an object).
    #[inline]
    pub fn get(&self) -> Any {
        let held = self.hold();
        // SAFETY: the cell is held, so the words are the stored value's; it stays owned by
        // the cell (ManuallyDrop), and cloning runs no user code (a reference-count increment).
        let value = std::mem::ManuallyDrop::new(unsafe { Any::from_words(held.head, *self.payload.get()) });
        Any::clone(&value)
    }

    /// Run `f` on the value, borrowed, while the cell is held: no reference-count change (a
    /// frontend returning the live wrapper of an object field needs none). `f` must be brief
    /// and must neither touch this cell (it would wait for itself) nor run user code.
    #[inline]
    pub fn with_view<R>(&self, f: impl FnOnce(AnyView<'_>) -> R) -> R {
        let held = self.hold();
        // SAFETY: the cell is held, so the words are the stored value's; it stays owned by the
        // cell (ManuallyDrop) and the view cannot outlive this frame.
        let value = std::mem::ManuallyDrop::new(unsafe { Any::from_words(held.head, *self.payload.get()) });
        f(value.view())
    }

    /// Store `value`, returning the old one (dropped by the caller, outside the lock).
    #[inline]
    pub fn replace(&self, value: Any) -> Any {
        let mut held = self.hold();
        let (head, payload) = value.into_words();
        debug_assert!(head & HELD == 0, "an owned value never sets the cell's lock bit");
        // SAFETY: the cell is held; the old words move out to the caller, the new ones in,
        // and the new head is published as the cell is released.
        let old = unsafe {
            let old = Any::from_words(held.head, *self.payload.get());
            *self.payload.get() = payload;
            old
        };
        held.head = head;
        old
    }

    /// Store `value`; the old one is dropped after the lock is released.
    #[inline]
    pub fn set(&self, value: Any) {
        drop(self.replace(value));
    }

    pub fn into_inner(self) -> Any {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: owned, so not held; the words are the stored value's, moved out once.
        unsafe { Any::from_words(this.head.load(Ordering::Relaxed), *this.payload.get()) }
    }
}

impl Drop for AnyCell {
    fn drop(&mut self) {
        // SAFETY: owned, so not held; the stored value is dropped once.
        drop(unsafe { Any::from_words(*self.head.get_mut(), *self.payload.get_mut()) });
    }
}

impl std::fmt::Debug for AnyCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AnyCell").field(&self.get()).finish()
    }
}

// ---- reflected fields stored in a cell ----------------------------------------------------

/// Where a reflected cell field lives: the type that declares it and the cell's offset from
/// the object header. The `data` of its getter and setter Functions, which are plain
/// `safe_call`s over it (no closure), so a frontend can recognise a getter and read the cell
/// itself ([`direct_cell`]).
#[repr(C)]
pub(crate) struct CellField {
    /// First (the flag's promise to other copies of the core): [`CELL_FIELD_MAGIC`]'s address
    /// in the copy that made it. Another copy (a plugin's) reads this field alone, sees that it
    /// is not its own, and takes the getter's slow path.
    magic: *const u8,
    access: CellAccess,
    pub(crate) name: String,
}

/// A static whose address marks this copy's `CellField`s (statics, unlike functions, have
/// one address each).
static CELL_FIELD_MAGIC: u8 = 0;

// SAFETY: `magic` is an address used as a tag, never dereferenced; the rest is plain data.
unsafe impl Send for CellField {}
// SAFETY: the reason Sync holds is the one above: `magic` is an address used as a tag, never
// dereferenced; the rest is plain data.
unsafe impl Sync for CellField {}

impl CellField {
    /// `offset` is the field's offset inside `T`.
    pub(crate) fn of<T: crate::Object>(offset: usize, name: String) -> CellField {
        CellField {
            magic: &CELL_FIELD_MAGIC,
            access: CellAccess { owner: T::type_index(), offset: std::mem::offset_of!(ObjectBox<T>, value) + offset },
            name,
        }
    }

    /// The cell in `this`, if it is an instance of the declaring type.
    #[inline]
    fn cell_in<'a>(&self, this: &AnyView<'a>) -> Result<&'a AnyCell> {
        match this.as_object_ptr() {
            // SAFETY: the view keeps its object alive for `'a`.
            Some(obj) => unsafe { self.access.cell_in(obj) }.ok_or_else(|| self.not_an_instance(this)),
            None => Err(self.not_an_instance(this)),
        }
    }

    #[cold]
    #[inline(never)]
    fn not_an_instance(&self, this: &AnyView<'_>) -> Error {
        Error::type_error(format!(
            "{}() argument 'self' must be {}, not {}",
            self.name,
            crate::types::type_info(self.access.owner).map(|i| i.key()).unwrap_or("?"),
            this.kind_name()
        ))
    }
}

/// `safe_call` of a cell field's getter: `get(self)`.
pub(crate) unsafe extern "C" fn cell_get_safe_call(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    // SAFETY: `handle` is a getter made by `TypeBuilder::cell_field_rw` (data: CellField).
    unsafe {
        run_closure::<CellField>(handle, args, n, result, |field, _, args| match args {
            [this] => Ok(field.cell_in(this)?.get()),
            _ => Err(arity_error(&field.name, 1, args.len())),
        })
    }
}

/// `safe_call` of a cell field's setter: `set(self, value)`.
pub(crate) unsafe extern "C" fn cell_set_safe_call(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    // SAFETY: `handle` is a setter made by `TypeBuilder::cell_field_rw` (data: CellField).
    unsafe {
        run_closure::<CellField>(handle, args, n, result, |field, _, args| match args {
            [this, value] => {
                field.cell_in(this)?.set(value.to_owned_any());
                Ok(Any::none())
            }
            _ => Err(arity_error(&field.name, 2, args.len())),
        })
    }
}

/// Where a cell field lives in the instances of its type: found once from the field's getter
/// ([`CellAccess::of`]), then used for every read without touching the getter. Inline, with no
/// error built, so that a frontend's field read is a type check and an add: a Python
/// `p.first` ran ~100 native instructions through the getter's Function (the cell check out
/// of line, its error's formatting inside), 63 this way (callgrind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellAccess {
    owner: i32,
    offset: usize,
}

impl CellAccess {
    /// The access of field getter `getter`, when it is a cell field's of this copy of the
    /// core; `None` for any other getter (call it instead).
    ///
    /// # Safety
    /// `getter` is a live Function.
    #[inline]
    pub unsafe fn of(getter: *mut ObjectHeader) -> Option<CellAccess> {
        // SAFETY: the caller's guarantee; `data` is a CellField when the flag is set by this
        // copy of the core (checked by its mark).
        unsafe {
            let f = &(*(getter as *const ObjectBox<FunctionObj>)).value;
            if f.flags & FUNC_CELL_GETTER == 0 {
                return None;
            }
            // Every core copy's cell getters start their data with their mark: read it alone,
            // the rest of another copy's data may be laid out differently.
            if !std::ptr::eq(*(f.data as *const *const u8), &CELL_FIELD_MAGIC) {
                return None;
            }
            Some((*(f.data as *const CellField)).access)
        }
    }

    /// The cell in `obj`, if `obj` is an instance of the field's type (else `None`: the
    /// caller calls the getter, which words the error).
    ///
    /// # Safety
    /// `obj` is a live object, and stays alive for `'a`.
    #[inline]
    pub unsafe fn cell_in<'a>(self, obj: *mut ObjectHeader) -> Option<&'a AnyCell> {
        // SAFETY: a live object (this function's contract): its header is readable.
        if !crate::types::is_instance(unsafe { (*obj).type_index }, self.owner) {
            return None;
        }
        // SAFETY: an instance of `owner` has an `AnyCell` at `offset` (the `cell_field_rw!`
        // contract); the caller keeps the object alive for `'a`.
        Some(unsafe { &*((obj as *const u8).add(self.offset) as *const AnyCell) })
    }
}

/// The cell that field getter `getter` would read in `obj`, when `getter` is a cell field's
/// (of this copy of the core) and `obj` an instance of its type. A frontend may then read the
/// cell itself with [`AnyCell::with_view`] instead of calling the getter; one that reads the
/// same field often finds its [`CellAccess`] once instead.
///
/// # Safety
/// `getter` is a live Function and `obj` a live object; the cell lives as long as `obj`.
#[inline]
pub unsafe fn direct_cell<'a>(getter: *mut ObjectHeader, obj: *mut ObjectHeader) -> Option<&'a AnyCell> {
    // SAFETY: the caller's guarantees.
    unsafe { CellAccess::of(getter)?.cell_in(obj) }
}

/// Add a read-write [`AnyCell`] field to a [`TypeBuilder`](crate::types::TypeBuilder):
/// `cell_field_rw!(builder, Pair, first, "first")`. Checks that the field is an `AnyCell`,
/// then passes its offset to `TypeBuilder::cell_field_rw`.
#[macro_export]
macro_rules! cell_field_rw {
    ($builder:expr, $ty:ty, $field:ident, $name:expr) => {{
        let _is_a_cell: fn(&$ty) -> &$crate::cell::AnyCell = |this| &this.$field;
        let (builder, name, offset) = ($builder, $name, ::std::mem::offset_of!($ty, $field));
        // SAFETY: the line above proves `$field` is an `AnyCell` of `$ty`.
        unsafe { builder.cell_field_rw(name, offset) }
    }};
}
