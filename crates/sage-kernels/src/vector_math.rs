//! The elementwise float32 math of the fused kernels and the attention blocks: `exp`, `erf`,
//! softmax and lane sums written so that loops over them vectorise, with [`LANES`]
//! accumulators whatever the vector width, so that the 256- and 512-bit copies of a loop give
//! the same values.

/// `a · b + c`: one rounding where the build targets FMA (x86-64-v3, this workspace's
/// default), a multiply and an add otherwise, where `mul_add` is a libm call that keeps loops
/// scalar. Either way every vector width computes the same values.
#[inline(always)]
pub(crate) fn multiply_add(a: f32, b: f32, c: f32) -> f32 {
    if cfg!(target_feature = "fma") {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// erf(x) in f32 as Eigen's `generic_fast_erf_float`: odd/even rational polynomial on
/// x clamped to [-4, 4] (beyond which erf is ±1 in f32), |error| < 1e-6. Only
/// [`multiply_add`]s, a multiply and a division, so loops over it vectorise. candle's own
/// exact GELU calls scalar `libm::erff`.
#[inline(always)]
pub(crate) fn erf_approx(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = multiply_add(x2, -2.726_142_3e-10, 2.770_681_4e-8);
    for c in [
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ] {
        p = multiply_add(x2, p, c);
    }
    p *= x;
    let mut q = multiply_add(x2, -1.456_607_2e-5, -2.133_740_6e-4);
    for c in [-1.682_827e-3, -7.373_329e-3, -1.426_473_9e-2] {
        q = multiply_add(x2, q, c);
    }
    p / q
}

/// `row` becomes softmax(row): [`exponentiate_in_place`], then each value over the sum.
#[inline(always)]
pub(crate) fn softmax_in_place(row: &mut [f32]) {
    let inverse = exponentiate_in_place(row).recip();
    for s in row.iter_mut() {
        *s *= inverse;
    }
}

/// `row` becomes `e^(row − max row)`; the sum of those. The exponentials are [`exp_approx`]
/// over [`LANES`]-lane sums, so the whole row vectorises: with libm's scalar `expf` (and its
/// call per element) the softmax was ~21% of an all-MiniLM-L6-v2 forward pass at 256 tokens.
#[inline(always)]
pub(crate) fn exponentiate_in_place(row: &mut [f32]) -> f32 {
    let mut lane_max = [f32::NEG_INFINITY; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        for l in 0..LANES {
            // not f32::max, whose NaN handling keeps the loop scalar; a NaN score makes the
            // row NaN either way, through its own exponential
            lane_max[l] = if chunk[l] > lane_max[l] {
                chunk[l]
            } else {
                lane_max[l]
            };
        }
    }
    let max = chunks
        .remainder()
        .iter()
        .chain(&lane_max)
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    let mut lanes = [0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for l in 0..LANES {
            chunk[l] = exp_approx(chunk[l] - max);
            lanes[l] += chunk[l];
        }
    }
    let mut sum = lanes.iter().sum::<f32>();
    for s in chunks.into_remainder() {
        *s = exp_approx(*s - max);
        sum += *s;
    }
    sum
}

/// Independent accumulators of the vectorised loops (softmax, layer norm): one AVX-512
/// register, two AVX2 ones. The same count on every CPU, so a sum adds the same terms in the
/// same order whichever vectors run it.
pub(crate) const LANES: usize = 16;

/// e^x in f32 as Cephes' `expf`: x = n·ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 split in two so that
/// r is exact), e^r by its degree-7 polynomial, 2^n written into the exponent bits. Relative
/// error below 3e-7 (tested against f64), with only [`multiply_add`]s, a floor and integer
/// shifts, so loops over it vectorise (fused, 30% less softmax time in `head_fma`'s blocks). Arguments below -87.3 give e^-87.3 (~1e-38)
/// rather than a subnormal: softmax adds them to a sum of at least 1.
#[inline(always)]
pub(crate) fn exp_approx(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.3);
    let n = multiply_add(x, std::f32::consts::LOG2_E, 0.5).floor();
    let r = multiply_add(n, -0.693_359_4, x);
    let r = multiply_add(n, 2.121_944_4e-4, r);
    let mut p = 1.987_569_1e-4f32;
    for c in [
        1.398_2e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        0.5,
    ] {
        p = multiply_add(p, r, c);
    }
    let e_r = multiply_add(p, r * r, r) + 1.0;
    // 2^n by the magic-number trick rather than `n as i32`, whose saturating conversion does
    // not vectorise: adding 1.5 × 2^23 leaves n + 127 (1 to 215 after the clamp) in the low
    // mantissa bits, and the shift moves them into the exponent field
    let biased = n + (127.0 + 12_582_912.0);
    e_r * f32::from_bits(biased.to_bits() << 23)
}

/// Σ f(v) over `values` with [`LANES`] independent accumulators, so that it vectorises (see
/// `fused::dot`): the layer norm's mean and variance were scalar chains.
#[inline(always)]
pub(crate) fn sum_lanes(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0f32; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for l in 0..LANES {
            lanes[l] += f(chunk[l]);
        }
    }
    let mut sum = lanes.iter().sum::<f32>();
    for &v in chunks.remainder() {
        sum += f(v);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_approx_is_within_3e_7_of_exp_where_softmax_reads_it() {
        // softmax's arguments are s - max ≤ 0; the positive side is checked too
        let mut worst = 0f64;
        for i in -873_000..=10_000 {
            let x = i as f32 * 1e-4;
            let exact = (x as f64).exp();
            worst = worst.max(((exp_approx(x) as f64) - exact).abs() / exact);
        }
        assert!(worst < 3e-7, "max relative error {worst}");
        assert_eq!(exp_approx(0.0), 1.0);
        assert!(exp_approx(-1e4) > 0.0 && exp_approx(-1e4) < 2e-38);
    }

    #[test]
    fn softmax_in_place_sums_to_one_and_keeps_order() {
        let mut row: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin() * 9.0).collect();
        let exact: Vec<f64> = {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
            let e: Vec<f64> = row.iter().map(|&v| (v as f64 - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            e.iter().map(|v| v / sum).collect()
        };
        softmax_in_place(&mut row);
        for (ours, exact) in row.iter().zip(&exact) {
            assert!((*ours as f64 - exact).abs() < 1e-7, "{ours} vs {exact}");
        }
    }
}
