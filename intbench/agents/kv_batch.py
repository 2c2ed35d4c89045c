"""Several sequences' KV caches advanced by one batched forward pass.

Each incremental monitor decider keeps its own ``DynamicCache`` of a
different length.  :class:`MergedCache` stacks them into one batch: every
row's cached keys/values are left-padded to the longest, the new tokens of
each row are left-padded to the longest, and an attention mask hides the
padding while explicit position ids keep every row's positions its own.  One
forward then serves all rows; :meth:`MergedCache.split` returns a row's
cache without its padding, equal to what running that row alone would have
built (up to floating-point rounding of the batched matrix products).

Only plain full-attention caches (every layer a ``DynamicLayer``) are merged;
:func:`can_merge` says so, and callers run other models one row at a time.
"""

from __future__ import annotations

from typing import Any


def input_device(model: Any) -> Any:
    # The embedding layer's device also holds under an accelerate device_map.
    return model.get_input_embeddings().weight.device


def can_merge(cache: Any) -> bool:
    """Whether ``cache`` is a full-attention ``DynamicCache`` (no sliding or linear layers)."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    return layers is not None and all(type(layer) is DynamicLayer for layer in layers)


class MergedCache:
    """The caches of ``lengths``-token prefixes, one row each, as one padded batch."""

    def __init__(self, model: Any, caches: list[Any], lengths: list[int], cache_kw: str):
        import torch
        from transformers import DynamicCache

        self.model, self.cache_kw = model, cache_kw
        self.device = input_device(model)
        self.next_position = list(lengths)
        width = max(lengths)
        self.mask = torch.tensor(
            [[0] * (width - n) + [1] * n for n in lengths], dtype=torch.long, device=self.device
        )
        if len(caches) == 1 or width == 0:
            # One row needs no padding: use (and grow) its own cache.  No row has a
            # past: start from an empty one.
            self.cache = caches[0] if len(caches) == 1 else DynamicCache(config=model.config)
            return
        self.cache = DynamicCache(config=model.config)
        filled = next(c for c, n in zip(caches, lengths, strict=True) if n)
        for index, reference in enumerate(filled.layers):
            keys, values = [], []
            for cache, n in zip(caches, lengths, strict=True):
                shape = (1, reference.keys.shape[1], width - n, reference.keys.shape[3])
                row_keys = reference.keys.new_zeros(shape)  # the left padding
                row_values = reference.values.new_zeros((*shape[:3], reference.values.shape[3]))
                if n:
                    layer = cache.layers[index]
                    row_keys = torch.cat([row_keys, layer.keys], dim=2)
                    row_values = torch.cat([row_values, layer.values], dim=2)
                keys.append(row_keys)
                values.append(row_values)
            self.cache.update(torch.cat(keys), torch.cat(values), index)

    def forward(self, new_ids: list[list[int]]):
        """Run each row's ``new_ids`` (at least one each) after its past; the logits of
        every row's last new token, shape ``(rows, vocab)``."""
        import torch

        width = max(len(ids) for ids in new_ids)
        input_ids = torch.tensor(
            [[0] * (width - len(ids)) + ids for ids in new_ids], device=self.device
        )
        new_mask = torch.tensor(
            [[0] * (width - len(ids)) + [1] * len(ids) for ids in new_ids], device=self.device
        )
        positions = torch.tensor(
            [
                [0] * (width - len(ids)) + list(range(start, start + len(ids)))
                for start, ids in zip(self.next_position, new_ids, strict=True)
            ],
            device=self.device,
        )
        self.mask = torch.cat([self.mask, new_mask], dim=1)
        with torch.no_grad():
            out = self.model(
                input_ids=input_ids,
                attention_mask=self.mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
                **{self.cache_kw: self.cache},
            )
        self.next_position = [
            p + len(ids) for p, ids in zip(self.next_position, new_ids, strict=True)
        ]
        return out.logits[:, -1]

    def split(self, row: int) -> Any:
        """Row ``row``'s cache alone, without padding."""
        from transformers import DynamicCache

        if self.mask.shape[0] == 1 and bool(self.mask.all()):
            return self.cache
        keep = self.mask[row].nonzero().squeeze(1)
        cache = DynamicCache(config=self.model.config)
        for index, layer in enumerate(self.cache.layers):
            cache.update(
                layer.keys[row : row + 1, :, keep], layer.values[row : row + 1, :, keep], index
            )
        return cache

    def select(self, rows: list[int]) -> None:
        """Keep only ``rows`` (in this order) for the next forward."""
        import torch

        index = torch.tensor(rows, device=self.device)
        self.cache.batch_select_indices(index)
        self.mask = self.mask[index]
        self.next_position = [self.next_position[r] for r in rows]
