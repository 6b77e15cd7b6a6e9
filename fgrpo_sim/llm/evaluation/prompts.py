"""Evaluation prompts (paper Table 9) and decoding (paper Table 8), per model family and benchmark.

One place that knows, for each model family of the paper and each benchmark kind, which system prompt
the model sees, which chat-template keyword arguments are passed (Qwen3's `enable_thinking`, Llama's
`date_string`) and the decoding settings. `fgrpo llm eval` uses it; training code can use it too:

    from fgrpo_sim.llm.evaluation.prompts import prompt_spec, detect_family, build_messages
    spec = prompt_spec(detect_family("Qwen/Qwen3-4B-Base"), "math500")
    messages = build_messages("What is 1+1?", spec)
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                         **spec.chat_template_kwargs)

| family              | math / GPQA-Diamond                    | IFEval                    | SynLogic                  |
|---------------------|----------------------------------------|---------------------------|---------------------------|
| qwen2.5             | system: MATH_INSTRUCTION               | system: "You are a helpful assistant." | as IFEval    |
| qwen3-base          | system: MATH_INSTRUCTION, thinking on  | no system, thinking off   | no system, thinking on    |
| llama-3.2-instruct  | dated header + MATH_INSTRUCTION        | dated header only         | dated header only         |
| generic             | system: MATH_INSTRUCTION               | no system                 | no system                 |

Llama-3.2's own chat template writes the dated header ("Cutting Knowledge Date: December 2023\\nToday
Date: <date_string>\\n\\n") in front of the system message, so the spec passes `date_string` and the
instruction only; `render_text` adds the header itself for a tokenizer without a chat template. The
paper prints the date as "[date]"; we fix it to Llama's template default (DEFAULT_LLAMA_DATE) so runs
are reproducible, and the value is recorded in the eval meta file.

Decoding (Table 8): temperature 1.0, top-p 1.0, no top-k, max length 8192 tokens (4096 for
Qwen3-4B-Base). "generic" is this project's fallback for other models (the tiny test model): math
instruction for math/GPQA, nothing else, 8192 tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fgrpo_sim.llm.evaluation.data import BENCHMARKS  # the math benchmarks, named with their loaders
from fgrpo_sim.validation import check_choice

#: The paper's math / GPQA instruction (also its training system prompt, App. L).
MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
QWEN25_GENERAL_SYSTEM = "You are a helpful assistant."
LLAMA_KNOWLEDGE_DATE = "December 2023"
DEFAULT_LLAMA_DATE = "26 Jul 2024"

FAMILIES = ("qwen2.5", "qwen3-base", "llama-3.2-instruct", "generic")
#: Benchmark kinds of the paper's protocol; every benchmark name maps to one (see `benchmark_kind`).
KINDS = ("math", "gpqa", "ifeval", "synlogic")
OOD_BENCHMARKS = {"gpqa_diamond": "gpqa", "ifeval": "ifeval", "synlogic": "synlogic"}
#: GPQA's option labels, as the loader shows the options ("A) text") and the grader reads them.
GPQA_LETTERS = "ABCD"
#: Names that mean an OOD benchmark beyond its own spellings (see `canonical_benchmark`).
OOD_ALIASES = {"gpqa": "gpqa_diamond"}
#: "math", the first name a user tries, is the math grader (math-verify), with the loader of any math file.
MATH_ALIASES = {"math": "generic"}

#: Table 8: decoding used for every family and benchmark, except the length cap.
TEMPERATURE = 1.0
TOP_P = 1.0
TOP_K = None  # "-1" in the paper: no top-k truncation
MAX_NEW_TOKENS = {"qwen2.5": 8192, "qwen3-base": 4096, "llama-3.2-instruct": 8192, "generic": 8192}


@dataclass(frozen=True)
class PromptSpec:
    """What the model sees and how it is sampled for one (family, benchmark) pair."""

    family: str
    kind: str
    system_prompt: str | None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    temperature: float = TEMPERATURE
    top_p: float = TOP_P
    top_k: int | None = TOP_K
    max_new_tokens: int = 8192


def _name_key(name: str) -> str:
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


def canonical_benchmark(benchmark: str) -> str:
    """The canonical name of `benchmark`, matched ignoring case, '-', '_' and spaces (GPQA-Diamond,
    gpqa-diamond and gpqa_diamond are gpqa_diamond; IFEval is ifeval; MATH-500 is math500), with the
    aliases of `OOD_ALIASES` (gpqa) and `MATH_ALIASES` (math: the generic math benchmark). A name that is
    neither an OOD benchmark nor a math benchmark of `fgrpo_sim.llm.evaluation.data.BENCHMARKS` is a
    ValueError listing the known names: an unknown name is never graded as math by default (under
    math-verify a correct GPQA letter is wrong)."""
    key = _name_key(benchmark)
    names = {_name_key(name): name for name in OOD_BENCHMARKS}
    names.update({_name_key(alias): name for alias, name in OOD_ALIASES.items()})
    if key in names:
        return names[key]
    names = {_name_key(name): name for name in BENCHMARKS}
    names.update({_name_key(alias): name for alias, name in MATH_ALIASES.items()})
    if key not in names:
        raise ValueError(f"benchmark must be one of {', '.join([*BENCHMARKS, *OOD_BENCHMARKS])} (any case, '-' or "
                         f"'_'; also {', '.join([*OOD_ALIASES, *MATH_ALIASES])}), got {benchmark!r}")
    return names[key]


def benchmark_kind(benchmark: str) -> str:
    """'gpqa', 'ifeval' or 'synlogic' for the OOD benchmarks, 'math' for the math ones (see
    `canonical_benchmark`; an unknown name is a ValueError)."""
    return OOD_BENCHMARKS.get(canonical_benchmark(benchmark), "math")


def prompt_spec(family: str, benchmark: str, *, llama_date: str = DEFAULT_LLAMA_DATE) -> PromptSpec:
    """The Table 8/9 settings for `family` (one of FAMILIES) on `benchmark` (see `canonical_benchmark`)."""
    check_choice("model_family", family, FAMILIES)
    kind = benchmark_kind(benchmark)
    reasoning = kind in ("math", "gpqa")
    kwargs: dict[str, Any] = {}
    if family == "qwen2.5":
        system = MATH_INSTRUCTION if reasoning else QWEN25_GENERAL_SYSTEM
    elif family == "qwen3-base":
        system = MATH_INSTRUCTION if reasoning else None
        kwargs["enable_thinking"] = kind != "ifeval"
    elif family == "llama-3.2-instruct":
        system = MATH_INSTRUCTION if reasoning else None
        kwargs["date_string"] = llama_date
    else:
        system = MATH_INSTRUCTION if reasoning else None
    return PromptSpec(family=family, kind=kind, system_prompt=system, chat_template_kwargs=kwargs,
                      max_new_tokens=MAX_NEW_TOKENS[family])


def build_messages(problem: str, spec_or_system: PromptSpec | str | None) -> list[dict[str, str]]:
    """Chat messages: the spec's system prompt (when any), then the problem as the user turn."""
    system = spec_or_system.system_prompt if isinstance(spec_or_system, PromptSpec) else spec_or_system
    messages = [{"role": "system", "content": system}] if system else []
    return messages + [{"role": "user", "content": problem}]


def render_text(tokenizer, problem: str, system_prompt: str | None,
                chat_template_kwargs: dict[str, Any] | None = None) -> str:
    """The prompt text with generation prompt; plain lines for a tokenizer without a chat template.

    Without a template, a `date_string` keyword (Llama) becomes the dated header line in front of the
    system prompt, so the text still carries what Table 9 asks for.
    """
    kwargs = dict(chat_template_kwargs or {})
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(build_messages(problem, system_prompt), add_generation_prompt=True,
                                             tokenize=False, **kwargs)
    header = (f"Cutting Knowledge Date: {LLAMA_KNOWLEDGE_DATE}\nToday Date: {kwargs['date_string']}\n"
              if "date_string" in kwargs else "")
    system = header + (system_prompt or "")
    return "\n".join(part for part in (system.strip("\n"), problem) if part) + "\n"


def _family_from_text(model_type: str, name: str) -> str:
    model_type, name = model_type.lower(), name.lower()
    if model_type in ("qwen3", "qwen3_moe") or "qwen3" in name:
        return "qwen3-base"
    if "qwen2.5" in name or "qwen2_5" in name or (model_type == "qwen2" and "qwen" in name):
        return "qwen2.5"
    if model_type == "llama" and ("3.2" in name or "3_2" in name) and "instruct" in name:
        return "llama-3.2-instruct"
    return "generic"


def detect_family(model: str) -> str:
    """The model family from a model folder's config.json (model_type, _name_or_path) or a hub id's name.

    Reads only local files (no download): a folder's config.json when present, else the id's text.
    Anything not recognised is "generic"; pass --model-family to override.
    """
    name, model_type = str(model), ""
    config = Path(model) / "config.json"
    if config.is_file():
        from fgrpo_sim.jsonl import read_json_file

        try:
            data = read_json_file(config, "model config")
        except ValueError:  # unreadable: the family falls back to the name (and the model load names the file)
            data = {}
        data = data if isinstance(data, dict) else {}
        model_type = str(data.get("model_type", ""))
        name = f"{data.get('_name_or_path', '')} {Path(model).resolve().name}"
    return _family_from_text(model_type, name)
