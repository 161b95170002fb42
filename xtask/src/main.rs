//! `cargo xtask <task>`: see the `xtask` library and `cargo xtask help`.

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    xtask::run(&args)
}
