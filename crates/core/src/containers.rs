//! Builtin containers: Str, Bytes, Array (of Any) and Map (Any to Any, insertion-ordered),
//! plus Opaque (a foreign handle with a finalizer, used by frontends).
//!
//! All are immutable once built and `#[repr(C)]` with inline trailing items, so a plugin or C
//! code reads them exactly as the host does. Their constructors and accessors are also
//! registered as global functions (`tether.Array`, `tether.ArrayGetItem`, ...).

use std::ffi::c_void;

use crate::any::{Any, AnyView, TypeIndex};
use crate::arc::{ExtraItems, ObjectArc, ObjectRef};
use crate::error::{Error, Result};
use crate::function::{register_global, Function};
use crate::object::Object;

macro_rules! builtin_object {
    ($ty:ty, $key:literal, $index:expr) => {
        impl Object for $ty {
            const TYPE_KEY: &'static str = $key;
            fn type_index() -> i32 {
                $index
            }
        }
    };
}

/// A UTF-8 string: `{ len, data }` then `len` bytes and a NUL (for C); `data` points at
/// those trailing bytes.
#[repr(C)]
pub struct StrObj {
    len: u64,
    data: *const u8,
}
builtin_object!(StrObj, "tether.Str", TypeIndex::STR);

// SAFETY: `item_count` reads the plain `len` field.
unsafe impl ExtraItems for StrObj {
    type Item = u8;
    unsafe fn item_count(this: *const Self) -> usize {
        // SAFETY: `len` is a plain u64, readable after drop (trait contract).
        unsafe { (*this).len as usize + 1 }
    }
    unsafe fn bind_items(this: *mut Self, items: *mut u8) {
        // SAFETY: `this` is the initialised value (trait contract).
        unsafe { (*this).data = items };
    }
}

// SAFETY: immutable after construction; `data` points into the object's own memory.
unsafe impl Send for StrObj {}
// SAFETY: the reason Sync holds is the one above: immutable after construction; `data` points into
// the object's own memory.
unsafe impl Sync for StrObj {}

impl StrObj {
    pub fn new(s: &str) -> ObjectArc<StrObj> {
        let bytes = s.as_bytes().iter().copied().chain(std::iter::once(0u8));
        ObjectArc::new_with_extra_items(
            StrObj { len: s.len() as u64, data: std::ptr::null() },
            ExactLen(bytes, s.len() + 1),
        )
    }

    /// The string; borrows the object.
    pub fn as_str(&self) -> &str {
        // SAFETY: `data` points at the `len` bytes of UTF-8 `new` wrote after the value; they
        // live (immutable) as long as the object.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.data, self.len as usize)) }
    }
}

/// Bytes: `{ len, data }` then `len` bytes; `data` points at them.
#[repr(C)]
pub struct BytesObj {
    len: u64,
    data: *const u8,
}
builtin_object!(BytesObj, "tether.Bytes", TypeIndex::BYTES);

// SAFETY: `item_count` reads the plain `len` field.
unsafe impl ExtraItems for BytesObj {
    type Item = u8;
    unsafe fn item_count(this: *const Self) -> usize {
        // SAFETY: plain field (trait contract).
        unsafe { (*this).len as usize }
    }
    unsafe fn bind_items(this: *mut Self, items: *mut u8) {
        // SAFETY: `this` is the initialised value (trait contract).
        unsafe { (*this).data = items };
    }
}

// SAFETY: immutable after construction; `data` points into the object's own memory.
unsafe impl Send for BytesObj {}
// SAFETY: the reason Sync holds is the one above: immutable after construction; `data` points into
// the object's own memory.
unsafe impl Sync for BytesObj {}

impl BytesObj {
    pub fn new(b: &[u8]) -> ObjectArc<BytesObj> {
        ObjectArc::new_with_extra_items(BytesObj { len: b.len() as u64, data: std::ptr::null() }, b.iter().copied())
    }
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: as in `StrObj::as_str`.
        unsafe { std::slice::from_raw_parts(self.data, self.len as usize) }
    }
}

/// An immutable array of `Any`: `{ len, data }` then `len` cells; `data` points at them.
#[repr(C)]
pub struct ArrayObj {
    len: u64,
    data: *const Any,
}
builtin_object!(ArrayObj, "tether.Array", TypeIndex::ARRAY);

// SAFETY: `item_count` reads the plain `len` field.
unsafe impl ExtraItems for ArrayObj {
    type Item = Any;
    unsafe fn item_count(this: *const Self) -> usize {
        // SAFETY: plain field (trait contract).
        unsafe { (*this).len as usize }
    }
    unsafe fn bind_items(this: *mut Self, items: *mut Any) {
        // SAFETY: `this` is the initialised value (trait contract).
        unsafe { (*this).data = items };
    }
}

// SAFETY: immutable after construction; the cells are `Any`, which is Send + Sync.
unsafe impl Send for ArrayObj {}
// SAFETY: the reason Sync holds is the one above: immutable after construction; the cells are
// `Any`, which is Send + Sync.
unsafe impl Sync for ArrayObj {}

impl ArrayObj {
    pub fn new(items: Vec<Any>) -> ObjectArc<ArrayObj> {
        ObjectArc::new_with_extra_items(ArrayObj { len: items.len() as u64, data: std::ptr::null() }, items.into_iter())
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn items(&self) -> &[Any] {
        // SAFETY: as in `StrObj::as_str`: `data` points at `len` initialised cells.
        unsafe { std::slice::from_raw_parts(self.data, self.len as usize) }
    }
    pub fn get(&self, i: i64) -> Result<&Any> {
        let n = self.len as i64;
        let idx = if i < 0 { i + n } else { i };
        if idx < 0 || idx >= n {
            return Err(Error::index(format!("array index {i} out of range for length {n}")));
        }
        Ok(&self.items()[idx as usize])
    }
}

/// An immutable insertion-ordered map: `{ len, index_cap, data }` then `len` (key, value)
/// pairs (where `data` points), then an open-addressing index of `index_cap` u32 slots
/// (0 = empty, else position + 1; no index when `len <= 8`: lookups scan).
/// The hash is tether's own (FNV-1a over the key's canonical bytes), so every copy of the
/// core finds the same slots.
#[repr(C)]
pub struct MapObj {
    len: u64,
    index_cap: u64,
    data: *mut MapItem,
}
builtin_object!(MapObj, "tether.Map", TypeIndex::MAP);

/// One trailing item of a map: either a (key, value) pair or a row of index slots.
#[repr(C)]
pub union MapItem {
    pair: std::mem::ManuallyDrop<[Any; 2]>,
    slots: [u32; 8],
}
const _: () = assert!(std::mem::size_of::<MapItem>() == 32);

/// Body layouts (tether.h declares the same): the trailing items start right after the body.
const _: () = {
    use crate::arc::ObjectBox;
    use std::mem::{offset_of, size_of};
    assert!(size_of::<StrObj>() == 16 && offset_of!(StrObj, len) == 0 && offset_of!(StrObj, data) == 8);
    assert!(size_of::<BytesObj>() == 16 && offset_of!(BytesObj, len) == 0 && offset_of!(BytesObj, data) == 8);
    assert!(size_of::<ArrayObj>() == 16 && offset_of!(ArrayObj, len) == 0 && offset_of!(ArrayObj, data) == 8);
    assert!(size_of::<MapObj>() == 24);
    assert!(offset_of!(MapObj, len) == 0 && offset_of!(MapObj, index_cap) == 8 && offset_of!(MapObj, data) == 16);
    assert!(size_of::<ObjectBox<StrObj>>() == 40);
    assert!(size_of::<ObjectBox<ArrayObj>>() == 40);
    assert!(size_of::<ObjectBox<MapObj>>() == 48);
    assert!(size_of::<OpaqueObj>() == 24);
    assert!(
        offset_of!(OpaqueObj, ptr) == 0 && offset_of!(OpaqueObj, finalize) == 8 && offset_of!(OpaqueObj, owner) == 16
    );
};

// SAFETY: `item_count` reads the plain fields only.
unsafe impl ExtraItems for MapObj {
    type Item = MapItem;
    unsafe fn item_count(this: *const Self) -> usize {
        // SAFETY: plain fields (trait contract).
        unsafe { (*this).len as usize + (*this).index_cap as usize / 8 }
    }
    unsafe fn bind_items(this: *mut Self, items: *mut MapItem) {
        // SAFETY: `this` is the initialised value (trait contract).
        unsafe { (*this).data = items };
    }
}

// SAFETY: immutable after construction; keys and values are `Any`, which is Send + Sync.
unsafe impl Send for MapObj {}
// SAFETY: the reason Sync holds is the one above: immutable after construction; keys and values are
// `Any`, which is Send + Sync.
unsafe impl Sync for MapObj {}

impl Drop for MapObj {
    fn drop(&mut self) {
        // SAFETY: the first `len` items are pairs (the union's `pair` field); the index rows
        // hold plain integers. `MapItem` has no drop glue, so each pair is dropped here, once.
        unsafe {
            let items = self.data;
            for i in 0..self.len as usize {
                std::mem::ManuallyDrop::drop(&mut (*items.add(i)).pair);
            }
        }
    }
}

/// A map's items on their way into the object: the pairs first, then the index rows. Pairs
/// not taken (the object could not be allocated) are dropped with it; `MapItem` has no drop
/// glue of its own.
struct MapItems {
    items: std::vec::IntoIter<MapItem>,
    pairs_left: usize,
}

impl Iterator for MapItems {
    type Item = MapItem;
    fn next(&mut self) -> Option<MapItem> {
        let item = self.items.next()?;
        self.pairs_left = self.pairs_left.saturating_sub(1);
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl ExactSizeIterator for MapItems {}

impl Drop for MapItems {
    fn drop(&mut self) {
        for mut item in self.items.by_ref().take(self.pairs_left) {
            // SAFETY: the first `pairs_left` items left are pairs (the union's `pair` field),
            // dropped here once; nobody else owns them.
            unsafe { std::mem::ManuallyDrop::drop(&mut item.pair) };
        }
    }
}

/// Key equality and hashing shared by every map (strings by content, objects by identity).
fn key_class<'k>(k: &'k AnyView<'_>) -> (u8, u64, &'k [u8]) {
    if let Some(s) = k.as_str() {
        return (1, 0, s.as_bytes());
    }
    if let Some(b) = k.as_bytes() {
        return (2, 0, b);
    }
    let (t, _, p) = k.raw_parts();
    (3, ((t as u64) << 32) ^ p.rotate_left(17) ^ p, &[])
}

fn key_eq(a: &AnyView<'_>, b: &AnyView<'_>) -> bool {
    let (ca, _, ba) = key_class(a);
    let (cb, _, bb) = key_class(b);
    if ca != cb {
        return false;
    }
    if ca == 3 {
        a == b
    } else {
        ba == bb
    }
}

fn key_hash(k: &AnyView<'_>) -> u64 {
    let (class, word, bytes) = key_class(k);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ class as u64;
    for b in word.to_le_bytes().iter().chain(bytes) {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl MapObj {
    /// Build a map; a repeated key keeps its first position and takes the last value.
    pub fn new(entries: Vec<(Any, Any)>) -> ObjectArc<MapObj> {
        let mut unique: Vec<(Any, Any)> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            match unique.iter_mut().find(|(uk, _)| key_eq(&uk.view(), &k.view())) {
                Some(slot) => slot.1 = v,
                None => unique.push((k, v)),
            }
        }
        let len = unique.len();
        // Index: power of two >= 2 * len, in rows of 8 slots (0 when tiny: linear scan).
        let index_cap = if len <= 8 { 0 } else { (2 * len).next_power_of_two().max(8) };
        let mut slots = vec![0u32; index_cap];
        // Small maps have no index (their lookups scan), so nothing to fill.
        for (pos, (k, _)) in unique.iter().enumerate().filter(|_| index_cap > 0) {
            let mut i = key_hash(&k.view()) as usize & (index_cap - 1);
            while slots[i] != 0 {
                i = (i + 1) & (index_cap - 1);
            }
            slots[i] = pos as u32 + 1;
        }
        let pairs = unique.into_iter().map(|(k, v)| MapItem { pair: std::mem::ManuallyDrop::new([k, v]) });
        let rows = slots.chunks(8).map(|row| MapItem { slots: row.try_into().expect("rows of 8") });
        let items: Vec<MapItem> = pairs.chain(rows).collect();
        ObjectArc::new_with_extra_items(
            MapObj { len: len as u64, index_cap: index_cap as u64, data: std::ptr::null_mut() },
            MapItems { items: items.into_iter(), pairs_left: len },
        )
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The (key, value) pairs in insertion order.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (&Any, &Any)> + '_ {
        self.pairs().iter().map(|it| {
            // SAFETY: the first `len` items are pairs.
            let pair = unsafe { &it.pair };
            (&pair[0], &pair[1])
        })
    }

    /// The first `len` items: the (key, value) pairs.
    fn pairs(&self) -> &[MapItem] {
        // SAFETY: `data` points at `len` initialised pairs that live as long as the object.
        unsafe { std::slice::from_raw_parts(self.data, self.len as usize) }
    }

    pub fn get(&self, key: &AnyView<'_>) -> Option<&Any> {
        let cap = self.index_cap as usize;
        if cap == 0 {
            return self.entries().find(|(k, _)| key_eq(&k.view(), key)).map(|(_, v)| v);
        }
        // SAFETY: items `len .. len + cap/8` are rows of index slots.
        let slots = unsafe { std::slice::from_raw_parts(self.data.add(self.len as usize) as *const u32, cap) };
        let mut i = key_hash(key) as usize & (cap - 1);
        loop {
            let s = slots[i];
            if s == 0 {
                return None;
            }
            // SAFETY: index slots name positions of pairs.
            let [k, v] = unsafe { &*self.pairs().get(s as usize - 1)?.pair };
            if key_eq(&k.view(), key) {
                return Some(v);
            }
            i = (i + 1) & (cap - 1);
        }
    }
}

/// A foreign handle owned by a native object: `finalize(ptr)` runs when the object dies.
/// Frontends use it to keep a language object alive from native memory (error payloads,
/// callback targets). `owner` names the frontend that made it.
#[repr(C)]
pub struct OpaqueObj {
    pub ptr: *mut c_void,
    pub finalize: Option<unsafe extern "C" fn(*mut c_void)>,
    pub owner: u64,
}
builtin_object!(OpaqueObj, "tether.Opaque", TypeIndex::OPAQUE);

// SAFETY: the finalizer contract (docs/abi.md) requires it to be callable from any thread;
// frontends that need their own thread defer the release there.
unsafe impl Send for OpaqueObj {}
// SAFETY: the pointer is only handed to the finalizer.
unsafe impl Sync for OpaqueObj {}

impl Drop for OpaqueObj {
    fn drop(&mut self) {
        if let Some(f) = self.finalize {
            // SAFETY: the creator's finalizer, called once with its own pointer.
            unsafe { f(self.ptr) };
        }
    }
}

/// An iterator with a known length (for chained iterators whose length std can't see).
struct ExactLen<I>(I, usize);
impl<I: Iterator> Iterator for ExactLen<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        let item = self.0.next()?;
        self.1 -= 1;
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.1, Some(self.1))
    }
}
impl<I: Iterator> ExactSizeIterator for ExactLen<I> {}

fn expect_array<'a>(v: &AnyView<'a>, what: &str) -> Result<&'a ArrayObj> {
    v.downcast_ref::<ArrayObj>()
        .ok_or_else(|| Error::type_error(format!("{what}: expected Array, got {}", v.kind_name())))
}
fn expect_map<'a>(v: &AnyView<'a>, what: &str) -> Result<&'a MapObj> {
    v.downcast_ref::<MapObj>().ok_or_else(|| Error::type_error(format!("{what}: expected Map, got {}", v.kind_name())))
}

/// Register `tether.Array`, `tether.ArrayGetItem`, `tether.ArraySize`, `tether.Map`,
/// `tether.MapGetItem`, `tether.MapContains`, `tether.MapSize`, `tether.MapKeys`, `tether.MapValues`.
pub(crate) fn register_functions() {
    let reg = |name: &str, f: Function| register_global(name, f, true).expect("builtin registration");
    reg(
        "tether.Array",
        Function::from_packed("tether.Array", |args| {
            Ok(Any::object(ArrayObj::new(args.iter().map(|a| a.to_owned_any()).collect()).into()))
        }),
    );
    reg(
        "tether.ArrayGetItem",
        Function::from_typed("tether.ArrayGetItem", |a: Any, i: i64| {
            expect_array(&a.view(), "tether.ArrayGetItem").and_then(|arr| arr.get(i).cloned())
        }),
    );
    reg(
        "tether.ArraySize",
        Function::from_typed("tether.ArraySize", |a: Any| {
            expect_array(&a.view(), "tether.ArraySize").map(|arr| arr.len() as i64)
        }),
    );
    reg(
        "tether.Map",
        Function::from_packed("tether.Map", |args| {
            if args.len() % 2 != 0 {
                return Err(Error::value("tether.Map takes key, value pairs (an even number of arguments)"));
            }
            let entries = args.chunks(2).map(|kv| (kv[0].to_owned_any(), kv[1].to_owned_any())).collect();
            Ok(Any::object(MapObj::new(entries).into()))
        }),
    );
    reg(
        "tether.MapGetItem",
        Function::from_typed("tether.MapGetItem", |m: Any, k: Any| {
            let map = expect_map(&m.view(), "tether.MapGetItem")?;
            map.get(&k.view()).cloned().ok_or_else(|| Error::key(format!("{k:?}")))
        }),
    );
    reg(
        "tether.MapContains",
        Function::from_typed("tether.MapContains", |m: Any, k: Any| {
            expect_map(&m.view(), "tether.MapContains").map(|map| map.get(&k.view()).is_some())
        }),
    );
    reg(
        "tether.MapSize",
        Function::from_typed("tether.MapSize", |m: Any| {
            expect_map(&m.view(), "tether.MapSize").map(|map| map.len() as i64)
        }),
    );
    reg(
        "tether.MapKeys",
        Function::from_typed("tether.MapKeys", |m: Any| {
            let map = expect_map(&m.view(), "tether.MapKeys")?;
            Ok(ObjectRef::from(ArrayObj::new(map.entries().map(|(k, _)| k.clone()).collect())))
        }),
    );
    reg(
        "tether.MapValues",
        Function::from_typed("tether.MapValues", |m: Any| {
            let map = expect_map(&m.view(), "tether.MapValues")?;
            Ok(ObjectRef::from(ArrayObj::new(map.entries().map(|(_, v)| v.clone()).collect())))
        }),
    );
}
