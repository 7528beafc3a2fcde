//! `TokenizerInfo`: a vocabulary plus its token trie, shared by every grammar
//! compiled against it.

use std::sync::Arc;

use formcast_engine::VocabIndex;
use formcast_tokenizer::{Vocab, VocabKind, VocabOptions};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::tokenizer_err;
use crate::{guard, to_py};

/// The vocabulary of a model: the bytes of every token id, which ids are
/// special (never matched by text) and which stop generation.
#[pyclass(frozen, module = "formcast._engine")]
pub struct TokenizerInfo {
    pub(crate) vocab: Arc<Vocab>,
    pub(crate) index: Arc<VocabIndex>,
}

fn options(stop_token_ids: Option<Vec<u32>>, logits_size: Option<usize>, config: Option<String>) -> VocabOptions {
    VocabOptions { logits_size, stop: stop_token_ids, tokenizer_config: config }
}

impl TokenizerInfo {
    fn build(py: Python<'_>, vocab: Vocab) -> PyResult<Self> {
        let index = Arc::new(py.detach(|| VocabIndex::new(&vocab)).map_err(to_py)?);
        if prewarm_enabled() {
            // On a thread of its own, joined: what the warm-up allocates and
            // frees stays out of this thread's heap, whose free pages the
            // compiles that follow use (with the decode on this thread, the
            // compiles of tests/test_heap_reserve.py met 640–1,700 fresh
            // pages with the reserve, against 2,100–3,500 without it).
            let bounded = py.detach(|| std::thread::scope(|s| s.spawn(|| warm_strings(&index)).join().ok().flatten()));
            prewarm_in_background(bounded);
        }
        crate::heap::keep_reserve();
        Ok(TokenizerInfo { vocab: Arc::new(vocab), index })
    }
}

/// `FORMCAST_PREWARM=0` turns off the string partitions computed while the
/// tokenizer is built and the background warm-up
/// (benchmarks/first_request.py measures the first request with and
/// without them).
fn prewarm_enabled() -> bool {
    !std::env::var("FORMCAST_PREWARM").is_ok_and(|v| v.trim() == "0")
}

/// The string automata nearly every JSON grammar contains: an unbounded
/// string body, and the 32-character blocks and remainder chains that every
/// `maxLength`/`minLength` above 32 is built from.
const STRING_SCHEMA: &str = r#"{"type": "string"}"#;
const BOUNDED_STRING_SCHEMA: &str = r#"{"type": "string", "minLength": 1, "maxLength": 100}"#;
/// An object that takes keys beyond its properties (JSON Schema's default,
/// and most schemas'): the body of such a key, any string but the names, is
/// one automaton wherever it occurs.
const OPEN_OBJECT_SCHEMA: &str = r#"{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true}"#;

/// Compiles `grammar` for the warm-up with no budget (these grammars are
/// small and fixed).
fn compile_unbounded(index: &Arc<VocabIndex>, grammar: &formcast_grammar::Grammar) -> Option<formcast_engine::CompiledGrammar> {
    formcast_engine::CompiledGrammar::compile(grammar, index.clone(), &Default::default(), &formcast_engine::Budget::unlimited()).ok()
}

/// Before the tokenizer is handed out, what the first request's first
/// strings would otherwise pay for, shared by every grammar of the
/// tokenizer; the background warm-up waits for the first schema to be over.
///
/// - The partitions of an unbounded JSON string's states (body, escapes,
///   closing quote) and of the built-in JSON grammar's strings (W1's first
///   string mask: 250 µs with the walk, under 50 µs without), and of an
///   open object's key (the first key position of W3's and W4's open
///   objects: 300 µs with the walk, 100–180 µs without).
/// - What free text that avoids `<` takes of the vocabulary (see
///   `VocabIndex::free_text_cover`), and the tokens made only of the byte
///   classes identifier patterns loop on most (`[a-z0-9-]`, hex digits;
///   `VocabIndex::build_common_class_covers`): a compile looks for the
///   class covers its patterns need and otherwise builds them beside the
///   first masks.
/// - A length-bounded string is 32-character blocks and a remainder, each
///   position its own automaton state: decoding the first string with a
///   `maxLength` walked the trie at every character (two partitions per
///   step, 0.1–2 ms each near a block's end, where most tokens cross into
///   the next block and that run is resolved too). A string decoded here
///   past its first block, a mask per character, leaves every position's
///   partition and the block end's resolved run ready for any `maxLength`
///   (W5's cold p99 2.6 ms → 0.4 ms).
///
/// About 35 ms of tokenizer building on Llama-3, where a peer's building
/// takes 120–580 ms. Returns the bounded string's grammar, whose other
/// partitions the background warm-up computes.
fn warm_strings(index: &Arc<VocabIndex>) -> Option<Arc<formcast_engine::CompiledGrammar>> {
    // What free text takes when it avoids `<` (text before a tool call's
    // trigger, a think block's text before its end tag): the first such
    // mask of a process finds it built (about 0.5 ms of a pass over the trie).
    index.free_text_cover([1 << b'<', 0, 0, 0]);
    // The covers of the classes identifiers loop on most: the first mask
    // inside such a pattern, or the compile that looks for them, finds
    // them built.
    index.build_common_class_covers();
    let opts = formcast_jsonschema::SchemaOptions::default();
    let schema = |text| formcast_jsonschema::json_schema_str_to_grammar(text, &opts).ok().map(|(g, _)| g);
    let (string, object) = (schema(STRING_SCHEMA), schema(OPEN_OBJECT_SCHEMA));
    for grammar in string.into_iter().chain([formcast_grammar::json::builtin_json_grammar()]).chain(object) {
        if let Some(cg) = compile_unbounded(index, &grammar) {
            cg.partitions_between_ascii(|| ());
        }
    }
    let (grammar, _) = formcast_jsonschema::json_schema_str_to_grammar(BOUNDED_STRING_SCHEMA, &opts).ok()?;
    let cg = Arc::new(compile_unbounded(index, &grammar)?);
    let mut m = formcast_engine::Matcher::new(cg.clone(), false, None).ok()?;
    let mut out = vec![0u32; index.mask_words()];
    if m.accept_bytes(b"\"").unwrap_or(false) {
        // One block and the next one's start: every position of a block and
        // of the remainder beside it, and a block's end.
        for _ in 0..34 {
            if m.fill_next_token_bitmask(&mut out).is_err() || !m.accept_bytes(b"a").unwrap_or(false) {
                break;
            }
        }
    }
    Some(cg)
}

/// String formats whose automata take milliseconds to build: compiled once
/// in the background so that the process-wide rule cache (see
/// `formcast_engine::automaton`) already holds them when a schema uses one.
const PREWARM_FORMATS: [&str; 9] = ["date-time", "date", "time", "email", "uri", "uuid", "ipv4", "ipv6", "hostname"];

/// Formats whose front-end automaton (what a format meeting a `pattern`, a
/// length or a `not` is intersected with) takes a millisecond or two to
/// build: uri's took 2.3 ms of o88605's first front-end. date-time's and
/// time's take over 100 ms each and are left to the schemas that need them.
const PREWARM_FORMAT_DFAS: [&str; 6] = ["date", "email", "uri", "uuid", "ipv4", "ipv6"];

/// How long foreground work must have been over before the warm-up goes on.
const QUIET: std::time::Duration = std::time::Duration::from_millis(5);

/// On a background thread: fills the process-wide rule cache with the
/// automata of the formats and length remainders below and the front-end's
/// automata of a few formats, then the vocabulary's shared partition cache
/// (see `formcast_engine::partition`) for the rest of the bounded string's
/// states (`bounded`, from [`warm_strings`]). The first JSON grammar
/// compiled for this tokenizer then finds them ready instead of
/// determinizing them and walking the whole token trie once per state. Nothing waits for it; a grammar that needs an automaton or
/// a partition first builds it itself. It waits for foreground work (see
/// `formcast_engine::foreground`) before each step: a compile beside it
/// shares the machine's cores and caches (a small schema's first compile took
/// 1.9 ms beside the warm-up, 1.1 ms with none running, on 2 cores).
fn prewarm_in_background(bounded: Option<Arc<formcast_engine::CompiledGrammar>>) {
    let _ = std::thread::Builder::new().name("formcast-prewarm".into()).spawn(move || {
        let _ = std::panic::catch_unwind(move || {
            use formcast_engine::foreground::{background_budget, wait_until_idle};
            use formcast_engine::EngineError;
            let idle = || wait_until_idle(QUIET);
            // A step that foreground work cancelled (see
            // `formcast_engine::foreground`) is tried again once it is quiet;
            // the rules it finished are in the rule cache by then.
            fn step<T>(f: impl Fn(&formcast_engine::Budget) -> Result<T, EngineError>) -> Result<T, EngineError> {
                loop {
                    match f(&background_budget(QUIET)) {
                        Err(EngineError::Cancelled) => continue,
                        other => return other,
                    }
                }
            }
            let opts = formcast_jsonschema::SchemaOptions::default();
            // Automata first (they fill the rule cache within milliseconds),
            // then the slower partitions. Formats, then the last partial
            // block of every other `maxLength` (`e{0,k}` and the closing
            // quote, k < 32: one automaton each).
            let formats = PREWARM_FORMATS.iter().map(|f| format!(r#"{{"type": "string", "format": "{f}"}}"#));
            let remainders = (0..32).map(|k| format!(r#"{{"type": "string", "maxLength": {}}}"#, 64 + k));
            for schema in formats.chain(remainders) {
                idle();
                let Ok((grammar, _)) = formcast_jsonschema::json_schema_str_to_grammar(&schema, &opts) else { continue };
                let _ = step(|budget| formcast_engine::automaton::build_automaton(&grammar, &Default::default(), budget));
            }
            for f in PREWARM_FORMAT_DFAS {
                idle();
                if let Some(Ok(atom)) = formcast_jsonschema::formats::format_atom(f) {
                    let _ = atom.dfa();
                }
            }
            // The partitions (tens of ms of trie walks) wait for the first
            // schema to be over: a compile arriving meanwhile shared the
            // machine with a walk (W3's, 70 ms after the tokenizer was
            // built: median 1.6 ms beside it, 1.1 ms after it), and a
            // schema's first mask seldom needs a string partition.
            formcast_engine::foreground::wait_for_work_after(0);
            if let Some(cg) = bounded {
                cg.partitions_between_ascii(idle);
            }
        });
    });
}

#[pymethods]
impl TokenizerInfo {
    /// From the text of a Hugging Face `tokenizer.json` (byte-level BPE or
    /// SentencePiece with byte fallback).
    #[staticmethod]
    #[pyo3(signature = (json_text, *, tokenizer_config=None, stop_token_ids=None, logits_size=None))]
    fn from_huggingface_json(
        py: Python<'_>,
        json_text: &str,
        tokenizer_config: Option<String>,
        stop_token_ids: Option<Vec<u32>>,
        logits_size: Option<usize>,
    ) -> PyResult<Self> {
        guard(|| {
            let opts = options(stop_token_ids, logits_size, tokenizer_config);
            let vocab = py.detach(|| Vocab::from_hf_tokenizer_json(json_text, &opts)).map_err(tokenizer_err)?;
            Self::build(py, vocab)
        })
    }

    /// From the text of a tiktoken ranks file plus its special tokens
    /// (`None`: the Llama-3 special tokens).
    #[staticmethod]
    #[pyo3(signature = (ranks_text, *, special_tokens=None, stop_token_ids=None, logits_size=None))]
    fn from_tiktoken_text(
        py: Python<'_>,
        ranks_text: &str,
        special_tokens: Option<Vec<(String, u32)>>,
        stop_token_ids: Option<Vec<u32>>,
        logits_size: Option<usize>,
    ) -> PyResult<Self> {
        guard(|| {
            let special = special_tokens.unwrap_or_else(formcast_tokenizer::llama3_special_tokens);
            let opts = options(stop_token_ids, logits_size, None);
            let vocab = py.detach(|| Vocab::from_tiktoken(ranks_text, &special, &opts)).map_err(tokenizer_err)?;
            Self::build(py, vocab)
        })
    }

    /// From a plain list of token bytes.
    #[staticmethod]
    #[pyo3(signature = (tokens, *, special_token_ids=Vec::new(), stop_token_ids=Vec::new(), logits_size=None))]
    fn from_token_bytes(
        py: Python<'_>,
        tokens: Vec<Vec<u8>>,
        special_token_ids: Vec<u32>,
        stop_token_ids: Vec<u32>,
        logits_size: Option<usize>,
    ) -> PyResult<Self> {
        guard(|| {
            let vocab = Vocab::from_token_bytes(tokens, special_token_ids, stop_token_ids, logits_size)
                .map_err(tokenizer_err)?;
            Self::build(py, vocab)
        })
    }

    /// Number of token ids.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab.tokens.len()
    }

    /// Width of the model's logits (>= vocab_size; the rest is padding).
    #[getter]
    fn logits_size(&self) -> usize {
        self.vocab.logits_size
    }

    /// End-of-generation token ids.
    #[getter]
    fn stop_token_ids(&self) -> Vec<u32> {
        self.vocab.stop.clone()
    }

    /// Special/control token ids.
    #[getter]
    fn special_token_ids(&self) -> Vec<u32> {
        self.vocab.special.clone()
    }

    /// "byte_level", "sentencepiece" or "raw".
    #[getter]
    fn kind(&self) -> &'static str {
        match self.vocab.kind {
            VocabKind::ByteLevel => "byte_level",
            VocabKind::SentencePiece => "sentencepiece",
            _ => "raw",
        }
    }

    /// The bytes token `token_id` decodes to.
    fn token_bytes<'py>(&self, py: Python<'py>, token_id: u32) -> PyResult<Bound<'py, PyBytes>> {
        match self.vocab.tokens.get(token_id as usize) {
            Some(b) => Ok(PyBytes::new(py, b)),
            None => Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "token id {token_id} is outside the vocabulary (size {})",
                self.vocab.tokens.len()
            ))),
        }
    }

    /// All token bytes, indexed by id.
    fn all_token_bytes<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        self.vocab.tokens.iter().map(|b| PyBytes::new(py, b)).collect()
    }

    /// The first id whose decoded text is exactly `text` (special tokens
    /// included), or None.
    fn token_id(&self, text: &str) -> Option<u32> {
        self.vocab.tokens.iter().position(|b| b == text.as_bytes()).map(|i| i as u32)
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenizerInfo(vocab_size={}, logits_size={}, kind={:?}, stop_token_ids={:?})",
            self.vocab.tokens.len(),
            self.vocab.logits_size,
            self.kind(),
            self.vocab.stop
        )
    }
}
