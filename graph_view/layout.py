"""Layered (Sugiyama) layout: ranks, crossing reduction, straight long wires. Qt-free.

The four classic steps, kept small:

1. break cycles (a DFS reverses its back edges) so a broken net still lays out;
2. rank by longest path from the sources, then lift each node that feeds at least as many
   wires as it reads to just below its first consumer (a label input, the Split of a label,
   an inception module's 1x1 branch or a ResNet projection sit beside the layer they feed);
3. order each rank by weighted barycentres of the ranks around it, sweeping down and up and
   keeping the order with the fewest crossings; long edges pass through dummy nodes that are
   shared by every consumer of the same blob, so a blob read far away travels as one trunk;
4. place nodes horizontally by repeatedly pulling each towards its neighbours (dummy chains
   pull hardest, so long wires run straight) and resolving overlaps exactly by isotonic
   regression (pool adjacent violators) with the minimum gaps as offsets.

Ports matter: an edge pulls towards the x of its port, so a Concat's inputs line up in slot order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

Key = Hashable
Point = tuple[float, float]


@dataclass(frozen=True)
class LayoutEdge:
    src: Key
    dst: Key
    src_dx: float = 0.0  # the port's x offset from the node's centre
    dst_dx: float = 0.0
    bundle: Hashable = None  # edges with one bundle (one blob) share their dummy nodes


@dataclass
class Layout:
    positions: dict[Key, Point] = field(default_factory=dict)  # node centres
    routes: list[list[Point]] = field(default_factory=list)  # per edge: bend points, source to target
    ranks: dict[Key, int] = field(default_factory=dict)


@dataclass
class _Dummy:
    chain: Hashable
    rank: int

    def __hash__(self) -> int:
        return hash((self.chain, self.rank))


def _acyclic(nodes: Sequence[Key], succ: dict[Key, list[Key]]) -> set[tuple[Key, Key]]:
    """The back edges of a DFS in node order (reversing them leaves a DAG)."""
    state: dict[Key, int] = {}  # 1 on the stack, 2 done
    back: set[tuple[Key, Key]] = set()
    for root in nodes:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(succ[root]))]
        while stack:
            v, children = stack[-1]
            for w in children:
                if state.get(w) == 1:
                    back.add((v, w))
                elif w not in state:
                    state[w] = 1
                    stack.append((w, iter(succ[w])))
                    break
            else:
                state[v] = 2
                stack.pop()
    return back


def _rank(nodes: Sequence[Key], pairs: set[tuple[Key, Key]]) -> dict[Key, int]:
    preds: dict[Key, list[Key]] = defaultdict(list)
    succs: dict[Key, list[Key]] = defaultdict(list)
    for u, v in pairs:
        preds[v].append(u)
        succs[u].append(v)
    indegree = {v: len(preds[v]) for v in nodes}
    order, ready = [], [v for v in nodes if indegree[v] == 0]
    while ready:
        v = ready.pop(0)
        order.append(v)
        for w in succs[v]:
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(w)
    rank: dict[Hashable, int] = {}
    for v in order:
        rank[v] = max((rank[u] + 1 for u in preds[v]), default=0)
    for v in reversed(order):  # lift towards the consumers where that shortens more wires than it lengthens
        if succs[v] and len(succs[v]) >= len(preds[v]):
            rank[v] = max(min(rank[w] for w in succs[v]) - 1, rank[v])
    return rank


def _crossings(ends: list[tuple[float, float]]) -> int:
    """Crossings among wires between two adjacent ranks, each given as (upper x, lower x).

    Two wires cross when their ends are in opposite orders: the inversions of the lower ends once
    the wires are sorted by their upper ends (counted with a Fenwick tree). Ends are positions in
    the rank plus a small port offset, so wires into a Concat's ports in the wrong order count.
    """
    lowers = [b for _a, b in sorted(ends)]
    rank = {x: i + 1 for i, x in enumerate(sorted(set(lowers)))}
    tree = [0] * (len(rank) + 1)
    total = 0
    for seen, x in enumerate(lowers):
        i, not_above = rank[x], 0
        while i > 0:
            not_above += tree[i]
            i -= i & -i
        total += seen - not_above
        i = rank[x]
        while i < len(tree):
            tree[i] += 1
            i += i & -i
    return total


def _isotonic(targets: list[float], weights: list[float]) -> list[float]:
    """Weighted least squares fit to ``targets`` that never decreases (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for t, w in zip(targets, weights):
        blocks.append([t, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    out: list[float] = []
    for mean, _w, n in blocks:
        out += [mean] * int(n)
    return out


class _Layering:
    def __init__(self, nodes, sizes, edges, rank_gap, node_gap, dummy_width):
        self.sizes, self.rank_gap, self.node_gap, self.dummy_width = sizes, rank_gap, node_gap, dummy_width
        succ: dict[Key, list[Key]] = defaultdict(list)
        for e in edges:
            if e.src != e.dst:
                succ[e.src].append(e.dst)
        back = _acyclic(nodes, succ)
        pairs = {(v, u) if (u, v) in back else (u, v) for u, vs in succ.items() for v in vs}
        self.rank = _rank(nodes, pairs)
        self.chains: list[list[Key]] = []  # per edge: the nodes it passes, source to target
        self.links: dict[tuple[Key, Key], float] = {}  # (upper, lower) -> weight
        self.dx: dict[tuple[Key, Key], tuple[float, float]] = {}  # port offsets of a link's ends
        for i, e in enumerate(edges):
            self._chain(i, e, (e.dst, e.src) in back or (e.src, e.dst) in back)
        ranks = max(self.rank.values(), default=-1) + 1
        self.layers: list[list[Key]] = [[] for _ in range(ranks)]
        for v in nodes:
            self.layers[self.rank[v]].append(v)
        for v, r in self.rank.items():
            if isinstance(v, _Dummy):
                self.layers[r].append(v)
        self.up: dict[Key, list[Key]] = defaultdict(list)
        self.down: dict[Key, list[Key]] = defaultdict(list)
        for a, b in self.links:
            self.down[a].append(b)
            self.up[b].append(a)

    def _chain(self, i: int, e: LayoutEdge, reversed_: bool) -> None:
        if e.src == e.dst:
            self.chains.append([e.src, e.dst])
            return
        u, v = (e.dst, e.src) if reversed_ else (e.src, e.dst)
        lo, hi = self.rank[u], self.rank[v]
        key = (e.bundle, u) if e.bundle is not None and not reversed_ else ("edge", i)
        path: list[Key] = [u]
        for r in range(lo + 1, hi):
            dummy = _Dummy(key, r)
            self.rank.setdefault(dummy, r)
            path.append(dummy)
        path.append(v)
        for k, (a, b) in enumerate(zip(path, path[1:])):
            real = (not isinstance(a, _Dummy)) + (not isinstance(b, _Dummy))
            self.links[(a, b)] = self.links.get((a, b), 0) + (1, 2, 8)[2 - real]
            a_dx = (e.dst_dx if reversed_ else e.src_dx) if k == 0 else 0.0
            b_dx = (e.src_dx if reversed_ else e.dst_dx) if k == len(path) - 2 else 0.0
            self.dx.setdefault((a, b), (a_dx, b_dx))
        self.chains.append(path[::-1] if reversed_ else path)

    def width(self, v: Key) -> float:
        return self.dummy_width if isinstance(v, _Dummy) else self.sizes[v][0]

    # ---- ordering -------------------------------------------------------------------------
    def order(self, sweeps: int = 10) -> None:
        pos = {v: i for layer in self.layers for i, v in enumerate(layer)}
        best, best_count = [list(layer) for layer in self.layers], self.crossings(pos)
        for sweep in range(sweeps):
            if best_count == 0:
                break
            downward = sweep % 2 == 0
            indices = range(1, len(self.layers)) if downward else range(len(self.layers) - 2, -1, -1)
            for r in indices:
                self._reorder(r, pos, self.up if downward else self.down, downward)
            count = self.crossings(pos)
            if count < best_count:
                best, best_count = [list(layer) for layer in self.layers], count
        self.layers = best

    def _reorder(self, r: int, pos: dict, neighbours: dict, downward: bool) -> None:
        layer = self.layers[r]

        def centre(v: Key) -> float:
            near = neighbours.get(v)
            if not near:
                return pos[v]
            total = weight = 0.0
            for n in near:
                link = (n, v) if downward else (v, n)
                w = self.links[link]
                dx = self.dx[link][0 if downward else 1]
                total += w * (pos[n] + dx / 1000.0)
                weight += w
            return total / weight

        layer.sort(key=lambda v: (centre(v), pos[v]))
        for i, v in enumerate(layer):
            pos[v] = i

    def crossings(self, pos: dict) -> int:
        total = 0
        for r in range(len(self.layers) - 1):
            ends = []
            for a in self.layers[r]:
                for b in self.down.get(a, ()):
                    a_dx, b_dx = self.dx[(a, b)]
                    ends.append((pos[a] + a_dx / 1000.0, pos[b] + b_dx / 1000.0))
            total += _crossings(ends)
        return total

    # ---- coordinates ----------------------------------------------------------------------
    def place(self, sweeps: int = 8) -> dict[Key, float]:
        x: dict[Key, float] = {}
        for layer in self.layers:
            left = 0.0
            for v in layer:
                w = self.width(v)
                x[v] = left + w / 2
                left += w + self.node_gap
        for sweep in range(sweeps):
            downward = sweep % 2 == 0
            indices = range(len(self.layers)) if downward else range(len(self.layers) - 1, -1, -1)
            for r in indices:
                self._settle(self.layers[r], x, both=sweep >= sweeps - 2, downward=downward)
        return x

    def _settle(self, layer: list[Key], x: dict, both: bool, downward: bool) -> None:
        if not layer:
            return
        targets, weights = [], []
        for v in layer:
            total = weight = 0.0
            sides = (True, False) if both else (downward,)
            for from_above in sides:
                for n in (self.up if from_above else self.down).get(v, ()):
                    link = (n, v) if from_above else (v, n)
                    w = self.links[link]
                    n_dx, v_dx = self.dx[link] if from_above else self.dx[link][::-1]
                    total += w * (x[n] + n_dx - v_dx)
                    weight += w
            targets.append(total / weight if weight else x[v])
            weights.append(weight or 0.5)
        offsets, acc = [], 0.0
        for i, v in enumerate(layer):
            if i:
                acc += (self.width(layer[i - 1]) + self.width(v)) / 2 + self.node_gap
            offsets.append(acc)
        fitted = _isotonic([t - o for t, o in zip(targets, offsets)], weights)
        for v, y, o in zip(layer, fitted, offsets):
            x[v] = y + o


def layered(
    nodes: Sequence[Key],
    sizes: dict[Key, tuple[float, float]],
    edges: Sequence[LayoutEdge],
    downward: bool = False,
    rank_gap: float = 58,
    node_gap: float = 36,
    dummy_width: float = 14,
) -> Layout:
    """Centres for ``nodes`` (rank 0 at the bottom unless ``downward``) and a route for each edge."""
    if not nodes:
        return Layout()
    lay = _Layering(list(nodes), sizes, list(edges), rank_gap, node_gap, dummy_width)
    lay.order()
    x = lay.place()
    ys: list[float] = []
    heights: list[float] = []
    y = 0.0
    for r, layer in enumerate(lay.layers):
        height = max((sizes[v][1] for v in layer if not isinstance(v, _Dummy)), default=0.0)
        if r:
            y += rank_gap + (height + heights[-1]) / 2
        ys.append(y)
        heights.append(height)
    sign = 1.0 if downward else -1.0
    shift = min(x.values())
    result = Layout(ranks={v: lay.rank[v] for v in nodes})
    result.positions = {v: (x[v] - shift, sign * ys[lay.rank[v]]) for v in nodes}
    for chain in lay.chains:
        # A long wire runs straight up through each rank it passes and bends only between ranks,
        # so it never cuts across a box of the rank beside it.
        points: list[Point] = []
        ascending = lay.rank[chain[0]] <= lay.rank[chain[-1]]
        for v in chain[1:-1]:
            r = lay.rank[v]
            ends = [
                (x[v] - shift, sign * (ys[r] - heights[r] / 2)),
                (x[v] - shift, sign * (ys[r] + heights[r] / 2)),
            ]
            points += ends if ascending else ends[::-1]
        result.routes.append(points)
    return result
