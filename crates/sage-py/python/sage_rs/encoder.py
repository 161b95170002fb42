"""Any Python embedding model as a sage-rs subject."""

from __future__ import annotations

import inspect
from typing import Any, Dict, List, Optional

import numpy as np

ROLES = ("plain", "query", "document")


def _parameters(function: Any) -> Optional[Dict[str, inspect.Parameter]]:
    try:
        return dict(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None


class Encoder:
    """Wraps anything with ``encode(list[str]) -> array`` (a SentenceTransformer, an MTEB model
    wrapper, an API client) or a plain function of a list of texts, so that sage-rs can run it.

    Query and document roles reach the model where it takes them: as ``prompt_name`` when the
    model declares a prompt of that name (SentenceTransformer's ``prompts``), else as
    ``prompt_type`` (MTEB's encoders), else as ``task``; a model that takes none embeds every
    role as plain text. ``name`` identifies the model in reports (default: what the model says
    of itself, else its class name). ``max_length`` is the model's window in its own tokens
    (default: a SentenceTransformer's ``max_seq_length``, else 0 for unknown): the throughput
    suite's window-length texts are picked to fill it, as for a sage model of that window.
    """

    def __init__(
        self,
        model: Any,
        *,
        name: Optional[str] = None,
        revision: Optional[str] = None,
        dimension: Optional[int] = None,
        batch_size: Optional[int] = None,
        max_length: Optional[int] = None,
        **encode_kwargs: Any,
    ) -> None:
        if hasattr(model, "encode"):
            self._encode = model.encode
        elif callable(model):
            self._encode = model
        else:
            raise TypeError(
                f"{type(model).__name__} has no encode method and is not callable: "
                "give a model with encode(list[str]) -> array, or a function of a list of texts"
            )
        self.model = model
        self.name = name or _name_of(model)
        self.revision = revision
        if max_length is None:
            max_length = getattr(model, "max_seq_length", None)
        self.max_length = int(max_length) if isinstance(max_length, int) and max_length > 0 else 0
        self._kwargs = dict(encode_kwargs)
        parameters = _parameters(self._encode) or {}
        takes_any = any(p.kind == p.VAR_KEYWORD for p in parameters.values())
        if batch_size is not None:
            self._kwargs["batch_size"] = batch_size
        self._role_kwargs: Dict[str, Dict[str, Any]] = {"plain": {}}
        prompts = getattr(model, "prompts", None) or {}
        for role in ("query", "document"):
            if "prompt_name" in parameters and role in prompts:
                self._role_kwargs[role] = {"prompt_name": role}
            elif "prompt_type" in parameters:
                self._role_kwargs[role] = {"prompt_type": role}
            elif "task" in parameters or (takes_any and "task" in self._kwargs):
                self._role_kwargs[role] = {"task": role}
            else:
                self._role_kwargs[role] = {}
        # what each role changes, part of the identity of the vectors (None: embedded as plain)
        self.role_variants: Dict[str, Optional[str]] = {
            role: ",".join(f"{k}={v}" for k, v in kwargs.items()) or None
            for role, kwargs in self._role_kwargs.items()
        }
        self.dimension = int(dimension) if dimension is not None else self._dimension()

    def _dimension(self) -> int:
        # sentence-transformers 5 renamed get_sentence_embedding_dimension
        for method in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
            ask = getattr(self.model, method, None)
            if callable(ask):
                width = ask()
                if width:
                    return int(width)
        return int(self.encode(["dimension probe"], "plain").shape[1])

    def encode(self, texts: List[str], role: str = "plain") -> np.ndarray:
        """The vectors of ``texts`` in ``role`` as a C-contiguous float32 matrix, one row each."""
        # the role's keyword wins over one given for every call (a task= for all texts)
        out = self._encode(list(texts), **{**self._kwargs, **self._role_kwargs[role]})
        if hasattr(out, "detach"):  # a torch tensor
            out = out.detach().cpu().numpy()
        matrix = np.ascontiguousarray(np.asarray(out), dtype=np.float32)
        if matrix.ndim != 2:
            raise ValueError(
                f"{self.name}: encode returned an array of shape {matrix.shape}; "
                "expected one row per text"
            )
        return matrix

    def __repr__(self) -> str:
        return f"sage_rs.Encoder({self.name!r}, dimension={self.dimension})"


def _name_of(model: Any) -> str:
    card = getattr(model, "model_card_data", None)
    for candidate in (
        getattr(card, "model_id", None),
        getattr(card, "base_model", None),
        getattr(model, "name_or_path", None),
        getattr(model, "model_name", None),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    return getattr(model, "__name__", None) or type(model).__name__
