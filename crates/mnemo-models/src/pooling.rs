//! Mean pooling of a transformer's last hidden state over the attention mask, followed by L2
//! normalisation — the sentence-transformers recipe for all-MiniLM-L6-v2.

use mnemo_core::embed::l2_normalize;

/// A borrowed `[rows, seq_len, dim]` hidden-state tensor (row-major) with its `[rows, seq_len]`
/// attention mask (1 for a real token, 0 for padding).
#[derive(Debug, Clone, Copy)]
pub struct PoolingInput<'a> {
    pub hidden: &'a [f32],
    pub mask: &'a [i64],
    pub rows: usize,
    pub seq_len: usize,
    pub dim: usize,
}

/// Averages each row's token vectors where the mask is set, then scales the mean to unit length.
///
/// Returns one `dim`-long vector per row. Errors (as a `Model` error) when the slice lengths do not
/// match the stated shape. A row whose mask is all zero yields the zero vector, which callers never
/// see in practice because the tokenizer always adds `[CLS]` and `[SEP]`.
pub fn mean_pool_normalized(input: PoolingInput<'_>) -> mnemo_core::Result<Vec<Vec<f32>>> {
    let PoolingInput {
        hidden,
        mask,
        rows,
        seq_len,
        dim,
    } = input;
    // The shape comes from the model's output: checked products, so a bogus one cannot overflow.
    let tokens = rows.checked_mul(seq_len);
    if tokens.and_then(|t| t.checked_mul(dim)) != Some(hidden.len()) || tokens != Some(mask.len()) {
        return Err(mnemo_core::Error::Model {
            reason: format!(
                "hidden state has {} values and mask {} for shape [{rows}, {seq_len}, {dim}]",
                hidden.len(),
                mask.len()
            ),
        });
    }
    let mut out = Vec::with_capacity(rows);
    for r in 0..rows {
        let mut acc = vec![0f64; dim];
        let mut count = 0f64;
        for t in 0..seq_len {
            if mask[r * seq_len + t] == 0 {
                continue;
            }
            count += 1.0;
            let base = (r * seq_len + t) * dim;
            for (a, h) in acc.iter_mut().zip(&hidden[base..base + dim]) {
                *a += f64::from(*h);
            }
        }
        // sentence-transformers clamps the token count at 1e-9 to avoid dividing by zero.
        let denom = count.max(1e-9);
        let mut v: Vec<f32> = acc.into_iter().map(|a| (a / denom) as f32).collect();
        l2_normalize(&mut v);
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn masked_tokens_are_ignored() {
        // Two rows, three tokens, dim 2. Row 0 uses tokens 0 and 1; row 1 only token 0.
        let hidden = [
            1.0, 0.0, 3.0, 0.0, 100.0, 100.0, 0.0, 2.0, 50.0, -50.0, 9.0, 9.0,
        ];
        let mask = [1, 1, 0, 1, 0, 0];
        let out = mean_pool_normalized(PoolingInput {
            hidden: &hidden,
            mask: &mask,
            rows: 2,
            seq_len: 3,
            dim: 2,
        })
        .unwrap();
        assert_eq!(out.len(), 2);
        assert!((out[0][0] - 1.0).abs() < 1e-6 && out[0][1].abs() < 1e-6);
        assert!(out[1][0].abs() < 1e-6 && (out[1][1] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn output_is_unit_length_mean_direction() {
        let hidden = [1.0, 2.0, 3.0, 4.0];
        let mask = [1, 1];
        let out = mean_pool_normalized(PoolingInput {
            hidden: &hidden,
            mask: &mask,
            rows: 1,
            seq_len: 2,
            dim: 2,
        })
        .unwrap();
        // Mean is (2, 3); normalised (2, 3) / sqrt(13).
        let s = 13f32.sqrt();
        assert!((out[0][0] - 2.0 / s).abs() < 1e-6);
        assert!((out[0][1] - 3.0 / s).abs() < 1e-6);
        assert!((norm(&out[0]) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn all_masked_row_is_zero_not_nan() {
        let hidden = [1.0, 2.0];
        let mask = [0];
        let out = mean_pool_normalized(PoolingInput {
            hidden: &hidden,
            mask: &mask,
            rows: 1,
            seq_len: 1,
            dim: 2,
        })
        .unwrap();
        assert_eq!(out[0], vec![0.0, 0.0]);
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        let err = mean_pool_normalized(PoolingInput {
            hidden: &[1.0; 5],
            mask: &[1, 1],
            rows: 1,
            seq_len: 2,
            dim: 2,
        })
        .unwrap_err();
        assert!(err.to_string().contains("shape"), "{err}");
    }

    #[test]
    fn zero_rows_give_empty_output() {
        let out = mean_pool_normalized(PoolingInput {
            hidden: &[],
            mask: &[],
            rows: 0,
            seq_len: 0,
            dim: 384,
        })
        .unwrap();
        assert!(out.is_empty());
    }
}
