"""Table 2 of the paper (Qwen2.5-7B group-size sweep), the rows of ../shared/paper-tables/main_results.csv with
setting group_size_sweep, kept here because a clone has no ../shared (tests/test_population_group_size_figure.py
compares it with the shared file when present). Issue 19 may ship every paper table as package data: then read it there."""

TABLE2_CSV = """\
table,model,method,group_size,gamma,setting,scope,metric,value,mark
2,Qwen2.5-7B,GRPO,2,0,group_size_sweep,math_avg,pass@1,36.2,
2,Qwen2.5-7B,GRPO,2,0,group_size_sweep,math_avg,pass@256,75.0,
2,Qwen2.5-7B,GRPO,2,0,group_size_sweep,ood_avg,pass@1,18.0,
2,Qwen2.5-7B,GRPO,2,0,group_size_sweep,ood_avg,pass@256,67.3,
2,Qwen2.5-7B,GRPO,2,0,group_size_sweep,rare_correct_trajectories,delta_nll_rare,0.19,
2,Qwen2.5-7B,GRPO,4,0,group_size_sweep,math_avg,pass@1,36.4,
2,Qwen2.5-7B,GRPO,4,0,group_size_sweep,math_avg,pass@256,71.1,
2,Qwen2.5-7B,GRPO,4,0,group_size_sweep,ood_avg,pass@1,18.7,
2,Qwen2.5-7B,GRPO,4,0,group_size_sweep,ood_avg,pass@256,59.7,
2,Qwen2.5-7B,GRPO,4,0,group_size_sweep,rare_correct_trajectories,delta_nll_rare,0.44,
2,Qwen2.5-7B,GRPO,8,0,group_size_sweep,math_avg,pass@1,37.3,
2,Qwen2.5-7B,GRPO,8,0,group_size_sweep,math_avg,pass@256,64.1,
2,Qwen2.5-7B,GRPO,8,0,group_size_sweep,ood_avg,pass@1,17.1,
2,Qwen2.5-7B,GRPO,8,0,group_size_sweep,ood_avg,pass@256,55.9,
2,Qwen2.5-7B,GRPO,8,0,group_size_sweep,rare_correct_trajectories,delta_nll_rare,0.68,
2,Qwen2.5-7B,GRPO,16,0,group_size_sweep,math_avg,pass@1,38.4,
2,Qwen2.5-7B,GRPO,16,0,group_size_sweep,math_avg,pass@256,67.5,
2,Qwen2.5-7B,GRPO,16,0,group_size_sweep,ood_avg,pass@1,17.7,
2,Qwen2.5-7B,GRPO,16,0,group_size_sweep,ood_avg,pass@256,55.7,
2,Qwen2.5-7B,GRPO,16,0,group_size_sweep,rare_correct_trajectories,delta_nll_rare,0.66,
2,Qwen2.5-7B,GRPO,32,0,group_size_sweep,math_avg,pass@1,39.2,
2,Qwen2.5-7B,GRPO,32,0,group_size_sweep,math_avg,pass@256,70.1,
2,Qwen2.5-7B,GRPO,32,0,group_size_sweep,ood_avg,pass@1,17.7,
2,Qwen2.5-7B,GRPO,32,0,group_size_sweep,ood_avg,pass@256,61.7,
2,Qwen2.5-7B,GRPO,32,0,group_size_sweep,rare_correct_trajectories,delta_nll_rare,0.52,
2,Qwen2.5-7B,F-GRPO,8,0.5,group_size_sweep,math_avg,pass@1,38.6,
2,Qwen2.5-7B,F-GRPO,8,0.5,group_size_sweep,math_avg,pass@256,70.3,
2,Qwen2.5-7B,F-GRPO,8,0.5,group_size_sweep,ood_avg,pass@1,19.2,
2,Qwen2.5-7B,F-GRPO,8,0.5,group_size_sweep,ood_avg,pass@256,63.3,
2,Qwen2.5-7B,F-GRPO,8,0.5,group_size_sweep,rare_correct_trajectories,delta_nll_rare,0.46,
"""


def table2():
    """The rows as a DataFrame (value in percent for pass@k, nats for delta_nll_rare)."""
    import io

    import pandas as pd

    return pd.read_csv(io.StringIO(TABLE2_CSV))
