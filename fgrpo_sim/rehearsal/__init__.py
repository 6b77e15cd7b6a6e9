"""The paper's LLM protocol rehearsed end to end on CPU (`fgrpo llm rehearse`, `make rehearsal`).

It drives the real commands (`fgrpo_sim.cli.main` in process, `python -m fgrpo_sim.rehearsal.probe` for
training runs it kills and resumes), so it sits on the command line's floor, beside `commands/`:
    driver   the stages, their one-line summaries, the manifest
    inputs   the files it trains and evaluates on (written, never downloaded) and what prepare-data must report
    checks   what each stage's outputs must satisfy (report numbers recomputed from the eval files)
    probe    `fgrpo ARGS` with each generation batch's problem ids logged, for the resume comparison
"""
