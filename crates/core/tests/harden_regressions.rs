//! Regressions found by `cargo xtask harden` (the fuzz targets in fuzz/): each test is the
//! shortest sequence the fuzzer's input came down to. Tests of bugs in code another change owns
//! are `#[ignore]`d with the place of the fix; remove the attribute with the fix.

mod common;

use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, Weak};

use tether_core::testing::Pair;
use tether_core::tying::{self, Previous, Returned, SideTable, TieHost};
use tether_core::{Any, ObjectRef};

struct Wrapper {
    generation: u64,
}

/// A locked host (the JVM's kind: late finalizers, generations) whose objects all come from
/// the builtin allocator, so every tie goes through its side table.
struct LateHost {
    side: SideTable,
    /// Each wrapper's release: its generation and the +1 it owns.
    releases: Mutex<Vec<(u64, ObjectRef)>>,
}

fn dispose(word: usize) {
    // SAFETY: every Active word is a `Weak::into_raw` made in `create`, disposed of once.
    drop(unsafe { Weak::from_raw(word as *const Wrapper) });
}

// SAFETY: `revive` upgrades only a live wrapper and runs no language code; `create` returns a
// `Weak` pointer (8-aligned) and the wrapper's release owns the object's reference.
unsafe impl TieHost for LateHost {
    type Handle = Arc<Wrapper>;
    type Error = ();
    type Prepared = ();

    unsafe fn revive(&self, word: usize) -> Option<Arc<Wrapper>> {
        // SAFETY: an Active word this host stored; only borrowed here.
        ManuallyDrop::new(unsafe { Weak::from_raw(word as *const Wrapper) }).upgrade()
    }
    fn prepare(&self, _: &ObjectRef) -> Result<(), ()> {
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
        self.releases.lock().unwrap().push((generation, obj));
        let wrapper = Arc::new(Wrapper { generation });
        Ok((wrapper.clone(), Weak::into_raw(Arc::downgrade(&wrapper)) as usize))
    }
}

impl LateHost {
    fn tie(&self, obj: &ObjectRef) -> Returned<Arc<Wrapper>> {
        tying::tie_any(self, &(), u32::MAX, &self.side, obj.clone()).unwrap()
    }
    /// Runs the release (finalizer) of the wrapper of `generation`, however late; true when it
    /// untied the slot.
    fn release(&self, generation: u64) -> bool {
        let (_, obj) = {
            let mut releases = self.releases.lock().unwrap();
            let at = releases.iter().position(|(g, _)| *g == generation).expect("a pending release");
            releases.remove(at)
        };
        // SAFETY: the release still holds its +1, so the object is live.
        let word = unsafe { tying::untie_any::<LateHost>(obj.as_ptr(), u32::MAX, &self.side, generation, 0) };
        word.map(dispose).is_some()
    }
}

/// Found by fuzz/fuzz_targets/slot_machine.rs. A side-table entry is pruned when its wrapper is
/// released, and the next return makes a new entry whose generations start again at 1. A late
/// finalizer of a wrapper from before the prune then names the live wrapper's generation:
/// `untie_any` unties the live wrapper (and the host disposes of its word), and the next
/// return makes a second wrapper while the first is alive. Hosts with generations and side
/// tables (Node, the JVM: objects made by another allocator, T14) can meet it when two
/// finalizers run out of order, which the JVM's Cleaner allows.
#[test]
fn a_late_finalizer_leaves_a_newer_side_table_wrapper_tied() {
    let _g = common::serial();
    let host = LateHost { side: SideTable::new(), releases: Mutex::new(Vec::new()) };
    let obj: ObjectRef = Pair::new(Any::int(1), Any::none()).into();
    assert_eq!(obj.header().alloc_tag, tether_core::alloc::BUILTIN_TAG, "tied through the side table");

    let a = host.tie(&obj).into_handle(); // generation 1
    let a_generation = a.generation;
    drop(a); // dying: its finalizer has not run yet
    let b = host.tie(&obj).into_handle(); // replaces the dying wrapper
    let b_generation = b.generation;
    drop(b);
    assert!(host.release(b_generation), "b's release unties (and prunes the entry)");
    let c = match host.tie(&obj) {
        Returned::Created(c) => c,
        _ => panic!("nothing was alive: a new wrapper"),
    };

    assert!(!host.release(a_generation), "a's late release must leave c tied (c has generation {})", c.generation);
    match host.tie(&obj) {
        Returned::Revived(again) => assert!(Arc::ptr_eq(&again, &c), "the canonical wrapper"),
        _ => panic!("a second wrapper while c is alive"),
    }
    drop(c);
    let pending: Vec<u64> = host.releases.lock().unwrap().iter().map(|(g, _)| *g).collect();
    pending.into_iter().for_each(|g| {
        host.release(g);
    });
}

/// Found by fuzz/fuzz_targets/type_info.rs: `publish_type_info` took a C plugin's info as it
/// came, so a depth, parent or ancestors that disagree with the registered key's, names that
/// are not UTF-8 (handed out as `&str`), a null getter or a constructor that is not a Function
/// made reflection read out of bounds, crash or panic later, in a frontend. Now each is a
/// ValueError or TypeError at publication, and the registry keeps the key-only entry.
#[test]
fn publish_type_info_refuses_metadata_that_disagrees_with_the_registry() {
    use tether_core::plugin::ByteSlice;
    use tether_core::types::{self, FieldInfo, TypeInfo};
    let _g = common::serial();
    // SAFETY: the host's table is a static.
    let api = unsafe { &*tether_core::ffi::host_table() };
    let key = "harden.Published";
    // SAFETY: `key` is readable for the call.
    let index = unsafe { (api.register_type_key)(ByteSlice::of(key), tether_core::any::TypeIndex::OBJECT) };
    assert!(index >= 0);
    let reserved = types::type_info(index).unwrap();
    let getter = ObjectRef::from(tether_core::function::get_global("testing.echo").unwrap().0).into_raw();
    let field = |name: &'static [u8], getter| FieldInfo {
        name: ByteSlice { ptr: name.as_ptr(), len: name.len() },
        doc: ByteSlice::empty(),
        type_hint: ByteSlice::empty(),
        getter,
        setter: std::ptr::null_mut(),
    };
    let not_a_function = ObjectRef::from(tether_core::StrObj::new("not a function")).into_raw();
    // A refused info is not kept, so it is freed here; an accepted one is the registry's.
    let publish = |depth: i32, fields: Vec<FieldInfo>, constructor| -> (i32, String) {
        // Raw from the start: the registry keeps pointers into an accepted info.
        let fields = Box::into_raw(fields.into_boxed_slice());
        let info = Box::into_raw(Box::new(TypeInfo {
            index,
            depth,
            parent: reserved.parent,
            flags: 0,
            key: reserved.key,
            doc: ByteSlice::empty(),
            ancestors: reserved.ancestors().as_ptr(),
            n_fields: fields.len(),
            fields: fields as *const FieldInfo,
            methods: std::ptr::null(),
            n_methods: 0,
            constructor,
        }));
        // SAFETY: an info whose arrays match its counts and whose objects are live; it and its
        // fields stay the registry's (never freed) if it takes them.
        let rc = unsafe { (api.publish_type_info)(info) };
        if rc < 0 {
            // SAFETY: refused, so nobody else holds them: ours to free, once.
            unsafe { drop((Box::from_raw(info), Box::from_raw(fields))) };
            return (rc, tether_core::error::take_last_error().to_string());
        }
        (rc, String::new())
    };
    let cases: [(i32, Vec<FieldInfo>, *mut tether_core::ObjectHeader, &str); 4] = [
        (reserved.depth + 3, vec![field(b"x", getter)], std::ptr::null_mut(), "depth"),
        (reserved.depth, vec![field(b"\xff\xfe", getter)], std::ptr::null_mut(), "not UTF-8"),
        (reserved.depth, vec![field(b"x", std::ptr::null_mut())], std::ptr::null_mut(), "getter"),
        (reserved.depth, vec![field(b"x", getter)], not_a_function, "not a Function"),
    ];
    for (depth, fields, constructor, expect) in cases {
        let (rc, message) = publish(depth, fields, constructor);
        assert_eq!(rc, -1, "published metadata that should be refused ({expect})");
        assert!(message.contains(expect), "{message:?} does not say {expect:?}");
        assert!(!types::type_info(index).unwrap().is_reflected(), "the key-only entry stays");
    }
    let (rc, message) = publish(reserved.depth, vec![field(b"x", getter)], std::ptr::null_mut());
    assert_eq!(rc, index, "{message}");
    assert_eq!(types::all_fields(types::type_info(index).unwrap()).len(), 1);
    // SAFETY: the reference made above; no refused info kept it.
    drop(unsafe { ObjectRef::from_raw(not_a_function) });
}
