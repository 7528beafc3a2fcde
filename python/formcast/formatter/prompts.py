"""Prompt templates of the SPOT formatter paper (appendix F), verbatim.

Templates use ``{name}`` placeholders filled by plain substitution (not
``str.format``), so JSON braces in a template need no escaping.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

__all__ = [
    "PAPER_PROMPT",
    "JUDGE_PROMPT",
    "GENERATION_PROMPT",
    "render_prompt",
    "validate_template",
    "fill",
]

PAPER_PROMPT = (
    "Convert the following text into JSON format according to the specified schema. "
    "Ensure that both keys and values are strings, even for numerical values.\n"
    "Text: {input_text}\n"
    "Provide your response in the following JSON format: {json_schema}\n"
    "Please output ONLY the JSON structure and extract the attributes only present in the schema.\n"
    "Output:"
)
"""Figure 6: the prompt for formatting (training, evaluation and direct prompting)."""

JUDGE_PROMPT = (
    "Be an impartial judge to identify whether the structured data accurately reflect the input text. "
    "If the structured data contains anything that unsupported by the \u2018input_text\u2019, return False. "
    "If everything can be found or inferred from the input text, return True. "
    "Enclose your answer in <validity></validity> xml tags.\n"
    "<input_text>{input_text}</input_text>\n"
    "<structured_data>{gold}</structured_data>\n"
    "Your answer:"
)
"""Figure 7: the stage-2 judge prompt of the synthesis pipeline."""

GENERATION_PROMPT = """You are an advanced AI assistant specialized in data augmentation for text-to-JSON conversion tasks. Your goal is to generate diverse and high-quality input-output pairs that will be used to train machine learning models for structured information extraction.
First, review these examples of input-output pairs:
<examples>{examples}</examples>
Your task is to generate 3 additional input-output pairs in JSONL format. Each pair should consist of:
1. Input:

- A text description
- A desired JSON schema with a brief explanation
2. Output:
- The text converted into JSON following the given schema
Please adhere to the following specifications:
<industry_vertical> {industry_vertical} </industry_vertical> <genre> {genre} </genre> <json_complexity_description> {json_complexity_description} </json_complexity_description> <text_length_style> {text_length_style} </text_length_style> <text_type> {text_type} </text_type>
Before generating each pair, wrap your thought process in <planning> tags. Consider the following:
1. Industry relevance: How can you make the text diverse and representative of the specified industry - *{industry_vertical}*?
- List 1-5 key topics or scenarios relevant to the industry.
- Consider how these topics can be incorporated into the text descriptions.
2. JSON schema complexity: How can you adhere to the complexity level of the JSON schema - *{json_complexity_description}*, while staying within the other given constraints?
- Brainstorm 1-5 different schema structures of such complexity.
- Ensure each schema adheres to the complexity description and other constraints provided.
3. Text length adherence: How can you ensure the text length adheres to the specified style - *{text_length_style}*?
- Outline a strategy for maintaining consistent text length across all pairs.
- Consider using a word count check for each generated text.
4. Unique aspects and edge cases: What unique aspects or edge cases can you incorporate to make the training data more robust?
- List 2-3 potential edge cases or unusual scenarios relevant to the industry.
- Plan how to integrate these into some of the pairs.
5. Diversity tracking: How will you ensure diversity across all 5 pairs?
- Create a simple tracking system to ensure you\u2019re varying topics, schema complexity, and text length across the pairs.
- Number each pair as you plan it (1/5, 2/5, etc.) to keep track of your progress.
6. JSON content alignment: How will you ensure the gold JSON only contains information present in the input text?
- Implement a strict check to verify that every piece of information in the gold JSON can be directly traced back to the input text.
- Plan a review process to eliminate any potential extra content in the gold JSON that is not explicitly stated in the input text.
7. Genre: Ensure that the generated text adheres to the specified genre *{genre}*. This will influence the tone, style, and content of the \u2018input_text\u2018, but does not affect the JSON structure.
8. Text Type: Generate text that aligns with the specified text type *{text_type}*. This will determine the format, structure, or purpose of the \u2018input_text\u2018 you create, separate from the JSON output.
9. Follow the format in the example below for your \u2018input_text\u2018, \u2019json_schema\u2018 and \u2018gold\u2018:
{ "input_text": "Acme Motors, a major automaker has announced plans to build a new electric vehicle manufacturing plant in Greenville, South Carolina. The state-of-the-art facility will produce the company\u2019s latest line of battery-powered cars and SUVs, with an initial annual capacity of 200,000 units.", "json_schema": { "type": "object", "properties": { "company": { "type": "string" }, "location": { "type": "string" }, "production_capacity": { "type": "number" } } }, "gold": { "company": "Acme Motors", "location": "Greenville, South Carolina", "production_capacity": 200000 } }
Notes:
- "input_text": Contains a string value, represents the raw text input that needs to be processed
In this case, it\u2019s a news-like paragraph about a company announcement.
- "json_schema": Defines the structure of the expected output. must include "type" and "properties", defined as below:
"type": "object" - specifies that the output should be a JSON object
"properties" - defines the expected fields:
- "company": expects a string value
- "location": expects a string value
- "production_capacity": expects a number value
Each property has its own type definition
- "gold": Contains the correct/expected output that matches the schema. Has the exact same structure as defined in json_schema. Contains the actual values extracted from the input_text:
- "company": contains the company name
- "location": contains the city and state
- "production_capacity": contains the numerical value
Values must match the types specified in the schema (strings for company and location, number for production_capacity)
- *IMPORTANT* Do not replicate any of the content in the given example, it\u2019s just used as a reference for a specified answer structure.
After your planning process, generate the input-output pair and format it in JSONL. Here\u2019s an example of the expected format:
{"input_text": "Your generated text here", "json_schema": {"Your": "JSON", "schema": "here"}, "gold": {"Your": "gold", "JSON": "here"}}
Remember to generate 5 unique and diverse pairs, each following this format. Ensure that each pair adheres to the industry vertical, complexity description, and text length style specified above. EACH response should be enclosed in <JSONL> </JSONL> XML tags."""
"""Figure 8: the synthetic-data generation prompt (the paper's ``{{``/``}}``
format-string escapes written as single braces, since :func:`fill`
substitutes only the named placeholders)."""


def fill(template: str, **values: str) -> str:
    """Replace ``{name}`` placeholders with the given strings, in one pass
    (a value containing ``{other}`` is not substituted again)."""
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


def validate_template(template: str) -> None:
    """Check that a formatting prompt has both ``{input_text}`` and ``{json_schema}``.

    Raises:
        ValueError: a placeholder is missing.
    """
    missing = [p for p in ("{input_text}", "{json_schema}") if p not in template]
    if missing:
        raise ValueError(f"the prompt template lacks {' and '.join(missing)}")


def render_prompt(template: str, input_text: str, schema: Mapping[str, Any]) -> str:
    """A formatting prompt for one input (the schema as compact JSON)."""
    return fill(template, input_text=input_text, json_schema=json.dumps(schema, ensure_ascii=False))
