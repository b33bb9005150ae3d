//! Owning pointers to native objects: `ObjectArc<T>`, `WeakObjectArc<T>` and the untyped
//! `ObjectRef`. All follow the count protocol in [`crate::object`].

use std::marker::PhantomData;
use std::mem::{align_of, size_of, ManuallyDrop};
use std::ptr::NonNull;

use crate::alloc::{alloc_object, free_object};
use crate::object::{
    dec_ref, dec_weak, inc_ref, inc_weak, try_upgrade, Object, ObjectHeader, DELETE_MEMORY, DELETE_VALUE,
};

/// The memory of a Rust object: the header, then the value.
#[repr(C)]
pub struct ObjectBox<T> {
    pub header: ObjectHeader,
    pub value: T,
}

/// A strong reference to a native object holding a `T`. One pointer wide.
#[repr(transparent)]
pub struct ObjectArc<T: Object> {
    ptr: NonNull<ObjectBox<T>>,
    _owns: PhantomData<T>,
}

const _: () = {
    assert!(size_of::<ObjectArc<crate::containers::StrObj>>() == 8);
    assert!(size_of::<Option<ObjectArc<crate::containers::StrObj>>>() == 8);
    assert!(size_of::<ObjectRef>() == 8);
    assert!(size_of::<Option<ObjectRef>>() == 8);
};

// SAFETY: the count is atomic; sharing the arc shares `&T`, so both need `T: Send + Sync`
// (the same rule as `std::sync::Arc`).
unsafe impl<T: Object + Send + Sync> Send for ObjectArc<T> {}
// SAFETY: the reason Object holds is the one above: the count is atomic; sharing the arc shares
// `&T`, so both need `T: Send + Sync` (the same rule as `std::sync::Arc`).
unsafe impl<T: Object + Send + Sync> Sync for ObjectArc<T> {}

unsafe extern "C" fn delete_box<T: Object>(obj: *mut ObjectHeader, flags: i32) {
    let boxed = obj as *mut ObjectBox<T>;
    if flags & DELETE_VALUE != 0 {
        // SAFETY: called once with DELETE_VALUE, when the last strong reference went away.
        unsafe { std::ptr::drop_in_place(std::ptr::addr_of_mut!((*boxed).value)) };
    }
    if flags & DELETE_MEMORY != 0 {
        // SAFETY: called once with DELETE_MEMORY after the last reference of any kind; the
        // layout is the one `ObjectArc::new` allocated.
        unsafe { free_object(obj, size_of::<ObjectBox<T>>(), align_of::<ObjectBox<T>>().max(8)) };
    }
}

/// A type stored with an inline trailing array of `Item`s (strings, bytes, small arrays).
///
/// # Safety
/// `item_count` must read a plain (`Copy`, no drop glue) field of the value through the raw
/// pointer: the deleter calls it again after the value was dropped, to free the right size.
/// Trailing counts live in the object body, never over the reference count. When the object
/// cannot be allocated, the value is forgotten (never dropped without its items) and the
/// items not yet written are dropped with their iterator.
pub unsafe trait ExtraItems: Object {
    type Item;
    /// Number of trailing items, read from a value that may already be dropped.
    ///
    /// # Safety
    /// `this` points to a value that was initialised (and possibly dropped since).
    unsafe fn item_count(this: *const Self) -> usize;

    /// Called once, right after the items are written, with where they start. A type whose
    /// accessors read the items through `&self` stores `items` here and reads through it:
    /// a pointer derived from `&self` may only reach the value itself (Rust's aliasing
    /// model; Miri rejects reading past the referent), while `items` carries the whole
    /// allocation's provenance.
    ///
    /// # Safety
    /// `this` points to the initialised value and `items` to its `item_count` items.
    unsafe fn bind_items(this: *mut Self, items: *mut Self::Item) {
        let _ = (this, items);
    }
}

/// Byte offset of the trailing items and the full allocation layout for `count` items.
const fn extra_layout<T, I>(count: usize) -> (usize, usize, usize) {
    let align = if align_of::<I>() > align_of::<ObjectBox<T>>() { align_of::<I>() } else { align_of::<ObjectBox<T>>() };
    let align = if align < 8 { 8 } else { align };
    let item_align = align_of::<I>();
    let offset = size_of::<ObjectBox<T>>().div_ceil(item_align) * item_align;
    (offset, offset + count * size_of::<I>(), align)
}

unsafe extern "C" fn delete_extra<T: ExtraItems>(obj: *mut ObjectHeader, flags: i32) {
    let boxed = obj as *mut ObjectBox<T>;
    // SAFETY: the count field stays readable after the value is dropped (trait contract).
    let count = unsafe { T::item_count(std::ptr::addr_of!((*boxed).value)) };
    let (offset, size, align) = extra_layout::<T, T::Item>(count);
    if flags & DELETE_VALUE != 0 {
        // SAFETY: drop the items, then the value, exactly once (last strong reference).
        unsafe {
            let items = (obj as *mut u8).add(offset) as *mut T::Item;
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(items, count));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*boxed).value));
        }
    }
    if flags & DELETE_MEMORY != 0 {
        // SAFETY: last reference of any kind; same layout as allocated.
        unsafe { free_object(obj, size, align) };
    }
}

impl<T: Object> ObjectArc<T> {
    /// Allocate a new object through the allocator registry.
    pub fn new(value: T) -> Self {
        let obj = alloc_object(size_of::<ObjectBox<T>>(), align_of::<ObjectBox<T>>().max(8));
        // SAFETY: `obj` is fresh memory for an `ObjectBox<T>`; `alloc_tag` is already set.
        unsafe {
            init_header(obj, T::type_index(), delete_box::<T>);
            std::ptr::addr_of_mut!((*(obj as *mut ObjectBox<T>)).value).write(value);
            Self::from_raw(obj)
        }
    }

    /// Allocate a new object followed inline by `items` (exactly `items.len()` of them).
    pub fn new_with_extra_items<I>(value: T, items: I) -> Self
    where
        T: ExtraItems,
        I: ExactSizeIterator<Item = T::Item>,
    {
        let count = items.len();
        let (offset, size, align) = extra_layout::<T, T::Item>(count);
        // Until its items are bound the value must not be dropped (its `Drop` reads them): a
        // failed allocation forgets it and drops only `items`.
        let value = ManuallyDrop::new(value);
        let obj = alloc_object(size, align);
        // SAFETY: fresh memory of `size` bytes: header, value, then `count` items at `offset`.
        unsafe {
            init_header(obj, T::type_index(), delete_extra::<T>);
            let boxed = obj as *mut ObjectBox<T>;
            std::ptr::addr_of_mut!((*boxed).value).write(ManuallyDrop::into_inner(value));
            let base = (obj as *mut u8).add(offset) as *mut T::Item;
            let mut written = 0;
            for item in items.take(count) {
                base.add(written).write(item);
                written += 1;
            }
            assert_eq!(written, count, "ExactSizeIterator yielded fewer items than its len()");
            T::bind_items(std::ptr::addr_of_mut!((*boxed).value), base);
            debug_assert_eq!(T::item_count(std::ptr::addr_of!((*boxed).value)), count);
            Self::from_raw(obj)
        }
    }

    /// The trailing items of an object made by [`Self::new_with_extra_items`].
    pub fn extra_items(&self) -> &[T::Item]
    where
        T: ExtraItems,
    {
        // SAFETY: the object was allocated with this many initialised items after the value.
        unsafe {
            let count = T::item_count(&self.ptr.as_ref().value);
            let (offset, _, _) = extra_layout::<T, T::Item>(count);
            std::slice::from_raw_parts((self.ptr.as_ptr() as *const u8).add(offset) as *const T::Item, count)
        }
    }

    /// Adopt a strong reference.
    ///
    /// # Safety
    /// `obj` is a live object holding a `T` (an `ObjectBox<T>`), and the caller gives up one
    /// strong reference it owns.
    pub unsafe fn from_raw(obj: *mut ObjectHeader) -> Self {
        // SAFETY: the caller guarantees non-null.
        Self { ptr: unsafe { NonNull::new_unchecked(obj as *mut ObjectBox<T>) }, _owns: PhantomData }
    }

    /// Give up ownership without touching the count.
    pub fn into_raw(this: Self) -> *mut ObjectHeader {
        ManuallyDrop::new(this).ptr.as_ptr() as *mut ObjectHeader
    }

    pub fn as_ptr(this: &Self) -> *mut ObjectHeader {
        this.ptr.as_ptr() as *mut ObjectHeader
    }

    pub fn header(this: &Self) -> &ObjectHeader {
        // SAFETY: live while `this` is.
        unsafe { &this.ptr.as_ref().header }
    }

    /// Mutable access when this is the only reference (strong 1, no weak references).
    pub fn get_mut(this: &mut Self) -> Option<&mut T> {
        if Self::header(this).combined_ref_count.load(std::sync::atomic::Ordering::Acquire)
            == ObjectHeader::INITIAL_COUNT
        {
            // SAFETY: unique: no other strong or weak reference can observe the value.
            Some(unsafe { &mut this.ptr.as_mut().value })
        } else {
            None
        }
    }

    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    pub fn downgrade(this: &Self) -> WeakObjectArc<T> {
        // SAFETY: `this` holds a strong reference.
        unsafe { inc_weak(Self::as_ptr(this)) };
        WeakObjectArc { ptr: this.ptr, _owns: PhantomData }
    }

    pub fn strong_count(this: &Self) -> u32 {
        Self::header(this).strong_count()
    }
}

/// # Safety
/// `obj` is fresh object memory from `alloc_object`.
pub(crate) unsafe fn init_header(obj: *mut ObjectHeader, type_index: i32, deleter: crate::object::Deleter) {
    // SAFETY: `obj` is fresh object memory from `alloc_object` (this function's contract), ours
    // to write; `alloc_tag` was written by the allocator and is left alone.
    unsafe {
        std::ptr::addr_of_mut!((*obj).combined_ref_count).write(ObjectHeader::INITIAL_COUNT.into());
        std::ptr::addr_of_mut!((*obj).type_index).write(type_index);
        std::ptr::addr_of_mut!((*obj).deleter).write(deleter);
    }
}

impl<T: Object> std::ops::Deref for ObjectArc<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the value lives while a strong reference does.
        unsafe { &self.ptr.as_ref().value }
    }
}

impl<T: Object> Clone for ObjectArc<T> {
    fn clone(&self) -> Self {
        // SAFETY: `self` holds a strong reference.
        unsafe { inc_ref(Self::as_ptr(self)) };
        Self { ptr: self.ptr, _owns: PhantomData }
    }
}

impl<T: Object> Drop for ObjectArc<T> {
    fn drop(&mut self) {
        // SAFETY: we own one strong reference.
        unsafe { dec_ref(Self::as_ptr(self)) };
    }
}

impl<T: Object> std::fmt::Debug for ObjectArc<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} object at {:p}>", T::TYPE_KEY, Self::as_ptr(self))
    }
}

/// A weak reference: keeps the memory, not the value.
pub struct WeakObjectArc<T: Object> {
    ptr: NonNull<ObjectBox<T>>,
    _owns: PhantomData<T>,
}

// SAFETY: upgrading yields an `ObjectArc<T>`, so the same bounds apply.
unsafe impl<T: Object + Send + Sync> Send for WeakObjectArc<T> {}
// SAFETY: the reason Object holds is the one above: upgrading yields an `ObjectArc<T>`, so the same
// bounds apply.
unsafe impl<T: Object + Send + Sync> Sync for WeakObjectArc<T> {}

impl<T: Object> WeakObjectArc<T> {
    pub fn upgrade(&self) -> Option<ObjectArc<T>> {
        let obj = self.ptr.as_ptr() as *mut ObjectHeader;
        // SAFETY: our weak reference keeps the header readable.
        if unsafe { try_upgrade(obj) } {
            // SAFETY: `try_upgrade` just gave us a strong reference to a live `T`.
            Some(unsafe { ObjectArc::from_raw(obj) })
        } else {
            None
        }
    }
}

impl<T: Object> Clone for WeakObjectArc<T> {
    fn clone(&self) -> Self {
        // SAFETY: we hold a weak reference.
        unsafe { inc_weak(self.ptr.as_ptr() as *mut ObjectHeader) };
        Self { ptr: self.ptr, _owns: PhantomData }
    }
}

impl<T: Object> Drop for WeakObjectArc<T> {
    fn drop(&mut self) {
        // SAFETY: we own one weak reference.
        unsafe { dec_weak(self.ptr.as_ptr() as *mut ObjectHeader) };
    }
}

/// An untyped strong reference to any native object (Rust, plugin, C or frontend made).
#[repr(transparent)]
pub struct ObjectRef {
    ptr: NonNull<ObjectHeader>,
}

// SAFETY: every object reachable as an `ObjectRef` was made from a `Send + Sync` Rust type
// (see the `From` impl below) or by C/plugin code under the same contract (docs/abi.md).
unsafe impl Send for ObjectRef {}
// SAFETY: the reason Sync holds is the one above: every object reachable as an `ObjectRef` was made
// from a `Send + Sync` Rust type (see the `From` impl below) or by C/plugin code under the same
// contract (docs/abi.md).
unsafe impl Sync for ObjectRef {}

impl ObjectRef {
    /// Adopt a strong reference.
    ///
    /// # Safety
    /// `obj` is a live object and the caller gives up one strong reference it owns.
    pub unsafe fn from_raw(obj: *mut ObjectHeader) -> Self {
        // SAFETY: the caller guarantees non-null.
        Self { ptr: unsafe { NonNull::new_unchecked(obj) } }
    }

    /// Take a new strong reference from a borrowed pointer.
    ///
    /// # Safety
    /// `obj` is a live object that stays alive for the duration of this call.
    pub unsafe fn from_borrowed(obj: *mut ObjectHeader) -> Self {
        // SAFETY: `obj` is live and the caller holds a reference (this function's contract), so
        // the count is above zero while we add ours.
        unsafe { inc_ref(obj) };
        // SAFETY: we just made the reference we adopt.
        unsafe { Self::from_raw(obj) }
    }

    pub fn into_raw(self) -> *mut ObjectHeader {
        ManuallyDrop::new(self).ptr.as_ptr()
    }

    pub fn as_ptr(&self) -> *mut ObjectHeader {
        self.ptr.as_ptr()
    }

    pub fn header(&self) -> &ObjectHeader {
        // SAFETY: live while `self` is.
        unsafe { self.ptr.as_ref() }
    }

    pub fn type_index(&self) -> i32 {
        self.header().type_index
    }

    pub fn ptr_eq(&self, other: &Self) -> bool {
        self.ptr == other.ptr
    }

    /// Is this object a `T` (or a subtype of it)?
    pub fn is<T: Object>(&self) -> bool {
        crate::types::is_instance(self.type_index(), T::type_index())
    }

    /// Checked downcast by type index (depth + ancestor table: one comparison).
    pub fn try_cast<T: Object>(self) -> Result<ObjectArc<T>, ObjectRef> {
        if self.is::<T>() {
            // SAFETY: the type registry says the object holds a `T`.
            Ok(unsafe { ObjectArc::from_raw(self.into_raw()) })
        } else {
            Err(self)
        }
    }

    /// Borrowing downcast.
    pub fn downcast_ref<T: Object>(&self) -> Option<&T> {
        if self.is::<T>() {
            // SAFETY: the object holds a `T` (checked), alive while `self` is.
            Some(unsafe { &(*(self.as_ptr() as *const ObjectBox<T>)).value })
        } else {
            None
        }
    }
}

impl Clone for ObjectRef {
    fn clone(&self) -> Self {
        // SAFETY: `self` holds a strong reference.
        unsafe { inc_ref(self.as_ptr()) };
        Self { ptr: self.ptr }
    }
}

impl Drop for ObjectRef {
    fn drop(&mut self) {
        // SAFETY: we own one strong reference.
        unsafe { dec_ref(self.as_ptr()) };
    }
}

impl std::fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = crate::types::type_key(self.type_index()).unwrap_or("?");
        write!(f, "<{key} object at {:p}>", self.as_ptr())
    }
}

impl<T: Object + Send + Sync> From<ObjectArc<T>> for ObjectRef {
    fn from(arc: ObjectArc<T>) -> Self {
        // SAFETY: ownership of the strong reference moves over.
        unsafe { ObjectRef::from_raw(ObjectArc::into_raw(arc)) }
    }
}

impl<T: Object + Send + Sync> From<&ObjectArc<T>> for ObjectRef {
    fn from(arc: &ObjectArc<T>) -> Self {
        ObjectRef::from(arc.clone())
    }
}

/// Allocate an object whose layout is known only at run time (C objects, aligned test objects).
///
/// # Safety
/// `deleter` must drop what the caller writes into the body and free exactly `size`/`align`
/// through [`free_object`].
pub unsafe fn alloc_raw_object(
    size: usize,
    align: usize,
    type_index: i32,
    deleter: crate::object::Deleter,
) -> ObjectRef {
    let obj = alloc_object(size, align.max(8));
    // SAFETY: fresh object memory.
    unsafe {
        init_header(obj, type_index, deleter);
        ObjectRef::from_raw(obj)
    }
}
