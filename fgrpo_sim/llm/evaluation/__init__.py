"""Evaluating checkpoints as the paper does: load a benchmark, sample n answers, grade, pass@k, report.

    data          math benchmark loaders (one schema);  ood_data  GPQA-Diamond, IFEval, SynLogic loaders
    prompts       the paper's prompts and sampling settings per model family (Table 9), benchmark names
    grading       one grader per benchmark kind (math-verify, GPQA letter, IFEval, SynLogic)
    evaluate      `fgrpo llm eval`: samples, grades and pass@k per problem into a results file
    report        checkpoint selection (App. L.4), significance (App. Q), tables; figures are drawn by the caller
    diagnostics   dNLL_rare (App. M.2)
Nothing here imports ../training.
"""
