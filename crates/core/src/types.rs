//! The type registry with reflection.
//!
//! Each registered type has a key ("geometry.Point"), an index, a parent, a depth and its
//! ancestors (so `is_instance` is one comparison), plus fields (getter, optional setter,
//! type hint, doc), methods, a constructor and a doc. Registration is idempotent by key and
//! thread-safe; readers are lock-free (an append-only table of published `TypeInfo`s), and
//! no entry is ever freed while the process runs. Frontends build their wrapper classes from
//! this registry at run time.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use crate::any::{Any, AnyView, TypeIndex};
use crate::arc::{ObjectArc, ObjectRef};
use crate::convert::{arg, FromArg, IntoRet};
use crate::error::{Error, Result};
use crate::function::{Function, TypedFn};
use crate::object::{Object, ObjectHeader};
use crate::plugin::{self, ByteSlice};
use crate::signature::{render_signature, render_type, Language, Signature, Ty};

/// One reflected field. `getter(self) -> value`, `setter(self, value) -> None` are Functions.
#[repr(C)]
pub struct FieldInfo {
    pub name: ByteSlice,
    pub doc: ByteSlice,
    /// The field's kind for stubs and docs ("Any", "int", "testing.Pair"); may be empty.
    pub type_hint: ByteSlice,
    pub getter: *mut ObjectHeader,
    /// Null when the field is read-only.
    pub setter: *mut ObjectHeader,
}

/// One reflected method: a Function taking `self` first (unless `is_static`).
#[repr(C)]
pub struct MethodInfo {
    pub name: ByteSlice,
    pub doc: ByteSlice,
    pub func: *mut ObjectHeader,
    pub is_static: i32,
}

/// [`TypeInfo::flags`] bit: the type's wrappers take weak references in languages where that
/// costs room in every wrapper (Python's `weakref.ref`: a list pointer per wrapper, which a
/// wrapper in its object's memory has no room for). Node and the JVM ignore it (every object
/// there takes weak references). Off by default, as in pyo3 (`#[pyclass(weakref)]`) and
/// nanobind (`nb::is_weak_referenceable()`).
pub const TYPE_WEAK_REFERENCEABLE: u32 = 1;

/// Everything the registry knows about a type. `#[repr(C)]` and immutable once published.
#[repr(C)]
pub struct TypeInfo {
    pub index: i32,
    /// 0 for the root `Object`; a child's depth is its parent's plus one.
    pub depth: i32,
    pub parent: i32,
    /// [`TYPE_WEAK_REFERENCEABLE`] and later bits; 0 for a key-only entry.
    pub flags: u32,
    pub key: ByteSlice,
    pub doc: ByteSlice,
    /// `ancestors[d]` is the index of the ancestor at depth `d`, for `d < depth`.
    pub ancestors: *const i32,
    pub fields: *const FieldInfo,
    pub n_fields: usize,
    pub methods: *const MethodInfo,
    pub n_methods: usize,
    /// A Function building a new instance, or null.
    pub constructor: *mut ObjectHeader,
}

const _: () = {
    assert!(std::mem::size_of::<TypeInfo>() == 96);
    assert!(std::mem::offset_of!(TypeInfo, index) == 0);
    assert!(std::mem::offset_of!(TypeInfo, depth) == 4);
    assert!(std::mem::offset_of!(TypeInfo, parent) == 8);
    assert!(std::mem::offset_of!(TypeInfo, flags) == 12);
    assert!(std::mem::offset_of!(TypeInfo, key) == 16);
    assert!(std::mem::offset_of!(TypeInfo, doc) == 32);
    assert!(std::mem::offset_of!(TypeInfo, ancestors) == 48);
    assert!(std::mem::offset_of!(TypeInfo, fields) == 56);
    assert!(std::mem::offset_of!(TypeInfo, n_fields) == 64);
    assert!(std::mem::offset_of!(TypeInfo, methods) == 72);
    assert!(std::mem::offset_of!(TypeInfo, n_methods) == 80);
    assert!(std::mem::offset_of!(TypeInfo, constructor) == 88);
    assert!(std::mem::size_of::<FieldInfo>() == 64);
    assert!(std::mem::offset_of!(FieldInfo, name) == 0);
    assert!(std::mem::offset_of!(FieldInfo, doc) == 16);
    assert!(std::mem::offset_of!(FieldInfo, type_hint) == 32);
    assert!(std::mem::offset_of!(FieldInfo, getter) == 48);
    assert!(std::mem::offset_of!(FieldInfo, setter) == 56);
    assert!(std::mem::size_of::<MethodInfo>() == 48);
    assert!(std::mem::offset_of!(MethodInfo, name) == 0);
    assert!(std::mem::offset_of!(MethodInfo, doc) == 16);
    assert!(std::mem::offset_of!(MethodInfo, func) == 32);
    assert!(std::mem::offset_of!(MethodInfo, is_static) == 40);
};

// SAFETY: published infos are immutable and everything they point to is leaked, never freed.
unsafe impl Sync for TypeInfo {}
// SAFETY: the reason Send holds is the one above: published infos are immutable and everything they
// point to is leaked, never freed.
unsafe impl Send for TypeInfo {}

impl TypeInfo {
    pub fn key(&self) -> &'static str {
        self.key.as_str()
    }
    pub fn doc(&self) -> &'static str {
        self.doc.as_str()
    }
    pub fn ancestors(&self) -> &'static [i32] {
        // SAFETY: `depth` leaked entries (or a dangling pointer for depth 0).
        unsafe { slice_or_empty(self.ancestors, self.depth as usize) }
    }
    pub fn fields(&self) -> &'static [FieldInfo] {
        // SAFETY: `n_fields` leaked entries.
        unsafe { slice_or_empty(self.fields, self.n_fields) }
    }
    pub fn methods(&self) -> &'static [MethodInfo] {
        // SAFETY: `n_methods` leaked entries.
        unsafe { slice_or_empty(self.methods, self.n_methods) }
    }
    pub fn field(&self, name: &str) -> Option<&'static FieldInfo> {
        self.fields().iter().find(|f| f.name.as_str() == name)
    }
    pub fn method(&self, name: &str) -> Option<&'static MethodInfo> {
        self.methods().iter().find(|m| m.name.as_str() == name)
    }
    /// The constructor, if the type has one.
    pub fn constructor(&self) -> Option<Function> {
        // SAFETY: a leaked strong reference to a Function, never released.
        (!self.constructor.is_null()).then(|| unsafe { borrowed_function(self.constructor) })
    }
    /// Do the type's wrappers take weak references ([`TYPE_WEAK_REFERENCEABLE`])?
    pub fn is_weak_referenceable(&self) -> bool {
        self.flags & TYPE_WEAK_REFERENCEABLE != 0
    }
    /// Has reflection been registered (fields, methods or constructor)?
    pub fn is_reflected(&self) -> bool {
        self.n_fields > 0 || self.n_methods > 0 || !self.constructor.is_null()
    }
}

impl FieldInfo {
    pub fn name(&self) -> &'static str {
        self.name.as_str()
    }
    pub fn doc(&self) -> &'static str {
        self.doc.as_str()
    }
    /// The field's type as Python writes it (kept for readers of the ABI 1.3 layout; [`FieldInfo::ty`] is
    /// the descriptor).
    pub fn type_hint(&self) -> &'static str {
        self.type_hint.as_str()
    }
    /// The field's type: its getter's result type (Any when the getter has no signature).
    pub fn ty(&self) -> crate::signature::TypeRef {
        match self.getter().signature() {
            Some(sig) => sig.result(),
            None => crate::signature::TypeDesc { nodes: std::ptr::null(), n_nodes: 0 }.root(),
        }
    }
    pub fn getter(&self) -> Function {
        // SAFETY: registry functions are leaked strong references.
        unsafe { borrowed_function(self.getter) }
    }
    pub fn setter(&self) -> Option<Function> {
        // SAFETY: registry functions are leaked strong references (checked non-null here).
        (!self.setter.is_null()).then(|| unsafe { borrowed_function(self.setter) })
    }
}

impl MethodInfo {
    pub fn name(&self) -> &'static str {
        self.name.as_str()
    }
    pub fn doc(&self) -> &'static str {
        self.doc.as_str()
    }
    pub fn func(&self) -> Function {
        // SAFETY: registry functions are leaked strong references.
        unsafe { borrowed_function(self.func) }
    }
}

/// # Safety
/// `f` is a live Function that stays alive (registry entries are never released).
unsafe fn borrowed_function(f: *mut ObjectHeader) -> Function {
    // SAFETY: `f` is live for good (this function's contract); we take our own +1.
    Function(
        unsafe { ObjectRef::from_borrowed(f) }.try_cast().unwrap_or_else(|_| panic!("registry holds a non-function")),
    )
}

/// # Safety
/// `ptr` points to `len` initialised, never-freed items (or `len == 0`).
unsafe fn slice_or_empty<T>(ptr: *const T, len: usize) -> &'static [T] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: `ptr` points to `len` initialised items that are never freed (this function's
        // contract), and is not null here.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

// ---- the registry -----------------------------------------------------------------------

/// Most types a process may register.
pub const MAX_TYPES: usize = 1 << 16;

#[allow(clippy::declare_interior_mutable_const)]
const NO_INFO: AtomicPtr<TypeInfo> = AtomicPtr::new(std::ptr::null_mut());
static TABLE: [AtomicPtr<TypeInfo>; MAX_TYPES] = [NO_INFO; MAX_TYPES];

struct Writer {
    by_key: HashMap<&'static str, i32>,
    next_user: i32,
}
static WRITER: Mutex<Option<Writer>> = Mutex::new(None);
/// Infos replaced by a later publication; never freed (readers may hold them).
static RETIRED: Mutex<Vec<&'static TypeInfo>> = Mutex::new(Vec::new());
/// Infos [`publish_type_info`] made that the registry did not keep (see there).
static UNPUBLISHED: Mutex<Vec<&'static TypeInfo>> = Mutex::new(Vec::new());

fn leak_str(s: &str) -> ByteSlice {
    ByteSlice::from_static(Box::leak(s.to_string().into_boxed_str()))
}

fn leak_slice<T>(v: Vec<T>) -> *const T {
    if v.is_empty() {
        std::ptr::null()
    } else {
        Box::leak(v.into_boxed_slice()).as_ptr()
    }
}

/// Published info for `index`.
pub fn type_info(index: i32) -> Option<&'static TypeInfo> {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry; returns a leaked info or null.
        return unsafe { (api.type_info)(index).as_ref() };
    }
    local_type_info(index)
}

pub(crate) fn local_type_info(index: i32) -> Option<&'static TypeInfo> {
    let slot = TABLE.get(usize::try_from(index).ok()?)?;
    // SAFETY: published infos are leaked and immutable.
    unsafe { slot.load(Ordering::Acquire).as_ref() }
}

pub fn type_key(index: i32) -> Option<&'static str> {
    type_info(index).map(TypeInfo::key)
}

/// The index registered under `key`.
pub fn type_index_of(key: &str) -> Option<i32> {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry.
        let i = unsafe { (api.type_index_of)(ByteSlice::of(key)) };
        return (i >= 0).then_some(i);
    }
    crate::init();
    local_type_index_of(key)
}

pub(crate) fn local_type_index_of(key: &str) -> Option<i32> {
    WRITER.lock().unwrap_or_else(|e| e.into_inner()).as_ref()?.by_key.get(key).copied()
}

/// Every registered type key with its index, in index order.
pub fn list_types() -> Vec<(i32, &'static str)> {
    crate::init();
    // Only indices below the next unassigned one can be registered: no need to scan the
    // whole table (in a plugin the host's table is scanned, its bound being unknown here).
    let end = if plugin::is_plugin() {
        MAX_TYPES as i32
    } else {
        WRITER.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or(TypeIndex::FIRST_USER, |w| w.next_user)
    };
    (0..end).filter_map(|i| type_info(i).map(|t| (i, t.key()))).collect()
}

/// Is an object of type `index` an instance of `target` (itself or a subtype)?
#[inline]
pub fn is_instance(index: i32, target: i32) -> bool {
    index == target || is_proper_subtype(index, target)
}

#[inline(never)]
fn is_proper_subtype(index: i32, target: i32) -> bool {
    if target == TypeIndex::OBJECT {
        return index >= TypeIndex::OBJECT;
    }
    let (Some(info), Some(target_info)) = (type_info(index), type_info(target)) else {
        return false;
    };
    let d = target_info.depth as usize;
    info.ancestors().get(d) == Some(&target)
}

/// Reserve (or find) the index for `key` with `parent`. Idempotent by key.
pub fn register_type_key(key: &str, parent: i32) -> Result<i32> {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry.
        let i = unsafe { (api.register_type_key)(ByteSlice::of(key), parent) };
        return if i >= 0 { Ok(i) } else { Err(crate::error::take_last_error()) };
    }
    local_register_type_key(key, parent, None)
}

pub(crate) fn local_register_type_key(key: &str, parent: i32, fixed_index: Option<i32>) -> Result<i32> {
    let mut guard = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let w = guard.get_or_insert_with(|| Writer { by_key: HashMap::new(), next_user: TypeIndex::FIRST_USER });
    if let Some(&i) = w.by_key.get(key) {
        let current = local_type_info(i).expect("a registered key has an info");
        if fixed_index.is_none() && current.parent != parent {
            return Err(rejected(Error::value(format!(
                "type key {key:?} is already registered with parent {}, not {}: one key names one layout \
                 (rename one of the types, or load only one of the plugins that define it)",
                parent_name(current.parent),
                parent_name(parent)
            ))));
        }
        return Ok(i);
    }
    let parent_info = if fixed_index == Some(TypeIndex::OBJECT) {
        None
    } else {
        Some(
            local_type_info(parent)
                .ok_or_else(|| Error::value(format!("parent type index {parent} of {key:?} is not registered")))?,
        )
    };
    let index = match fixed_index {
        Some(i) => i,
        None => {
            if w.next_user as usize >= MAX_TYPES {
                return Err(Error::runtime("the type registry is full"));
            }
            w.next_user += 1;
            w.next_user - 1
        }
    };
    let (depth, ancestors) = match parent_info {
        None => (0, Vec::new()),
        Some(p) => {
            let mut a = p.ancestors().to_vec();
            a.push(p.index);
            (p.depth + 1, a)
        }
    };
    let key_slice = leak_str(key);
    let info = TypeInfo {
        index,
        depth,
        parent: parent_info.map_or(-1, |p| p.index),
        flags: 0,
        key: key_slice,
        doc: ByteSlice::empty(),
        ancestors: leak_slice(ancestors),
        fields: std::ptr::null(),
        n_fields: 0,
        methods: std::ptr::null(),
        n_methods: 0,
        constructor: std::ptr::null_mut(),
    };
    TABLE[index as usize].store(Box::leak(Box::new(info)), Ordering::Release);
    w.by_key.insert(key_slice.as_str(), index);
    Ok(index)
}

/// A parent index for messages: its key, or the number when nothing is registered there.
fn parent_name(index: i32) -> String {
    match local_type_info(index) {
        Some(info) => format!("{:?}", info.key()),
        None if index < 0 => "none (a root type)".to_string(),
        None => format!("index {index} (not registered)"),
    }
}

/// A registration the registry refused for its layout: noted for the module being loaded
/// (its load then fails with this error, whatever the plugin's init made of it).
fn rejected(e: Error) -> Error {
    plugin::note_rejected_registration(&e);
    e
}

/// Who published each reflected type (a module's path, or the host), for messages naming both
/// sides of a conflict.
static REGISTRANTS: Mutex<Option<HashMap<i32, String>>> = Mutex::new(None);

fn registrant_of(index: i32) -> String {
    REGISTRANTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&index).cloned())
        .unwrap_or_else(|| "an earlier registration".to_string())
}

/// Why `new` does not describe the same layout as the registered `current` (same key), or
/// `None`: a key names one layout, its parent chain and its field names in order, and one API,
/// its methods and constructor with their signatures. A second registration of the same type
/// (a plugin loaded from a copy of its file) is fine; any other would let one type's accessors
/// read another type's objects, or leave one plugin's methods silently unreachable.
pub(crate) fn layout_difference(current: &TypeInfo, new: &TypeInfo) -> Option<String> {
    let key = current.key();
    if current.parent != new.parent || current.depth != new.depth || current.ancestors() != new.ancestors() {
        return Some(format!(
            "type key {key:?} is registered with parent {} (depth {}), but this registration describes parent {} \
             (depth {}): one key names one layout",
            parent_name(current.parent),
            current.depth,
            parent_name(new.parent),
            new.depth
        ));
    }
    if !current.is_reflected() || !new.is_reflected() {
        return None;
    }
    if current.flags != new.flags {
        return Some(format!(
            "type key {key:?} is registered with flags {:#x}, but this registration has flags {:#x} \
             (weak_referenceable: {} against {}): one key names one layout",
            current.flags,
            new.flags,
            current.is_weak_referenceable(),
            new.is_weak_referenceable()
        ));
    }
    let names = |t: &TypeInfo| t.fields().iter().map(|f| f.name()).collect::<Vec<_>>();
    let (had, has) = (names(current), names(new));
    if had != has {
        return Some(format!(
            "type key {key:?} is already registered with fields {had:?}, but this registration has fields {has:?}: \
             one key names one layout (rename one of the types, or load only one of the plugins that define it)"
        ));
    }
    // A shape that declares fields alone (no methods, no constructor) says nothing of the API.
    if new.n_methods == 0 && new.constructor.is_null() {
        return None;
    }
    let api = |t: &TypeInfo| -> Vec<String> {
        let mut out: Vec<String> =
            t.methods().iter().map(|m| member_signature(m.name(), m.func, m.is_static != 0)).collect();
        out.sort();
        if !t.constructor.is_null() {
            out.push(member_signature("(constructor)", t.constructor, false));
        }
        out
    };
    let (had, has) = (api(current), api(new));
    (had != has).then(|| {
        let only =
            |a: &[String], b: &[String]| a.iter().filter(|m| !b.contains(m)).cloned().collect::<Vec<_>>().join("; ");
        format!(
            "type key {key:?} is registered by {} with {}, but {} registers it with {}: one key names one API \
             (rename one of the types, or load only one of the plugins that define it)",
            registrant_of(current.index),
            only(&had, &has),
            plugin::registrant(),
            only(&has, &had)
        )
    })
}

/// A method (or constructor) as the conflict check compares it: its name, kind and signature.
fn member_signature(name: &str, func: *mut ObjectHeader, is_static: bool) -> String {
    // SAFETY: a published or publishing info's members are live Functions (`check_members`,
    // the ABI contract); a null or non-function member reads as unsigned.
    let signature = unsafe {
        (!func.is_null() && (*func).type_index == TypeIndex::FUNCTION)
            .then(|| (*(func as *const crate::arc::ObjectBox<crate::function::FunctionObj>)).value.signature())
            .flatten()
    };
    let kind = if is_static { "static " } else { "" };
    match signature {
        Some(sig) => format!("{kind}{}", render_signature(name, sig, Language::Python)),
        None => format!("{kind}{name}(...)"),
    }
}

/// Publish reflection for an already reserved index. The first publication wins; a later one
/// with the same layout ([`layout_difference`]) is ignored, one with another layout is a
/// ValueError naming the key.
pub fn publish_type_info(info: TypeInfo) -> Result<i32> {
    let index = info.index;
    let leaked: &'static TypeInfo = Box::leak(Box::new(info));
    let published = if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry; the info is leaked and immutable.
        let i = unsafe { (api.publish_type_info)(leaked) };
        if i >= 0 {
            Ok(i)
        } else {
            Err(crate::error::take_last_error())
        }
    } else {
        local_publish_type_info(leaked)
    };
    // The registry keeps the first publication of an index; a later one (the same layout again,
    // a refused one) would be referenced by nobody (valgrind found each one lost): keep it
    // reachable, with what it points to (names, member tables, Functions), which is leaked like
    // every published info's. (This copy's list: a plugin's stays mapped.)
    if !type_info(index).is_some_and(|kept| std::ptr::eq(kept, leaked)) {
        UNPUBLISHED.lock().unwrap_or_else(|e| e.into_inner()).push(leaked);
    }
    published
}

pub(crate) fn local_publish_type_info(info: &'static TypeInfo) -> Result<i32> {
    let _guard = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let slot = TABLE
        .get(info.index as usize)
        .ok_or_else(|| Error::value(format!("type index {} out of range", info.index)))?;
    // SAFETY: published infos are leaked and immutable.
    let current = unsafe { slot.load(Ordering::Acquire).as_ref() }
        .ok_or_else(|| Error::value(format!("type index {} was never reserved", info.index)))?;
    if current.key() != info.key() {
        return Err(Error::value(format!(
            "type index {} belongs to {:?}, not {:?}",
            info.index,
            current.key(),
            info.key()
        )));
    }
    if let Some(why) = layout_difference(current, info) {
        return Err(rejected(Error::value(why)));
    }
    if !current.is_reflected() {
        check_members(info)?;
        slot.store(info as *const TypeInfo as *mut TypeInfo, Ordering::Release);
        REGISTRANTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(info.index, plugin::registrant());
        plugin::note_published(info.index);
        // Readers may still hold the key-only info it replaces: keep it, reachable.
        RETIRED.lock().unwrap_or_else(|e| e.into_inner()).push(current);
    }
    Ok(info.index)
}

/// A second registration's `shape` has the layout of the reflected `current`.
fn same_layout(current: &TypeInfo, shape: &TypeInfo) -> Result<()> {
    let _guard = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    match layout_difference(current, shape) {
        Some(why) => Err(rejected(Error::value(why))),
        None => Ok(()),
    }
}

/// Every accessor of an info about to be published is a live Function (C builds these by hand:
/// a null getter would crash the first read of the field, not the publication).
fn check_members(info: &TypeInfo) -> Result<()> {
    let is_function = |f: *mut ObjectHeader| {
        // SAFETY: non-null accessors are live objects the publisher hands to the registry (the
        // ABI's contract for `publish_type_info`); only the header's type index is read.
        !f.is_null() && unsafe { (*f).type_index } == TypeIndex::FUNCTION
    };
    let key = info.key();
    for f in info.fields() {
        if !is_function(f.getter) || !(f.setter.is_null() || is_function(f.setter)) {
            return Err(Error::value(format!(
                "type {key:?}: field {:?} needs a getter Function (and a setter Function or null)",
                f.name()
            )));
        }
    }
    for m in info.methods() {
        if !is_function(m.func) {
            return Err(Error::value(format!("type {key:?}: method {:?} needs a Function", m.name())));
        }
    }
    if !(info.constructor.is_null() || is_function(info.constructor)) {
        return Err(Error::value(format!("type {key:?}: the constructor is not a Function")));
    }
    Ok(())
}

/// A human name for a kind, for error messages.
pub fn kind_name(index: i32) -> String {
    match index {
        TypeIndex::NONE => "None".into(),
        TypeIndex::INT => "int".into(),
        TypeIndex::BOOL => "bool".into(),
        TypeIndex::FLOAT => "float".into(),
        TypeIndex::OPAQUE_PTR => "pointer".into(),
        TypeIndex::SMALL_STR | TypeIndex::RAW_STR | TypeIndex::STR => "str".into(),
        TypeIndex::SMALL_BYTES | TypeIndex::RAW_BYTES | TypeIndex::BYTES => "bytes".into(),
        i => type_key(i).map(str::to_string).unwrap_or_else(|| format!("<type {i}>")),
    }
}

pub(crate) fn register_builtin_types() {
    let builtins = [
        (TypeIndex::OBJECT, "tether.Object"),
        (TypeIndex::STR, "tether.Str"),
        (TypeIndex::BYTES, "tether.Bytes"),
        (TypeIndex::ERROR, "tether.Error"),
        (TypeIndex::FUNCTION, "tether.Function"),
        (TypeIndex::ARRAY, "tether.Array"),
        (TypeIndex::MAP, "tether.Map"),
        (TypeIndex::MODULE, "tether.Module"),
        (TypeIndex::OPAQUE, "tether.Opaque"),
        (TypeIndex::HOST_VALUE, "tether.HostValue"),
    ];
    for (index, key) in builtins {
        local_register_type_key(key, TypeIndex::OBJECT, Some(index)).expect("builtin type");
    }
}

/// Resolve a Rust type's index by key (used by [`crate::declare_object!`]).
pub fn resolve_type_index(key: &str, parent: fn() -> i32) -> i32 {
    crate::init();
    register_type_key(key, parent()).unwrap_or_else(|e| panic!("cannot register type {key:?}: {e}"))
}

/// Implement [`Object`] for a Rust type: `declare_object!(Pair, "testing.Pair");` or with a
/// parent: `declare_object!(Circle, "geometry.Circle", parent = Shape);`.
#[macro_export]
macro_rules! declare_object {
    ($ty:ty, $key:literal) => {
        $crate::declare_object!($ty, $key, parent_index = || $crate::TypeIndex::OBJECT);
    };
    ($ty:ty, $key:literal, parent = $parent:ty) => {
        $crate::declare_object!($ty, $key, parent_index = <$parent as $crate::Object>::type_index);
    };
    ($ty:ty, $key:literal, parent_index = $parent:expr) => {
        impl $crate::Object for $ty {
            const TYPE_KEY: &'static str = $key;
            fn type_index() -> i32 {
                static INDEX: ::std::sync::atomic::AtomicI32 = ::std::sync::atomic::AtomicI32::new(-1);
                let cached = INDEX.load(::std::sync::atomic::Ordering::Relaxed);
                if cached >= 0 {
                    return cached;
                }
                let index = $crate::types::resolve_type_index($key, $parent);
                INDEX.store(index, ::std::sync::atomic::Ordering::Relaxed);
                index
            }
        }
    };
}

// ---- declaring reflection from Rust -----------------------------------------------------

struct PendingField {
    name: String,
    doc: String,
    type_hint: String,
    getter: Function,
    setter: Option<Function>,
}

struct PendingMethod {
    name: String,
    doc: String,
    func: Function,
    is_static: bool,
}

/// Declares a Rust type's reflection in a few lines:
///
/// ```ignore
/// TypeBuilder::<Pair>::new()
///     .doc("Two values")
///     .field_rw("first", |p: &Pair| p.first(), |p: &Pair, v: Any| p.set_first(v))
///     .method("swap", |p: ObjectArc<Pair>| p.swap())
///     .constructor(|a: Any, b: Any| Pair::new(a, b))
///     .register();
/// ```
///
/// The `#[tether::object]` / `#[tether::methods]` macros (the `tether` crate) expand to these
/// calls. A builder does nothing until it is registered: dropping one unregistered is a
/// `#[must_use]` warning.
#[must_use = "a TypeBuilder declares nothing until `.register()` or `.try_register()` publishes it"]
pub struct TypeBuilder<T: Object> {
    doc: String,
    flags: u32,
    fields: Vec<PendingField>,
    methods: Vec<PendingMethod>,
    constructor: Option<Function>,
    /// Was the constructor declared after the last method (what `params` applies to)?
    constructor_last: bool,
    _type: PhantomData<T>,
}

impl<T: Object + Send + Sync> Default for TypeBuilder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Object + Send + Sync> TypeBuilder<T> {
    pub fn new() -> Self {
        TypeBuilder {
            doc: String::new(),
            flags: 0,
            fields: Vec::new(),
            methods: Vec::new(),
            constructor: None,
            constructor_last: false,
            _type: PhantomData,
        }
    }

    pub fn doc(mut self, doc: &str) -> Self {
        self.doc = doc.to_string();
        self
    }

    /// Let the type's Python wrappers take weak references (`weakref.ref`, `WeakValueDictionary`):
    /// each wrapper then carries CPython's weak-reference list and lives in a block of its own
    /// beside its object, instead of in the object's memory. Off by default
    /// ([`TYPE_WEAK_REFERENCEABLE`]); Node and the JVM take weak references to every wrapper.
    pub fn weak_referenceable(mut self) -> Self {
        self.flags |= TYPE_WEAK_REFERENCEABLE;
        self
    }

    fn getter_fn<R: IntoRet>(name: &str, get: impl Fn(&T) -> R + Send + Sync + 'static) -> Function {
        let signature = Signature::of_types(&[Ty::Object(T::TYPE_KEY)], R::TYPE).method();
        let fname = format!("{}.{name}", T::TYPE_KEY);
        let owned = fname.clone();
        Function::from_packed(&fname, move |args| {
            if args.len() != 1 {
                return Err(crate::function::arity_error(&owned, 1, args.len()));
            }
            let this = args[0].downcast_ref::<T>().ok_or_else(|| self_error(&owned, &args[0]))?;
            get(this).into_ret()
        })
        .leaf()
        .with_arity(1)
        .with_signature(signature.intern().expect("a getter's signature is valid"))
    }

    /// A read-only field.
    pub fn field<R: IntoRet>(self, name: &str, get: impl Fn(&T) -> R + Send + Sync + 'static) -> Self {
        self.field_with(name, "", "", Self::getter_fn(name, get), None)
    }

    /// A read-write field; the setter's value converts by [`FromArg`].
    pub fn field_rw<R: IntoRet, V: FromArg>(
        self,
        name: &str,
        get: impl Fn(&T) -> R + Send + Sync + 'static,
        set: impl Fn(&T, V) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        let fname = format!("{}.{name}.set", T::TYPE_KEY);
        let owned = fname.clone();
        let setter = Function::from_packed(&fname, move |args| {
            if args.len() != 2 {
                return Err(crate::function::arity_error(&owned, 2, args.len()));
            }
            let this = args[0].downcast_ref::<T>().ok_or_else(|| self_error(&owned, &args[0]))?;
            set(this, arg::<V>(&owned, 1, &args[1])?)?;
            Ok(Any::none())
        })
        .leaf()
        .with_arity(2)
        .with_signature(
            Signature::of_types(&[Ty::Object(T::TYPE_KEY), V::TYPE], Ty::None)
                .named(&["self", "value"])
                .method()
                .intern()
                .expect("a setter's signature is valid"),
        );
        self.field_with(name, "", "", Self::getter_fn(name, get), Some(setter))
    }

    /// A read-write field stored in an [`AnyCell`](crate::cell::AnyCell) `offset` bytes into
    /// `T`; use [`cell_field_rw!`](crate::cell_field_rw), which proves the offset. Its getter
    /// and setter are plain functions over the offset, so a frontend can read the cell itself
    /// ([`crate::cell::direct_cell`]): the live wrapper of an object value comes back without
    /// a reference-count increment.
    ///
    /// # Safety
    /// `T` has an `AnyCell` at byte `offset`.
    pub unsafe fn cell_field_rw(self, name: &str, offset: usize) -> Self {
        use crate::cell::{cell_get_safe_call, cell_set_safe_call, CellField};
        let accessor = |safe_call, fname: String, arity, flags| {
            let data = Box::into_raw(Box::new(CellField::of::<T>(offset, fname.clone()))) as *mut std::ffi::c_void;
            // SAFETY: the safe_calls read exactly a `CellField` (whose offset the caller
            // vouches for); `drop_closure::<CellField>` frees it.
            unsafe {
                Function::from_raw_parts(
                    safe_call,
                    data,
                    Some(crate::function::drop_closure::<CellField>),
                    &fname,
                    arity,
                    flags,
                )
            }
            .leaf()
        };
        for safe_call in [cell_get_safe_call as crate::function::SafeCallFn, cell_set_safe_call] {
            crate::error::register_catching_frame(safe_call as usize);
        }
        let this = Ty::Object(T::TYPE_KEY);
        let getter = accessor(
            cell_get_safe_call as crate::function::SafeCallFn,
            format!("{}.{name}", T::TYPE_KEY),
            1,
            crate::function::FUNC_CELL_GETTER,
        )
        .with_signature(Signature::of_types(&[this], Ty::Any).method().intern().expect("a getter's signature"));
        let setter = accessor(cell_set_safe_call, format!("{}.{name}.set", T::TYPE_KEY), 2, 0).with_signature(
            Signature::of_types(&[this, Ty::Any], Ty::None)
                .named(&["self", "value"])
                .method()
                .intern()
                .expect("a setter's signature"),
        );
        self.field_with(name, "", "", getter, Some(setter))
    }

    /// A field from prebuilt parts, with doc and type hint.
    pub fn field_with(
        mut self,
        name: &str,
        doc: &str,
        type_hint: &str,
        getter: Function,
        setter: Option<Function>,
    ) -> Self {
        self.fields.push(PendingField {
            name: name.into(),
            doc: doc.into(),
            type_hint: type_hint.into(),
            getter,
            setter,
        });
        self
    }

    /// Set the doc of the most recently added field.
    pub fn field_doc(mut self, doc: &str) -> Self {
        if let Some(f) = self.fields.last_mut() {
            f.doc = doc.into();
        }
        self
    }

    /// A method: a typed closure whose first argument is the object (`ObjectArc<T>` or `Any`).
    /// [`TypeBuilder::params`] names its other parameters.
    pub fn method<M, F: TypedFn<M>>(self, name: &str, f: F) -> Self {
        let func = Function::from_typed(&format!("{}.{name}", T::TYPE_KEY), f).as_method();
        self.method_function(name, "", func, false)
    }

    /// A static method (no `self`).
    pub fn static_method<M, F: TypedFn<M>>(self, name: &str, f: F) -> Self {
        let func = Function::from_typed(&format!("{}.{name}", T::TYPE_KEY), f);
        self.method_function(name, "", func, true)
    }

    /// A method from a prebuilt Function (what the export macros expand to): a method's takes
    /// the object first and has a receiver signature ([`Function::as_method`]).
    pub fn method_function(mut self, name: &str, doc: &str, func: Function, is_static: bool) -> Self {
        self.methods.push(PendingMethod { name: name.into(), doc: doc.into(), func, is_static });
        self.constructor_last = false;
        self
    }

    /// Set the doc of the most recently added method.
    pub fn method_doc(mut self, doc: &str) -> Self {
        if let Some(m) = self.methods.last_mut() {
            m.doc = doc.into();
        }
        self
    }

    /// Name the parameters of the most recently added method (without `self`), or of the
    /// constructor when no method was added after it.
    ///
    /// # Panics
    /// When there are more names than parameters, or a name repeats.
    pub fn params(mut self, names: &[&str]) -> Self {
        match (self.methods.pop(), self.constructor_last) {
            (Some(mut m), false) => {
                let receiver = if m.is_static { &[][..] } else { &["self"][..] };
                let all: Vec<&str> = receiver.iter().chain(names).copied().collect();
                m.func = m.func.with_params(&all);
                self.methods.push(m);
            }
            (popped, _) => {
                self.methods.extend(popped);
                let c = self.constructor.take().expect("params() before any method or constructor");
                self.constructor = Some(c.with_params(names));
            }
        }
        self
    }

    /// The constructor: a typed closure returning the new object.
    pub fn constructor<M, F: TypedFn<M>>(self, f: F) -> Self {
        self.constructor_function(Function::from_typed(T::TYPE_KEY, f))
    }

    /// A constructor that neither blocks nor calls back ([`crate::function::FUNC_LEAF`]), so
    /// frontends may keep their interpreter lock across it: most constructors.
    pub fn leaf_constructor<M, F: TypedFn<M>>(self, f: F) -> Self {
        self.constructor_function(Function::from_typed(T::TYPE_KEY, f).leaf())
    }

    /// The constructor from a prebuilt Function (what the export macros expand to).
    pub fn constructor_function(mut self, func: Function) -> Self {
        self.constructor = Some(func);
        self.constructor_last = true;
        self
    }

    /// Publish. Idempotent: a type already reflected keeps its first registration, and a second
    /// one must describe the same layout (parent and field names, [`layout_difference`]).
    ///
    /// # Panics
    /// When [`TypeBuilder::try_register`] fails: the key is registered with another layout.
    pub fn register(self) -> i32 {
        self.try_register().unwrap_or_else(|e| panic!("cannot register type {}: {e}", T::TYPE_KEY))
    }

    /// [`TypeBuilder::register`], with a refused registration as a ValueError naming the key
    /// (in a plugin's init: `.try_register()?`).
    pub fn try_register(self) -> Result<i32> {
        let index = T::type_index();
        let current =
            type_info(index).ok_or_else(|| Error::runtime(format!("type {} has no registry entry", T::TYPE_KEY)))?;
        if current.is_reflected() {
            return self.same_layout_as(current);
        }
        let leak_fn = |f: Function| ObjectRef::from(f.0).into_raw();
        let fields: Vec<FieldInfo> = self
            .fields
            .into_iter()
            .map(|f| FieldInfo {
                name: leak_str(&f.name),
                doc: leak_str(&f.doc),
                type_hint: leak_str(&if f.type_hint.is_empty() {
                    f.getter.signature().map_or_else(String::new, |s| render_type(s.result(), Language::Python))
                } else {
                    f.type_hint
                }),
                getter: leak_fn(f.getter),
                setter: f.setter.map_or(std::ptr::null_mut(), leak_fn),
            })
            .collect();
        let methods: Vec<MethodInfo> = self
            .methods
            .into_iter()
            .map(|mut m| {
                // The method's Function carries its doc too: what a language shows for it.
                if let Some(f) = ObjectArc::get_mut(&mut m.func.0) {
                    if f.doc.view_str().is_empty() && !m.doc.is_empty() {
                        f.doc = Any::str(&m.doc);
                    }
                }
                m
            })
            .map(|m| MethodInfo {
                name: leak_str(&m.name),
                doc: leak_str(&m.doc),
                func: leak_fn(m.func),
                is_static: m.is_static as i32,
            })
            .collect();
        let info = TypeInfo {
            index,
            depth: current.depth,
            parent: current.parent,
            flags: self.flags,
            key: current.key,
            doc: leak_str(&self.doc),
            ancestors: current.ancestors,
            n_fields: fields.len(),
            fields: leak_slice(fields),
            n_methods: methods.len(),
            methods: leak_slice(methods),
            constructor: self.constructor.map_or(std::ptr::null_mut(), leak_fn),
        };
        publish_type_info(info)
    }

    /// A second registration of a reflected type: the registry (the host's, in a plugin)
    /// compares its fields, methods and constructor with the registered ones, through a
    /// publication of its shape that it never keeps (it keeps only the first).
    fn same_layout_as(self, current: &'static TypeInfo) -> Result<i32> {
        let index = current.index;
        if self.fields.is_empty() && self.methods.is_empty() && self.constructor.is_none() {
            return Ok(index); // declares no members: nothing to compare
        }
        // Borrowed names and this builder's Functions, alive for the comparison.
        let fields: Vec<FieldInfo> = self
            .fields
            .iter()
            .map(|f| FieldInfo {
                name: ByteSlice::of(&f.name),
                doc: ByteSlice::empty(),
                type_hint: ByteSlice::empty(),
                getter: f.getter.as_object_ptr(),
                setter: std::ptr::null_mut(),
            })
            .collect();
        let methods: Vec<MethodInfo> = self
            .methods
            .iter()
            .map(|m| MethodInfo {
                name: ByteSlice::of(&m.name),
                doc: ByteSlice::empty(),
                func: m.func.as_object_ptr(),
                is_static: m.is_static as i32,
            })
            .collect();
        let shape = TypeInfo {
            index,
            depth: current.depth,
            parent: current.parent,
            flags: self.flags,
            key: current.key,
            doc: ByteSlice::empty(),
            ancestors: current.ancestors,
            n_fields: fields.len(),
            fields: fields.as_ptr(),
            n_methods: methods.len(),
            methods: methods.as_ptr(),
            constructor: self.constructor.as_ref().map_or(std::ptr::null_mut(), Function::as_object_ptr),
        };
        let outcome = match plugin::host_api() {
            // A plugin's registry is the host's, reached only through publication, whose
            // contract is a leaked info: one small leak per repeated registration in a plugin
            // (its Function pointers are read during the call only).
            Some(_) => {
                let leak_names = |v: &[FieldInfo]| -> Vec<FieldInfo> {
                    v.iter().map(|f| FieldInfo { name: leak_str(f.name.as_str()), ..*f }).collect()
                };
                let leaked_methods: Vec<MethodInfo> =
                    methods.iter().map(|m| MethodInfo { name: leak_str(m.name.as_str()), ..*m }).collect();
                publish_type_info(TypeInfo {
                    fields: leak_slice(leak_names(&fields)),
                    methods: leak_slice(leaked_methods),
                    ..shape
                })
            }
            None => same_layout(current, &shape).map(|()| index),
        };
        // The functions this builder made are dropped with it: only the first registration's live.
        drop(self);
        outcome
    }
}

fn self_error(func: &str, got: &AnyView<'_>) -> Error {
    Error::type_error(format!(
        "{func}() argument 'self' must be {}, not {}",
        func.split('.').take(2).collect::<Vec<_>>().join("."),
        got.kind_name()
    ))
}

/// Read a field of any object by name through reflection.
pub fn get_field(obj: &ObjectRef, name: &str) -> Result<Any> {
    let info = type_info(obj.type_index()).ok_or_else(|| Error::type_error("object of an unregistered type"))?;
    let field =
        find_field(info, name).ok_or_else(|| Error::attribute(format!("{} has no field {name:?}", info.key())))?;
    field.getter().call(&[AnyView::object(obj)])
}

/// Write a field of any object by name through reflection.
pub fn set_field(obj: &ObjectRef, name: &str, value: AnyView<'_>) -> Result<()> {
    let info = type_info(obj.type_index()).ok_or_else(|| Error::type_error("object of an unregistered type"))?;
    let field =
        find_field(info, name).ok_or_else(|| Error::attribute(format!("{} has no field {name:?}", info.key())))?;
    let setter = field.setter().ok_or_else(|| Error::attribute(format!("field {}.{name} is read-only", info.key())))?;
    setter.call(&[AnyView::object(obj), value]).map(drop)
}

/// A type, then its ancestors from the nearest to the root: where a member is looked up.
fn lineage(info: &'static TypeInfo) -> impl Iterator<Item = &'static TypeInfo> {
    std::iter::once(info).chain(info.ancestors().iter().rev().filter_map(|&a| type_info(a)))
}

/// Find a field on a type or its ancestors.
pub fn find_field(info: &'static TypeInfo, name: &str) -> Option<&'static FieldInfo> {
    lineage(info).find_map(|t| t.field(name))
}

/// Find a method on a type or its ancestors.
pub fn find_method(info: &'static TypeInfo, name: &str) -> Option<&'static MethodInfo> {
    lineage(info).find_map(|t| t.method(name))
}

/// Every field an instance of the type has, in layout order: the root ancestor's first, the
/// type's own last; a name a nearer type redefines keeps its place and takes the nearer
/// definition (the one lookups find). What every frontend's reflection shows.
pub fn all_fields(info: &'static TypeInfo) -> Vec<&'static FieldInfo> {
    let chain: Vec<&'static TypeInfo> = lineage(info).collect();
    inherited(chain.iter().rev().flat_map(|t| t.fields()), FieldInfo::name)
}

/// As [`all_fields`], for methods.
pub fn all_methods(info: &'static TypeInfo) -> Vec<&'static MethodInfo> {
    let chain: Vec<&'static TypeInfo> = lineage(info).collect();
    inherited(chain.iter().rev().flat_map(|t| t.methods()), MethodInfo::name)
}

/// Members root first, a later (nearer) definition replacing an earlier one of its name.
fn inherited<M>(members: impl Iterator<Item = &'static M>, name: fn(&M) -> &str) -> Vec<&'static M> {
    let mut out: Vec<&'static M> = Vec::new();
    for m in members {
        match out.iter().position(|seen| name(seen) == name(m)) {
            Some(i) => out[i] = m,
            None => out.push(m),
        }
    }
    out
}

/// Keep `ObjectArc` in scope for doc links.
#[allow(dead_code)]
type _DocLinks = ObjectArc<crate::containers::StrObj>;
