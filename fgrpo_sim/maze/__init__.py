"""Single-solution Maze (paper Sec. 5.2): perfect mazes, a tiny transformer, SFT, then GRPO vs F-GRPO.

Modules: `generator` (mazes and routes), `tokenizer`, `reward`, `model`, `sft`, `rl` (through
`fgrpo_sim.llm.FocalGRPOTrainer`), `evaluate` (pass@K), `presets`, `experiment` (the driver).
Heavy libraries (torch, transformers, trl) are imported inside functions.
"""
