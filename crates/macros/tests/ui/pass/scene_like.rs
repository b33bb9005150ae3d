//! A small plugin the way an author writes one: it compiles, and its registry reads back.
use std::sync::Mutex;

use tether::signature::{render_signature, Language};
use tether::{Object, ObjectArc, TetherType};

/// A labelled item.
#[tether::object("ui.Item")]
pub struct Item {
    /// The label.
    #[tether(field)]
    label: String,
    tags: Mutex<Vec<String>>,
}

#[tether::methods]
impl Item {
    #[tether(constructor)]
    fn new(label: &str) -> Self {
        Item { label: label.into(), tags: Mutex::new(Vec::new()) }
    }

    /// Tag the item; returns how many tags it has.
    fn tag(&self, tag: String, #[tether(default = 1)] times: usize) -> usize {
        let mut tags = self.tags.lock().unwrap();
        tags.extend(std::iter::repeat_n(tag, times));
        tags.len()
    }

    /// The tags.
    #[tether(getter)]
    fn tags(&self) -> Vec<String> {
        self.tags.lock().unwrap().clone()
    }
}

/// An item named `label`.
#[tether::function("ui.make_item")]
pub fn make_item(label: &str) -> ObjectArc<Item> {
    ObjectArc::new(Item::new(label))
}

tether::module! {
    types: [Item],
    functions: [make_item],
}

fn main() {
    Item::register_type().unwrap();
    let info = tether::types::type_info(Item::type_index()).unwrap();
    let tag = info.method("tag").unwrap().func();
    assert_eq!(
        render_signature("tag", tag.signature().unwrap(), Language::Python),
        "tag(tag: str, times: int = 1) -> int"
    );
    assert_eq!(info.doc(), "A labelled item.");
    assert_eq!(__tether_function_make_item().name(), "ui.make_item");
}
