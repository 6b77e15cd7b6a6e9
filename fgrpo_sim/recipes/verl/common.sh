# shellcheck shell=bash
# Shared Hydra overrides of the paper's Qwen2.5-7B runs on verl (paper Table 5, App. L.2), sourced by
# every script in recipes/verl/. Run a script on the Ray head node (docs/verl.md: `ray start` first for
# two nodes); extra arguments are passed on to verl as Hydra overrides, e.g. `trainer.logger=[console,wandb]`,
# and `--cfg job` prints the composed config without starting anything.
#
# Environment knobs (defaults = the paper): MODEL, DATA_DIR (from `python -m fgrpo_sim.verl.prepare_data`),
# NNODES x GPUS_PER_NODE = 2 x 8 (16 H100), N rollouts per prompt, SAVE_FREQ (steps between checkpoints;
# default `epoch`: the launcher reads the row count of the train parquet and saves every rows // 256 steps,
# verl dropping the last partial batch: 153 for the paper's 39,202 rows), PYTHON (the interpreter with
# fgrpo-sim[verl]; default: the repository's .venv-verl, built by `make install-verl`).
MODEL=${MODEL:-Qwen/Qwen2.5-7B}
DATA_DIR=${DATA_DIR:-data/verl}
NNODES=${NNODES:-2}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
N=${N:-8}
SAVE_FREQ=${SAVE_FREQ:-epoch}
source "$(dirname "${BASH_SOURCE[0]}")/python.sh"

PAPER_ARGS=(
  # data: DeepScaleR prepared by `fgrpo llm prepare-data` (prompts <= 1024 tokens), 256 prompts a step
  "data.train_files=${DATA_DIR}/train.parquet"
  "data.val_files=${DATA_DIR}/val.parquet"
  data.train_batch_size=256
  data.max_prompt_length=1024
  data.max_response_length=8192
  data.filter_overlong_prompts=True
  data.truncation=error
  # policy: FSDP2, AdamW(0.9, 0.999), wd 0.01, grad clip 1.0, lr 1e-6 constant after 15 warmup steps.
  # fgrpo_sim.verl.optim.AdamW exempts biases and norm weights from weight decay, as the TRL recipes do.
  "actor_rollout_ref.model.path=${MODEL}"
  actor_rollout_ref.model.enable_gradient_checkpointing=True
  actor_rollout_ref.model.use_remove_padding=True
  actor_rollout_ref.actor.strategy=fsdp2
  actor_rollout_ref.actor.optim.lr=1e-6
  actor_rollout_ref.actor.optim.lr_scheduler_type=constant
  actor_rollout_ref.actor.optim.lr_warmup_steps=15
  actor_rollout_ref.actor.optim.weight_decay=0.01
  "actor_rollout_ref.actor.optim.betas=[0.9,0.999]"
  actor_rollout_ref.actor.optim.optimizer_impl=fgrpo_sim.verl.optim
  actor_rollout_ref.actor.optim.optimizer=AdamW
  actor_rollout_ref.actor.optim.clip_grad=1.0
  # PPO: mini-batch 64 prompts (verl multiplies by n), 1 epoch over each batch, token-mean, no KL
  actor_rollout_ref.actor.ppo_mini_batch_size=64
  actor_rollout_ref.actor.ppo_epochs=1
  actor_rollout_ref.actor.loss_agg_mode=token-mean
  actor_rollout_ref.actor.use_kl_loss=False
  actor_rollout_ref.actor.entropy_coeff=0
  algorithm.use_kl_in_reward=False
  # no rollout/training importance-sampling correction (verl's default, and the TRL recipes'
  # vllm_importance_sampling_correction: false); a recipe choice, docs/verl.md "Same objective as TRL"
  algorithm.rollout_correction.rollout_is=null
  # micro-batching by tokens (memory only; the update is the same): one 1024 + 8192 sequence fits twice
  actor_rollout_ref.actor.use_dynamic_bsz=True
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=18432
  # rollouts: sglang, n per prompt, temperature 1.0, top-p 1.0, top-k -1, up to 8192 response tokens
  actor_rollout_ref.rollout.name=sglang
  "actor_rollout_ref.rollout.n=${N}"
  actor_rollout_ref.rollout.temperature=1.0
  actor_rollout_ref.rollout.top_p=1.0
  actor_rollout_ref.rollout.top_k=-1
  # reward: math-verify on the last \boxed{}, 1.0 / 0.0 (fgrpo_sim.llm.rewards)
  reward.custom_reward_function.path=pkg://fgrpo_sim.verl.reward
  reward.custom_reward_function.name=compute_score
  # schedule: 10 epochs, a checkpoint per epoch, no in-training validation (evaluate checkpoints apart)
  trainer.total_epochs=10
  "trainer.save_freq=${SAVE_FREQ}"
  trainer.test_freq=-1
  trainer.val_before_train=False
  "trainer.nnodes=${NNODES}"
  "trainer.n_gpus_per_node=${GPUS_PER_NODE}"
  trainer.project_name=fgrpo
  "trainer.logger=[console]"
)

# Clip and loss of each base method (paper App. B); the focal variants use the same, plus focal_grpo.
GRPO_LOSS=(actor_rollout_ref.actor.policy_loss.loss_mode=vanilla actor_rollout_ref.actor.clip_ratio_low=0.2
           actor_rollout_ref.actor.clip_ratio_high=0.2)
DAPO_LOSS=(actor_rollout_ref.actor.policy_loss.loss_mode=vanilla actor_rollout_ref.actor.clip_ratio_low=0.2
           actor_rollout_ref.actor.clip_ratio_high=0.28)
# verl's CISPO clips the stop-gradient ratio to [1 - low, 1 + high] = [0, 6] (two-sided; TRL caps above only)
CISPO_LOSS=(actor_rollout_ref.actor.policy_loss.loss_mode=cispo actor_rollout_ref.actor.clip_ratio_low=1.0
            actor_rollout_ref.actor.clip_ratio_high=5.0)

launch() {
  exec "${PYTHON}" -m fgrpo_sim.verl.main_ppo "${PAPER_ARGS[@]}" "$@"
}
