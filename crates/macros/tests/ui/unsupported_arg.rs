#[tether::function("ui.open")]
fn open(file: std::fs::File) -> bool {
    drop(file);
    true
}

fn main() {}
