"""Training F-GRPO / F-DAPO / F-CISPO with TRL: follow a recipe from `run.train_recipe` down.

    run           what `fgrpo llm train` does: recipe -> config -> data -> trainer -> train
    recipe        recipe YAML files and overrides;  recipe_index  the paper's arms and their recipes
    config        FocalGRPOConfig (TRL's GRPOConfig plus the focal and control fields)
    trainer       FocalGRPOTrainer: TRL's advantages times the focal weight of each gathered group
    controls      the paper's Table 3 baselines (entropy bonus, KL, DS-GRPO)
    launch        batch layout per world size, warmup, logits memory
    data          DeepScaleR preparation and the prepared file as a TRL dataset
    dynamics      held-out pass@k during training (a TrainerCallback; uses ../evaluation)
    metrics_log   every logged dict to output_dir/metrics.jsonl
"""
