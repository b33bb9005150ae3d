//! The `#[tether::...]` export macros. Use them through the `tether` crate (`tether::object`,
//! `tether::methods`, `tether::function`, `tether::module!`): the expansion names `::tether`
//! paths, and the `tether` crate's docs describe what each accepts.
//!
//! Every expansion is a call of the runtime layer, `TypeBuilder` and `Function`: the macros
//! read the Rust source for names, docs, defaults and receivers, and leave every type question
//! to the `FromArg` / `IntoRet` traits (checked at the span of the type they concern).

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Error, Expr, FnArg, GenericArgument, GenericParam, Ident, ImplItem, ItemFn, ItemImpl, ItemStruct, Lit,
    LitStr, Pat, PathArguments, ReturnType, Signature, Token, Type, UnOp,
};

type Result<T> = syn::Result<T>;

fn finish(r: Result<TokenStream2>) -> TokenStream {
    r.unwrap_or_else(Error::into_compile_error).into()
}

/// `#[tether::object("scene.Node")]` or `#[tether::object("geo.Circle", parent = Shape)]` on
/// a struct: implements `Object` and `TetherType` (the `///` doc is the type's doc; fields
/// marked `#[tether(field)]` are read-only reflected fields, read by `Clone`). `weakref` lets
/// the type's Python wrappers take weak references (`TypeBuilder::weak_referenceable`).
#[proc_macro_attribute]
pub fn object(attr: TokenStream, item: TokenStream) -> TokenStream {
    finish(expand_object(attr.into(), item.into()))
}

/// `#[tether::methods]` (or `#[tether::methods(block = 1)]`, ...) on an inherent impl block of
/// a `#[tether::object]` type: exports its functions (see the `tether` crate).
#[proc_macro_attribute]
pub fn methods(attr: TokenStream, item: TokenStream) -> TokenStream {
    finish(expand_methods(attr.into(), item.into()))
}

/// `#[tether::function("scene.make_scene")]` on a free function: keeps it, and adds the
/// hidden `__tether_function_<name>()` that makes its `Function` (what `tether::module!` calls).
#[proc_macro_attribute]
pub fn function(attr: TokenStream, item: TokenStream) -> TokenStream {
    finish(expand_function(attr.into(), item.into()))
}

/// `tether::module! { types: [Scene, Node], functions: [make_scene] }`: the plugin's entry
/// points (`export_module!`), registering and exporting what it lists.
#[proc_macro]
pub fn module(input: TokenStream) -> TokenStream {
    finish(syn::parse::<ModuleInput>(input).map(expand_module))
}

// ---- shared: docs and #[tether(...)] attributes --------------------------------------------

/// The `///` doc of an item: its lines, the common indentation removed.
fn doc_of(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) = &nv.value {
                lines.extend(s.value().split('\n').map(str::to_owned));
            }
        }
    }
    let indent = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min();
    let lines: Vec<&str> = lines.iter().map(|l| l.get(indent.unwrap_or(0)..).unwrap_or("").trim_end()).collect();
    lines.join("\n").trim().to_string()
}

/// Take the `#[tether(...)]` attributes out of `attrs`.
fn take_tether_attrs(attrs: &mut Vec<Attribute>) -> Vec<Attribute> {
    let (ours, rest) = std::mem::take(attrs).into_iter().partition(|a| a.path().is_ident("tether"));
    *attrs = rest;
    ours
}

#[derive(Default)]
struct FnOpts {
    constructor: Option<Span>,
    getter: Option<Span>,
    setter: Option<Span>,
    skip: bool,
    leaf: Option<Span>,
    nonblocking: Option<Span>,
    name: Option<LitStr>,
}

impl FnOpts {
    /// The builder calls for the function's flags (`.leaf()`, `.nonblocking()`).
    fn flags(&self) -> TokenStream2 {
        let leaf = self.leaf.map(|_| quote!(.leaf()));
        let nonblocking = self.nonblocking.map(|_| quote!(.nonblocking()));
        quote!(#leaf #nonblocking)
    }
}

fn parse_fn_opts(attrs: &[Attribute]) -> Result<FnOpts> {
    let mut o = FnOpts::default();
    for attr in attrs {
        attr.parse_nested_meta(|meta| {
            let span = meta.path.span();
            if meta.path.is_ident("constructor") {
                o.constructor = Some(span);
            } else if meta.path.is_ident("getter") || meta.path.is_ident("field") {
                o.getter = Some(span);
            } else if meta.path.is_ident("setter") {
                o.setter = Some(span);
            } else if meta.path.is_ident("skip") {
                o.skip = true;
            } else if meta.path.is_ident("leaf") {
                o.leaf = Some(span);
            } else if meta.path.is_ident("nonblocking") {
                o.nonblocking = Some(span);
            } else if meta.path.is_ident("name") {
                o.name = Some(meta.value()?.parse()?);
            } else {
                return Err(meta.error(
                    "unknown tether option: expected constructor, getter, field, setter, skip, leaf, nonblocking or name = \"...\"",
                ));
            }
            Ok(())
        })?;
    }
    if let (Some(_), Some(span)) = (o.leaf, o.nonblocking) {
        return Err(Error::new(span, "a leaf neither blocks nor calls back: it is nonblocking already, say one"));
    }
    let roles = [o.constructor, o.getter, o.setter];
    if roles.iter().flatten().count() > 1 {
        return Err(Error::new(
            roles.iter().flatten().nth(1).copied().unwrap_or_else(Span::call_site),
            "a function is one of constructor, getter or setter",
        ));
    }
    Ok(o)
}

/// An identifier as the registry names it (`r#type` is `type`).
fn plain_name(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

// ---- shared: signatures -----------------------------------------------------------------

/// How a method gets its object.
#[derive(Clone, Copy, PartialEq)]
enum Receiver {
    /// `&self`
    Ref,
    /// `self: &ObjectArc<Self>`
    ArcRef,
    /// `self: ObjectArc<Self>`
    Arc,
}

/// A default value, as `DefaultValue` tokens and its kind's check.
struct DefaultArg {
    value: TokenStream2,
    check: Ident,
    span: Span,
}

struct Arg {
    name: String,
    /// The type the typed closure takes (`String` for `&str`).
    ty: Type,
    /// Pass a reference to the converted value (the Rust parameter is `&T`).
    by_ref: bool,
    default: Option<DefaultArg>,
    /// The parameter as written (for error spans).
    tokens: TokenStream2,
}

#[allow(clippy::large_enum_variant)] // one per exported function, at compile time
enum Ret {
    Unit,
    /// The written type; `result`: a `Result<T, E>` whose error converts into tether's;
    /// `new_object`: `Self` (or a Result of it), made into an `ObjectArc`.
    Value {
        ok: Type,
        err: Option<Type>,
        new_object: bool,
    },
}

struct FnShape {
    receiver: Option<Receiver>,
    args: Vec<Arg>,
    ret: Ret,
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

fn type_args(seg: &syn::PathSegment) -> Vec<&Type> {
    match &seg.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Is `ty` `Self` or the impl's type?
fn is_self_type(ty: &Type, self_ty: Option<&Type>) -> bool {
    let Some(seg) = last_segment(ty) else { return false };
    if seg.ident == "Self" && seg.arguments.is_empty() {
        return true;
    }
    match (self_ty.and_then(last_segment), ty) {
        (Some(own), Type::Path(p)) => p.path.segments.len() == 1 && own.ident == seg.ident && seg.arguments.is_empty(),
        _ => false,
    }
}

/// Is `ty` `ObjectArc<Self>` (or of the impl's type)?
fn is_arc_of_self(ty: &Type, self_ty: Option<&Type>) -> bool {
    last_segment(ty).is_some_and(|seg| {
        seg.ident == "ObjectArc" && matches!(type_args(seg)[..], [inner] if is_self_type(inner, self_ty))
    })
}

/// The receiver a first parameter `this: <ty>` stands for.
fn this_receiver(ty: &Type, self_ty: Option<&Type>) -> Option<Receiver> {
    self_ty?;
    match ty {
        Type::Reference(t) if t.mutability.is_none() && is_arc_of_self(&t.elem, self_ty) => Some(Receiver::ArcRef),
        Type::Reference(t) if t.mutability.is_none() && is_self_type(&t.elem, self_ty) => Some(Receiver::Ref),
        t if is_arc_of_self(t, self_ty) => Some(Receiver::Arc),
        _ => None,
    }
}

/// `impl Trait` anywhere in `ty`.
fn find_impl_trait(ty: &Type) -> Option<&Type> {
    match ty {
        Type::ImplTrait(_) => Some(ty),
        Type::Reference(r) => find_impl_trait(&r.elem),
        Type::Slice(s) => find_impl_trait(&s.elem),
        Type::Array(a) => find_impl_trait(&a.elem),
        Type::Paren(p) => find_impl_trait(&p.elem),
        Type::Group(g) => find_impl_trait(&g.elem),
        Type::Tuple(t) => t.elems.iter().find_map(find_impl_trait),
        Type::Path(p) => p.path.segments.iter().flat_map(type_args).find_map(find_impl_trait),
        _ => None,
    }
}

fn check_generics(sig: &Signature) -> Result<()> {
    if let Some(p) = sig.generics.params.iter().find(|p| !matches!(p, GenericParam::Lifetime(_))) {
        return Err(Error::new_spanned(
            p,
            "tether cannot export a generic function: each exported function has one signature; \
             write a non-generic wrapper for each type you export",
        ));
    }
    if let Some(w) = &sig.generics.where_clause {
        return Err(Error::new(w.span(), "tether cannot export a function with a where clause"));
    }
    if let Some(t) = &sig.asyncness {
        return Err(Error::new(
            t.span(),
            "tether cannot export an async fn: return a value (run work on a thread and call back)",
        ));
    }
    if let Some(t) = &sig.unsafety {
        return Err(Error::new(t.span(), "tether cannot export an unsafe fn: wrap it in a safe one"));
    }
    if let Some(v) = &sig.variadic {
        return Err(Error::new(v.span(), "tether cannot export a variadic function"));
    }
    Ok(())
}

fn parse_default(attrs: &mut Vec<Attribute>) -> Result<Option<DefaultArg>> {
    let mut found = None;
    for attr in take_tether_attrs(attrs) {
        attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("default") {
                return Err(meta.error("unknown tether option on a parameter: expected default = <literal>"));
            }
            let expr: Expr = meta.value()?.parse()?;
            found = Some(default_of(&expr)?);
            Ok(())
        })?;
    }
    Ok(found)
}

fn default_of(expr: &Expr) -> Result<DefaultArg> {
    let span = expr.span();
    let bad = || Error::new(span, "a default is a literal: an integer, a float, true or false, a string, or None");
    let (negative, inner) = match expr {
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => (true, &*u.expr),
        e => (false, e),
    };
    let made = |value: TokenStream2, check: &str| DefaultArg { value, check: format_ident!("{}", check), span };
    match inner {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => {
                let v: i128 = i.base10_parse()?;
                let v = if negative { -v } else { v };
                let v = i64::try_from(v).map_err(|_| Error::new(span, "this default does not fit in an i64"))?;
                Ok(made(quote!(::tether::signature::DefaultValue::Int(#v)), "default_int"))
            }
            Lit::Float(f) => {
                let v: f64 = f.base10_parse()?;
                let v = if negative { -v } else { v };
                Ok(made(quote!(::tether::signature::DefaultValue::Float(#v)), "default_float"))
            }
            Lit::Bool(b) if !negative => {
                let v = b.value;
                Ok(made(quote!(::tether::signature::DefaultValue::Bool(#v)), "default_bool"))
            }
            Lit::Str(s) if !negative => Ok(made(quote!(::tether::signature::DefaultValue::Str(#s)), "default_str")),
            _ => Err(bad()),
        },
        Expr::Path(p) if !negative && p.path.is_ident("None") => {
            Ok(made(quote!(::tether::signature::DefaultValue::None), "default_none"))
        }
        _ => Err(bad()),
    }
}

/// Read a function's receiver, parameters and result; strips `#[tether(...)]` from parameters.
fn shape_of(sig: &mut Signature, self_ty: Option<&Type>) -> Result<FnShape> {
    check_generics(sig)?;
    let mut receiver = None;
    let mut args = Vec::new();
    for input in sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(r) => {
                let kind = if r.colon_token.is_none() {
                    match (&r.reference, &r.mutability) {
                        (Some(_), None) => Some(Receiver::Ref),
                        (Some(_), Some(m)) => {
                            let _ = m;
                            return Err(Error::new_spanned(
                                &*r,
                                "tether methods take `&self`, not `&mut self`: every language shares the one \
                                 native object, so mutate through interior mutability (a Mutex, an atomic, an AnyCell)",
                            ));
                        }
                        (None, _) => None,
                    }
                } else {
                    match &*r.ty {
                        Type::Reference(t) if t.mutability.is_none() && is_self_type(&t.elem, self_ty) => {
                            Some(Receiver::Ref)
                        }
                        Type::Reference(t) if t.mutability.is_none() && is_arc_of_self(&t.elem, self_ty) => {
                            Some(Receiver::ArcRef)
                        }
                        t if is_arc_of_self(t, self_ty) => Some(Receiver::Arc),
                        _ => None,
                    }
                };
                receiver = Some(kind.ok_or_else(|| {
                    Error::new_spanned(
                        &*r,
                        "unsupported receiver: tether methods take `&self`, or a first parameter \
                         `this: &ObjectArc<Self>` or `this: ObjectArc<Self>` (the object stays shared; it is never \
                         moved out)",
                    )
                })?);
            }
            // `this: &ObjectArc<Self>` first: the receiver as an ObjectArc (what
            // `self: &ObjectArc<Self>` says, which stable Rust does not accept).
            FnArg::Typed(pt)
                if receiver.is_none()
                    && args.is_empty()
                    && matches!(&*pt.pat, Pat::Ident(p) if p.ident == "this")
                    && this_receiver(&pt.ty, self_ty).is_some() =>
            {
                receiver = this_receiver(&pt.ty, self_ty);
            }
            FnArg::Typed(pt) => {
                let name = match &*pt.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => plain_name(&p.ident),
                    other => {
                        return Err(Error::new_spanned(
                            other,
                            "an exported parameter is a plain name (its name is the keyword callers use)",
                        ))
                    }
                };
                if let Some(t) = find_impl_trait(&pt.ty) {
                    return Err(Error::new_spanned(
                        t,
                        "tether cannot export an `impl Trait` parameter: name a concrete type that converts from \
                         an argument (FromArg), e.g. String, i64, Vec<T>, ObjectArc<T>, Function",
                    ));
                }
                let (ty, by_ref) =
                    match &*pt.ty {
                        Type::Reference(r) if r.mutability.is_some() => return Err(Error::new_spanned(
                            &pt.ty,
                            "tether cannot export a `&mut` parameter: arguments are converted values; take `T` or `&T`",
                        )),
                        Type::Reference(r) => {
                            let inner = match &*r.elem {
                                Type::Path(p) if p.path.is_ident("str") => {
                                    syn::parse_quote_spanned!(r.elem.span()=> ::std::string::String)
                                }
                                Type::Slice(s) => {
                                    let item = &s.elem;
                                    syn::parse_quote_spanned!(r.elem.span()=> ::std::vec::Vec<#item>)
                                }
                                other => other.clone(),
                            };
                            (inner, true)
                        }
                        other => (other.clone(), false),
                    };
                let default = parse_default(&mut pt.attrs)?;
                args.push(Arg { name, ty, by_ref, default, tokens: quote!(#pt) });
            }
        }
    }
    if let Some(second) = args.windows(2).find(|w| w[0].default.is_some() && w[1].default.is_none()) {
        let name = &second[1].name;
        return Err(Error::new_spanned(
            &second[1].tokens,
            format!("parameter `{name}` needs a default: it follows one that has a default"),
        ));
    }
    let total = args.len() + receiver.is_some() as usize;
    if total > 8 {
        return Err(Error::new(
            sig.inputs.span(),
            "tether exports functions of at most 8 parameters (the receiver included)",
        ));
    }
    let ret = match &sig.output {
        ReturnType::Default => Ret::Unit,
        ReturnType::Type(_, ty) => {
            if let Some(t) = find_impl_trait(ty) {
                return Err(Error::new_spanned(
                    t,
                    "tether cannot export an `impl Trait` result: name a concrete type (IntoRet)",
                ));
            }
            let (ok, err) = match last_segment(ty) {
                Some(seg) if seg.ident == "Result" => match type_args(seg)[..] {
                    [ok, err] => (ok.clone(), Some(err.clone())),
                    _ => ((**ty).clone(), None),
                },
                _ => ((**ty).clone(), None),
            };
            let ok_inner = match (&err, last_segment(ty)) {
                (None, Some(seg)) if seg.ident == "Result" => type_args(seg).first().map(|t| (*t).clone()),
                _ => None,
            };
            let new_object = is_self_type(ok_inner.as_ref().unwrap_or(&ok), self_ty);
            Ret::Value { ok, err, new_object }
        }
    };
    Ok(FnShape { receiver, args, ret })
}

struct Generated {
    /// The typed closure.
    closure: TokenStream2,
    /// `(name, Option<DefaultValue>)` pairs for `__private::signed`.
    params: TokenStream2,
    /// Compile-time checks, spanned at the types they concern.
    checks: TokenStream2,
}

/// The typed closure calling `path`, with the receiver (when `this_ty` is given) first.
fn closure_for(path: TokenStream2, shape: &FnShape, this_ty: Option<TokenStream2>) -> Generated {
    let mut params = Vec::new();
    let mut pass = Vec::new();
    let mut checks = Vec::new();
    if let (Some(kind), Some(this_ty)) = (shape.receiver, &this_ty) {
        params.push(quote!(__this: #this_ty));
        pass.push(match kind {
            Receiver::Ref => quote!(&*__this),
            Receiver::ArcRef => quote!(&__this),
            Receiver::Arc => quote!(__this),
        });
    }
    let mut names = Vec::new();
    for (i, a) in shape.args.iter().enumerate() {
        let ident = format_ident!("__arg{}", i);
        let ty = &a.ty;
        params.push(quote_spanned!(ty.span()=> #ident: #ty));
        pass.push(if a.by_ref { quote!(&#ident) } else { quote!(#ident) });
        checks.push(quote_spanned!(ty.span()=> ::tether::__private::assert_arg::<#ty>();));
        let name = &a.name;
        let default = match &a.default {
            Some(d) => {
                let (value, check) = (&d.value, &d.check);
                checks.push(quote_spanned!(d.span=> ::tether::__private::#check::<#ty>();));
                quote!(::core::option::Option::Some(#value))
            }
            None => quote!(::core::option::Option::None),
        };
        names.push(quote!((#name, #default)));
    }
    let call = quote!(#path(#(#pass),*));
    let body = match &shape.ret {
        Ret::Unit => call,
        Ret::Value { ok, err, new_object } => {
            let mapped = match err {
                Some(e) => {
                    quote_spanned!(e.span()=> ::core::result::Result::map_err(#call, ::tether::__private::into_error::<#e>))
                }
                None => call,
            };
            let made = match (new_object, err.is_some() || last_segment(ok).is_some_and(|s| s.ident == "Result")) {
                (true, true) => quote!(::core::result::Result::map(#mapped, ::tether::ObjectArc::new)),
                (true, false) => quote!(::tether::ObjectArc::new(#mapped)),
                (false, _) => {
                    if !new_object_like(ok) {
                        checks.push(quote_spanned!(ok.span()=> ::tether::__private::assert_ret::<#ok>();));
                    }
                    mapped
                }
            };
            made
        }
    };
    Generated { closure: quote!(|#(#params),*| #body), params: quote!(&[#(#names),*]), checks: quote!(#(#checks)*) }
}

/// A result type that mentions `Self` cannot be checked outside the impl; the typed call
/// checks it anyway.
fn new_object_like(ty: &Type) -> bool {
    quote!(#ty).to_string().contains("Self")
}

// ---- #[tether::object] --------------------------------------------------------------------

struct ObjectArgs {
    key: LitStr,
    parent: Option<Type>,
    /// `weakref`: Python wrappers take weak references (`TypeBuilder::weak_referenceable`).
    weakref: bool,
}

impl Parse for ObjectArgs {
    fn parse(input: ParseStream) -> Result<Self> {
        if input.is_empty() {
            return Err(input.error("expected the type's key: #[tether::object(\"module.Name\")]"));
        }
        let key: LitStr = input.parse()?;
        if key.value().trim().is_empty() || key.value().contains(char::is_whitespace) {
            return Err(Error::new(key.span(), "a type key is a non-empty name without spaces, like \"scene.Node\""));
        }
        let (mut parent, mut weakref) = (None, false);
        while input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            let name: Ident = input.parse()?;
            if name == "weakref" {
                weakref = true;
                continue;
            }
            input.parse::<Token![=]>()?;
            if name == "parent" {
                parent = Some(input.parse()?);
            } else {
                return Err(Error::new(name.span(), "unknown option: expected parent = Type or weakref"));
            }
        }
        Ok(ObjectArgs { key, parent, weakref })
    }
}

fn expand_object(attr: TokenStream2, item: TokenStream2) -> Result<TokenStream2> {
    let args: ObjectArgs = syn::parse2(attr)?;
    let mut st: ItemStruct = syn::parse2(item)
        .map_err(|e| Error::new(e.span(), "#[tether::object] goes on a struct (the native object's layout)"))?;
    if !st.generics.params.is_empty() {
        return Err(Error::new(
            st.generics.span(),
            "a tether object type cannot be generic: one type key names one layout",
        ));
    }
    let ident = &st.ident;
    let doc = doc_of(&st.attrs);
    let mut fields = Vec::new();
    for (i, field) in st.fields.iter_mut().enumerate() {
        let ours = take_tether_attrs(&mut field.attrs);
        let mut exported = false;
        let mut name = None;
        for attr in &ours {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("field") {
                    exported = true;
                } else if meta.path.is_ident("name") {
                    name = Some(meta.value()?.parse::<LitStr>()?.value());
                } else {
                    return Err(meta.error("unknown tether option on a field: expected field or name = \"...\""));
                }
                Ok(())
            })?;
        }
        if !exported {
            continue;
        }
        let member = match &field.ident {
            Some(id) => quote!(#id),
            None => {
                let index = syn::Index::from(i);
                quote!(#index)
            }
        };
        let name = name.or_else(|| field.ident.as_ref().map(plain_name)).ok_or_else(|| {
            Error::new(field.span(), "a tuple struct's field needs a name: #[tether(field, name = \"...\")]")
        })?;
        let fdoc = doc_of(&field.attrs);
        let ty = &field.ty;
        fields.push(quote_spanned! {ty.span()=>
            let b = b.field(#name, |this: &Self| ::core::clone::Clone::clone(&this.#member)).field_doc(#fdoc);
        });
    }
    let key = &args.key;
    let declare = match &args.parent {
        Some(parent) => quote!(::tether::declare_object!(#ident, #key, parent = #parent);),
        None => quote!(::tether::declare_object!(#ident, #key);),
    };
    let weakref = args.weakref.then(|| quote!(let b = b.weak_referenceable();));
    let blocks = (0..8usize).map(|n| quote!(let b = (&::tether::__private::Block::<Self, #n>::NEW).apply(b);));
    Ok(quote! {
        #st
        #declare
        impl ::tether::TetherType for #ident {
            fn tether_type() -> ::tether::TypeBuilder<Self> {
                #[allow(unused_imports)]
                use ::tether::__private::{NoBlock as _, ViaBlock as _};
                let b = ::tether::TypeBuilder::<Self>::new().doc(#doc);
                #weakref
                #(#fields)*
                #(#blocks)*
                b
            }
        }
    })
}

// ---- #[tether::methods] -------------------------------------------------------------------

fn parse_block_number(attr: TokenStream2) -> Result<usize> {
    if attr.is_empty() {
        return Ok(0);
    }
    let mut n = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("block") {
            let lit: syn::LitInt = meta.value()?.parse()?;
            let v: usize = lit.base10_parse()?;
            if v >= 8 {
                return Err(Error::new(lit.span(), "a type has at most 8 methods blocks: block = 0 to 7"));
            }
            n = Some(v);
            Ok(())
        } else {
            Err(meta.error("unknown option: expected block = <0..7> (for a type's second and later blocks)"))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(n.unwrap_or(0))
}

struct Field {
    name: String,
    getter: TokenStream2,
    setter: Option<TokenStream2>,
    doc: String,
    span: Span,
}

enum Member {
    Field(usize),
    Code(TokenStream2),
}

fn expand_methods(attr: TokenStream2, item: TokenStream2) -> Result<TokenStream2> {
    let block = parse_block_number(attr)?;
    let mut imp: ItemImpl = syn::parse2(item)
        .map_err(|e| Error::new(e.span(), "#[tether::methods] goes on an impl block of a #[tether::object] type"))?;
    if let Some((_, path, _)) = &imp.trait_ {
        return Err(Error::new(path.span(), "#[tether::methods] goes on an inherent impl block, not a trait impl"));
    }
    if !imp.generics.params.is_empty() {
        return Err(Error::new(imp.generics.span(), "a tether object type cannot be generic"));
    }
    let self_ty = (*imp.self_ty).clone();
    let mut members: Vec<Member> = Vec::new();
    let mut fields: Vec<Field> = Vec::new();
    let mut setters: Vec<(String, TokenStream2, String, Span)> = Vec::new();
    let mut checks = Vec::new();
    let mut constructor_seen: Option<Span> = None;
    for item in imp.items.iter_mut() {
        let ImplItem::Fn(f) = item else { continue };
        let opts = parse_fn_opts(&take_tether_attrs(&mut f.attrs))?;
        if opts.skip {
            // Parameters may still carry #[tether(default)] in a skipped fn: strip them.
            for input in f.sig.inputs.iter_mut() {
                if let FnArg::Typed(pt) = input {
                    take_tether_attrs(&mut pt.attrs);
                }
            }
            continue;
        }
        let doc = doc_of(&f.attrs);
        let fn_ident = f.sig.ident.clone();
        let fn_span = fn_ident.span();
        let shape = shape_of(&mut f.sig, Some(&self_ty))?;
        let this_ty = quote!(::tether::ObjectArc<Self>);
        let path = quote!(Self::#fn_ident);
        let leaf = opts.flags();
        if let Some(span) = opts.constructor {
            if shape.receiver.is_some() {
                return Err(Error::new(span, "a constructor has no receiver: it makes the object"));
            }
            let returns_object = match &shape.ret {
                Ret::Value { ok, new_object, .. } => *new_object || is_arc_of_self(ok, Some(&self_ty)),
                Ret::Unit => false,
            };
            if !returns_object {
                return Err(Error::new(
                    f.sig.output.span(),
                    "a constructor returns Self, ObjectArc<Self>, or a Result of one",
                ));
            }
            let g = closure_for(path, &shape, None);
            checks.push(g.checks);
            let (closure, params) = (g.closure, g.params);
            match &opts.name {
                None => {
                    if let Some(first) = constructor_seen.replace(span) {
                        let mut e = Error::new(span, "a type has one primary constructor; name the others: \
                                                      #[tether(constructor, name = \"from_...\")]");
                        e.combine(Error::new(first, "the first one is here"));
                        return Err(e);
                    }
                    members.push(Member::Code(quote! {
                        let __f = ::tether::Function::from_typed(<Self as ::tether::Object>::TYPE_KEY, #closure) #leaf;
                        let b = b.constructor_function(::tether::__private::signed(__f, false, #params, #doc));
                    }));
                }
                Some(name) => members.push(Member::Code(quote! {
                    let __f = ::tether::Function::from_typed(
                        &::std::format!("{}.{}", <Self as ::tether::Object>::TYPE_KEY, #name), #closure) #leaf;
                    let b = b.method_function(#name, #doc, ::tether::__private::signed(__f, false, #params, #doc), true);
                })),
            }
            continue;
        }
        if opts.getter.is_some() || opts.setter.is_some() {
            let role = if opts.getter.is_some() { "getter" } else { "setter" };
            let span = opts.getter.or(opts.setter).unwrap_or(fn_span);
            if shape.receiver != Some(Receiver::Ref) {
                return Err(Error::new(span, format!("a {role} takes `&self`")));
            }
            if let Some(d) = shape.args.iter().find_map(|a| a.default.as_ref()) {
                return Err(Error::new(d.span, format!("a {role}'s value has no default")));
            }
            let g = closure_for(quote!(Self::#fn_ident), &shape, None);
            checks.push(g.checks);
            if opts.getter.is_some() {
                if !shape.args.is_empty() {
                    return Err(Error::new(f.sig.inputs.span(), "a getter takes only `&self`"));
                }
                let name = opts.name.as_ref().map_or_else(|| plain_name(&fn_ident), LitStr::value);
                let body = match &shape.ret {
                    Ret::Unit => return Err(Error::new(fn_span, "a getter returns the field's value")),
                    Ret::Value { err: Some(e), .. } => quote_spanned!(e.span()=>
                        ::core::result::Result::map_err(Self::#fn_ident(this), ::tether::__private::into_error::<#e>)),
                    Ret::Value { .. } => quote!(Self::#fn_ident(this)),
                };
                if fields.iter().any(|f| f.name == name) {
                    return Err(Error::new(fn_span, format!("field `{name}` has a getter already")));
                }
                members.push(Member::Field(fields.len()));
                fields.push(Field { name, getter: quote!(|this: &Self| #body), setter: None, doc, span: fn_span });
            } else {
                let [value] = &shape.args[..] else {
                    return Err(Error::new(f.sig.inputs.span(), "a setter takes `&self` and the new value"));
                };
                let name = match &opts.name {
                    Some(n) => n.value(),
                    None => plain_name(&fn_ident).strip_prefix("set_").map(str::to_owned).ok_or_else(|| {
                        Error::new(fn_span, "name the setter `set_<field>`, or say #[tether(setter, name = \"field\")]")
                    })?,
                };
                let ty = &value.ty;
                let pass = if value.by_ref { quote!(&v) } else { quote!(v) };
                let setter =
                    quote!(|this: &Self, v: #ty| ::tether::__private::setter_result(Self::#fn_ident(this, #pass)));
                setters.push((name, setter, doc, fn_span));
            }
            continue;
        }
        let g = closure_for(path, &shape, shape.receiver.map(|_| this_ty));
        checks.push(g.checks);
        let (closure, params) = (g.closure, g.params);
        let name = opts.name.as_ref().map_or_else(|| plain_name(&fn_ident), LitStr::value);
        let is_static = shape.receiver.is_none();
        members.push(Member::Code(quote! {
            let __f = ::tether::Function::from_typed(
                &::std::format!("{}.{}", <Self as ::tether::Object>::TYPE_KEY, #name), #closure) #leaf;
            let b = b.method_function(#name, #doc, ::tether::__private::signed(__f, !#is_static, #params, #doc), #is_static);
        }));
    }
    for (name, setter, doc, span) in setters {
        let Some(field) = fields.iter_mut().find(|f| f.name == name) else {
            return Err(Error::new(
                span,
                format!(
                    "setter of field `{name}` without a getter in this block: add `#[tether(getter)] fn {name}(&self)`"
                ),
            ));
        };
        if field.setter.is_some() {
            return Err(Error::new(span, format!("field `{name}` has a setter already")));
        }
        if field.doc.is_empty() {
            field.doc = doc;
        }
        field.setter = Some(setter);
    }
    let registration = members.into_iter().map(|m| match m {
        Member::Code(code) => code,
        Member::Field(i) => {
            let Field { name, getter, setter, doc, span } = &fields[i];
            let call = match setter {
                Some(s) => quote_spanned!(*span=> b.field_rw(#name, #getter, #s)),
                None => quote_spanned!(*span=> b.field(#name, #getter)),
            };
            quote!(let b = #call.field_doc(#doc);)
        }
    });
    let self_ty = &imp.self_ty;
    Ok(quote! {
        #imp
        impl ::tether::__private::MethodsBlock<#block> for #self_ty {
            fn register_block(b: ::tether::TypeBuilder<Self>) -> ::tether::TypeBuilder<Self> {
                #(#checks)*
                #(#registration)*
                b
            }
        }
    })
}

// ---- #[tether::function] ------------------------------------------------------------------

fn expand_function(attr: TokenStream2, item: TokenStream2) -> Result<TokenStream2> {
    let key: LitStr = syn::parse2(attr)
        .map_err(|e| Error::new(e.span(), "expected the function's key: #[tether::function(\"module.name\")]"))?;
    if key.value().trim().is_empty() || key.value().contains(char::is_whitespace) {
        return Err(Error::new(
            key.span(),
            "a function key is a non-empty name without spaces, like \"scene.make_scene\"",
        ));
    }
    let mut f: ItemFn = syn::parse2(item).map_err(|e| Error::new(e.span(), "#[tether::function] goes on a free fn"))?;
    let opts = parse_fn_opts(&take_tether_attrs(&mut f.attrs))?;
    let role = [opts.constructor, opts.getter, opts.setter].into_iter().flatten().next();
    if let Some(span) = role.or(opts.name.as_ref().map(LitStr::span)) {
        return Err(Error::new(span, "a free function takes only leaf or nonblocking (its key is its name)"));
    }
    if opts.skip {
        return Err(Error::new(
            Span::call_site(),
            "a free function is exported by tether::module!; leave it out there",
        ));
    }
    let flags = opts.flags();
    let shape = shape_of(&mut f.sig, None)?;
    let doc = doc_of(&f.attrs);
    let ident = &f.sig.ident;
    let g = closure_for(quote!(#ident), &shape, None);
    let (closure, params, checks) = (g.closure, g.params, g.checks);
    let maker = format_ident!("__tether_function_{}", plain_name(ident));
    let vis = &f.vis;
    Ok(quote! {
        #f
        #[doc(hidden)]
        #vis fn #maker() -> ::tether::Function {
            #checks
            let __f = ::tether::Function::from_typed(#key, #closure) #flags;
            ::tether::__private::signed(__f, false, #params, #doc)
        }
    })
}

// ---- tether::module! ----------------------------------------------------------------------

struct ModuleInput {
    types: Vec<syn::Path>,
    functions: Vec<syn::Path>,
}

impl Parse for ModuleInput {
    fn parse(input: ParseStream) -> Result<Self> {
        let mut out = ModuleInput { types: Vec::new(), functions: Vec::new() };
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            input.parse::<Token![:]>()?;
            let content;
            syn::bracketed!(content in input);
            let list: Punctuated<syn::Path, Token![,]> = content.parse_terminated(syn::Path::parse, Token![,])?;
            match key.to_string().as_str() {
                "types" => out.types.extend(list),
                "functions" => out.functions.extend(list),
                _ => return Err(Error::new(key.span(), "expected `types: [...]` or `functions: [...]`")),
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(out)
    }
}

fn expand_module(input: ModuleInput) -> TokenStream2 {
    let types = input.types.iter().map(|t| quote_spanned!(t.span()=> __exports.object_type::<#t>(__m)?;));
    let functions = input.functions.iter().map(|p| {
        let mut maker = p.clone();
        if let Some(last) = maker.segments.last_mut() {
            last.ident = format_ident!("__tether_function_{}", plain_name(&last.ident), span = last.ident.span());
        }
        quote_spanned!(p.span()=> __exports.function(__m, #maker())?;)
    });
    quote! {
        ::tether::export_module!(|__m: &mut ::tether::plugin::ModuleBuilder| -> ::tether::Result<()> {
            let mut __exports = ::tether::__private::Exports::new();
            #(#types)*
            #(#functions)*
            __exports.check()
        });
    }
}
