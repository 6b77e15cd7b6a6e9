"""The policy: a small decoder-only transformer built from a transformers Qwen2 config (random init)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fgrpo_sim.maze.tokenizer import VOCAB


@dataclass(frozen=True)
class ModelSpec:
    hidden_size: int = 64
    num_layers: int = 3
    num_heads: int = 4
    intermediate_size: int = 256
    max_positions: int = 512


def build_model(spec: ModelSpec, tokenizer, seed: int):
    """A freshly initialised Qwen2ForCausalLM with tied embeddings, seeded for reproducibility."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(VOCAB),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        use_cache=True,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    return model


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def spec_dict(spec: ModelSpec) -> dict:
    return asdict(spec)
