#[tether::function("ui.repeat")]
fn repeat(text: String, #[tether(default = "twice")] times: i64) -> String {
    text.repeat(times as usize)
}

fn main() {}
