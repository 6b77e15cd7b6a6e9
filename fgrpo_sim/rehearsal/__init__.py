"""The paper's LLM protocol rehearsed end to end on CPU (`fgrpo llm rehearse`, `make rehearsal`).

It drives the real commands (`fgrpo_sim.cli.main` in process, `python -m fgrpo_sim.rehearsal.probe` for
training runs it kills and resumes) without importing the command line, which sits a floor above it: the
entry point is handed down (`Rehearsal(run_cli=...)`) or run by name (`python -m fgrpo_sim`):
    driver   the stages, their one-line summaries, the manifest
    inputs   the files it trains and evaluates on (written, never downloaded) and what prepare-data must report
    checks   what each stage's outputs must satisfy (report numbers recomputed from the eval files)
    probe    `fgrpo ARGS` with each generation batch's problem ids logged, for the resume comparison
"""
