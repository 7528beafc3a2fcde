//! Prints the grammar of a schema (debugging aid):
//! `cargo run --example show -- '<schema json>' [instance...]`

use std::sync::Arc;

use formcast_engine::{Budget, CompileOptions, CompiledGrammar, Matcher, VocabIndex};
use formcast_grammar::Expr;
use formcast_jsonschema::{json_schema_str_to_grammar, SchemaOptions, Whitespace};
use formcast_tokenizer::{Vocab, VocabKind};

fn show(e: &Expr, names: &[String]) -> String {
    match e {
        Expr::Empty => "ε".into(),
        Expr::Nothing => "∅".into(),
        Expr::Bytes(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Expr::Chars(r) => format!("[{}]", r.iter().map(|(a, b)| if a == b { format!("{}", char::from_u32(*a).unwrap().escape_debug()) } else { format!("{}-{}", char::from_u32(*a).unwrap().escape_debug(), char::from_u32(*b).unwrap().escape_debug()) }).collect::<Vec<_>>().join("")),
        Expr::ByteSet(r) => format!("bytes{r:?}"),
        Expr::Rule(r) => names[*r as usize].clone(),
        Expr::Seq(v) => format!("({})", v.iter().map(|x| show(x, names)).collect::<Vec<_>>().join(" ")),
        Expr::Alt(v) => format!("({})", v.iter().map(|x| show(x, names)).collect::<Vec<_>>().join(" | ")),
        Expr::Repeat { expr, min, max } => format!("{}{{{min},{}}}", show(expr, names), max.map(|m| m.to_string()).unwrap_or_default()),
        other => format!("{other:?}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let strict = std::env::var("LOOSE").is_err();
    // WS=n: at most n whitespace characters per gap (the default layout); compact otherwise.
    let whitespace = std::env::var("WS").ok().and_then(|w| w.parse().ok()).map_or(Whitespace::Compact, |n| Whitespace::Any { max_per_gap: n });
    let opts = SchemaOptions { whitespace, strict, ..Default::default() };
    let schema = if args[1].starts_with('@') { std::fs::read_to_string(&args[1][1..]).unwrap() } else { args[1].clone() };
    match json_schema_str_to_grammar(&schema, &opts) {
        Err(e) => println!("error: {e}"),
        Ok((g, w)) => {
            let names: Vec<String> = g.rules.iter().map(|r| r.name.clone()).collect();
            let brief = std::env::var("BRIEF").is_ok();
            for r in &g.rules {
                let text = show(&r.body, &names);
                if brief {
                    println!("{} ::= [{} chars] {}", r.name, text.len(), text.chars().take(300).collect::<String>());
                } else {
                    println!("{} ::= {}", r.name, text);
                }
            }
            for x in w {
                println!("warning: {x}");
            }
            let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
            tokens.push(b"<eos>".to_vec());
            let v = Vocab { tokens, special: vec![256], stop: vec![256], logits_size: 257, kind: VocabKind::Raw };
            let vi = Arc::new(VocabIndex::new(&v).unwrap());
            let cg = Arc::new(CompiledGrammar::compile(&g, vi, &CompileOptions::default(), &Budget::unlimited()).unwrap());
            for inst in &args[2..] {
                let mut m = Matcher::new(cg.clone(), false, None).unwrap();
                let ok = m.accept_bytes(inst.as_bytes()).unwrap() && m.can_end();
                println!("{inst} -> {ok}");
            }
        }
    }
}
