"""Model parameters read per token, and where they came from (METHODS.md A3).

Order of evidence, first wins per field:

1. a model file given by the user (GGUF header or HF ``config.json``, read by
   :func:`tokcaliper.audit.importers.read_model_file` — checks never open files —
   and counted here by :func:`params_from_tensors` / :func:`params_from_config`);
2. the record (``model.params_total``, ``model.params_active``, ``model.is_moe``);
3. the curated model-facts table (:mod:`tokcaliper.audit.facts.models`,
   ``data/model_facts.json``), matched by name, each row citing its model card;
   where the record's total disagrees with the row's by more than 15 % the row
   wins (leaderboards publish file sizes or rounded figures) and a note says so;
4. a name pattern, as a fallback that says it is one: ``"35B-A3B"`` → 35e9
   total, 3e9 active, MoE; ``"8x7B"`` → MoE, total ≤ 56e9, active unknown;
   ``"E4B"`` → 4e9 effective parameters; ``"27B"`` / ``"135M"`` → total only.

A model with no table row and no active-parameter figure is *not* assumed
dense: ``is_moe`` stays None ("unknown") and A3 reports both bounds instead of
calling it impossible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tokcaliper.audit.facts.models import ModelFacts, match_model
from tokcaliper.model.record import Record
from tokcaliper.validation import must_be, show

#: Relative disagreement above which the table's total beats the record's.
TABLE_OVERRIDES_ABOVE = 0.15


@dataclass
class ParamFacts:
    """Parameters of a record's model.

    Attributes:
        total: total parameters (count) or None.
        active: parameters read per token for MoE (or effective params), or None.
        is_moe: True / False / None (unknown).
        total_source, active_source, moe_source: where each came from.
        notes: disagreements and assumptions, shown with the verdict.
        row: the model-facts table row matched by name (layers, KV heads…), or None.
        match: how the model was identified (table row, name pattern, file, record).
    """

    total: float | None = None
    active: float | None = None
    is_moe: bool | None = None
    total_source: str = "unknown"
    active_source: str = "unknown"
    moe_source: str = "unknown"
    notes: list[str] = field(default_factory=list)
    row: ModelFacts | None = None
    match: str | None = None


_MOE_NAME = re.compile(r"(\d+(?:\.\d+)?)B[-_]A(\d+(?:\.\d+)?)B", re.I)
_EXPERTS_NAME = re.compile(r"(?:^|[-_/ ])(\d+)x(\d+(?:\.\d+)?)B(?=$|[-_ .])", re.I)
_EFFECTIVE_NAME = re.compile(r"(?:^|[-_/ ])E(\d+(?:\.\d+)?)B(?=$|[-_ .])", re.I)
_SIZE_NAME = re.compile(r"(?:^|[-_/ ])(\d+(?:\.\d+)?)([BM])(?=$|[-_ .])", re.I)


def params_from_name(name: str | None) -> ParamFacts:
    """Infer parameters from a name pattern alone (``"Foo-35B-A3B"``, ``"Bar-8x7B"``), a fallback.

    Every source says "name pattern … (fallback)": these are not facts about a
    known model, only what the name spells.

    Returns:
        :class:`ParamFacts`; fields stay None when the name says nothing.
    """
    pf = ParamFacts()
    if not name:
        return pf
    short = name.split("/")[-1]
    m = _MOE_NAME.search(short)
    if m:
        src = f"name pattern '{m.group(0)}' (fallback: MoE, total-Aactive)"
        return ParamFacts(float(m.group(1)) * 1e9, float(m.group(2)) * 1e9, True, src, src, src,
                          match=f"name pattern '{m.group(0)}' (fallback, no table row)")
    x = _EXPERTS_NAME.search(short)
    if x:
        n, size = int(x.group(1)), float(x.group(2))
        src = (f"name pattern '{x.group(0).lstrip('-_/ ')}' (fallback: MoE of {n} experts; total ≤ {n} × "
               f"{size:g}B, shared layers counted once; active unknown)")
        return ParamFacts(n * size * 1e9, None, True, src, "unknown", src,
                          match=f"name pattern '{x.group(0).lstrip('-_/ ')}' (fallback, no table row)")
    e = _EFFECTIVE_NAME.search(short)
    if e:
        pf.active = float(e.group(1)) * 1e9
        pf.active_source = f"name pattern 'E{e.group(1)}B' (fallback: effective parameters read per token)"
    for s in _SIZE_NAME.finditer(short):
        if s.group(0).lstrip("-_/ ").upper().startswith("E"):
            continue
        mult = 1e9 if s.group(2).upper() == "B" else 1e6
        pf.total = float(s.group(1)) * mult
        pf.total_source = f"name pattern '{s.group(1)}{s.group(2)}' (fallback: total only)"
        break
    if pf.total is not None or pf.active is not None:
        pf.match = "name pattern (fallback, no table row)"
    return pf


def params_from_table(name: str | None) -> ParamFacts:
    """Parameters from the model-facts table row matched by ``name`` (see :func:`match_model`).

    Returns:
        :class:`ParamFacts` with ``row`` and ``match`` set, sources citing the
        table version, the row and its model card; empty when no row matches.
        A dense row with an active figure (Gemma ``E4B``) gives it as
        *effective* parameters.
    """
    m = match_model(name)
    if m is None:
        return ParamFacts()
    row, src = m.row, m.source
    active_src = src if row.moe else f"{src} (effective parameters read per token)"
    return ParamFacts(row.params_total, row.params_active, row.moe,
                      src if row.params_total is not None else "unknown",
                      active_src if row.params_active is not None else "unknown", src,
                      row=row, match=f"model facts v{m.version} row '{row.id}' (matched '{m.alias}')")


def resolve_params(record: Record, file_facts: ParamFacts | None = None) -> ParamFacts:
    """Total/active parameters and MoE status for ``record``, each with its source.

    Args:
        record: the record (its ``model`` block and name).
        file_facts: facts read from a GGUF header or ``config.json`` (preferred).

    Returns:
        :class:`ParamFacts` (order of evidence in the module docstring). Never
        raises; unknown stays None.
    """
    out = ParamFacts()
    table = params_from_table(record.model.name)
    by_name = params_from_name(record.model.name)
    rec = ParamFacts(record.model.params_total, record.model.params_active, record.model.is_moe,
                     "record", "record", "record")
    if table.total is not None and rec.total is not None:
        rel = abs(rec.total - table.total) / table.total
        if rel > TABLE_OVERRIDES_ABOVE:
            out.notes.append(f"record's total parameters {rec.total / 1e9:g}B disagree with the model-facts row "
                             f"'{table.row.id if table.row else '?'}' ({table.total / 1e9:g}B) by "
                             f"{round(rel * 100)}%: the row is used")
            rec.total = None
    layers: list[ParamFacts] = []
    if file_facts is not None:
        layers.append(file_facts)
    layers += [rec, table, by_name]
    for pf in layers:
        if out.total is None and pf.total is not None:
            out.total, out.total_source = pf.total, pf.total_source
        if out.active is None and pf.active is not None:
            out.active, out.active_source = pf.active, pf.active_source
        if out.is_moe is None and pf.is_moe is not None:
            out.is_moe, out.moe_source = pf.is_moe, pf.moe_source
    out.row = table.row
    out.match = (file_facts.match if file_facts is not None and file_facts.match else None) or table.match \
        or by_name.match or ("record" if rec.total is not None or rec.active is not None else None)
    if file_facts is not None and out.match is None:
        out.match = "model file"
    if out.active is not None and out.is_moe is None and by_name.is_moe:
        out.is_moe, out.moe_source = True, by_name.moe_source
    if out.is_moe is False and out.active is not None and "effective" not in out.active_source:
        out.notes.append("record says dense but an active-parameter figure exists; active ignored")
        out.active = None
    if table.row is None and by_name.total and out.total and out.total_source != by_name.total_source:
        rel = abs(out.total - by_name.total) / by_name.total
        if rel > TABLE_OVERRIDES_ABOVE:
            out.notes.append(f"total parameters {out.total / 1e9:g}B ({out.total_source}) disagree with "
                             f"{by_name.total / 1e9:g}B ({by_name.total_source})")
    return out


# --------------------------------------------------------------------------- counts from model files


#: Largest size field taken from a config.json (2**40): beyond it the figure is not a model's,
#: and the parameter count would overflow a float.
MAX_CONFIG_INT = 2**40
#: Optional fields where 0 means "absent" (no experts, the default intermediate size).
_ZERO_MEANS_ABSENT = frozenset({"num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok",
                                "moe_intermediate_size", "intermediate_size", "shared_expert_intermediate_size"})


def params_from_config(c: dict[str, Any], name: str = "config.json") -> ParamFacts:
    """Parameter counts from a Hugging Face ``config.json`` (approximate; pure arithmetic).

    Standard decoder-only transformer count, per layer (``h`` hidden size,
    ``n_h``/``n_kv`` attention/KV heads, ``d`` head dim):

    * attention: q and o are ``h × n_h·d`` each, k and v ``h × n_kv·d`` each;
    * gated MLP (gate, up, down): ``3 × h × intermediate_size`` (4h when absent);
    * mixture of experts (``num_experts``/``num_local_experts``/
      ``n_routed_experts`` with ``num_experts_per_tok``): ``E`` experts of
      ``3 × h × moe_intermediate_size``, plus a shared expert of
      ``3 × h × shared_expert_intermediate_size``; active = the ``k`` experts
      used per token instead of all ``E``;
    * embeddings ``vocab × h``, twice unless ``tie_word_embeddings``.

    Norms and biases are left out (< 0.1 %). A multimodal config's
    ``text_config`` is used when present.

    Args:
        c: the parsed config.
        name: the file's name, for sources and errors.

    Returns:
        :class:`ParamFacts` (active only for MoE), sources naming the file.

    Raises:
        InputError: ``hidden_size``, ``num_hidden_layers`` or ``vocab_size`` missing; any size field
            that is not a whole number in [1, :data:`MAX_CONFIG_INT`] (0 heads would divide by zero).
    """
    from tokcaliper.errors import InputError

    if "text_config" in c:
        if not isinstance(c["text_config"], dict):
            raise InputError(f"{name}: text_config must be an object, got {show(c['text_config'])}")
        c = c["text_config"]

    def whole(key: str, default: int | None = None, minimum: int = 1) -> int:
        """``c[key]`` as a whole number in [minimum, MAX_CONFIG_INT] (a missing/null key: ``default``)."""
        v = c.get(key)
        if v is None or v == 0 and default is not None and key in _ZERO_MEANS_ABSENT:
            if default is None:
                raise InputError(f"{name}: config.json lacks {key!r} (hidden_size, num_hidden_layers, "
                                 "vocab_size are required)")
            return default
        ok = not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and v.is_integer()))
        if not ok or int(v) < minimum:
            raise InputError(f"{name}: {key} {must_be(v, whole=True, ge=minimum)}")
        if int(v) > MAX_CONFIG_INT:
            raise InputError(f"{name}: {key} {must_be(v, whole=True, ge=minimum, le=MAX_CONFIG_INT)} (2^40 at most)")
        return int(v)

    h, layers, vocab = whole("hidden_size"), whole("num_hidden_layers"), whole("vocab_size")
    heads = whole("num_attention_heads", 1)
    kv = whole("num_key_value_heads", heads)
    if "head_dim" in c and c["head_dim"] is not None:
        hd = whole("head_dim")
    else:
        hd = max(1, h // heads)
    n_exp = whole("num_experts", 0, 0) or whole("num_local_experts", 0, 0) or whole("n_routed_experts", 0, 0)
    used = whole("num_experts_per_tok", 0, 0)
    inter = whole("moe_intermediate_size", 0, 0) or whole("intermediate_size", 0, 0) or 4 * h
    attn = h * heads * hd * 2 + h * kv * hd * 2
    embed = vocab * h * (1 if c.get("tie_word_embeddings") else 2)
    src = f"{name}: estimated from hidden_size, layers, heads, vocab (approximate)"
    if n_exp and used:
        shared = whole("shared_expert_intermediate_size", 0, 0) * 3 * h
        exp_total = n_exp * 3 * h * inter
        total = embed + layers * (attn + exp_total + shared)
        active = embed + layers * (attn + used * 3 * h * inter + shared)
        return ParamFacts(float(total), float(active), True, src, src, src)
    total = embed + layers * (attn + 3 * h * (whole("intermediate_size", 0, 0) or 4 * h))
    return ParamFacts(float(total), None, False, src, "unknown", src)


def params_from_tensors(tensors: Iterable[tuple[str, int]], expert_count: float | None,
                        expert_used_count: float | None, name: str) -> ParamFacts:
    """Parameter counts from a GGUF file's tensor list (exact; pure arithmetic).

    total = Σ tensor elements. Mixture of experts when ``{arch}.expert_count``
    and ``{arch}.expert_used_count`` are set and expert tensors (names
    containing ``_exps``, llama.cpp's naming) exist: active = non-expert
    elements + expert elements × ``expert_used_count / expert_count``.

    Args:
        tensors: ``(tensor name, element count)`` pairs.
        expert_count, expert_used_count: the header's values, or None.
        name: the file's name, for sources.

    Returns:
        :class:`ParamFacts`; dense (``is_moe=False``) without expert counts.
    """
    total = experts = 0.0
    for tname, n in tensors:
        total += float(n)
        if "_exps" in tname:
            experts += float(n)
    src = f"GGUF header of {name} (Σ tensor elements)"
    if expert_count and expert_used_count and experts:
        active = total - experts + experts * float(expert_used_count) / float(expert_count)
        return ParamFacts(total, active, True, src, f"{src}: experts × {expert_used_count}/{expert_count}", src)
    return ParamFacts(total, None, False, src, "unknown", src + ": no expert_count")
