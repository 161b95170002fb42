//! Fused CPU kernels (f32) for the encoders: self-attention over packed texts, and the
//! epilogues of the dense layers (bias; bias + GELU; bias + residual + layer norm).
//!
//! Why packing: every dense layer is row-wise, so the padding of a batch is pure waste there
//! (11% of the rows of STS-B batches of 128 length-sorted sentences, and most of a batch that
//! mixes sentences with documents). Batches therefore run with the texts' real tokens back to
//! back, and attention, the one step that mixes tokens, runs per text over its own length.
//! Padded keys get weight exactly 0 in the padded computation, so the result is the same.
//!
//! Why the attention: on sentence-length inputs (STS-B averages about 15 tokens) the tensor path
//! spends more time around its matrix products than in them. Per layer it makes three head-split
//! copies, 2 × batch × heads matrix products of 15 × 32 × 15 (each a gemm call with its packing
//! and dispatch), three elementwise passes (scale, mask, softmax) that each wake the thread pool,
//! and a copy back to token-major order. Here one pass per (text, head) reads queries, keys and
//! values straight from the QKV projection and writes the context in token-major order: the same
//! arithmetic, without the traffic. On x86-64 that pass is `head_fma`'s blocks of queries
//! (scores, softmax and context while the block's scores sit in L1) at the CPU's widest vectors,
//! 2.3–4.6× the plain loops at 16–64 tokens and 1.06–1.18× gemm past them. Where the CPU has
//! AMX, a text longer than 64 tokens runs its head's two products (scores, then context) as
//! calls straight on the same rows instead, the scores on the tiles (`amx::head_scores`), the
//! context on gemm; so do heads whose width the 512-bit blocks cannot take on an AVX-512 CPU,
//! where gemm's 512-bit kernels beat 256-bit blocks past about 96 tokens (see
//! `HeadPaths::for_order`). A batch of a few long documents still spreads over every core, one task
//! per (text, head). The softmax and the epilogues' loops run 16 lanes wide, as AVX-512 where
//! the CPU has it (`with_wide_vectors`): the same values either way.
//!
//! Why the epilogues: after each matrix product the tensor path makes a pass to add the bias,
//! another for the residual, another for the layer norm (or the GELU), each over the whole
//! [tokens, width] activation into a fresh buffer and each a thread-pool round trip. One pass per
//! row, in place on the product, does all of it while the row is in cache.

use candle_core::{CpuStorage, DType, Device, InplaceOp1, Layout, Storage, Tensor};
use rayon::prelude::*;

use crate::vector_math::{erf_approx, softmax_in_place, sum_lanes};

/// Longest text whose attention always runs in one pass per (text, head) (`head_fma`'s blocks,
/// or plain loops where they do not apply); a longer one's two products per head are gemm calls
/// (the scores on AMX tiles) where the CPU has AMX, where the blocks do not apply, or where
/// they run at 256 bits on an AVX-512 CPU: there the t² work is large enough for gemm's
/// packing to pay.
pub const LOOP_MAX_TOKENS: usize = 64;

/// An additive score bias shared by every text (MPNet's relative positions): `values`
/// [heads, span, span], indexed by query and key position within a text; `span` ≥ every length.
#[derive(Clone, Copy, Debug)]
pub struct SharedBias<'a> {
    /// [heads, span, span], row-major.
    pub values: &'a [f32],
    /// The positions the bias covers, at least every text's length.
    pub span: usize,
}

/// The context rows being written, shared by the (text, head) tasks: each writes its own
/// head's columns of its own text's rows, which no other task touches.
#[derive(Clone, Copy)]
struct ContextRows(*mut f32);
// SAFETY: tasks write disjoint elements (see `fused_attention`), and the buffer outlives them.
unsafe impl Send for ContextRows {}
unsafe impl Sync for ContextRows {}

impl ContextRows {
    /// The element `offset` values in.
    ///
    /// # Safety
    /// `offset` is inside the buffer.
    unsafe fn at(&self, offset: usize) -> *mut f32 {
        self.0.add(offset)
    }
}

/// Which kernels [`fused_attention`] runs each (text, head) on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttentionOrder {
    /// The fastest here: the blocks, AMX's tiles or gemm, by length and CPU.
    Fastest,
    /// Kernels whose bits are the same on every x86-64 CPU with AVX2 and FMA, whatever else it
    /// has and whatever `SAGE_CPU` allows, for heads a multiple of 8 wide: the blocks for every
    /// length, at the widest vectors here (256 and 512 bits give the same bits), never AMX's
    /// tiles or gemm. int8 runs its attention so, as its calibration does, so that its vectors
    /// are one set of bytes everywhere. Heads of other widths (or a CPU without FMA) take the
    /// loops up to [`LOOP_MAX_TOKENS`] and gemm past them, as [`AttentionOrder::Fastest`] does.
    Fixed,
}

/// Context vectors [Σ lengths, hidden] from `qkv` [Σ lengths, 3 × hidden] holding the texts
/// back to back without padding (text i is `lengths[i]` rows; queries, keys and values side by
/// side, heads contiguous within each). Scores are `q·k / √d + bias`, softmaxed over the text's
/// own keys: what the tensor path computes on a padded batch, where padded keys get weight 0.
///
/// One task per (text, head), in parallel: a long text alone (a latency call, a batch of a few
/// window-length documents) still uses every core. `order` picks the kernels.
pub fn fused_attention(
    qkv: &Tensor,
    lengths: &[usize],
    heads: usize,
    head_dim: usize,
    bias: Option<SharedBias>,
    order: AttentionOrder,
) -> candle_core::Result<Tensor> {
    attention_on(
        qkv,
        lengths,
        heads,
        head_dim,
        bias,
        HeadPaths::for_order(head_dim, order),
    )
}

/// [`fused_attention`] with each (text, head) on the kernel `paths` gives its length.
fn attention_on(
    qkv: &Tensor,
    lengths: &[usize],
    heads: usize,
    head_dim: usize,
    bias: Option<SharedBias>,
    paths: HeadPaths,
) -> candle_core::Result<Tensor> {
    let hidden = heads * head_dim;
    let width = 3 * hidden;
    let total: usize = lengths.iter().sum();
    if qkv.dims() != [total, width] {
        candle_core::bail!(
            "fused attention: qkv {:?} for {total} tokens of width {width}",
            qkv.dims()
        );
    }
    if let Some(b) = bias {
        if b.values.len() != heads * b.span * b.span || lengths.iter().any(|&l| l > b.span) {
            candle_core::bail!("fused attention: bias is not [heads, span, span] over every text");
        }
    }
    let qkv = qkv.contiguous()?;
    let (storage, layout) = qkv.storage_and_layout();
    let data = cpu_f32(&storage, layout)?;
    let scale = (head_dim as f32).sqrt();
    let mut out = vec![0f32; total * hidden];
    let context = ContextRows(out.as_mut_ptr());
    // (first row, tokens, head) of every task, longest texts first so the pool ends evenly
    let mut tasks = Vec::with_capacity(lengths.len() * heads);
    let mut at = 0;
    for &tokens in lengths {
        tasks.extend((0..heads).map(|head| (at, tokens, head)));
        at += tokens;
    }
    tasks.sort_by_key(|&(_, tokens, _)| std::cmp::Reverse(tokens));
    let job = AttentionJob {
        data,
        width,
        head_dim,
        inverse_scale: scale.recip(),
        bias,
        context,
        paths,
    };
    tasks
        .into_par_iter()
        .for_each_init(HeadScratch::default, |scratch, task| {
            // inline(always): only code inlined into `with_wide_vectors`' AVX-512 copy is
            // compiled for AVX-512; a closure left as its own function ran on AVX2
            with_wide_vectors(
                #[inline(always)]
                || job.run(task, scratch),
            )
        });
    drop(storage);
    Tensor::from_vec(out, (total, hidden), &Device::Cpu)
}

/// The kernels a (text, head) task can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HeadPath {
    /// `head_fma`'s blocks of queries (x86-64 with FMA, heads whole vectors wide).
    Blocks,
    /// Plain loops, up to [`LOOP_MAX_TOKENS`].
    Loops,
    /// Two gemm calls past [`LOOP_MAX_TOKENS`], the scores on AMX tiles where `on_tiles`.
    Gemm,
}

/// Which kernel runs a text of each length.
#[derive(Clone, Copy, Debug)]
struct HeadPaths {
    /// The longest text on [`HeadPath::Blocks`]: 0 where they do not apply.
    blocks_up_to: usize,
    /// Whether the blocks run at 512 bits (AVX-512) rather than 256 (AVX2).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    wide_blocks: bool,
    /// Whether a [`HeadPath::Gemm`] task's query–key products run on AMX tiles
    /// (`amx::head_scores`) rather than as a gemm call.
    on_tiles: bool,
}

impl HeadPaths {
    /// The kernels for heads `head_dim` wide in `order`. [`AttentionOrder::Fastest`]: the
    /// blocks at the widest vectors the CPU has, for every length, except where the blocks are
    /// 256 bits wide but gemm's products are 512 (heads not a multiple of 16 wide on an AVX-512
    /// CPU) or on AMX tiles: there the blocks take the texts up to [`LOOP_MAX_TOKENS`].
    /// Measured on a Zen 5 core (`attention_speed`: one layer over 4,096 tokens, 12 heads of
    /// 32, one thread), against the loops up to 64 tokens and gemm past them: with AVX2 only,
    /// blocks 2.3–3.3× at 16–64 tokens and 1.06–1.08× at 96–256; with AVX-512, 512-bit blocks
    /// 2.9–4.6× at 16–64 tokens, 1.4× at 96, 1.05–1.14× at 128 and 1.12–1.18× at 256 (256-bit
    /// blocks there: 0.6× gemm at 128–256). [`AttentionOrder::Fixed`]: the blocks for every
    /// length wherever they run, never the tiles.
    fn for_order(head_dim: usize, order: AttentionOrder) -> HeadPaths {
        let fastest = order == AttentionOrder::Fastest;
        let on_tiles = fastest && crate::amx_available();
        #[cfg(target_arch = "x86_64")]
        let (blocks_up_to, wide_blocks) = {
            use crate::head_fma::Width;
            match Width::widest(head_dim, true) {
                None => (0, false),
                // AMX's tiles keep the scores past LOOP_MAX_TOKENS: not measured against the
                // blocks (no AMX machine at hand when the blocks were written)
                Some(Width::Avx512) if on_tiles => (LOOP_MAX_TOKENS, true),
                Some(Width::Avx512) => (usize::MAX, true),
                Some(Width::Avx2) if fastest && (on_tiles || crate::wide_vectors()) => {
                    (LOOP_MAX_TOKENS, false)
                }
                Some(Width::Avx2) => (usize::MAX, false),
            }
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (blocks_up_to, wide_blocks) = {
            let _ = head_dim;
            (0, false)
        };
        HeadPaths {
            blocks_up_to,
            wide_blocks,
            on_tiles,
        }
    }

    /// The kernel of a text `tokens` long.
    fn of(self, tokens: usize) -> HeadPath {
        if tokens <= self.blocks_up_to {
            HeadPath::Blocks
        } else if tokens <= LOOP_MAX_TOKENS {
            HeadPath::Loops
        } else {
            HeadPath::Gemm
        }
    }
}

/// What every (text, head) task of [`fused_attention`] reads.
struct AttentionJob<'a> {
    /// The QKV rows of every text, `width` wide.
    data: &'a [f32],
    width: usize,
    head_dim: usize,
    inverse_scale: f32,
    bias: Option<SharedBias<'a>>,
    context: ContextRows,
    paths: HeadPaths,
}

impl AttentionJob<'_> {
    /// The task of text `tokens` long from row `first`, head `head`.
    #[inline(always)]
    fn run(&self, (first, tokens, head): (usize, usize, usize), scratch: &mut HeadScratch) {
        if tokens == 0 {
            return;
        }
        let (width, head_dim) = (self.width, self.head_dim);
        let hidden = width / 3;
        let rows = &self.data[first * width..(first + tokens) * width];
        let q_at = head * head_dim;
        let k_at = hidden + q_at;
        let v_at = 2 * hidden + q_at;
        // this task's block of the output: its text's rows, its head's columns
        // SAFETY: the first row of this text, at its head's first column, is inside `out`
        let block = unsafe { self.context.at(first * hidden + q_at) };
        let path = self.paths.of(tokens);
        #[cfg(target_arch = "x86_64")]
        if path == HeadPath::Blocks {
            let head = crate::head_fma::Head {
                rows,
                width,
                tokens,
                head_dim,
                queries: q_at,
                keys: k_at,
                values: v_at,
                inverse_scale: self.inverse_scale,
                bias: self.bias.map(|b| {
                    (
                        &b.values[head * b.span * b.span..][..b.span * b.span],
                        b.span,
                    )
                }),
            };
            let width = if self.paths.wide_blocks {
                crate::head_fma::Width::Avx512
            } else {
                crate::head_fma::Width::Avx2
            };
            // SAFETY: the blocks apply here at this width (`HeadPaths::for_order` asked
            // `Width::widest`); the rows hold the text's tokens, `width` wide, each head's
            // columns inside; `block` is this task's rows at stride `hidden`, written by no
            // other task
            unsafe { crate::head_fma::attend(width, &head, block, hidden, &mut scratch.blocks) };
            return;
        }
        let (scores, stride) = self.scores(rows, tokens, q_at, k_at, scratch);
        for i in 0..tokens {
            let row = &mut scores[i * stride..][..tokens];
            for s in row.iter_mut() {
                *s *= self.inverse_scale;
            }
            if let Some(b) = self.bias {
                let bias_row = &b.values[(head * b.span + i) * b.span..][..tokens];
                for (s, b) in row.iter_mut().zip(bias_row) {
                    *s += b;
                }
            }
            softmax_in_place(row);
        }
        if path == HeadPath::Loops {
            for i in 0..tokens {
                let probabilities = &scores[i * stride..][..tokens];
                // SAFETY: row i of this task's block, head_dim values inside `out`
                let row =
                    unsafe { std::slice::from_raw_parts_mut(block.add(i * hidden), head_dim) };
                for (j, &p) in probabilities.iter().enumerate() {
                    let v = &rows[j * width + v_at..][..head_dim];
                    for (o, v) in row.iter_mut().zip(v) {
                        *o += p * v;
                    }
                }
            }
        } else {
            // SAFETY: the destination is this task's tokens × head_dim block at row stride
            // `hidden`, inside `out` and written by no other task; the weights are tokens ×
            // tokens at row stride `stride` inside `scores`; the values block is tokens ×
            // head_dim at row stride `width` inside `rows`.
            unsafe {
                gemm::gemm(
                    tokens,
                    head_dim,
                    tokens,
                    block,
                    1,
                    hidden as isize,
                    false,
                    scores.as_ptr(),
                    1,
                    stride as isize,
                    rows.as_ptr().add(v_at),
                    1,
                    width as isize,
                    0f32,
                    1f32,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
        }
    }

    /// The text's query–key products, unscaled: row i of the result (at `stride`) holds
    /// query i's `tokens` products.
    #[inline(always)]
    fn scores<'s>(
        &self,
        rows: &[f32],
        tokens: usize,
        q_at: usize,
        k_at: usize,
        scratch: &'s mut HeadScratch,
    ) -> (&'s mut [f32], usize) {
        let (width, head_dim) = (self.width, self.head_dim);
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if self.paths.on_tiles && tokens > LOOP_MAX_TOKENS {
            let input = crate::amx::HeadInput {
                rows,
                width,
                tokens,
                queries: q_at,
                keys: k_at,
                head_dim,
            };
            return crate::amx::head_scores(input, &mut scratch.tiles);
        }
        // every element is written below (loop or gemm with alpha 0), so a reused buffer
        // needs no zeroing (the zeroing was estimated at ~10% of attention at window length:
        // 256 KB against a 2 M multiply-add product per task; not profiled on its own)
        if scratch.scores.len() < tokens * tokens {
            scratch.scores.resize(tokens * tokens, 0f32);
        }
        let scores = &mut scratch.scores[..tokens * tokens];
        if tokens <= LOOP_MAX_TOKENS {
            for i in 0..tokens {
                let q = &rows[i * width + q_at..][..head_dim];
                for (j, score) in scores[i * tokens..][..tokens].iter_mut().enumerate() {
                    *score = dot(q, &rows[j * width + k_at..][..head_dim]);
                }
            }
            return (scores, tokens);
        }
        // SAFETY: the query block is rows × head_dim at row stride `width` from q_at, the key
        // block the same from k_at (read as its transpose), both inside `rows`; the
        // destination is the tokens × tokens `scores`.
        unsafe {
            gemm::gemm(
                tokens,
                tokens,
                head_dim,
                scores.as_mut_ptr(),
                1,
                tokens as isize,
                false,
                rows.as_ptr().add(q_at),
                1,
                width as isize,
                rows.as_ptr().add(k_at),
                width as isize,
                1,
                0f32,
                1f32,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
        (scores, tokens)
    }
}

/// A worker's buffers for its (text, head) tasks, reused from one to the next.
#[derive(Default)]
struct HeadScratch {
    /// The scores of the loops and of gemm.
    scores: Vec<f32>,
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    tiles: crate::amx::HeadScratch,
    #[cfg(target_arch = "x86_64")]
    blocks: crate::head_fma::HeadScratch,
}

/// A dense layer's weight packed once, at load, for the AMX kernel (`amx.rs`).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub use crate::amx::PackedWeight;

/// No AMX kernel off x86_64 Linux: nothing is ever packed there.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub enum PackedWeight {}

/// `weight` [n, k] (f32 on the CPU) packed for the AMX kernel where this CPU runs it and the
/// kernel covers its width; `None` otherwise, and gemm runs its products.
pub fn pack_for_cpu(weight: &Tensor) -> candle_core::Result<Option<PackedWeight>> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        if !crate::amx::available() {
            return Ok(None);
        }
        let (n, k) = weight.dims2()?;
        let values = weight.flatten_all()?.to_vec1::<f32>()?;
        Ok(PackedWeight::of(&values, n, k))
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = weight;
        Ok(None)
    }
}

/// `x · weightᵀ` for `x` [rows, k] and a dense layer's `weight` [n, k], both f32 on the CPU.
/// With `packed` (the same weight, see [`pack_for_cpu`]) the product runs on AMX tiles;
/// otherwise it is the product candle's `matmul` computes (the same gemm call, over every core),
/// written into a buffer gemm fills rather than one zeroed first: candle's zeroing was ~3.5% of
/// a MiniLM forward pass, for memory the product overwrites anyway.
pub fn dense_product(
    x: &Tensor,
    weight: &Tensor,
    packed: Option<&PackedWeight>,
) -> candle_core::Result<Tensor> {
    let (rows, k) = x.dims2()?;
    let (n, weight_k) = weight.dims2()?;
    if weight_k != k {
        candle_core::bail!("dense product: x [{rows}, {k}] against weight [{n}, {weight_k}]");
    }
    let x = x.contiguous()?;
    if let Some(packed) = packed {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        {
            if (packed.n(), packed.k()) != (n, k) {
                candle_core::bail!(
                    "dense product: weight [{n}, {k}] packed as [{}, {}]",
                    packed.n(),
                    packed.k()
                );
            }
            let (x_storage, x_layout) = x.storage_and_layout();
            let out = crate::amx::product(cpu_f32(&x_storage, x_layout)?, packed);
            drop(x_storage);
            return Tensor::from_vec(out, (rows, n), &Device::Cpu);
        }
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        match *packed {}
    }
    let weight = weight.contiguous()?;
    let (x_storage, x_layout) = x.storage_and_layout();
    let (w_storage, w_layout) = weight.storage_and_layout();
    let (lhs, rhs) = (
        cpu_f32(&x_storage, x_layout)?,
        cpu_f32(&w_storage, w_layout)?,
    );
    let mut out: Vec<f32> = Vec::with_capacity(rows * n);
    let threads = rayon::current_num_threads();
    // SAFETY: the destination is rows × n at row stride n, inside `out`'s capacity; with
    // read_dst false gemm writes every element of it and reads none. lhs is x's rows × k at row
    // stride k; rhs is weightᵀ (k × n): element (kk, j) is weight[j][kk], column stride k.
    unsafe {
        gemm::gemm(
            rows,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            lhs.as_ptr(),
            1,
            k as isize,
            rhs.as_ptr(),
            k as isize,
            1,
            0f32,
            1f32,
            false,
            false,
            false,
            if threads > 1 {
                gemm::Parallelism::Rayon(threads)
            } else {
                gemm::Parallelism::None
            },
        );
        out.set_len(rows * n);
    }
    drop((x_storage, w_storage));
    Tensor::from_vec(out, (rows, n), &Device::Cpu)
}

/// Whether the fused kernels apply on `device` in `dtype`: on the CPU in f32, at any length.
pub fn fused_applies(device: &Device, dtype: DType) -> bool {
    device.is_cpu() && dtype == DType::F32
}

/// `product + bias`, in place: `product` [rows, width] is a fresh matrix product (its storage
/// is overwritten, so it must not be shared), `bias` \[width\].
pub fn add_bias(product: Tensor, bias: &[f32]) -> candle_core::Result<Tensor> {
    apply(product, Epilogue::Bias(bias))
}

/// `gelu(product + bias)` in place, row by row: `product` [rows, width] as in [`add_bias`].
/// `exact` selects erf GELU (BERT's "gelu") over the tanh approximation ("gelu_new").
pub fn bias_gelu(product: Tensor, bias: &[f32], exact: bool) -> candle_core::Result<Tensor> {
    apply(product, Epilogue::BiasGelu { bias, exact })
}

/// The parameters of a layer norm on the host.
pub struct HostNorm {
    /// The scale, one per column.
    pub gamma: Vec<f32>,
    /// The shift, one per column.
    pub beta: Vec<f32>,
    /// Added to the variance.
    pub eps: f32,
}

/// `layer_norm(product + bias + residual)` in place, row by row: `product` as in [`add_bias`],
/// `residual` [rows, width].
pub fn bias_residual_norm(
    product: Tensor,
    bias: &[f32],
    residual: &Tensor,
    norm: &HostNorm,
) -> candle_core::Result<Tensor> {
    if residual.dims() != product.dims() || norm.gamma.len() != bias.len() {
        candle_core::bail!(
            "bias_residual_norm: product {:?}, residual {:?}, norm {}",
            product.dims(),
            residual.dims(),
            norm.gamma.len()
        );
    }
    let residual = residual.contiguous()?;
    let (storage, layout) = residual.storage_and_layout();
    let residual_values = cpu_f32(&storage, layout)?;
    let out = apply(
        product,
        Epilogue::BiasResidualNorm {
            bias,
            residual: residual_values,
            norm,
        },
    );
    drop(storage);
    out
}

/// What a dense layer's epilogue does to each row of its product. In place, because a fresh
/// [rows, width] buffer per epilogue costs an allocation, page faults and zeroing that showed
/// in profiles at ~7% of a MiniLM forward pass.
pub(crate) enum Epilogue<'a> {
    Bias(&'a [f32]),
    BiasGelu {
        bias: &'a [f32],
        exact: bool,
    },
    BiasResidualNorm {
        bias: &'a [f32],
        residual: &'a [f32],
        norm: &'a HostNorm,
    },
}

impl Epilogue<'_> {
    fn bias(&self) -> &[f32] {
        match self {
            Epilogue::Bias(bias)
            | Epilogue::BiasGelu { bias, .. }
            | Epilogue::BiasResidualNorm { bias, .. } => bias,
        }
    }

    /// An error unless this epilogue fits a product of `rows` rows of `width`.
    pub(crate) fn check(&self, rows: usize, width: usize) -> candle_core::Result<()> {
        if self.bias().len() != width {
            candle_core::bail!(
                "dense epilogue: bias {} for a product of width {width}",
                self.bias().len()
            );
        }
        if let Epilogue::BiasResidualNorm { residual, .. } = self {
            if residual.len() != rows * width {
                candle_core::bail!("dense epilogue: residual is not [{rows}, {width}]");
            }
        }
        Ok(())
    }

    /// Row `index` of the product, `row`, becomes the output row.
    #[inline(always)]
    pub(crate) fn row(&self, row: &mut [f32], index: usize) {
        match *self {
            Epilogue::Bias(bias) => {
                for (x, &b) in row.iter_mut().zip(bias) {
                    *x += b;
                }
            }
            // the GELU variant is chosen outside the loops so that each loop vectorises
            Epilogue::BiasGelu { bias, exact: true } => {
                for (x, &b) in row.iter_mut().zip(bias) {
                    let v = *x + b;
                    *x = 0.5 * v * (1.0 + erf_approx(v * std::f32::consts::FRAC_1_SQRT_2));
                }
            }
            Epilogue::BiasGelu { bias, exact: false } => {
                for (x, &b) in row.iter_mut().zip(bias) {
                    let v = *x + b;
                    let inner = (2.0 / std::f32::consts::PI).sqrt() * (v + 0.044_715 * v * v * v);
                    *x = 0.5 * v * (1.0 + inner.tanh());
                }
            }
            Epilogue::BiasResidualNorm {
                bias,
                residual,
                norm,
            } => {
                let width = row.len();
                let residual = &residual[index * width..][..width];
                for ((x, &b), &r) in row.iter_mut().zip(bias).zip(residual) {
                    *x += b + r;
                }
                // two passes (mean, then squared deviations): no cancellation on large means
                let mean = sum_lanes(row, |v| v) / width as f32;
                let var = sum_lanes(row, |v| (v - mean) * (v - mean)) / width as f32;
                let inv_std = (var + norm.eps).sqrt().recip();
                for ((x, g), b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
                    *x = (*x - mean) * inv_std * g + b;
                }
            }
        }
    }
}

impl InplaceOp1 for Epilogue<'_> {
    fn name(&self) -> &'static str {
        "sage-embed dense epilogue"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let (Some((start, end)), CpuStorage::F32(values)) = (layout.contiguous_offsets(), storage)
        else {
            candle_core::bail!("dense epilogue: needs a contiguous f32 CPU tensor");
        };
        let width = self.bias().len();
        values[start..end]
            .par_chunks_mut(width * ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, rows)| {
                // inline(always): see fused_attention
                with_wide_vectors(
                    #[inline(always)]
                    || {
                        for (i, row) in rows.chunks_exact_mut(width).enumerate() {
                            self.row(row, task * ROWS_PER_TASK + i);
                        }
                    },
                )
            });
        Ok(())
    }
}

fn apply(product: Tensor, epilogue: Epilogue) -> candle_core::Result<Tensor> {
    let (rows, width) = product.dims2()?;
    epilogue.check(rows, width)?;
    let product = product.contiguous()?;
    product.inplace_op1(&epilogue)?;
    Ok(product)
}

/// Rows per parallel task of the epilogues: enough work to pay for the task.
const ROWS_PER_TASK: usize = 16;

/// The values of a contiguous f32 CPU tensor, without a copy.
pub fn cpu_f32<'a>(
    storage: &'a Storage,
    layout: &candle_core::Layout,
) -> candle_core::Result<&'a [f32]> {
    match (storage, layout.contiguous_offsets()) {
        (Storage::Cpu(cpu), Some((start, end))) => Ok(&cpu.as_slice::<f32>()?[start..end]),
        _ => candle_core::bail!("fused kernels need a contiguous f32 CPU tensor"),
    }
}

/// Runs `f` compiled for AVX-512 where this CPU has it (F, BW, DQ, VL: [`crate::wide_vectors`]),
/// as built otherwise:
/// the build targets x86-64-v3 (AVX2), and at 16 lanes the attention's softmax and the
/// epilogues' loops do half the instructions. Both copies compute the same values: the loops
/// use [`LANES`](crate::vector_math::LANES) accumulators, and [`multiply_add`](crate::vector_math::multiply_add) fuses (or not) alike in both, so only the
/// vector width differs.
#[inline(always)]
pub(crate) fn with_wide_vectors<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
        fn wide<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if crate::wide_vectors() {
            // SAFETY: the CPU has the features `wide` is compiled for
            return unsafe { wide(f) };
        }
    }
    f()
}

/// Dot product with eight independent accumulators, so that it vectorises (a single running
/// sum is a dependency chain the compiler may not reorder).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = a.len() / 8 * 8;
    for (x, y) in a[..chunks].chunks_exact(8).zip(b[..chunks].chunks_exact(8)) {
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    let mut sum = lanes.iter().sum::<f32>();
    for (x, y) in a[chunks..].iter().zip(&b[chunks..]) {
        sum += x * y;
    }
    sum
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    use super::*;

    fn max_difference(a: &Tensor, b: &Tensor) -> f32 {
        let a = a.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let b = b.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(&b)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
    }

    /// Random QKV rows for texts of `lengths`, `heads` of `head_dim`, and a bias over them.
    fn draw_attention(
        lengths: &[usize],
        heads: usize,
        head_dim: usize,
        seed: u64,
    ) -> (Tensor, Vec<f32>, usize) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let total: usize = lengths.iter().sum();
        let qkv: Vec<f32> = (0..total * 3 * heads * head_dim)
            .map(|_| rng.gen_range(-2.0..2.0))
            .collect();
        let span = lengths.iter().copied().max().unwrap_or(0);
        let bias = (0..heads * span * span)
            .map(|_| rng.gen_range(-1.0..1.0))
            .collect();
        let qkv = Tensor::from_vec(qkv, (total, 3 * heads * head_dim), &Device::Cpu).unwrap();
        (qkv, bias, span)
    }

    /// softmax(q·kᵀ/√d + bias)·v per text and head, in f64.
    fn reference_attention(
        qkv: &Tensor,
        lengths: &[usize],
        heads: usize,
        head_dim: usize,
        bias: Option<SharedBias>,
    ) -> Vec<f64> {
        let data = qkv.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let (hidden, width) = (heads * head_dim, 3 * heads * head_dim);
        let mut out = vec![0f64; data.len() / 3];
        let mut first = 0;
        for &tokens in lengths {
            let at = |row: usize, column: usize| f64::from(data[(first + row) * width + column]);
            for head in 0..heads {
                let (q, k, v) = (
                    head * head_dim,
                    hidden + head * head_dim,
                    2 * hidden + head * head_dim,
                );
                for i in 0..tokens {
                    let scores: Vec<f64> = (0..tokens)
                        .map(|j| {
                            let dot: f64 = (0..head_dim).map(|d| at(i, q + d) * at(j, k + d)).sum();
                            let b = bias.map_or(0.0, |b| {
                                f64::from(b.values[(head * b.span + i) * b.span + j])
                            });
                            dot / (head_dim as f64).sqrt() + b
                        })
                        .collect();
                    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let sum: f64 = weights.iter().sum();
                    for d in 0..head_dim {
                        out[(first + i) * hidden + head * head_dim + d] =
                            (0..tokens).map(|j| weights[j] * at(j, v + d)).sum::<f64>() / sum;
                    }
                }
            }
            first += tokens;
        }
        out
    }

    /// Every attention path this CPU runs for heads `head_dim` wide, named: what
    /// [`HeadPaths::for_order`] picks, loops and gemm (off tiles), and the blocks at every length at
    /// each width the CPU has (a line says when the 512-bit ones cannot run).
    fn runnable_paths(head_dim: usize) -> Vec<(&'static str, HeadPaths)> {
        let no_blocks = HeadPaths {
            blocks_up_to: 0,
            wide_blocks: false,
            on_tiles: false,
        };
        #[allow(unused_mut)]
        let mut paths = vec![
            (
                "here",
                HeadPaths::for_order(head_dim, AttentionOrder::Fastest),
            ),
            (
                "fixed order",
                HeadPaths::for_order(head_dim, AttentionOrder::Fixed),
            ),
            ("loops and gemm", no_blocks),
        ];
        #[cfg(target_arch = "x86_64")]
        for (name, wide) in [("256-bit blocks", false), ("512-bit blocks", true)] {
            let width = crate::head_fma::Width::widest(head_dim, wide);
            if width.is_some_and(|w| (w == crate::head_fma::Width::Avx512) == wide) {
                let blocks = HeadPaths {
                    blocks_up_to: usize::MAX,
                    wide_blocks: wide,
                    ..no_blocks
                };
                paths.push((name, blocks));
            } else if wide && head_dim.is_multiple_of(16) {
                eprintln!(
                    "skipped: 512-bit attention blocks, heads of {head_dim}: this CPU has no \
                     AVX-512 F/BW/DQ/VL (or SAGE_CPU caps it)"
                );
            }
        }
        paths
    }

    /// Every path this CPU can run (the blocks at every length, loops and gemm, and what
    /// [`HeadPaths::for_order`] picks) against the f64 reference, on lengths around the blocks'
    /// six rows and sixteen keys and the loops' limit, heads of one to eight vectors.
    #[test]
    fn every_attention_path_here_matches_a_double_precision_reference() {
        let lengths = [
            1,
            5,
            6,
            7,
            16,
            17,
            23,
            LOOP_MAX_TOKENS,
            LOOP_MAX_TOKENS + 1,
            100,
        ];
        for (seed, (heads, head_dim)) in
            [(3, 8), (2, 16), (2, 24), (2, 32), (1, 48), (1, 64), (2, 20)]
                .into_iter()
                .enumerate()
        {
            let (qkv, bias, span) = draw_attention(&lengths, heads, head_dim, seed as u64);
            let paths = runnable_paths(head_dim);
            for with_bias in [false, true] {
                let bias = with_bias.then_some(SharedBias {
                    values: &bias,
                    span,
                });
                let reference = reference_attention(&qkv, &lengths, heads, head_dim, bias);
                let mut outputs = Vec::new();
                for (name, paths) in &paths {
                    let ours = attention_on(&qkv, &lengths, heads, head_dim, bias, *paths)
                        .unwrap()
                        .flatten_all()
                        .unwrap()
                        .to_vec1::<f32>()
                        .unwrap();
                    let worst = ours
                        .iter()
                        .zip(&reference)
                        .map(|(&o, &r)| (f64::from(o) - r).abs())
                        .fold(0f64, f64::max);
                    // on AMX tiles the scores are bf16 halves, within a few 1e-5 (encoder.rs)
                    let tolerance = if paths.on_tiles { 5e-5 } else { 1e-5 };
                    assert!(
                        worst < tolerance,
                        "{name}, heads of {head_dim}, bias {with_bias}: max |difference| {worst}"
                    );
                    outputs.push((*name, ours));
                }
                // one FMA chain per value in the same order: the widths agree bit for bit
                let blocks: Vec<_> = outputs
                    .iter()
                    .filter(|(n, _)| n.ends_with("blocks"))
                    .collect();
                if let [(_, narrow), (_, wide)] = blocks[..] {
                    assert!(
                        narrow == wide,
                        "heads of {head_dim}: 256- and 512-bit blocks differ"
                    );
                }
                // int8's attention: what a CPU with AVX2 alone computes, whatever this one has
                let output = |wanted: &str| {
                    outputs
                        .iter()
                        .find(|(name, _)| *name == wanted)
                        .map(|(_, o)| o)
                };
                if let (Some(fixed), Some(narrow)) =
                    (output("fixed order"), output("256-bit blocks"))
                {
                    assert!(
                        fixed == narrow,
                        "heads of {head_dim}: the fixed order is not the 256-bit blocks' bits"
                    );
                }
            }
        }
    }

    /// One worker's scratch over texts that grow and shrink, at each width the CPU runs: each
    /// text's context is the f64 reference's whatever the scratch held before.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_blocks_reuse_one_scratch_over_any_order_of_lengths() {
        use crate::head_fma::{attend, Head, HeadScratch, Width};
        let (heads, head_dim) = (2, 48);
        for allow_wide in [false, true] {
            let Some(width) = Width::widest(head_dim, allow_wide) else {
                continue;
            };
            let mut scratch = HeadScratch::default();
            for (seed, tokens) in [1, 100, 7, 65, 23, 23, 65, 7, 100, 1]
                .into_iter()
                .enumerate()
            {
                let (qkv, _, _) = draw_attention(&[tokens], heads, head_dim, seed as u64);
                let reference = reference_attention(&qkv, &[tokens], heads, head_dim, None);
                let rows = qkv.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                let hidden = heads * head_dim;
                let mut out = vec![f32::NAN; tokens * hidden];
                for head in 0..heads {
                    let task = Head {
                        rows: &rows,
                        width: 3 * hidden,
                        tokens,
                        head_dim,
                        queries: head * head_dim,
                        keys: hidden + head * head_dim,
                        values: 2 * hidden + head * head_dim,
                        inverse_scale: (head_dim as f32).sqrt().recip(),
                        bias: None,
                    };
                    // SAFETY: `width` is what `widest` allows here; `out` holds the text's
                    // rows, `hidden` wide
                    unsafe {
                        attend(
                            width,
                            &task,
                            out.as_mut_ptr().add(head * head_dim),
                            hidden,
                            &mut scratch,
                        )
                    };
                }
                let worst = out
                    .iter()
                    .zip(&reference)
                    .map(|(&o, &r)| (f64::from(o) - r).abs())
                    .fold(0f64, f64::max);
                assert!(
                    worst < 1e-5,
                    "{width:?}, {tokens} tokens: max |difference| {worst}"
                );
            }
        }
    }

    /// Seconds of one layer's attention over 4,096 tokens (12 heads of 32, one thread) on each
    /// path, at several text lengths: a measurement to read (`--ignored --nocapture`, with
    /// `SAGE_CPU=avx2` for an AVX2 CPU's choice), nothing asserted.
    #[test]
    #[ignore]
    fn attention_speed() {
        let (heads, head_dim) = (12, 32);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for tokens in [16, 32, 64, 96, 128, 256] {
            let lengths = vec![tokens; 4096 / tokens];
            let (qkv, _, _) = draw_attention(&lengths, heads, head_dim, 1);
            let gmac = (lengths.len() * heads * 2 * tokens * tokens * head_dim) as f64 / 1e9;
            let mut line = format!("{tokens:>4} tokens:");
            let paths = runnable_paths(head_dim);
            for (name, paths) in paths {
                let seconds = pool.install(|| {
                    crate::tests::fastest_seconds(7, || {
                        attention_on(&qkv, &lengths, heads, head_dim, None, paths).unwrap();
                    })
                });
                line += &format!(
                    "  {name} {:.2} ms ({:.1} GMAC/s)",
                    seconds * 1e3,
                    gmac / seconds
                );
            }
            eprintln!("{line}");
        }
    }

    #[test]
    fn gelu_epilogue_matches_candles_gelus() {
        let grid: Vec<f32> = (-60_000..=60_000).map(|i| i as f32 * 1e-4).collect();
        // 120,001 = 17,143 rows × 7 columns
        let t = Tensor::from_vec(grid, (17_143, 7), &Device::Cpu).unwrap();
        let zero = [0f32; 7];
        let exact = max_difference(
            &bias_gelu(t.copy().unwrap(), &zero, true).unwrap(),
            &t.gelu_erf().unwrap(),
        );
        assert!(exact < 2e-6, "erf GELU: max |error| {exact}");
        let tanh = max_difference(
            &bias_gelu(t.copy().unwrap(), &zero, false).unwrap(),
            &t.gelu().unwrap(),
        );
        assert!(tanh < 2e-6, "tanh GELU: max |error| {tanh}");
        let bias: Vec<f32> = (0..7).map(|i| i as f32 - 3.0).collect();
        let shifted = t
            .broadcast_add(&Tensor::new(bias.as_slice(), &Device::Cpu).unwrap())
            .unwrap();
        let with_bias = max_difference(
            &bias_gelu(t.copy().unwrap(), &bias, true).unwrap(),
            &shifted.gelu_erf().unwrap(),
        );
        assert!(
            with_bias < 2e-6,
            "erf GELU with bias: max |error| {with_bias}"
        );
    }

    #[test]
    fn dense_product_equals_candles_matmul() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for (rows, k, n) in [(1, 3, 2), (37, 48, 20), (130, 64, 96)] {
            let mut random = |count: usize| -> Vec<f32> {
                (0..count).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
            };
            let x = Tensor::from_vec(random(rows * k), (rows, k), &Device::Cpu).unwrap();
            let weight = Tensor::from_vec(random(n * k), (n, k), &Device::Cpu).unwrap();
            let ours = dense_product(&x, &weight, None).unwrap();
            let theirs = x.matmul(&weight.t().unwrap()).unwrap();
            assert_eq!(ours.dims(), [rows, n]);
            assert_eq!(max_difference(&ours, &theirs), 0.0, "{rows}×{k}·{n}");
            // on AMX (amx.rs): within a few float32 roundings of the row's absolute sum (≤ k)
            if let Some(packed) = pack_for_cpu(&weight).unwrap() {
                let tiles = dense_product(&x, &weight, Some(&packed)).unwrap();
                assert_eq!(tiles.dims(), [rows, n]);
                let difference = max_difference(&tiles, &theirs);
                assert!(
                    difference <= 4e-6 * k as f32,
                    "{rows}×{k}·{n}: {difference}"
                );
            }
        }
        let x = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
        let weight = Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap();
        assert!(dense_product(&x, &weight, None).is_err());
    }

    #[test]
    fn bias_epilogue_matches_candles_broadcast_add() {
        let t = Tensor::from_vec(
            (0..60).map(|i| i as f32 * 0.5).collect(),
            (12, 5),
            &Device::Cpu,
        )
        .unwrap();
        let bias = [1.0f32, -2.0, 0.25, 8.0, -0.5];
        let ours = add_bias(t.copy().unwrap(), &bias).unwrap();
        let theirs = t
            .broadcast_add(&Tensor::new(&bias[..], &Device::Cpu).unwrap())
            .unwrap();
        assert_eq!(max_difference(&ours, &theirs), 0.0);
        assert!(add_bias(t.copy().unwrap(), &bias[..4]).is_err());
    }

    #[test]
    fn norm_epilogue_matches_candles_layer_norm() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let (rows, width) = (37, 48);
        let mut random = |scale: f32, offset: f32, n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| offset + scale * rng.gen_range(-1.0f32..1.0))
                .collect()
        };
        let product =
            Tensor::from_vec(random(3.0, 5.0, rows * width), (rows, width), &Device::Cpu).unwrap();
        let residual =
            Tensor::from_vec(random(1.0, 0.0, rows * width), (rows, width), &Device::Cpu).unwrap();
        let bias = random(0.5, 0.0, width);
        let norm = HostNorm {
            gamma: random(0.5, 1.0, width),
            beta: random(0.2, 0.0, width),
            eps: 1e-12,
        };
        let ours = bias_residual_norm(product.copy().unwrap(), &bias, &residual, &norm).unwrap();
        let summed = product
            .broadcast_add(&Tensor::new(bias.as_slice(), &Device::Cpu).unwrap())
            .unwrap()
            .add(&residual)
            .unwrap();
        let theirs = candle_nn::LayerNorm::new(
            Tensor::new(norm.gamma.as_slice(), &Device::Cpu).unwrap(),
            Tensor::new(norm.beta.as_slice(), &Device::Cpu).unwrap(),
            1e-12,
        );
        let worst = max_difference(
            &ours,
            &candle_core::Module::forward(&theirs, &summed).unwrap(),
        );
        assert!(worst < 1e-5, "max |difference| {worst}");
    }
}
