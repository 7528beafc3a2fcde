"""Training data for the formatter without a generator model: examples made
from templates, in the formats of the public E2E and WebNLG training splits.

The paper's synthesis pipeline (:mod:`formcast.formatter.synth`) needs a
capable generator behind an endpoint; the embedded 135M model is not one.
This module writes examples directly: a random record in a dataset's
*format* (E2E's eight restaurant attributes and their value vocabulary;
WebNLG's ``category`` / ``subject`` / ``properties`` triples with DBpedia
property names), realized as text by sentence templates, with the gold
answer holding the values the way each dataset writes them (E2E
``familyFriendly: "yes"`` for "kid friendly"; WebNLG dates as
``1964-10-13``, numbers as ``"98.0"``).

Every entity name is invented (syllables and word lists below); nothing is
taken from the dev sets in ``shared/data/slot`` or from the datasets' texts.
:func:`template_examples` is deterministic for a seed.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from .data import Example

__all__ = ["template_examples", "FORMATS"]

_ADJ = ["Golden", "Silver", "Red", "Green", "Blue", "Old", "Little", "Royal", "Hidden", "Crooked", "Copper",
        "Velvet", "Lucky", "Wild", "Quiet", "Happy", "Iron", "Amber", "Rusty", "Jolly"]
_NOUN = ["Lantern", "Anchor", "Fox", "Oak", "Kettle", "Harbour", "Mill", "Garden", "Bell", "Crown", "Barrel",
         "Owl", "Lion", "Compass", "Pepper", "Orchard", "Bridge", "Tavern", "Spoon", "Feather"]
_FIRST = ["Anna", "Marek", "Lucia", "Tomas", "Ingrid", "Kofi", "Mei", "Rafael", "Elena", "Yusuf", "Priya",
          "Jonas", "Amara", "Dmitri", "Sofia", "Hiro", "Nadia", "Oscar", "Leila", "Paolo"]
_LAST = ["Varga", "Lindqvist", "Okafor", "Moreau", "Castell", "Brandt", "Takeda", "Novak", "Duarte", "Haddad",
         "Kowal", "Fenwick", "Ilves", "Marsh", "Quint", "Ravel", "Sato", "Torres", "Ulman", "Weir"]
_SYL = ["var", "ten", "mor", "lin", "bro", "sel", "dan", "ka", "ri", "hol", "ost", "mar", "vik", "el", "ber",
        "gun", "tor", "al", "sen", "dal"]
_COUNTRIES = ["France", "Germany", "Italy", "Spain", "Japan", "Brazil", "Canada", "India", "Norway", "Kenya",
              "Mexico", "Poland", "Egypt", "Chile", "Sweden", "Turkey"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


def _place(r: random.Random) -> str:
    return "".join(r.choice(_SYL) for _ in range(r.randint(2, 3))).capitalize() + r.choice(["", "", "burg", "ton", "ford"])


def _venue(r: random.Random) -> str:
    return r.choice(["The ", "The ", ""]) + f"{r.choice(_ADJ)} {r.choice(_NOUN)}"


def _person(r: random.Random) -> str:
    return f"{r.choice(_FIRST)} {r.choice(_LAST)}"


# -- E2E: eight attributes, values as the MR writes them, and ways to say them --------------
_E2E_SAY: dict[str, dict[str, list[str]]] = {
    "eatType": {"pub": ["a pub", "a pub"], "coffee shop": ["a coffee shop"], "restaurant": ["a restaurant"]},
    "food": {f: [f"{f} food", f"serves {f} food", f"{f}"] for f in
             ["English", "Italian", "French", "Chinese", "Indian", "Japanese"]}
    | {"Fast food": ["fast food", "Fast food"]},
    "priceRange": {"cheap": ["cheap", "low-priced"], "moderate": ["moderately priced", "moderate prices"],
                   "high": ["expensive", "high-priced"], "less than £20": ["less than £20"],
                   "£20-25": ["£20-25", "between £20 and £25"], "more than £30": ["more than £30"]},
    "customerRating": {"low": ["a low customer rating", "poorly rated"], "average": ["an average rating"],
                       "high": ["a high customer rating", "highly rated"], "1 out of 5": ["rated 1 out of 5"],
                       "3 out of 5": ["a rating of 3 out of 5"], "5 out of 5": ["rated 5 out of 5"]},
    "area": {"riverside": ["in the riverside area", "by the riverside"], "city centre": ["in the city centre"]},
    "familyFriendly": {"yes": ["family-friendly", "kid friendly", "child friendly"],
                       "no": ["not family-friendly", "not kid friendly", "not child friendly"]},
}
_E2E_ORDER = ["name", "eatType", "food", "priceRange", "customerRating", "area", "familyFriendly", "near"]


def _e2e(r: random.Random) -> tuple[str, dict[str, Any]]:
    keys = ["name"] + sorted(r.sample(_E2E_ORDER[1:], r.randint(2, 6)), key=_E2E_ORDER.index)
    gold: dict[str, Any] = {}
    said: dict[str, str] = {}
    for k in keys:
        if k in ("name", "near"):
            gold[k] = _venue(r)
            said[k] = gold[k]
        else:
            gold[k] = r.choice(list(_E2E_SAY[k]))
            said[k] = r.choice(_E2E_SAY[k][gold[k]])
    name = said["name"]
    kind = said.get("eatType", "a place")
    clauses = []
    if "food" in said:
        clauses.append(said["food"] if said["food"].startswith("serves") else f"serves {said['food'].replace(' food', '')} food")
    if "priceRange" in said:
        amount = said["priceRange"].startswith(("£", "less", "more", "between"))
        clauses.append(f"costs {said['priceRange']}" if amount else f"is {said['priceRange']}")
    if "customerRating" in said:
        clauses.append(f"has {said['customerRating']}" if not said["customerRating"].startswith(("rated", "poorly", "highly"))
                       else f"is {said['customerRating']}")
    if "area" in said:
        clauses.append(f"is {said['area']}")
    if "familyFriendly" in said:
        clauses.append(f"is {said['familyFriendly']}")
    if "near" in said:
        clauses.append(f"is near {said['near']}")
    r.shuffle(clauses)
    opener = r.choice([f"{name} is {kind}", f"There is {kind} called {name}", f"{kind.capitalize()} named {name}"])
    if not clauses:
        text = opener + "."
    elif len(clauses) == 1:
        text = f"{opener} that {clauses[0]}."
    else:
        text = f"{opener} that {', '.join(clauses[:-1])} and {clauses[-1]}."
        if r.random() < 0.4 and len(clauses) > 2:
            text = f"{opener} that {clauses[0]}. It {', '.join(clauses[1:-1])} and {clauses[-1]}."
    return text, gold


# -- WebNLG: category, subject and DBpedia properties ----------------------------------------
def _date(r: random.Random) -> tuple[str, str]:
    y, m, d = r.randint(1890, 2005), r.randint(1, 12), r.randint(1, 28)
    return f"{y}-{m:02d}-{d:02d}", r.choice([f"{_MONTHS[m - 1]} {d}, {y}", f"{d} {_MONTHS[m - 1]} {y}"])


def _number(lo: int, hi: int, unit: str) -> Callable[[random.Random], tuple[str, str]]:
    def make(r: random.Random) -> tuple[str, str]:
        n = r.randint(lo, hi)
        return f"{n}.0", f"{n} {unit}".strip()
    return make


def _pick(values: list[str]) -> Callable[[random.Random], tuple[str, str]]:
    return lambda r: (lambda v: (v, v))(r.choice(values))


def _named(make: Callable[[random.Random], str]) -> Callable[[random.Random], tuple[str, str]]:
    return lambda r: (lambda v: (v, v))(make(r))


# property -> (gold value and its text, sentence template with {s} subject and {v} value)
_WEBNLG: dict[str, tuple[str, dict[str, tuple[Callable[[random.Random], tuple[str, str]], list[str]]]]] = {
    "Astronaut": ("person", {
        "birthDate": (_date, ["{s} was born on {v}", "{s}, born {v}"]),
        "birthPlace": (_named(_place), ["{s} was born in {v}", "{s} comes from {v}"]),
        "occupation": (_pick(["Fighter pilot", "Test pilot", "Engineer", "Physicist"]), ["{s} worked as a {v}"]),
        "nationality": (_pick(["French", "German", "Italian", "Japanese", "Brazilian"]), ["{s} is {v}"]),
        "almaMater": (_named(lambda r: f"{_place(r)} University"), ["{s} studied at {v}"]),
        "mission": (_named(lambda r: f"{r.choice(['Apollo', 'Gemini', 'Soyuz'])} {r.randint(2, 19)}"),
                    ["{s} flew on {v}", "{s} was a crew member of {v}"]),
    }),
    "University": ("org", {
        "city": (_named(_place), ["{s} is in the city of {v}", "{s} is located in {v}"]),
        "country": (_pick(_COUNTRIES), ["{s} is in {v}"]),
        "established": (_number(1800, 2000, ""), ["{s} was established in {v}", "{s} was founded in {v}"]),
        "numberOfStudents": (_number(2000, 40000, "students"), ["{s} has {v}"]),
        "president": (_named(_person), ["the president of {s} is {v}", "{s} is led by {v}"]),
        "affiliation": (_named(lambda r: f"{_place(r)} Association"), ["{s} is affiliated with {v}"]),
    }),
    "Film": ("work", {
        "director": (_named(_person), ["{s} was directed by {v}"]),
        "writer": (_named(_person), ["{s} was written by {v}"]),
        "runtime": (_number(70, 180, "minutes"), ["{s} runs {v}", "{s} is {v} long"]),
        "budget": (lambda r: (lambda n: (f"{n}.0", f"${n}"))(r.randint(1, 90) * 100000), ["{s} had a budget of {v}"]),
        "musicComposer": (_named(_person), ["the music of {s} is by {v}"]),
    }),
    "Company": ("org", {
        "foundationPlace": (_named(_place), ["{s} was founded in {v}"]),
        "foundingYear": (_number(1850, 2015, ""), ["{s} was started in {v}"]),
        "industry": (_pick(["Retail", "Software", "Aviation", "Banking", "Food processing"]), ["{s} works in {v}"]),
        "keyPerson": (_named(_person), ["{v} is a key person at {s}"]),
        "numberOfEmployees": (_number(20, 90000, "employees"), ["{s} has {v}"]),
    }),
    "Airport": ("place", {
        "location": (_named(_place), ["{s} is located in {v}", "{s} serves {v}"]),
        "runwayLength": (_number(900, 4000, "metres"), ["the runway of {s} is {v} long"]),
        "elevationAboveTheSeaLevel": (_number(2, 900, "metres above sea level"), ["{s} is {v}"]),
        "operatingOrganisation": (_named(lambda r: f"{_place(r)} Airport Authority"), ["{s} is operated by {v}"]),
    }),
    "Food": ("thing", {
        "country": (_pick(_COUNTRIES), ["{s} comes from {v}"]),
        "mainIngredient": (_pick(["rice", "lentils", "potatoes", "cheese", "fish", "tomatoes"]),
                           ["the main ingredient of {s} is {v}", "{s} is made with {v}"]),
        "course": (_pick(["Dessert", "Main course", "Starter"]), ["{s} is served as a {v}", "{s} is a {v}"]),
        "region": (_named(_place), ["{s} is popular in the {v} region"]),
    }),
}


def _webnlg(r: random.Random) -> tuple[str, dict[str, Any]]:
    category = r.choice(list(_WEBNLG))
    kind, props = _WEBNLG[category]
    subject = {"person": _person, "org": lambda r: f"{_place(r)} {category}" if category != "Company" else f"{_place(r)} Ltd",
               "work": lambda r: f"{r.choice(_ADJ)} {r.choice(_NOUN)}s", "place": lambda r: f"{_place(r)} Airport",
               "thing": lambda r: _place(r).lower()}[kind](r)
    chosen = r.sample(list(props), r.randint(1, min(4, len(props))))
    gold_props: dict[str, Any] = {}
    sentences = []
    for i, p in enumerate(chosen):
        make, templates = props[p]
        value, said = make(r)
        gold_props[p] = value
        s = subject if i == 0 or r.random() < 0.5 else ("It" if kind != "person" else "He" if r.random() < 0.5 else "She")
        sentence = r.choice(templates).format(s=s, v=said)
        sentences.append(sentence[0].upper() + sentence[1:])
    if category == "Film" and r.random() < 0.6:
        stars = [_person(r) for _ in range(r.randint(1, 3))]
        gold_props["starring"] = stars
        sentences.append(f"It stars {' and '.join(stars)}")
    text = ". ".join(sentences) + "."
    return text, {"category": category, "subject": subject, "properties": gold_props}


def _schema_of(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"type": "object", "properties": {k: _schema_of(v) for k, v in value.items()},
                "required": list(value), "additionalProperties": False}
    if isinstance(value, list):
        return {"type": "array", "items": {"type": "string"}}
    return {"type": "string"}


#: Dataset formats this module writes: name -> record maker.
FORMATS: dict[str, Callable[[random.Random], tuple[str, dict[str, Any]]]] = {"e2e": _e2e, "webnlg": _webnlg}


def template_examples(n: int, *, seed: int = 0, formats: tuple[str, ...] = ("e2e", "webnlg")) -> list[Example]:
    """``n`` examples, alternating over ``formats``, deterministic for ``seed``.

    Raises:
        ValueError: an unknown format name.
    """
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"unknown formats {unknown}; known: {sorted(FORMATS)}")
    r = random.Random(seed)
    out = []
    for i in range(n):
        fmt = formats[i % len(formats)]
        text, gold = FORMATS[fmt](r)
        out.append(Example(id=f"tpl-{fmt}-{i}", input_text=text, json_schema=_schema_of(gold), gold_json=gold,
                           dataset=f"template-{fmt}", meta={"generator": "formcast.formatter.template_synth", "seed": seed}))
    return out
