//! Java: a Maven project `<out>/java/` with one source file per type in the chosen package
//! (default `dev.tether.bindings.<name>`), a `<Name>Module` class that loads the plugin (from
//! `-D<name>.plugin=PATH` or the copy packed into the jar's resources), checks the recorded
//! manifest (`Tether.checkBindings`) and registers the generated classes for their type keys
//! (`Tether.registerClass`), its `Registrar` (named in META-INF/services and module-info.java,
//! so `Tether.loadModule` binds the classes to a plugin loaded reflectively first), and a pom
//! depending on `dev.tether:tether-ffi`. Methods and functions call their Function, resolved
//! once into a holder class (`Calls$`), through the frontend's array-free call natives.
//!
//! Each generated class extends `dev.tether.ffi.TetherWrapper` and IS the wrapper the frontend
//! makes for its type key, so identity holds with static types. The type rules (docs/bindings.md):
//! Int `long`, Float `double`, Bool `boolean` (boxed `Long`/`Double`/`Boolean` when Optional,
//! since Java's references are nullable already an Optional object is the class itself),
//! Str `String`, Bytes `byte[]`, an object of a generated type its class (of another type
//! `TetherObject`), Array `List<T>` (results are the native `TetherList`), Map `Map<K, V>`
//! (results a `TetherMap`), a Callable with parameter types a generated functional interface
//! (one without, `TetherCallback`), Any and Host `Object`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tether_core::signature::{escape_keyword, language_name, Language, SignatureInfo, TypeKind, TypeRef};

use crate::model::{Module, TypeDecl};
use crate::Options;

/// The version of `dev.tether:tether-ffi` the generated pom depends on (this workspace's).
const TETHER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Members every generated class inherits (TetherWrapper, TetherObject, Object): a generated
/// member by one of these names gets the keyword rule's trailing underscore too.
const INHERITED: &[&str] = &[
    "get",
    "set",
    "call",
    "type",
    "typeKey",
    "close",
    "isClosed",
    "toString",
    "hashCode",
    "equals",
    "getClass",
    "notify",
    "notifyAll",
    "wait",
    "finalize",
    "clone",
    // No longer a member (the wrapper's state moved into its own package-private fields);
    // still reserved, so names generated before do not change.
    "nativeRef",
    "withReceiver",
    "read",
    "write",
    "asLong",
    "asDouble",
    "asBoolean",
];

/// A registry name as a Java member or parameter name: camelCase, then a trailing underscore
/// for a Java keyword or an inherited member's name.
fn member_name(name: &str) -> String {
    let java = escape_keyword(&language_name(name, Language::Java), Language::Java);
    if INHERITED.contains(&java.as_str()) {
        format!("{java}_")
    } else {
        java
    }
}

/// The module class's own static members: a function of the plugin by one of these Java names
/// gets the trailing underscore too (`SampleModule.module_()` for a function `module`).
const MODULE_MEMBERS: &[&str] = &["module", "load", "bind", "key", "method", "extract"];

/// A module function's Java name: [`member_name`], and escaped if the module class has a
/// member by that name.
fn function_name(name: &str) -> String {
    let java = member_name(name);
    if MODULE_MEMBERS.contains(&java.as_str()) {
        format!("{java}_")
    } else {
        java
    }
}

/// The module class's nested registrar (what `java.util.ServiceLoader` makes): `Registrar`, or
/// `Registrar_` by the keyword rule when a type's class has that name (the nested class would
/// hide it in the module class).
fn registrar_class(module: &Module) -> String {
    let name = "Registrar";
    if module.types.iter().any(|t| t.class_name == name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

fn param_name(name: &str, index: usize) -> String {
    if name.is_empty() {
        format!("arg{index}")
    } else {
        escape_keyword(&language_name(name, Language::Java), Language::Java)
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// `scene` → `SceneModule`, `my_plugin` → `MyPluginModule`.
pub fn module_class(name: &str) -> String {
    format!("{}Module", capitalize(&language_name(name, Language::Java)))
}

/// A Java string literal.
fn lit(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Doc text as Javadoc body lines (HTML-escaped; `code` spans become `{@code code}`).
fn javadoc_text(doc: &str) -> Vec<String> {
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace("*/", "*&#47;");
    let mut lines = Vec::new();
    for (i, para) in doc.trim().split("\n\n").enumerate() {
        if i > 0 {
            lines.push("<p>".to_string());
        }
        for line in para.lines() {
            let mut out = String::new();
            for (k, part) in line.trim().split('`').enumerate() {
                let part = escape(part).replace('@', "&#64;");
                // Odd parts were inside backticks; braces inside {@code} must balance.
                if k % 2 == 1 && !part.contains(['{', '}']) {
                    let _ = write!(out, "{{@code {part}}}");
                } else {
                    out.push_str(&part);
                }
            }
            lines.push(out);
        }
    }
    lines
}

fn javadoc(out: &mut String, indent: &str, doc: &str, extra: &[String]) {
    let mut lines = javadoc_text(doc);
    if !extra.is_empty() && !lines.is_empty() {
        lines.push(String::new());
    }
    lines.extend(extra.iter().cloned());
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for l in lines {
        if l.is_empty() {
            let _ = writeln!(out, "{indent} *");
        } else {
            let _ = writeln!(out, "{indent} * {l}");
        }
    }
    let _ = writeln!(out, "{indent} */");
}

/// Where a type appears: as a parameter (what a caller may pass) or a result (what comes back).
#[derive(Clone, Copy, PartialEq)]
enum Pos {
    Param,
    Result,
}

/// The generator's state for one module: which type keys have generated classes, the
/// functional interfaces made for typed callables (by name, in order of first use).
struct Gen<'m> {
    module: &'m Module,
    package: String,
    classes: BTreeSet<String>,
    /// Extra Java files: (class name, source).
    interfaces: Vec<(String, String)>,
}

impl Gen<'_> {
    fn class_of(&self, key: &str) -> Option<String> {
        self.module.types.iter().find(|t| t.key == key).map(|t| t.class_name.clone())
    }

    /// The Java type of `ty` at `pos`. `boxed` asks for a reference type (inside generics or
    /// an Optional). `callback` names the functional interface a typed Callable gets.
    fn java_type(&mut self, ty: TypeRef, pos: Pos, boxed: bool, callback: &str) -> String {
        let kids = ty.children();
        match ty.kind() {
            TypeKind::Any | TypeKind::Host => "Object".into(),
            TypeKind::None => if boxed { "Void" } else { "void" }.into(),
            TypeKind::Bool => if boxed { "Boolean" } else { "boolean" }.into(),
            TypeKind::Int => if boxed { "Long" } else { "long" }.into(),
            TypeKind::Float => if boxed { "Double" } else { "double" }.into(),
            TypeKind::Str => "String".into(),
            TypeKind::Bytes => "byte[]".into(),
            TypeKind::Object => self.class_of(ty.key()).unwrap_or_else(|| "TetherObject".into()),
            TypeKind::Optional => self.java_type(kids[0], pos, true, callback),
            TypeKind::Array => {
                let item = self.java_type(kids[0], pos, true, callback);
                match pos {
                    Pos::Param if item != "Object" => format!("List<? extends {item}>"),
                    _ => format!("List<{item}>"),
                }
            }
            TypeKind::Map => {
                let k = self.java_type(kids[0], pos, true, callback);
                let v = self.java_type(kids[1], pos, true, callback);
                match pos {
                    Pos::Param => format!("Map<? extends {k}, ? extends {v}>"),
                    Pos::Result => format!("Map<{k}, {v}>"),
                }
            }
            TypeKind::Callable if pos == Pos::Result => "TetherFunction".into(),
            TypeKind::Callable if kids.is_empty() => "TetherCallback".into(),
            TypeKind::Callable => {
                self.callback_interface(callback, &kids);
                callback.to_string()
            }
        }
    }

    /// How a call's result (an `Object`) becomes the Java type of `ty`.
    fn convert_result(&mut self, ty: TypeRef, expr: &str) -> String {
        match ty.kind() {
            TypeKind::Any | TypeKind::Host => expr.to_string(),
            TypeKind::None => expr.to_string(),
            TypeKind::Bool => format!("asBoolean({expr})"),
            TypeKind::Int => format!("asLong({expr})"),
            TypeKind::Float => format!("asDouble({expr})"),
            _ => {
                let t = self.java_type(ty, Pos::Result, true, "");
                if t.contains('<') {
                    format!("TetherWrapper.<{t}>cast({expr})")
                } else {
                    format!("({t}) {expr}")
                }
            }
        }
    }

    /// A functional interface for a Callable with parameter types: its typed method `call`
    /// plus `TetherCallback`'s `call(Object...)`, which decodes the arguments, so the lambda a
    /// caller writes is itself the callback native code holds (identity kept: `off(cb)` finds it).
    fn callback_interface(&mut self, name: &str, kids: &[TypeRef]) {
        if self.interfaces.iter().any(|(n, _)| n == name) {
            return;
        }
        let (params, result) = kids.split_at(kids.len() - 1);
        let result = result[0];
        let mut decl = Vec::new();
        let mut args = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let t = self.java_type(*p, Pos::Result, false, &format!("{name}Arg{i}"));
            decl.push(format!("{t} arg{i}"));
            let a = format!("args[{i}]");
            args.push(match p.kind() {
                TypeKind::Bool => format!("TetherWrapper.asBoolean({a})"),
                TypeKind::Int => format!("TetherWrapper.asLong({a})"),
                TypeKind::Float => format!("TetherWrapper.asDouble({a})"),
                TypeKind::Any | TypeKind::Host => a,
                _ if t.contains('<') => format!("TetherWrapper.<{t}>cast({a})"),
                _ => format!("({t}) {a}"),
            });
        }
        let ret = self.java_type(result, Pos::Param, false, &format!("{name}Result"));
        let mut src = self.header(&["dev.tether.ffi.*", "java.util.List", "java.util.Map"]);
        javadoc(
            &mut src,
            "",
            &format!(
                "A callback native code calls with {} argument{}. Write it as a lambda; it is a `TetherCallback` too.",
                params.len(),
                if params.len() == 1 { "" } else { "s" }
            ),
            &[],
        );
        let _ = writeln!(src, "@FunctionalInterface");
        let _ = writeln!(src, "public interface {name} extends TetherCallback {{");
        let _ = writeln!(src, "    {ret} call({});", decl.join(", "));
        let _ = writeln!(src);
        let _ = writeln!(src, "    /** Decodes the arguments native code passes and calls the typed method. */");
        let _ = writeln!(src, "    @Override");
        let _ = writeln!(src, "    default Object call(Object... args) {{");
        let _ = writeln!(src, "        if (args.length != {}) {{", params.len());
        let _ = writeln!(
            src,
            "            throw new TetherTypeError(\"TypeError\", \"{name} takes {} argument(s), got \" + args.length, \"\");",
            params.len()
        );
        let _ = writeln!(src, "        }}");
        if result.kind() == TypeKind::None {
            let _ = writeln!(src, "        call({});", args.join(", "));
            let _ = writeln!(src, "        return null;");
        } else {
            let _ = writeln!(src, "        return call({});", args.join(", "));
        }
        let _ = writeln!(src, "    }}");
        let _ = writeln!(src, "}}");
        self.interfaces.push((name.to_string(), src));
    }

    fn header(&self, imports: &[&str]) -> String {
        let mut s = format!(
            "// Generated by tether-bindgen from {} (module {}); do not edit: regenerate it.\npackage {};\n\n",
            self.module.file_name, self.module.name, self.package
        );
        for i in imports {
            let _ = writeln!(s, "import {i};");
        }
        s.push('\n');
        s
    }

    /// `(Type a, Type b)` and `a, b` for a signature's caller parameters.
    fn params(&mut self, sig: &SignatureInfo, callback_prefix: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
        let mut decl = Vec::new();
        let mut names = Vec::new();
        let mut docs = Vec::new();
        for (i, p) in sig.caller_params().iter().enumerate() {
            let name = param_name(p.name(), i);
            let iface = format!("{callback_prefix}{}", capitalize(&name));
            let t = self.java_type(p.ty(), Pos::Param, false, iface.trim_end_matches('_'));
            decl.push(format!("{t} {name}"));
            let mut about = Vec::new();
            if p.name().is_empty() {
                about.push("positional".to_string());
            } else if name != p.name() {
                about.push(format!("{{@code {}}} in the plugin", p.name()));
            }
            if let Some(d) = p.default() {
                about.push(format!("default {}", tether_core::signature::render_default(d, Language::Java)));
            }
            if p.ty().kind() == TypeKind::Optional {
                about.push("may be null".to_string());
            }
            if !about.is_empty() {
                docs.push(format!("@param {name} {}", about.join("; ")));
            }
            names.push(name);
        }
        (decl, names, docs)
    }

    /// The result type of `sig` (`void` for None).
    fn result(&mut self, sig: &SignatureInfo) -> String {
        self.java_type(sig.result(), Pos::Result, false, "")
    }

    fn class_source(&mut self, t: &TypeDecl, is_parent: bool) -> String {
        let module_class = module_class(&self.module.name);
        let base = t.parent.as_deref().and_then(|p| self.class_of(p)).unwrap_or_else(|| "TetherWrapper".into());
        let mut body = String::new();
        let cls = &t.class_name;
        let _ = writeln!(body, "    /** The registered type key. */");
        let _ = writeln!(body, "    public static final String KEY = {};", lit(&t.key));
        let _ = writeln!(body);
        let _ = writeln!(body, "    /** The wrapper of an object native code returns (made by the frontend). */");
        let _ = writeln!(body, "    {cls}(Token token) {{");
        let _ = writeln!(body, "        super(token);");
        let _ = writeln!(body, "    }}");
        if t.has_constructor {
            let _ = writeln!(body);
            match t.constructor {
                Some(sig) => {
                    let (decl, names, docs) = self.params(sig, cls);
                    // One constructor per count a caller may give, as for methods' defaults.
                    let required = sig.caller_params().iter().take_while(|p| p.default().is_none()).count();
                    for given in (required..=names.len()).rev() {
                        if given < names.len() {
                            let _ = writeln!(body, "    }}");
                            let _ = writeln!(body);
                            let left = names[given..].join(", ");
                            let note = format!("A new {cls}, with the plugin's default for {left}.");
                            javadoc(&mut body, "    ", &note, &[]);
                        } else {
                            javadoc(&mut body, "    ", &format!("A new {cls} (the type's native constructor)."), &docs);
                        }
                        let _ = writeln!(body, "    public {cls}({}) {{", decl[..given].join(", "));
                        let args: String = names[..given].iter().map(|n| format!(", {n}")).collect();
                        let _ = writeln!(body, "        super({module_class}.key(KEY){args});");
                    }
                }
                None => {
                    javadoc(&mut body, "    ", &format!("A new {cls} (the constructor's signature is unknown)."), &[]);
                    let _ = writeln!(body, "    public {cls}(Object... args) {{");
                    let _ = writeln!(body, "        super({module_class}.key(KEY), args);");
                }
            }
            let _ = writeln!(body, "    }}");
        }
        for f in &t.fields {
            let java = language_name(&f.name, Language::Java);
            let boolean_name = f.ty.kind() == TypeKind::Bool
                && (java.strip_prefix("is").or_else(|| java.strip_prefix("has")))
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()));
            let getter = if boolean_name { member_name(&f.name) } else { format!("get{}", capitalize(&java)) };
            let ty = self.java_type(f.ty, Pos::Result, false, "");
            let conv = self.convert_result(f.ty, &format!("read({})", lit(&f.name)));
            let _ = writeln!(body);
            let note = if java != f.name { vec![format!("<p>Field {{@code {}}}.", f.name)] } else { vec![] };
            javadoc(&mut body, "    ", &f.doc, &note);
            let _ = writeln!(body, "    public {ty} {getter}() {{");
            let _ = writeln!(body, "        return {conv};");
            let _ = writeln!(body, "    }}");
            if f.settable {
                let pty = self.java_type(f.ty, Pos::Param, false, &format!("{cls}{}", capitalize(&java)));
                let value = escape_keyword(&java, Language::Java);
                let _ = writeln!(body);
                javadoc(&mut body, "    ", &format!("Set `{}`.", f.name), &[]);
                let _ = writeln!(body, "    public void set{}({pty} {value}) {{", capitalize(&java));
                let _ = writeln!(body, "        write({}, {value});", lit(&f.name));
                let _ = writeln!(body, "    }}");
            }
        }
        // Each method's Function, resolved once into the holder and called directly (the
        // frontend's array-free call natives): results, identity and errors as `call(name, ..)`.
        let mut calls = Vec::new();
        for m in &t.methods {
            let _ = writeln!(body);
            let name = member_name(&m.name);
            calls.push((name.clone(), format!("{module_class}.method(KEY, {})", lit(&m.name))));
            let function = format!("{CALLS}.{name}");
            let stat = if m.is_static { "static " } else { "" };
            // A static entry point loads the plugin first, so the holder's initializer (whose
            // failure Java reports as ExceptionInInitializerError) never meets a stale plugin;
            // an instance exists only once the plugin is loaded and checked.
            let load = if m.is_static { format!("        {module_class}.module();\n") } else { String::new() };
            let Some(sig) = m.signature else {
                javadoc(
                    &mut body,
                    "    ",
                    &m.doc,
                    &[format!("<p>Method {{@code {}}} (its signature is unknown).", m.name)],
                );
                let _ = writeln!(body, "    public {stat}Object {name}(Object... args) {{");
                body.push_str(&load);
                let args = if m.is_static { "args" } else { "withReceiver(this, args)" };
                let _ = writeln!(body, "        return {function}.call({args});");
                let _ = writeln!(body, "    }}");
                continue;
            };
            let (decl, names, mut docs) = self.params(sig, &format!("{cls}{}", capitalize(&name)));
            let result = self.result(sig);
            let what = if m.is_static { "Static method" } else { "Method" };
            if name != m.name || m.is_static {
                docs.insert(0, format!("<p>{what} {{@code {}}}.", m.name));
            }
            if sig.result().kind() == TypeKind::Optional {
                docs.push("@return the result, or null".into());
            }
            // Java has no default arguments: one overload per count a caller may give (the
            // plugin fills in the defaults of the ones left out).
            let required = sig.caller_params().iter().take_while(|p| p.default().is_none()).count();
            for given in (required..=names.len()).rev() {
                if given < names.len() {
                    let _ = writeln!(body);
                    let left: Vec<&str> = names[given..].iter().map(String::as_str).collect();
                    let note = format!("<p>Like {{@code {name}}} with the plugin's default for {}.", left.join(", "));
                    javadoc(&mut body, "    ", &m.doc, &[note]);
                } else {
                    javadoc(&mut body, "    ", &m.doc, &docs);
                }
                let receiver = (!m.is_static).then_some("this");
                let args: Vec<&str> = receiver.into_iter().chain(names[..given].iter().map(String::as_str)).collect();
                let call = format!("{function}.call({})", args.join(", "));
                let _ = writeln!(body, "    public {stat}{result} {name}({}) {{", decl[..given].join(", "));
                body.push_str(&load);
                if sig.result().kind() == TypeKind::None {
                    let _ = writeln!(body, "        {call};");
                } else {
                    let _ = writeln!(body, "        return {};", self.convert_result(sig.result(), &call));
                }
                let _ = writeln!(body, "    }}");
            }
        }
        calls_holder(
            &mut body,
            "The methods' Functions, resolved on first use (the plugin is loaded by then).",
            &calls,
        );
        let mut src = self.header(&["dev.tether.ffi.*", "java.util.List", "java.util.Map"]);
        javadoc(&mut src, "", &t.doc, &[format!("<p>Type {{@code {}}}.", t.key)]);
        let modifier = if is_parent { "" } else { "final " };
        let _ = writeln!(src, "public {modifier}class {cls} extends {base} {{");
        src.push_str(&body);
        let _ = writeln!(src, "}}");
        src
    }

    fn module_source(&mut self) -> String {
        let m = self.module;
        let class = module_class(&m.name);
        let registrar = registrar_class(m);
        let mut src = self.header(&[
            "dev.tether.ffi.*",
            "java.io.IOException",
            "java.io.InputStream",
            "java.nio.file.Files",
            "java.nio.file.Path",
            "java.nio.file.StandardCopyOption",
            "java.util.List",
            "java.util.Map",
        ]);
        javadoc(
            &mut src,
            "",
            &format!(
                "The `{}` plugin: loaded on first use from the system property `{}.plugin` (a path) or the copy of `{}` packed beside this class; its exported functions as static methods.",
                m.name, m.name, m.file_name
            ),
            &[],
        );
        let _ = writeln!(src, "public final class {class} {{");
        let _ = writeln!(src, "    private {class}() {{}}");
        let _ = writeln!(src);
        let _ =
            writeln!(src, "    /** The system property naming the plugin file to load instead of the packed one. */");
        let _ =
            writeln!(src, "    public static final String PLUGIN_PROPERTY = {};", lit(&format!("{}.plugin", m.name)));
        let _ = writeln!(src);
        let _ = writeln!(src, "    /** What these bindings were generated from: {{item, hash}} per exported item. */");
        let _ = writeln!(src, "    static final String[][] MANIFEST = {{");
        for e in &m.manifest {
            let _ = writeln!(src, "        {{{}, {}}},", lit(&e.item), lit(&e.hash));
        }
        let _ = writeln!(src, "    }};");
        let _ = writeln!(src);
        let keys: Vec<String> = m.types.iter().map(|t| format!("{}.KEY", t.class_name)).collect();
        let _ = writeln!(src, "    /** The type keys of the generated classes. */");
        let _ = writeln!(src, "    static final List<String> KEYS = List.of({});", keys.join(", "));
        let _ = writeln!(src);
        let _ = writeln!(src, "    /** The plugin these classes are bound to; null until then. */");
        let _ = writeln!(src, "    private static volatile TetherModule module;");
        let _ = writeln!(src);
        javadoc(
            &mut src,
            "    ",
            "The loaded plugin (loaded, checked against these bindings and its classes registered on the first call, unless the plugin was loaded through `Tether.loadModule` first, which binds these classes to it).",
            &["@throws TetherValueError if the plugin is not the one these bindings were generated from".into()],
        );
        let _ = writeln!(src, "    public static TetherModule module() {{");
        let _ = writeln!(src, "        TetherModule m = module;");
        let _ = writeln!(src, "        return m != null ? m : load();");
        let _ = writeln!(src, "    }}");
        let _ = writeln!(src);
        let _ = writeln!(src, "    private static synchronized TetherModule load() {{");
        let _ = writeln!(src, "        if (module == null) {{");
        let _ = writeln!(src, "            String path = System.getProperty(PLUGIN_PROPERTY);");
        let _ = writeln!(
            src,
            "            // Loading binds these classes already (through {registrar}), unless the plugin is"
        );
        let _ = writeln!(src, "            // stale: then bind reports it.");
        let _ =
            writeln!(src, "            bind(Tether.loadModule(path == null || path.isEmpty() ? extract() : path));");
        let _ = writeln!(src, "        }}");
        let _ = writeln!(src, "        return module;");
        let _ = writeln!(src, "    }}");
        let _ = writeln!(src);
        let _ = writeln!(
            src,
            "    /** Check {{@code m}} against {{@link #MANIFEST}} and register the classes for their keys (the first plugin only). */"
        );
        let _ = writeln!(src, "    static synchronized void bind(TetherModule m) {{");
        let _ = writeln!(src, "        if (module != null) {{");
        let _ = writeln!(src, "            return;");
        let _ = writeln!(src, "        }}");
        let _ = writeln!(src, "        Tether.checkBindings(m, MANIFEST);");
        for t in &m.types {
            let _ = writeln!(
                src,
                "        Tether.registerClass({}.KEY, {}.class, {}::new);",
                t.class_name, t.class_name, t.class_name
            );
        }
        let _ = writeln!(src, "        module = m;");
        let _ = writeln!(src, "    }}");
        let _ = writeln!(src);
        javadoc(
            &mut src,
            "    ",
            "What the frontend finds through `java.util.ServiceLoader` (this jar's `META-INF/services/dev.tether.ffi.TetherBindings` and module-info's `provides`): `Tether.loadModule` of the plugin binds these classes to it, so its objects are instances of them whichever way the plugin was loaded.",
            &[],
        );
        let _ = writeln!(src, "    public static final class {registrar} implements TetherBindings {{");
        let _ = writeln!(src, "        /** Made by {{@code java.util.ServiceLoader}}. */");
        let _ = writeln!(src, "        public {registrar}() {{}}");
        let _ = writeln!(src);
        let _ = writeln!(src, "        @Override");
        let _ = writeln!(src, "        public List<String> typeKeys() {{");
        let _ = writeln!(src, "            return KEYS;");
        let _ = writeln!(src, "        }}");
        let _ = writeln!(src);
        let _ = writeln!(src, "        @Override");
        let _ = writeln!(src, "        public void bind(TetherModule module) {{");
        let _ = writeln!(src, "            {class}.bind(module);");
        let _ = writeln!(src, "        }}");
        let _ = writeln!(src, "    }}");
        let _ = writeln!(src);
        let _ = writeln!(
            src,
            "    /** {{@code key}}, once the plugin is loaded (a generated constructor's first step). */"
        );
        let _ = writeln!(src, "    static String key(String key) {{");
        let _ = writeln!(src, "        module();");
        let _ = writeln!(src, "        return key;");
        let _ = writeln!(src, "    }}");
        let _ = writeln!(src);
        let _ = writeln!(
            src,
            "    /** The Function of method {{@code name}} of type {{@code key}}, once the plugin is loaded (each generated class resolves its methods once). */"
        );
        let _ = writeln!(src, "    static TetherFunction method(String key, String name) {{");
        let _ = writeln!(src, "        module();");
        let _ = writeln!(src, "        return Tether.type(key).methodFunction(name);");
        let _ = writeln!(src, "    }}");
        let _ = writeln!(src);
        let _ = writeln!(
            src,
            "    /** The packed plugin, copied to a temporary directory (a JVM loads libraries from files). */"
        );
        let _ = writeln!(src, "    private static String extract() {{");
        let _ = writeln!(src, "        String name = {};", lit(&m.file_name));
        let _ = writeln!(src, "        try (InputStream in = {class}.class.getResourceAsStream(name)) {{");
        let _ = writeln!(src, "            if (in == null) {{");
        let _ = writeln!(
            src,
            "                throw new TetherValueError(\"ValueError\", \"{} is not packed beside \" + {class}.class.getName() + \"; set -D\" + PLUGIN_PROPERTY + \"=PATH\", \"\");",
            m.file_name
        );
        let _ = writeln!(src, "            }}");
        let _ =
            writeln!(src, "            Path dir = Files.createTempDirectory({});", lit(&format!("tether-{}-", m.name)));
        let _ = writeln!(src, "            Path file = dir.resolve(name);");
        let _ = writeln!(src, "            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);");
        let _ = writeln!(src, "            file.toFile().deleteOnExit();");
        let _ = writeln!(src, "            dir.toFile().deleteOnExit();");
        let _ = writeln!(src, "            return file.toString();");
        let _ = writeln!(src, "        }} catch (IOException e) {{");
        let _ = writeln!(
            src,
            "            throw new TetherValueError(\"ValueError\", \"cannot extract \" + name + \": \" + e, \"\");"
        );
        let _ = writeln!(src, "        }}");
        let _ = writeln!(src, "    }}");
        // Each function resolved once into the holder and called directly, as methods are; the
        // plugin is loaded first (see the methods' note on static entry points).
        let mut calls = Vec::new();
        for f in &m.functions {
            let _ = writeln!(src);
            let name = function_name(&f.name);
            calls.push((name.clone(), format!("module().function({})", lit(&f.name))));
            let function = format!("{CALLS}.{name}");
            let Some(sig) = f.signature else {
                javadoc(
                    &mut src,
                    "    ",
                    &f.doc,
                    &[format!("<p>Function {{@code {}}} (its signature is unknown).", f.name)],
                );
                let _ = writeln!(src, "    public static Object {name}(Object... args) {{");
                let _ = writeln!(src, "        module();");
                let _ = writeln!(src, "        return {function}.call(args);");
                let _ = writeln!(src, "    }}");
                continue;
            };
            let (decl, names, mut docs) = self.params(sig, &capitalize(&name));
            let result = self.result(sig);
            docs.insert(0, format!("<p>Function {{@code {}}} ({{@code {}}}).", f.name, f.qualified));
            javadoc(&mut src, "    ", &f.doc, &docs);
            let call = format!("{function}.call({})", names.join(", "));
            let _ = writeln!(src, "    public static {result} {name}({}) {{", decl.join(", "));
            let _ = writeln!(src, "        module();");
            let ints = sig.caller_params().iter().all(|p| p.ty().kind() == TypeKind::Int);
            if sig.result().kind() == TypeKind::None {
                let _ = writeln!(src, "        {call};");
            } else if ints && names.len() <= 3 && sig.result().kind() == TypeKind::Int {
                // Nothing boxed: the int entry, through a critical downcall on JDK 22+ for a leaf.
                let _ = writeln!(src, "        return {function}.callLong({});", names.join(", "));
            } else {
                let conv = match sig.result().kind() {
                    TypeKind::Bool => format!("TetherWrapper.asBoolean({call})"),
                    TypeKind::Int => format!("TetherWrapper.asLong({call})"),
                    TypeKind::Float => format!("TetherWrapper.asDouble({call})"),
                    TypeKind::Any | TypeKind::Host => call,
                    _ if result.contains('<') => format!("TetherWrapper.<{result}>cast({call})"),
                    _ => format!("({result}) {call}"),
                };
                let _ = writeln!(src, "        return {conv};");
            }
            let _ = writeln!(src, "    }}");
        }
        calls_holder(&mut src, "The functions, resolved on first use (the plugin is loaded by then).", &calls);
        let _ = writeln!(src, "}}");
        src
    }
}

/// The name of the nested class holding a generated class's resolved Functions: `$` is for
/// generated code, so no type's class name (a key's last part) is this.
const CALLS: &str = "Calls$";

/// The holder class of `calls` (Java name, initializer): a class of its own so that Java
/// initializes it on the first call, once, thread-safely, and the fields are constants to the JIT.
fn calls_holder(out: &mut String, doc: &str, calls: &[(String, String)]) {
    if calls.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "    /** {doc} */");
    let _ = writeln!(out, "    private static final class {CALLS} {{");
    for (name, init) in calls {
        let _ = writeln!(out, "        static final TetherFunction {name} = {init};");
    }
    let _ = writeln!(out, "    }}");
}

fn pom(module: &Module, package: &str) -> String {
    let name = &module.name;
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by tether-bindgen from {file} (module {name}); do not edit: regenerate it. -->
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>

  <groupId>dev.tether</groupId>
  <artifactId>{name}</artifactId>
  <version>{version}</version>
  <packaging>jar</packaging>
  <name>{name} (tether bindings)</name>
  <description>Typed Java bindings for the {name} tether plugin (package {package}), with the plugin packed inside.</description>

  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>

  <dependencies>
    <dependency>
      <groupId>dev.tether</groupId>
      <artifactId>tether-ffi</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>

  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
        <configuration>
          <compilerArgs><arg>-Xlint:all</arg><arg>-Werror</arg></compilerArgs>
        </configuration>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-source-plugin</artifactId>
        <version>3.3.1</version>
        <!-- The sources, without the packed plugin (a binary resource). -->
        <configuration><excludeResources>true</excludeResources></configuration>
        <executions><execution><id>attach-sources</id><goals><goal>jar-no-fork</goal></goals></execution></executions>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-javadoc-plugin</artifactId>
        <version>3.10.1</version>
        <configuration><doclint>all,-missing</doclint><quiet>true</quiet></configuration>
        <executions><execution><id>attach-javadocs</id><goals><goal>jar</goal></goals></execution></executions>
      </plugin>
    </plugins>
  </build>
</project>
"#,
        file = module.file_name,
        version = TETHER_VERSION,
    )
}

/// The service the frontend loads generated bindings through (`java.util.ServiceLoader`).
const BINDINGS_SERVICE: &str = "dev.tether.ffi.TetherBindings";

/// The bindings as a named module (its name is the package's): it reads tether-ffi (and
/// exports it to its users: the generated classes' API names its types) and provides the
/// registrar the frontend's ServiceLoader finds on the module path (the class path reads
/// META-INF/services instead).
fn module_info(package: &str, module_class: &str, registrar: &str) -> String {
    format!(
        "// Generated by tether-bindgen; do not edit: regenerate it.\n\
         /** The typed bindings of package {{@code {package}}} (a named module: --enable-native-access=dev.tether.ffi on JDK 24+). */\n\
         module {package} {{\n    requires transitive dev.tether.ffi;\n\n    exports {package};\n\n    \
         provides {BINDINGS_SERVICE} with {package}.{module_class}.{registrar};\n}}\n"
    )
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The generated Maven project's folder for `out`.
pub fn project_dir(out: &Path) -> PathBuf {
    out.join("java")
}

/// Write `<out>/java/`: pom.xml, src/main/java/<package>/*.java and the plugin under
/// src/main/resources/<package>/.
pub fn write(module: &Module, out: &Path, options: &Options) -> Result<(), String> {
    let package = options.java_package.clone().unwrap_or_else(|| format!("dev.tether.bindings.{}", module.name));
    if package.split('.').any(|p| p.is_empty() || tether_core::signature::is_reserved(p, Language::Java)) {
        return Err(format!("`{package}` is not a Java package name"));
    }
    let root = project_dir(out);
    let pkg_path: PathBuf = package.split('.').collect();
    let src_dir = root.join("src/main/java").join(&pkg_path);
    let res_dir = root.join("src/main/resources").join(&pkg_path);
    // A fresh tree: files of types since removed must not linger.
    for dir in [&src_dir, &res_dir] {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
        }
    }
    let parents: BTreeSet<String> = module.types.iter().filter_map(|t| t.parent.clone()).collect();
    let mut gen = Gen { module, package: package.clone(), classes: BTreeSet::new(), interfaces: Vec::new() };
    gen.classes = module.types.iter().map(|t| t.class_name.clone()).collect();
    let module_class = module_class(&module.name);
    if gen.classes.contains(&module_class) {
        return Err(format!("a type is named {module_class}, the name of the module class"));
    }
    for t in &module.types {
        let src = gen.class_source(t, parents.contains(&t.key));
        write_file(&src_dir.join(format!("{}.java", t.class_name)), &src)?;
    }
    let src = gen.module_source();
    write_file(&src_dir.join(format!("{module_class}.java")), &src)?;
    for (name, src) in &gen.interfaces {
        write_file(&src_dir.join(format!("{name}.java")), src)?;
    }
    let registrar = registrar_class(module);
    write_file(&root.join("src/main/java/module-info.java"), &module_info(&package, &module_class, &registrar))?;
    write_file(
        &root.join("src/main/resources/META-INF/services").join(BINDINGS_SERVICE),
        &format!("{package}.{module_class}${registrar}\n"),
    )?;
    write_file(&root.join("pom.xml"), &pom(module, &package))?;
    std::fs::create_dir_all(&res_dir).map_err(|e| format!("cannot create {}: {e}", res_dir.display()))?;
    let plugin_copy = res_dir.join(&module.file_name);
    std::fs::copy(&options.plugin, &plugin_copy)
        .map_err(|e| format!("cannot copy {} to {}: {e}", options.plugin, plugin_copy.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_camel_case_with_keywords_and_inherited_members_escaped() {
        assert_eq!(member_name("increment_by"), "incrementBy");
        assert_eq!(member_name("class"), "class_");
        assert_eq!(member_name("new"), "new_");
        assert_eq!(member_name("get"), "get_", "TetherObject.get is inherited");
        assert_eq!(member_name("to_string"), "toString_", "Object.toString is inherited");
        assert_eq!(member_name("find"), "find");
        assert_eq!(param_name("new", 0), "new_");
        assert_eq!(param_name("", 2), "arg2");
        assert_eq!(module_class("scene"), "SceneModule");
        assert_eq!(module_class("my_plugin"), "MyPluginModule");
        assert_eq!(function_name("module"), "module_", "the module class's own accessor");
        assert_eq!(function_name("greet"), "greet");
        assert_eq!(function_name("get"), "get_", "escaped once, as members are");
    }

    #[test]
    fn the_registrar_steps_aside_for_a_type_of_its_name() {
        let type_named = |class_name: &str| TypeDecl {
            key: format!("p.{class_name}"),
            class_name: class_name.into(),
            doc: String::new(),
            parent: None,
            fields: Vec::new(),
            methods: Vec::new(),
            constructor: None,
            has_constructor: false,
        };
        let module = |types| Module {
            name: "p".into(),
            file_name: "libp.so".into(),
            functions: Vec::new(),
            types,
            manifest: Vec::new(),
        };
        assert_eq!(registrar_class(&module(vec![type_named("Node")])), "Registrar");
        assert_eq!(registrar_class(&module(vec![type_named("Registrar")])), "Registrar_");
        let info = module_info("dev.x.p", "PModule", "Registrar");
        assert!(info.contains("module dev.x.p {"), "{info}");
        assert!(info.contains("provides dev.tether.ffi.TetherBindings with dev.x.p.PModule.Registrar;"), "{info}");
    }

    #[test]
    fn string_literals_are_escaped() {
        assert_eq!(lit("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(lit("\u{1}"), "\"\\u0001\"");
    }

    #[test]
    fn javadoc_is_escaped_and_code_spans_kept() {
        let lines = javadoc_text("Add `by` to x < y & z */ @see\n\nSecond.");
        assert_eq!(lines, ["Add {@code by} to x &lt; y &amp; z *&#47; &#64;see", "<p>", "Second."]);
        assert_eq!(javadoc_text("`{braces}`"), ["{braces}"], "no code tag around text with braces");
    }
}
