//! `AnyCell`: a settable `Any` field that any thread may read or replace, in one word.
//!
//! Reflected fields are read far more often than written, and every read clones the value
//! (one reference-count increment for an object). A `Mutex<Any>` adds two locked instructions
//! per read: the lock, and the unlock's swap (it must see parked waiters). This cell takes one:
//! a compare-and-swap to enter and a plain release store to leave, spinning, then yielding,
//! under contention. Its critical sections are a word's decoding or a reference-count
//! increment, never user code: a replaced value is dropped after the cell is released.
//!
//! The cell is one 8-byte word, half an `Any`, so that a tied two-field object fits an 80-byte
//! block (W5: wrapper 32, slot 8, header 24, two cells). The word's low three bits are free in
//! every pointer it stores (headers and boxes are 8-aligned): bit 0 is the lock, bits 1-2 say
//! how the rest reads ([`Word`]). Objects, `None`, bools, ints of 61 bits and floats whose
//! low three bits are zero are stored in the word; anything else (a wider int, another float,
//! an inline string, an opaque pointer) in a 16-byte box the cell owns, allocated by `set`.

use std::sync::atomic::{AtomicPtr, Ordering};

use crate::any::{Any, AnyView, TypeIndex};
use crate::arc::ObjectBox;
use crate::error::{Error, Result};
use crate::function::{arity_error, run_closure, FunctionObj, FUNC_CELL_GETTER};
use crate::object::{dec_ref, inc_ref, ObjectHeader};

/// The word's bit that says the cell is held.
const HELD: usize = 0b001;
/// The word's bits that say how it reads.
const TAG: usize = 0b110;
/// An object's header address; or, below [`FIRST_ADDRESS`], `None`, `False` or `True`.
const TAG_REF: usize = 0b000;
/// An int of 61 bits, shifted left by three.
const TAG_INT: usize = 0b010;
/// The address of a boxed `Any` the cell owns.
const TAG_BOXED: usize = 0b100;
/// A float's bits, whose low three are zero.
const TAG_FLOAT: usize = 0b110;

const NONE_WORD: usize = 0;
const FALSE_WORD: usize = 8;
const TRUE_WORD: usize = 16;
/// No object header lives in the first page, so smaller reference words are the constants.
const FIRST_ADDRESS: usize = 4096;

/// The cell's value, read from its word (unheld).
enum Word {
    None,
    Bool(bool),
    Object(*mut ObjectHeader),
    Int(i64),
    Float(f64),
    Boxed(*mut Any),
}

impl Word {
    #[inline(always)]
    fn read(word: *mut u8) -> Word {
        let bits = word.addr();
        debug_assert!(bits & HELD == 0);
        // Objects first, tested alone: field reads of objects are the hot case.
        if bits & TAG == TAG_REF && bits >= FIRST_ADDRESS {
            return Word::Object(word as *mut ObjectHeader);
        }
        match bits & TAG {
            TAG_REF if bits == NONE_WORD => Word::None,
            TAG_REF => Word::Bool(bits == TRUE_WORD),
            TAG_INT => Word::Int(bits as i64 >> 3),
            TAG_FLOAT => Word::Float(f64::from_bits((bits & !TAG) as u64)),
            _ => Word::Boxed(word.map_addr(|a| a & !TAG) as *mut Any),
        }
    }
}

/// The word that stores `value`, which it now owns (boxed when it does not fit the word).
#[inline(always)]
fn encode(value: Any) -> *mut u8 {
    const _: () = assert!(usize::BITS == 64 && std::mem::align_of::<ObjectHeader>() >= 8);
    let (head, payload) = value.into_words();
    // An owned object's head is its type index alone (`small_len` 0, as in every owned value
    // but an inline string's): one compare finds the common case, the address is the word.
    if (TypeIndex::OBJECT as u64..=i32::MAX as u64).contains(&head) {
        debug_assert!(payload.addr() & 0b111 == 0 && payload.addr() >= FIRST_ADDRESS);
        // SAFETY: an owned object value holds a strong reference to a live header.
        debug_assert!(unsafe { (*(payload as *mut ObjectHeader)).type_index } as u64 == head);
        return payload;
    }
    encode_value(head, payload)
}

/// [`encode`] of a value that is not an object. `extern "C"`, so that it cannot unwind (its
/// one failure, allocating a box, aborts): a constructor storing two values then needs no
/// cleanup path for the first when encoding the second.
#[inline(never)]
extern "C" fn encode_value(head: u64, payload: *mut u8) -> *mut u8 {
    let plain = |bits: usize| std::ptr::without_provenance_mut(bits);
    let bits = payload.addr();
    match head {
        h if h == TypeIndex::NONE as u64 && bits == 0 => plain(NONE_WORD),
        h if h == TypeIndex::BOOL as u64 && bits <= 1 => plain(if bits == 1 { TRUE_WORD } else { FALSE_WORD }),
        h if h == TypeIndex::INT as u64 && ((bits as i64) << 3) >> 3 == bits as i64 => plain((bits << 3) | TAG_INT),
        h if h == TypeIndex::FLOAT as u64 && bits & 0b111 == 0 => plain(bits | TAG_FLOAT),
        // SAFETY: the words came from `into_words` (in `encode`), moved here once.
        _ => boxed(unsafe { Any::from_words(head, payload) }),
    }
}

/// The word of a value that only fits a box.
#[cold]
#[inline(never)]
fn boxed(value: Any) -> *mut u8 {
    (Box::into_raw(Box::new(value)) as *mut u8).map_addr(|a| a | TAG_BOXED)
}

/// The value `word` stores, owned again (the word is no longer the cell's).
///
/// # Safety
/// `word` came from [`encode`] and is decoded once.
unsafe fn decode(word: *mut u8) -> Any {
    match Word::read(word) {
        Word::None => Any::none(),
        Word::Bool(b) => Any::bool(b),
        // SAFETY: the word owned a strong reference to this live object; the value takes it.
        Word::Object(obj) => Any::object(unsafe { crate::arc::ObjectRef::from_raw(obj) }),
        Word::Int(v) => Any::int(v),
        Word::Float(v) => Any::float(v),
        // SAFETY: `encode` made the box, owned by the word until now.
        Word::Boxed(boxed) => *unsafe { Box::from_raw(boxed) },
    }
}

pub struct AnyCell {
    /// The stored value's word ([`Word`]), with [`HELD`] set while a thread holds the cell.
    word: AtomicPtr<u8>,
}

// SAFETY: an object or box the word points to is only reached while the cell is held (or
// owned), so at most one thread moves it at a time; `Any` may move between threads (objects
// are `Send + Sync` by the object contract).
unsafe impl Sync for AnyCell {}
// SAFETY: the word owns an `Any`'s contents, and an `Any` may move between threads.
unsafe impl Send for AnyCell {}

const _: () = {
    const fn is_send<T: Send>() {}
    is_send::<Any>();
    assert!(std::mem::size_of::<AnyCell>() == 8);
};

/// Holds the cell; puts `word` back (releasing it) when dropped.
struct Held<'a> {
    cell: &'a AnyCell,
    word: *mut u8,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.cell.word.store(self.word, Ordering::Release);
    }
}

impl AnyCell {
    #[inline]
    pub fn new(value: Any) -> Self {
        AnyCell { word: AtomicPtr::new(encode(value)) }
    }

    /// The cell held, if no other thread holds it at this instant (one try, no waiting; a
    /// strong exchange, so a free cell is held at once: a weak one may fail spuriously, as
    /// Miri and some CPUs make it). The word kept is the one the exchange found, not the one
    /// loaded before it: equal in value, but when a box was freed and its address reused in
    /// between (the exchange cannot tell), only the found one points at the live box.
    #[inline(always)]
    fn try_hold(&self) -> Option<Held<'_>> {
        let word = self.word.load(Ordering::Relaxed);
        if word.addr() & HELD != 0 {
            return None;
        }
        match self.word.compare_exchange(word, word.map_addr(|a| a | HELD), Ordering::Acquire, Ordering::Relaxed) {
            Ok(found) => Some(Held { cell: self, word: found }),
            Err(_) => None,
        }
    }

    #[inline]
    fn hold(&self) -> Held<'_> {
        match self.try_hold() {
            Some(held) => held,
            None => self.hold_contended(),
        }
    }

    /// [`AnyCell::hold`] after its first try failed: out of line, so a reader's inlined hold
    /// keeps no spin loop (and the registers it needs) on its path.
    #[cold]
    #[inline(never)]
    fn hold_contended(&self) -> Held<'_> {
        let mut spins = 0u32;
        loop {
            if let Some(held) = self.try_hold() {
                return held;
            }
            crate::spin::backoff(&mut spins);
        }
    }

    /// A copy of the value (a new reference for an object).
    #[inline]
    pub fn get(&self) -> Any {
        let held = self.hold();
        match Word::read(held.word) {
            Word::Object(obj) => {
                // SAFETY: the held cell keeps its strong reference, so `obj` is live; the new
                // reference is the copy's. No user code runs (a count increment).
                unsafe {
                    inc_ref(obj);
                    Any::object(crate::arc::ObjectRef::from_raw(obj))
                }
            }
            // SAFETY: the held cell owns the box and keeps it while it is copied (a plain copy:
            // objects are stored in the word, not boxed).
            Word::Boxed(boxed) => unsafe { (*boxed).clone() },
            Word::None => Any::none(),
            Word::Bool(b) => Any::bool(b),
            Word::Int(v) => Any::int(v),
            Word::Float(v) => Any::float(v),
        }
    }

    /// Run `f` on the value, borrowed, while the cell is held: no reference-count change (a
    /// frontend returning the live wrapper of an object field needs none). `f` must be brief
    /// and must neither touch this cell (it would wait for itself) nor run user code.
    #[inline]
    pub fn with_view<R>(&self, f: impl FnOnce(AnyView<'_>) -> R) -> R {
        Self::view_held(&self.hold(), f)
    }

    /// As [`AnyCell::with_view`], but `None`, having run nothing, when another thread holds
    /// the cell at this instant: for a fast path with no spin loop (and no call) on it, whose
    /// caller then takes `with_view`'s way.
    #[inline(always)]
    pub fn with_view_if_free<R>(&self, f: impl FnOnce(AnyView<'_>) -> R) -> Option<R> {
        Some(Self::view_held(&self.try_hold()?, f))
    }

    #[inline(always)]
    fn view_held<R>(held: &Held<'_>, f: impl FnOnce(AnyView<'_>) -> R) -> R {
        let view = match Word::read(held.word) {
            // SAFETY: the held cell keeps its strong reference, so `obj` is live while the
            // view (which cannot leave this frame) is used.
            Word::Object(obj) => unsafe { AnyView::from_object_ptr(obj) },
            // SAFETY: the held cell owns the box and keeps it while the view is used.
            Word::Boxed(boxed) => unsafe { (*boxed).view() },
            Word::None => AnyView::none(),
            Word::Bool(b) => AnyView::bool(b),
            Word::Int(v) => AnyView::int(v),
            Word::Float(v) => AnyView::float(v),
        };
        f(view)
    }

    /// Store `value`, returning the old one (dropped by the caller, outside the lock).
    #[inline]
    pub fn replace(&self, value: Any) -> Any {
        let new = encode(value);
        let mut held = self.hold();
        let old = std::mem::replace(&mut held.word, new);
        drop(held);
        // SAFETY: `old` was the cell's word, which the cell no longer stores: decoded once.
        unsafe { decode(old) }
    }

    /// Store `value`; the old one is dropped after the lock is released.
    #[inline]
    pub fn set(&self, value: Any) {
        drop(self.replace(value));
    }

    pub fn into_inner(self) -> Any {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: owned, so not held; the word is decoded once.
        unsafe { decode(this.word.load(Ordering::Relaxed)) }
    }
}

impl Drop for AnyCell {
    fn drop(&mut self) {
        // Owned, so not held; whatever the word owns is released once.
        let word = *self.word.get_mut();
        if word.addr() & TAG == TAG_REF && word.addr() >= FIRST_ADDRESS {
            // SAFETY: the word owned one strong reference to this live object.
            unsafe { dec_ref(word as *mut ObjectHeader) };
        } else if word.addr() & TAG == TAG_BOXED {
            // SAFETY: `encode` made the box, owned by the word until now.
            drop(unsafe { Box::from_raw(word.map_addr(|a| a & !TAG) as *mut Any) });
        }
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
    #[inline(always)]
    pub unsafe fn cell_in<'a>(self, obj: *mut ObjectHeader) -> Option<&'a AnyCell> {
        // SAFETY: a live object (this function's contract): its header is readable.
        unsafe { self.cell_of(AnyView::from_object_ptr(obj)) }
    }

    /// As [`CellAccess::cell_in`], for the object `view` borrows, its type index from the view
    /// (a frontend that keeps it beside the object pointer reads no header).
    ///
    /// # Safety
    /// `view` borrows a live object, which stays alive for `'a`.
    #[inline(always)]
    pub unsafe fn cell_of<'a>(self, view: AnyView<'_>) -> Option<&'a AnyCell> {
        if !crate::types::is_instance(view.type_index(), self.owner) {
            return None;
        }
        // SAFETY: an instance (this function's contract and the check above).
        Some(unsafe { self.cell_of_instance(view) })
    }

    /// As [`CellAccess::cell_of`] when the object's type is the field's own type exactly: no
    /// walk up a subtype's ancestors, so no call (`None` for a subtype's instance: the caller
    /// takes `cell_of`).
    ///
    /// # Safety
    /// As [`CellAccess::cell_of`].
    #[inline(always)]
    pub unsafe fn cell_of_own_type<'a>(self, view: AnyView<'_>) -> Option<&'a AnyCell> {
        if view.type_index() != self.owner {
            return None;
        }
        // SAFETY: an instance (this function's contract and the check above).
        Some(unsafe { self.cell_of_instance(view) })
    }

    /// # Safety
    /// `view` borrows a live instance of the field's type, which stays alive for `'a`.
    #[inline(always)]
    unsafe fn cell_of_instance<'a>(self, view: AnyView<'_>) -> &'a AnyCell {
        // SAFETY: an object view (this function's contract).
        let obj = unsafe { view.as_object_ptr().unwrap_unchecked() };
        // SAFETY: an instance of `owner` has an `AnyCell` at `offset` (the `cell_field_rw!`
        // contract); the caller keeps the object alive for `'a`.
        unsafe { &*((obj as *const u8).add(self.offset) as *const AnyCell) }
    }
}

/// The cell that field getter `getter` would read in `obj`, when `getter` is a cell field's
/// (of this copy of the core) and `obj` an instance of its type. A frontend may then read the
/// cell itself with [`AnyCell::with_view`] instead of calling the getter; one that reads the
/// same field often finds its [`CellAccess`] once instead.
///
/// # Safety
/// `getter` is a live Function and `obj` a live object; the cell lives as long as `obj`.
#[inline(always)]
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
