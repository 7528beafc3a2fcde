"""LoRA supervised fine-tuning of a formatter model (the SPOT paper, §5).

The recipe: the paper's Figure 6 prompt as the user turn, the gold JSON
(compact ``json.dumps``) as the assistant's answer, loss on the answer tokens
only (``completion_only_loss``), LoRA with r=32 and alpha=64 on every linear
layer, learning rate 1e-5, 2 epochs.  Built on Hugging Face ``transformers``,
``peft`` and ``trl`` — the optional extra ``formcast[train]``; nothing here is
imported by the rest of formcast.

::

    from formcast.formatter.train import TrainConfig, train
    result = train(TrainConfig(model="HuggingFaceTB/SmolLM2-135M-Instruct",
                               data=["train.jsonl"], output_dir="runs/lora"))
    result.adapter_dir   # load with peft.PeftModel.from_pretrained(base, result.adapter_dir)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .data import Example, load_jsonl
from .prompts import PAPER_PROMPT, render_prompt, validate_template

__all__ = ["TrainConfig", "TrainResult", "TrainingUnavailableError", "sft_records", "train", "load_gguf", "is_gguf"]


class TrainingUnavailableError(ImportError):
    """torch, transformers, peft or trl is not installed (``pip install 'formcast[train]'``)."""


@dataclass
class TrainConfig:
    """Settings of one LoRA SFT run (defaults: the paper's recipe).

    Attributes:
        model: base model — a Hugging Face checkpoint directory or hub name,
            a GGUF file, or ``"embedded"`` (the embedded SmolLM2-135M-Instruct
            GGUF; see :func:`load_gguf`); ignored when :func:`train` is given
            a model object.
        data: JSONL datasets in the ``shared/data/slot`` form
            (``input_text``, ``json_schema``, ``gold_json``).
        output_dir: where checkpoints and the final adapter (``adapter/``) go.
        lora_r, lora_alpha, lora_dropout: LoRA settings (r=32, alpha=64).
        target_modules: LoRA targets (``"all-linear"``: every linear layer
            but the output head).
        learning_rate, epochs: 1e-5 and 2.
        batch_size, grad_accum: per-device batch and accumulation steps.
        max_length: longest tokenised example (prompt + answer); longer ones
            are truncated.
        prompt_template: the prompt (the paper's Figure 6).
        limit: use only the first N examples of each dataset.
        seed: data order and LoRA initialisation.
        logging_steps: how often the loss is logged.
        max_steps: stop after this many optimiser steps (-1: run ``epochs``).
        max_minutes: stop after the optimiser step that passes this much
            training time (a bounded CPU run); the adapter is saved as usual.
        bf16: train in bfloat16 (``None``: when a CUDA GPU supports it).
    """

    model: str = "HuggingFaceTB/SmolLM2-135M-Instruct"
    data: Sequence[str | Path] = field(default_factory=list)
    output_dir: str | Path = "runs/formatter-lora"
    lora_r: int = 32
    lora_alpha: int = 64
    lora_dropout: float = 0.05
    target_modules: str | list[str] = "all-linear"
    learning_rate: float = 1e-5
    epochs: float = 2.0
    batch_size: int = 8
    grad_accum: int = 1
    max_length: int = 2048
    prompt_template: str = PAPER_PROMPT
    limit: int | None = None
    seed: int = 0
    logging_steps: int = 10
    bf16: bool | None = None
    max_steps: int = -1
    max_minutes: float | None = None


@dataclass
class TrainResult:
    """What a run produced.

    Attributes:
        adapter_dir: the saved LoRA adapter (and tokenizer).
        losses: the training loss at each logging step, in order.
        train_loss: the mean training loss reported by the trainer.
        examples: examples trained on.
        steps: optimiser steps taken.
        model_config: the base model's attention head counts (for the GGUF export).
    """

    adapter_dir: Path
    losses: list[float]
    train_loss: float
    examples: int
    steps: int
    model_config: dict[str, Any] = field(default_factory=dict)


def _require() -> tuple[Any, Any, Any, Any]:
    try:
        import peft
        import torch
        import transformers
        import trl
    except ImportError as exc:
        raise TrainingUnavailableError(
            f"training needs torch, transformers, peft and trl ({exc}); install them with "
            "pip install 'formcast[train]' (torch from PyPI is a large CUDA build)"
        ) from exc
    return torch, transformers, peft, trl


EMBEDDED = "embedded"


def is_gguf(model: str | Path) -> bool:
    """Whether ``model`` names a GGUF file (or ``"embedded"``: the embedded SmolLM2-135M-Instruct's)."""
    return str(model) == EMBEDDED or str(model).endswith(".gguf")


def load_gguf(model: str | Path = EMBEDDED) -> tuple[Any, Any]:
    """The model and tokenizer of a GGUF file as transformers objects (its
    quantized weights de-quantized to float32), so that an adapter trained
    on them fits the very weights llama.cpp runs."""
    torch, transformers, _, _ = _require()
    if str(model) == EMBEDDED:
        from ..tokenizer_sources import default_model_path

        model = default_model_path()
    path = Path(model)
    if not path.is_file():
        raise FileNotFoundError(f"GGUF model file not found: {path}")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    lm = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    # The weights are plain float32 tensors now; transformers still marks the
    # model as GGUF-quantized and would refuse to train it.
    lm.hf_quantizer = None
    lm.is_quantized = False
    if hasattr(lm.config, "quantization_config"):
        del lm.config.quantization_config
    return lm, tokenizer


def sft_records(examples: Sequence[Example], prompt_template: str = PAPER_PROMPT, *, chat: bool = True) -> list[dict[str, Any]]:
    """Prompt/completion records for TRL's SFT trainer.

    With ``chat`` the records are conversational (the prompt as a user turn,
    the gold JSON as the assistant turn, rendered by the tokenizer's chat
    template); otherwise plain strings.  The completion is the gold JSON as
    compact ``json.dumps`` (non-ASCII kept), the form the formatter parses.
    """
    validate_template(prompt_template)
    out = []
    for ex in examples:
        prompt = render_prompt(prompt_template, ex.input_text, ex.json_schema)
        answer = json.dumps(ex.gold_json, ensure_ascii=False)
        if chat:
            out.append({"prompt": [{"role": "user", "content": prompt}], "completion": [{"role": "assistant", "content": answer}]})
        else:
            out.append({"prompt": prompt, "completion": answer})
    return out


def _time_limit(transformers: Any, minutes: float) -> Any:
    import time

    class TimeLimit(transformers.TrainerCallback):
        """Ends training after the step that passes ``minutes``."""

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.start = time.monotonic()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if time.monotonic() - self.start > 60.0 * minutes:
                control.should_training_stop = True
            return control

    return TimeLimit()


def train(
    config: TrainConfig,
    *,
    model: Any = None,
    tokenizer: Any = None,
    examples: Sequence[Example] | None = None,
    progress: bool = True,
) -> TrainResult:
    """Fine-tune ``config.model`` (or ``model``) with LoRA on the datasets.

    Args:
        model: a loaded causal LM to train instead of loading ``config.model``.
        tokenizer: its tokenizer (loaded from ``config.model`` when omitted).
        examples: training examples instead of reading ``config.data``.
        progress: show the trainer's progress bar.

    Returns:
        the adapter directory and the logged losses.

    Raises:
        TrainingUnavailableError: the ``train`` extra is not installed.
    """
    torch, transformers, peft, trl = _require()
    if examples is None:
        if not config.data:
            raise ValueError("no training data: pass TrainConfig(data=[...]) or examples=")
        examples = []
        for path in config.data:
            rows = load_jsonl(path)
            examples.extend(rows[: config.limit] if config.limit else rows)
    elif config.limit:
        examples = list(examples)[: config.limit]
    if not examples:
        raise ValueError("the training data has no examples")
    if model is None and is_gguf(config.model):
        model, loaded_tokenizer = load_gguf(config.model)
        tokenizer = tokenizer or loaded_tokenizer
    if tokenizer is None:
        tokenizer = transformers.AutoTokenizer.from_pretrained(config.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if model is None:
        model = transformers.AutoModelForCausalLM.from_pretrained(config.model)
    chat = bool(getattr(tokenizer, "chat_template", None))
    from datasets import Dataset

    dataset = Dataset.from_list(sft_records(examples, config.prompt_template, chat=chat))
    out = Path(config.output_dir)
    bf16 = config.bf16 if config.bf16 is not None else bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    args = trl.SFTConfig(
        output_dir=str(out),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.grad_accum,
        max_length=config.max_length,
        completion_only_loss=True,
        logging_steps=config.logging_steps,
        save_strategy="no",
        report_to="none",
        seed=config.seed,
        bf16=bf16,
        disable_tqdm=not progress,
        use_cpu=not torch.cuda.is_available(),
    )
    lora = peft.LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=config.target_modules,
        task_type="CAUSAL_LM",
    )
    callbacks = [_time_limit(transformers, config.max_minutes)] if config.max_minutes else []
    trainer = trl.SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=lora,
                             callbacks=callbacks)
    output = trainer.train()
    adapter_dir = out / "adapter"
    trainer.model.save_pretrained(str(adapter_dir))
    tokenizer.save_pretrained(str(adapter_dir))
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()}
    settings["data"] = [str(p) for p in config.data]
    (out / "train_config.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    losses = [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]
    model_config = getattr(model, "config", None)
    heads = {k: getattr(model_config, k, None) for k in ("num_attention_heads", "num_key_value_heads")}
    return TrainResult(adapter_dir, losses, float(output.training_loss), len(examples), int(trainer.state.global_step),
                       heads)
