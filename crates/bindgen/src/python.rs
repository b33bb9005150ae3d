//! The Python backend: `<out>/python/` is a project (pyproject.toml, setup.py) whose package
//! `<name>/` holds the plugin, `__init__.py` (loads the plugin beside it, checks the recorded
//! manifest, re-exports the classes and functions), `__init__.pyi` (the typed surface) and
//! `py.typed`. See docs/bindings.md for the type mapping and the naming rules.

use std::fmt::Write;
use std::path::Path;

use tether_core::signature::{escape_keyword, is_reserved, render_default, Language, SignatureInfo, TypeKind, TypeRef};

use crate::model::{Module, TypeDecl};
use crate::Options;

/// The setuptools the generated pyproject.toml builds with (pinned: the same wheel every time).
pub const SETUPTOOLS: &str = "setuptools==80.9.0";

/// A name as the stubs write it (the one keyword rule: a trailing underscore).
fn py_name(name: &str) -> String {
    escape_keyword(name, Language::Python)
}

/// The class that stands for type `key` in the stubs: ours by its class name, anything else
/// as the base wrapper class.
fn class_ref(module: &Module, key: &str) -> String {
    match module.types.iter().find(|t| t.key == key) {
        Some(t) => t.class_name.clone(),
        None => "tether_ffi.Object".into(),
    }
}

/// A type descriptor as the stubs write it. One rule for every position: Optional[T] is
/// `T | None`, Array[T] a `Sequence[T]` (a parameter takes a list or tuple, a result is a
/// `tether_ffi.Array`, which is a Sequence), Map[K, V] a `Mapping[K, V]`.
pub fn type_text(module: &Module, ty: TypeRef) -> String {
    let kids = ty.children();
    let child = |i: usize| type_text(module, kids[i]);
    match ty.kind() {
        TypeKind::Any => "Any".into(),
        TypeKind::None => "None".into(),
        TypeKind::Bool => "bool".into(),
        TypeKind::Int => "int".into(),
        TypeKind::Float => "float".into(),
        TypeKind::Str => "str".into(),
        TypeKind::Bytes => "bytes".into(),
        TypeKind::Object => class_ref(module, ty.key()),
        TypeKind::Array => format!("Sequence[{}]", child(0)),
        TypeKind::Map => format!("Mapping[{}, {}]", child(0), child(1)),
        TypeKind::Optional => format!("{} | None", child(0)),
        TypeKind::Callable if kids.is_empty() => "Callable[..., Any]".into(),
        TypeKind::Callable => {
            let params: Vec<String> = (0..kids.len() - 1).map(child).collect();
            format!("Callable[[{}], {}]", params.join(", "), child(kids.len() - 1))
        }
        TypeKind::Host => "object".into(),
    }
}

/// A docstring body, indented; empty when there is no doc.
fn docstring(doc: &str, indent: &str) -> String {
    let doc = doc.trim();
    if doc.is_empty() {
        return String::new();
    }
    let body = doc.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
    let body = body.lines().map(|l| if l.is_empty() { String::new() } else { l.to_string() }).collect::<Vec<_>>();
    let mut out = format!("{indent}\"\"\"{}", body[0]);
    for line in &body[1..] {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(indent);
        }
        out.push_str(line);
    }
    if body.len() > 1 {
        out.push('\n');
        out.push_str(indent);
    }
    out.push_str("\"\"\"\n");
    out
}

/// The parameter list of a stub `def` (after `self`/`cls` when `lead` is given): names
/// escaped; a parameter that cannot be passed by keyword, has no name, or whose name is a
/// keyword (Python cannot write `f(class=1)`) is positional-only.
fn params_text(module: &Module, sig: &SignatureInfo, lead: Option<&str>) -> String {
    let mut parts: Vec<String> = lead.map(|l| vec![l.to_string()]).unwrap_or_default();
    let params = sig.caller_params();
    let positional_only = |i: usize| {
        let p = &params[i];
        !p.keyword() || p.name().is_empty() || is_reserved(p.name(), Language::Python)
    };
    // Everything before the last positional-only parameter is positional-only too.
    let last_positional = (0..params.len()).rev().find(|&i| positional_only(i));
    for (i, p) in params.iter().enumerate() {
        let name = if p.name().is_empty() { format!("arg{i}") } else { py_name(p.name()) };
        let ty = type_text(module, p.ty());
        let text = match p.default() {
            Some(d) => {
                let literal = render_default(d, Language::Python);
                let literal = if literal.len() <= 40 && !literal.contains('\n') { literal } else { "...".into() };
                format!("{name}: {ty} = {literal}")
            }
            None => format!("{name}: {ty}"),
        };
        parts.push(text);
        if Some(i) == last_positional {
            parts.push("/".into());
        }
    }
    if lead.is_some() && parts.get(1).map(String::as_str) == Some("/") {
        // `self, /` alone says nothing.
        parts.remove(1);
    }
    parts.join(", ")
}

fn write_class(module: &Module, t: &TypeDecl, out: &mut String) {
    let parent = t.parent.as_deref().map_or_else(|| "tether_ffi.Object".to_string(), |p| class_ref(module, p));
    let _ = writeln!(out, "\nclass {}({parent}):", t.class_name);
    let mut body = docstring(&t.doc, "    ");
    let _ = writeln!(body, "    __tether_type_key__: str  # {:?}", t.key);
    // The constructor is `__init__` (what a Python subclass's own `__init__` calls through
    // `super().__init__(...)`; the generated class's `__new__` takes the same arguments).
    if let Some(sig) = t.constructor {
        let _ = writeln!(body, "    def __init__({}) -> None: ...", params_text(module, sig, Some("self")));
    } else if t.has_constructor {
        let _ = writeln!(body, "    def __init__(self, *args: Any, **kwargs: Any) -> None: ...");
    }
    for f in &t.fields {
        let name = py_name(&f.name);
        let ty = type_text(module, f.ty);
        let doc = docstring(&f.doc, "        ");
        let _ = writeln!(body, "    @property\n    def {name}(self) -> {ty}:");
        body.push_str(if doc.is_empty() { "        ...\n" } else { &doc });
        if f.settable {
            let _ = writeln!(body, "    @{name}.setter\n    def {name}(self, value: {ty}) -> None: ...");
        }
    }
    for m in &t.methods {
        let name = py_name(&m.name);
        let (decorator, params, result) = match m.signature {
            Some(sig) => {
                let lead = (!m.is_static).then_some("self");
                let params = params_text(module, sig, lead);
                (m.is_static, params, type_text(module, sig.result()))
            }
            None if m.is_static => (true, "*args: Any, **kwargs: Any".into(), "Any".into()),
            None => (false, "self, *args: Any, **kwargs: Any".into(), "Any".into()),
        };
        if decorator {
            body.push_str("    @staticmethod\n");
        }
        let doc = docstring(&m.doc, "        ");
        let _ = writeln!(body, "    def {name}({params}) -> {result}:");
        body.push_str(if doc.is_empty() { "        ...\n" } else { &doc });
    }
    out.push_str(&body);
}

/// The `__init__.pyi` text.
pub fn stubs(module: &Module) -> String {
    let mut out = format!(
        "\"\"\"Typed bindings for the tether plugin {} (generated by tether-bindgen from its registry; \
         do not edit).\"\"\"\n\nimport types\nfrom collections.abc import Callable, Mapping, Sequence\n\
         from typing import Any, Final\n\nimport tether_ffi\n\n",
        module.file_name
    );
    let _ = writeln!(
        out,
        "__all__ = [{}]",
        exported_names(module).iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
    );
    out.push_str(
        "\n#: The loaded plugin module (tether_ffi.load_module of the plugin beside this file).\nplugin: types.ModuleType\n\
         #: What these bindings were generated from: one (item, hash) per exported item.\n\
         MANIFEST: Final[tuple[tuple[str, str], ...]]\n",
    );
    for t in &module.types {
        write_class(module, t, &mut out);
    }
    for f in &module.functions {
        let name = py_name(&f.name);
        let (params, result) = match f.signature {
            Some(sig) => (params_text(module, sig, None), type_text(module, sig.result())),
            None => ("*args: Any, **kwargs: Any".into(), "Any".into()),
        };
        let doc = docstring(&f.doc, "    ");
        let _ = writeln!(out, "\ndef {name}({params}) -> {result}:");
        out.push_str(if doc.is_empty() { "    ...\n" } else { &doc });
    }
    out
}

/// The classes and functions the package exports, by their Python names.
fn exported_names(module: &Module) -> Vec<String> {
    let mut names: Vec<String> = module.types.iter().map(|t| t.class_name.clone()).collect();
    names.extend(module.functions.iter().map(|f| py_name(&f.name)));
    names
}

/// The `__init__.py` text: load, check, alias escaped names, re-export.
pub fn loader(module: &Module) -> String {
    let mut out = format!(
        "\"\"\"Typed bindings for the tether plugin {file} (generated by tether-bindgen from its registry; \
         do not edit).\n\nImporting loads the plugin that sits beside this file and checks that it is the one \
         these bindings were generated from (tether_ffi.ValueError naming what changed, if not).\n\"\"\"\n\n\
         import os as _os\n\nimport tether_ffi as _tether_ffi\n\n\
         #: What these bindings were generated from: one (item, hash) per exported item.\nMANIFEST = (\n",
        file = module.file_name
    );
    for e in &module.manifest {
        let _ = writeln!(out, "    ({:?}, {:?}),", e.item, e.hash);
    }
    let _ = writeln!(
        out,
        ")\n\nplugin = _tether_ffi.load_module(_os.path.join(_os.path.dirname(__file__), {:?}))\n\
         _tether_ffi.check_bindings(plugin, MANIFEST)\n",
        module.file_name
    );
    out.push_str(
        "\ndef _alias(cls: type, name: str, escaped: str) -> None:\n    \
         # A registry name Python reserves is reachable under the escaped one too.\n    \
         setattr(cls, escaped, vars(cls)[name])\n\n",
    );
    for t in &module.types {
        let _ = writeln!(out, "{0} = plugin.{0}", t.class_name);
        for name in t.fields.iter().map(|f| &f.name).chain(t.methods.iter().map(|m| &m.name)) {
            if py_name(name) != *name {
                let _ = writeln!(out, "_alias({}, {name:?}, {:?})", t.class_name, py_name(name));
            }
        }
    }
    for f in &module.functions {
        let _ = writeln!(out, "{} = getattr(plugin, {:?})", py_name(&f.name), f.name);
    }
    let _ = writeln!(
        out,
        "\n__all__ = [{}]",
        exported_names(module).iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
    );
    out
}

fn pyproject(module: &Module) -> String {
    let version = env!("CARGO_PKG_VERSION");
    format!(
        "# Generated by tether-bindgen: the typed Python package of the tether plugin {file}.\n\
         [build-system]\nrequires = [\"{SETUPTOOLS}\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
         [project]\nname = \"{name}\"\nversion = \"{version}\"\n\
         description = \"Typed bindings for the tether plugin {file}\"\nrequires-python = \">=3.9\"\n\
         dependencies = [\"tether_ffi=={version}\"]\n\n\
         [tool.setuptools]\npackages = [\"{name}\"]\n\n\
         [tool.setuptools.package-data]\n{name} = [\"{file}\", \"__init__.pyi\", \"py.typed\"]\n",
        name = module.name,
        file = module.file_name,
    )
}

/// The wheel holds a native library: a platform wheel for any Python 3 (`py3-none-<platform>`).
const SETUP_PY: &str = "\
# Generated by tether-bindgen: the package holds a native plugin, so its wheel is a platform
# wheel (py3-none-<platform>); everything else is in pyproject.toml.
from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return (\"py3\", \"none\", super().get_tag()[2])


setup(cmdclass={\"bdist_wheel\": PlatformWheel})
";

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Write `<out>/python/`: the project files and the package `<name>/` with the plugin.
pub fn write(module: &Module, out: &Path, options: &Options) -> Result<(), String> {
    let project = out.join("python");
    let package = project.join(&module.name);
    std::fs::create_dir_all(&package).map_err(|e| format!("cannot create {}: {e}", package.display()))?;
    write_file(&project.join("pyproject.toml"), &pyproject(module))?;
    write_file(&project.join("setup.py"), SETUP_PY)?;
    write_file(&package.join("__init__.py"), &loader(module))?;
    write_file(&package.join("__init__.pyi"), &stubs(module))?;
    write_file(&package.join("py.typed"), "")?;
    let plugin = package.join(&module.file_name);
    std::fs::copy(&options.plugin, &plugin)
        .map_err(|e| format!("cannot copy {} to {}: {e}", options.plugin, plugin.display()))?;
    Ok(())
}
