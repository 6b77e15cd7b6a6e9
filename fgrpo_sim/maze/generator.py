"""Perfect mazes: a random spanning tree of the cell grid, so the route between any two cells is unique.

A maze of `size` x `size` grid squares (odd, >= 5) has `(size - 1) // 2` cells per side. Cells sit at
odd coordinates; the squares between two cells are walls unless the tree joins them; the outer border
is always wall. The paper (after Tajwar et al. 2026) uses 17 x 17 grids, i.e. 8 x 8 cells.

The tree is grown by a randomised depth-first search (the classic "recursive backtracker"), which gives
long corridors and long routes. Everything is driven by a numpy Generator, so a seed fixes the maze.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from fgrpo_sim.validation import check_integer

WALL, OPEN = 0, 1

# Move name -> (row step, column step) in cells. The order fixes the token order too.
MOVES: dict[str, tuple[int, int]] = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}


@dataclass(frozen=True)
class Maze:
    """One maze task: the grid, start and goal cells, and the unique route between them."""

    grid: np.ndarray  # (size, size) uint8, WALL or OPEN; read-only
    start: tuple[int, int]  # cell coordinates (row, col), 0-based over cells
    goal: tuple[int, int]
    route: tuple[str, ...]  # moves from start to goal, each one of MOVES

    @property
    def size(self) -> int:
        return int(self.grid.shape[0])

    @property
    def cells_per_side(self) -> int:
        return (self.size - 1) // 2

    def key(self) -> bytes:
        """Identity of the task (grid, start, goal): used to keep held-out and training mazes disjoint."""
        return self.grid.tobytes() + bytes([*self.start, *self.goal])

    def render(self) -> str:
        """Human-readable picture: # wall, . open, S start, G goal, * squares the route walks over."""
        chars = np.where(self.grid == WALL, "#", ".").astype("<U1")
        r, c = self.start
        for move in self.route:
            dr, dc = MOVES[move]
            chars[2 * r + 1 + dr, 2 * c + 1 + dc] = "*"
            r, c = r + dr, c + dc
            chars[2 * r + 1, 2 * c + 1] = "*"
        chars[2 * self.start[0] + 1, 2 * self.start[1] + 1] = "S"
        chars[2 * self.goal[0] + 1, 2 * self.goal[1] + 1] = "G"
        return "\n".join("".join(row) for row in chars)


def check_size(size: int) -> int:
    size = int(check_integer("size", size, 5, 101))
    if size % 2 == 0:
        raise ValueError(f"size must be an odd integer in [5, 101], got {size}")
    return size


def random_tree_grid(size: int, rng: np.random.Generator) -> np.ndarray:
    """A perfect maze grid: randomised depth-first spanning tree over the cells."""
    size = check_size(size)
    cells = (size - 1) // 2
    grid = np.zeros((size, size), dtype=np.uint8)
    visited = np.zeros((cells, cells), dtype=bool)
    start = (int(rng.integers(cells)), int(rng.integers(cells)))
    visited[start] = True
    grid[2 * start[0] + 1, 2 * start[1] + 1] = OPEN
    stack = [start]
    steps = np.array(list(MOVES.values()))
    while stack:
        r, c = stack[-1]
        options = [(dr, dc) for dr, dc in steps
                   if 0 <= r + dr < cells and 0 <= c + dc < cells and not visited[r + dr, c + dc]]
        if not options:
            stack.pop()
            continue
        dr, dc = options[int(rng.integers(len(options)))]
        nr, nc = r + dr, c + dc
        visited[nr, nc] = True
        grid[2 * r + 1 + dr, 2 * c + 1 + dc] = OPEN  # knock down the wall between the two cells
        grid[2 * nr + 1, 2 * nc + 1] = OPEN
        stack.append((nr, nc))
    return grid


def neighbours(grid: np.ndarray, cell: tuple[int, int]) -> list[tuple[str, tuple[int, int]]]:
    """Moves allowed from `cell` (no wall in between), with the cell each one reaches."""
    r, c = cell
    out = []
    for name, (dr, dc) in MOVES.items():
        if grid[2 * r + 1 + dr, 2 * c + 1 + dc] == OPEN:
            out.append((name, (r + dr, c + dc)))
    return out


def shortest_route(grid: np.ndarray, start: tuple[int, int], goal: tuple[int, int]) -> tuple[str, ...]:
    """Breadth-first shortest route of moves from start to goal (in a perfect maze, the only simple route)."""
    parent: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            break
        for move, nxt in neighbours(grid, cell):
            if nxt not in parent:
                parent[nxt] = (cell, move)
                queue.append(nxt)
    if goal not in parent:
        raise ValueError("goal is not reachable from start")
    moves = []
    cell = goal
    while parent[cell] is not None:
        cell, move = parent[cell]
        moves.append(move)
    return tuple(reversed(moves))


def follow_route(grid: np.ndarray, start: tuple[int, int], moves) -> tuple[tuple[int, int], int]:
    """Walk `moves` from `start`; returns (cell reached, number of moves taken before the first wall hit)."""
    cells = (grid.shape[0] - 1) // 2
    r, c = start
    for i, move in enumerate(moves):
        if move not in MOVES:
            return (r, c), i
        dr, dc = MOVES[move]
        if not (0 <= r + dr < cells and 0 <= c + dc < cells) or grid[2 * r + 1 + dr, 2 * c + 1 + dc] != OPEN:
            return (r, c), i
        r, c = r + dr, c + dc
    return (r, c), len(moves)


def random_maze(size: int, rng: np.random.Generator) -> Maze:
    """One maze with a random start and a different random goal cell."""
    grid = random_tree_grid(size, rng)
    cells = (size - 1) // 2
    a, b = rng.choice(cells * cells, size=2, replace=False)
    start, goal = (int(a // cells), int(a % cells)), (int(b // cells), int(b % cells))
    grid.setflags(write=False)
    return Maze(grid=grid, start=start, goal=goal, route=shortest_route(grid, start, goal))


def generate_mazes(count: int, size: int, seed: int, *, exclude: set[bytes] | None = None) -> list[Maze]:
    """`count` mazes from `seed`, none of whose keys is in `exclude` (and no duplicates among themselves)."""
    count = int(check_integer("count", count, 0, 10**8))
    size = check_size(size)
    rng = np.random.default_rng(int(check_integer("seed", seed, 0, 2**63 - 1)))
    seen = set(exclude or ())
    mazes: list[Maze] = []
    attempts = 0
    while len(mazes) < count:
        attempts += 1
        if attempts > 20 * count + 1000:
            raise ValueError(f"count must be at most the number of distinct {size}x{size} mazes available, got {count}")
        maze = random_maze(size, rng)
        key = maze.key()
        if key in seen:
            continue
        seen.add(key)
        mazes.append(maze)
    return mazes


def split_mazes(size: int, n_train: int, n_heldout: int, *, train_seed: int, heldout_seed: int):
    """Held-out mazes first (fixed by `heldout_seed`), then training mazes that never repeat one of them."""
    heldout = generate_mazes(n_heldout, size, heldout_seed)
    train = generate_mazes(n_train, size, train_seed, exclude={m.key() for m in heldout})
    return train, heldout
