"""Benchmark workloads: the shared W0..W5 files plus our own EBNF grammars.

A workload is a plain dict (it travels to the workers as JSON):
  name    -- e.g. "W0_generic_json", "E1_arith"
  kind    -- "generic_json" | "schema" | "ebnf" | "lark" (Lark only)
  schema  -- JSON Schema (kind == "schema")
  gbnf    -- GBNF text, root rule "root" (formcast, xgrammar)
  lark    -- the same language in llguidance's Lark dialect
  regex   -- an equivalent regex when the language is regular (outlines-core),
             else None
  doc     -- a valid document; every engine is driven by its token ids

The EBNF grammars were picked to cover different shapes: deeply recursive
expressions (E1), a regular language with many short tokens (E2), a
whitespace-heavy recursive program grammar (E3) and a regular table with
long free-text fields (E4). Each is written GBNF-first; the Lark version
follows llguidance's idiom (regex terminals, greedy lexer) while accepting
the same documents.
"""

import glob
import json
import os

WORKLOAD_DIR = os.environ.get(
    "FORMCAST_BENCH_WORKLOADS", "/work/shared/data/bench-workloads"
)

# --- E1: arithmetic expressions (recursive: no regex) -----------------------

ARITH_GBNF = r"""
root    ::= expr
expr    ::= term (ws ("+" | "-") ws term)*
term    ::= factor (ws ("*" | "/" | "%") ws factor)*
factor  ::= "-"? power
power   ::= primary (ws "^" ws factor)?
primary ::= number | name | call | "(" ws expr ws ")"
call    ::= name "(" ws expr (ws "," ws expr)* ws ")"
name    ::= [a-z_] [a-z0-9_]*
number  ::= [0-9]+ ("." [0-9]+)?
ws      ::= " "?
"""

ARITH_LARK = r"""
start: expr
expr: term (" "? ADDOP " "? term)*
term: factor (" "? MULOP " "? factor)*
factor: "-"? power
power: primary (" "? "^" " "? factor)?
primary: NUMBER | NAME | call | "(" " "? expr " "? ")"
call: NAME "(" " "? expr (" "? "," " "? expr)* " "? ")"
ADDOP: "+" | "-"
MULOP: "*" | "/" | "%"
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
"""

ARITH_DOC = (
    "(price_1 * 1.08 + shipping_cost) / max(qty, 1) - discount(rate_a, 2) ^ 2"
    " + sqrt((x1 - x0) * (x1 - x0) + (y1 - y0) * (y1 - y0)) * scale_factor"
    " - (((a + b) * (c - d)) / ((e % 7) + 1)) + clamp(-value, lo_bound, hi_bound)"
    " * 0.5 + pow(base_rate, -2) - log(1 + exp(-logit_score)) / temperature"
    " + sum_of(alpha, beta, gamma, delta, epsilon) * (weight_0 + weight_1 * 3.75)"
    " - ((((nested_1 + 1) * 2 - 3) / 4 + 5) * 6 - 7) % 8 + avg(t_0, t_1, t_2) ^ 3"
    " + -(total_cost - budget) * penalty / (1 + abs(error_term))"
    " + min(max(lower, 0), upper) * (1 - dropout_rate) + 42 / (17 - 3 * 2)"
    " - mean_sq(pred_a - target_a, pred_b - target_b) * 1000"
)

# --- E2: chess game movetext in SAN (regular) -------------------------------
# PGN movetext ends with a result marker. Keeping it mandatory (and E4's final
# newline) also keeps outlines-core 0.2.14 measurable: its index drops a
# one-byte token that leaves an accepting DFA state for a non-accepting one
# (e.g. regex `a(?:xe)?`, vocab {a, x, xe}: after "a" only "xe" is allowed),
# so a language that may stop early trips it on the first such token.

CHESS_GBNF = r"""
root      ::= turn (" " turn)* " " result
turn      ::= movenum ". " move (" " move)?
movenum   ::= [1-9] [0-9]*
move      ::= (castle | piecemove | pawnmove) ("+" | "#")?
castle    ::= "O-O" | "O-O-O"
piecemove ::= [KQRBN] [a-h]? [1-8]? "x"? [a-h] [1-8]
pawnmove  ::= ([a-h] "x")? [a-h] [1-8] ("=" [QRBN])?
result    ::= "1-0" | "0-1" | "1/2-1/2" | "*"
"""

CHESS_LARK = r"""
start: turn (" " turn)* " " RESULT
turn: MOVENUM ". " MOVE (" " MOVE)?
MOVENUM: /[1-9][0-9]*/
MOVE: /(O-O|O-O-O|[KQRBN][a-h]?[1-8]?x?[a-h][1-8]|([a-h]x)?[a-h][1-8](=[QRBN])?)[+#]?/
RESULT: "1-0" | "0-1" | "1/2-1/2" | "*"
"""

_MOVE = r"(?:O-O|O-O-O|[KQRBN][a-h]?[1-8]?x?[a-h][1-8]|(?:[a-h]x)?[a-h][1-8](?:=[QRBN])?)[+#]?"
_TURN = rf"[1-9][0-9]*\. {_MOVE}(?: {_MOVE})?"
CHESS_REGEX = rf"{_TURN}(?: {_TURN})* (?:1-0|0-1|1/2-1/2|\*)"

CHESS_DOC = (
    "1. e4 d6 2. d4 Nf6 3. Nc3 g6 4. Be3 Bg7 5. Qd2 c6 6. f3 b5 7. Nge2 Nbd7"
    " 8. Bh6 Bxh6 9. Qxh6 Bb7 10. a3 e5 11. O-O-O Qe7 12. Kb1 a6 13. Nc1 O-O-O"
    " 14. Nb3 exd4 15. Rxd4 c5 16. Rd1 Nb6 17. g3 Kb8 18. Na5 Ba8 19. Bh3 d5"
    " 20. Qf4+ Ka7 21. Rhe1 d4 22. Nd5 Nbxd5 23. exd5 Qd6 24. Rxd4 cxd4"
    " 25. Re7+ Kb6 26. Qxd4+ Kxa5 27. b4+ Ka4 28. Qc3 Qxd5 29. Ra7 Bb7"
    " 30. Rxb7 Qc4 31. Qxf6 Kxa3 32. Qxa6+ Kxb4 33. c3+ Kxc3 34. Qa1+ Kd2"
    " 35. Qb2+ Kd1 36. Bf1 Rd2 37. Rd7 Rxd7 38. Bxc4 bxc4 39. Qxh8 Rd3"
    " 40. Qa8 c3 41. Qa4+ Ke1 42. f4 f5 43. Kc1 Rd2 44. Qa7 h5 45. g4 hxg4"
    " 46. h4 g3 47. h5 g2 48. h6 g1=Q+ 49. Kb1 Qg6 50. Qb8+ Kf2 1-0"
)

# --- E3: a small C-like language (recursive, whitespace everywhere) ---------

CLIKE_GBNF = r"""
root      ::= ws (func ws)+
func      ::= type ws1 ident ws "(" ws params? ws ")" ws block
params    ::= param (ws "," ws param)*
param     ::= type ws1 ident
type      ::= "int" | "float" | "void" | "char"
block     ::= "{" ws (stmt ws)* "}"
stmt      ::= decl | assign | ifstmt | whilestmt | forstmt | retstmt | callstmt | block
decl      ::= type ws1 ident (ws "=" ws expr)? ws ";"
assign    ::= ident ws assignop ws expr ws ";"
assignop  ::= "=" | "+=" | "-=" | "*="
ifstmt    ::= "if" ws "(" ws expr ws ")" ws block (ws "else" ws (block | ifstmt))?
whilestmt ::= "while" ws "(" ws expr ws ")" ws block
forstmt   ::= "for" ws "(" ws ident ws "=" ws expr ws ";" ws expr ws ";" ws ident ws assignop ws expr ws ")" ws block
retstmt   ::= "return" (ws1 expr)? ws ";"
callstmt  ::= call ws ";"
expr      ::= cmp (ws ("&&" | "||") ws cmp)*
cmp       ::= sum (ws cmpop ws sum)?
cmpop     ::= "==" | "!=" | "<=" | ">=" | "<" | ">"
sum       ::= prod (ws ("+" | "-") ws prod)*
prod      ::= unary (ws ("*" | "/" | "%") ws unary)*
unary     ::= ("-" | "!")? atom
atom      ::= number | ident | call | string | "(" ws expr ws ")"
call      ::= ident ws "(" ws (expr (ws "," ws expr)*)? ws ")"
ident     ::= [a-zA-Z_] [a-zA-Z0-9_]*
number    ::= [0-9]+ ("." [0-9]+)?
string    ::= "\"" [^"\\\n]* "\""
ws        ::= [ \t\n]*
ws1       ::= [ \t\n]+
"""

# Whitespace is spelled out as in the GBNF rather than %ignore-d: with
# %ignore, "int" followed directly by "eger" lexes as TYPE IDENT, so the Lark
# grammar would accept more than the GBNF one and the engines would not be
# computing the same masks.
CLIKE_LARK = r"""
start: ws (func ws)+
func: TYPE ws1 IDENT ws "(" ws params? ws ")" ws block
params: param (ws "," ws param)*
param: TYPE ws1 IDENT
block: "{" ws (stmt ws)* "}"
stmt: decl | assign | ifstmt | whilestmt | forstmt | retstmt | callstmt | block
decl: TYPE ws1 IDENT (ws "=" ws expr)? ws ";"
assign: IDENT ws ASSIGNOP ws expr ws ";"
ifstmt: "if" ws "(" ws expr ws ")" ws block (ws "else" ws (block | ifstmt))?
whilestmt: "while" ws "(" ws expr ws ")" ws block
forstmt: "for" ws "(" ws IDENT ws "=" ws expr ws ";" ws expr ws ";" ws IDENT ws ASSIGNOP ws expr ws ")" ws block
retstmt: "return" (ws1 expr)? ws ";"
callstmt: call ws ";"
expr: cmp (ws LOGOP ws cmp)*
cmp: sum (ws CMPOP ws sum)?
sum: prod (ws ADDOP ws prod)*
prod: unary (ws MULOP ws unary)*
unary: UNOP? atom
atom: NUMBER | IDENT | call | STRING | "(" ws expr ws ")"
call: IDENT ws "(" ws (expr (ws "," ws expr)*)? ws ")"
ws: WS?
ws1: WS
WS: /[ \t\n]+/
TYPE: "int" | "float" | "void" | "char"
ASSIGNOP: "=" | "+=" | "-=" | "*="
LOGOP: "&&" | "||"
CMPOP: "==" | "!=" | "<=" | ">=" | "<" | ">"
ADDOP: "+" | "-"
MULOP: "*" | "/" | "%"
UNOP: "-" | "!"
IDENT: /[a-zA-Z_][a-zA-Z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
STRING: /"[^"\\\n]*"/
"""

CLIKE_DOC = """\
int gcd(int a, int b) {
    while (b != 0) {
        int t = b;
        b = a % b;
        a = t;
    }
    return a;
}

float mean(float total, int count) {
    if (count == 0) {
        log_error("mean of an empty set");
        return 0.0;
    } else {
        return total / count;
    }
}

int fib(int n) {
    if (n < 2) {
        return n;
    }
    return fib(n - 1) + fib(n - 2);
}

void report(int n, float score) {
    for (i = 0; i < n; i += 1) {
        if (i % 15 == 0) {
            print_str("FizzBuzz");
        } else if (i % 3 == 0) {
            print_str("Fizz");
        } else if (i % 5 == 0) {
            print_str("Buzz");
        } else {
            print_int(i);
        }
    }
    float scaled = score * 100.0 / (n + 1);
    if (scaled >= 50.0 && !failed(n) || n > 1000) {
        print_str("pass");
    }
}

int main() {
    int total = 0;
    int k = 10;
    while (k > 0) {
        total += fib(k) * gcd(k, 12);
        k -= 1;
    }
    report(total, mean(total, 10));
    return -(total - 4096) % 256;
}
"""

# --- E4: a CSV table (regular, long quoted/bare text fields) ----------------

CSV_GBNF = r"""
root   ::= header ("\n" row)+ "\n"
header ::= name ("," name)*
name   ::= [a-z] [a-z0-9_]*
row    ::= field ("," field)*
field  ::= number | date | quoted | bare
number ::= "-"? [0-9]+ ("." [0-9]+)?
date   ::= [0-9] [0-9] [0-9] [0-9] "-" [0-9] [0-9] "-" [0-9] [0-9]
quoted ::= "\"" ([^"\n] | "\"\"")* "\""
bare   ::= [A-Za-z] ([A-Za-z0-9 _.@] | "-")*
"""

CSV_LARK = r"""
start: header ("\n" row)+ "\n"
header: NAME ("," NAME)*
row: field ("," field)*
field: NUMBER | DATE | QUOTED | BARE
NAME: /[a-z][a-z0-9_]*/
NUMBER: /-?[0-9]+(\.[0-9]+)?/
DATE: /[0-9]{4}-[0-9]{2}-[0-9]{2}/
QUOTED: /"([^"\n]|"")*"/
BARE: /[A-Za-z][A-Za-z0-9 _.@-]*/
"""

_FIELD = (
    r'(?:-?[0-9]+(?:\.[0-9]+)?|[0-9]{4}-[0-9]{2}-[0-9]{2}'
    r'|"(?:[^"\n]|"")*"|[A-Za-z][A-Za-z0-9 _.@-]*)'
)
CSV_REGEX = rf"[a-z][a-z0-9_]*(?:,[a-z][a-z0-9_]*)*(?:\n{_FIELD}(?:,{_FIELD})*)+\n"

CSV_DOC = '''\
order_id,customer,email,city,order_date,amount,discount,note
10001,Alice Martin,alice.martin@example.com,New York,2024-01-03,129.99,0,"Leave at the front desk, please"
10002,Bob Chen,bob.chen@example.org,San Francisco,2024-01-04,58.10,-5.5,"Gift wrap; card says ""Happy birthday!"""
10003,Carla Rossi,carla@example.it,Milano,2024-01-04,2450,120,"Corporate order: 12 units, invoice to accounting"
10004,Dmitri Ivanov,d.ivanov@example.net,Berlin,2024-01-05,19.5,0,No note
10005,Emma Wilson,emma_w@example.co.uk,London,2024-01-06,310.75,15.25,"Deliver after 6 pm; ring twice"
10006,Farid Haddad,farid.h@example.com,Paris,2024-01-07,74,0,"Fragile - glassware (handle with care)"
10007,Grace Kim,grace.kim@example.kr,Seoul,2024-01-08,1999.99,200,"Express shipping, signature required"
10008,Hugo Silva,hugo@example.br,Sao Paulo,2024-01-09,45.3,0,Repeat customer
10009,Ines Moreau,ines.moreau@example.fr,Lyon,2024-01-10,88.8,8.88,"Split into two parcels if over 5 kg"
10010,Jamal Okafor,jamal.o@example.ng,Lagos,2024-01-11,560,-20,"Customs paperwork attached, ref #A-7781"
10011,Kenji Sato,kenji.sato@example.jp,Osaka,2024-01-12,12.99,0,"""Thank you"" sticker requested"
10012,Laura Becker,l.becker@example.de,Hamburg,2024-01-13,730.4,30,"Pickup at depot 4, bay C"
'''


# --- L1: a SQL subset written in Lark (whitespace through %ignore) ---------
# Native Lark, compiled by formcast's Lark front-end (Grammar.from_lark, which
# cuts lexemes as llguidance's greedy lexer does) and by llguidance's; the
# masks agree at every step. Keywords are upper case and names lower case,
# so a context-free reading (xgrammar's) cuts the document alike too.

SQL_LARK = r"""
start: statement (";" statement)* ";"
statement: select | insert | update | delete
select: "SELECT" "DISTINCT"? select_list "FROM" table_ref join* where? group_by? order_by? limit?
select_list: "*" | select_item ("," select_item)*
select_item: expr ("AS" NAME)?
table_ref: NAME ("AS" NAME)?
join: ("INNER" | "LEFT")? "JOIN" table_ref "ON" expr
where: "WHERE" expr
group_by: "GROUP" "BY" expr ("," expr)* ("HAVING" expr)?
order_by: "ORDER" "BY" order_item ("," order_item)*
order_item: expr ("ASC" | "DESC")?
limit: "LIMIT" INT ("OFFSET" INT)?
insert: "INSERT" "INTO" NAME "(" NAME ("," NAME)* ")" "VALUES" row ("," row)*
row: "(" expr ("," expr)* ")"
update: "UPDATE" NAME "SET" assignment ("," assignment)* where?
assignment: NAME "=" expr
delete: "DELETE" "FROM" NAME where?
expr: and_expr ("OR" and_expr)*
and_expr: not_expr ("AND" not_expr)*
not_expr: "NOT" not_expr | comparison
comparison: sum (COMPOP sum | "IS" "NOT"? "NULL" | "IN" "(" (select | expr ("," expr)*) ")" | "LIKE" STRING | "BETWEEN" sum "AND" sum)?
sum: product (ADDOP product)*
product: unary (MULOP unary)*
unary: "-"? atom
atom: NUMBER | STRING | "NULL" | "TRUE" | "FALSE" | column | func_call | "(" expr ")" | "(" select ")"
column: NAME ("." NAME)?
func_call: FUNC "(" ("*" | "DISTINCT"? expr ("," expr)*) ")"
FUNC: "COUNT" | "SUM" | "AVG" | "MIN" | "MAX" | "LOWER" | "UPPER" | "COALESCE"
COMPOP: "=" | "!=" | "<>" | "<=" | ">=" | "<" | ">"
ADDOP: "+" | "-" | "||"
MULOP: "*" | "/" | "%"
NAME: /[a-z_][a-z0-9_]*/
STRING: /'([^'\n]|'')*'/
NUMBER: /[0-9]+(\.[0-9]+)?/
INT: /[0-9]+/
%import common.WS
%ignore WS
"""

SQL_DOC = """\
SELECT c.name, COUNT(*) AS orders, SUM(o.amount * (1 - o.discount / 100)) AS revenue
FROM customers AS c
LEFT JOIN orders AS o ON o.customer_id = c.id AND o.status <> 'cancelled'
WHERE c.country IN ('FR', 'DE', 'IT') AND c.created_at >= '2024-01-01'
    AND NOT c.email LIKE '%@example.com' AND c.score BETWEEN 10 AND 99.5
GROUP BY c.name HAVING COUNT(*) > 2
ORDER BY revenue DESC, c.name ASC
LIMIT 50 OFFSET 100;
INSERT INTO audit_log (actor, action, detail, at)
VALUES ('batch_job', 'recompute', 'customer''s revenue, top 50', 1718000000),
       ('batch_job', 'notify', NULL, 1718000001);
UPDATE customers SET tier = 'gold', score = score + 5 WHERE id IN (SELECT customer_id FROM orders WHERE amount > 1000);
DELETE FROM sessions WHERE expires_at < 1718000000 OR user_id IS NULL;
SELECT DISTINCT LOWER(city) || ', ' || UPPER(country) AS place FROM addresses WHERE city IS NOT NULL ORDER BY place;"""

LARK_WORKLOADS = [
    dict(name="L1_sql_lark", kind="lark", gbnf=None, lark=SQL_LARK, regex=None, doc=SQL_DOC),
]


EBNF_WORKLOADS = [
    dict(name="E1_arith", kind="ebnf", gbnf=ARITH_GBNF, lark=ARITH_LARK, regex=None, doc=ARITH_DOC),
    dict(name="E2_chess", kind="ebnf", gbnf=CHESS_GBNF, lark=CHESS_LARK, regex=CHESS_REGEX, doc=CHESS_DOC),
    dict(name="E3_clike", kind="ebnf", gbnf=CLIKE_GBNF, lark=CLIKE_LARK, regex=None, doc=CLIKE_DOC),
    dict(name="E4_csv", kind="ebnf", gbnf=CSV_GBNF, lark=CSV_LARK, regex=CSV_REGEX, doc=CSV_DOC),
]


def load_shared_workloads(directory=WORKLOAD_DIR):
    """W0..W5 as shipped: {name, kind, schema, doc}."""
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "W*.json"))):
        with open(path) as f:
            w = json.load(f)
        out.append(dict(name=w["name"], kind=w["kind"], schema=w.get("schema"), doc=w["doc"]))
    return out


def all_workloads():
    """W0 first (generic JSON), then our EBNF grammars, the Lark ones, then
    the schemas."""
    shared = load_shared_workloads()
    generic = [w for w in shared if w["kind"] == "generic_json"]
    schemas = [w for w in shared if w["kind"] == "schema"]
    return generic + EBNF_WORKLOADS + LARK_WORKLOADS + schemas
