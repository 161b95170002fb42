//! Matryoshka truncation of a local model's vectors (`--dimensions N`).

use ndarray::{s, Array2};
use sage_core::{normalize_rows, Embedder, EmbedderIdentity, Role};

use crate::error::{EmbedError, Result};

/// The first `dimensions` values of each of `inner`'s vectors, renormalised to unit length:
/// how Matryoshka-trained models are used at a smaller width. The width is part of the identity
/// (`pooling` gains `:dims=N`), so caches keep the widths apart.
pub struct Truncated<E> {
    inner: E,
    dimensions: usize,
    identity: EmbedderIdentity,
}

impl<E: Embedder> Truncated<E> {
    /// `inner` cut to `dimensions`; an error for 0 or more than the model gives.
    pub fn new(inner: E, dimensions: usize) -> Result<Truncated<E>> {
        let full = inner.dimension();
        if dimensions == 0 || dimensions > full {
            return Err(EmbedError::Core(sage_core::SageError::InvalidArgument(
                format!(
                    "--dimensions {dimensions}: {} gives {full} values per vector (1..={full})",
                    inner.identity().model_id
                ),
            )));
        }
        let mut identity = inner.identity().clone();
        identity.pooling = format!("{}:dims={dimensions}", identity.pooling);
        identity.normalize = true;
        Ok(Truncated {
            inner,
            dimensions,
            identity,
        })
    }
}

impl<E: Embedder> Embedder for Truncated<E> {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn dimension(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        self.embed_as(texts, Role::Plain)
    }

    pass_through!(
        inner: role_variant,
        count_tokens,
        load_seconds,
        compute,
        matryoshka_trained
    );

    /// The inner model's twin is uncut, of another width than this one's vectors: none is
    /// given, rather than one that cannot be compared.
    fn full_precision(&self) -> sage_core::Result<Option<&dyn Embedder>> {
        Ok(None)
    }

    fn embed_as(&self, texts: &[&str], role: Role) -> sage_core::Result<Array2<f32>> {
        let full = self.inner.embed_as(texts, role)?;
        let mut cut = full.slice(s![.., ..self.dimensions]).to_owned();
        normalize_rows(&mut cut);
        Ok(cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(EmbedderIdentity);

    impl Embedder for Fixed {
        fn identity(&self) -> &EmbedderIdentity {
            &self.0
        }
        fn dimension(&self) -> usize {
            4
        }
        fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
            Ok(Array2::from_shape_fn((texts.len(), 4), |(_, j)| {
                [3.0, 4.0, 12.0, 1.0][j]
            }))
        }
    }

    fn fixed() -> Fixed {
        Fixed(EmbedderIdentity {
            model_id: "m".into(),
            revision: None,
            pooling: "mean".into(),
            normalize: false,
            max_length: 8,
        })
    }

    #[test]
    fn truncates_renormalises_and_says_so_in_the_identity() {
        let t = Truncated::new(fixed(), 2).unwrap();
        assert_eq!(t.embed(&["x"]).unwrap(), ndarray::array![[0.6f32, 0.8]]);
        assert_eq!(t.dimension(), 2);
        assert_eq!(t.identity().pooling, "mean:dims=2");
        assert_ne!(t.identity().cache_key(), fixed().identity().cache_key());
        for bad in [0, 5] {
            let e = Truncated::new(fixed(), bad).err().unwrap().to_string();
            assert!(e.contains("1..=4"), "{e}");
        }
    }
}
