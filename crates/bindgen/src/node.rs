//! The Node backend: `<out>/node/` is an npm package named after the plugin: package.json
//! (depends on tether-ffi), `index.cjs` (loads the plugin beside it, checks the recorded
//! manifest, exports the classes and functions), `index.mjs` (the same as ES module exports),
//! `index.d.ts` (the typed surface, JSDoc from the docs) and the plugin. See docs/bindings.md.

use std::fmt::Write;
use std::path::Path;

use tether_core::signature::{escape_keyword, language_name, Language, SignatureInfo, TypeKind, TypeRef};

use crate::model::{Module, TypeDecl};
use crate::Options;

/// A registry name as the declarations write it: camelCase, then the one keyword rule (a
/// trailing underscore).
fn js_name(name: &str) -> String {
    escape_keyword(&language_name(name, Language::JavaScript), Language::JavaScript)
}

/// Which way a value crosses: into native code (parameters, setters, what a callback returns)
/// or out of it (results, getters, a callback's arguments).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
}

impl Dir {
    fn flip(self) -> Dir {
        match self {
            Dir::In => Dir::Out,
            Dir::Out => Dir::In,
        }
    }
}

fn class_ref(module: &Module, key: &str) -> String {
    match module.types.iter().find(|t| t.key == key) {
        Some(t) => t.class_name.clone(),
        None => "TetherObject".into(),
    }
}

/// A type descriptor as TypeScript writes it. Int is `number | bigint` both ways (tether-ffi
/// returns a BigInt beyond +-2^53 and takes either); Optional[T] is `T | null`; Array[T] is a
/// `TetherArray<T>` coming out and a `readonly T[]` or TetherArray going in.
pub fn type_text(module: &Module, ty: TypeRef, dir: Dir) -> String {
    let kids = ty.children();
    let child = |i: usize, d: Dir| type_text(module, kids[i], d);
    let paren = |t: String| if t.contains("=>") || t.contains('|') { format!("({t})") } else { t };
    match ty.kind() {
        TypeKind::Any => "any".into(),
        TypeKind::None => "null".into(),
        TypeKind::Bool => "boolean".into(),
        TypeKind::Int => "number | bigint".into(),
        TypeKind::Float => "number".into(),
        TypeKind::Str => "string".into(),
        TypeKind::Bytes if dir == Dir::In => "Uint8Array".into(),
        TypeKind::Bytes => "Buffer".into(),
        TypeKind::Object => class_ref(module, ty.key()),
        TypeKind::Array if dir == Dir::In => {
            let item = child(0, dir);
            format!("readonly {}[] | TetherArray<{item}>", paren(item.clone()))
        }
        TypeKind::Array => format!("TetherArray<{}>", child(0, dir)),
        TypeKind::Map if dir == Dir::In => format!("TetherMap | {{ [key: string]: {} }}", child(1, dir)),
        TypeKind::Map => "TetherMap".into(),
        TypeKind::Optional => format!("{} | null", child(0, dir)),
        TypeKind::Callable if kids.is_empty() => "(...args: any[]) => any".into(),
        TypeKind::Callable => {
            let params: Vec<String> =
                (0..kids.len() - 1).map(|i| format!("arg{i}: {}", child(i, dir.flip()))).collect();
            let result = kids[kids.len() - 1];
            let result =
                if result.kind() == TypeKind::None { "void".into() } else { child(kids.len() - 1, dir.flip()) };
            format!("({}) => {result}", params.join(", "))
        }
        TypeKind::Host => "unknown".into(),
    }
}

/// A result type: None is `void` (the call returns null).
fn result_text(module: &Module, ty: TypeRef) -> String {
    if ty.kind() == TypeKind::None {
        "void".into()
    } else {
        type_text(module, ty, Dir::Out)
    }
}

/// A JSDoc comment, indented; empty when there is no doc.
fn jsdoc(doc: &str, indent: &str) -> String {
    let doc = doc.trim();
    if doc.is_empty() {
        return String::new();
    }
    let doc = doc.replace("*/", "*\\/");
    let lines: Vec<&str> = doc.lines().collect();
    if lines.len() == 1 {
        return format!("{indent}/** {} */\n", lines[0]);
    }
    let mut out = format!("{indent}/**\n");
    for l in lines {
        let _ = writeln!(out, "{indent} *{}{l}", if l.is_empty() { "" } else { " " });
    }
    let _ = writeln!(out, "{indent} */");
    out
}

/// `(a: T, b?: U)`: names camelCase and escaped; a parameter with a default may be left out.
fn params_text(module: &Module, sig: &SignatureInfo) -> String {
    sig.caller_params()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = if p.name().is_empty() { format!("arg{i}") } else { js_name(p.name()) };
            let optional = if p.default().is_some() { "?" } else { "" };
            format!("{name}{optional}: {}", type_text(module, p.ty(), Dir::In))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_class(module: &Module, t: &TypeDecl, out: &mut String) {
    let parent = t.parent.as_deref().map_or_else(|| "TetherObject".to_string(), |p| class_ref(module, p));
    out.push('\n');
    out.push_str(&jsdoc(&t.doc, ""));
    let _ = writeln!(out, "export declare class {} extends {parent} {{", t.class_name);
    match t.constructor {
        Some(sig) => {
            let _ = writeln!(out, "  constructor({});", params_text(module, sig));
        }
        None if t.has_constructor => out.push_str("  constructor(...args: any[]);\n"),
        // No constructor in the registry: `new` throws, so TypeScript may not call it.
        None => out.push_str("  protected constructor();\n"),
    }
    for f in &t.fields {
        out.push_str(&jsdoc(&f.doc, "  "));
        let name = js_name(&f.name);
        if f.settable {
            let _ = writeln!(out, "  get {name}(): {};", type_text(module, f.ty, Dir::Out));
            let _ = writeln!(out, "  set {name}(value: {});", type_text(module, f.ty, Dir::In));
        } else {
            let _ = writeln!(out, "  readonly {name}: {};", type_text(module, f.ty, Dir::Out));
        }
    }
    for m in &t.methods {
        out.push_str(&jsdoc(&m.doc, "  "));
        let name = js_name(&m.name);
        let stat = if m.is_static { "static " } else { "" };
        match m.signature {
            Some(sig) => {
                let _ = writeln!(
                    out,
                    "  {stat}{name}({}): {};",
                    params_text(module, sig),
                    result_text(module, sig.result())
                );
            }
            None => {
                let _ = writeln!(out, "  {stat}{name}(...args: any[]): any;");
            }
        }
    }
    out.push_str("}\n");
}

/// The `index.d.ts` text.
pub fn declarations(module: &Module) -> String {
    let mut out = format!(
        "// Typed bindings for the tether plugin {} (generated by tether-bindgen from its registry; do not edit).\n\
         import {{ TetherObject, TetherArray, TetherMap, LoadedModule }} from 'tether-ffi';\n\n\
         /** The loaded plugin (tether-ffi's loadModule of the plugin beside this file). */\n\
         export declare const plugin: LoadedModule;\n\
         /** What these bindings were generated from: one [item, hash] per exported item. */\n\
         export declare const manifest: readonly (readonly [string, string])[];\n",
        module.file_name
    );
    for t in &module.types {
        write_class(module, t, &mut out);
    }
    for f in &module.functions {
        out.push('\n');
        out.push_str(&jsdoc(&f.doc, ""));
        let name = js_name(&f.name);
        match f.signature {
            Some(sig) => {
                let _ = writeln!(
                    out,
                    "export declare function {name}({}): {};",
                    params_text(module, sig),
                    result_text(module, sig.result())
                );
            }
            None => {
                let _ = writeln!(out, "export declare function {name}(...args: any[]): any;");
            }
        }
    }
    out
}

/// The names index.cjs exports, in order.
fn exported_names(module: &Module) -> Vec<String> {
    let mut names = vec!["plugin".to_string(), "manifest".to_string()];
    names.extend(module.types.iter().map(|t| t.class_name.clone()));
    names.extend(module.functions.iter().map(|f| js_name(&f.name)));
    names
}

/// The `index.cjs` text: load, check, alias escaped names, export.
pub fn loader_cjs(module: &Module) -> String {
    let mut out = format!(
        "'use strict';\n// Typed bindings for the tether plugin {file} (generated by tether-bindgen from its registry; do not edit).\n\
         // Requiring this loads the plugin beside it and checks that it is the one these bindings were\n\
         // generated from (a TetherValueError naming what changed, if not).\n\
         const path = require('node:path');\nconst tether = require('tether-ffi');\n\n\
         const manifest = Object.freeze([\n",
        file = module.file_name
    );
    for e in &module.manifest {
        let _ = writeln!(out, "  Object.freeze([{:?}, {:?}]),", e.item, e.hash);
    }
    let _ = writeln!(
        out,
        "]);\n\nconst plugin = tether.loadModule(path.join(__dirname, {:?}));\ntether.checkBindings(plugin, manifest);\n",
        module.file_name
    );
    out.push_str(
        "/** A member whose name JavaScript reserves is reachable under the escaped name too. */\n\
         function alias(target, name, escaped) {\n  \
         const descriptor = Object.getOwnPropertyDescriptor(target, name);\n  \
         Object.defineProperty(target, escaped, { ...descriptor, enumerable: false });\n}\n\n",
    );
    for t in &module.types {
        let _ = writeln!(out, "const {0} = plugin.classes.{0};", t.class_name);
        for f in &t.fields {
            let plain = language_name(&f.name, Language::JavaScript);
            if js_name(&f.name) != plain {
                let _ = writeln!(out, "alias({}.prototype, {plain:?}, {:?});", t.class_name, js_name(&f.name));
            }
        }
        for m in &t.methods {
            let plain = language_name(&m.name, Language::JavaScript);
            if js_name(&m.name) != plain {
                let target = if m.is_static { t.class_name.clone() } else { format!("{}.prototype", t.class_name) };
                let _ = writeln!(out, "alias({target}, {plain:?}, {:?});", js_name(&m.name));
            }
        }
    }
    for f in &module.functions {
        let _ = writeln!(out, "const {} = plugin.functions[{:?}];", js_name(&f.name), f.name);
    }
    let _ = writeln!(out, "\nmodule.exports = {{ {} }};", exported_names(module).join(", "));
    out
}

/// The `index.mjs` text: the CommonJS module's exports as ES module exports.
pub fn loader_mjs(module: &Module) -> String {
    format!(
        "// Typed bindings for the tether plugin {} (generated by tether-bindgen; do not edit): the ES module entry.\n\
         import {{ createRequire }} from 'node:module';\n\n\
         const require = createRequire(import.meta.url);\nconst bindings = require('./index.cjs');\n\n\
         export const {{ {} }} = bindings;\nexport default bindings;\n",
        module.file_name,
        exported_names(module).join(", ")
    )
}

fn package_json(module: &Module) -> String {
    let version = env!("CARGO_PKG_VERSION");
    format!(
        "{{\n  \"name\": {name:?},\n  \"version\": \"{version}\",\n  \
         \"description\": \"Typed bindings for the tether plugin {file} (generated by tether-bindgen)\",\n  \
         \"main\": \"./index.cjs\",\n  \"types\": \"./index.d.ts\",\n  \"exports\": {{\n    \".\": {{\n      \
         \"types\": \"./index.d.ts\",\n      \"import\": \"./index.mjs\",\n      \"require\": \"./index.cjs\"\n    }},\n    \
         \"./package.json\": \"./package.json\"\n  }},\n  \
         \"files\": [\"index.cjs\", \"index.mjs\", \"index.d.ts\", {file:?}],\n  \
         \"engines\": {{ \"node\": \">=20\" }},\n  \"dependencies\": {{ \"tether-ffi\": \"{version}\" }}\n}}\n",
        name = module.name,
        file = module.file_name,
    )
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Write `<out>/node/`: the npm package with the plugin.
pub fn write(module: &Module, out: &Path, options: &Options) -> Result<(), String> {
    let dir = out.join("node");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    write_file(&dir.join("package.json"), &package_json(module))?;
    write_file(&dir.join("index.cjs"), &loader_cjs(module))?;
    write_file(&dir.join("index.mjs"), &loader_mjs(module))?;
    write_file(&dir.join("index.d.ts"), &declarations(module))?;
    let plugin = dir.join(&module.file_name);
    std::fs::copy(&options.plugin, &plugin)
        .map_err(|e| format!("cannot copy {} to {}: {e}", options.plugin, plugin.display()))?;
    Ok(())
}
