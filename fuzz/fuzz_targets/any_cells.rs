//! The C ABI entry points that decode `Any` cells: `make_array` (copies cells into an Array)
//! and `call_function` (every global Function converts its arguments from cells), fed cells of
//! every kind a C caller can write without breaking the memory contract: any head and payload
//! for the plain kinds (unknown and negative type indices, lengths past 7 for inline strings,
//! bytes that are not UTF-8, bools that are neither 0 nor 1), borrowed views into the input,
//! and real objects of every container kind. Checked: no crash, a failure always raises an
//! `Error`, a success leaves none raised, an Array keeps exactly the cells it was given, and
//! every object made is freed again (`live_objects()` back at its baseline).

#![no_main]

mod common;

use std::sync::OnceLock;

use common::{api, expect_none_raised, expect_raised, slice, Reader};
use libfuzzer_sys::fuzz_target;
use tether_core::any::TypeIndex;
use tether_core::{Any, AnyView, ArrayObj, BytesObj, Function, MapObj, ObjectHeader, ObjectRef, StrObj};

/// Functions left out: the three that hand objects to another thread (their frees race the
/// baseline check), the panic, whose backtrace capture would dominate the run, the two that
/// sleep or loop as long as they are asked to (a minute, 2^62 calls: libFuzzer's timeout), and
/// `fail_allocations`, which would make the harness's own allocations fail.
const SKIPPED: [&str; 7] = [
    "testing.call_in_thread",
    "testing.drop_in_thread",
    "testing.call_in_background",
    "testing.panic",
    "testing.sleep_ms",
    "testing.call_times",
    "testing.fail_allocations",
];

struct Setup {
    functions: Vec<(String, Function)>,
    baseline: i64,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        tether_core::init();
        let functions = tether_core::function::list_globals()
            .into_iter()
            .filter(|n| !SKIPPED.contains(&n.as_str()))
            .filter_map(|n| tether_core::function::get_global(&n).map(|f| (n, f)))
            .collect();
        Setup { functions, baseline: tether_core::alloc::live_objects() }
    })
}

/// A few objects of every kind, for object cells to point at.
fn object_pool(r: &mut Reader<'_>) -> Vec<ObjectRef> {
    let mut pool: Vec<ObjectRef> = vec![
        StrObj::new(&String::from_utf8_lossy(r.short_bytes())).into(),
        BytesObj::new(r.short_bytes()).into(),
        tether_core::testing::Pair::new(Any::int(r.u64() as i64), Any::none()).into(),
        ArrayObj::new(vec![Any::int(1), Any::str("a string longer than seven")]).into(),
        MapObj::new(vec![(Any::str("k"), Any::int(2))]).into(),
        tether_core::Error::value("an error object").into_object(),
    ];
    if let Some((_, f)) = setup().functions.get(r.below(64)) {
        pool.push(f.0.clone().into());
    }
    pool
}

/// One cell as a C caller could write it. Object cells borrow `pool`; views borrow the input.
fn cell<'p, 'd: 'p>(r: &mut Reader<'d>, pool: &'p [ObjectRef]) -> AnyView<'p> {
    let plain = |tix: i32, small: u32, payload: u64| {
        // SAFETY: a plain kind (below TypeIndex::OBJECT, not a RAW_* view): nothing in the cell
        // is a pointer the core dereferences.
        unsafe { AnyView::from_raw_parts(tix, small, payload) }
    };
    match r.below(12) {
        0 => AnyView::int(r.u64() as i64),
        1 => AnyView::float(f64::from_bits(r.u64())),
        2 => plain(TypeIndex::BOOL, 0, r.u64()),
        3 => plain(TypeIndex::NONE, r.u32(), r.u64()),
        4 => plain(TypeIndex::SMALL_STR, r.u8() as u32 % 12, r.u64()),
        5 => plain(TypeIndex::SMALL_BYTES, r.u8() as u32 % 12, r.u64()),
        6 => {
            let b = r.short_bytes();
            // SAFETY: a RAW_STR view of `b.len()` bytes that live as long as the input.
            unsafe { AnyView::from_raw_parts(TypeIndex::RAW_STR, b.len() as u32, b.as_ptr() as u64) }
        }
        7 => AnyView::raw_bytes(r.short_bytes()),
        8 => {
            // An index no value has: the gap between the views and the objects, or negative.
            let tix = match r.u8() % 2 {
                0 => 9 + (r.u8() as i32 % (TypeIndex::STATIC_END - 9)),
                _ => -1 - (r.u32() as i32 & 0x7fff_ffff),
            };
            plain(tix, r.u32(), r.u64())
        }
        9 => plain(TypeIndex::OPAQUE_PTR, 0, r.u64()),
        10 => match std::str::from_utf8(r.short_bytes()) {
            // A valid UTF-8 view: what most typed arguments want.
            Ok(s) => AnyView::raw_str(s),
            Err(_) => AnyView::none(),
        },
        _ => match pool.get(r.below(pool.len().max(1))) {
            Some(obj) => AnyView::object(obj),
            None => AnyView::none(),
        },
    }
}

/// What `make_array` must have stored for `v`: an owned copy with the same meaning.
fn same_value(v: &AnyView<'_>, stored: &Any) {
    match v.type_index() {
        TypeIndex::RAW_STR => assert_eq!(stored.as_str(), Some(v.as_str().unwrap_or_default()), "{v:?}"),
        TypeIndex::RAW_BYTES => assert_eq!(stored.view().as_bytes(), v.as_bytes(), "{v:?}"),
        _ => assert!(stored.view() == *v, "make_array stored {stored:?} for {v:?}"),
    }
}

fn make_array(cells: &[AnyView<'_>]) {
    // SAFETY: `cells.len()` readable cells, each valid as `cell` explains.
    let raw = unsafe { (api().make_array)(cells.as_ptr() as *const AnyView<'static>, cells.len()) };
    if raw.is_null() {
        return expect_raised("make_array");
    }
    expect_none_raised("make_array");
    // SAFETY: an owned reference to the new Array.
    let array = unsafe { ObjectRef::from_raw(raw) };
    let items = array.downcast_ref::<ArrayObj>().expect("make_array made an Array").items();
    assert_eq!(items.len(), cells.len());
    cells.iter().zip(items).for_each(|(v, stored)| same_value(v, stored));
}

fn call(f: &Function, name: &str, args: &[AnyView<'_>]) {
    let mut result = Any::none();
    let func: *mut ObjectHeader = tether_core::ObjectArc::as_ptr(&f.0);
    // SAFETY: `func` is a live Function we hold; `args.len()` cells valid as `cell` explains;
    // `result` is a None cell the callee may overwrite with an owned value.
    let rc = unsafe {
        (api().call_function)(func, args.as_ptr() as *const AnyView<'static>, args.len() as i32, &mut result)
    };
    if rc != 0 {
        assert!(result.is_none(), "{name} failed but wrote a result {result:?}");
        expect_raised(name);
    } else {
        expect_none_raised(name);
    }
}

/// Runs the input's program: a pool of objects, then steps until the input is used up.
fn run(data: &[u8]) {
    let setup = setup();
    let mut r = Reader::new(data);
    let pool = object_pool(&mut r);
    while !r.is_empty() {
        let n = r.below(6);
        let mut cells: Vec<AnyView<'_>> = (0..n).map(|_| cell(&mut r, &pool)).collect();
        if r.below(4) == 0 {
            make_array(&cells);
        } else {
            let (name, f) = &setup.functions[r.below(setup.functions.len())];
            if name == "testing.make_array" {
                // Up to 2^24 items are allowed: keep the run fast (the limit itself is still
                // met by every int outside this range).
                if let Some(n) = cells.first().and_then(|c| c.as_int()).filter(|n| (256..=1 << 24).contains(n)) {
                    cells[0] = AnyView::int(n & 0xff);
                }
            }
            call(f, name, &cells);
        }
        other_entry_points(&mut r);
    }
}

/// Other entry points that decode C input: strings, errors, look-ups by name and index.
fn other_entry_points(r: &mut Reader<'_>) {
    match r.below(4) {
        0 => {
            let b = r.short_bytes();
            // SAFETY: `b` is readable for the call.
            let s = unsafe { (api().make_str)(slice(b)) };
            assert!(!s.is_null(), "make_str failed");
            // SAFETY: an owned reference.
            let s = unsafe { ObjectRef::from_raw(s) };
            assert_eq!(s.downcast_ref::<StrObj>().unwrap().as_str(), String::from_utf8_lossy(b));
        }
        1 => {
            let (kind, message) = (r.short_bytes(), r.short_bytes());
            // SAFETY: both readable for the call.
            let e = unsafe { (api().make_error)(slice(kind), slice(message)) };
            assert!(!e.is_null(), "make_error failed");
            // SAFETY: an owned reference.
            drop(unsafe { ObjectRef::from_raw(e) });
        }
        2 => {
            let name = r.short_bytes();
            // SAFETY: readable for the call.
            let g = unsafe { (api().get_global)(slice(name)) };
            if !g.is_null() {
                // SAFETY: an owned reference.
                drop(unsafe { ObjectRef::from_raw(g) });
            }
        }
        _ => {
            let index = r.u32() as i32;
            // SAFETY: any index may be asked for.
            let info = unsafe { (api().type_info)(index) };
            // SAFETY: null or a published, immutable info.
            if let Some(info) = unsafe { info.as_ref() } {
                assert_eq!(info.index, index, "type_info({index}) answered for another index");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    run(data);
    if let Some(clear) = tether_core::function::get_global("testing.stash_clear") {
        clear.call(&[]).expect("stash_clear");
    }
    assert_eq!(tether_core::alloc::live_objects(), setup().baseline, "objects leaked or freed twice");
});
