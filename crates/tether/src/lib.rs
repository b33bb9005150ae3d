//! tether for plugin authors: everything in [`tether_core`], plus the export macros.
//!
//! ```ignore
//! /// A named node of a scene graph.
//! #[tether::object("scene.Node")]
//! pub struct Node {
//!     /// The node's name.
//!     #[tether(field)]
//!     name: String,
//! }
//!
//! #[tether::methods]
//! impl Node {
//!     #[tether(constructor)]
//!     fn new(name: String) -> Self { Node { name } }
//!
//!     /// The name, `times` times.
//!     fn repeat(&self, #[tether(default = 2)] times: usize) -> String { self.name.repeat(times) }
//! }
//!
//! /// A node named `name`.
//! #[tether::function("scene.make_node")]
//! fn make_node(name: &str) -> ObjectArc<Node> { ObjectArc::new(Node { name: name.into() }) }
//!
//! tether::module! { types: [Node], functions: [make_node] }
//! ```
//!
//! - [`object`]: implements [`Object`] for a struct (its key written once, `parent = Type`
//!   for a subtype, `weakref` for Python wrappers that take weak references) and
//!   [`TetherType`], whose builder starts with the struct's `///` doc and its
//!   `#[tether(field)]` fields.
//! - [`methods`]: exports an impl block's functions: methods (`&self`,
//!   or a first parameter `this: &ObjectArc<Self>` / `this: ObjectArc<Self>` when the method
//!   needs the object's reference itself; stable Rust does not take `self: &ObjectArc<Self>`),
//!   static methods (no receiver),
//!   `#[tether(constructor)]` (the primary one; `#[tether(constructor, name = "from_xy")]` is
//!   a static method returning a new object), `#[tether(getter)]` (or `#[tether(field)]`) and
//!   `#[tether(setter)]` (`set_x` sets field `x`, a value converted by its type), and on each
//!   of them `#[tether(name = "...")]`, `#[tether(skip)]`, `#[tether(leaf)]`,
//!   `#[tether(nonblocking)]` and
//!   `#[tether(default = <literal>)]` on parameters (an integer, a float, `true`/`false`, a
//!   string or `None`). A type may have several blocks: the first is `#[tether::methods]`,
//!   the others `#[tether::methods(block = 1)]` up to `block = 7` (Rust has no life before
//!   main, so a type collects its blocks by number; two blocks with one number do not compile).
//! - [`function`]: a free function exported under a key (`"scene.make_node"`); its module
//!   attribute is the key's last part; `#[tether(leaf)]` or `#[tether(nonblocking)]` after it
//!   set its flag.
//! - [`module!`]: the plugin's entry points: registers and exports the listed types and
//!   functions, then checks that every object type their signatures name is registered (a
//!   type left out of the list fails the load, naming it).
//!
//! Parameter names come from the Rust source, docs from `///` comments, and types from
//! [`convert::FromArg::TYPE`] / [`convert::IntoRet::TYPE`]. Arguments are anything `FromArg`,
//! plus `&str` (converted as a `String`), `&[T]` (as `Vec<T>`) and `&T` for any `FromArg` `T`
//! (`&ObjectArc<Node>`, `&Function`); results anything `IntoRet`, plus `Self` (a new object),
//! and `Result<T, E>` with `E: Into<Error>` (the author's `impl From<MyError> for Error` picks
//! the kind). What the macros cannot export is a compile error at the offending code.
//!
//! The macros expand to calls of [`TypeBuilder`] and [`Function`]: the runtime layer a
//! plugin may also call by hand. They refer to this crate as `::tether`, so depend on it
//! under that name.

pub use tether_core::*;
pub use tether_macros::{function, methods, module, object};

/// A type made by [`object`]: its reflection, as every `#[tether::methods]` block of it declares.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tether object type",
    label = "not declared with #[tether::object]",
    note = "put #[tether::object(\"module.Name\")] on the struct to export it"
)]
pub trait TetherType: Object + Send + Sync + Sized {
    /// The builder with the type's doc, its `#[tether(field)]` fields and every methods block.
    fn tether_type() -> TypeBuilder<Self>;

    /// Register the reflection ([`TypeBuilder::try_register`]): idempotent.
    fn register_type() -> Result<i32> {
        Self::tether_type().try_register()
    }
}

/// What the macros expand to; not an API.
#[doc(hidden)]
pub mod __private {
    use std::marker::PhantomData;

    use tether_core::signature::{DefaultValue, TypeKind, TypeRef};
    use tether_core::types::type_info;
    use tether_core::{Error, Function, Object, Result, TypeBuilder};

    /// The most `#[tether::methods]` blocks a type may have.
    pub const MAX_BLOCKS: usize = 8;

    /// Block `N` of `T`'s `#[tether::methods]`.
    pub trait MethodsBlock<const N: usize>: Object + Send + Sync + Sized {
        fn register_block(b: TypeBuilder<Self>) -> TypeBuilder<Self>;
    }

    /// A probe for block `N` of `T` (autoref specialisation: `(&Block::<T, N>::NEW).apply(b)`
    /// is the block's registration when it exists, else nothing).
    pub struct Block<T, const N: usize>(PhantomData<fn() -> T>);
    impl<T, const N: usize> Block<T, N> {
        pub const NEW: Self = Block(PhantomData);
    }
    impl<T, const N: usize> Clone for Block<T, N> {
        fn clone(&self) -> Self {
            *self
        }
    }
    impl<T, const N: usize> Copy for Block<T, N> {}
    pub trait ViaBlock<T: Object> {
        fn apply(self, b: TypeBuilder<T>) -> TypeBuilder<T>;
    }
    impl<T: MethodsBlock<N>, const N: usize> ViaBlock<T> for &Block<T, N> {
        fn apply(self, b: TypeBuilder<T>) -> TypeBuilder<T> {
            T::register_block(b)
        }
    }
    pub trait NoBlock<T: Object> {
        fn apply(self, b: TypeBuilder<T>) -> TypeBuilder<T>;
    }
    impl<T: Object, const N: usize> NoBlock<T> for Block<T, N> {
        fn apply(self, b: TypeBuilder<T>) -> TypeBuilder<T> {
            b
        }
    }

    /// Give a typed Function its parameter names and defaults (after the receiver, when it
    /// has one) and its doc.
    pub fn signed(f: Function, receiver: bool, params: &[(&str, Option<DefaultValue>)], doc: &str) -> Function {
        let mut sig = f.declared_signature();
        let skip = receiver as usize;
        assert_eq!(sig.params.len(), params.len() + skip, "{}: parameter count", f.name());
        for (p, (name, default)) in sig.params[skip..].iter_mut().zip(params) {
            p.name = name.to_string();
            p.keyword = true;
            p.default = *default;
        }
        if receiver {
            sig = sig.method();
        }
        let interned = sig.intern().unwrap_or_else(|e| panic!("{}: {e}", f.name()));
        let f = f.with_signature(interned);
        if doc.is_empty() {
            f
        } else {
            f.with_doc(doc)
        }
    }

    /// An author's error as a tether Error (its `From` impl picks the kind).
    #[inline]
    pub fn into_error<E: Into<Error>>(e: E) -> Error {
        e.into()
    }

    /// What a setter may return: nothing, or a `Result<(), E>` with `E: Into<Error>`.
    #[diagnostic::on_unimplemented(
        message = "a tether setter returns `()` or `Result<(), E>` with `E: Into<tether::Error>`, not `{Self}`"
    )]
    pub trait SetterResult {
        fn into_setter_result(self) -> Result<()>;
    }
    impl SetterResult for () {
        fn into_setter_result(self) -> Result<()> {
            Ok(())
        }
    }
    impl<E: Into<Error>> SetterResult for std::result::Result<(), E> {
        fn into_setter_result(self) -> Result<()> {
            self.map_err(Into::into)
        }
    }
    #[inline]
    pub fn setter_result<R: SetterResult>(r: R) -> Result<()> {
        r.into_setter_result()
    }

    /// Compile-time checks that an argument or result type converts (errors at its span).
    #[inline(always)]
    pub fn assert_arg<T: tether_core::convert::FromArg>() {}
    #[inline(always)]
    pub fn assert_ret<T: tether_core::convert::IntoRet>() {}

    macro_rules! default_kind {
        ($trait:ident, $check:ident, [$($t:ty),*]) => {
            $(impl $trait for $t {})*
            impl<T: $trait> $trait for Option<T> {}
            impl $trait for tether_core::Any {}
            #[inline(always)]
            pub fn $check<T: $trait>() {}
        };
    }
    #[diagnostic::on_unimplemented(
        message = "an integer default does not fit a parameter of type `{Self}`",
        label = "this default is an integer"
    )]
    pub trait DefaultInt {}
    default_kind!(DefaultInt, default_int, [i64, i32, u32, u64, usize, f64]);
    #[diagnostic::on_unimplemented(
        message = "a float default does not fit a parameter of type `{Self}`",
        label = "this default is a float"
    )]
    pub trait DefaultFloat {}
    default_kind!(DefaultFloat, default_float, [f64]);
    #[diagnostic::on_unimplemented(
        message = "a bool default does not fit a parameter of type `{Self}`",
        label = "this default is a bool"
    )]
    pub trait DefaultBool {}
    default_kind!(DefaultBool, default_bool, [bool]);
    #[diagnostic::on_unimplemented(
        message = "a string default does not fit a parameter of type `{Self}`",
        label = "this default is a string"
    )]
    pub trait DefaultStr {}
    default_kind!(DefaultStr, default_str, [String]);

    #[diagnostic::on_unimplemented(
        message = "a default None does not fit a parameter of type `{Self}`",
        label = "None is a default for an Option<T> (or Any) parameter"
    )]
    pub trait DefaultNone {}
    impl<T> DefaultNone for Option<T> {}
    impl DefaultNone for tether_core::Any {}
    #[inline(always)]
    pub fn default_none<T: DefaultNone>() {}

    /// What a `tether::module!` exported, checked once everything is registered.
    #[derive(Default)]
    pub struct Exports {
        types: Vec<i32>,
        functions: Vec<Function>,
    }

    impl Exports {
        pub fn new() -> Exports {
            Exports::default()
        }

        /// Register `T`'s reflection and export it.
        pub fn object_type<T: crate::TetherType>(&mut self, m: &mut tether_core::plugin::ModuleBuilder) -> Result<()> {
            T::register_type()?;
            m.object_type::<T>()?;
            self.types.push(T::type_index());
            Ok(())
        }

        /// Export `f` under the last part of its name (`"scene.make_scene"`: `make_scene`).
        pub fn function(&mut self, m: &mut tether_core::plugin::ModuleBuilder, f: Function) -> Result<()> {
            let name = f.name().rsplit('.').next().unwrap_or_default().to_string();
            m.function(&name, f.clone())?;
            self.functions.push(f);
            Ok(())
        }

        /// Every object type the exports' signatures name (and every exported type's parent)
        /// is registered: exported here, or reflected already (a type left out of the module
        /// would reach every language as a bare object with no class).
        pub fn check(&self) -> Result<()> {
            check_exports(&self.types, &self.functions)
        }
    }

    /// [`Exports::check`] over type indices and functions.
    pub fn check_exports(types: &[i32], functions: &[Function]) -> Result<()> {
        let known = |key: &str| {
            key.starts_with("tether.")
                || tether_core::types::type_index_of(key)
                    .is_some_and(|i| types.contains(&i) || type_info(i).is_some_and(|t| t.is_reflected()))
        };
        let mut missing: Vec<(String, String)> = Vec::new();
        let look = |missing: &mut Vec<(String, String)>, what: &str, f: &Function| {
            let Some(sig) = f.signature() else { return };
            let mut stack: Vec<TypeRef> = sig.params().iter().map(|p| p.ty()).collect();
            stack.push(sig.result());
            while let Some(t) = stack.pop() {
                if t.kind() == TypeKind::Object && !known(t.key()) {
                    missing.push((what.to_string(), t.key().to_string()));
                }
                stack.extend(t.children());
            }
        };
        for &index in types {
            let Some(info) = type_info(index) else { continue };
            let key = info.key();
            if let Some(parent) = type_info(info.parent).filter(|p| !known(p.key())) {
                missing.push((format!("type {key} (its parent)"), parent.key().to_string()));
            }
            for field in info.fields() {
                look(&mut missing, &format!("{key}.{}", field.name()), &field.getter());
                if let Some(setter) = field.setter() {
                    look(&mut missing, &format!("{key}.{}", field.name()), &setter);
                }
            }
            for method in info.methods() {
                look(&mut missing, &format!("{key}.{}", method.name()), &method.func());
            }
            if let Some(ctor) = info.constructor() {
                look(&mut missing, &format!("{key}'s constructor"), &ctor);
            }
        }
        for f in functions {
            look(&mut missing, f.name(), f);
        }
        match missing.first() {
            None => Ok(()),
            Some((what, key)) => Err(Error::value(format!(
                "{what} uses type {key:?}, which is not registered: list its Rust type in \
                 tether::module! {{ types: [...] }}{}",
                if missing.len() > 1 { format!(" ({} such uses in all)", missing.len()) } else { String::new() }
            ))),
        }
    }
}
