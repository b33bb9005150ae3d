#[tether::object("ui.Boxed")]
pub struct Boxed<T> {
    value: T,
}

fn main() {}
