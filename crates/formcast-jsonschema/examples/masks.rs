//! Per-token mask times of maskbench documents, for profiling the engine's
//! cold masks: `cargo run --release --example masks -- JOBS.json NAME...`
//! where JOBS.json is a list of `{name, schema_text, ids}` (token ids of a
//! valid document under the Llama-3 tokenizer; `tag_text`, a structural tag,
//! in place of `schema_text` for a tool-call output, or `builtin_json: true`
//! for any JSON) and each NAME a suffix of a
//! job's name. Every job gets a fresh vocabulary index (its partitions are
//! cold) unless WARM=1; PREBUILT=n builds n of them before the first job.
//! PREWARM=1 warms each index as the Python extension's tokenizer does.
//! REPS=n repeats (for a profiler); TOP=n prints the n slowest masks of
//! each job (JOB_TIMES=1: the total and slowest mask of each job, with ALL).
//! MASK_ONLY=n computes only step n's mask (for a profiler); CG_STEP=n
//! computes every mask and step n's in `profiled_fill` (see there).
//! DIGEST=1 prints a digest of each job's masks (to check that a
//! change to the engine keeps every mask); STEPS=1 prints every mask's
//! time. PERF_CTL=FIFO PERF_STEP=n profiles one step's mask alone:
//! `perf record --control=fifo:FIFO --delay=-1 ...`. Run it with `MIMALLOC_ALLOW_THP=0
//! MIMALLOC_PURGE_DELAY=-1`, the allocator settings the Python extension
//! makes (see formcast-py's lib.rs): with transparent huge pages, a mask
//! that allocates may pay for zeroing 2 MiB pages, milliseconds that the
//! extension never sees.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use formcast_engine::{Budget, CompileOptions, CompiledGrammar, Matcher, VocabIndex};
use serde_json::Value;
use formcast_jsonschema::{json_schema_str_to_grammar, SchemaOptions};
use formcast_tokenizer::{llama3_special_tokens, Vocab, VocabOptions};

fn env(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let jobs: Value = serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let tok = std::env::var("TOKENIZER").unwrap_or_else(|_| "/work/shared/tokenizers/llama3-tokenizer.model".into());
    let vocab = Vocab::from_tiktoken(&std::fs::read_to_string(&tok).unwrap(), &llama3_special_tokens(), &VocabOptions::default()).unwrap();
    let opts = SchemaOptions { strict: false, ..Default::default() };
    let Value::Array(jobs) = jobs else { panic!("a list of jobs") };
    let mut index = Arc::new(VocabIndex::new(&vocab).unwrap());
    // PREBUILT=n: build n fresh indexes before any job (each cold job takes
    // one), so that a profiler started late (`perf record -D`) sees masks only.
    let mut prebuilt: Vec<Arc<VocabIndex>> = (0..env("PREBUILT", 0)).map(|_| Arc::new(VocabIndex::new(&vocab).unwrap())).collect();
    if !prebuilt.is_empty() {
        eprintln!("prebuilt {} indexes", prebuilt.len());
    }
    // ALL: every job in order in one process (as the benchmark runs them),
    // with a summary of every mask time at the end.
    let all = args.get(2).is_some_and(|a| a == "ALL");
    let names: Vec<String> = if all { jobs.iter().map(|j| j["name"].as_str().unwrap_or("").to_string()).collect() } else { args[2..].to_vec() };
    let mut every = Vec::new();
    let mask_only = std::env::var("MASK_ONLY").ok().and_then(|v| v.parse::<usize>().ok());
    let cg_step = env("CG_STEP", usize::MAX);
    let mut perf_ctl = std::env::var("PERF_CTL").ok().map(|p| std::fs::OpenOptions::new().write(true).open(p).unwrap());
    for _ in 0..env("REPS", 1) {
        for name in &names {
            let Some(job) = jobs.iter().find(|j| j["name"].as_str().is_some_and(|n| n.ends_with(name.as_str()))) else {
                eprintln!("no job {name}");
                continue;
            };
            let Some(ids) = job["ids"].as_array() else { continue };
            if env("WARM", 0) == 0 {
                index = prebuilt.pop().unwrap_or_else(|| Arc::new(VocabIndex::new(&vocab).unwrap()));
            }
            if env("PREWARM", 0) == 1 {
                prewarm(&index);
            }
            let grammar = if job["builtin_json"].as_bool() == Some(true) {
                Some(formcast_grammar::json::builtin_json_grammar())
            } else if let Some(tag) = job["tag_text"].as_str() {
                let lookup = |s: &str| vocab.tokens.iter().position(|b| b == s.as_bytes()).map(|i| i as u32);
                let lower = formcast_structural::LowerOptions { vocab_size: Some(vocab.tokens.len() as u32), ..Default::default() };
                formcast_structural::compile_str(tag, Some(&lookup), &formcast_structural::Options { lower }).map(|c| c.grammar).ok()
            } else {
                job["schema_text"].as_str().and_then(|text| json_schema_str_to_grammar(text, &opts).ok()).map(|(g, _)| g)
            };
            let Some(g) = grammar else { continue };
            let mut opts = CompileOptions::default();
            if job["builtin_json"].as_bool() == Some(true) {
                // As the extension's `Grammar.builtin_json()` asks.
                opts.prepare_texts = formcast_grammar::json::BUILTIN_JSON_PREPARED.iter().map(|t| t.as_bytes().to_vec()).collect();
            }
            let Ok(cg) = CompiledGrammar::compile(&g, index.clone(), &opts, &Budget::unlimited()) else { continue };
            let cg = Arc::new(cg);
            // As the Python extension's compile does.
            cg.prepare();
            let mut m = Matcher::new(cg, false, None).unwrap();
            let mut out = vec![0u32; index.logits_size.div_ceil(32)];
            let mut times = Vec::new();
            let mut digest = std::collections::hash_map::DefaultHasher::new();
            for id in ids {
                // PERF_CTL=fifo PERF_STEP=n: `perf record --control=fifo:FIFO
                // --delay=-1` samples only the mask of step n.
                // MASK_ONLY=n: only step n's mask is computed (for a
                // profiler: `--toggle-collect` then sees that mask alone).
                if mask_only.is_some_and(|n| n != times.len()) {
                    times.push(0.0);
                    if !m.accept_token(id.as_u64().unwrap() as u32).unwrap() {
                        break;
                    }
                    continue;
                }
                let profiled = perf_ctl.is_some() && env("PERF_STEP", usize::MAX) == times.len();
                if profiled {
                    perf_ctl.as_mut().unwrap().write_all(b"enable\n").unwrap();
                }
                let t = Instant::now();
                if cg_step == times.len() {
                    profiled_fill(&mut m, &mut out);
                } else {
                    m.fill_next_token_bitmask(&mut out).unwrap();
                }
                times.push(t.elapsed().as_secs_f64() * 1e6);
                if profiled {
                    perf_ctl.as_mut().unwrap().write_all(b"disable\n").unwrap();
                    // perf reads the fifo in its own time: let it stop
                    // before the next index is built.
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                out.hash(&mut digest);
                if env("STEPS", 0) == 1 {
                    eprintln!("step {} {:.0} µs", times.len() - 1, times.last().unwrap());
                }
                if !m.accept_token(id.as_u64().unwrap() as u32).unwrap() {
                    break;
                }
            }
            every.extend(times.iter().copied());
            if env("DIGEST", 0) == 1 {
                eprintln!("{name} {} masks, digest {:016x}", times.len(), digest.finish());
            }
            if all {
                if env("JOB_TIMES", 0) == 1 {
                    let max = times.iter().copied().fold(0.0, f64::max);
                    eprintln!("{name} total {:.0} max {max:.0}", times.iter().sum::<f64>());
                }
                continue;
            }
            let total: f64 = times.iter().sum();
            let mut top: Vec<(f64, usize)> = times.iter().copied().zip(0..).collect();
            top.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
            let top: Vec<String> = top.iter().take(env("TOP", 8)).map(|(t, i)| format!("{i}:{t:.0}")).collect();
            println!("{name:24} {} tokens, masks {total:.0} µs; slowest {}", times.len(), top.join(" "));
        }
    }
    if every.is_empty() {
        println!("no masks: no job matched, compiled or held a token");
        return;
    }
    every.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |q: f64| every[((every.len() as f64 * q) as usize).min(every.len() - 1)];
    let mean = every.iter().sum::<f64>() / every.len() as f64;
    let over = |t: f64| every.iter().filter(|&&x| x > t).count();
    println!("{} masks: mean {mean:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} µs; over 100 µs {}, over 150 µs {}", every.len(), pct(0.5), pct(0.99), pct(0.999), over(100.0), over(150.0));
}

/// Step CG_STEP's mask, alone under a name a profiler can single out:
/// `valgrind --tool=callgrind --collect-atstart=no
/// --toggle-collect='*profiled_fill*'` counts that mask with every earlier
/// step's partitions already built, as the benchmarks meet it.
#[inline(never)]
fn profiled_fill(m: &mut Matcher, out: &mut [u32]) {
    m.fill_next_token_bitmask(out).unwrap();
}

/// What the Python extension's tokenizer does before it is handed out
/// (formcast-py's `warm_strings`): the free-text cover that avoids `<`, the
/// partitions of an unbounded string's,
/// the built-in JSON grammar's and an open object's states between ASCII
/// characters, and a bounded string decoded past its first block. PREWARM=1 runs it before
/// each job, so that masks are timed as the extension sees them.
fn prewarm(index: &Arc<VocabIndex>) {
    let opts = SchemaOptions::default();
    let compile = |g: &formcast_grammar::Grammar| CompiledGrammar::compile(g, index.clone(), &CompileOptions::default(), &Budget::unlimited()).unwrap();
    let string = json_schema_str_to_grammar(r#"{"type": "string"}"#, &opts).unwrap().0;
    let object = json_schema_str_to_grammar(r#"{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true}"#, &opts).unwrap().0;
    index.free_text_cover([1 << b'<', 0, 0, 0]);
    index.build_common_class_covers();
    for g in [string, formcast_grammar::json::builtin_json_grammar(), object] {
        compile(&g).partitions_between_ascii(|| ());
    }
    let g = json_schema_str_to_grammar(r#"{"type": "string", "minLength": 1, "maxLength": 100}"#, &opts).unwrap().0;
    let mut m = Matcher::new(Arc::new(compile(&g)), false, None).unwrap();
    let mut out = vec![0u32; index.logits_size.div_ceil(32)];
    m.accept_bytes(b"\"").unwrap();
    for _ in 0..34 {
        m.fill_next_token_bitmask(&mut out).unwrap();
        m.accept_bytes(b"a").unwrap();
    }
}
