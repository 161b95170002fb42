//! Links the `sage` binary position-dependent on Linux with GNU tools.
//!
//! Why: as a position-independent executable, the dynamic loader rewrote ~90,000 pointers in
//! `.data.rel.ro` at every start (2 MB, each page copied on write): ~500 page faults, a few
//! milliseconds of every `sage` process, and bench-all starts hundreds of them. Linked at a
//! fixed address those pointers are final in the file and their pages are shared from the page
//! cache. What is given up is address randomisation of the binary itself (libraries, stack and
//! heap stay randomised), which an offline evaluation tool does not need.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
