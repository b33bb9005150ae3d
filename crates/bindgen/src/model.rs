//! What a plugin exports, read from the registry after loading it in-process: the one model
//! every language's generator writes from.

use tether_core::manifest::{module_manifest, ManifestEntry};
use tether_core::plugin::{self, ModuleObj};
use tether_core::signature::{SignatureInfo, TypeRef};
use tether_core::types::{self, TypeInfo};
use tether_core::{Error, ObjectArc, Result};

/// A loaded plugin's exports.
pub struct Module {
    /// The package name (`scene` for `libscene.so`, unless given).
    pub name: String,
    /// The plugin file's name (`libscene.so`), which the generated packages load from beside them.
    pub file_name: String,
    pub functions: Vec<FunctionDecl>,
    pub types: Vec<TypeDecl>,
    /// What the generated code records to detect stale bindings ([`tether_core::manifest`]).
    pub manifest: Vec<ManifestEntry>,
}

/// An exported function: its module attribute name and its Function's registry name.
pub struct FunctionDecl {
    pub name: String,
    pub qualified: String,
    pub doc: String,
    pub signature: Option<&'static SignatureInfo>,
}

pub struct TypeDecl {
    pub key: String,
    /// The class name: the key's last part (`Node` for `scene.Node`).
    pub class_name: String,
    pub doc: String,
    /// The parent's key when it is not the root `tether.Object`.
    pub parent: Option<String>,
    /// The type's own fields (inherited ones come through the parent).
    pub fields: Vec<FieldDecl>,
    pub methods: Vec<MethodDecl>,
    pub constructor: Option<&'static SignatureInfo>,
    pub has_constructor: bool,
}

pub struct FieldDecl {
    pub name: String,
    pub doc: String,
    pub ty: TypeRef,
    pub settable: bool,
}

pub struct MethodDecl {
    pub name: String,
    pub doc: String,
    pub is_static: bool,
    /// The method's Function's signature (a receiver first unless static).
    pub signature: Option<&'static SignatureInfo>,
}

/// `libscene.so` → `scene`, `scene.dll` → `scene`.
pub fn default_name(file_name: &str) -> String {
    let stem = file_name.split('.').next().unwrap_or(file_name);
    stem.strip_prefix("lib").unwrap_or(stem).replace('-', "_")
}

fn type_decl(info: &'static TypeInfo) -> TypeDecl {
    let key = info.key().to_string();
    let parent = types::type_key(info.parent).filter(|k| *k != "tether.Object").map(str::to_string);
    TypeDecl {
        class_name: key.rsplit('.').next().unwrap_or(&key).to_string(),
        doc: info.doc().to_string(),
        parent,
        fields: info
            .fields()
            .iter()
            .map(|f| FieldDecl {
                name: f.name().to_string(),
                doc: f.doc().to_string(),
                ty: f.ty(),
                settable: f.setter().is_some(),
            })
            .collect(),
        methods: info
            .methods()
            .iter()
            .map(|m| MethodDecl {
                name: m.name().to_string(),
                doc: m.doc().to_string(),
                is_static: m.is_static != 0,
                signature: m.func().signature(),
            })
            .collect(),
        constructor: info.constructor().and_then(|c| c.signature()),
        has_constructor: info.constructor().is_some(),
        key,
    }
}

/// Load `plugin_path` through the core's module loader and read its exports.
pub fn load(plugin_path: &str, name: Option<&str>) -> Result<Module> {
    let module: ObjectArc<ModuleObj> = plugin::load_module(plugin_path)?;
    let file_name = std::path::Path::new(module.path())
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::value(format!("{plugin_path:?} has no file name")))?
        .to_string();
    let mut functions: Vec<FunctionDecl> = module
        .functions()
        .iter()
        .map(|(n, f)| FunctionDecl {
            name: n.clone(),
            qualified: f.name().to_string(),
            doc: f.doc().to_string(),
            signature: f.signature(),
        })
        .collect();
    functions.sort_by(|a, b| a.name.cmp(&b.name));
    let types = module.types().iter().filter_map(|&i| types::type_info(i)).map(type_decl).collect();
    Ok(Module {
        name: name.map_or_else(|| default_name(&file_name), str::to_string),
        manifest: module_manifest(&module),
        file_name,
        functions,
        types,
    })
}
