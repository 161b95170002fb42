//! The one interface every local model family implements: a padded batch of token ids in,
//! hidden states out. The families themselves, and the table that names them, are in
//! [`crate::families`].

use candle_core::Tensor;

/// A padded batch of token ids, as every backbone takes it.
pub(crate) struct PaddedBatch {
    /// Token ids, every row padded to the longest.
    pub ids: Vec<Vec<u32>>,
    /// 1 for a real token, 0 for padding, per row.
    pub mask: Vec<Vec<u32>>,
    /// Real tokens per row.
    pub lengths: Vec<usize>,
    /// The pooling averages the first and the last layer (SimCSE's first-last-avg), so the
    /// hidden states returned are that average.
    pub first_last_avg: bool,
}

/// A transformer body: a padded batch in, hidden states [batch, longest, hidden] out (padding
/// rows are left to the pooling's mask).
pub(crate) trait Backbone: Send + Sync {
    /// Width of the hidden states.
    fn hidden_size(&self) -> usize;
    /// The hidden states of `batch`.
    fn forward(&self, batch: &PaddedBatch) -> candle_core::Result<Tensor>;
    /// The kernel its dense products run on where it is not the device's own (`amx-bf16x3`):
    /// a throughput means little without it.
    fn dense_kernel(&self) -> Option<&'static str> {
        None
    }
    /// Starts recording, for every dense product, each input channel's largest magnitude over
    /// the batches run from now on: the calibration of a model to be lowered to int8. From
    /// then on its products and attention run in the order every CPU that runs int8 shares, so
    /// that the ranges, and the int8 model made from them, do not depend on the CPU. `false`
    /// where the model has no products int8 runs.
    fn record_activations(&mut self) -> candle_core::Result<bool> {
        Ok(false)
    }
    /// Quantizes the dense products to int8, smoothed by what [`Backbone::record_activations`]
    /// recorded.
    fn lower_to_int8(&mut self) -> candle_core::Result<()> {
        candle_core::bail!("this model has no int8 products")
    }
}
