//! `cargo xtask <task>`: see the `xtask` library and `cargo xtask help`.

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match xtask::run(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // each cause once (anyhow's own report lists causes the message already quotes)
            eprintln!("Error: {}", sage_core::said_once(e.as_ref()));
            std::process::ExitCode::FAILURE
        }
    }
}
