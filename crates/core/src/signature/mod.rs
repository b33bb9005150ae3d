//! Signatures of Functions: parameter names, type descriptors, defaults, which parameters may
//! be passed by keyword, and whether the first parameter is a method's receiver.
//!
//! An author writes a signature once (typed closures take their types from the Rust parameter
//! types' constants, `FromArg::TYPE` and `IntoRet::TYPE`, the way UniFFI and pyo3 record theirs; the `#[tether::...]` macros add names, defaults and docs; a C plugin
//! declares static tables, `api->set_signature`), and every frontend reads the same record:
//! Python's `inspect.signature` and keyword calls, Node's `fn.length` and `fn.signature`,
//! Java's `TetherFunction.signature()`, and the bindings generator.
//!
//! The C form ([`SignatureInfo`], [`ParamInfo`], [`TypeDesc`]) is `#[repr(C)]` and laid out in
//! `include/tether.h`; a type descriptor is its tree in preorder ([`TypeNode`]: a kind, a child
//! count, and a key for object types). Signatures are interned: one leaked copy per distinct
//! signature, however many Functions share it, so making Functions in a loop does not grow
//! memory.

mod bind;
mod render;

use std::collections::HashMap;
use std::sync::Mutex;

use crate::any::{Any, TypeIndex};
use crate::error::{Error, Result};
use crate::plugin::ByteSlice;

pub use bind::{arity_message, bind_call, Bound};
pub use render::{escape_keyword, is_reserved, language_name, render_default, render_signature, render_type, Language};

/// The kinds a type descriptor's node may have (`TETHER_TYPE_DESC_*` in tether.h; the values
/// cross languages through `constants::SHARED`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// Any value.
    Any = 0,
    None = 1,
    Bool = 2,
    Int = 3,
    Float = 4,
    Str = 5,
    Bytes = 6,
    /// An object of the type registered under the node's key (or a subtype).
    Object = 7,
    /// An Array of the one child type.
    Array = 8,
    /// A Map from the first child type to the second.
    Map = 9,
    /// The child type or None.
    Optional = 10,
    /// A callable: children are the parameter types, then the result type; no children when
    /// its signature is unknown.
    Callable = 11,
    /// A language's own object held natively (opaque to native code).
    Host = 12,
}

impl TypeKind {
    pub const ALL: [TypeKind; 13] = [
        TypeKind::Any,
        TypeKind::None,
        TypeKind::Bool,
        TypeKind::Int,
        TypeKind::Float,
        TypeKind::Str,
        TypeKind::Bytes,
        TypeKind::Object,
        TypeKind::Array,
        TypeKind::Map,
        TypeKind::Optional,
        TypeKind::Callable,
        TypeKind::Host,
    ];

    pub fn from_code(code: u32) -> Option<TypeKind> {
        TypeKind::ALL.get(code as usize).copied()
    }

    /// How many children a node of this kind has (`None`: any number, a Callable's).
    fn arity(self) -> Option<u32> {
        match self {
            TypeKind::Array | TypeKind::Optional => Some(1),
            TypeKind::Map => Some(2),
            TypeKind::Callable => None,
            _ => Some(0),
        }
    }
}

/// A type as Rust code declares it, in a constant: the tree [`TypeDesc`] is flattened from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ty {
    Any,
    None,
    Bool,
    Int,
    Float,
    Str,
    Bytes,
    /// The registered type key.
    Object(&'static str),
    Array(&'static Ty),
    Map(&'static Ty, &'static Ty),
    Optional(&'static Ty),
    /// Parameter types and result; [`Ty::Function`] when unknown.
    Callable(&'static [Ty], &'static Ty),
    /// A callable of unknown signature.
    Function,
    Host,
    /// A descriptor already interned (read back from a signature).
    Desc(TypeRef),
}

impl Ty {
    fn flatten_into(&self, out: &mut Vec<OwnedNode>) {
        let node = |kind, n_children: usize| OwnedNode { kind, n_children: n_children as u32, key: String::new() };
        match *self {
            Ty::Any => out.push(node(TypeKind::Any, 0)),
            Ty::None => out.push(node(TypeKind::None, 0)),
            Ty::Bool => out.push(node(TypeKind::Bool, 0)),
            Ty::Int => out.push(node(TypeKind::Int, 0)),
            Ty::Float => out.push(node(TypeKind::Float, 0)),
            Ty::Str => out.push(node(TypeKind::Str, 0)),
            Ty::Bytes => out.push(node(TypeKind::Bytes, 0)),
            Ty::Host => out.push(node(TypeKind::Host, 0)),
            Ty::Desc(r) => out.extend(r.nodes.iter().map(|n| OwnedNode {
                kind: TypeKind::from_code(n.kind).unwrap_or(TypeKind::Any),
                n_children: n.n_children,
                key: n.key.as_str().to_string(),
            })),
            Ty::Function => out.push(node(TypeKind::Callable, 0)),
            // The builtin containers' keys say what the structured kinds say better.
            Ty::Object("tether.Array") => Ty::Array(&Ty::Any).flatten_into(out),
            Ty::Object("tether.Map") => Ty::Map(&Ty::Any, &Ty::Any).flatten_into(out),
            Ty::Object("tether.Function") => out.push(node(TypeKind::Callable, 0)),
            Ty::Object("tether.Str") => out.push(node(TypeKind::Str, 0)),
            Ty::Object("tether.Bytes") => out.push(node(TypeKind::Bytes, 0)),
            Ty::Object(key) => out.push(OwnedNode { key: key.to_string(), ..node(TypeKind::Object, 0) }),
            Ty::Array(item) => {
                out.push(node(TypeKind::Array, 1));
                item.flatten_into(out);
            }
            Ty::Optional(item) => {
                // Optional[Optional[T]] is Optional[T]; Optional[Any] is Any.
                if matches!(item, Ty::Optional(_) | Ty::Any | Ty::None) {
                    return item.flatten_into(out);
                }
                out.push(node(TypeKind::Optional, 1));
                item.flatten_into(out);
            }
            Ty::Map(k, v) => {
                out.push(node(TypeKind::Map, 2));
                k.flatten_into(out);
                v.flatten_into(out);
            }
            Ty::Callable(params, result) => {
                out.push(node(TypeKind::Callable, params.len() + 1));
                params.iter().for_each(|p| p.flatten_into(out));
                result.flatten_into(out);
            }
        }
    }
}

// ---- the C form -------------------------------------------------------------------------

/// One node of a type descriptor, in preorder. `key` names the registered type of an Object
/// node and is empty otherwise.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TypeNode {
    pub kind: u32,
    pub n_children: u32,
    pub key: ByteSlice,
}

/// A type descriptor: `n_nodes` nodes, the root first. Zero nodes mean Any.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TypeDesc {
    pub nodes: *const TypeNode,
    pub n_nodes: usize,
}

/// The parameter has a default (`default` holds it).
pub const PARAM_HAS_DEFAULT: u32 = 1;
/// The parameter may be passed by keyword (its name is part of the API).
pub const PARAM_KEYWORD: u32 = 2;
/// The signature's first parameter is the object a method is called on (`self`).
pub const SIG_RECEIVER: u32 = 1;

#[repr(C)]
pub struct ParamInfo {
    /// Empty when the parameter has no name (positional only).
    pub name: ByteSlice,
    pub ty: TypeDesc,
    /// A plain value (None, bool, int, float, str, bytes) when `PARAM_HAS_DEFAULT`, else None.
    pub default: Any,
    pub flags: u32,
    pub reserved: u32,
}

#[repr(C)]
pub struct SignatureInfo {
    pub params: *const ParamInfo,
    pub n_params: usize,
    pub result: TypeDesc,
    pub flags: u32,
    pub reserved: u32,
}

const _: () = {
    assert!(std::mem::size_of::<TypeNode>() == 24);
    assert!(std::mem::offset_of!(TypeNode, n_children) == 4);
    assert!(std::mem::offset_of!(TypeNode, key) == 8);
    assert!(std::mem::size_of::<TypeDesc>() == 16);
    assert!(std::mem::size_of::<ParamInfo>() == 56);
    assert!(std::mem::offset_of!(ParamInfo, ty) == 16);
    assert!(std::mem::offset_of!(ParamInfo, default) == 32);
    assert!(std::mem::offset_of!(ParamInfo, flags) == 48);
    assert!(std::mem::size_of::<SignatureInfo>() == 40);
    assert!(std::mem::offset_of!(SignatureInfo, n_params) == 8);
    assert!(std::mem::offset_of!(SignatureInfo, result) == 16);
    assert!(std::mem::offset_of!(SignatureInfo, flags) == 32);
};

// SAFETY: an interned signature is immutable and everything it points to is leaked: sharing it
// between threads reads constant memory (its defaults are plain values, never objects).
unsafe impl Sync for SignatureInfo {}
// SAFETY: the reason Send holds is the one above: an interned signature is immutable and
// everything it points to is leaked.
unsafe impl Send for SignatureInfo {}

/// A node of a type descriptor with its subtree.
#[derive(Clone, Copy)]
pub struct TypeRef {
    nodes: &'static [TypeNode],
}

impl PartialEq for TypeRef {
    fn eq(&self, other: &TypeRef) -> bool {
        self.nodes.len() == other.nodes.len()
            && self
                .nodes
                .iter()
                .zip(other.nodes)
                .all(|(a, b)| a.kind == b.kind && a.n_children == b.n_children && a.key.as_str() == b.key.as_str())
    }
}

impl std::fmt::Debug for TypeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render_type(*self, Language::Python))
    }
}

const ANY_NODE: TypeNode = TypeNode { kind: TypeKind::Any as u32, n_children: 0, key: ByteSlice::empty() };
static ANY_NODES: [TypeNode; 1] = [ANY_NODE];

impl TypeDesc {
    /// The root of an interned descriptor (Any for an empty one).
    pub fn root(&self) -> TypeRef {
        if self.n_nodes == 0 || self.nodes.is_null() {
            return TypeRef { nodes: &ANY_NODES };
        }
        // SAFETY: interned descriptors are leaked, validated arrays of `n_nodes` nodes.
        TypeRef { nodes: unsafe { std::slice::from_raw_parts(self.nodes, self.n_nodes) } }
    }
}

impl TypeRef {
    pub fn kind(&self) -> TypeKind {
        TypeKind::from_code(self.nodes[0].kind).unwrap_or(TypeKind::Any)
    }
    /// The type key of an Object node ("" otherwise).
    pub fn key(&self) -> &'static str {
        self.nodes[0].key.as_str()
    }
    /// The children, in order.
    pub fn children(&self) -> Vec<TypeRef> {
        let mut out = Vec::with_capacity(self.nodes[0].n_children as usize);
        let mut at = 1;
        for _ in 0..self.nodes[0].n_children {
            let len = subtree_len(&self.nodes[at..]).expect("interned descriptors are well formed");
            out.push(TypeRef { nodes: &self.nodes[at..at + len] });
            at += len;
        }
        out
    }
    /// The registered type index of an Object node, if that key is registered.
    pub fn type_index(&self) -> Option<i32> {
        (self.kind() == TypeKind::Object).then(|| crate::types::type_index_of(self.key())).flatten()
    }
}

/// How many nodes the subtree at `nodes[0]` spans, or `None` when the array ends first.
fn subtree_len(nodes: &[TypeNode]) -> Option<usize> {
    let mut pending = 1usize;
    let mut len = 0;
    while pending > 0 {
        let node = nodes.get(len)?;
        pending = pending - 1 + node.n_children as usize;
        len += 1;
    }
    Some(len)
}

impl ParamInfo {
    pub fn name(&self) -> &'static str {
        self.name.as_str()
    }
    pub fn ty(&self) -> TypeRef {
        self.ty.root()
    }
    pub fn default(&self) -> Option<&Any> {
        (self.flags & PARAM_HAS_DEFAULT != 0).then_some(&self.default)
    }
    pub fn keyword(&self) -> bool {
        self.flags & PARAM_KEYWORD != 0
    }
}

impl SignatureInfo {
    pub fn params(&self) -> &'static [ParamInfo] {
        if self.n_params == 0 || self.params.is_null() {
            return &[];
        }
        // SAFETY: interned signatures are leaked arrays of `n_params` parameters.
        unsafe { std::slice::from_raw_parts(self.params, self.n_params) }
    }
    pub fn result(&self) -> TypeRef {
        self.result.root()
    }
    /// Is the first parameter a method's receiver?
    pub fn has_receiver(&self) -> bool {
        self.flags & SIG_RECEIVER != 0
    }
    /// The parameters a caller writes (without the receiver).
    pub fn caller_params(&self) -> &'static [ParamInfo] {
        &self.params()[self.has_receiver() as usize..]
    }
    /// How many parameters a call must give (the receiver, if any, included).
    pub fn required(&self) -> usize {
        self.params().iter().take_while(|p| p.default().is_none()).count()
    }
    /// Argument `index` (0-based, the receiver counted) as a caller names it: `'name'`, or
    /// its position among what the caller wrote when it has no name.
    pub fn argument_label(&self, index: usize) -> String {
        match self.params().get(index).map(ParamInfo::name) {
            Some(name) if !name.is_empty() => format!("'{name}'"),
            _ => (index + 1 - self.has_receiver() as usize).to_string(),
        }
    }
}

impl std::fmt::Debug for SignatureInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render_signature("", self, Language::Python))
    }
}

// ---- building and interning -------------------------------------------------------------

struct OwnedNode {
    kind: TypeKind,
    n_children: u32,
    key: String,
}

/// A default value as Rust code writes it (`#[tether(default = 3)]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DefaultValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'static str),
}

impl DefaultValue {
    fn to_any(self) -> Any {
        match self {
            DefaultValue::None => Any::none(),
            DefaultValue::Bool(b) => Any::bool(b),
            DefaultValue::Int(i) => Any::int(i),
            DefaultValue::Float(f) => Any::float(f),
            DefaultValue::Str(s) => Any::str(s),
        }
    }
}

/// An interned default as a declaration writes it (its text borrowed from the interned copy,
/// which lives for good).
fn default_value_of(d: &'static Any) -> DefaultValue {
    let v = d.view();
    match v.type_index() {
        TypeIndex::BOOL => DefaultValue::Bool(v.as_bool().unwrap_or(false)),
        TypeIndex::INT => DefaultValue::Int(v.as_int().unwrap_or(0)),
        TypeIndex::FLOAT => DefaultValue::Float(v.as_float().unwrap_or(0.0)),
        _ => d.as_str().map_or(DefaultValue::None, DefaultValue::Str),
    }
}

/// A parameter being declared.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub ty: Ty,
    pub default: Option<DefaultValue>,
    /// May be passed by keyword (on by default for named parameters).
    pub keyword: bool,
}

impl Param {
    pub fn new(name: &str, ty: Ty) -> Param {
        Param { name: name.to_string(), ty, default: None, keyword: !name.is_empty() }
    }
    pub fn with_default(mut self, default: DefaultValue) -> Param {
        self.default = Some(default);
        self
    }
    pub fn positional_only(mut self) -> Param {
        self.keyword = false;
        self
    }
}

/// A signature being declared; [`Signature::intern`] checks and publishes it.
#[derive(Clone, Debug)]
pub struct Signature {
    pub params: Vec<Param>,
    pub result: Ty,
    pub receiver: bool,
}

impl Signature {
    /// Unnamed, positional-only parameters of the given types.
    pub fn of_types(params: &[Ty], result: Ty) -> Signature {
        Signature { params: params.iter().map(|&t| Param::new("", t)).collect(), result, receiver: false }
    }

    /// The declaration an interned signature was made from.
    pub fn from_info(info: &SignatureInfo) -> Signature {
        let params = info
            .params()
            .iter()
            .map(|p| Param {
                name: p.name().to_string(),
                ty: Ty::Desc(p.ty()),
                default: p.default().map(default_value_of),
                keyword: p.keyword(),
            })
            .collect();
        Signature { params, result: Ty::Desc(info.result()), receiver: info.has_receiver() }
    }

    /// Give the parameters names, in order (a receiver's included); extra names are an error
    /// when interning.
    pub fn named(mut self, names: &[&str]) -> Signature {
        for (p, name) in self.params.iter_mut().zip(names) {
            p.name = name.to_string();
            p.keyword = !name.is_empty();
        }
        self
    }

    /// Mark the first parameter as the receiver (named `self`, never a keyword).
    pub fn method(mut self) -> Signature {
        self.receiver = true;
        if let Some(first) = self.params.first_mut() {
            first.name = "self".into();
            first.keyword = false;
        }
        self
    }

    /// Check and intern: the one leaked copy of this signature.
    pub fn intern(&self) -> Result<&'static SignatureInfo> {
        self.check()?;
        let params = self
            .params
            .iter()
            .map(|p| OwnedParam {
                name: p.name.clone(),
                ty: flatten(&p.ty),
                default: p.default.map(DefaultValue::to_any),
                keyword: p.keyword,
            })
            .collect();
        intern(OwnedSignature { params, result: flatten(&self.result), receiver: self.receiver })
    }

    fn check(&self) -> Result<()> {
        let mut seen_default = false;
        for (i, p) in self.params.iter().enumerate() {
            if !p.name.is_empty() && self.params[..i].iter().any(|q| q.name == p.name) {
                return Err(Error::value(format!("signature: parameter name {:?} is used twice", p.name)));
            }
            if p.default.is_some() {
                seen_default = true;
            } else if seen_default {
                return Err(Error::value(format!(
                    "signature: parameter {:?} has no default but follows one that has",
                    p.name
                )));
            }
        }
        Ok(())
    }
}

fn flatten(ty: &Ty) -> Vec<OwnedNode> {
    let mut out = Vec::new();
    ty.flatten_into(&mut out);
    out
}

struct OwnedParam {
    name: String,
    ty: Vec<OwnedNode>,
    default: Option<Any>,
    keyword: bool,
}

struct OwnedSignature {
    params: Vec<OwnedParam>,
    result: Vec<OwnedNode>,
    receiver: bool,
}

impl OwnedSignature {
    /// The interning key: every part, written out unambiguously.
    fn key(&self) -> String {
        use std::fmt::Write;
        let mut key = String::new();
        let nodes = |key: &mut String, nodes: &[OwnedNode]| {
            for n in nodes {
                let _ = write!(key, "{}/{}/{}:{};", n.kind as u32, n.n_children, n.key.len(), n.key);
            }
        };
        let _ = write!(key, "r{}|", self.receiver as u8);
        for p in &self.params {
            let _ = write!(key, "p{}:{}k{}", p.name.len(), p.name, p.keyword as u8);
            nodes(&mut key, &p.ty);
            if let Some(d) = &p.default {
                let _ = write!(key, "d{}", default_key(d));
            }
            key.push('|');
        }
        key.push_str("->");
        nodes(&mut key, &self.result);
        key
    }
}

fn default_key(d: &Any) -> String {
    let v = d.view();
    match v.type_index() {
        TypeIndex::FLOAT => format!("f{:x}", v.as_float().unwrap_or(0.0).to_bits()),
        TypeIndex::INT => format!("i{}", v.as_int().unwrap_or(0)),
        TypeIndex::BOOL => format!("b{}", v.as_bool().unwrap_or(false)),
        TypeIndex::NONE => "n".into(),
        _ => match (v.as_str(), v.as_bytes()) {
            (Some(s), _) => format!("s{}:{s}", s.len()),
            (_, Some(b)) => format!("y{b:?}"),
            _ => format!("?{}", v.type_index()),
        },
    }
}

static INTERNED: Mutex<Option<HashMap<String, &'static SignatureInfo>>> = Mutex::new(None);

fn leak<T>(v: Vec<T>) -> *const T {
    if v.is_empty() {
        std::ptr::null()
    } else {
        Box::leak(v.into_boxed_slice()).as_ptr()
    }
}

fn leak_desc(nodes: Vec<OwnedNode>) -> TypeDesc {
    let n_nodes = nodes.len();
    let nodes: Vec<TypeNode> = nodes
        .into_iter()
        .map(|n| TypeNode {
            kind: n.kind as u32,
            n_children: n.n_children,
            key: if n.key.is_empty() {
                ByteSlice::empty()
            } else {
                ByteSlice::from_static(Box::leak(n.key.into_boxed_str()))
            },
        })
        .collect();
    TypeDesc { nodes: leak(nodes), n_nodes }
}

fn intern(sig: OwnedSignature) -> Result<&'static SignatureInfo> {
    let key = sig.key();
    let mut guard = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(found) = map.get(&key) {
        return Ok(found);
    }
    let n_params = sig.params.len();
    let params: Vec<ParamInfo> = sig
        .params
        .into_iter()
        .map(|p| {
            let has_default = p.default.is_some();
            ParamInfo {
                name: if p.name.is_empty() {
                    ByteSlice::empty()
                } else {
                    ByteSlice::from_static(Box::leak(p.name.into_boxed_str()))
                },
                ty: leak_desc(p.ty),
                // A default that is a long string is a Str object: leaked with the signature.
                default: p.default.unwrap_or_else(Any::none),
                flags: (has_default as u32 * PARAM_HAS_DEFAULT) | (p.keyword as u32 * PARAM_KEYWORD),
                reserved: 0,
            }
        })
        .collect();
    let info: &'static SignatureInfo = Box::leak(Box::new(SignatureInfo {
        params: leak(params),
        n_params,
        result: leak_desc(sig.result),
        flags: sig.receiver as u32 * SIG_RECEIVER,
        reserved: 0,
    }));
    map.insert(key, info);
    Ok(info)
}

/// Check a signature that came from C and intern a copy of it (the host's own memory, so the
/// caller's tables may be anything readable for the call).
///
/// # Safety
/// `sig`'s arrays are as long as its counts say and readable for the call (ABI contract).
pub unsafe fn intern_foreign(sig: &SignatureInfo) -> Result<&'static SignatureInfo> {
    const MAX_PARAMS: usize = 256;
    const MAX_NODES: usize = 4096;
    if sig.n_params > MAX_PARAMS {
        return Err(Error::value(format!("signature: {} parameters (at most {MAX_PARAMS})", sig.n_params)));
    }
    if sig.n_params > 0 && sig.params.is_null() {
        return Err(Error::value(format!("signature: {} parameters at a null pointer", sig.n_params)));
    }
    let params: &[ParamInfo] = if sig.n_params == 0 {
        &[]
    } else {
        // SAFETY: non-null and `n_params` long (checked above and the contract).
        unsafe { std::slice::from_raw_parts(sig.params, sig.n_params) }
    };
    let read_desc = |what: &str, d: &TypeDesc| -> Result<Vec<OwnedNode>> {
        if d.n_nodes > MAX_NODES || (d.n_nodes > 0 && d.nodes.is_null()) {
            return Err(Error::value(format!(
                "signature: the type of {what} has {} nodes at {:?} (at most {MAX_NODES}, not null)",
                d.n_nodes, d.nodes
            )));
        }
        let nodes: &[TypeNode] = if d.n_nodes == 0 {
            &[]
        } else {
            // SAFETY: non-null and `n_nodes` long (checked above and the contract).
            unsafe { std::slice::from_raw_parts(d.nodes, d.n_nodes) }
        };
        if nodes.is_empty() {
            return Ok(vec![OwnedNode { kind: TypeKind::Any, n_children: 0, key: String::new() }]);
        }
        let mut out = Vec::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let kind = TypeKind::from_code(n.kind).ok_or_else(|| {
                Error::value(format!("signature: the type of {what}: node {i} has unknown kind {}", n.kind))
            })?;
            if kind.arity().is_some_and(|a| a != n.n_children) {
                return Err(Error::value(format!(
                    "signature: the type of {what}: node {i} ({kind:?}) has {} children",
                    n.n_children
                )));
            }
            // SAFETY: a slice the caller vouches for (contract); checked to be UTF-8 here.
            let key = unsafe { utf8(what, &n.key) }?;
            if kind == TypeKind::Object && key.is_empty() {
                return Err(Error::value(format!("signature: the type of {what}: object node {i} has no type key")));
            }
            out.push(OwnedNode { kind, n_children: n.n_children, key });
        }
        if subtree_len(nodes) != Some(nodes.len()) {
            return Err(Error::value(format!(
                "signature: the type of {what}: its {} nodes do not form one tree",
                nodes.len()
            )));
        }
        Ok(out)
    };
    let receiver = sig.flags & SIG_RECEIVER != 0;
    let mut out = Vec::with_capacity(params.len());
    for (i, p) in params.iter().enumerate() {
        let what = format!("parameter {}", i + 1);
        // SAFETY: a slice the caller vouches for (contract); checked to be UTF-8 there.
        let name = unsafe { utf8("a parameter name", &p.name) }?;
        let keyword = p.flags & PARAM_KEYWORD != 0;
        if keyword && name.is_empty() {
            return Err(Error::value(format!("signature: {what} may be passed by keyword but has no name")));
        }
        let default = if p.flags & PARAM_HAS_DEFAULT != 0 { Some(plain_default(&what, &p.default)?) } else { None };
        out.push(OwnedParam { name, ty: read_desc(&what, &p.ty)?, default, keyword });
    }
    // The name and default order rules are the ones Rust-declared signatures follow.
    Signature {
        params: out
            .iter()
            .map(|p| Param {
                name: p.name.clone(),
                ty: Ty::Any,
                default: p.default.as_ref().map(|_| DefaultValue::None),
                keyword: p.keyword,
            })
            .collect(),
        result: Ty::Any,
        receiver,
    }
    .check()?;
    intern(OwnedSignature { params: out, result: read_desc("the result", &sig.result)?, receiver })
}

/// A C default, checked to be a plain value and copied (a `RAW_STR` view of static text
/// becomes an owned string).
fn plain_default(what: &str, d: &Any) -> Result<Any> {
    let v = d.view();
    let copy = match v.type_index() {
        TypeIndex::NONE | TypeIndex::INT | TypeIndex::FLOAT | TypeIndex::BOOL => v.to_owned_any(),
        TypeIndex::SMALL_STR | TypeIndex::RAW_STR => Any::str(v.as_str().ok_or_else(|| {
            Error::value(format!("signature: the default of {what} is not UTF-8"))
        })?),
        TypeIndex::SMALL_BYTES | TypeIndex::RAW_BYTES => Any::bytes(v.as_bytes().unwrap_or_default()),
        other => {
            return Err(Error::value(format!(
                "signature: the default of {what} must be a plain value (None, bool, int, float, str, bytes), not type {other}"
            )))
        }
    };
    Ok(copy)
}

/// # Safety
/// `s` points to `len` readable bytes (or `len == 0`).
unsafe fn utf8(what: &str, s: &ByteSlice) -> Result<String> {
    if s.len == 0 || s.ptr.is_null() {
        return Ok(String::new());
    }
    // SAFETY: readable for the call (this function's contract).
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|e| Error::value(format!("signature: {what} is not UTF-8 ({e})")))
}
