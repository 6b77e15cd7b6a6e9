"""Checkpoints every stage can read (issue 18): the FSDP launch config saves full Hugging Face weights and
wraps each model's own decoder layer; recipes keep the disk bounded."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest
from extras import require

require("accelerate")

ROOT = Path(__file__).resolve().parent.parent
FSDP = ROOT / "recipes/accelerate/fsdp.yaml"


def _fsdp_plugin():
    """The FSDP plugin exactly as `accelerate launch --config_file recipes/accelerate/fsdp.yaml` builds it."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import FullyShardedDataParallelPlugin
    from accelerate.utils.launch import prepare_multi_gpu_env

    args, _, _ = _validate_launch_command(launch_command_parser().parse_args(["--config_file", str(FSDP), "train.py"]))
    env = {k: v for k, v in prepare_multi_gpu_env(args).items() if k.startswith(("FSDP", "ACCELERATE"))}
    with mock.patch.dict(os.environ, env):
        return FullyShardedDataParallelPlugin()


def _tiny(config_cls, model_cls):
    return model_cls(config_cls(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=1, head_dim=8))


def test_fsdp_saves_full_weights_and_wraps_each_models_decoder_layer():
    import transformers
    from accelerate.utils.fsdp_utils import fsdp2_prepare_auto_wrap_policy
    from torch.distributed.fsdp import StateDictType

    plugin = _fsdp_plugin()
    # SHARDED_STATE_DICT would write pytorch_model_fsdp_0/ and no model.safetensors: `fgrpo llm eval` cannot load it
    assert plugin.state_dict_type == StateDictType.FULL_STATE_DICT and plugin.fsdp_version == 2
    assert plugin.transformer_cls_names_to_wrap is None  # so accelerate takes the model's _no_split_modules
    for config_cls, model_cls, layer in [
        (transformers.Qwen2Config, transformers.Qwen2ForCausalLM, "Qwen2DecoderLayer"),   # qwen2.5-7b recipes
        (transformers.Qwen3Config, transformers.Qwen3ForCausalLM, "Qwen3DecoderLayer"),   # qwen3-4b-base
        (transformers.LlamaConfig, transformers.LlamaForCausalLM, "LlamaDecoderLayer"),   # llama-3.2-3b-instruct
    ]:
        model = _tiny(config_cls, model_cls)
        wraps = fsdp2_prepare_auto_wrap_policy(plugin, model)
        assert {type(m).__name__ for m in model.modules() if wraps(m)} == {layer}
