//! One rule for how each language spells the registry's names and types, used by the
//! frontends' runtime classes (Python signatures, Node's `fn.signature`, Java reflection) and
//! by the bindings generator.

use super::{SignatureInfo, TypeKind, TypeRef};
use crate::any::{Any, TypeIndex};

/// The languages tether binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    Python,
    JavaScript,
    Java,
}

impl Language {
    pub const ALL: [Language; 3] = [Language::Python, Language::JavaScript, Language::Java];

    /// As frontends name it when they ask (`"python"`, `"javascript"`, `"java"`).
    pub fn of_name(name: &str) -> Option<Language> {
        match name {
            "python" => Some(Language::Python),
            "javascript" | "js" | "node" => Some(Language::JavaScript),
            "java" => Some(Language::Java),
            _ => None,
        }
    }
}

/// A registry name (snake_case, as Rust writes it) in `language`'s convention: unchanged for
/// Python, camelCase for JavaScript and Java (`on_change` → `onChange`). Leading underscores
/// and names that are camelCase already are kept.
pub fn language_name(name: &str, language: Language) -> String {
    if language == Language::Python {
        return name.to_string();
    }
    let body = name.trim_start_matches('_');
    let mut out = String::with_capacity(name.len());
    out.push_str(&name[..name.len() - body.len()]);
    let mut upper_next = false;
    for c in body.chars() {
        if c == '_' {
            upper_next = !out.is_empty() && !out.ends_with('_');
            continue;
        }
        if upper_next {
            out.extend(c.to_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Words each language reserves (keywords and literals a name cannot be).
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];
const JAVASCRIPT_KEYWORDS: &[&str] = &[
    "arguments",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "eval",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];
const JAVA_KEYWORDS: &[&str] = &[
    "_",
    "abstract",
    "assert",
    "boolean",
    "break",
    "byte",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extends",
    "false",
    "final",
    "finally",
    "float",
    "for",
    "goto",
    "if",
    "implements",
    "import",
    "instanceof",
    "int",
    "interface",
    "long",
    "native",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "short",
    "static",
    "strictfp",
    "super",
    "switch",
    "synchronized",
    "this",
    "throw",
    "throws",
    "transient",
    "true",
    "try",
    "var",
    "void",
    "volatile",
    "while",
    "yield",
    "record",
    "sealed",
    "permits",
];

/// Is `name` reserved in `language` (a keyword or literal it cannot use as a name)?
pub fn is_reserved(name: &str, language: Language) -> bool {
    match language {
        Language::Python => PYTHON_KEYWORDS,
        Language::JavaScript => JAVASCRIPT_KEYWORDS,
        Language::Java => JAVA_KEYWORDS,
    }
    .contains(&name)
}

/// The one rule for a name `language` reserves: a trailing underscore (`from` → `from_` in
/// Python, `class` → `class_`, `new` → `new_`), as PEP 8 advises; other names are unchanged.
/// Apply it after [`language_name`].
pub fn escape_keyword(name: &str, language: Language) -> String {
    if is_reserved(name, language) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// The short class name of a type key ("scene.Node" → "Node").
fn class_name(key: &str) -> &str {
    key.rsplit('.').next().unwrap_or(key)
}

/// A type as `language` writes it in a signature.
pub fn render_type(ty: TypeRef, language: Language) -> String {
    let kids = ty.children();
    let child = |i: usize| render_type(kids[i], language);
    match (language, ty.kind()) {
        (Language::Python, kind) => match kind {
            TypeKind::Any => "Any".into(),
            TypeKind::None => "None".into(),
            TypeKind::Bool => "bool".into(),
            TypeKind::Int => "int".into(),
            TypeKind::Float => "float".into(),
            TypeKind::Str => "str".into(),
            TypeKind::Bytes => "bytes".into(),
            TypeKind::Object => ty.key().into(),
            TypeKind::Array => format!("Array[{}]", child(0)),
            TypeKind::Map => format!("Map[{}, {}]", child(0), child(1)),
            TypeKind::Optional => format!("{} | None", child(0)),
            TypeKind::Callable if kids.is_empty() => "Callable[..., Any]".into(),
            TypeKind::Callable => {
                let params: Vec<String> = (0..kids.len() - 1).map(child).collect();
                format!("Callable[[{}], {}]", params.join(", "), child(kids.len() - 1))
            }
            TypeKind::Host => "object".into(),
        },
        (Language::JavaScript, kind) => match kind {
            TypeKind::Any => "any".into(),
            TypeKind::None => "null".into(),
            TypeKind::Bool => "boolean".into(),
            TypeKind::Int | TypeKind::Float => "number".into(),
            TypeKind::Str => "string".into(),
            TypeKind::Bytes => "Buffer".into(),
            TypeKind::Object => class_name(ty.key()).into(),
            TypeKind::Array => format!("TetherArray<{}>", child(0)),
            TypeKind::Map => format!("TetherMap<{}, {}>", child(0), child(1)),
            TypeKind::Optional => format!("{} | null", child(0)),
            TypeKind::Callable if kids.is_empty() => "(...args: any[]) => any".into(),
            TypeKind::Callable => {
                let params: Vec<String> = (0..kids.len() - 1).map(|i| format!("arg{i}: {}", child(i))).collect();
                format!("({}) => {}", params.join(", "), child(kids.len() - 1))
            }
            TypeKind::Host => "unknown".into(),
        },
        (Language::Java, kind) => match kind {
            TypeKind::Any | TypeKind::Host => "Object".into(),
            TypeKind::None => "Void".into(),
            TypeKind::Bool => "Boolean".into(),
            TypeKind::Int => "Long".into(),
            TypeKind::Float => "Double".into(),
            TypeKind::Str => "String".into(),
            TypeKind::Bytes => "byte[]".into(),
            TypeKind::Object => class_name(ty.key()).into(),
            TypeKind::Array => format!("TetherList<{}>", child(0)),
            TypeKind::Map => format!("TetherMap<{}, {}>", child(0), child(1)),
            // Java's references are nullable already.
            TypeKind::Optional => child(0),
            TypeKind::Callable => "TetherFunction".into(),
        },
    }
}

/// A default value as `language` writes it.
pub fn render_default(value: &Any, language: Language) -> String {
    let v = value.view();
    let (none, t, f) = match language {
        Language::Python => ("None", "True", "False"),
        Language::JavaScript | Language::Java => ("null", "true", "false"),
    };
    match v.type_index() {
        TypeIndex::NONE => none.into(),
        TypeIndex::BOOL => if v.as_bool() == Some(true) { t } else { f }.into(),
        TypeIndex::INT => v.as_int().unwrap_or(0).to_string(),
        TypeIndex::FLOAT => format!("{:?}", v.as_float().unwrap_or(0.0)),
        _ => match v.as_str() {
            Some(s) if language == Language::Python => format!("{s:?}").replace('"', "'"),
            Some(s) => format!("{s:?}"),
            None => "...".into(),
        },
    }
}

/// `name(params) -> result` as `language` writes a declaration, without the receiver:
/// Python `find(name: str, depth: int = 0) -> scene.Node | None`, JavaScript
/// `find(name: string, depth?: number): Node | null`, Java `Node find(String name, Long depth)`.
pub fn render_signature(name: &str, sig: &SignatureInfo, language: Language) -> String {
    let name = language_name(name, language);
    let params: Vec<String> = sig
        .caller_params()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let pname = if p.name().is_empty() { format!("arg{i}") } else { language_name(p.name(), language) };
            let ty = render_type(p.ty(), language);
            match (language, p.default()) {
                (Language::Python, Some(d)) => format!("{pname}: {ty} = {}", render_default(d, language)),
                (Language::Python, None) => format!("{pname}: {ty}"),
                (Language::JavaScript, Some(_)) => format!("{pname}?: {ty}"),
                (Language::JavaScript, None) => format!("{pname}: {ty}"),
                (Language::Java, _) => format!("{ty} {pname}"),
            }
        })
        .collect();
    let result = render_type(sig.result(), language);
    match language {
        Language::Python => format!("{name}({}) -> {result}", params.join(", ")),
        Language::JavaScript => format!("{name}({}): {result}", params.join(", ")),
        Language::Java => {
            let result = if sig.result().kind() == TypeKind::None { "void".to_string() } else { result };
            format!("{result} {name}({})", params.join(", "))
        }
    }
}
