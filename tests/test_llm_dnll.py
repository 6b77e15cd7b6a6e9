"""dNLL_rare (paper App. M.2): batched, length-sorted, chunked-logit scoring equals a plain float64 per-sample loop;
the base model scores only the correct trajectories."""

from __future__ import annotations

import random

import pytest
from extras import require

torch = pytest.importorskip("torch")
require("transformers")

from fgrpo_sim.llm.evaluation import diagnostics  # noqa: E402
from fgrpo_sim.llm.evaluation.diagnostics import dnll_rare, length_normalised_nll  # noqa: E402


def _reference_nll(model, tokenizer, prompt: str, completion: str) -> float:
    """One sequence, no padding, the whole forward pass in float64."""
    p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    c_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([p_ids + c_ids])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    total = sum(-logp[t - 1, ids[0, t]].item() for t in range(len(p_ids), len(p_ids) + len(c_ids)))
    return total / len(c_ids)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from fgrpo_sim.llm.tiny import build_tiny, save_tiny

    root = tmp_path_factory.mktemp("dnll")
    base_dir = save_tiny(*build_tiny(seed=0), root / "base")
    trained_dir = save_tiny(*build_tiny(seed=1), root / "trained")
    rng = random.Random(0)
    digits = "0123456789+= "
    trajectories = [{"problem": f"{rng.randint(0, 99)}+{rng.randint(0, 99)}=",
                     "completion": "".join(rng.choice(digits) for _ in range(rng.randint(1, 40))),
                     "correct": rng.random() < 0.6} for _ in range(30)]
    return base_dir, trained_dir, trajectories


def test_batched_scoring_equals_a_float64_loop(setup):
    from fgrpo_sim.llm.tiny import load_model_and_tokenizer

    base_dir, _, trajectories = setup
    model, tokenizer = load_model_and_tokenizer(base_dir)
    prompts = [t["problem"] for t in trajectories]
    completions = [t["completion"] for t in trajectories]
    batched = length_normalised_nll(model, tokenizer, prompts, completions, batch_size=7, logit_chunk=5)
    model64 = model.double()
    reference = [_reference_nll(model64, tokenizer, p, c) for p, c in zip(prompts, completions)]
    assert batched == pytest.approx(reference, rel=1e-5, abs=1e-5)


def test_dnll_rare_equals_the_float64_reference(setup, monkeypatch):
    from fgrpo_sim.llm.tiny import load_model_and_tokenizer

    base_dir, trained_dir, trajectories = setup
    scored = []
    real = diagnostics.length_normalised_nll

    def spy(model, tokenizer, prompts, completions, *args, **kwargs):
        scored.append(len(prompts))
        return real(model, tokenizer, prompts, completions, *args, **kwargs)

    monkeypatch.setattr(diagnostics, "length_normalised_nll", spy)
    result = dnll_rare(trajectories, str(base_dir), [str(trained_dir)], system_prompt=None, top_fraction=0.2,
                       batch_size=4, device="cpu")

    # The reference: every correct trajectory scored one by one in float64, top 20% by base NLL, mean difference.
    base64 = load_model_and_tokenizer(base_dir)[0].double()
    trained64 = load_model_and_tokenizer(trained_dir)[0].double()
    tokenizer = load_model_and_tokenizer(base_dir)[1]
    from fgrpo_sim.llm.evaluation.evaluate import render_prompt

    correct = [i for i, t in enumerate(trajectories) if t["correct"]]
    prompt = {i: render_prompt(tokenizer, trajectories[i]["problem"], None) for i in correct}
    base_nll = {i: _reference_nll(base64, tokenizer, prompt[i], trajectories[i]["completion"]) for i in correct}
    keep = max(1, round(0.2 * len(correct)))
    chosen = sorted(correct, key=lambda i: base_nll[i], reverse=True)[:keep]
    base_mean = sum(base_nll[i] for i in chosen) / keep
    trained_mean = sum(_reference_nll(trained64, tokenizer, prompt[i], trajectories[i]["completion"])
                       for i in chosen) / keep

    assert scored == [len(correct), keep]  # the base model scores only correct trajectories, the trained one the kept
    assert result["correct"] == result["base_scored"] == len(correct) and result["selected"] == keep
    assert result["base_nll"] == pytest.approx(base_mean, rel=1e-5)
    assert result["models"][str(trained_dir)]["dnll_rare"] == pytest.approx(trained_mean - base_mean, rel=1e-4, abs=1e-5)
    assert result["selected_indices"] == sorted(chosen)


def test_bad_device_is_one_line_before_any_file_is_read(run_cli, tmp_path):
    result = run_cli("llm", "dnll-rare", "--trajectories", tmp_path / "missing.jsonl", "--base", "tiny",
                     "--model", "tiny", "--device", "tpu")
    assert result.exit_code == 2 and "--device must be auto, cpu, cuda or cuda:N" in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_one_model_in_memory_at_a_time(monkeypatch):
    """Each model is garbage by the time the next loads (at 7B two on one GPU would not fit)."""
    import gc
    import weakref

    from fgrpo_sim.llm.evaluation import diagnostics

    class Model:
        pass

    alive: list[weakref.ref] = []
    seen_alive_at_load: list[int] = []

    def load(name, device):
        gc.collect()
        seen_alive_at_load.append(sum(ref() is not None for ref in alive))
        model = Model()
        alive.append(weakref.ref(model))
        return model, None

    monkeypatch.setattr(diagnostics, "_load_for_scoring", load)
    monkeypatch.setattr(diagnostics, "length_normalised_nll", lambda model, tok, prompts, *a, **k: [1.0] * len(prompts))
    monkeypatch.setattr("fgrpo_sim.llm.evaluation.evaluate.render_prompt", lambda tok, problem, system: problem)
    trajectories = [{"problem": f"p{i}", "completion": "c", "correct": True} for i in range(4)]
    diagnostics.dnll_rare(trajectories, "base", ["a", "b"], system_prompt=None, top_fraction=0.5, progress=False)
    assert seen_alive_at_load == [0, 0, 0]
