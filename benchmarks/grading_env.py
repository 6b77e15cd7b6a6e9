"""How this environment's math-verify grades 36 answer pairs (prints JSON): run it in each venv and compare.

    .venv/bin/python benchmarks/grading_env.py > main.json
    .venv-verl/bin/python benchmarks/grading_env.py > verl.json

Why: verl's hydra-core pins antlr4-python3-runtime 4.9, and math-verify's LaTeX parser behaves
differently under it (docs/verl.md). The pairs are (gold answer, boxed prediction), all of which a
grader should call correct.
"""

from __future__ import annotations

import json
from importlib.metadata import version

PAIRS = [
    ("10", "10\\%"), ("1/2", "\\frac{1}{2}"), ("0.5", "\\dfrac12"), ("90", "90^\\circ"), ("5", "5\\text{ cm}"),
    ("\\sqrt{8}", "2\\sqrt{2}"), ("3", "x=3"), ("1000", "1,000"), ("(0,1)", "(0,1)"), ("[1,2)", "[1,2)"),
    ("\\{1,2\\}", "\\{2,1\\}"), ("\\pm 2", "\\pm2"), ("2\\pi", "2\\pi"), ("\\frac{\\pi}{3}", "60^\\circ"),
    ("e^2", "e^{2}"), ("\\infty", "\\infty"), ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
    ("x^2+2x+1", "(x+1)^2"), ("\\log_2 8", "3"), ("\\binom{5}{2}", "10"), ("3!", "6"), ("\\text{(A)}", "A"),
    ("\\frac{1}{3}", "0.\\overline{3}"), ("\\$5", "5"), ("5\\%", "0.05"), ("25\\%", "\\frac14"),
    ("\\sqrt[3]{27}", "3"), ("\\cos 0", "1"), ("2^{10}", "1024"), ("a=1,b=2", "a=1, b=2"), ("\\mathbf{2}", "2"),
    ("\\left(1,2\\right)", "(1,2)"), ("\\text{yes}", "yes"), ("-\\frac{3}{4}", "-0.75"), ("12\\sqrt{3}", "\\sqrt{432}"),
    ("\\frac{\\sqrt{3}}{2}", "\\sin 60^\\circ"),
]


def main() -> None:
    from fgrpo_sim.llm.rewards import MathVerifier

    verifier = MathVerifier()
    try:
        graded = {f"{gold} | {pred}": verifier.score(f"\\boxed{{{pred}}}", gold).status for gold, pred in PAIRS}
    finally:
        verifier.close()
    print(json.dumps({"antlr4": version("antlr4-python3-runtime"), "math_verify": version("math-verify"),
                      "correct": sum(s == "correct" for s in graded.values()), "pairs": len(PAIRS),
                      "statuses": graded}, indent=1))


if __name__ == "__main__":
    main()
