//! The indexed vectors at half precision, by key, for exact scores.
//!
//! The graph keeps its vectors as 8-bit integers: an insert's hundreds of distances then cost
//! a fraction of what half precision costs, and the graph takes half the memory. Those
//! distances only choose candidates; every score a search returns comes from here (an inner
//! product of unit vectors at half precision is off by about 1e-4; at 8 bits, by about 3e-3,
//! enough to reorder close neighbours). Saved beside the graph as raw little-endian halves.

use half::f16;
use half::slice::HalfFloatSliceExt;
use mnemo_core::{Error, Result};
use std::path::Path;

pub(crate) struct Exact {
    dim: usize,
    /// `dim` halves per key, key `k` at `k * dim`; all zero where no vector is kept.
    halves: Vec<f16>,
}

impl Exact {
    pub(crate) fn new(dim: usize) -> Self {
        Self {
            dim,
            halves: Vec::new(),
        }
    }

    /// Keeps `vector` (of `dim` values) for `key`.
    pub(crate) fn set(&mut self, key: u64, vector: &[f32]) {
        let at = key as usize * self.dim;
        if self.halves.len() < at + self.dim {
            self.halves.resize(at + self.dim, f16::ZERO);
        }
        self.halves[at..at + self.dim].convert_from_f32_slice(vector);
    }

    /// Whether a slot exists for every key up to `last`.
    pub(crate) fn covers(&self, last: u64) -> bool {
        self.halves.len() >= (last as usize + 1) * self.dim
    }

    /// Forgets `key`'s vector (its slot is zeroed, in memory and in the next save).
    pub(crate) fn clear(&mut self, key: u64) {
        let at = key as usize * self.dim;
        if let Some(slot) = self.halves.get_mut(at..at + self.dim) {
            slot.fill(f16::ZERO);
        }
    }

    /// `key`'s vector as the saved file holds it: little-endian halves (tests).
    #[cfg(feature = "testing")]
    pub(crate) fn bytes(&self, key: u64) -> Option<Vec<u8>> {
        let at = key as usize * self.dim;
        let slot = self.halves.get(at..at + self.dim)?;
        Some(
            slot.iter()
                .flat_map(|h| h.to_bits().to_le_bytes())
                .collect(),
        )
    }

    /// The inner product of `query` with `key`'s vector, widened into `buf` (`dim` long);
    /// `None` past the last key kept (callers check the key is indexed).
    pub(crate) fn dot(&self, query: &[f32], key: u64, buf: &mut [f32]) -> Option<f32> {
        let at = key as usize * self.dim;
        let slot = self.halves.get(at..at + self.dim)?;
        slot.convert_to_f32_slice(buf);
        Some(mnemo_core::embed::dot(query, buf))
    }

    /// Writes the copies to `path`, through a buffer (not a second copy of them in memory).
    pub(crate) fn save(&self, path: &Path) -> Result<()> {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(super::ann_err)?);
        for h in &self.halves {
            out.write_all(&h.to_bits().to_le_bytes())
                .map_err(super::ann_err)?;
        }
        out.flush().map_err(super::ann_err)
    }

    /// The vectors saved at `path` for a graph of `dim` dimensions; `None` when the file is
    /// missing or not whole keys of `dim` halves.
    pub(crate) fn load(path: &Path, dim: usize) -> Result<Option<Self>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::internal(format!("vector index: {e}"))),
        };
        if dim == 0 || bytes.len() % (2 * dim) != 0 {
            return Ok(None);
        }
        let halves = bytes
            .chunks_exact(2)
            .map(|b| f16::from_bits(u16::from_le_bytes([b[0], b[1]])))
            .collect();
        Ok(Some(Self { dim, halves }))
    }
}
