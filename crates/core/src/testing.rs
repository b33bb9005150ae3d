//! The `testing` namespace: the contract every conformance suite and outside check uses.
//! Registered at runtime init; names and signatures are fixed (see docs/conformance.md).

use crate::host_value::{HostLanguage, HostValueObj};
use std::collections::HashMap;
use std::sync::Mutex;

use crate::any::{Any, AnyView};
use crate::arc::{alloc_raw_object, ObjectArc, ObjectRef};
use crate::cell::AnyCell;
use crate::containers::{ArrayObj, MapObj};
use crate::error::{Error, Result};
use crate::function::{register_global, Function};
use crate::object::{ObjectHeader, DELETE_MEMORY};
use crate::signature::{DefaultValue, Param, Signature, Ty};
use crate::types::TypeBuilder;

/// `testing.Pair`: two settable `Any` fields.
pub struct Pair {
    first: AnyCell,
    second: AnyCell,
}
crate::declare_object!(Pair, "testing.Pair");

impl Pair {
    pub fn new(first: Any, second: Any) -> ObjectArc<Pair> {
        ObjectArc::new(Pair { first: AnyCell::new(first), second: AnyCell::new(second) })
    }
    pub fn first(&self) -> Any {
        self.first.get()
    }
    pub fn second(&self) -> Any {
        self.second.get()
    }
    pub fn set_first(&self, v: Any) {
        self.first.set(v);
    }
    pub fn set_second(&self, v: Any) {
        self.second.set(v);
    }
}

/// `testing.Triple`: a `testing.Pair` subtype with a third settable value, so reflection of
/// inherited members can be tested in every language.
#[repr(C)]
pub struct Triple {
    base: Pair,
    third: AnyCell,
}
crate::declare_object!(Triple, "testing.Triple", parent = Pair);

impl Triple {
    pub fn new(first: Any, second: Any, third: Any) -> ObjectArc<Triple> {
        ObjectArc::new(Triple {
            base: Pair { first: AnyCell::new(first), second: AnyCell::new(second) },
            third: AnyCell::new(third),
        })
    }
}

static STASH: Mutex<Option<HashMap<String, Any>>> = Mutex::new(None);

fn with_stash<R>(f: impl FnOnce(&mut HashMap<String, Any>) -> R) -> R {
    let mut guard = STASH.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// Objects from `make_aligned`: the body is aligned to `align`; size and alignment are stored
/// in the body so the deleter frees exactly what was allocated.
#[repr(C)]
struct AlignedBody {
    header: ObjectHeader,
    align: u64,
}
crate::declare_object!(AlignedMarker, "testing.Aligned");
/// Type marker for `testing.Aligned` (the body is laid out by hand, see `AlignedBody`).
pub struct AlignedMarker;

const ALIGNED_SIZE: usize = 64;

/// The longest array `testing.make_array` makes (each item is a new Pair: 2^24 of them take
/// about a GiB; a larger request would only exhaust memory).
const MAX_TEST_ARRAY: i64 = 1 << 24;

unsafe extern "C" fn delete_aligned(obj: *mut ObjectHeader, flags: i32) {
    if flags & DELETE_MEMORY != 0 {
        // SAFETY: `align` is a plain field written at construction; the layout matches.
        unsafe {
            let align = (*(obj as *const AlignedBody)).align as usize;
            crate::alloc::free_object(obj, ALIGNED_SIZE.max(align), align);
        }
    }
}

fn make_aligned(align: i64) -> Result<ObjectRef> {
    if !(1..=4096).contains(&align) || !(align as u64).is_power_of_two() {
        return Err(Error::value(format!("alignment must be a power of two from 1 to 4096, got {align}")));
    }
    let align = (align as usize).max(8);
    // SAFETY: `delete_aligned` frees exactly this size/alignment; the body is plain data.
    let obj = unsafe {
        alloc_raw_object(ALIGNED_SIZE.max(align), align, <AlignedMarker as crate::Object>::type_index(), delete_aligned)
    };
    // SAFETY: the body is at least `AlignedBody` large.
    unsafe { std::ptr::addr_of_mut!((*(obj.as_ptr() as *mut AlignedBody)).align).write(align as u64) };
    Ok(obj)
}

fn is_aligned(x: Any) -> Result<bool> {
    let obj =
        x.into_object().ok_or_else(|| Error::type_error("testing.is_aligned() argument 'x' must be an object"))?;
    let align = if obj.is::<AlignedMarker>() {
        // SAFETY: checked type: the body is an `AlignedBody`.
        unsafe { (*(obj.as_ptr() as *const AlignedBody)).align as usize }
    } else {
        8
    };
    Ok(obj.as_ptr() as usize % align == 0)
}

fn call_in_thread(args: &[AnyView<'_>]) -> Result<Any> {
    let f: Function =
        crate::function::convert_arg("testing.call_in_thread", 1, args.first().unwrap_or(&AnyView::none()))?;
    let owned: Vec<Any> = args[1..].iter().map(AnyView::to_owned_any).collect();
    let worker = std::thread::Builder::new()
        .name("tether-call-in-thread".into())
        .spawn(move || {
            let views: Vec<AnyView<'_>> = owned.iter().map(Any::view).collect();
            f.call(&views)
        })
        .map_err(|e| Error::runtime(format!("cannot spawn a thread: {e}")))?;
    worker.join().unwrap_or_else(|p| Err(Error::of_kind(crate::ErrorKind::RustPanic, crate::error::panic_message(&*p))))
}

/// The longest `testing.sleep_ms` and `call_in_background` interval (a minute).
const MAX_SLEEP_MS: i64 = 60_000;

fn milliseconds(func: &str, param: &str, ms: i64) -> Result<std::time::Duration> {
    if !(0..=MAX_SLEEP_MS).contains(&ms) {
        return Err(Error::value(format!(
            "{func}() argument '{param}' must be between 0 and {MAX_SLEEP_MS}, got {ms}"
        )));
    }
    Ok(std::time::Duration::from_millis(ms as u64))
}

fn count(func: &str, param: &str, n: i64) -> Result<i64> {
    if n < 0 {
        return Err(Error::value(format!("{func}() argument '{param}' must not be negative, got {n}")));
    }
    Ok(n)
}

/// `f()` `n` times in a native loop; the last result (None for none).
fn call_times(f: Function, n: i64) -> Result<Any> {
    let mut last = Any::none();
    for _ in 0..count("testing.call_times", "n", n)? {
        last = f.call(&[])?;
    }
    Ok(last)
}

/// A detached native thread calls `f()` `times` times, `interval_ms` apart (waiting before each
/// call), holding its own reference to `f` meanwhile. The first error stops it and is printed
/// to stderr: how a callback into a runtime that is shutting down fails is visible after the
/// runtime is gone (the harden storms read it).
fn call_in_background(f: Function, times: i64, interval_ms: i64) -> Result<()> {
    let times = count("testing.call_in_background", "times", times)?;
    let interval = milliseconds("testing.call_in_background", "interval_ms", interval_ms)?;
    std::thread::Builder::new()
        .name("tether-call-in-background".into())
        .spawn(move || {
            for done in 0..times {
                std::thread::sleep(interval);
                if let Err(e) = f.call(&[]) {
                    eprintln!("testing.call_in_background: stopped after {done} calls: {}: {}", e.kind(), e.message());
                    return;
                }
            }
        })
        .map(drop)
        .map_err(|e| Error::runtime(format!("cannot spawn a thread: {e}")))
}

fn sum(xs: Any) -> Result<f64> {
    let arr = xs.view().downcast_ref::<ArrayObj>().ok_or_else(|| {
        Error::type_error(format!("testing.sum() argument 'xs' must be Array, not {}", xs.view().kind_name()))
    })?;
    let mut total = 0.0;
    for (i, item) in arr.items().iter().enumerate() {
        let v = item.view();
        total += v
            .as_float()
            .or_else(|| v.as_int().map(|i| i as f64))
            .ok_or_else(|| Error::type_error(format!("testing.sum(): item {i} is {}, not a number", v.kind_name())))?;
    }
    Ok(total)
}

fn array_arg<'a>(v: &'a Any, func: &str, param: &str) -> Result<&'a ArrayObj> {
    v.view().downcast_ref::<ArrayObj>().ok_or_else(|| {
        Error::type_error(format!("{func}() argument '{param}' must be Array, not {}", v.view().kind_name()))
    })
}

/// The language of `testing.foreign_value`: stands for a frontend other than the caller's.
static TESTING_LANGUAGE: HostLanguage = HostLanguage { name: "Testing", release: release_nothing };

unsafe extern "C" fn release_nothing(_value: *mut std::ffi::c_void) {}

fn foreign_value(type_name: String) -> ObjectArc<HostValueObj> {
    // SAFETY: the value is a null pointer the testing language's release ignores.
    unsafe { HostValueObj::new(std::ptr::null_mut(), &TESTING_LANGUAGE, &type_name) }
}

pub(crate) fn register() {
    let pair = TypeBuilder::<Pair>::new().doc("Two settable values (the testing namespace's object type).");
    let pair = crate::cell_field_rw!(pair, Pair, first, "first").field_doc("The first value.");
    let pair = crate::cell_field_rw!(pair, Pair, second, "second").field_doc("The second value.");
    pair.method("swap", |p: ObjectArc<Pair>| Pair::new(p.second(), p.first()))
        .method_doc("A new Pair with the values swapped.")
        .leaf_constructor(Pair::new)
        .params(&["first", "second"])
        .register();
    // Weak-referenceable (its Python wrappers take `weakref.ref`), where its parent is not.
    let triple = TypeBuilder::<Triple>::new()
        .doc(
            "A Pair with a third settable value (a subtype of testing.Pair); its Python wrappers take weak references.",
        )
        .weak_referenceable();
    let triple = crate::cell_field_rw!(triple, Triple, third, "third").field_doc("The third value.");
    triple.leaf_constructor(Triple::new).params(&["first", "second", "third"]).register();
    TypeBuilder::<AlignedMarker>::new().doc("An object whose body has a requested alignment.").register();

    let reg = |f: Function| {
        let name = f.name().to_string();
        register_global(&name, f, true).expect("testing registration")
    };
    reg(Function::from_typed("testing.echo", |x: Any| x)
        .with_params(&["x"])
        .leaf()
        .with_doc("Return x (the same native object, for objects)."));
    reg(Function::from_typed("testing.make_pair", Pair::new)
        .with_params(&["first", "second"])
        .leaf()
        .with_doc("A new testing.Pair."));
    reg(Function::from_typed("testing.add", |a: i64, b: i64| a.wrapping_add(b))
        .with_params(&["a", "b"])
        .leaf()
        .with_doc("a + b"));
    reg(Function::from_typed("testing.add3", |a: i64, b: i64, c: i64| a.wrapping_add(b).wrapping_add(c))
        .with_params(&["a", "b", "c"])
        .leaf()
        .with_doc("a + b + c"));
    let greeting = Signature {
        params: vec![
            Param::new("name", Ty::Str),
            Param::new("greeting", Ty::Str).with_default(DefaultValue::Str("hello")),
        ],
        result: Ty::Str,
        receiver: false,
    };
    reg(Function::from_typed("testing.greet", |name: String, greeting: String| format!("{greeting}, {name}"))
        .with_signature(greeting.intern().expect("testing.greet's signature"))
        .leaf()
        .with_doc("\"{greeting}, {name}\": a function with a default."));
    reg(Function::from_typed("testing.sum", sum)
        .with_params(&["xs"])
        .with_doc("The sum of an Array of numbers, as a float."));
    reg(Function::from_packed("testing.call", |args| {
        // Borrowed: a Function called and not kept takes no reference.
        let none = AnyView::none();
        let first = args.first().unwrap_or(&none);
        match crate::function::FunctionRef::from_view(first) {
            Some(f) => f.call(&args[1..]),
            None => crate::function::convert_arg::<Function>("testing.call", 1, first)?.call(&args[1..]),
        }
    })
    // It calls f on the calling thread and waits for nothing else (frontends release their
    // lock anyway when f is a native Function that may block).
    .nonblocking()
    .with_doc("Return f(*args)."));
    reg(Function::from_packed("testing.call_in_thread", call_in_thread)
        .with_doc("Call f(*args) on a new native thread and return its result."));
    reg(Function::from_typed("testing.call_times", call_times)
        .with_params(&["f", "n"])
        .with_doc("Call f() n times in a native loop and return the last result."));
    reg(Function::from_typed("testing.call_in_background", call_in_background)
        .with_params(&["f", "times", "interval_ms"])
        .with_doc(
            "Call f() times times on a detached native thread, interval_ms apart; the first error \
             stops it and is printed to stderr.",
        ));
    reg(Function::from_typed("testing.sleep_ms", |ms: i64| -> Result<()> {
        std::thread::sleep(milliseconds("testing.sleep_ms", "ms", ms)?);
        Ok(())
    })
    .with_params(&["ms"])
    .with_doc("Sleep ms milliseconds inside native code (a call that blocks: Python releases the GIL)."));
    let fail_allocations = Signature {
        params: vec![Param::new("n", Ty::Int), Param::new("after", Ty::Int).with_default(DefaultValue::Int(0))],
        result: Ty::Int,
        receiver: false,
    };
    reg(Function::from_typed("testing.fail_allocations", |n: i64, after: i64| -> Result<i64> {
        let (n, after) =
            (count("testing.fail_allocations", "n", n)?, count("testing.fail_allocations", "after", after)?);
        Ok(crate::alloc::fail_allocations(n, after))
    })
    .with_signature(fail_allocations.intern().expect("testing.fail_allocations's signature"))
    .leaf()
    .with_doc(
        "Make n allocations of the frontend allocator fail (a MemoryError where they happen) once \
         the next `after` have succeeded; returns how many earlier ones were still pending. 0 \
         cancels them.",
    ));
    reg(Function::from_typed("testing.raise_error", |kind: String, message: String| -> Result<()> {
        Err(Error::new(&kind, message))
    })
    .with_params(&["kind", "message"])
    .with_doc("Raise an Error of the given kind."));
    reg(Function::from_typed("testing.panic", |message: String| -> () { panic!("{message}") })
        .with_params(&["message"])
        .with_doc("Panic in Rust."));
    reg(Function::from_typed("testing.stash", |key: String, x: Any| {
        with_stash(|s| s.insert(key, x));
    })
    .with_params(&["key", "x"])
    .with_doc("Keep a native reference to x under key."));
    reg(Function::from_typed("testing.take", |key: String| -> Result<Any> {
        with_stash(|s| s.remove(&key)).ok_or_else(|| Error::key(format!("nothing stashed under {key:?}")))
    })
    .with_params(&["key"])
    .with_doc("Return and remove the value stashed under key."));
    reg(Function::from_typed("testing.call_stashed_as_leaf", |key: i64| -> Result<Any> {
        let stashed = with_stash(|s| s.get(&key.to_string()).cloned())
            .ok_or_else(|| Error::key(format!("nothing stashed under \"{key}\"")))?;
        crate::function::convert_arg::<Function>("testing.call_stashed_as_leaf", 1, &stashed.view())?.call(&[])
    })
    // Deliberately wrong: it calls back, so it is no leaf. A frontend that trusts the flag
    // further than Python's GIL (the JVM's critical downcalls) must refuse the callback cleanly.
    .leaf()
    .with_params(&["key"])
    .with_doc("Call the Function stashed under str(key), though flagged a leaf (a broken promise, for the frontends' guards)."));
    reg(Function::from_typed("testing.call_stashed_as_int_leaf", |key: i64| -> Result<i64> {
        let stashed = with_stash(|s| s.get(&key.to_string()).cloned())
            .ok_or_else(|| Error::key(format!("nothing stashed under \"{key}\"")))?;
        let result = crate::function::convert_arg::<Function>("testing.call_stashed_as_int_leaf", 1, &stashed.view())?
            .call(&[])?;
        result.view().as_int().ok_or_else(|| Error::type_error("the stashed Function returned a non-int"))
    })
    // As `call_stashed_as_leaf`, for the int entry (`FUNC_INT_ENTRY`: int parameter and result).
    .leaf()
    .with_params(&["key"])
    .with_doc("Call the Function stashed under str(key) for an int, though flagged a leaf (a broken promise, for the frontends' guards)."));
    reg(Function::from_typed("testing.stash_clear", || {
        let drained: Vec<Any> = with_stash(|s| s.drain().map(|(_, v)| v).collect());
        drop(drained); // released outside the stash lock: destructors may re-enter
    })
    .with_doc("Drop every stashed reference."));
    reg(Function::from_typed("testing.drop_in_thread", |x: Any| -> Result<()> {
        std::thread::spawn(move || drop(x)).join().map_err(|_| Error::runtime("drop thread panicked"))
    })
    .with_params(&["x"])
    .with_doc("Take one native reference to x and drop it on a new native thread."));
    reg(Function::from_typed("testing.foreign_value", foreign_value)
        .with_params(&["type_name"])
        .with_doc("A host value of another language (\"Testing\"), which every frontend must refuse."));
    reg(Function::from_typed("testing.live_objects", crate::alloc::live_objects)
        .leaf()
        .with_doc("Objects allocated and not yet freed."));
    reg(Function::from_typed("testing.make_aligned", make_aligned)
        .with_params(&["align"])
        .with_doc("An object whose body has the given alignment."));
    reg(Function::from_typed("testing.is_aligned", is_aligned)
        .with_params(&["x"])
        .leaf()
        .with_doc("Is x's body aligned as requested?"));
    reg(Function::from_typed("testing.make_array", |n: i64| -> Result<ObjectArc<ArrayObj>> {
        if !(0..=MAX_TEST_ARRAY).contains(&n) {
            return Err(Error::value(format!(
                "testing.make_array(): n must be between 0 and {MAX_TEST_ARRAY}, got {n}"
            )));
        }
        Ok(ArrayObj::new((0..n).map(|i| Any::object(Pair::new(Any::int(i), Any::none()).into())).collect()))
    })
    .with_params(&["n"])
    .with_doc("An Array of n distinct testing.Pair objects (first = index)."));
    reg(Function::from_typed("testing.make_map", |keys: Any, values: Any| -> Result<ObjectArc<MapObj>> {
        let (k, v) = (array_arg(&keys, "testing.make_map", "keys")?, array_arg(&values, "testing.make_map", "values")?);
        if k.len() != v.len() {
            return Err(Error::value(format!("testing.make_map(): {} keys but {} values", k.len(), v.len())));
        }
        Ok(MapObj::new(k.items().iter().cloned().zip(v.items().iter().cloned()).collect()))
    })
    .with_params(&["keys", "values"])
    .with_doc("A Map from two Arrays of equal length."));
}
