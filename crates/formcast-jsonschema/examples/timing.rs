//! Compile times of the benchmark workloads (W1–W5): schema → grammar
//! (this crate) and grammar → engine automaton (Llama-3 vocabulary).
//!
//! `cargo run --release --example timing -- [workload dir] [tokenizer.model]`
//! (env: STRICT=0 for JSON Schema's open objects, FRONT_N / ENGINE_N repetitions, ALL=1 every run's time,
//! RULES=1 largest rules)

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::Instant;

use formcast_engine::{Budget, CompileOptions, CompiledGrammar, VocabIndex};
use formcast_jsonschema::json::parse;
use formcast_jsonschema::{json_schema_str_to_grammar, SchemaOptions};
use formcast_tokenizer::{llama3_special_tokens, Vocab, VocabOptions};

/// Repetitions, from the environment (1 profiles a first, uncached compile).
fn runs(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).cloned().unwrap_or_else(|| "/work/shared/data/bench-workloads".into());
    let tok = args.get(2).cloned().unwrap_or_else(|| "/work/shared/tokenizers/llama3-tokenizer.model".into());
    let vocab = std::fs::read_to_string(&tok).ok().map(|text| {
        let v = Vocab::from_tiktoken(&text, &llama3_special_tokens(), &VocabOptions::default()).unwrap();
        Arc::new(VocabIndex::new(&v).unwrap())
    });
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.to_string_lossy().contains("/W")).collect();
    files.sort();
    let opts = SchemaOptions { whitespace: std::env::var("WS").map(|w| if w == "compact" { formcast_jsonschema::Whitespace::Compact } else { formcast_jsonschema::Whitespace::Any { max_per_gap: w.parse().unwrap() } }).unwrap_or_default(), strict: std::env::var("STRICT").map(|v| v != "0").unwrap_or(true), ..Default::default() };
    for f in files {
        let doc = parse(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let Some(schema) = doc.get("schema").filter(|s| !matches!(s, formcast_jsonschema::Json::Null)) else { continue };
        let text = schema.to_text();
        let mut front = Vec::new();
        let mut grammar = None;
        for _ in 0..runs("FRONT_N", 20) {
            let t = Instant::now();
            match json_schema_str_to_grammar(&text, &opts) {
                Ok((g, _)) => grammar = Some(g),
                Err(e) => {
                    println!("{:28} refused: {e}", f.file_stem().unwrap().to_string_lossy());
                    break;
                }
            }
            front.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let Some(g) = grammar else { continue };
        let mut engine = Vec::new();
        let mut states = 0;
        if let Some(v) = &vocab {
            for _ in 0..runs("ENGINE_N", 5) {
                let t = Instant::now();
                let cg = CompiledGrammar::compile(&g, v.clone(), &CompileOptions::default(), &Budget::unlimited()).unwrap();
                engine.push(t.elapsed().as_secs_f64() * 1e3);
                states = cg.automaton.n_states();
                if std::env::var("RULES").is_ok() && engine.len() == 1 {
                    let a = &cg.automaton;
                    // A rule's states run to the next rule's start (rules with a
                    // narrow table of their own come last).
                    let mut starts: Vec<usize> = a.rule_start.iter().map(|&s| s as usize).collect();
                    starts.push(a.n_states());
                    starts.sort_unstable();
                    let mut per: Vec<(usize, String)> = (0..a.rule_start.len())
                        .map(|r| {
                            let start = a.rule_start[r] as usize;
                            let end = starts[starts.partition_point(|&x| x <= start)..].first().copied().unwrap_or(start);
                            (end - start, a.rule_names[r].clone())
                        })
                        .collect();
                    per.sort_by(|x, y| y.0.cmp(&x.0));
                    for (n, name) in per.iter().take(8) {
                        println!("    {n:>6}  {name}");
                        if std::env::var("RULES").as_deref() == Ok("body") {
                            let body = g.rules.iter().find(|r| &r.name == name).map(|r| format!("{:?}", r.body)).unwrap_or_default();
                            println!("            {}", &body[..body.len().min(600)]);
                        }
                    }
                }
            }
        }
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        if std::env::var("ALL").is_ok() {
            println!("{name}: front {front:.3?} engine {engine:.3?}");
        }
        println!(
            "{name:<28} schema→grammar {:>7.3} ms ({} rules, {} DFA states)   engine compile {:>7.3} ms   total {:>7.3} ms",
            median(front.clone()),
            g.rules.len(),
            states,
            if engine.is_empty() { f64::NAN } else { median(engine.clone()) },
            median(front) + if engine.is_empty() { 0.0 } else { median(engine) }
        );
    }
}
