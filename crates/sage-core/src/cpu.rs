//! Which of its instruction sets this CPU lets sage's own kernels use: what it has, capped by
//! `SAGE_CPU`, so that one machine can run and measure every lower path it is able to (an
//! AVX-512 machine timing the AVX2 kernels its users' laptops run, a test comparing each path
//! with the float32 reference).
//!
//! The cap reaches every kernel of sage's own: sage-kernels' products (int8, GGUF, bf16, AMX)
//! and fused epilogues, and sage-metrics' bit-parallel Levenshtein. It lives here, in the crate
//! every other stands on, so that a crate with SIMD code of its own obeys the same switch
//! without depending on the model kernels. It cannot reach gemm, which chooses its float32
//! kernel itself, once per process, from the CPU alone (sage-kernels' `f32_kernel` names it).

use std::sync::OnceLock;

/// The steps `SAGE_CPU` caps at, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// x86-64-v3: AVX2, FMA, F16C (the build's baseline).
    Avx2,
    /// AVX2 and the 256-bit VNNI dot products (Intel since Alder Lake, AMD since Zen 4).
    AvxVnni,
    /// AVX-512 (F, BW, DQ, VL, VNNI, BF16 where present).
    Avx512,
    /// AVX-512 and Intel AMX tiles: everything the CPU has.
    Native,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 4] = [Level::Avx2, Level::AvxVnni, Level::Avx512, Level::Native];

    /// How `SAGE_CPU` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Avx2 => "avx2",
            Level::AvxVnni => "avx-vnni",
            Level::Avx512 => "avx512",
            Level::Native => "native",
        }
    }
}

/// `SAGE_CPU`'s value is none of [`Level`]'s names.
#[derive(Debug)]
pub struct BadCap {
    /// The value as set.
    pub value: String,
}

impl std::fmt::Display for BadCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = Level::ALL.iter().map(|l| l.name()).collect();
        write!(
            f,
            "SAGE_CPU={:?} is not an instruction-set level: use one of {}",
            self.value,
            names.join(", ")
        )
    }
}

impl std::error::Error for BadCap {}

/// The level `SAGE_CPU` asks for (`Native` when unset or empty).
pub fn requested() -> Result<Level, BadCap> {
    match std::env::var("SAGE_CPU") {
        Err(_) => Ok(Level::Native),
        Ok(value) if value.is_empty() => Ok(Level::Native),
        Ok(value) => Level::ALL
            .into_iter()
            .find(|l| l.name() == value.to_ascii_lowercase())
            .ok_or(BadCap { value }),
    }
}

/// The cap, read once per process. A bad value caps nothing here: binaries check
/// [`requested`] at start and refuse it with [`BadCap`]'s message.
fn cap() -> Level {
    static CAP: OnceLock<Level> = OnceLock::new();
    *CAP.get_or_init(|| requested().unwrap_or(Level::Native))
}

/// Whether the kernels may use `level`'s instructions (the CPU's own features are checked
/// beside this, at each kernel's choice).
pub fn allows(level: Level) -> bool {
    level <= cap()
}

/// The highest level this CPU has, whatever the cap.
pub fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        let avx512 = std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl");
        if avx512 && amx_detected() {
            return Level::Native;
        }
        if avx512 {
            return Level::Avx512;
        }
        if std::is_x86_feature_detected!("avxvnni") {
            return Level::AvxVnni;
        }
    }
    Level::Avx2
}

/// Whether the CPU has AMX-BF16 tiles (CPUID, on Linux), whatever `SAGE_AMX`, `SAGE_CPU` and
/// the kernel's grant say.
pub fn amx_detected() -> bool {
    // Linux only, as sage-kernels' AMX kernel (it asks Linux for the tile state)
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        use std::arch::x86_64::__cpuid_count;
        // leaf 7 is read only where leaf 0 says it exists
        if __cpuid_count(0, 0).eax < 7 {
            return false;
        }
        let edx = __cpuid_count(7, 0).edx;
        const AMX_BF16: u32 = 1 << 22;
        const AMX_TILE: u32 = 1 << 24;
        edx & AMX_BF16 != 0 && edx & AMX_TILE != 0
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

/// The level the kernels run at: the lower of [`detected`] and the cap.
pub fn effective() -> Level {
    detected().min(cap())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_named() {
        assert!(Level::Avx2 < Level::AvxVnni && Level::AvxVnni < Level::Avx512);
        assert!(Level::Avx512 < Level::Native);
        let names: Vec<&str> = Level::ALL.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["avx2", "avx-vnni", "avx512", "native"]);
        let e = BadCap {
            value: "sse9".into(),
        }
        .to_string();
        assert!(
            e.contains("\"sse9\"") && e.contains("avx2, avx-vnni"),
            "{e}"
        );
    }

    #[test]
    fn the_effective_level_never_exceeds_the_cpus() {
        assert!(effective() <= detected());
    }
}
