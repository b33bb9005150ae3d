#[tether::function("ui.greet")]
fn greet(name: impl Into<String>) -> String {
    name.into()
}

fn main() {}
