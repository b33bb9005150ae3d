//! Concurrency stress: 8 threads cloning, dropping and upgrading weak references to shared
//! objects; concurrent type and function registration; 8 threads tying the same objects.
//! (Iteration counts shrink under Miri, which runs the same interleavings far slower.)

mod common;
#[path = "support/mock_host.rs"]
mod mock_host;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use tether_core::alloc::live_objects;
use tether_core::function::{get_global, list_globals, register_global};
use tether_core::testing::Pair;
use tether_core::types::{list_types, register_type_key, type_index_of};
use tether_core::{declare_object, Any, Function, Object, ObjectArc, ObjectRef, TypeIndex};

const THREADS: usize = 8;

static VALUE_DROPS: AtomicUsize = AtomicUsize::new(0);
struct Shared(#[allow(dead_code)] usize);
declare_object!(Shared, "tests.concurrency.Shared");
impl Drop for Shared {
    fn drop(&mut self) {
        VALUE_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

fn run_threads(f: impl Fn(usize) + Send + Sync + 'static) {
    let f = Arc::new(f);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let f = f.clone();
            std::thread::spawn(move || f(t))
        })
        .collect();
    for h in handles {
        h.join().expect("worker panicked");
    }
}

#[test]
fn clone_drop_and_upgrade_weak_refs_from_8_threads() {
    let _g = common::serial();
    let base = live_objects();
    let drops = VALUE_DROPS.load(Ordering::SeqCst);
    let n_objects = common::iters(16, 2);
    let rounds = common::iters(2000, 10);
    let objects: Arc<Vec<ObjectArc<Shared>>> = Arc::new((0..n_objects).map(|i| ObjectArc::new(Shared(i))).collect());
    let weaks: Arc<Vec<_>> = Arc::new(objects.iter().map(ObjectArc::downgrade).collect());
    let barrier = Arc::new(Barrier::new(THREADS));
    let (o, w, b) = (objects.clone(), weaks.clone(), barrier.clone());
    run_threads(move |t| {
        b.wait();
        let mut held = Vec::new();
        for r in 0..rounds {
            let i = (r * 7 + t) % o.len();
            held.push(o[i].clone());
            let up = w[i].upgrade().expect("a strong ref is held by the test");
            held.push(up);
            let weak2 = ObjectArc::downgrade(&o[i]);
            drop(weak2.clone());
            if held.len() > 8 {
                held.drain(..4);
            }
        }
    });
    for obj in objects.iter() {
        assert_eq!(ObjectArc::strong_count(obj), 1, "every clone was dropped");
        assert_eq!(ObjectArc::header(obj).weak_count(), 2, "the shared weak plus the test's weak ref");
    }
    drop(objects);
    drop(barrier);
    assert_eq!(VALUE_DROPS.load(Ordering::SeqCst), drops + n_objects);
    let w = Arc::try_unwrap(weaks).ok().expect("threads are done");
    assert!(w.iter().all(|w| w.upgrade().is_none()));
    drop(w);
    assert_eq!(live_objects(), base);
}

#[test]
fn last_strong_and_weak_drops_race_without_double_free() {
    let _g = common::serial();
    let base = live_objects();
    for _ in 0..common::iters(200, 3) {
        let obj = ObjectArc::new(Shared(0));
        let barrier = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (strong, weak, b) = (obj.clone(), ObjectArc::downgrade(&obj), barrier.clone());
                std::thread::spawn(move || {
                    b.wait();
                    if t % 2 == 0 {
                        drop(strong);
                        let _ = weak.upgrade();
                        drop(weak);
                    } else {
                        drop(weak);
                        drop(strong);
                    }
                })
            })
            .collect();
        drop(obj);
        handles.into_iter().for_each(|h| h.join().unwrap());
    }
    assert_eq!(live_objects(), base);
}

#[test]
fn concurrent_type_registration_is_idempotent() {
    let _g = common::serial();
    let keys_per_thread = common::iters(20, 2);
    let results = Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = results.clone();
    run_threads(move |t| {
        for k in 0..keys_per_thread {
            let same = register_type_key("tests.concurrency.SameKey", TypeIndex::OBJECT).unwrap();
            let own = register_type_key(&format!("tests.concurrency.T{t}.K{k}"), TypeIndex::OBJECT).unwrap();
            r.lock().unwrap().push((same, own));
        }
        // Declared types resolve lazily and concurrently too.
        assert!(Shared::type_index() >= TypeIndex::FIRST_USER);
    });
    let results = results.lock().unwrap();
    let same = results[0].0;
    assert!(results.iter().all(|(s, _)| *s == same), "one index for one key");
    let mut own: Vec<i32> = results.iter().map(|(_, o)| *o).collect();
    own.sort();
    own.dedup();
    assert_eq!(own.len(), THREADS * keys_per_thread, "distinct keys get distinct indices");
    assert!(!own.contains(&same));
    let listed = list_types();
    assert_eq!(listed.iter().filter(|(_, k)| *k == "tests.concurrency.SameKey").count(), 1, "no duplicate entries");
    assert!(type_index_of("tests.concurrency.T3.K0").is_some_and(|i| own.contains(&i)));
}

#[test]
fn concurrent_global_function_registration() {
    let _g = common::serial();
    let per_thread = common::iters(20, 2);
    let won = Arc::new(AtomicUsize::new(0));
    let w = won.clone();
    run_threads(move |t| {
        for k in 0..per_thread {
            let name = format!("tests.concurrency.f{t}_{k}");
            register_global(&name, Function::from_typed(&name, move |a: i64| a + k as i64), false).unwrap();
            assert!(get_global(&name).is_some());
        }
        let contested = "tests.concurrency.contested";
        if register_global(contested, Function::from_typed(contested, move || t as i64), false).is_ok() {
            w.fetch_add(1, Ordering::SeqCst);
        }
    });
    assert_eq!(won.load(Ordering::SeqCst), 1, "exactly one thread registers a contested name");
    let names = list_globals();
    for t in 0..THREADS {
        for k in 0..per_thread {
            assert!(names.contains(&format!("tests.concurrency.f{t}_{k}")));
        }
    }
    let f = get_global("tests.concurrency.f0_1").unwrap_or_else(|| get_global("tests.concurrency.f0_0").unwrap());
    assert!(f.call(&[tether_core::AnyView::int(1)]).is_ok());
}

#[test]
fn eight_threads_tying_the_same_objects_get_one_wrapper_each() {
    let _g = common::serial();
    let h = mock_host::host();
    let base = live_objects();
    let n_objects = common::iters(8, 2);
    let rounds = common::iters(200, 3);
    let objects: Arc<Vec<ObjectRef>> =
        Arc::new((0..n_objects).map(|i| Pair::new(Any::int(i as i64), Any::none()).into()).collect());
    let created_before: Vec<usize> = objects.iter().map(|o| h.created_for(o.as_ptr())).collect();
    let barrier = Arc::new(Barrier::new(THREADS));
    let wrappers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (o, b, ws) = (objects.clone(), barrier.clone(), wrappers.clone());
    run_threads(move |t| {
        b.wait();
        let mut mine = Vec::new();
        for r in 0..rounds {
            let i = (r + t) % o.len();
            let w = h.tie(o[i].clone());
            assert_eq!(w.obj, o[i].as_ptr());
            mine.push(w);
        }
        ws.lock().unwrap().extend(mine);
    });
    // Every wrapper for an object is the same one, created once while it stayed alive.
    let all = wrappers.lock().unwrap();
    for (i, obj) in objects.iter().enumerate() {
        let for_obj: Vec<_> = all.iter().filter(|w| w.obj == obj.as_ptr()).collect();
        assert!(for_obj.windows(2).all(|p| Arc::ptr_eq(p[0], p[1])), "object {i}: one canonical wrapper");
        assert_eq!(h.created_for(obj.as_ptr()) - created_before[i], 1, "object {i}: created exactly once");
    }
    assert_eq!(h.duplicates.load(Ordering::SeqCst), 0);
    drop(all);
    wrappers.lock().unwrap().clear();
    h.run_finalizers(false);
    assert!(objects.iter().all(|o| h.slot_word(o.as_ptr()) == 0), "every slot Detached after release");
    drop(objects);
    drop(barrier);
    assert_eq!(live_objects(), base);
}

#[test]
fn tying_races_with_wrapper_death_never_duplicate_a_live_wrapper() {
    let _g = common::serial();
    let h = mock_host::host();
    let base = live_objects();
    let rounds = common::iters(500, 4);
    let objects: Arc<Vec<ObjectRef>> = Arc::new((0..4).map(|i| Pair::new(Any::int(i), Any::none()).into()).collect());
    let o = objects.clone();
    run_threads(move |t| {
        for r in 0..rounds {
            let i = (r * 3 + t) % o.len();
            let w = h.tie(o[i].clone());
            assert_eq!(w.obj, o[i].as_ptr());
            drop(w); // may leave a Dying wrapper that another thread replaces
            if r % 16 == t {
                h.run_finalizers(false); // late finalizers race with ties
            }
        }
    });
    h.run_finalizers(false);
    assert_eq!(h.duplicates.load(Ordering::SeqCst), 0, "never two live wrappers for one object");
    assert!(objects.iter().all(|o| h.slot_word(o.as_ptr()) == 0));
    drop(objects);
    assert_eq!(live_objects(), base);
}

#[test]
fn any_cells_read_and_replaced_from_8_threads_keep_counts_exact() {
    use tether_core::cell::AnyCell;
    let _g = common::serial();
    let base = live_objects();
    let rounds = common::iters(5000, 20);
    let cell = Arc::new(AnyCell::new(Any::object(Pair::new(Any::int(0), Any::none()).into())));
    let c = cell.clone();
    run_threads(move |t| {
        for r in 0..rounds {
            if (r + t) % 4 == 0 {
                // A fresh object each write: the replaced one must die exactly once.
                c.set(Any::object(Pair::new(Any::int(r as i64), Any::none()).into()));
            } else {
                let v = c.get();
                let pair = v.view().downcast_ref::<Pair>().expect("the cell always holds a Pair");
                assert!(pair.first().view().as_int().is_some());
            }
        }
    });
    assert_eq!(live_objects(), base + 1, "only the last value is alive");
    let last = Arc::try_unwrap(cell).expect("workers joined").into_inner();
    let obj = last.view().to_object().expect("an object");
    assert_eq!(obj.header().strong_count(), 2, "the cell's reference and ours: no stray counts");
    drop((obj, last));
    assert_eq!(live_objects(), base);
}

#[test]
fn any_cells_moving_between_boxed_and_word_values_under_8_threads_free_each_once() {
    use tether_core::cell::AnyCell;
    let _g = common::serial();
    let base = live_objects();
    let rounds = common::iters(5000, 20);
    let cell = Arc::new(AnyCell::new(Any::str("boxed")));
    let c = cell.clone();
    run_threads(move |t| {
        for r in 0..rounds {
            match (r + t) % 6 {
                // Boxed values (a float with its low bits set, an int past 61 bits, an inline
                // string) alternate with word values: a reader must never see a freed box.
                0 => c.set(Any::float(0.1 + r as f64)),
                1 => c.set(Any::int(i64::MAX - r as i64)),
                2 => c.set(Any::object(Pair::new(Any::int(r as i64), Any::none()).into())),
                _ => {
                    let v = c.get();
                    let ok = v.view().as_float().is_some_and(|f| f.fract() != 0.0)
                        || v.view().as_int().is_some_and(|i| i > i64::MAX - rounds as i64)
                        || v.view().downcast_ref::<Pair>().is_some()
                        || v.as_str() == Some("boxed");
                    assert!(ok, "a value some thread stored, read whole: {v:?}");
                    let kind = c.with_view(|view| view.type_index());
                    let kinds = [TypeIndex::FLOAT, TypeIndex::INT, TypeIndex::SMALL_STR, Pair::type_index()];
                    assert!(kinds.contains(&kind), "a view of a whole value, kind {kind}");
                }
            }
        }
    });
    drop(Arc::try_unwrap(cell).expect("workers joined"));
    assert_eq!(live_objects(), base, "every replaced object died exactly once");
}
