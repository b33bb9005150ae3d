//! The call driver: one native call from a host's arguments to its settled result, the same
//! steps in the same order for every frontend.
//!
//! 1. each argument is converted by the host ([`ArgumentSource::convert`]) into a view on the
//!    stack (more than `N` spill to the heap); in a leaf call wrapper arguments are borrowed,
//!    with a spare reference lent where the slot has one ([`LeafCall`]);
//! 2. a [`ClaimMode::AfterConversion`] host's offered spare is claimed once all converted;
//! 3. the function runs: a leaf call as is, any other through [`ArgumentSource::unlocked`]
//!    (the host releases its lock or marks the thread as inside a call that may call back);
//! 4. the claim settles: a call that returned its claimed argument gives [`Called::Argument`]
//!    and the caller hands back that wrapper; otherwise the result waits in the caller's cell.
//!
//! The one error path: an argument that fails to convert ends the call before it runs; the
//! references lent to the arguments converted so far go back (a claimed spare never left
//! its slot), and the host's error comes back naming the argument
//! ([`ArgumentSource::argument_failed`]). A failed call gives the host its native error
//! ([`ArgumentSource::failed`]) after the claim settled.

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use crate::any::{Any, AnyView};
use crate::error::{take_last_error, Error};
use crate::function::{FunctionObj, FUNC_ADOPTS_LENT, FUNC_LEAF};
use crate::object::ObjectHeader;
use crate::tying::{self, ClaimMode, SpareClaim, TieHost};

use super::Frontend;

/// A host's arguments of one call, as [`Frontend::call`] reads them.
///
/// # Safety
/// Implementors promise that a view [`convert`](ArgumentSource::convert) writes stays valid
/// until the source is dropped (whatever it borrows is owned by the source or by the caller
/// for the whole call), and that in a leaf call a wrapper argument's view comes from
/// [`LeafCall::wrapper_argument`] or [`LeafCall::object_argument`] with that wrapper's +1
/// held for the call.
pub unsafe trait ArgumentSource<H: TieHost> {
    /// The host's error (a raised exception's marker, a pending JS exception, a native error).
    type Error;

    /// Write argument `index`'s view into `view`; `index` is below the count given to
    /// [`Frontend::call`]. `leaf` is the call's claims in a leaf call;
    /// `None` when the call runs unlocked, when object arguments must hold their own reference
    /// (the host could release them while the callee runs).
    ///
    /// # Safety
    /// Called by the driver only, once per index in order, under the host's lock.
    unsafe fn convert<'a>(
        &mut self,
        index: usize,
        leaf: Option<&mut LeafCall<'_, H>>,
        view: &mut MaybeUninit<AnyView<'a>>,
    ) -> Result<(), Self::Error>;

    /// Run a call that may block or call back (not a leaf): release the host's lock, or mark
    /// the thread as inside a native call, around `call`.
    fn unlocked(&mut self, call: impl FnOnce() -> i32) -> i32;

    /// Argument `index` of `function` failed to convert with `error`: the error to give the
    /// caller, naming the argument ([`argument_message`] words it).
    fn argument_failed(function: &FunctionObj, index: usize, error: Self::Error) -> Self::Error;

    /// The call failed with native `error`: the host's error for it.
    fn failed(error: Error) -> Self::Error;
}

/// How a successful call's result goes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Called {
    /// The result is in the caller's cell.
    Result,
    /// The result is argument `i` itself, whose claimed spare never left its slot: hand back
    /// the caller's own wrapper (the cell holds None).
    Argument(usize),
}

/// The message of argument `index`'s (0-based) conversion error in a call of `function`, in
/// the words of every argument error ([`crate::convert::argument_message`]).
pub fn argument_message(function: &FunctionObj, index: usize, message: &str) -> String {
    crate::convert::argument_message(function, index, message)
}

impl<H: TieHost> Frontend<H> {
    /// Start the argument views of one leaf call (a `FUNC_LEAF` function, called without
    /// releasing the serialized host's lock). Frontends go through [`Frontend::call`]; the
    /// steps are public for the core's own tests.
    #[inline(always)]
    pub fn leaf_call(&self, lend: bool) -> LeafCall<'_, H> {
        LeafCall { _frontend: PhantomData, tag: self.tag(), claim: SpareClaim::new(), lend }
    }

    /// Call `func` (whose body is `f`) with `count` arguments read from `source`; its result
    /// written into `result`, which holds None. `leaf` says the call may run without
    /// releasing the host's lock: `f` is `FUNC_LEAF` and the host serialized, and nothing else
    /// can release an argument meanwhile.
    ///
    /// # Safety
    /// `func` is a live Function and `f` its body; the caller holds the host's lock (for a
    /// serialized host) and keeps every argument alive for the call.
    #[inline(always)]
    pub unsafe fn call<const N: usize, S: ArgumentSource<H>>(
        &self,
        func: *mut ObjectHeader,
        f: &FunctionObj,
        count: usize,
        leaf: bool,
        source: &mut S,
        result: &mut Any,
    ) -> Result<Called, S::Error> {
        debug_assert!(!leaf || (H::SERIALIZED && f.flags & FUNC_LEAF != 0));
        let mut claims = self.leaf_call(leaf && f.flags & FUNC_ADOPTS_LENT != 0);
        let mut stack = [const { MaybeUninit::<AnyView<'_>>::uninit() }; N];
        let mut heap: Vec<MaybeUninit<AnyView<'_>>>;
        let views: &mut [MaybeUninit<AnyView<'_>>] = if count <= N {
            &mut stack[..count]
        } else {
            heap = Vec::with_capacity(count);
            heap.resize_with(count, MaybeUninit::uninit);
            &mut heap
        };
        for (i, view) in views.iter_mut().enumerate() {
            // SAFETY: the driver's call, in order, under the host's lock (this method's contract).
            if let Err(e) = unsafe { source.convert(i, if leaf { Some(&mut claims) } else { None }, view) } {
                // Arguments lent so far were never passed: give their references back. (No
                // reference to `source` or `claims` leaves this function, so they stay in
                // registers on the path that succeeds.)
                // SAFETY: the views before `i` were written by `convert`.
                claims.abandon(views[..i].iter().map(|v| unsafe { v.assume_init_ref() }));
                return Err(argument_failed::<H, S>(f, i, e));
            }
        }
        if claims.lend && H::CLAIM_MODE == ClaimMode::AfterConversion {
            // SAFETY: every argument is converted; only the leaf callee runs until the settle.
            if let Some((i, view)) = unsafe { claims.commit() } {
                views[i].write(view);
            }
        }
        let cells = views.as_ptr() as *const AnyView<'_>;
        let rc = if leaf {
            // SAFETY: a live Function, `count` written views kept alive by the source and the
            // caller, a None result cell (this method's contract).
            unsafe { (f.safe_call)(func, cells, count as i32, result) }
        } else {
            // SAFETY: as for the leaf call; the host only releases its lock around it.
            source.unlocked(|| unsafe { (f.safe_call)(func, cells, count as i32, result) })
        };
        // SAFETY: the claims were made for this call under the host's lock, still held.
        let returned = unsafe { claims.settle(if rc == 0 { result.view().as_object_ptr() } else { None }) };
        if rc != 0 {
            return Err(S::failed(take_last_error()));
        }
        match returned {
            Some(i) => {
                // The claimed spare, which never left its slot, is the result's +1.
                std::mem::forget(std::mem::take(result));
                Ok(Called::Argument(i))
            }
            None => Ok(Called::Result),
        }
    }
}

/// [`Frontend::call`]'s error path: argument `index` of `f` failed with `error`.
#[cold]
#[inline(never)]
fn argument_failed<H: TieHost, S: ArgumentSource<H>>(f: &FunctionObj, index: usize, error: S::Error) -> S::Error {
    S::argument_failed(f, index, error)
}

/// The wrapper arguments of one leaf call of a serialized host: borrowed views, with a spare
/// reference lent to the callee where the slot has one (`echo(x)` then touches no atomic),
/// the first one only claimed so that a call returning it never writes the slot.
///
/// Error path: a call abandoned after some arguments were converted gives back what was lent
/// with [`LeafCall::abandon`]; a claimed spare never left its slot, so only the others go.
pub struct LeafCall<'f, H: TieHost> {
    _frontend: PhantomData<&'f Frontend<H>>,
    /// The domain's tag, read once (the call's every step needs it).
    tag: u32,
    claim: SpareClaim,
    lend: bool,
}

impl<'f, H: TieHost> LeafCall<'f, H> {
    /// The view of argument `index`, the wrapper whose slot word is `word` and whose object
    /// `view` borrows (built by the host, which may know the type index without reading the
    /// object's header), claiming as the host's [`TieHost::CLAIM_MODE`] says.
    ///
    /// # Safety
    /// `H` is serialized and the caller holds its lock for the whole call; `view` is a borrowed
    /// object view whose type index is its object's; the wrapper's +1 keeps the object alive
    /// for the call; lent views go only to a function that adopts them (`FUNC_ADOPTS_LENT`,
    /// which `lend` says); with [`ClaimMode::AtOnce`], converting the later arguments runs no
    /// language code when it succeeds; `prefixed` only when the host's allocator made the
    /// object (the host knows it without its header: the slot is read without the tag check).
    #[inline(always)]
    pub unsafe fn wrapper_argument<'a>(
        &mut self,
        index: usize,
        view: AnyView<'a>,
        word: usize,
        prefixed: bool,
    ) -> AnyView<'a> {
        debug_assert!(H::SERIALIZED);
        let tag = self.tag;
        // SAFETY: the host is serialized and locked for the call, the wrapper's +1 keeps the object alive, and lent views go to an adopting callee (this method's contract).
        unsafe {
            match H::CLAIM_MODE {
                ClaimMode::AtOnce => self.claim.claim_now::<H>(index, view, tag, word, self.lend, prefixed),
                ClaimMode::AfterConversion => self.claim.offer::<H>(index, view, tag, word, self.lend),
            }
        }
    }

    /// The view of an object argument that is no wrapper of this call's (a value kept alive by
    /// the caller for the call): a lent spare when its slot has one, else borrowed.
    ///
    /// # Safety
    /// As [`LeafCall::wrapper_argument`].
    #[inline(always)]
    pub unsafe fn object_argument<'a>(&self, obj: *mut ObjectHeader) -> AnyView<'a> {
        // SAFETY: as `wrapper_argument`: serialized, locked, `obj` alive for the call, adopting callee.
        unsafe { tying::argument_view::<H>(obj, self.tag, self.lend) }
    }

    /// For [`ClaimMode::AfterConversion`] hosts: every argument is converted; claim the offered one's
    /// spare now. Returns the argument's index and the lent view that replaces its view.
    ///
    /// # Safety
    /// As [`LeafCall::wrapper_argument`]; only the leaf callee runs before
    /// [`LeafCall::settle`].
    #[inline(always)]
    pub unsafe fn commit<'a>(&mut self) -> Option<(usize, AnyView<'a>)> {
        // SAFETY: every argument is converted and only the leaf callee runs before `settle` (this method's contract).
        unsafe { self.claim.commit::<H>(self.tag) }
    }

    /// The call is abandoned before it ran (an argument failed to convert): give back the
    /// references lent to the converted `views` (arguments 0, 1, ... in order), except a
    /// claimed spare, which never left its slot.
    pub fn abandon<'v>(&self, views: impl IntoIterator<Item = &'v AnyView<'v>>) {
        let lent = views.into_iter().enumerate().filter(|(index, _)| !self.claim.is_claimed(*index));
        lent.for_each(|(_, v)| v.release_if_lent());
    }

    /// After the call: the index of the argument whose wrapper the caller returns as is, when
    /// the call succeeded with the claimed object as its result (the result's +1 is the spare,
    /// still in the slot: forget the result). Otherwise the claim is consumed (the callee took
    /// or released the lent reference) and `None`.
    ///
    /// # Safety
    /// As [`LeafCall::wrapper_argument`], still under the host's lock; `result` is the call's
    /// object result if it succeeded with one.
    #[inline(always)]
    pub unsafe fn settle(&self, result: Option<*mut ObjectHeader>) -> Option<usize> {
        // SAFETY: the claim was made for this call under the host's lock, which is still held.
        unsafe { self.claim.settle::<H>(self.tag, result) }
    }
}
