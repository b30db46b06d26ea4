"""A key/value cache that decodes, admits and drops rows in place, for the hf backend's batched decoder.

transformers' ``DynamicLayer`` appends a decode step's key and value by concatenation, and selects rows by
indexing: every step copies the layer's whole cache (rows x padded width), and so does every row that
finishes and every admission of new rows. On a 2-core CPU with Qwen2.5-0.5B a step over 20 rows of 3,000
cached tokens took 353 ms that way against 183 ms written in place, and joining 4 new rows to 40 live rows
of 3,000 tokens copied 1.5 GB per layer set, seconds per admission.

``GrowingLayer`` keeps each layer's keys and values in a buffer larger than what it holds, in rows and in
columns; the used part is ``[:rows, :, start:end]`` and ``keys``/``values`` are views of it, as the model's
attention reads them:

- a decode step writes its column into the room behind ``end``;
- new rows (``add_rows``) are written into the rows behind ``rows``, right-aligned to ``end`` (every row's
  last token in the last column) and zero on their left; rows wider than the held ones move ``start``
  back into the room in front, the live rows' newly shown columns zeroed (masked, never read);
- rows that finished leave by swap (``batch_select_indices`` with the order ``swap_order`` gives): the last
  rows move into their places, one row copied per row gone;
- leading columns no remaining row reads leave by moving ``start`` (``drop_front``).

Only when a buffer is out of room is it copied, into one with room again (``ROOM`` columns behind, a quarter
more rows, ``FRONT_ROOM`` columns in front when rows wider than the held ones came). A new buffer is zeroed, so
every column of it holds finite numbers (zeros, or keys/values written earlier).

A decode step of fixed shapes (``window``, what ``decode_graphs`` captures as a CUDA graph): the layer writes the
step's column at a position held in a tensor (``index_copy_``) and returns the first ``width`` columns of its
first ``rows`` rows, whatever of them is used; the step's mask hides the rest. The used part's bookkeeping moves on
with ``advance`` after the step.
"""

from __future__ import annotations

from typing import Any

from transformers.cache_utils import DynamicCache, DynamicLayer

ROOM = 128  # columns of room behind the used ones when a buffer is (re)allocated
FRONT_ROOM = 256  # columns of room in front, when a buffer is reallocated for rows wider than the held ones


def swap_order(keep: list[int], total: int) -> list[int]:
    """Where each remaining row comes from when the rows not in ``keep`` (of ``total``) leave by swap: rows at
    positions below ``len(keep)`` stay, the kept rows beyond fill the places of the rows that left."""
    n = len(keep)
    kept = set(keep)
    holes = [i for i in range(n) if i not in kept]
    movers = [i for i in keep if i >= n]
    order = list(range(n))
    for hole, mover in zip(holes, movers):
        order[hole] = mover
    return order


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` that writes decode steps, new rows and row removals into its buffer in place."""

    def __init__(self, room: int | None = None):
        super().__init__()
        self.room = ROOM if room is None else room
        # the key and value buffers (rows, heads, columns, dim), allocated by the first update; None before
        self._k: Any = None
        self._v: Any = None
        self._rows = self._start = self._end = 0
        self.window = None  # (column index tensor, rows, width) while a fixed-shape decode step runs

    def lazy_initialization(self, key_states, value_states) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        self._k = self._v = None
        self._rows = self._start = self._end = 0
        self.is_initialized = True

    def _views(self) -> None:
        self.keys = self._k[:self._rows, :, self._start:self._end]
        self.values = self._v[:self._rows, :, self._start:self._end]

    def _realloc(self, rows: int, front: int, behind: int, like) -> None:
        """A new buffer for ``rows`` rows with ``front`` free columns before the used ones and ``behind`` after
        (room added to both), the used part copied in."""
        held = self._end - self._start if self._k is not None else 0
        _, h, _, d = like.shape
        shape = (rows + max(4, rows // 4), h, front + held + behind + self.room, d)
        k, v = like.new_zeros(shape), like.new_zeros(shape)
        if held and self._rows:
            k[:self._rows, :, front:front + held] = self._k[:self._rows, :, self._start:self._end]
            v[:self._rows, :, front:front + held] = self._v[:self._rows, :, self._start:self._end]
        self._k, self._v, self._start, self._end = k, v, front, front + held

    def update(self, key_states, value_states, cache_kwargs: dict[str, Any] | None = None):
        if self.window is not None:
            at, rows, width = self.window
            self._k[:rows].index_copy_(2, at, key_states)
            self._v[:rows].index_copy_(2, at, value_states)
            return self._k[:rows, :, :width], self._v[:rows, :, :width]
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        rows, new = key_states.shape[0], key_states.shape[-2]
        if self._k is None:
            self._realloc(rows, 0, new, key_states)
            self._rows = rows
        elif rows != self._rows:
            raise ValueError(f"{rows} rows of new states for a cache of {self._rows} (add_rows adds rows)")
        elif self._end + new > self._k.shape[2]:
            self._realloc(rows, 0, new, key_states)
        self._k[:rows, :, self._end:self._end + new] = key_states
        self._v[:rows, :, self._end:self._end + new] = value_states
        self._end += new
        self._views()
        return self.keys, self.values

    def add_rows(self, key_states, value_states) -> None:
        """Appends rows whose states (rows, heads, width, dim) end at this layer's last column (left-padded with
        zeros to the wider of the two)."""
        rows, width = key_states.shape[0], key_states.shape[2]
        key_states, value_states = key_states.to(self._k.device), value_states.to(self._v.device)
        held = self._end - self._start
        wider = max(0, width - held)
        if self._rows + rows > self._k.shape[0] or wider > self._start:
            self._realloc(self._rows + rows, FRONT_ROOM + wider if wider > self._start else self._start, 0,
                          key_states)
        if wider:  # the live rows' columns in front of theirs are shown: zero (masked) keys/values
            self._k[:self._rows, :, self._start - wider:self._start] = 0
            self._v[:self._rows, :, self._start - wider:self._start] = 0
            self._start -= wider
        a, b, left = self._rows, self._rows + rows, self._end - width
        self._k[a:b, :, self._start:left] = 0
        self._v[a:b, :, self._start:left] = 0
        self._k[a:b, :, left:self._end] = key_states
        self._v[a:b, :, left:self._end] = value_states
        self._rows = b
        self._views()

    def batch_select_indices(self, indices) -> None:
        """Keeps the rows ``indices``, in that order: in place, one row copied per row that moves when the order
        is ``swap_order``'s; else the kept rows gathered once."""
        order = [int(i) for i in indices]
        n = len(order)
        moves = [(dst, src) for dst, src in enumerate(order) if dst != src]
        s, e = self._start, self._end
        if all(src >= n for _, src in moves) and len(set(order)) == n:
            for dst, src in moves:
                self._k[dst, :, s:e] = self._k[src, :, s:e]
                self._v[dst, :, s:e] = self._v[src, :, s:e]
        else:
            import torch

            index = torch.tensor(order, device=self._k.device)
            if n > self._k.shape[0]:  # more rows than the buffer has (a row repeated): room for them first
                self._realloc(n, self._start, 0, self._k)
            self._k[:n, :, s:e] = self._k[index, :, s:e]
            self._v[:n, :, s:e] = self._v[index, :, s:e]
        self._rows = n
        self._views()

    def reserve(self, rows: int, width: int) -> None:
        """Room for a fixed-shape step over ``rows`` rows and the first ``width`` columns (at least one column behind
        the used ones): the buffer is copied, its used part moved to the front, only if it has too few."""
        if rows > self._k.shape[0] or width > self._k.shape[2] or self._end >= width:
            held = self._end - self._start
            self._realloc(max(rows, self._rows), 0, max(1, width - held), self._k)

    def span(self) -> tuple[int, int]:
        """(first, last + 1) buffer column of the used part."""
        return self._start, self._end

    def buffers(self) -> tuple:
        """The key and value buffers (a fixed-shape step captured over them holds their addresses)."""
        return self._k, self._v

    def advance(self, columns: int = 1) -> None:
        """The used part takes in the ``columns`` columns a fixed-shape step wrote behind it."""
        self._end += columns
        self._views()

    def drop_front(self, columns: int) -> None:
        """Forgets the first ``columns`` used columns (no copy: the view starts later)."""
        self._start = min(self._start + columns, self._end)
        self._views()

    def crop(self, max_length: int) -> None:
        if max_length < 0:
            max_length = self.get_seq_length() - abs(max_length)
        self._end = self._start + min(max(max_length, 0), self._end - self._start)
        self._views()

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.get_seq_length() > 0:
            self.batch_select_indices([i for i in range(self._rows) for _ in range(repeats)])

    def reorder_cache(self, beam_idx) -> None:
        self.batch_select_indices(beam_idx)


def new_cache(config, room: int | None = None) -> DynamicCache:
    """A ``DynamicCache`` for ``config`` whose full-attention layers are ``GrowingLayer``s (sliding-window layers,
    which keep only their window, stay transformers' own)."""
    cache = DynamicCache(config=config)
    cache.layers = [GrowingLayer(room) if type(layer) is DynamicLayer else layer for layer in cache.layers]
    if cache.layer_class_to_replicate is DynamicLayer:  # a config without layer types: layers are added lazily
        cache.layer_class_to_replicate = GrowingLayer
    return cache


def grows_in_place(cache) -> bool:
    return bool(cache.layers) and all(isinstance(layer, GrowingLayer) for layer in cache.layers)


def drop_front(cache: DynamicCache, columns: int) -> None:
    """Forgets the first ``columns`` columns of every layer of ``cache``."""
    for layer in cache.layers:
        if isinstance(layer, GrowingLayer):
            layer.drop_front(columns)
        else:
            assert layer.keys is not None and layer.values is not None  # a layer with columns to drop holds them
            layer.keys, layer.values = layer.keys[:, :, columns:], layer.values[:, :, columns:]
