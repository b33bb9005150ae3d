//! Is the current thread inside a `catch_panic` frame? Asked only by the panic hook (when a
//! panic happens); every native call enters such a frame, so entering must be cheap.
//!
//! A thread-local depth count would be the plain answer, but in a shared library (every
//! frontend and plugin is one) `thread_local!` goes through `__tls_get_addr` twice per call:
//! 2.4 ns of a 30 ns Python `echo(x)` here. An initial-exec TLS variable would be one
//! instruction, but marks the whole library `STATIC_TLS`, and `dlopen` then fails ("cannot
//! allocate memory in static TLS block") once other libraries have used up glibc's small
//! surplus. So on Linux the frames themselves are the mark, and the hook walks the stack with
//! the unwinder looking for one (it can always walk there: it is the path the panic will
//! unwind along to reach `catch_unwind`):
//! - the `safe_call` of every Rust closure Function, registered when the Function is made
//!   ([`register`]): the hot path costs nothing at all;
//! - [`marker`], a function that is never inlined, under which every other `catch_panic`
//!   runs its closure ([`run_marked`]; two calls, ~2.5 ns).
//!
//! A registered `safe_call` also contains code outside its `catch_unwind` (writing the
//! result); a panic there is not caught, and the hook, seeing the frame, does not print it at
//! once, but the `extern "C"` boundary then aborts with a second panic, and the hook prints
//! both (error.rs).
//!
//! Elsewhere, and under Miri, which has no unwinder to ask, it is a `thread_local!` count.

/// Run `f` inside a `catch_panic` frame that [`inside`] can see.
#[inline(always)]
pub(crate) fn run_marked<R>(f: impl FnOnce() -> R) -> R {
    imp::run_marked(f)
}

/// Run `f`, which is called from a function [`register`]ed as a catching frame.
#[inline(always)]
pub(crate) fn run_in_registered<R>(f: impl FnOnce() -> R) -> R {
    imp::run_in_registered(f)
}

/// Mark the function starting at `start` (a `safe_call`) as a frame that catches panics.
pub(crate) fn register(start: usize) {
    imp::register(start)
}

/// Is the current thread inside a frame of [`run_marked`] or a registered function? (Slow:
/// for the panic hook.)
pub(crate) fn inside() -> bool {
    imp::inside()
}

#[cfg(all(target_os = "linux", not(miri)))]
mod imp {
    use std::ffi::{c_int, c_void};
    use std::mem::{ManuallyDrop, MaybeUninit};

    /// The closure and, once it returned, its value.
    struct Call<F, R> {
        f: ManuallyDrop<F>,
        value: MaybeUninit<R>,
    }

    /// # Safety
    /// `data` is a `Call<F, R>` whose `f` was not taken yet.
    unsafe fn trampoline<F: FnOnce() -> R, R>(data: *mut ()) {
        // SAFETY: the caller's guarantee; `f` is taken exactly once (if it panics it is
        // dropped by the unwinding, and `value` stays unwritten).
        unsafe {
            let call = &mut *(data as *mut Call<F, R>);
            let f = ManuallyDrop::take(&mut call.f);
            call.value.write(f());
        }
    }

    /// The frame the panic hook looks for. Not generic (one address for every closure), never
    /// inlined, and not a tail call (`black_box` after the call keeps the frame on the stack).
    #[inline(never)]
    fn marker(data: *mut (), call: unsafe fn(*mut ())) {
        // SAFETY: `run_marked` pairs `data` with the `trampoline` made for its type.
        unsafe { call(data) };
        std::hint::black_box(());
    }

    /// Start addresses of the registered catching functions, sorted.
    static REGISTERED: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

    pub(super) fn register(start: usize) {
        let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(at) = registered.binary_search(&start) {
            registered.insert(at, start);
        }
    }

    #[inline(always)]
    pub(super) fn run_in_registered<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    #[inline(always)]
    pub(super) fn run_marked<R>(f: impl FnOnce() -> R) -> R {
        let mut call = Call { f: ManuallyDrop::new(f), value: MaybeUninit::uninit() };
        marker(&mut call as *mut _ as *mut (), trampoline_of(&call));
        // SAFETY: `marker` returned, so the trampoline ran to completion and wrote the value.
        unsafe { call.value.assume_init() }
    }

    fn trampoline_of<F: FnOnce() -> R, R>(_: &Call<F, R>) -> unsafe fn(*mut ()) {
        trampoline::<F, R>
    }

    #[repr(C)]
    struct UnwindContext {
        _opaque: [u8; 0],
    }
    /// `_URC_NO_REASON`: keep walking.
    const KEEP_WALKING: c_int = 0;
    /// `_URC_END_OF_STACK`: stop.
    const STOP: c_int = 5;

    // The unwinder of libgcc_s, which the standard library links on Linux for unwinding.
    extern "C" {
        fn _Unwind_Backtrace(trace: extern "C" fn(*mut UnwindContext, *mut c_void) -> c_int, arg: *mut c_void)
            -> c_int;
        fn _Unwind_GetIP(ctx: *mut UnwindContext) -> usize;
        fn _Unwind_FindEnclosingFunction(pc: *mut c_void) -> *mut c_void;
    }

    struct Search<'a> {
        marker: usize,
        /// Null when the registry is locked (by this very thread, panicking inside
        /// `register`): then only the marker counts.
        registered: &'a [usize],
        found: bool,
    }

    extern "C" fn visit(ctx: *mut UnwindContext, arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the `Search` of `inside`; `ctx` is the unwinder's current frame.
        unsafe {
            let search = &mut *(arg as *mut Search<'_>);
            let ip = _Unwind_GetIP(ctx);
            if ip != 0 {
                let start = _Unwind_FindEnclosingFunction(ip as *mut c_void) as usize;
                if start == search.marker || search.registered.binary_search(&start).is_ok() {
                    search.found = true;
                    return STOP;
                }
            }
        }
        KEEP_WALKING
    }

    pub(super) fn inside() -> bool {
        let registered = REGISTERED.try_lock();
        let mut search = Search {
            marker: marker as fn(*mut (), unsafe fn(*mut ())) as usize,
            registered: registered.as_deref().map_or(&[], |v| v.as_slice()),
            found: false,
        };
        // SAFETY: `visit` only reads the frames it is given and writes `search`, which
        // outlives the walk.
        unsafe { _Unwind_Backtrace(visit, &mut search as *mut Search<'_> as *mut c_void) };
        search.found
    }
}

#[cfg(not(all(target_os = "linux", not(miri))))]
mod imp {
    use std::cell::Cell;

    thread_local!(static DEPTH: Cell<u32> = const { Cell::new(0) });

    /// Restores the depth also when the closure panics (the panic then unwinds through here
    /// to `catch_unwind`).
    struct Entered;

    impl Drop for Entered {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get() - 1));
        }
    }

    #[inline]
    pub(super) fn run_marked<R>(f: impl FnOnce() -> R) -> R {
        DEPTH.with(|d| d.set(d.get() + 1));
        let _entered = Entered;
        f()
    }

    #[inline]
    pub(super) fn run_in_registered<R>(f: impl FnOnce() -> R) -> R {
        run_marked(f)
    }

    pub(super) fn register(_start: usize) {}

    pub(super) fn inside() -> bool {
        DEPTH.try_with(|d| d.get() > 0).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_is_seen_inside_nested_frames_only() {
        assert!(!inside());
        let seen = run_marked(|| (inside(), run_marked(inside)));
        assert_eq!(seen, (true, true));
        assert!(!inside());
        // Another thread is outside even while this one is inside.
        run_marked(|| std::thread::spawn(|| assert!(!inside())).join().unwrap());
    }

    #[test]
    fn a_panic_inside_is_caught_and_the_mark_goes_with_its_frame() {
        let r = crate::error::catch_panic(|| -> crate::Result<()> {
            assert!(inside());
            panic!("caught")
        });
        assert_eq!(r.unwrap_err().kind(), "RustPanic");
        assert!(!inside());
    }

    #[test]
    fn values_and_captures_pass_through() {
        let text = String::from("moved in");
        let out = run_marked(move || text + " and out");
        assert_eq!(out, "moved in and out");
    }
}
