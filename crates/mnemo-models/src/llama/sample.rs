//! Choosing the next token: the repetition penalty, greedy or temperature sampling, and the
//! JSON grammar when the request asks for JSON.
//!
//! The grammar is checked lazily, the way llama.cpp's own tools do it: the unconstrained choice
//! is tried first against the grammar alone, and only when the grammar rejects it are all
//! ~50k candidates filtered through the grammar and the choice made again. Most tokens of a
//! well-behaved model pass the first check, which saves most of the grammar's per-token cost.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use mnemo_core::{ChatRequest, Error, Result};

/// A grammar for exactly one JSON object and nothing after it. Whitespace between tokens is
/// bounded so that a small model cannot spend its budget on blank lines; strings and numbers
/// follow RFC 8259.
pub const JSON_OBJECT_GBNF: &str = r#"
root   ::= "{" ws ( member ( "," ws member )* )? "}"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
value  ::= object | array | string | number | "true" | "false" | "null"
string ::= "\"" char* "\""
char   ::= [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
ws     ::= ( " " | "\n" " "{0,12} )?
"#;

/// Tokens of recent output the repetition penalty looks back over.
const PENALTY_WINDOW: i32 = 64;

/// How one request picks its tokens.
pub(super) struct TokenPicker {
    /// Penalty, then greedy or temperature + seeded draw.
    base: LlamaSampler,
    grammar: Option<LlamaSampler>,
}

impl TokenPicker {
    pub(super) fn new(
        model: &LlamaModel,
        req: &ChatRequest,
        repeat_penalty: f32,
        seed: u32,
    ) -> Result<Self> {
        let mut chain = Vec::with_capacity(3);
        if repeat_penalty != 1.0 {
            chain.push(LlamaSampler::penalties(
                model.n_vocab(),
                PENALTY_WINDOW,
                repeat_penalty,
                0.0,
                0.0,
            ));
        }
        match req.temperature {
            Some(t) if t > 0.0 => {
                chain.push(LlamaSampler::temp(t));
                chain.push(LlamaSampler::dist(seed));
            }
            _ => chain.push(LlamaSampler::greedy()),
        }
        let grammar = if req.json {
            let g = LlamaSampler::grammar(model, JSON_OBJECT_GBNF, "root").map_err(|e| {
                Error::Internal {
                    reason: format!("llama.cpp rejected the JSON grammar: {e}"),
                }
            })?;
            Some(g)
        } else {
            None
        };
        Ok(Self {
            base: LlamaSampler::chain_simple(chain),
            grammar,
        })
    }

    /// The next token after the last decoded position of `ctx`; every sampler is told about it.
    pub(super) fn pick(&mut self, ctx: &LlamaContext<'_>) -> Result<LlamaToken> {
        let mut token = choose(&mut self.base, ctx.token_data_array())?;
        if let Some(grammar) = &mut self.grammar {
            if !grammar_allows(grammar, token) {
                let mut candidates = ctx.token_data_array();
                grammar.apply(&mut candidates);
                token = choose(&mut self.base, candidates)?;
            }
            grammar.accept(token);
        }
        self.base.accept(token);
        Ok(token)
    }
}

fn choose(sampler: &mut LlamaSampler, mut candidates: LlamaTokenDataArray) -> Result<LlamaToken> {
    sampler.apply(&mut candidates);
    candidates.selected_token().ok_or_else(|| Error::Model {
        reason: "llama.cpp sampling selected no token (every candidate was masked)".into(),
    })
}

/// Whether the grammar, in its current state, lets `token` come next.
fn grammar_allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    grammar.apply(&mut one);
    one.data
        .first()
        .is_some_and(|d| d.logit() != f32::NEG_INFINITY)
}
