//! Plugin metadata through the C ABI: `register_type_key` with keys of any bytes and any
//! parent index, then `publish_type_info` with a `TypeInfo` whose every value a C plugin
//! chooses (index, key, depth, parent, ancestors, member names that are not UTF-8, getters
//! that are null or not Functions, a constructor that is a string) while keeping the memory
//! contract (arrays as long as their counts, pointers to live objects). Checked: the call
//! succeeds or raises an `Error`, and whatever the registry then holds is something every
//! frontend can reflect without crashing: valid UTF-8 names, a lineage consistent with the
//! parent's, Functions where Functions are promised.
//!
//! The registry is process-wide and append-only, so state carries over between inputs: a
//! crash may need the inputs before it (libFuzzer keeps them in the crash's `-runs` log).

#![no_main]

mod common;

use std::sync::OnceLock;

use common::{api, expect_none_raised, expect_raised, slice, Reader};
use libfuzzer_sys::fuzz_target;
use tether_core::any::TypeIndex;
use tether_core::plugin::ByteSlice;
use tether_core::types::{self, FieldInfo, MethodInfo, TypeInfo};
use tether_core::{Function, ObjectHeader, ObjectRef, StrObj};

struct Setup {
    function: Function,
    not_a_function: ObjectRef,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        tether_core::init();
        Setup {
            function: tether_core::function::get_global("testing.echo").expect("testing.echo"),
            not_a_function: StrObj::new("not a function").into(),
        }
    })
}

/// Leaked bytes (the registry keeps what it is given for the process's life).
fn leak(b: &[u8]) -> ByteSlice {
    slice(Box::leak(b.to_vec().into_boxed_slice()))
}

/// An object pointer for a getter, setter, method or constructor, with the +1 the registry
/// keeps (null for none).
fn member_object(r: &mut Reader<'_>, may_be_null: bool) -> *mut ObjectHeader {
    let s = setup();
    match r.below(8) {
        0 if may_be_null => std::ptr::null_mut(),
        1 => std::ptr::null_mut(),
        2 => ObjectRef::clone(&s.not_a_function).into_raw(),
        _ => ObjectRef::from(s.function.0.clone()).into_raw(),
    }
}

fn key_bytes(r: &mut Reader<'_>) -> Vec<u8> {
    match r.below(4) {
        0 => r.short_bytes().to_vec(),
        _ => format!("fuzz.T{}", r.below(64)).into_bytes(),
    }
}

fn index_choice(r: &mut Reader<'_>, registered: i32) -> i32 {
    match r.below(6) {
        0 => r.u32() as i32,
        1 => TypeIndex::OBJECT,
        2 => TypeIndex::FIRST_USER + r.below(256) as i32,
        3 => r.below(80) as i32,
        _ => registered,
    }
}

/// A string the registry hands out as `&'static str` must really be UTF-8.
fn check_str(what: &str, s: &ByteSlice) {
    if s.len > 0 && !s.ptr.is_null() {
        // SAFETY: registry slices are leaked and never freed.
        let bytes = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
        assert!(std::str::from_utf8(bytes).is_ok(), "the registry holds a {what} that is not UTF-8: {bytes:?}");
    }
}

/// Everything a frontend does with a published type when it builds the type's class.
fn reflect(index: i32) {
    let Some(info) = types::type_info(index) else { return };
    assert_eq!(info.index, index);
    check_str("type key", &info.key);
    check_str("type doc", &info.doc);
    if index >= TypeIndex::FIRST_USER {
        assert!(info.depth >= 1, "{}: user type at depth {}", info.key(), info.depth);
        let parent = types::type_info(info.parent)
            .unwrap_or_else(|| panic!("{}: parent {} unregistered", info.key(), info.parent));
        assert_eq!(info.depth, parent.depth + 1, "{}: depth is not its parent's + 1", info.key());
        assert_eq!(info.ancestors().last(), Some(&info.parent), "{}: the last ancestor is not the parent", info.key());
        assert_eq!(
            &info.ancestors()[..parent.ancestors().len()],
            parent.ancestors(),
            "{}: ancestors differ from its parent's lineage",
            info.key()
        );
        assert!(types::is_instance(index, info.parent), "{} is no instance of its parent", info.key());
        assert!(types::is_instance(index, TypeIndex::OBJECT));
    }
    for f in types::all_fields(info) {
        check_str("field name", &f.name);
        check_str("field doc", &f.doc);
        check_str("field type hint", &f.type_hint);
        let _ = f.getter();
        let _ = f.setter();
    }
    for m in types::all_methods(info) {
        check_str("method name", &m.name);
        check_str("method doc", &m.doc);
        let _ = m.func();
    }
    let _ = info.constructor();
    let _ = types::kind_name(index);
}

fuzz_target!(|data: &[u8]| {
    setup();
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let key = key_bytes(&mut r);
        let parent = index_choice(&mut r, TypeIndex::OBJECT);
        // SAFETY: `key` is readable for the call.
        let registered = unsafe { (api().register_type_key)(slice(&key), parent) };
        if registered < 0 {
            expect_raised("register_type_key");
        } else {
            expect_none_raised("register_type_key");
        }
        let reserved = types::type_info(registered);
        let choice = |r: &mut Reader<'_>, own: i32| if r.below(2) == 0 { own } else { index_choice(r, own) };
        let depth_own = reserved.map_or(0, |i| i.depth);
        let depth = if r.below(2) == 0 { depth_own } else { r.below(5) as i32 };
        let ancestors: Vec<i32> = match reserved {
            Some(i) if r.below(2) == 0 && depth == depth_own => i.ancestors().to_vec(),
            _ => (0..depth).map(|_| index_choice(&mut r, TypeIndex::OBJECT)).collect(),
        };
        let n_fields = r.below(4);
        let fields: Vec<FieldInfo> = (0..n_fields)
            .map(|_| FieldInfo {
                name: leak(r.short_bytes()),
                doc: leak(r.short_bytes()),
                type_hint: leak(r.short_bytes()),
                getter: member_object(&mut r, false),
                setter: member_object(&mut r, true),
            })
            .collect();
        let n_methods = r.below(3);
        let methods: Vec<MethodInfo> = (0..n_methods)
            .map(|_| MethodInfo {
                name: leak(r.short_bytes()),
                doc: leak(r.short_bytes()),
                func: member_object(&mut r, false),
                is_static: r.u8() as i32 % 3,
            })
            .collect();
        let info = Box::leak(Box::new(TypeInfo {
            index: choice(&mut r, registered),
            depth,
            parent: choice(&mut r, reserved.map_or(-1, |i| i.parent)),
            flags: r.u8() as u32 % 3,
            key: if r.below(4) == 0 { leak(r.short_bytes()) } else { leak(&key) },
            doc: leak(r.short_bytes()),
            ancestors: Box::leak(ancestors.into_boxed_slice()).as_ptr(),
            fields: Box::leak(fields.into_boxed_slice()).as_ptr(),
            n_fields,
            methods: Box::leak(methods.into_boxed_slice()).as_ptr(),
            n_methods,
            constructor: member_object(&mut r, true),
        }));
        // SAFETY: a leaked, immutable info whose arrays are as long as its counts and whose
        // object pointers are live (each with a +1 the registry may keep).
        let published = unsafe { (api().publish_type_info)(info) };
        if published < 0 {
            expect_raised("publish_type_info");
        } else {
            expect_none_raised("publish_type_info");
            assert_eq!(published, info.index, "publish_type_info answered another index");
        }
        reflect(info.index);
        reflect(registered);
    }
});
