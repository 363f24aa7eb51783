//! The ONNX graph the [`OnnxEmbedder`](crate::OnnxEmbedder) runs, built at load from the model's
//! f32 weights (`model.safetensors`).
//!
//! A generic export of BERT is a few hundred small operators per pass (reshapes, transposes,
//! masks) and computes in f32. This graph is one fused operator per step, as ONNX Runtime's
//! contributed operators allow, with every weight matrix quantised to int8:
//!
//! ```text
//! EmbedLayerNormalization(input_ids, token_type_ids, attention_mask) -> x, lengths
//! per layer:  DynamicQuantizeLinear(x) -> QAttention -> DynamicQuantizeMatMul (output, + bias)
//!             -> Add (residual) -> LayerNormalization -> DynamicQuantizeMatMul -> BiasGelu
//!             -> DynamicQuantizeMatMul (+ bias) -> Add (residual) -> LayerNormalization
//! ```
//!
//! Weights are quantised symmetrically per output column (scale = max |w| / 127) and handed to
//! ONNX Runtime in the coding whose integer sums are exact on this CPU ([`WeightCoding`]: the
//! products, and so the vectors, are the same on every CPU); activations are
//! quantised per pass by ONNX Runtime (`DynamicQuantize*`), so a text's vector depends
//! slightly on the texts it shares a pass with (cosine ≥ 0.99 between any two batchings,
//! measured). Padding must be at the end of each row: attention reads each row's length.
//!
//! The protobuf is written by hand (only the fields below), so no ONNX schema or code
//! generator is needed.

use crate::model_err;
use crate::weight_coding::WeightCoding;
use mnemo_core::Result;
use safetensors::{Dtype, SafeTensors};

/// What the graph needs from the model's `config.json`.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
pub(crate) struct BertShape {
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
}

fn default_eps() -> f64 {
    1e-12
}

/// The graph's output: the last hidden state, `[rows, seq_len, hidden]`.
pub(crate) const OUTPUT: &str = "last_hidden_state";

/// The name of the word embedding table in the graph: the one initializer every session of an
/// embedder is handed from memory shared between them (see [`BertGraph::word`]).
pub(crate) const WORD_TABLE: &str = "word";

/// A built graph and its word embedding table, which the graph names but does not carry.
pub(crate) struct BertGraph {
    /// The serialised `ModelProto`; [`WORD_TABLE`] in it is marked as external data.
    pub model: Vec<u8>,
    /// The `[vocabulary, hidden]` word embeddings: most of the model's bytes (47 MB of
    /// MiniLM's 90), handed to every session from one copy (`onnx.rs`, `SessionMaker`).
    pub word: ([usize; 2], Vec<f32>),
}

impl std::fmt::Debug for BertGraph {
    /// Sizes only: the bytes are tens of megabytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertGraph")
            .field("model_bytes", &self.model.len())
            .field("word", &self.word.0)
            .finish()
    }
}

/// The ONNX model for BERT weights in `weights` (safetensors bytes) of `shape`, its weight
/// matrices in `coding`.
pub(crate) fn build_bert(
    weights: &[u8],
    shape: BertShape,
    coding: WeightCoding,
) -> Result<BertGraph> {
    let st = SafeTensors::deserialize(weights).map_err(|e| bad(&e.to_string()))?;
    let w = Weights(&st);
    let mut g = Graph {
        coding,
        ..Graph::default()
    };
    let eps = shape.layer_norm_eps as f32;

    let word = w.matrix("embeddings.word_embeddings.weight")?;
    let hidden = word.cols;
    if hidden == 0 || shape.num_attention_heads == 0 || hidden % shape.num_attention_heads != 0 {
        return Err(bad(&format!(
            "hidden size {hidden} is not a multiple of {} heads",
            shape.num_attention_heads
        )));
    }
    let word_table = ([word.rows, word.cols], word.data);
    let word = g.external_f32(WORD_TABLE, &word_table.0);
    let pos = w.matrix("embeddings.position_embeddings.weight")?;
    let pos = g.f32_init("position", &[pos.rows, pos.cols], pos.data);
    let types = w.matrix("embeddings.token_type_embeddings.weight")?;
    let types = g.f32_init("token_type", &[types.rows, types.cols], types.data);
    let gamma = w.vector("embeddings.LayerNorm.weight", hidden, &mut g)?;
    let beta = w.vector("embeddings.LayerNorm.bias", hidden, &mut g)?;
    g.node(
        "EmbedLayerNormalization",
        &[
            "input_ids",
            "token_type_ids",
            &word,
            &pos,
            &types,
            &gamma,
            &beta,
            "attention_mask",
        ],
        &["x0", "lengths"],
        &[Attr::F("epsilon", eps)],
    );

    let mut x = "x0".to_string();
    for l in 0..shape.num_hidden_layers {
        let p = format!("encoder.layer.{l}.");
        let t = |s: &str| format!("l{l}.{s}");
        // Attention: q, k and v side by side as one [hidden, 3·hidden] int8 matrix.
        let parts = ["query", "key", "value"]
            .map(|n| w.linear(&format!("{p}attention.self.{n}"), hidden, hidden));
        let parts = parts.into_iter().collect::<Result<Vec<_>>>()?;
        let qkv = side_by_side(
            &parts
                .iter()
                .map(|l| l.weight.as_slice())
                .collect::<Vec<_>>(),
            hidden,
        );
        let bias: Vec<f32> = parts.iter().flat_map(|l| l.bias.iter().copied()).collect();
        let qkv_b = g.f32_init(&t("qkv.b"), &[3 * hidden], bias);
        let (q, s) = quantise_columns(&qkv, hidden, 3 * hidden);
        let qkv_w = g.weight_init(&t("qkv.w"), &[hidden, 3 * hidden], q);
        let qkv_s = g.f32_init(&t("qkv.s"), &[3 * hidden], s);
        let qkv_z = g.zero_point_init(&t("qkv.z"), 3 * hidden);
        let (xq, xs, xz) = (t("x.q"), t("x.s"), t("x.z"));
        g.op("", "DynamicQuantizeLinear", &[&x], &[&xq, &xs, &xz], &[]);
        let att = t("att");
        g.node(
            "QAttention",
            &[&xq, &qkv_w, &qkv_b, &xs, &qkv_s, "lengths", &xz, &qkv_z],
            &[&att],
            &[Attr::I("num_heads", shape.num_attention_heads as i64)],
        );
        let out = w.linear(&format!("{p}attention.output.dense"), hidden, hidden)?;
        let o = g.matmul(&t("o"), &att, &out.weight, Some(out.bias), (hidden, hidden));
        let ln1 = (
            w.vector(
                &format!("{p}attention.output.LayerNorm.weight"),
                hidden,
                &mut g,
            )?,
            w.vector(
                &format!("{p}attention.output.LayerNorm.bias"),
                hidden,
                &mut g,
            )?,
        );
        let x1 = t("x1");
        g.residual_norm(&o, &x, ln1, &x1, eps);

        // Feed-forward: up, GELU, down.
        let up = w.linear_any(&format!("{p}intermediate.dense"), hidden)?;
        let inner = up.bias.len();
        let up_b = g.f32_init(&t("up.b"), &[inner], up.bias);
        let h = g.matmul(&t("up"), &x1, &up.weight, None, (hidden, inner));
        let act = t("gelu");
        g.node("BiasGelu", &[&h, &up_b], &[&act], &[]);
        let down = w.linear(&format!("{p}output.dense"), inner, hidden)?;
        let f = g.matmul(
            &t("down"),
            &act,
            &down.weight,
            Some(down.bias),
            (inner, hidden),
        );
        let ln2 = (
            w.vector(&format!("{p}output.LayerNorm.weight"), hidden, &mut g)?,
            w.vector(&format!("{p}output.LayerNorm.bias"), hidden, &mut g)?,
        );
        let last = l + 1 == shape.num_hidden_layers;
        let x2 = if last { OUTPUT.to_string() } else { t("x2") };
        g.residual_norm(&f, &x1, ln2, &x2, eps);
        x = x2;
    }
    if shape.num_hidden_layers == 0 {
        return Err(bad("the model has no layers"));
    }
    Ok(BertGraph {
        model: g.model(hidden),
        word: word_table,
    })
}

/// The largest weight magnitude after quantisation (symmetric 8-bit).
const WEIGHT_MAX: f32 = 127.0;

/// Per-column symmetric int8: `w ≈ q · scale[col]`, `|q| ≤ WEIGHT_MAX`. `w` is row-major
/// `[rows, cols]`.
fn quantise_columns(w: &[f32], rows: usize, cols: usize) -> (Vec<i8>, Vec<f32>) {
    let mut scale = vec![0f32; cols];
    for r in 0..rows {
        for (c, s) in scale.iter_mut().enumerate() {
            *s = s.max(w[r * cols + c].abs());
        }
    }
    scale
        .iter_mut()
        .for_each(|s| *s = if *s > 0.0 { *s / WEIGHT_MAX } else { 1.0 });
    let q = w
        .iter()
        .enumerate()
        .map(|(i, &v)| (v / scale[i % cols]).round().clamp(-WEIGHT_MAX, WEIGHT_MAX) as i8)
        .collect();
    (q, scale)
}

/// Row-major `[rows, n·cols]` from `n` row-major `[rows, cols]` matrices.
fn side_by_side(parts: &[&[f32]], rows: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for r in 0..rows {
        for p in parts {
            let cols = p.len() / rows;
            out.extend_from_slice(&p[r * cols..(r + 1) * cols]);
        }
    }
    out
}

/// A dense layer: its weight transposed to `[in, out]` (the product's right-hand side) and bias.
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<f32>,
}

struct Weights<'a>(&'a SafeTensors<'a>);

impl Weights<'_> {
    fn f32s(&self, name: &str) -> Result<(Vec<usize>, Vec<f32>)> {
        let t = self
            .0
            .tensor(name)
            .map_err(|_| bad(&format!("tensor `{name}` missing")))?;
        if t.dtype() != Dtype::F32 {
            return Err(bad(&format!("tensor `{name}` is {:?}, not F32", t.dtype())));
        }
        let data = t
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok((t.shape().to_vec(), data))
    }

    fn matrix(&self, name: &str) -> Result<Matrix> {
        match self.f32s(name)? {
            (s, data) if s.len() == 2 => Ok(Matrix {
                rows: s[0],
                cols: s[1],
                data,
            }),
            (s, _) => Err(bad(&format!(
                "tensor `{name}` has shape {s:?}, not a matrix"
            ))),
        }
    }

    /// A `[len]` tensor, added to `g` as an initializer named after it.
    fn vector(&self, name: &str, len: usize, g: &mut Graph) -> Result<String> {
        match self.f32s(name)? {
            (s, data) if s == [len] => Ok(g.f32_init(name, &[len], data)),
            (s, _) => Err(bad(&format!(
                "tensor `{name}` has shape {s:?}, expected [{len}]"
            ))),
        }
    }

    /// `{prefix}.weight` (`[out, inp]`, as PyTorch stores it) and `{prefix}.bias`.
    fn linear(&self, prefix: &str, inp: usize, out: usize) -> Result<Linear> {
        let l = self.linear_any(prefix, inp)?;
        if l.bias.len() != out {
            return Err(bad(&format!(
                "`{prefix}` has {} outputs, expected {out}",
                l.bias.len()
            )));
        }
        Ok(l)
    }

    /// As [`Self::linear`], with the output width read from the weight.
    fn linear_any(&self, prefix: &str, inp: usize) -> Result<Linear> {
        let m = self.matrix(&format!("{prefix}.weight"))?;
        let (_, bias) = self.f32s(&format!("{prefix}.bias"))?;
        if m.cols != inp || m.rows != bias.len() {
            return Err(bad(&format!(
                "`{prefix}` is [{}, {}] with {} biases; expected [_, {inp}] with one bias per row",
                m.rows,
                m.cols,
                bias.len()
            )));
        }
        let mut weight = vec![0f32; m.data.len()];
        for r in 0..m.rows {
            for c in 0..m.cols {
                weight[c * m.rows + r] = m.data[r * m.cols + c];
            }
        }
        Ok(Linear { weight, bias })
    }
}

enum Attr<'a> {
    F(&'a str, f32),
    I(&'a str, i64),
}

/// An ONNX graph being written: encoded nodes and initializers.
#[derive(Default)]
struct Graph {
    nodes: Vec<u8>,
    initializers: Vec<u8>,
    coding: WeightCoding,
}

/// `TensorProto.DataType` values.
const FLOAT: u64 = 1;
const UINT8: u64 = 2;
const INT8: u64 = 3;
const INT32: u64 = 6;

/// The operator set of ONNX Runtime's contributed operators.
const CONTRIB: &str = "com.microsoft";

impl Graph {
    fn node(&mut self, op: &str, inputs: &[&str], outputs: &[&str], attrs: &[Attr]) {
        self.op(CONTRIB, op, inputs, outputs, attrs);
    }

    fn op(&mut self, domain: &str, op: &str, inputs: &[&str], outputs: &[&str], attrs: &[Attr]) {
        let mut n = Vec::new();
        for i in inputs {
            put_bytes(&mut n, 1, i.as_bytes());
        }
        for o in outputs {
            put_bytes(&mut n, 2, o.as_bytes());
        }
        put_bytes(&mut n, 3, outputs[0].as_bytes());
        put_bytes(&mut n, 4, op.as_bytes());
        for a in attrs {
            let mut m = Vec::new();
            match a {
                Attr::F(name, v) => {
                    put_bytes(&mut m, 1, name.as_bytes());
                    put_varint(&mut m, (2 << 3) | 5);
                    m.extend_from_slice(&v.to_le_bytes());
                    put_varint_field(&mut m, 20, 1);
                }
                Attr::I(name, v) => {
                    put_bytes(&mut m, 1, name.as_bytes());
                    put_varint_field(&mut m, 3, *v as u64);
                    put_varint_field(&mut m, 20, 2);
                }
            }
            put_bytes(&mut n, 5, &m);
        }
        put_bytes(&mut n, 7, domain.as_bytes());
        put_bytes(&mut self.nodes, 1, &n);
    }

    /// `x · w (+ bias)` with `w` (`[rows, cols]`, f32) quantised per column; returns the
    /// output's name. A bias is added by the product's own output step, not by an operator of
    /// its own; without one, the next operator adds it.
    fn matmul(
        &mut self,
        name: &str,
        x: &str,
        w: &[f32],
        bias: Option<Vec<f32>>,
        (rows, cols): (usize, usize),
    ) -> String {
        let (q, s) = quantise_columns(w, rows, cols);
        let wq = self.weight_init(&format!("{name}.w"), &[rows, cols], q);
        let ws = self.f32_init(&format!("{name}.s"), &[cols], s);
        let wz = self.zero_point_init(&format!("{name}.z"), cols);
        match bias {
            Some(bias) => {
                let b = self.f32_init(&format!("{name}.b"), &[cols], bias);
                // Inputs: A, B, b_scale, b_zero_point, bias.
                self.node(
                    "DynamicQuantizeMatMul",
                    &[x, &wq, &ws, &wz, &b],
                    &[name],
                    &[],
                );
            }
            None => self.node("DynamicQuantizeMatMul", &[x, &wq, &ws, &wz], &[name], &[]),
        }
        name.to_string()
    }

    /// `LayerNorm(y + skip)` as the standard `Add` and `LayerNormalization` operators. ONNX
    /// Runtime's fused `SkipLayerNormalization` computes each row's statistics with a scalar
    /// loop and took ~20 % of a pass (issue 16); the standard one is vectorised. The session
    /// must not run the optimisation level that fuses the pair back (see `onnx.rs`).
    fn residual_norm(&mut self, y: &str, skip: &str, ln: (String, String), out: &str, eps: f32) {
        let sum = format!("{out}.sum");
        self.op("", "Add", &[y, skip], &[&sum], &[]);
        self.op(
            "",
            "LayerNormalization",
            &[&sum, &ln.0, &ln.1],
            &[out],
            &[Attr::I("axis", -1), Attr::F("epsilon", eps)],
        );
    }

    fn init(&mut self, name: &str, dims: &[usize], data_type: u64, raw: &[u8]) -> String {
        let mut t = Vec::with_capacity(raw.len() + 64);
        for &d in dims {
            put_varint_field(&mut t, 1, d as u64);
        }
        put_varint_field(&mut t, 2, data_type);
        put_bytes(&mut t, 8, name.as_bytes());
        put_bytes(&mut t, 9, raw);
        put_bytes(&mut self.initializers, 5, &t);
        name.to_string()
    }

    /// An f32 initializer whose data the graph does not carry: marked as external, for the
    /// session to be handed (`AddExternalInitializers`) by name.
    fn external_f32(&mut self, name: &str, dims: &[usize]) -> String {
        let mut t = Vec::new();
        for &d in dims {
            put_varint_field(&mut t, 1, d as u64);
        }
        put_varint_field(&mut t, 2, FLOAT);
        put_bytes(&mut t, 8, name.as_bytes());
        let mut location = Vec::new();
        put_bytes(&mut location, 1, b"location");
        put_bytes(&mut location, 2, name.as_bytes());
        put_bytes(&mut t, 13, &location);
        put_varint_field(&mut t, 14, 1);
        put_bytes(&mut self.initializers, 5, &t);
        name.to_string()
    }

    fn f32_init(&mut self, name: &str, dims: &[usize], data: Vec<f32>) -> String {
        let raw: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.init(name, dims, FLOAT, &raw)
    }

    /// A quantised weight matrix in the graph's [`WeightCoding`].
    fn weight_init(&mut self, name: &str, dims: &[usize], data: Vec<i8>) -> String {
        let zero = i16::from(self.coding.zero());
        // Two's complement: an s8 `q` is the byte `q as u8`; an offset one is `q + 128`.
        let raw: Vec<u8> = data.iter().map(|&v| (i16::from(v) + zero) as u8).collect();
        self.init(name, dims, self.int_type(), &raw)
    }

    /// The per-column zero points of a weight matrix.
    fn zero_point_init(&mut self, name: &str, cols: usize) -> String {
        let zero = self.coding.zero();
        self.init(name, &[cols], self.int_type(), &vec![zero; cols])
    }

    fn int_type(&self) -> u64 {
        match self.coding {
            WeightCoding::Signed => INT8,
            WeightCoding::Offset => UINT8,
        }
    }

    /// The whole `ModelProto`: IR version 9, opsets 17 and the contributed one.
    fn model(self, hidden: usize) -> Vec<u8> {
        let mut graph = self.nodes;
        put_bytes(&mut graph, 2, b"mnemo-minilm");
        graph.extend_from_slice(&self.initializers);
        for name in ["input_ids", "token_type_ids", "attention_mask"] {
            put_bytes(
                &mut graph,
                11,
                &value_info(name, INT32, &[Dim::P("rows"), Dim::P("seq")]),
            );
        }
        let out = value_info(
            OUTPUT,
            FLOAT,
            &[Dim::P("rows"), Dim::P("seq"), Dim::V(hidden)],
        );
        put_bytes(&mut graph, 12, &out);

        let mut m = Vec::with_capacity(graph.len() + 64);
        put_varint_field(&mut m, 1, 9);
        put_bytes(&mut m, 2, b"mnemo");
        put_bytes(&mut m, 7, &graph);
        for (domain, version) in [("", 17), (CONTRIB, 1)] {
            let mut o = Vec::new();
            put_bytes(&mut o, 1, domain.as_bytes());
            put_varint_field(&mut o, 2, version);
            put_bytes(&mut m, 8, &o);
        }
        m
    }
}

enum Dim<'a> {
    V(usize),
    P(&'a str),
}

/// `ValueInfoProto` of a tensor: name, element type, shape.
fn value_info(name: &str, elem: u64, dims: &[Dim]) -> Vec<u8> {
    let mut shape = Vec::new();
    for d in dims {
        let mut dim = Vec::new();
        match d {
            Dim::V(v) => put_varint_field(&mut dim, 1, *v as u64),
            Dim::P(p) => put_bytes(&mut dim, 2, p.as_bytes()),
        }
        put_bytes(&mut shape, 1, &dim);
    }
    let mut tensor = Vec::new();
    put_varint_field(&mut tensor, 1, elem);
    put_bytes(&mut tensor, 2, &shape);
    let mut ty = Vec::new();
    put_bytes(&mut ty, 1, &tensor);
    let mut v = Vec::new();
    put_bytes(&mut v, 1, name.as_bytes());
    put_bytes(&mut v, 2, &ty);
    v
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_varint_field(out: &mut Vec<u8>, number: u64, v: u64) {
    put_varint(out, number << 3);
    put_varint(out, v);
}

fn put_bytes(out: &mut Vec<u8>, number: u64, payload: &[u8]) {
    put_varint(out, (number << 3) | 2);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

fn bad(reason: &str) -> mnemo_core::Error {
    model_err("cannot build the ONNX graph from the model weights", reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_quantise_to_their_own_scale() {
        // [2, 3]: column maxima 4, 0.5, 0.
        let w = [4.0, -0.5, 0.0, -2.0, 0.25, 0.0];
        let (q, s) = quantise_columns(&w, 2, 3);
        assert_eq!(s, vec![4.0 / 127.0, 0.5 / 127.0, 1.0]);
        assert_eq!(q, vec![127, -127, 0, -64, 64, 0]);
    }

    #[test]
    fn weights_are_stored_in_the_graphs_coding() {
        let mut g = Graph::default();
        g.weight_init("w", &[3], vec![-127, 0, 127]);
        let raw = &g.initializers;
        // The raw data field ends the tensor: 1, 128, 255, after the type (2: UINT8).
        assert_eq!(&raw[raw.len() - 3..], &[1, 128, 255]);
        assert!(raw.windows(2).any(|w| w == [0x10, 2]));

        let mut g = Graph {
            coding: WeightCoding::Signed,
            ..Graph::default()
        };
        g.weight_init("w", &[3], vec![-127, 0, 127]);
        let raw = &g.initializers;
        assert_eq!(&raw[raw.len() - 3..], &[0x81, 0, 0x7f]);
        assert!(raw.windows(2).any(|w| w == [0x10, 3]));
        g.zero_point_init("z", 2);
        assert_eq!(&g.initializers[g.initializers.len() - 2..], &[0, 0]);
    }

    #[test]
    fn matrices_go_side_by_side_row_by_row() {
        let (a, b) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0]);
        assert_eq!(
            side_by_side(&[&a, &b], 2),
            vec![1.0, 2.0, 5.0, 3.0, 4.0, 6.0]
        );
    }

    #[test]
    fn varints_use_seven_bits_a_byte() {
        let mut out = Vec::new();
        put_varint(&mut out, 300);
        assert_eq!(out, vec![0xac, 0x02]);
    }

    fn safetensors(tensors: &[(&str, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
        let bytes: Vec<Vec<u8>> = tensors
            .iter()
            .map(|(_, _, d)| d.iter().flat_map(|v| v.to_le_bytes()).collect())
            .collect();
        let views: Vec<(&str, safetensors::tensor::TensorView<'_>)> = tensors
            .iter()
            .zip(&bytes)
            .map(|((n, s, _), b)| {
                (
                    *n,
                    safetensors::tensor::TensorView::new(Dtype::F32, s.clone(), b).unwrap(),
                )
            })
            .collect();
        safetensors::serialize(views, None).unwrap()
    }

    #[test]
    fn missing_or_misshapen_weights_are_typed_errors() {
        let shape = BertShape {
            num_hidden_layers: 1,
            num_attention_heads: 2,
            layer_norm_eps: 1e-12,
        };
        let err = build_bert(&safetensors(&[]), shape, WeightCoding::Offset).unwrap_err();
        assert!(matches!(err, mnemo_core::Error::Model { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("embeddings.word_embeddings.weight"),
            "{err}"
        );

        let words = (
            "embeddings.word_embeddings.weight",
            vec![10, 4],
            vec![0.0; 40],
        );
        let pos = (
            "embeddings.position_embeddings.weight",
            vec![8, 4],
            vec![0.0; 32],
        );
        let types = (
            "embeddings.token_type_embeddings.weight",
            vec![2, 4],
            vec![0.0; 8],
        );
        let gamma = ("embeddings.LayerNorm.weight", vec![3], vec![1.0; 3]);
        let err = build_bert(
            &safetensors(&[words, pos, types, gamma]),
            shape,
            WeightCoding::Signed,
        )
        .unwrap_err();
        assert!(err.to_string().contains("expected [4]"), "{err}");

        assert!(build_bert(b"not safetensors", shape, WeightCoding::Offset).is_err());
    }
}
