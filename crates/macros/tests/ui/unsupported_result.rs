#[tether::function("ui.open")]
fn open() -> std::fs::File {
    unimplemented!()
}

fn main() {}
