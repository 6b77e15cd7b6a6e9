"""A tiny Qwen2-architecture model and a character tokenizer, built offline in a second.

Used by the tests, by the CPU path of `fgrpo llm train` (model name "tiny") and by the Maze helper.
The architecture is the real `Qwen2ForCausalLM`, so everything TRL does with a 7B model (generation,
log-probs, the loss) runs unchanged, just small.

Loading gotcha: `AutoTokenizer.from_pretrained(dir)` on a folder holding a qwen2 `config.json` maps
to Qwen2's tokenizer class and silently drops a custom vocabulary. `load_tokenizer` therefore reads
our marker file and loads the character tokenizer with `PreTrainedTokenizerFast` directly.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}{% endif %}"
)
SPECIAL_TOKENS = ("<pad>", "<eos>", "<unk>")
#: Marker written next to a saved character tokenizer, so loaders know not to trust AutoTokenizer.
MARKER_FILE = "fgrpo_char_tokenizer.json"


def build_char_tokenizer(alphabet: str | None = None):
    """A `PreTrainedTokenizerFast` with one token per character (printable ASCII + newline by default).

    Special tokens: <pad> (0), <eos> (1), <unk> (2). A minimal chat template joins message contents
    with newlines, so conversational prompts (system + user) work with TRL.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = list(dict.fromkeys(alphabet if alphabet is not None else string.printable[:95] + "\n"))
    vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *chars])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")  # every char alone
    core.decoder = decoders.Fuse()  # join back without spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", padding_side="left"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_tiny_qwen2(
    vocab_size: int,
    *,
    hidden_size: int = 32,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 64,
    max_position_embeddings: int = 512,
    seed: int = 0,
    pad_token_id: int = 0,
    eos_token_id: int = 1,
):
    """A randomly initialised `Qwen2ForCausalLM` (about 30k parameters with the defaults), float32."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        bos_token_id=eos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = pad_token_id
    model.generation_config.eos_token_id = eos_token_id
    return model


def build_tiny(seed: int = 0, **model_kwargs):
    """(model, tokenizer): the tiny Qwen2 over the character vocabulary."""
    tokenizer = build_char_tokenizer()
    model = build_tiny_qwen2(
        len(tokenizer), seed=seed, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        **model_kwargs,
    )
    return model, tokenizer


def save_tiny(model, tokenizer, directory: str | Path) -> Path:
    """Save model and tokenizer so that `load_model_and_tokenizer(directory)` restores both."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    (directory / MARKER_FILE).write_text(json.dumps({"tokenizer": "character", "class": "PreTrainedTokenizerFast"}))
    return directory


def is_char_tokenizer_dir(directory: str | Path) -> bool:
    return (Path(directory) / MARKER_FILE).is_file()


def _saved_as_plain_fast(directory: str | Path) -> bool:
    """A tokenizer saved from a bare `PreTrainedTokenizerFast` (e.g. by TRL into a checkpoint, without our marker)."""
    config = Path(directory) / "tokenizer_config.json"
    try:
        cls = json.loads(config.read_text()).get("tokenizer_class")
    except (OSError, ValueError):
        return False
    return cls in ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer(name_or_path: str | Path):
    """AutoTokenizer, except for folders holding our character tokenizer (see module doc)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    text = str(name_or_path)
    if not Path(text).exists() and (Path(text).is_absolute() or text.startswith((".", "~")) or text.count("/") > 1):
        raise ValueError(f"{text}: no such model folder (a hub id looks like namespace/name)")
    if Path(name_or_path).is_file():
        raise ValueError(f"{text} is a file; give a model folder or a hub id")
    from fgrpo_sim.llm.hub import require_loadable

    require_loadable(text, "model")  # offline / no route: one line now, not a minute of retries
    if Path(name_or_path).is_dir() and (is_char_tokenizer_dir(name_or_path) or _saved_as_plain_fast(name_or_path)):
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(name_or_path))
        if tokenizer.chat_template is None:
            tokenizer.chat_template = CHAT_TEMPLATE
        return tokenizer
    return AutoTokenizer.from_pretrained(str(name_or_path))


def load_model_and_tokenizer(name_or_path: str | Path, *, dtype=None, device=None):
    """A causal LM and its tokenizer from a folder or hub id; "tiny" builds the tiny model afresh."""
    from transformers import AutoModelForCausalLM

    if str(name_or_path) == "tiny":
        model, tokenizer = build_tiny()
    else:
        tokenizer = load_tokenizer(name_or_path)
        kwargs = {} if dtype is None else {"dtype": dtype}
        model = AutoModelForCausalLM.from_pretrained(str(name_or_path), **kwargs)
    if device is not None:
        model = model.to(device)
    return model, tokenizer
