//! `sage`: the command line of sage-rs over its shipped suites and metrics (see the `sage_cli`
//! library for starting it over a registry of one's own).

fn main() -> std::process::ExitCode {
    sage_cli::main(sage_suites::Registry::standard())
}
