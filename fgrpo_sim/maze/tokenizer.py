"""Maze tokens and a `PreTrainedTokenizerFast` over them that transformers and TRL accept.

Prompt: the maze interior row by row (the outer border is always wall, so it is left out), one token per
square: `#` wall, `.` open, `S` start cell, `G` goal cell; then `<sep>`. Completion: moves `U D L R`
(one cell each) and the stop token `<stop>`, which is the tokenizer's eos token. Tokens are separated by
spaces in text, so a word-level vocabulary with whitespace splitting round-trips exactly.
"""

from __future__ import annotations

from fgrpo_sim.maze.generator import MOVES, WALL, Maze

PAD, STOP, UNK, SEP = "<pad>", "<stop>", "<unk>", "<sep>"
GRID_TOKENS = ("#", ".", "S", "G")
MOVE_TOKENS = tuple(MOVES)
VOCAB: tuple[str, ...] = (PAD, STOP, UNK, SEP, *GRID_TOKENS, *MOVE_TOKENS)


def build_tokenizer():
    """A fast word-level tokenizer over VOCAB (pad `<pad>`, eos `<stop>`); it adds no special tokens itself."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel({tok: i for i, tok in enumerate(VOCAB)}, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, eos_token=STOP, unk_token=UNK, padding_side="left",
        model_max_length=4096,
    )
    return tokenizer


def load_tokenizer(folder):
    """Load a tokenizer saved by `tokenizer.save_pretrained(folder)`.

    Loaded with PreTrainedTokenizerFast directly: AutoTokenizer next to a qwen2 config would silently swap in
    a Qwen tokenizer class.
    """
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(str(folder))


def prompt_text(maze: Maze) -> str:
    """The prompt of a maze: interior squares row by row, then `<sep>`."""
    inner = maze.grid[1:-1, 1:-1]
    rows = []
    for r in range(inner.shape[0]):
        row = []
        for c in range(inner.shape[1]):
            row.append("#" if inner[r, c] == WALL else ".")
        rows.append(row)
    sr, sc = maze.start
    gr, gc = maze.goal
    rows[2 * sr][2 * sc] = "S"  # cell (r, c) sits at grid (2r+1, 2c+1), i.e. interior (2r, 2c)
    rows[2 * gr][2 * gc] = "G"
    return " ".join(tok for row in rows for tok in row) + " " + SEP


def target_text(maze: Maze) -> str:
    """The completion the reward accepts: the unique route's moves, then `<stop>`."""
    return " ".join([*maze.route, STOP])


def prompt_length(size: int) -> int:
    """Number of prompt tokens for a size x size maze (interior squares plus `<sep>`)."""
    return (size - 2) ** 2 + 1


def parse_completion(text: str) -> tuple[tuple[str, ...], bool]:
    """Split a completion into its moves before the first `<stop>` and whether it is well formed.

    Well formed means: only move tokens, then exactly one `<stop>` at the end.
    """
    tokens = text.split()
    moves = []
    for i, tok in enumerate(tokens):
        if tok == STOP:
            return tuple(moves), i == len(tokens) - 1
        if tok not in MOVES:
            return tuple(moves), False
        moves.append(tok)
    return tuple(moves), False
