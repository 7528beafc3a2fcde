//! A vocabulary prepared for matching: the token trie plus per-id facts.
//!
//! The trie is laid out flat in depth-first order: node `i`'s subtree is
//! `i..nodes[i].end`, so rejecting a byte skips a whole subtree with one
//! assignment and the walk needs no pointers. Built once per tokenizer and
//! shared (through `Arc`) by every grammar compiled against it.

use std::sync::Arc;

use formcast_tokenizer::Vocab;

use crate::bitset::{has_byte, Bitset};
use crate::error::EngineError;
use crate::partition::{clear_all, set_all, PartitionCache};

/// One trie node: the byte leading into it, the end of its subtree, and the
/// tokens whose bytes end exactly here.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub end: u32,
    pub tok_start: u32,
    pub tok_len: u16,
    pub byte: u8,
}

/// A set of tokens that some states take whole, through interior states,
/// with the paths to the tokens outside it: what free text that avoids some
/// bytes (ASCII bytes, and lead bytes of characters) takes of a vocabulary
/// ([`VocabIndex::free_text_cover`]), or a loop on a class of ASCII bytes
/// ([`VocabIndex::class_cover`]).
#[derive(Debug)]
pub struct Cover {
    /// The tokens.
    pub tokens: Bitset,
    /// The first bytes all of whose tokens are among them.
    pub whole: [u64; 4],
    /// The trie nodes whose subtrees hold a token outside the cover, in
    /// trie order: the paths to the few tokens free text must still walk
    /// (those holding an excluded byte, broken UTF-8). A node marked `true`
    /// holds no token of the cover in its subtree, and its descendants are
    /// not listed (a walk goes through the whole subtree there). None
    /// when more than [`MAX_SKELETON_OUTSIDE`] tokens are outside: text
    /// that avoids common letters (a string that must not contain a word
    /// yet) would list most of the trie, and building it cost more than
    /// the walks it saves.
    pub skeleton: Option<Vec<SkeletonNode>>,
    /// A class cover's exits, one per skeleton node that is not whole
    /// (empty for free text): see [`SkeletonExits`].
    pub exits: Vec<SkeletonExits>,
}

/// Of a class cover's skeleton node that is not whole (a path of the
/// class): the bytes outside the class that the paths below it leave the
/// class by (every token below that is not of the class, at its first byte
/// outside it: the bytes of the whole nodes in its subtree), the skeleton's
/// index past the node's subtree, and the index of these entries past it.
/// A walk from a state whose class paths can leave the class by none of
/// those bytes jumps the subtree: for `[a-z0-9-]+`, only `"` goes on, and
/// the other 2,000 of the skeleton's 2,500 nodes on Llama-3 lead only to
/// tokens with an upper-case letter, a `_` or a `.`. A whole node's bytes
/// are its own byte, so it has no entry (the entries would otherwise more
/// than double a cover's memory, and a process's heap reserve is sized for
/// its compiles).
#[derive(Debug, Clone, Copy)]
pub struct SkeletonExits {
    pub bytes: [u64; 4],
    pub end: u32,
    pub end_exit: u32,
}

/// [`SkeletonExits`] of a class cover's skeleton, one per node that is not
/// whole, in skeleton order. The whole nodes are exactly those of a byte
/// outside the class (the rest lie on paths of the class).
fn skeleton_exits(skeleton: &[SkeletonNode]) -> Vec<SkeletonExits> {
    let mut exits: Vec<SkeletonExits> = Vec::with_capacity(skeleton.iter().filter(|sn| !sn.whole).count());
    // (skeleton index, entry) of the nodes whose subtrees are open,
    // outermost first.
    let mut open: Vec<(usize, usize)> = Vec::new();
    let close = |exits: &mut Vec<SkeletonExits>, open: &mut Vec<(usize, usize)>, k: usize| {
        let (_, e) = open.pop().expect("an open node");
        exits[e].end = k as u32;
        exits[e].end_exit = exits.len() as u32;
        if let Some(&(_, parent)) = open.last() {
            let b = exits[e].bytes;
            (0..4).for_each(|w| exits[parent].bytes[w] |= b[w]);
        }
    };
    for (k, sn) in skeleton.iter().enumerate() {
        while open.last().is_some_and(|&(j, _)| sn.id >= skeleton[j].node.end) {
            close(&mut exits, &mut open, k);
        }
        if sn.whole {
            if let Some(&(_, parent)) = open.last() {
                exits[parent].bytes[sn.node.byte as usize / 64] |= 1 << (sn.node.byte % 64);
            }
        } else {
            exits.push(SkeletonExits { bytes: [0; 4], end: k as u32 + 1, end_exit: exits.len() as u32 + 1 });
            open.push((k, exits.len() - 1));
        }
    }
    while !open.is_empty() {
        close(&mut exits, &mut open, skeleton.len());
    }
    exits
}

/// A node of a cover's skeleton, with a copy of the trie node: a walk
/// down the skeleton reads it in order instead of trie nodes scattered
/// over the trie's megabytes (a cold mask's walk of `[a-z0-9-]`'s 2,500
/// skeleton nodes missed the cache at most of them).
#[derive(Debug, Clone, Copy)]
pub struct SkeletonNode {
    /// The trie node's index.
    pub id: u32,
    pub node: Node,
    /// Its subtree holds no token of the cover (nothing below is listed).
    pub whole: bool,
}

/// Most tokens outside a free-text cover for which it gets a skeleton
/// (text before a `<` trigger leaves about 860 of Llama-3's out).
pub const MAX_SKELETON_OUTSIDE: usize = 4096;

/// Most skeleton nodes of a class cover ([`VocabIndex::class_cover`]):
/// `[a-z0-9-]` has about 2,500 on Llama-3.
pub const MAX_CLASS_SKELETON: usize = 8192;

/// Most trie nodes the pass that finds a class cover looks at: `[a-z0-9-]`
/// takes about 7,000 on Llama-3; a class of nearly all printable ASCII
/// looks at most of the trie's 274,000 (2 ms), where the walk it would
/// replace has other shortcuts.
pub const MAX_CLASS_VISITS: usize = 16_384;

/// The skeleton of a cover (see [`Cover::skeleton`]), by counting
/// the tokens outside it in trie order: a node's subtree holds the tokens
/// `node_tokens[tok_base[i]..tok_base[end]]`, so prefix counts of those
/// outside answer for every node at once, and the pass descends only into
/// nodes that hold some.
fn cover_skeleton(nodes: &[Node], node_tokens: &[u32], tok_base: &[u32], tokens: &Bitset) -> Option<Vec<SkeletonNode>> {
    let outside_count = node_tokens.iter().filter(|&&t| tokens.words[t as usize >> 5] >> (t & 31) & 1 == 0).count();
    if outside_count > MAX_SKELETON_OUTSIDE {
        return None;
    }
    let mut outside = Vec::with_capacity(node_tokens.len() + 1);
    let mut n = 0u32;
    outside.push(0);
    for &t in node_tokens {
        n += (tokens.words[t as usize >> 5] >> (t & 31) & 1 == 0) as u32;
        outside.push(n);
    }
    let mut skeleton = Vec::new();
    let mut i = 1usize;
    while i < nodes.len() {
        let end = nodes[i].end as usize;
        let (lo, hi) = (tok_base[i] as usize, tok_base[end] as usize);
        let out = outside[hi] - outside[lo];
        if out == 0 {
            i = end;
        } else if out as usize == hi - lo {
            skeleton.push(SkeletonNode { id: i as u32, node: nodes[i], whole: true });
            i = end;
        } else {
            skeleton.push(SkeletonNode { id: i as u32, node: nodes[i], whole: false });
            i += 1;
        }
    }
    Some(skeleton)
}

/// The vocabulary as the engine needs it.
#[derive(Debug)]
pub struct VocabIndex {
    /// Bytes of every token id below `vocab_len`.
    pub tokens: Vec<Vec<u8>>,
    /// Number of real token ids.
    pub vocab_len: usize,
    /// Width of the logits (ids in `vocab_len..logits_size` are padding).
    pub logits_size: usize,
    /// Special/control tokens: excluded from text matching.
    pub is_special: Vec<bool>,
    /// End-of-generation ids.
    pub stop: Vec<u32>,
    pub stop_bits: Bitset,
    /// Flat DFS-ordered trie of all non-special, non-empty tokens. Node 0 is
    /// the root.
    pub nodes: Vec<Node>,
    /// Token ids by node (`nodes[i].tok_start ..+ tok_len`).
    pub node_tokens: Vec<u32>,
    /// The longest token, in bytes.
    pub max_token_len: usize,
    /// Per node: the bytes that appear anywhere strictly below it (256-bit
    /// set). Lets a walk accept a whole subtree at once when every byte in it
    /// keeps the automaton in the same state.
    pub below: Vec<[u64; 4]>,
    /// Per node: the length of the longest path strictly below it (0 for a
    /// leaf), capped at `u16::MAX`. With `below`, lets a walk accept a
    /// subtree at once when every path in it stays on a chain of states
    /// (a length-bounded string: "up to 17 more characters").
    pub height: Vec<u16>,
    /// Per node (plus one past the end): index into `node_tokens` where the
    /// node's subtree starts; a subtree's tokens are
    /// `node_tokens[tok_base[i]..tok_base[nodes[i].end]]`.
    pub tok_base: Vec<u32>,
    /// Per node: when every path strictly below it is a prefix of
    /// unescaped JSON string text (see [`text_next`]) read from a character
    /// boundary, the most characters any such path starts; `u16::MAX`
    /// otherwise. Lets a partition walk accept at once a subtree of
    /// multi-byte UTF-8 text from a state that takes that many characters
    /// of any text (a JSON string body, or one with room left).
    pub text_chars: Vec<u16>,
    /// The root's child on each byte, if any: a walk from a state with few
    /// first bytes goes straight to their subtrees.
    pub root_child: [Option<u32>; 256],
    /// Per-DFA-state vocabulary partitions, shared by every grammar compiled
    /// for this vocabulary (see [`crate::partition`]).
    pub partitions: PartitionCache,
    /// The tokens that are text (see [`text_next`]) read from a character
    /// boundary, by the number of characters they start:
    /// `text_by_chars[text_chars_end[n - 1]..text_chars_end[n]]` start `n`.
    text_by_chars: Vec<u32>,
    text_chars_end: Vec<u32>,
    /// Per node: from its first byte on, when every path through it is text
    /// read from a character boundary, the most characters one starts
    /// (`u16::MAX` otherwise); and over the run of such siblings that
    /// starts here, the node that ends it (the next sibling that is not
    /// text, or the parent's subtree end) and the most characters any of
    /// them starts. A walk that holds every text token up to some number of
    /// characters ([`VocabIndex::text_up_to`]) jumps over such runs.
    pub sibling_text: Vec<u16>,
    pub text_run_end: Vec<u32>,
    pub text_run_chars: Vec<u16>,
    /// The children of node `i`, in order, are
    /// `child_node[child_start[i]..child_start[i + 1]]`, with their bytes
    /// in `child_byte`: a walk from a state that moves on a few of a
    /// node's many children finds those in one contiguous read instead of
    /// stepping over every sibling's node.
    pub child_start: Vec<u32>,
    pub child_node: Vec<u32>,
    pub child_byte: Vec<u8>,
    /// Per node: whether every path strictly below it is a prefix of
    /// well-formed UTF-8 (any characters, see [`utf8_next`]) read from a
    /// character boundary. With `below`, lets a walk accept at once a
    /// subtree of free text from a state or set that every character but a
    /// few ASCII bytes leads back to (text before a tool call's trigger).
    pub utf8_below: Vec<bool>,
    /// What free text that avoids no byte takes: the tokens that are
    /// well-formed UTF-8 (the last character possibly incomplete), and
    /// the first bytes all of whose tokens are such (see
    /// [`VocabIndex::free_text_cover`]).
    free_text_all: Arc<Cover>,
    /// [`VocabIndex::free_text_cover`]'s sets, by excluded bytes.
    free_text_covers: std::sync::Mutex<Vec<([u64; 4], Arc<Cover>)>>,
    /// [`VocabIndex::class_cover`]'s sets, by class (none: too large). A
    /// slot is made before its cover is built, so that a walk needing a
    /// cover that a background build has begun waits for it (see
    /// `CompiledGrammar::build_class_covers_in_background`) instead of
    /// building it a second time.
    class_covers: std::sync::Mutex<Vec<([u64; 2], ClassCoverSlot)>>,
    /// [`VocabIndex::text_up_to`]'s sets (see there for when each is built).
    text_up_to: Vec<std::sync::OnceLock<Bitset>>,
}

/// The 128-bit set of a character class's ASCII bytes, written as inside
/// brackets (`a-z0-9-`: ranges, a `-` at either end standing for itself).
fn ascii_class(spec: &str) -> [u64; 2] {
    let b = spec.as_bytes();
    let mut class = [0u64; 2];
    let mut i = 0;
    while i < b.len() {
        let (lo, hi, len) = if i + 2 < b.len() && b[i + 1] == b'-' { (b[i], b[i + 2], 3) } else { (b[i], b[i], 1) };
        for c in lo..=hi {
            class[c as usize / 64] |= 1 << (c % 64);
        }
        i += len;
    }
    class
}

/// A class cover, built once by whichever thread asks first; the others wait.
type ClassCoverSlot = Arc<std::sync::OnceLock<Option<Arc<Cover>>>>;

/// Byte budget of the shared partition cache.
const PARTITION_CACHE_BYTES: usize = 256 << 20;

/// Character counts whose text-token sets are built with the index.
const EAGER_TEXT_SETS: u32 = 64;

/// No transition in the text decoder ([`text_next`]).
pub const TEXT_DEAD: u8 = u8::MAX;

/// The decoder of unescaped JSON string text: well-formed UTF-8 (no
/// overlong forms, surrogates or values past U+10FFFF) of the characters a
/// JSON string may hold literally (U+0020 and up, except `"` and `\`).
/// States: 0 character boundary, 1–3 that many continuation bytes still
/// due, 4 after E0 (A0–BF next), 5 after ED (80–9F), 6 after F0 (90–BF),
/// 7 after F4 (80–8F). Only states 1–7 accept continuation bytes (80–BF).
#[inline(always)]
pub fn text_next(r: u8, b: u8) -> u8 {
    // A table: the cases below as a function cost a call and a dozen
    // branches per byte, and the walks ask it for every byte of a table's
    // classes (W4's `"url":"` value mask: 2,700 times, 8% of it).
    match TEXT_NEXT.get(r as usize) {
        Some(row) => row[b as usize],
        None => TEXT_DEAD,
    }
}

/// [`text_next`] for every decoder state and byte.
static TEXT_NEXT: [[u8; 256]; 8] = {
    let mut t = [[TEXT_DEAD; 256]; 8];
    let mut r = 0;
    while r < 8 {
        let mut b = 0;
        while b < 256 {
            t[r][b] = text_next_by_cases(r as u8, b as u8);
            b += 1;
        }
        r += 1;
    }
    t
};

const fn text_next_by_cases(r: u8, b: u8) -> u8 {
    let cont = matches!(b, 0x80..=0xBF);
    match r {
        0 => match b {
            0x20..=0x21 | 0x23..=0x5B | 0x5D..=0x7F => 0,
            0xC2..=0xDF => 1,
            0xE0 => 4,
            0xE1..=0xEC | 0xEE..=0xEF => 2,
            0xED => 5,
            0xF0 => 6,
            0xF1..=0xF3 => 3,
            0xF4 => 7,
            _ => TEXT_DEAD,
        },
        1..=3 if cont => r - 1,
        4 if matches!(b, 0xA0..=0xBF) => 1,
        5 if matches!(b, 0x80..=0x9F) => 1,
        6 if matches!(b, 0x90..=0xBF) => 2,
        7 if matches!(b, 0x80..=0x8F) => 2,
        _ => TEXT_DEAD,
    }
}

/// The trie's tokens that are text read from a character boundary, sorted
/// by the characters they start, with the end of each count's run (index
/// `n`: the tokens starting at most `n`; `n` up to the most any starts).
fn text_tokens_by_chars(nodes: &[Node], node_tokens: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut by_chars: Vec<(u16, u32)> = Vec::new();
    // (subtree end, decoder state, characters started) per depth.
    let mut stack: Vec<(u32, u8, u16)> = vec![(nodes[0].end, 0, 0)];
    let mut i = 1;
    while i < nodes.len() {
        while i as u32 >= stack.last().unwrap().0 {
            stack.pop();
        }
        let (_, r, c) = *stack.last().unwrap();
        let node = nodes[i];
        let next = text_next(r, node.byte);
        if next == TEXT_DEAD {
            i = node.end as usize;
            continue;
        }
        let c = c.saturating_add(u16::from(!(0x80..0xC0).contains(&node.byte)));
        let toks = &node_tokens[node.tok_start as usize..node.tok_start as usize + node.tok_len as usize];
        by_chars.extend(toks.iter().map(|&id| (c, id)));
        stack.push((node.end, next, c));
        i += 1;
    }
    by_chars.sort_unstable();
    let most = by_chars.last().map_or(0, |&(c, _)| c as usize);
    let mut end = vec![0u32; most + 1];
    for &(c, _) in &by_chars {
        end[c as usize] += 1;
    }
    for n in 1..end.len() {
        end[n] += end[n - 1];
    }
    (by_chars.into_iter().map(|(_, id)| id).collect(), end)
}

/// The decoder states from which byte `b` (moving by `next`) leads to one
/// of `ok` (a bit per state): a child's "every path below is decoded from"
/// states, seen from its parent.
fn states_from(ok: u8, next: impl Fn(u8) -> u8) -> u8 {
    let mut m = 0u8;
    for r in 0..8u8 {
        let n = next(r);
        if n != TEXT_DEAD && ok >> n & 1 == 1 {
            m |= 1 << r;
        }
    }
    m
}

/// The decoder of well-formed UTF-8 of any characters: [`text_next`]'s,
/// with every ASCII byte a character.
pub fn utf8_next(r: u8, b: u8) -> u8 {
    if r == 0 && b < 0x80 {
        0
    } else {
        text_next(r, b)
    }
}

impl VocabIndex {
    /// Builds the index (sorting and laying out the trie).
    pub fn new(vocab: &Vocab) -> Result<VocabIndex, EngineError> {
        let vocab_len = vocab.tokens.len();
        let logits_size = vocab.logits_size.max(vocab_len);
        let mut is_special = vec![false; vocab_len];
        for &s in &vocab.special {
            let s = s as usize;
            if s >= vocab_len {
                return Err(EngineError::Usage(format!("special token id {s} is outside the vocabulary (size {vocab_len})")));
            }
            is_special[s] = true;
        }
        let mut stop_bits = Bitset::new(logits_size);
        for &s in &vocab.stop {
            if s as usize >= vocab_len {
                return Err(EngineError::Usage(format!("stop token id {s} is outside the vocabulary (size {vocab_len})")));
            }
            stop_bits.set(s as usize);
        }
        let mut order: Vec<u32> = (0..vocab_len as u32)
            .filter(|&i| !is_special[i as usize] && !vocab.tokens[i as usize].is_empty())
            .collect();
        order.sort_unstable_by(|&a, &b| vocab.tokens[a as usize].cmp(&vocab.tokens[b as usize]).then(a.cmp(&b)));

        let mut nodes: Vec<Node> = vec![Node { end: 0, tok_start: 0, tok_len: 0, byte: 0 }];
        let mut parent: Vec<u32> = vec![0];
        let mut tok_base: Vec<u32> = vec![0];
        let mut node_tokens: Vec<u32> = Vec::with_capacity(order.len());
        // path[d] = node index at depth d+1 of the current branch.
        let mut path: Vec<u32> = Vec::new();
        let mut prev: &[u8] = &[];
        let mut max_token_len = 0;
        for &id in &order {
            let bytes = vocab.tokens[id as usize].as_slice();
            max_token_len = max_token_len.max(bytes.len());
            let common = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            while path.len() > common {
                let n = path.pop().unwrap();
                nodes[n as usize].end = nodes.len() as u32;
            }
            for &b in &bytes[common..] {
                parent.push(path.last().copied().unwrap_or(0));
                tok_base.push(node_tokens.len() as u32);
                nodes.push(Node { end: 0, tok_start: 0, tok_len: 0, byte: b });
                path.push(nodes.len() as u32 - 1);
            }
            let last = *path.last().expect("token bytes are non-empty") as usize;
            if nodes[last].tok_len == 0 {
                nodes[last].tok_start = node_tokens.len() as u32;
            }
            nodes[last].tok_len += 1;
            node_tokens.push(id);
            prev = bytes;
        }
        let total = nodes.len() as u32;
        for n in path {
            nodes[n as usize].end = total;
        }
        nodes[0].end = total;
        tok_base.push(node_tokens.len() as u32);
        // Children come after their parent in DFS order: fold bottom-up.
        // Also per node: from which text decoder states every path below is
        // text (bit r: from state r), and how many characters the longest
        // path below starts.
        let mut below = vec![[0u64; 4]; nodes.len()];
        let mut height = vec![0u16; nodes.len()];
        let mut ok_from = vec![u8::MAX; nodes.len()];
        let mut utf8_from = vec![u8::MAX; nodes.len()];
        let mut chars = vec![0u16; nodes.len()];
        // Per byte: the decoder's moves, and the states a byte followed by
        // anything (a leaf below) is text from.
        let mut moves = [[TEXT_DEAD; 8]; 256];
        let mut from_any = [0u8; 256];
        for b in 0..=255u8 {
            for r in 0..8u8 {
                moves[b as usize][r as usize] = text_next(r, b);
                if text_next(r, b) != TEXT_DEAD {
                    from_any[b as usize] |= 1 << r;
                }
            }
        }
        for i in (1..nodes.len()).rev() {
            let p = parent[i] as usize;
            let h = height[i].saturating_add(1);
            let hp = &mut height[p];
            *hp = (*hp).max(h);
            let mut mine = below[i];
            let b = nodes[i].byte;
            mine[b as usize / 64] |= 1 << (b % 64);
            let pb = &mut below[p];
            for k in 0..4 {
                pb[k] |= mine[k];
            }
            let ok = ok_from[i];
            let text_from = match ok {
                u8::MAX => from_any[b as usize],
                0 => 0,
                _ => {
                    let mut m = 0u8;
                    for (r, &n) in moves[b as usize].iter().enumerate() {
                        if n != TEXT_DEAD && ok >> n & 1 == 1 {
                            m |= 1 << r;
                        }
                    }
                    m
                }
            };
            ok_from[p] &= text_from;
            utf8_from[p] &= states_from(utf8_from[i], |r| utf8_next(r, b));
            let c = chars[i].saturating_add(u16::from(!(0x80..0xC0).contains(&b)));
            chars[p] = chars[p].max(c);
        }
        let mut root_child = [None; 256];
        let mut c = 1usize;
        while c < nodes.len() {
            root_child[nodes[c].byte as usize] = Some(c as u32);
            c = nodes[c].end as usize;
        }
        let utf8_below = utf8_from.iter().map(|&m| m & 1 == 1).collect();
        // The well-formed UTF-8 tokens, from one pass over the trie (the
        // tokens' own byte strings lie all over the heap: reading them took
        // 10 ms), and the first bytes all of whose tokens are such.
        let mut free_text_tokens = Bitset::new(logits_size);
        let mut whole = [0u64; 4];
        for (b, c) in root_child.iter().enumerate() {
            if c.is_some() {
                whole[b / 64] |= 1 << (b % 64);
            }
        }
        {
            // (subtree end, decoder state) per depth.
            let mut stack: Vec<(u32, u8)> = Vec::with_capacity(max_token_len + 1);
            stack.push((nodes[0].end, 0));
            let mut first = 0u8;
            let mut i = 1usize;
            while i < nodes.len() {
                while i as u32 >= stack.last().unwrap().0 {
                    stack.pop();
                }
                let r = stack.last().unwrap().1;
                let node = nodes[i];
                if stack.len() == 1 {
                    first = node.byte;
                }
                let r2 = utf8_next(r, node.byte);
                if r2 == TEXT_DEAD {
                    // Broken UTF-8 below: none of these tokens, so not all
                    // of the first byte's.
                    whole[first as usize / 64] &= !(1 << (first % 64));
                    i = node.end as usize;
                    continue;
                }
                for &t in &node_tokens[node.tok_start as usize..node.tok_start as usize + node.tok_len as usize] {
                    free_text_tokens.words[t as usize >> 5] |= 1 << (t & 31);
                }
                if node.end as usize > i + 1 {
                    stack.push((node.end, r2));
                }
                i += 1;
            }
        }
        let skeleton = cover_skeleton(&nodes, &node_tokens, &tok_base, &free_text_tokens);
        let free_text_all = Arc::new(Cover { whole, tokens: free_text_tokens, skeleton, exits: Vec::new() });
        let text_chars = (0..nodes.len()).map(|i| if ok_from[i] & 1 == 1 { chars[i].min(u16::MAX - 1) } else { u16::MAX }).collect();
        let (text_by_chars, text_chars_end) = text_tokens_by_chars(&nodes, &node_tokens);
        let sibling_text: Vec<u16> = (0..nodes.len())
            .map(|i| {
                let r = text_next(0, nodes[i].byte);
                if i == 0 || r == TEXT_DEAD || ok_from[i] >> r & 1 == 0 {
                    u16::MAX
                } else {
                    chars[i].saturating_add(1).min(u16::MAX - 1)
                }
            })
            .collect();
        let mut text_run_end = vec![0u32; nodes.len()];
        let mut text_run_chars = vec![0u16; nodes.len()];
        for i in (1..nodes.len()).rev() {
            if sibling_text[i] == u16::MAX {
                text_run_end[i] = i as u32;
                continue;
            }
            let next = nodes[i].end as usize;
            let parent_end = nodes[parent[i] as usize].end as usize;
            (text_run_end[i], text_run_chars[i]) = if next >= parent_end {
                (parent_end as u32, sibling_text[i])
            } else if sibling_text[next] == u16::MAX {
                (next as u32, sibling_text[i])
            } else {
                (text_run_end[next], text_run_chars[next].max(sibling_text[i]))
            };
        }
        let mut child_start = vec![0u32; nodes.len() + 1];
        for &p in &parent[1..] {
            child_start[p as usize + 1] += 1;
        }
        for i in 0..nodes.len() {
            child_start[i + 1] += child_start[i];
        }
        let mut child_node = vec![0u32; nodes.len().saturating_sub(1)];
        let mut child_byte = vec![0u8; nodes.len().saturating_sub(1)];
        let mut fill = child_start.clone();
        for c in 1..nodes.len() {
            let k = &mut fill[parent[c] as usize];
            child_node[*k as usize] = c as u32;
            child_byte[*k as usize] = nodes[c].byte;
            *k += 1;
        }
        let index = VocabIndex {
            tokens: vocab.tokens.clone(),
            vocab_len,
            logits_size,
            is_special,
            stop: vocab.stop.clone(),
            stop_bits,
            nodes,
            node_tokens,
            max_token_len,
            below,
            height,
            tok_base,
            text_chars,
            root_child,
            partitions: PartitionCache::new(PARTITION_CACHE_BYTES),
            text_up_to: (0..text_chars_end.len()).map(|_| std::sync::OnceLock::new()).collect(),
            text_by_chars,
            text_chars_end,
            sibling_text,
            text_run_end,
            text_run_chars,
            child_start,
            child_node,
            child_byte,
            utf8_below,
            free_text_all,
            free_text_covers: Default::default(),
            class_covers: Default::default(),
        };
        // The sets of text tokens a string's walks start from, built now
        // rather than inside a first mask (about 1 MB for Llama-3): every
        // count up to 64 characters, and all of them.
        let most = index.text_chars_end.len() as u32 - 1;
        for n in (0..=most.min(EAGER_TEXT_SETS)).chain([most]) {
            index.text_up_to(n);
        }
        Ok(index)
    }

    /// How many tokens [`VocabIndex::text_up_to`]`(n)` holds.
    pub fn text_up_to_len(&self, n: u32) -> usize {
        self.text_chars_end[(n as usize).min(self.text_chars_end.len() - 1)] as usize
    }

    /// The tokens that are text read from a character boundary (the last
    /// character possibly incomplete) and start at most `n` characters: what
    /// a state whose text run is `n` accepts of text (see
    /// `partition::walk`). Built with the index up to 64 characters and for
    /// the most any token starts; other counts on first need, once each.
    pub fn text_up_to(&self, n: u32) -> &Bitset {
        let n = (n as usize).min(self.text_chars_end.len() - 1);
        self.text_up_to[n].get_or_init(|| {
            // From the nearest smaller set already built: most tokens are
            // short, so the sets for long runs differ by a few tokens.
            let below = (0..n).rev().find_map(|m| self.text_up_to[m].get().map(|b| (m, b)));
            let (mut b, from) = match below {
                Some((m, b)) => (b.clone(), self.text_chars_end[m] as usize),
                None => (Bitset::new(self.logits_size), 0),
            };
            for &id in &self.text_by_chars[from..self.text_chars_end[n] as usize] {
                b.set(id as usize);
            }
            b
        })
    }

    /// [`VocabIndex::free_text_cover`] if it is built already.
    pub fn built_free_text_cover(&self, excluded: [u64; 4]) -> Option<Arc<Cover>> {
        if excluded == [0; 4] {
            return Some(self.free_text_all.clone());
        }
        let covers = self.free_text_covers.lock().ok()?;
        covers.iter().find(|(e, _)| *e == excluded).map(|(_, c)| c.clone())
    }

    /// The tokens that are well-formed UTF-8 (the last character possibly
    /// incomplete) and hold none of the bytes `excluded` (ASCII bytes and
    /// lead bytes of characters): from a set that free text loops in (all
    /// ASCII bytes but the excluded, and every character whose lead is not
    /// excluded, lead back to it), each of these tokens is taken (see
    /// `mask::MaskWalker::free_text_entry`). Built on first need for each
    /// `excluded` (the set that avoids nothing, less the subtrees of the
    /// trie's nodes of excluded bytes: a pass over the trie, about 0.5 ms for
    /// Llama-3; the tokenizer's warm-up builds the one for `<`) and
    /// kept: free text mostly avoids the same few bytes (`<` of a tag's
    /// trigger).
    pub fn free_text_cover(&self, excluded: [u64; 4]) -> Arc<Cover> {
        if excluded == [0; 4] {
            return self.free_text_all.clone();
        }
        if let Ok(covers) = self.free_text_covers.lock() {
            if let Some((_, c)) = covers.iter().find(|(e, _)| *e == excluded) {
                return c.clone();
            }
        }
        let mut tokens = self.free_text_all.tokens.clone();
        let mut whole = self.free_text_all.whole;
        // Every node of an excluded byte: its subtree's tokens hold it. A
        // subtree with none below is passed over whole (a set excluding
        // `/` visited each of the trie's nodes: 4 M instructions, about
        // 1 ms of the first mask that needed it).
        let mut first = 0u8;
        let mut i = 1usize;
        let mut root_end = 0usize;
        while i < self.nodes.len() {
            let node = self.nodes[i];
            if i >= root_end {
                first = node.byte;
                root_end = node.end as usize;
            }
            if has_byte(&excluded, node.byte) {
                clear_all(&mut tokens, self.subtree_tokens(i));
                whole[first as usize / 64] &= !(1 << (first % 64));
                i = node.end as usize;
            } else if self.below_none_of(i, &excluded) {
                i = node.end as usize;
            } else {
                i += 1;
            }
        }
        let skeleton = cover_skeleton(&self.nodes, &self.node_tokens, &self.tok_base, &tokens);
        let cover = Arc::new(Cover { tokens, whole, skeleton, exits: Vec::new() });
        if let Ok(mut covers) = self.free_text_covers.lock() {
            // A few excluded sets recur; a bound keeps odd grammars from
            // growing the list.
            if covers.len() < 64 {
                covers.push((excluded, cover.clone()));
            }
        }
        cover
    }

    /// The tokens made only of the ASCII bytes of `class` (a 128-bit set),
    /// with the cover's skeleton: from a state whose strings of those bytes
    /// all stay on interior states (a pattern's `[a-z0-9-]+`), each of
    /// them is taken, and a walk follows only the skeleton (see
    /// `partition::walk_skeleton`). Found by one pass down the class's
    /// paths of the trie, a subtree of the class added whole (its bytes
    /// below), and kept per class. None when the skeleton would pass
    /// [`MAX_CLASS_SKELETON`] nodes or the pass look at more than
    /// [`MAX_CLASS_VISITS`] (a class of nearly every ASCII byte: most paths
    /// leave it only for a multi-byte character).
    pub fn class_cover(&self, class: [u64; 2]) -> Option<Arc<Cover>> {
        let slot = match self.class_covers.lock() {
            Ok(mut covers) => match covers.iter().find(|(k, _)| *k == class) {
                Some((_, slot)) => Some(slot.clone()),
                None if covers.len() < 64 => {
                    let slot = ClassCoverSlot::default();
                    covers.push((class, slot.clone()));
                    Some(slot)
                }
                None => None,
            },
            Err(_) => None,
        };
        match slot {
            Some(slot) => slot.get_or_init(|| self.build_class_cover(class)).clone(),
            None => self.build_class_cover(class),
        }
    }

    /// Builds the covers of the byte classes real schemas' identifier
    /// patterns loop on most often, for a tokenizer's warm-up: the classes
    /// of 16–40 ASCII bytes (those a compile would look for, see
    /// `partition::build_class_covers`) that the most of maskbench-dev's
    /// schemas loop on: hex digits (47 and 29 schemas), `[a-z0-9.-]` (19),
    /// `[a-z0-9-]` (18), `[a-z]` (12), `[a-z.]` (11). About 0.2 ms each
    /// on Llama-3.
    pub fn build_common_class_covers(&self) {
        for spec in ["0-9A-Fa-f", "0-9a-f", "a-z0-9.-", "a-z0-9-", "a-z", "a-z."] {
            self.class_cover(ascii_class(spec));
        }
    }

    /// [`VocabIndex::class_cover`]'s pass down the trie.
    fn build_class_cover(&self, class: [u64; 2]) -> Option<Arc<Cover>> {
        let in_class = |b: u8| b < 0x80 && class[b as usize / 64] >> (b % 64) & 1 == 1;
        let within = |set: &[u64; 4]| set[0] & !class[0] == 0 && set[1] & !class[1] == 0 && set[2] == 0 && set[3] == 0;
        let mut tokens = Bitset::new(self.logits_size);
        let mut whole = [0u64; 4];
        let mut skeleton = Vec::new();
        let mut i = 1usize;
        let mut root_end = 0usize;
        let mut visits = 0usize;
        loop {
            if i >= self.nodes.len() {
                break Some(Arc::new(Cover { tokens, whole, exits: skeleton_exits(&skeleton), skeleton: Some(skeleton) }));
            }
            visits += 1;
            if skeleton.len() > MAX_CLASS_SKELETON || visits > MAX_CLASS_VISITS {
                break None;
            }
            let node = self.nodes[i];
            let first = i >= root_end;
            if first {
                root_end = node.end as usize;
            }
            if !in_class(node.byte) {
                // Every token below holds this byte.
                skeleton.push(SkeletonNode { id: i as u32, node, whole: true });
                i = node.end as usize;
            } else if within(&self.below[i]) {
                set_all(&mut tokens, self.subtree_tokens(i));
                if first {
                    whole[node.byte as usize / 64] |= 1 << (node.byte % 64);
                }
                i = node.end as usize;
            } else {
                set_all(&mut tokens, self.tokens_at(i));
                skeleton.push(SkeletonNode { id: i as u32, node, whole: false });
                i += 1;
            }
        }
    }

    /// Token ids ending at node `i`.
    #[inline(always)]
    pub fn tokens_at(&self, i: usize) -> &[u32] {
        self.tokens_of(&self.nodes[i])
    }

    /// Token ids ending at `node` (a copy of one of the trie's nodes).
    #[inline(always)]
    pub fn tokens_of(&self, node: &Node) -> &[u32] {
        &self.node_tokens[node.tok_start as usize..node.tok_start as usize + node.tok_len as usize]
    }

    /// Whether every byte strictly below trie node `i` is in `bytes`.
    #[inline]
    pub fn below_within(&self, i: usize, bytes: &[u64; 4]) -> bool {
        (0..4).all(|k| self.below[i][k] & !bytes[k] == 0)
    }

    /// Whether no byte strictly below trie node `i` is in `bytes`.
    #[inline]
    pub fn below_none_of(&self, i: usize, bytes: &[u64; 4]) -> bool {
        (0..4).all(|k| self.below[i][k] & bytes[k] == 0)
    }

    /// Whether every path strictly below trie node `i` is free text that
    /// holds none of the bytes `excluded`: well-formed UTF-8 from a
    /// character boundary ([`VocabIndex::utf8_below`]) without them.
    #[inline]
    pub fn free_text_below(&self, i: usize, excluded: &[u64; 4]) -> bool {
        self.utf8_below[i] && self.below_none_of(i, excluded)
    }

    /// All tokens in the subtree of node `i` (itself included).
    #[inline]
    pub fn subtree_tokens(&self, i: usize) -> &[u32] {
        &self.node_tokens[self.tok_base[i] as usize..self.tok_base[self.nodes[i].end as usize] as usize]
    }

    /// Number of bitmask words needed for the logits.
    pub fn mask_words(&self) -> usize {
        self.logits_size.div_ceil(32)
    }

    pub fn is_stop(&self, id: u32) -> bool {
        (id as usize) < self.logits_size && self.stop_bits.get(id as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use formcast_tokenizer::VocabKind;

    /// The decoder takes exactly the byte strings that are a JSON string's
    /// literal text: well-formed UTF-8 of characters from U+0020 up, but
    /// `"` and `\`. Every string of one and two bytes, and every three-
    /// and four-byte string whose bytes come from the edges of each range
    /// the decoder tells apart.
    #[test]
    fn text_decoder_takes_exactly_json_string_text() {
        let text = |bytes: &[u8]| std::str::from_utf8(bytes).is_ok_and(|s| s.chars().all(|c| c >= ' ' && c != '"' && c != '\\'));
        let decodes = |bytes: &[u8]| {
            let mut r = 0;
            for &b in bytes {
                r = text_next(r, b);
                if r == TEXT_DEAD {
                    return false;
                }
            }
            r == 0
        };
        let mut strings: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        strings.extend((0..=255u8).flat_map(|a| (0..=255u8).map(move |b| vec![a, b])));
        let edges = [0x00u8, 0x1F, 0x20, 0x22, 0x5C, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF];
        for &a in &edges {
            for &b in &edges {
                for &c in &edges {
                    strings.push(vec![a, b, c]);
                    for &d in &edges {
                        strings.push(vec![a, b, c, d]);
                    }
                }
            }
        }
        for bytes in &strings {
            assert_eq!(decodes(bytes), text(bytes), "{bytes:02X?}");
        }
        assert_eq!(text_next(TEXT_DEAD, b'a'), TEXT_DEAD);
    }

    /// The child table lists each node's children as the trie's layout
    /// has them: from the node's next position, sibling after sibling.
    #[test]
    fn child_table_lists_each_nodes_children_in_order() {
        let toks: Vec<&[u8]> = vec![b"a", b"ab", b"abc", b"abd", b"ac", b"b", b"ba", b"\xc3\xa9", b"\xc3", b"zz", b"zzz", b"za"];
        let v = VocabIndex::new(&vocab(&toks)).unwrap();
        let mut listed = 0;
        for i in 0..v.nodes.len() {
            let mut chain = Vec::new();
            let mut c = i + 1;
            while c < v.nodes[i].end as usize {
                chain.push(c as u32);
                c = v.nodes[c].end as usize;
            }
            let (lo, hi) = (v.child_start[i] as usize, v.child_start[i + 1] as usize);
            assert_eq!(v.child_node[lo..hi], chain[..], "node {i}");
            for (k, &c) in (lo..hi).zip(&chain) {
                assert_eq!(v.child_byte[k], v.nodes[c as usize].byte);
            }
            listed += chain.len();
        }
        assert_eq!(listed, v.nodes.len() - 1);
        assert!(v.child_start[1] - v.child_start[0] >= 3);
    }

    fn vocab(tokens: &[&[u8]]) -> Vocab {
        Vocab {
            tokens: tokens.iter().map(|t| t.to_vec()).collect(),
            special: vec![],
            stop: vec![],
            logits_size: tokens.len(),
            kind: VocabKind::Raw,
        }
    }

    #[test]
    fn trie_is_depth_first_with_subtree_ends() {
        let v = vocab(&[b"ab", b"a", b"b", b"abc", b"ab"]);
        let idx = VocabIndex::new(&v).unwrap();
        // root, a, b(ab), c(abc), b
        let bytes: Vec<u8> = idx.nodes[1..].iter().map(|n| n.byte).collect();
        assert_eq!(bytes, b"abcb");
        assert_eq!(idx.nodes[0].end, 5);
        assert_eq!(idx.nodes[1].end, 4);
        assert_eq!(idx.tokens_at(1), &[1]);
        assert_eq!(idx.tokens_at(2), &[0, 4]);
        assert_eq!(idx.tokens_at(3), &[3]);
        assert_eq!(idx.tokens_at(4), &[2]);
        assert_eq!(idx.subtree_tokens(1), &[1, 0, 4, 3]);
        assert_eq!(idx.subtree_tokens(3), &[3]);
        let bit = |set: [u64; 4], b: u8| set[b as usize / 64] >> (b % 64) & 1 == 1;
        assert!(bit(idx.below[1], b'b') && bit(idx.below[1], b'c') && !bit(idx.below[1], b'a'));
        assert_eq!(idx.below[3], [0; 4]);
    }

    #[test]
    fn text_chars_count_characters_of_well_formed_text_below() {
        let v = vocab(&[b"x", "xé".as_bytes(), "xéa".as_bytes(), b"y", b"y\"", b"z", b"z\xc3", b"w", b"w\xed\xa0\x80"]);
        let idx = VocabIndex::new(&v).unwrap();
        let node = |t: &[u8]| {
            let mut i = 0usize;
            for &b in t {
                // Children of `i`: from `i + 1`, each after its predecessor's subtree.
                let mut j = i + 1;
                while idx.nodes[j].byte != b {
                    j = idx.nodes[j].end as usize;
                }
                i = j;
            }
            i
        };
        // "é" then "a": two characters below "x"; below the lead byte of
        // "é" the path starts mid-character.
        assert_eq!(idx.text_chars[node(b"x")], 2);
        assert_eq!(idx.text_chars[node("xé".as_bytes())], 1);
        assert_eq!(idx.text_chars[node(b"x\xc3")], u16::MAX);
        assert_eq!(idx.text_chars[node(b"y")], u16::MAX);
        // A lone lead byte is a text prefix; a surrogate is not.
        assert_eq!(idx.text_chars[node(b"z")], 1);
        assert_eq!(idx.text_chars[node(b"w")], u16::MAX);
    }

    #[test]
    fn text_up_to_holds_the_text_tokens_of_at_most_n_characters() {
        // ids: 0 "x", 1 "xé", 2 "xéa", 3 "y\"", 4 "z\xc3" (a character
        // started), 5 "w\xed\xa0\x80" (a surrogate), 6 "\x80" (no lead
        // byte), 7 "\\n" (an escape: not text).
        let v = vocab(&[b"x", "xé".as_bytes(), "xéa".as_bytes(), b"y\"", b"z\xc3", b"w\xed\xa0\x80", b"\x80", b"\\n"]);
        let idx = VocabIndex::new(&v).unwrap();
        let ids = |n: u32| idx.text_up_to(n).iter_ones().collect::<Vec<_>>();
        assert_eq!(ids(0), Vec::<usize>::new());
        assert_eq!(ids(1), vec![0]);
        assert_eq!(ids(2), vec![0, 1, 4]);
        assert_eq!(ids(3), vec![0, 1, 2, 4]);
        assert_eq!(ids(99), ids(3));
        assert_eq!(idx.text_up_to_len(2), 3);
    }


    /// Every node is listed in the cover's skeleton iff its subtree holds a
    /// token outside the cover, unless a listed whole node above it does;
    /// a listed whole node's subtree holds no token of the cover.
    fn check_skeleton(idx: &VocabIndex, cover: &Cover) {
        let skeleton = cover.skeleton.clone().expect("a skeleton");
        let inside = |t: u32| cover.tokens.words[t as usize >> 5] >> (t & 31) & 1 == 1;
        let mut whole_above: Vec<u32> = Vec::new();
        for i in 1..idx.nodes.len() {
            whole_above.retain(|&w| i < idx.nodes[w as usize].end as usize);
            let out = idx.subtree_tokens(i).iter().filter(|&&t| !inside(t)).count();
            let all = idx.subtree_tokens(i).len();
            let listed = skeleton.iter().find(|s| s.id as usize == i);
            if !whole_above.is_empty() {
                assert!(listed.is_none(), "node {i} is below a whole node");
                continue;
            }
            match listed {
                None => assert_eq!(out, 0, "node {i} holds a token outside"),
                Some(&SkeletonNode { id, node, whole }) => {
                    assert_eq!((node.end, node.byte), (idx.nodes[id as usize].end, idx.nodes[id as usize].byte));
                    assert!(out > 0);
                    if whole {
                        assert_eq!(out, all, "node {i}");
                        whole_above.push(i as u32);
                    }
                }
            }
        }
        assert!(skeleton.windows(2).all(|w| w[0].id < w[1].id));
    }

    #[test]
    fn a_free_text_covers_skeleton_lists_exactly_the_paths_to_tokens_outside_it() {
        // Outside the cover that avoids `<`: "a<b", " <", "<" (the byte),
        // "<<", "\x80x" (broken UTF-8); inside: the rest, "é" and a lone
        // lead byte among them.
        let v = vocab(&[b"a", b"ab", b"a<b", b" ", b" <", b" x", "é".as_bytes(), b"\xc3", b"<", b"<<", b"\x80x", b"zz"]);
        let idx = VocabIndex::new(&v).unwrap();
        let cover = idx.free_text_cover([1 << b'<', 0, 0, 0]);
        let outside: Vec<usize> = (0..v.tokens.len()).filter(|&t| !cover.tokens.get(t)).collect();
        assert_eq!(outside, vec![2, 4, 8, 9, 10]);
        check_skeleton(&idx, &cover);
        // Too many tokens outside: no skeleton.
        let many: Vec<Vec<u8>> = (0..super::MAX_SKELETON_OUTSIDE as u32 + 1).map(|i| format!("<{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = many.iter().map(|t| t.as_slice()).collect();
        let idx = VocabIndex::new(&vocab(&refs)).unwrap();
        assert!(idx.free_text_cover([1 << b'<', 0, 0, 0]).skeleton.is_none());
    }

    #[test]
    fn a_class_cover_holds_the_tokens_of_the_class_and_its_skeleton_the_paths_to_the_rest() {
        let v = vocab(&[b"ab", b"abc", b"ab-", b"ab\"", b"a", b"Ab", b"\"", b"b\"x", b"-", "aé".as_bytes(), b"z9"]);
        let idx = VocabIndex::new(&v).unwrap();
        let mut class = [0u64; 2];
        for b in (b'a'..=b'z').chain(b'0'..=b'9') {
            class[b as usize / 64] |= 1 << (b % 64);
        }
        let cover = idx.class_cover(class).expect("a small skeleton");
        let inside: Vec<usize> = (0..v.tokens.len()).filter(|&t| cover.tokens.get(t)).collect();
        assert_eq!(inside, vec![0, 1, 4, 10]);
        check_skeleton(&idx, &cover);
        // Each skeleton node's exits (of the nodes that are not whole, in
        // order): the bytes of the whole nodes in its subtree (where its
        // tokens leave the class), the index past it and the entry past it.
        let skeleton = cover.skeleton.as_ref().unwrap();
        let paths: Vec<usize> = (0..skeleton.len()).filter(|&k| !skeleton[k].whole).collect();
        assert_eq!(cover.exits.len(), paths.len());
        for (e, &k) in paths.iter().enumerate() {
            let sn = skeleton[k];
            let end = (k + 1..skeleton.len()).find(|&j| skeleton[j].id >= sn.node.end).unwrap_or(skeleton.len());
            let mut bytes = [0u64; 4];
            for j in (k..end).filter(|&j| skeleton[j].whole) {
                bytes[skeleton[j].node.byte as usize / 64] |= 1 << (skeleton[j].node.byte % 64);
            }
            let end_exit = paths.iter().filter(|&&j| j < end).count();
            let x = cover.exits[e];
            assert_eq!((x.bytes, x.end as usize, x.end_exit as usize), (bytes, end, end_exit), "skeleton node {k}");
        }
        // `a`'s tokens leave the class by `-` (ab-), `"` (ab") and é's lead byte.
        let a = idx.root_child[b'a' as usize].unwrap();
        let e = paths.iter().position(|&k| skeleton[k].id == a).unwrap();
        let leaves: Vec<u8> = (0..=255u8).filter(|&b| cover.exits[e].bytes[b as usize / 64] >> (b % 64) & 1 == 1).collect();
        assert_eq!(leaves, vec![b'"', b'-', 0xC3]);
        // Kept: the same cover again.
        assert!(Arc::ptr_eq(&cover, &idx.class_cover(class).unwrap()));
    }

    #[test]
    fn a_class_is_written_as_inside_brackets() {
        let bytes = |spec| {
            let c = ascii_class(spec);
            (0u8..128).filter(|&b| c[b as usize / 64] >> (b % 64) & 1 == 1).map(char::from).collect::<String>()
        };
        assert_eq!(bytes("a-z0-9-"), "-0123456789abcdefghijklmnopqrstuvwxyz");
        assert_eq!(bytes("0-9A-Fa-f"), "0123456789ABCDEFabcdef");
        assert_eq!(bytes("a-z."), ".abcdefghijklmnopqrstuvwxyz");
        assert_eq!(bytes("-x"), "-x");
    }

    #[test]
    fn runs_of_text_siblings_end_at_the_next_sibling_that_is_not_text() {
        let v = vocab(&[b"a\"", b"ab", b"abcd", b"ac", "aé".as_bytes(), b"x"]);
        let idx = VocabIndex::new(&v).unwrap();
        let child = |p: usize, b: u8| {
            let mut j = p + 1;
            while idx.nodes[j].byte != b {
                j = idx.nodes[j].end as usize;
            }
            j
        };
        let a = child(0, b'a');
        let (quote, b, c, e) = (child(a, b'"'), child(a, b'b'), child(a, b'c'), child(a, 0xC3));
        assert_eq!(idx.sibling_text[a], u16::MAX);
        assert_eq!(idx.sibling_text[quote], u16::MAX);
        assert_eq!((idx.sibling_text[b], idx.sibling_text[c], idx.sibling_text[e]), (3, 1, 1));
        // b, c and é run to the end of a's subtree; the quote ends no run.
        assert_eq!((idx.text_run_end[b], idx.text_run_chars[b]), (idx.nodes[a].end, 3));
        assert_eq!((idx.text_run_end[c], idx.text_run_chars[c]), (idx.nodes[a].end, 1));
        assert_eq!(idx.text_run_end[quote], quote as u32);
        // At the root, a is not text and x runs to the end.
        let x = child(0, b'x');
        assert_eq!((idx.text_run_end[x], idx.text_run_chars[x]), (idx.nodes[0].end, 1));
    }


    #[test]
    fn utf8_below_allows_every_character_but_not_broken_utf8() {
        // Below "a": quote, backslash, newline and "é" are all UTF-8; below
        // "b" a lone continuation byte is not; below "c" a character is cut.
        let v = vocab(&[b"a\"", b"a\\", b"a\n", "aé".as_bytes(), b"b\x80", b"c\xc3"]);
        let idx = VocabIndex::new(&v).unwrap();
        let child = |b: u8| {
            let mut j = 1;
            while idx.nodes[j].byte != b {
                j = idx.nodes[j].end as usize;
            }
            j
        };
        assert!(idx.utf8_below[child(b'a')]);
        assert!(!idx.utf8_below[child(b'b')]);
        assert!(idx.utf8_below[child(b'c')]);
        assert!(!idx.utf8_below[0]);
    }

}
