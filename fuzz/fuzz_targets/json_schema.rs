//! JSON Schema front-end × every output style and option: a generated
//! schema (every keyword, `$ref` cycles, deep nesting, huge bounds) gives a
//! grammar or an error, never a panic, stack overflow or hang; a grammar
//! compiles (or hits a limit) and a matcher over it behaves (see common).
#![no_main]

mod common;

use common::{exercise, on_small_stack, Gen};
use formcast_jsonschema::{json_schema_str_to_grammar, SchemaOptions, Style, Whitespace};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut g = Gen::new(data);
    let style = Style::ALL[g.below(Style::ALL.len())];
    let whitespace = match g.below(4) {
        0 => Whitespace::Compact,
        1 => Whitespace::dumps(if g.flip() { Some(2) } else { None }),
        _ => Whitespace::Any { max_per_gap: g.below(12) as u32 },
    };
    let opts = SchemaOptions {
        style,
        whitespace,
        any_order: g.flip(),
        strict: g.flip(),
        lenient: g.flip(),
        excludes: if g.below(6) == 0 { vec!["<|x|>".into()] } else { Vec::new() },
        time_budget_ms: 300,
        ..Default::default()
    };
    let schema = g.schema_document();
    let probe = g.u.take_rest().to_vec();
    if std::env::var_os("FUZZ_SHOW").is_some() {
        // To read a crash input: FUZZ_SHOW=1 cargo fuzz run json_schema <artifact>
        eprintln!("style {} opts {opts:?}\nschema {schema}", style.name());
    }
    on_small_stack(move || {
        if let Ok((grammar, _)) = json_schema_str_to_grammar(&schema, &opts) {
            exercise(&grammar, &probe);
        }
    });
});
