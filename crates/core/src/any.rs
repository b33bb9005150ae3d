//! `Any` and `AnyView`: 16-byte value cells that cross every boundary.
//!
//! Layout `{ i32 type_index, u32 small_len, u64 payload }` (the first two kept as one `head`
//! word, see [`Any`]). Every unused byte is zero, so
//! two cells holding the same value compare and hash bytewise. Kinds below
//! [`TypeIndex::STATIC_END`] are plain values; kinds at or above [`TypeIndex::OBJECT`] hold a
//! pointer to an object header in `payload` (owned by `Any`, borrowed by `AnyView`).

use std::marker::PhantomData;
use std::mem::ManuallyDrop;

use crate::arc::ObjectRef;
use crate::object::{dec_ref, inc_ref, ObjectHeader};

/// Well-known type indices. User types start at [`TypeIndex::FIRST_USER`].
#[non_exhaustive]
pub struct TypeIndex;

impl TypeIndex {
    pub const NONE: i32 = 0;
    pub const INT: i32 = 1;
    pub const BOOL: i32 = 2;
    pub const FLOAT: i32 = 3;
    pub const OPAQUE_PTR: i32 = 4;
    /// A string of at most 7 bytes stored in `payload` (length in `small_len`).
    pub const SMALL_STR: i32 = 5;
    /// Bytes (at most 7) stored in `payload`.
    pub const SMALL_BYTES: i32 = 6;
    /// A borrowed UTF-8 view (`payload` = pointer, `small_len` = length); `AnyView` only.
    pub const RAW_STR: i32 = 7;
    /// A borrowed byte view; `AnyView` only.
    pub const RAW_BYTES: i32 = 8;
    /// Static kinds are below this.
    pub const STATIC_END: i32 = 64;
    /// The root object type; every index from here on is an object.
    pub const OBJECT: i32 = 64;
    pub const STR: i32 = 65;
    pub const BYTES: i32 = 66;
    pub const ERROR: i32 = 67;
    pub const FUNCTION: i32 = 68;
    pub const ARRAY: i32 = 69;
    pub const MAP: i32 = 70;
    pub const MODULE: i32 = 71;
    pub const OPAQUE: i32 = 72;
    /// A language's own value held by native code (`host_value::HostValueObj`).
    pub const HOST_VALUE: i32 = 73;
    /// First index handed to registered types.
    pub const FIRST_USER: i32 = 128;

    /// Do values of kind `t` reach a language as a tied wrapper? Objects do, except Str and
    /// Bytes, which every frontend converts to its own strings and byte strings (and Functions
    /// made from a language's callable, which come back as that callable:
    /// `TieHost::callable_of`).
    #[inline(always)]
    pub const fn returns_as_wrapper(t: i32) -> bool {
        t >= TypeIndex::OBJECT && t != TypeIndex::STR && t != TypeIndex::BYTES
    }
}

/// Most bytes a string or bytes value may have to be stored inline.
pub const SMALL_MAX: usize = 7;

/// An owned value: objects inside hold a strong reference.
#[repr(C)]
pub struct Any {
    /// `type_index` (low 32 bits) and `small_len` (high 32 bits) in one word: a cell is two
    /// scalars, so Rust passes and returns it in two registers (no memory round trip with
    /// mismatched store and load widths, which stalled store forwarding on every call).
    head: u64,
    payload: Payload,
}

/// The head word of a cell: `type_index` in bytes 0-3, `small_len` in bytes 4-7.
#[inline(always)]
const fn head(type_index: i32, small_len: u32) -> u64 {
    (type_index as u32 as u64) | ((small_len as u64) << 32)
}

macro_rules! head_accessors {
    () => {
        #[inline(always)]
        fn tix(&self) -> i32 {
            self.head as u32 as i32
        }
        #[inline(always)]
        fn small(&self) -> u32 {
            (self.head >> 32) as u32
        }
    };
}

/// `small_len` of a lent object view (see [`AnyView::lent_object`]); 0 in every other object cell.
pub const LENT_MARK: u32 = 1;

/// A borrowed value: same layout as [`Any`], no ownership.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AnyView<'a> {
    /// As in [`Any`].
    head: u64,
    payload: Payload,
    _borrow: PhantomData<&'a ()>,
}

const _: () = {
    assert!(std::mem::size_of::<Any>() == 16);
    assert!(std::mem::align_of::<Any>() == 8);
    assert!(std::mem::size_of::<AnyView<'static>>() == 16);
    assert!(std::mem::offset_of!(Any, head) == 0);
    assert!(std::mem::offset_of!(Any, payload) == 8);
    assert!(std::mem::offset_of!(AnyView<'static>, head) == 0);
    // `head` keeps `type_index` at byte 0 and `small_len` at byte 4 only on little-endian targets.
    assert!(cfg!(target_endian = "little"));
    assert!(std::mem::offset_of!(AnyView<'static>, payload) == 8);
};

/// The payload word: a pointer-typed cell so that object and view pointers keep their
/// provenance (Miri and the compiler can follow them), while plain values (ints, floats,
/// inline bytes) are stored as provenance-free addresses. Bytewise it is just a `u64`.
#[repr(transparent)]
#[derive(Clone, Copy)]
struct Payload(*mut u8);

impl Payload {
    const ZERO: Payload = Payload(std::ptr::null_mut());
    fn bits(v: u64) -> Payload {
        Payload(std::ptr::without_provenance_mut(v as usize))
    }
    fn ptr<T>(p: *const T) -> Payload {
        Payload(p as *mut u8)
    }
    fn to_bits(self) -> u64 {
        self.0.addr() as u64
    }
    fn as_ptr<T>(self) -> *mut T {
        self.0 as *mut T
    }
    /// For raw parts handed to C: a pointer payload's provenance is exposed so that
    /// [`Payload::from_exposed`] can rebuild it.
    fn expose(self) -> u64 {
        self.0.expose_provenance() as u64
    }
    fn from_exposed(v: u64) -> Payload {
        Payload(std::ptr::with_exposed_provenance_mut(v as usize))
    }
}

const _: () = assert!(std::mem::size_of::<Payload>() == 8);

fn pack_small(bytes: &[u8]) -> Payload {
    debug_assert!(bytes.len() <= SMALL_MAX);
    let mut buf = [0u8; 8];
    buf[..bytes.len()].copy_from_slice(bytes);
    Payload::bits(u64::from_le_bytes(buf))
}

impl Any {
    head_accessors!();

    pub const fn none() -> Any {
        Any { head: head(TypeIndex::NONE, 0), payload: Payload::ZERO }
    }
    pub fn int(v: i64) -> Any {
        Any { head: head(TypeIndex::INT, 0), payload: Payload::bits(v as u64) }
    }
    pub fn float(v: f64) -> Any {
        Any { head: head(TypeIndex::FLOAT, 0), payload: Payload::bits(v.to_bits()) }
    }
    pub fn bool(v: bool) -> Any {
        Any { head: head(TypeIndex::BOOL, 0), payload: Payload::bits(v as u64) }
    }
    /// A string: inline when at most 7 bytes, else a `Str` object.
    pub fn str(s: &str) -> Any {
        if s.len() <= SMALL_MAX {
            Any { head: head(TypeIndex::SMALL_STR, s.len() as u32), payload: pack_small(s.as_bytes()) }
        } else {
            Any::object(crate::containers::StrObj::new(s).into())
        }
    }
    /// Bytes: inline when at most 7, else a `Bytes` object.
    pub fn bytes(b: &[u8]) -> Any {
        if b.len() <= SMALL_MAX {
            Any { head: head(TypeIndex::SMALL_BYTES, b.len() as u32), payload: pack_small(b) }
        } else {
            Any::object(crate::containers::BytesObj::new(b).into())
        }
    }
    pub fn object(obj: ObjectRef) -> Any {
        let ptr = obj.into_raw();
        // SAFETY: a live header.
        let type_index = unsafe { (*ptr).type_index };
        Any { head: head(type_index, 0), payload: Payload::ptr(ptr) }
    }

    pub fn view(&self) -> AnyView<'_> {
        AnyView { head: self.head, payload: self.payload, _borrow: PhantomData }
    }

    pub fn type_index(&self) -> i32 {
        self.tix()
    }

    pub fn is_none(&self) -> bool {
        self.tix() == TypeIndex::NONE
    }

    /// Raw parts, for the C ABI.
    pub fn into_raw_parts(self) -> (i32, u32, u64) {
        let this = ManuallyDrop::new(self);
        (this.tix(), this.small(), this.payload.expose())
    }

    /// # Safety
    /// The parts form a valid owned cell (an object kind carries a strong reference).
    pub unsafe fn from_raw_parts(type_index: i32, small_len: u32, payload: u64) -> Any {
        Any { head: head(type_index, small_len), payload: Payload::from_exposed(payload) }
    }

    /// The head word and the payload with its provenance, for [`crate::cell::AnyCell`].
    pub(crate) fn into_words(self) -> (u64, *mut u8) {
        let this = ManuallyDrop::new(self);
        (this.head, this.payload.0)
    }

    /// # Safety
    /// The words came from [`Any::into_words`] of a value not dropped since.
    pub(crate) unsafe fn from_words(head: u64, payload: *mut u8) -> Any {
        Any { head, payload: Payload(payload) }
    }

    /// The string inside (inline or a `Str` object), borrowed from this cell. Unlike
    /// `self.view().as_str()`, an inline string borrows `self`, not a temporary view.
    pub fn as_str(&self) -> Option<&str> {
        if self.tix() == TypeIndex::SMALL_STR {
            let len = (self.small() as usize).min(SMALL_MAX);
            // SAFETY: small strings keep `len <= 7` bytes of UTF-8 (checked when made) at the
            // start of the little-endian payload, which lives in `self`.
            let bytes = unsafe { std::slice::from_raw_parts(&self.payload as *const Payload as *const u8, len) };
            return std::str::from_utf8(bytes).ok();
        }
        // SAFETY: other kinds keep their bytes outside the cell (a `Str` object `self` owns a
        // reference to), so they outlive the temporary view and live as long as `&self`.
        self.view().as_str().map(|s| unsafe { &*(s as *const str) })
    }

    /// Take the object out, if this holds one.
    pub fn into_object(self) -> Option<ObjectRef> {
        if self.tix() >= TypeIndex::OBJECT {
            let this = ManuallyDrop::new(self);
            // SAFETY: object kinds own one strong reference, which moves to the `ObjectRef`.
            Some(unsafe { ObjectRef::from_raw(this.payload.as_ptr::<ObjectHeader>()) })
        } else {
            None
        }
    }
}

// SAFETY: a view borrows plain values, immutable string/byte data or an object, and every
// object is Send + Sync by the object contract (see `ObjectRef`); `'a` bounds the borrow.
unsafe impl Send for AnyView<'_> {}
// SAFETY: the reason Sync holds is the one above: a view borrows plain values, immutable
// string/byte data or an object, and every object is Send + Sync by the object contract (see
// `ObjectRef`); `'a` bounds the borrow.
unsafe impl Sync for AnyView<'_> {}

// SAFETY: an owned cell holds plain values, inline bytes or a strong reference to an object,
// and every object is Send + Sync by the object contract (see `ObjectRef`). Views (which
// borrow) are never stored in an `Any`: `to_owned_any` copies them.
unsafe impl Send for Any {}
// SAFETY: what a shared `&Any` reaches (plain values, inline bytes, a Send + Sync object) may
// be read from many threads at once; `&Any` only reads.
unsafe impl Sync for Any {}

impl Default for Any {
    fn default() -> Self {
        Any::none()
    }
}

impl Clone for Any {
    fn clone(&self) -> Self {
        if self.tix() >= TypeIndex::OBJECT {
            // SAFETY: object kinds hold a strong reference to a live object.
            unsafe { inc_ref(self.payload.as_ptr::<ObjectHeader>()) };
        }
        Any { head: head(self.tix(), self.small()), payload: self.payload }
    }
}

impl Drop for Any {
    fn drop(&mut self) {
        if self.tix() >= TypeIndex::OBJECT {
            // SAFETY: we own one strong reference.
            unsafe { dec_ref(self.payload.as_ptr::<ObjectHeader>()) };
        }
    }
}

impl PartialEq for Any {
    /// Bytewise: same kind and payload (objects compare by identity).
    fn eq(&self, other: &Self) -> bool {
        self.view() == other.view()
    }
}

impl<'a> PartialEq for AnyView<'a> {
    fn eq(&self, other: &Self) -> bool {
        self.tix() == other.tix() && self.small() == other.small() && self.payload.to_bits() == other.payload.to_bits()
    }
}

impl std::fmt::Debug for Any {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.view().fmt(f)
    }
}

#[cold]
fn too_long_for_view(kind: &str, len: usize) -> crate::Error {
    crate::Error::value(format!(
        "a {kind} of {len} bytes is too long to pass to native code (at most {} bytes)",
        AnyView::MAX_VIEW_LEN
    ))
}

impl<'a> AnyView<'a> {
    head_accessors!();
    pub const fn none() -> AnyView<'static> {
        AnyView { head: head(TypeIndex::NONE, 0), payload: Payload::ZERO, _borrow: PhantomData }
    }
    pub fn int(v: i64) -> AnyView<'static> {
        AnyView { head: head(TypeIndex::INT, 0), payload: Payload::bits(v as u64), _borrow: PhantomData }
    }
    pub fn float(v: f64) -> AnyView<'static> {
        AnyView { head: head(TypeIndex::FLOAT, 0), payload: Payload::bits(v.to_bits()), _borrow: PhantomData }
    }
    pub fn bool(v: bool) -> AnyView<'static> {
        AnyView { head: head(TypeIndex::BOOL, 0), payload: Payload::bits(v as u64), _borrow: PhantomData }
    }
    /// Borrow a string without copying, or a ValueError when it is longer than
    /// [`AnyView::MAX_VIEW_LEN`] bytes (a view's length is 32 bits).
    pub fn try_raw_str(s: &'a str) -> crate::Result<AnyView<'a>> {
        match s.len() <= Self::MAX_VIEW_LEN {
            true => Ok(Self::raw_str(s)),
            false => Err(too_long_for_view("str", s.len())),
        }
    }
    /// As [`AnyView::try_raw_str`], for bytes.
    pub fn try_raw_bytes(b: &'a [u8]) -> crate::Result<AnyView<'a>> {
        match b.len() <= Self::MAX_VIEW_LEN {
            true => Ok(Self::raw_bytes(b)),
            false => Err(too_long_for_view("bytes", b.len())),
        }
    }
    /// The longest string or byte string a view borrows (its length field is 32 bits).
    pub const MAX_VIEW_LEN: usize = u32::MAX as usize;
    /// Borrow a string without copying (strings longer than `u32::MAX` are not viewable).
    pub fn raw_str(s: &'a str) -> AnyView<'a> {
        assert!(s.len() <= u32::MAX as usize, "string too long for a view");
        AnyView {
            head: head(TypeIndex::RAW_STR, s.len() as u32),
            payload: Payload::ptr(s.as_ptr()),
            _borrow: PhantomData,
        }
    }
    pub fn raw_bytes(b: &'a [u8]) -> AnyView<'a> {
        assert!(b.len() <= u32::MAX as usize, "bytes too long for a view");
        AnyView {
            head: head(TypeIndex::RAW_BYTES, b.len() as u32),
            payload: Payload::ptr(b.as_ptr()),
            _borrow: PhantomData,
        }
    }
    /// Borrow an object.
    pub fn object(obj: &'a ObjectRef) -> AnyView<'a> {
        AnyView { head: head(obj.type_index(), 0), payload: Payload::ptr(obj.as_ptr()), _borrow: PhantomData }
    }
    /// Borrow an object from a raw header pointer.
    ///
    /// # Safety
    /// `obj` stays alive for `'a`.
    pub unsafe fn from_object_ptr(obj: *mut ObjectHeader) -> AnyView<'a> {
        // SAFETY: `obj` is a live object (this function's contract), so its header is readable.
        let type_index = unsafe { (*obj).type_index };
        AnyView { head: head(type_index, 0), payload: Payload::ptr(obj), _borrow: PhantomData }
    }

    /// Borrow an object whose type index the caller knows, without reading its header (a
    /// frontend that keeps the type next to the handle: the JVM's wrapper word).
    ///
    /// # Safety
    /// `obj` stays alive for `'a` and its header's `type_index` is `type_index`.
    #[inline(always)]
    pub unsafe fn from_object_ptr_of_type(obj: *mut ObjectHeader, type_index: i32) -> AnyView<'a> {
        debug_assert!(type_index >= TypeIndex::OBJECT);
        AnyView { head: head(type_index, 0), payload: Payload::ptr(obj), _borrow: PhantomData }
    }

    /// This object view as a lent one (see [`AnyView::lent_object`]), from its own type index
    /// (no header read).
    ///
    /// # Safety
    /// `self` is an object view made by [`AnyView::from_object_ptr`] or
    /// [`AnyView::from_object_ptr_of_type`]; the caller gives up one strong reference to its
    /// object, and the view goes only to a function that adopts lent views.
    #[inline(always)]
    pub unsafe fn lent(self) -> AnyView<'a> {
        debug_assert!(self.is_object());
        AnyView { head: head(self.tix(), LENT_MARK), payload: self.payload, _borrow: PhantomData }
    }

    /// An object argument that carries one strong reference for the callee (a *lent* view,
    /// marked by [`LENT_MARK`] in `small_len`). Only for functions flagged
    /// `FUNC_ADOPTS_LENT`, which convert each argument exactly once: the conversion adopts
    /// the reference instead of adding one (`to_owned_any`, `to_object`), on success and on a
    /// type mismatch alike, and the call releases lent arguments it never converted.
    ///
    /// # Safety
    /// `obj` is live and the caller gives up one strong reference to it.
    pub unsafe fn lent_object(obj: *mut ObjectHeader) -> AnyView<'a> {
        // SAFETY: `obj` is a live object (this function's contract), so its header is readable.
        let type_index = unsafe { (*obj).type_index };
        AnyView { head: head(type_index, LENT_MARK), payload: Payload::ptr(obj), _borrow: PhantomData }
    }

    /// True for a lent object view (see [`AnyView::lent_object`]).
    #[inline]
    pub fn is_lent(&self) -> bool {
        self.small() == LENT_MARK && self.tix() >= TypeIndex::OBJECT
    }

    /// Drop the reference a lent view carries; no-op for other views. For a callee that
    /// will not convert this argument (an arity error, an earlier argument's failure).
    pub fn release_if_lent(&self) {
        if self.is_lent() {
            // SAFETY: a lent view owns one strong reference (see `lent_object`), given up here.
            unsafe { dec_ref(self.payload.as_ptr::<ObjectHeader>()) };
        }
    }

    pub fn type_index(&self) -> i32 {
        self.tix()
    }
    pub fn is_none(&self) -> bool {
        self.tix() == TypeIndex::NONE
    }
    pub fn is_object(&self) -> bool {
        self.tix() >= TypeIndex::OBJECT
    }
    pub fn as_int(&self) -> Option<i64> {
        (self.tix() == TypeIndex::INT).then_some(self.payload.to_bits() as i64)
    }
    pub fn as_bool(&self) -> Option<bool> {
        (self.tix() == TypeIndex::BOOL).then_some(self.payload.to_bits() != 0)
    }
    pub fn as_float(&self) -> Option<f64> {
        (self.tix() == TypeIndex::FLOAT).then_some(f64::from_bits(self.payload.to_bits()))
    }
    pub fn as_opaque_ptr(&self) -> Option<*mut std::ffi::c_void> {
        (self.tix() == TypeIndex::OPAQUE_PTR).then_some(self.payload.as_ptr::<std::ffi::c_void>())
    }
    /// The object's header pointer, borrowed.
    pub fn as_object_ptr(&self) -> Option<*mut ObjectHeader> {
        self.is_object().then_some(self.payload.as_ptr::<ObjectHeader>())
    }
    /// A new strong reference to the object inside (a lent view's own, adopted).
    #[inline]
    pub fn to_object(&self) -> Option<ObjectRef> {
        let p = self.as_object_ptr()?;
        if self.small() == LENT_MARK {
            // SAFETY: a lent view carries one strong reference for its callee.
            Some(unsafe { ObjectRef::from_raw(p) })
        } else {
            // SAFETY: the view borrows a live object for `'a`.
            Some(unsafe { ObjectRef::from_borrowed(p) })
        }
    }
    /// Borrow the object as a typed value, if it is a `T`.
    #[inline]
    pub fn downcast_ref<T: crate::Object>(&self) -> Option<&'a T> {
        let p = self.as_object_ptr()?;
        if crate::types::is_instance(self.tix(), T::type_index()) {
            // SAFETY: checked type; the view keeps the object alive for `'a`.
            Some(unsafe { &(*(p as *const crate::arc::ObjectBox<T>)).value })
        } else {
            None
        }
    }

    /// The string inside (small, view or `Str` object), if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self.tix() {
            TypeIndex::SMALL_STR | TypeIndex::RAW_STR => std::str::from_utf8(self.inline_or_raw_bytes()).ok(),
            TypeIndex::STR => self.downcast_ref::<crate::containers::StrObj>().map(|s| s.as_str()),
            _ => None,
        }
    }

    /// The bytes inside (small, view or `Bytes` object), if this is bytes.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self.tix() {
            TypeIndex::SMALL_BYTES | TypeIndex::RAW_BYTES => Some(self.inline_or_raw_bytes()),
            TypeIndex::BYTES => self.downcast_ref::<crate::containers::BytesObj>().map(|b| b.as_bytes()),
            _ => None,
        }
    }

    fn inline_or_raw_bytes(&self) -> &[u8] {
        let len = self.small() as usize;
        if matches!(self.tix(), TypeIndex::SMALL_STR | TypeIndex::SMALL_BYTES) {
            // SAFETY: small kinds keep `len <= 7` bytes in the payload, little-endian, so the
            // payload's first bytes are the data; the slice borrows `self`.
            unsafe { std::slice::from_raw_parts(&self.payload as *const Payload as *const u8, len.min(SMALL_MAX)) }
        } else {
            // SAFETY: RAW kinds borrow `len` bytes that live for `'a`, which outlives `&self`.
            unsafe { std::slice::from_raw_parts(self.payload.as_ptr::<u8>(), len) }
        }
    }

    /// An owned copy: takes a reference on objects (adopts a lent view's); copies views into
    /// owned strings/bytes. Inline: a typed call converts every argument through here.
    #[inline]
    pub fn to_owned_any(&self) -> Any {
        match self.tix() {
            TypeIndex::RAW_STR | TypeIndex::RAW_BYTES => self.to_owned_borrowed_data(),
            t if t >= TypeIndex::OBJECT && self.small() == LENT_MARK => {
                // A lent view carries one strong reference: the new `Any` adopts it.
                Any { head: head(t, 0), payload: self.payload }
            }
            t => {
                if t >= TypeIndex::OBJECT {
                    // SAFETY: a live borrowed object; the new `Any` owns the reference we add.
                    unsafe { inc_ref(self.payload.as_ptr::<ObjectHeader>()) };
                }
                Any { head: self.head, payload: self.payload }
            }
        }
    }

    #[inline(never)]
    fn to_owned_borrowed_data(self) -> Any {
        match self.tix() {
            TypeIndex::RAW_STR => Any::str(self.as_str().unwrap_or_default()),
            _ => Any::bytes(self.as_bytes().unwrap_or_default()),
        }
    }

    /// Raw parts, for the C ABI.
    pub fn raw_parts(&self) -> (i32, u32, u64) {
        (self.tix(), self.small(), self.payload.expose())
    }

    /// # Safety
    /// The parts form a valid cell whose borrowed data outlives `'a`.
    pub unsafe fn from_raw_parts(type_index: i32, small_len: u32, payload: u64) -> AnyView<'a> {
        AnyView { head: head(type_index, small_len), payload: Payload::from_exposed(payload), _borrow: PhantomData }
    }

    /// A human name of this value's kind, for error messages ("int", "str", "testing.Pair").
    pub fn kind_name(&self) -> String {
        match self.downcast_ref::<crate::host_value::HostValueObj>() {
            Some(host) => host.type_name().to_string(),
            None => crate::types::kind_name(self.tix()),
        }
    }
}

impl std::fmt::Debug for AnyView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.tix() {
            TypeIndex::NONE => write!(f, "None"),
            TypeIndex::INT => write!(f, "{}", self.payload.to_bits() as i64),
            TypeIndex::BOOL => write!(f, "{}", self.payload.to_bits() != 0),
            TypeIndex::FLOAT => write!(f, "{}", f64::from_bits(self.payload.to_bits())),
            TypeIndex::SMALL_STR | TypeIndex::RAW_STR | TypeIndex::STR => {
                write!(f, "{:?}", self.as_str().unwrap_or(""))
            }
            TypeIndex::SMALL_BYTES | TypeIndex::RAW_BYTES | TypeIndex::BYTES => {
                write!(f, "b{:?}", self.as_bytes().unwrap_or(&[]))
            }
            t if t >= TypeIndex::OBJECT => write!(f, "<{} at {:#x}>", self.kind_name(), self.payload.to_bits()),
            t => write!(f, "<kind {t}>"),
        }
    }
}
