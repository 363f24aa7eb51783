//! How the embedder's int8 weights are handed to ONNX Runtime: the coding whose integer sums
//! are exact on the CPU at hand, so that every CPU computes the same vectors with its fastest
//! exact kernel.

/// How the quantised weights `q` (`|q| ≤ 127`) are handed to ONNX Runtime. Both codings give the
/// same integer products, `Σ x·q`, when the CPU's kernel sums them exactly, and then the same
/// vectors; they differ in which kernel ONNX Runtime picks.
///
/// - [`Signed`](Self::Signed): s8, zero point 0 → the u8·s8 kernels. With VNNI (`vpdpbusd`,
///   AVX-512 VNNI or AVX-VNNI) they sum four products at a time into 32 bits: exact, and the
///   fastest int8 path. Without VNNI (`vpmaddubsw`, AVX2 or AVX-512 without VNNI) they add each
///   pair of products in a saturating 16-bit lane: `2 · 255 · 127` overflows it, so the vectors
///   would depend on the CPU.
/// - [`Offset`](Self::Offset): u8 `q + 128` with zero point 128 → the u8·u8 kernels, which widen
///   to 16 bits before multiplying and sum in 32 bits on every CPU: exact everywhere, but half
///   the speed of u8·s8 with VNNI (embedding 476–485 against 887–933 texts/s on an AMD EPYC
///   with AVX-512 VNNI; BENCHMARKS.md, "Portability").
///
/// [`for_this_cpu`](Self::for_this_cpu) takes the fast coding where it is exact. (Reduced-range
/// 7-bit s8 weights avoid the saturation too, but cost too much precision on short texts: "ok"
/// fell to cosine 0.967.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightCoding {
    /// s8 weights, zero point 0: exact only where the CPU has VNNI.
    Signed,
    /// u8 weights `q + 128`, zero point 128: exact on every CPU.
    #[default]
    Offset,
}

/// The integer instructions that decide whether ONNX Runtime's u8·s8 kernels sum exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntKernels {
    /// AVX-512 F, BW, DQ and VL with the OS saving their state (ONNX Runtime's "AVX-512 core").
    pub avx512_core: bool,
    /// AVX-512 VNNI (`vpdpbusd` on 512-bit registers).
    pub avx512_vnni: bool,
    /// AVX2 with AVX-VNNI (the VEX-encoded `vpdpbusd`).
    pub avx_vnni: bool,
}

impl IntKernels {
    /// What this CPU has (all false off x86-64).
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let core = std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl");
            Self {
                avx512_core: core,
                avx512_vnni: std::arch::is_x86_feature_detected!("avx512vnni"),
                avx_vnni: std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("avxvnni"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Self::default()
    }
}

impl WeightCoding {
    /// The fastest coding whose sums are exact on a CPU with `cpu`'s instructions: `Signed` where
    /// ONNX Runtime's u8·s8 kernel is a VNNI one (AVX-512 core with AVX-512 VNNI; AVX-VNNI where
    /// there is no AVX-512 core, whose kernel would replace it), `Offset` everywhere else, off
    /// x86-64 included.
    pub fn for_cpu(cpu: IntKernels) -> Self {
        let avx512 = cpu.avx512_core && cpu.avx512_vnni;
        let avx2 = cpu.avx_vnni && !cpu.avx512_core;
        if avx512 || avx2 {
            Self::Signed
        } else {
            Self::Offset
        }
    }

    /// [`for_cpu`](Self::for_cpu) of this machine.
    pub fn for_this_cpu() -> Self {
        Self::for_cpu(IntKernels::detect())
    }

    /// The zero point the weights are stored around.
    pub(crate) fn zero(self) -> u8 {
        match self {
            Self::Signed => 0,
            Self::Offset => 128,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_coding_only_where_vnni_sums_exactly() {
        use WeightCoding::{Offset, Signed};
        // (AVX-512 core, AVX-512 VNNI, AVX-VNNI) → coding.
        let cases = [
            // Nothing; AVX-512 without VNNI (Skylake-SP); AVX2 only is the first row too.
            ((false, false, false), Offset),
            ((true, false, false), Offset),
            // VNNI bits without AVX-512 core: ONNX Runtime keeps its AVX2 kernel.
            ((false, true, false), Offset),
            // AVX-512 VNNI (Cascade Lake on, Zen 4 on), AVX-VNNI (Alder Lake on), both.
            ((true, true, false), Signed),
            ((false, false, true), Signed),
            ((true, true, true), Signed),
            // AVX-VNNI beside AVX-512 core without its VNNI: the saturating AVX-512 kernel wins.
            ((true, false, true), Offset),
        ];
        for ((avx512_core, avx512_vnni, avx_vnni), want) in cases {
            let cpu = IntKernels {
                avx512_core,
                avx512_vnni,
                avx_vnni,
            };
            assert_eq!(WeightCoding::for_cpu(cpu), want, "{cpu:?}");
        }
    }
}
