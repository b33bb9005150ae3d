//! Per-thread spare cells (thread_spares.rs): keep and take on the owner's side, steals by
//! generation from any thread, cells handed back when their thread exits, and counts that
//! come back exactly.

use std::sync::mpsc;

use tether_core::object::dec_ref;
use tether_core::testing::Pair;
use tether_core::thread_spares::{thread_token, SpareCell, ThreadSpares};
use tether_core::{Any, ObjectRef};

fn pair() -> ObjectRef {
    Pair::new(Any::none(), Any::none()).into()
}

fn strong(obj: &ObjectRef) -> u32 {
    obj.header().strong_count()
}

// The protocol's promises, in these tests: a thread keeps or takes an entry only while the
// test holds the object (its stand-in wrapper) and before it steals that generation.

fn keep(cell: &SpareCell<'_>, obj: ObjectRef, generation: u64) -> Option<ObjectRef> {
    // SAFETY: see above.
    unsafe { cell.keep(obj, generation) }
}

fn take(cell: &SpareCell<'_>, obj: &ObjectRef, generation: u64) -> bool {
    // SAFETY: see above.
    unsafe { cell.take(obj.as_ptr(), generation) }
}

fn steal(spares: &ThreadSpares, obj: &ObjectRef, generation: u64) -> u32 {
    // SAFETY: see above; the test holds `obj`.
    unsafe { spares.steal(obj.as_ptr(), generation) }
}

/// Drop a reference taken out of a cell.
fn drop_taken(obj: &ObjectRef) {
    // SAFETY: the caller took one reference out of a cell; it is dropped once.
    unsafe { dec_ref(obj.as_ptr()) }
}

/// A table of its own for each test, in a static as frontends keep theirs.
macro_rules! table {
    () => {{
        static SPARES: ThreadSpares = ThreadSpares::new();
        &SPARES
    }};
}

/// Keep a spare of `obj` (generation `generation`) on a new thread, which then exits.
fn keep_on_a_thread_that_exits(spares: &'static ThreadSpares, obj: &ObjectRef, generation: u64) {
    let extra = obj.clone();
    // `join` (not a scope) waits for the thread's thread-local destructors too.
    std::thread::spawn(move || {
        let cell = spares.cell().expect("an empty table has a cell for this thread");
        // The test holds `obj` (the stand-in wrapper) throughout.
        assert!(keep(&cell, extra, generation).is_none());
        assert_eq!(spares.held(), 1);
    })
    .join()
    .unwrap();
}

#[test]
fn thread_tokens_differ_between_live_threads_and_stay_put() {
    let here = thread_token();
    assert_ne!(here, 0);
    assert_eq!(here, thread_token());
    let there = std::thread::scope(|s| s.spawn(thread_token).join().unwrap());
    assert_ne!(here, there);
}

#[test]
fn a_thread_finds_its_own_cell_again_and_others_do_not() {
    let spares = table!();
    let obj = pair();
    let cell = spares.cell().unwrap();
    // `obj` stands for the wrapper of generation 1, held throughout.
    assert!(keep(&cell, obj.clone(), 1).is_none());
    let taken_elsewhere = std::thread::scope(|s| {
        s.spawn(|| {
            let other = spares.cell().unwrap();
            take(&other, &obj, 1)
        })
        .join()
        .unwrap()
    });
    assert!(!taken_elsewhere, "another thread's cell is empty");
    let again = spares.cell().unwrap();
    assert!(take(&again, &obj, 1), "the same thread finds the same cell");
    drop_taken(&obj);
    assert_eq!(strong(&obj), 1);
}

#[test]
fn a_cell_is_found_without_claiming_only_once_claimed_and_its_mark_is_its_threads_own() {
    let spares = table!();
    assert!(spares.claimed_cell().is_none(), "a thread that never claimed has no cell to find");
    let cell = spares.cell().unwrap();
    assert!(!cell.marked());
    cell.mark(true);
    assert!(spares.claimed_cell().expect("claimed now").marked(), "the same cell, marked");
    let seen_elsewhere = std::thread::scope(|s| {
        s.spawn(|| {
            let none_yet = spares.claimed_cell().is_none();
            let other = spares.cell().unwrap();
            (none_yet, other.marked())
        })
        .join()
        .unwrap()
    });
    assert_eq!(seen_elsewhere, (true, false), "another thread has no claimed cell, then an unmarked one");
    cell.mark(false);
    assert!(!spares.claimed_cell().unwrap().marked());
}

#[test]
fn keep_then_take_moves_one_reference_and_leaves_the_count_alone() {
    let spares = table!();
    let obj = pair();
    let cell = spares.cell().unwrap();
    // `obj` stands for generation 7's wrapper, held throughout.
    assert!(keep(&cell, obj.clone(), 7).is_none());
    assert_eq!((spares.held(), strong(&obj)), (1, 2), "the kept reference is still counted");
    let back = keep(&cell, obj.clone(), 7).expect("a full cell gives the reference back");
    drop(back);
    assert!(!take(&cell, &obj, 8), "another generation");
    let stranger = pair();
    assert!(!take(&cell, &stranger, 7), "another object");
    assert!(take(&cell, &obj, 7));
    assert!(!take(&cell, &obj, 7), "taken once");
    assert_eq!(spares.held(), 0);
    drop_taken(&obj);
    assert_eq!(strong(&obj), 1);
}

fn restore(cell: &SpareCell<'_>, obj: ObjectRef, generation: u64) -> Option<ObjectRef> {
    // SAFETY: see above.
    unsafe { cell.restore(obj, generation) }
}

#[test]
fn restore_puts_back_only_what_take_left_room_for() {
    let spares = table!();
    let obj = pair();
    let cell = spares.cell().unwrap();
    // `obj` stands for generation 7's wrapper, held throughout; the taken reference is lent
    // to a call that returns `obj` (a reference of its own: any +1 of `obj` will do).
    assert!(keep(&cell, obj.clone(), 7).is_none());
    assert!(take(&cell, &obj, 7));
    drop_taken(&obj);
    assert!(restore(&cell, obj.clone(), 7).is_none(), "the taken entry's room");
    assert_eq!((spares.held(), strong(&obj)), (1, 2));
    assert!(restore(&cell, obj.clone(), 7).is_some(), "a full cell gives the reference back");
    // A nested call kept another generation's spare meanwhile, then took it: the room left is
    // that generation's, so `obj` of generation 7 goes back to the caller.
    assert!(take(&cell, &obj, 7));
    drop_taken(&obj);
    let stranger = pair();
    assert!(keep(&cell, stranger.clone(), 9).is_none());
    assert!(take(&cell, &stranger, 9));
    drop_taken(&stranger);
    assert!(restore(&cell, obj.clone(), 7).is_some(), "another generation's room");
    assert_eq!((spares.held(), strong(&obj), strong(&stranger)), (0, 1, 1));
    // The store alone, for a caller whose cell nothing touched since the take.
    assert!(keep(&cell, obj.clone(), 7).is_none());
    assert!(take(&cell, &obj, 7));
    drop_taken(&obj);
    // SAFETY: see above; nothing used the cell since the take.
    unsafe { cell.restore_untouched(obj.clone()) };
    assert_eq!((spares.held(), strong(&obj)), (1, 2));
    assert_eq!(steal(spares, &obj, 7), 1);
    // What restore put back is stolen like any kept entry.
    assert!(keep(&cell, obj.clone(), 7).is_none());
    assert!(take(&cell, &obj, 7));
    drop_taken(&obj);
    assert!(restore(&cell, obj.clone(), 7).is_none());
    assert_eq!(steal(spares, &obj, 7), 1);
    assert_eq!((spares.held(), strong(&obj)), (0, 1));
}

#[test]
fn generation_zero_is_never_kept_or_stolen() {
    let spares = table!();
    let obj = pair();
    let cell = spares.cell().unwrap();
    // `obj` stands for the wrapper.
    assert!(keep(&cell, obj.clone(), 0).is_some());
    // No wrapper of generation 0 exists.
    assert_eq!(steal(spares, &obj, 0), 0);
    assert_eq!((spares.held(), strong(&obj)), (0, 1));
}

#[test]
fn an_exiting_thread_drops_its_spare_and_frees_its_cell() {
    let spares = table!();
    let obj = pair();
    for round in 0..3 {
        keep_on_a_thread_that_exits(spares, &obj, 2 + round);
        assert_eq!((spares.held(), strong(&obj)), (0, 1), "round {round}");
    }
    // The generations' wrappers are gone; nothing is left to steal.
    assert_eq!(steal(spares, &obj, 2), 0);
}

#[test]
fn cells_are_reused_after_their_threads_exit() {
    // Far more threads than cells, one after another, each keeping a spare: every one finds
    // a cell, because each exiting thread hands its cell back.
    let spares = table!();
    let obj = pair();
    for round in 0..(if cfg!(miri) { 8 } else { 200 }) {
        keep_on_a_thread_that_exits(spares, &obj, 1 + round);
    }
    assert_eq!(strong(&obj), 1);
}

#[test]
fn a_release_steals_its_own_generation_from_every_thread() {
    let spares = table!();
    let obj = pair();
    let other = pair();
    // Four live threads keep spares: two of generation 3, one of generation 4, one of another
    // object; they stay alive (parked) until the steals are done.
    let (kept_tx, kept_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = std::sync::Mutex::new(go_rx);
    std::thread::scope(|s| {
        for (o, g) in [(&obj, 3), (&obj, 3), (&obj, 4), (&other, 3)] {
            let (kept_tx, go_rx, extra) = (kept_tx.clone(), &go_rx, o.clone());
            s.spawn(move || {
                let cell = spares.cell().unwrap();
                // The test holds the stand-in wrappers until after the steals.
                assert!(keep(&cell, extra, g).is_none());
                kept_tx.send(()).unwrap();
                let _ = go_rx.lock().unwrap().recv();
            });
        }
        for _ in 0..4 {
            kept_rx.recv().unwrap();
        }
        assert_eq!(strong(&obj), 4);
        // The generation's wrapper is gone; the test holds each object.
        assert_eq!(steal(spares, &obj, 3), 2);
        assert_eq!(strong(&obj), 2);
        assert_eq!(steal(spares, &obj, 3), 0, "a second release finds nothing");
        assert_eq!(steal(spares, &obj, 4), 1);
        assert_eq!(steal(spares, &other, 3), 1);
        assert_eq!((strong(&obj), strong(&other), spares.held()), (1, 1, 0));
        drop(go_tx);
    });
}

#[test]
fn owners_keep_and_take_while_releases_steal_on_another_thread() {
    // Each thread echoes its own object through its cell (generation 5) while the main thread
    // releases an older generation (2) of the same objects, whose entries the threads kept
    // before they started: the steals find exactly those, and the counts come back.
    let spares = table!();
    let objs: Vec<ObjectRef> = (0..3).map(|_| pair()).collect();
    let rounds = if cfg!(miri) { 40 } else { 20_000 };
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = std::sync::Mutex::new(go_rx);
    std::thread::scope(|s| {
        let mut started = Vec::new();
        let mut finished = Vec::new();
        for obj in &objs {
            let go_rx = &go_rx;
            let (ready_tx, ready_rx) = mpsc::channel();
            let (done_tx, done_rx) = mpsc::channel();
            started.push(ready_rx);
            finished.push(done_rx);
            s.spawn(move || {
                let cell = spares.cell().unwrap();
                // The thread holds the stand-in wrapper of generation 2 until it signals,
                // then generation 5's.
                assert!(keep(&cell, obj.clone(), 2).is_none());
                ready_tx.send(()).unwrap();
                // Calls until `rounds` are done and the last one kept its result (which it
                // can once the release of generation 2 emptied the cell).
                for round in 1.. {
                    // A call: lend the spare if there is one (else the callee adds a
                    // reference), get the object back (+1), keep it or drop it.
                    let lent = take(&cell, obj, 5);
                    let result = if lent {
                        // SAFETY: the reference taken out of the cell becomes the result.
                        unsafe { ObjectRef::from_raw(obj.as_ptr()) }
                    } else {
                        obj.clone()
                    };
                    let dropped = keep(&cell, result, 5);
                    if round >= rounds && dropped.is_none() {
                        break;
                    }
                }
                // Generation 5 is released while this thread still lives.
                done_tx.send(()).unwrap();
                let _ = go_rx.lock().unwrap().recv();
            });
        }
        for (ready, obj) in started.iter().zip(&objs) {
            ready.recv().unwrap();
            // Generation 2 was released (its owner moved on to generation 5).
            assert_eq!(steal(spares, obj, 2), 1);
        }
        for (done, obj) in finished.iter().zip(&objs) {
            done.recv().unwrap();
            // The thread made its last call with generation 5.
            assert_eq!(steal(spares, obj, 5), 1);
            assert_eq!(strong(obj), 1);
        }
        drop(go_tx);
    });
}
