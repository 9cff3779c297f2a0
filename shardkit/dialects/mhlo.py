"""GSPMD form: shardings as XLA ``HloSharding`` values and the strings modules carry (``mhlo.sharding =
"{devices=[4,2]<=[8]}"``).

The strings are jaxlib's ``HloSharding`` printed with ``repr``, so they are exactly what XLA and jax print
and parse; nothing here assembles them by hand. Positions in a tile assignment refer to a device list (the
compile-time device assignment), so a mesh over permuted devices prints the same iota form as the ordered one.
This module knows HLO shardings only; each sharding kind converts itself (``Sharding.to_hlo``).

Tuple shardings (``{{replicated}, {devices=[2]<=[2]}}``: one sharding per element of a tuple value, or per
result of a multi-result op) are HLO shardings too, and XLA aborts the process when asked for a tuple's devices
or tile assignment. So every function here that takes an HloSharding either handles a tuple element by element
(``checked``, ``is_replicated``, ``equivalent``, ``split``, ``join``) or refuses it (``one_value``:
``TupleShardingError``, a ValueError) before it reads tiles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir

from shardkit import _jaxlib
from shardkit._jaxlib import HloSharding
from shardkit.dialects import hlo_check

_REPLICATED = _jaxlib.OpShardingType.REPLICATED


def tile(mesh_axes: Sequence[tuple[str, int]], dim_axes: Sequence[Sequence[str]]) -> HloSharding:
    """The HloSharding of a value whose dimension ``d`` is cut over the mesh axes ``dim_axes[d]`` (major to
    minor), positions numbering the mesh in logical (iota) order.

    Size-1 axes cut nothing, so they are dropped first; then the tiled axes are listed in dimension order and
    the unused axes are gathered into one trailing replication dimension. The tile assignment is
    iota(mesh sizes) transposed into that axis order: e.g. mesh {a:2, b:2, c:2, d:2} with dimension axes
    ((), ('d', 'b'), ('c',), ()) gives dims [1, 4, 2, 1, 2], reshape [2, 2, 2, 2], perm [3, 1, 2, 0].

    Examples:
        >>> tile((("x", 4), ("y", 2)), ((), ("x",)))
        {devices=[1,4,2]<=[8] last_tile_dim_replicate}
    """
    sizes = dict(mesh_axes)
    if len(sizes) != len(mesh_axes) or not all(isinstance(s, int) and s >= 1 for s in sizes.values()):
        raise ValueError(f"mesh axes must be distinct names with positive int sizes, got {tuple(mesh_axes)}")
    used = [n for axes in dim_axes for n in axes]
    for name in used:
        if name not in sizes:
            raise ValueError(f"axis {name!r} is not an axis of the mesh {tuple(mesh_axes)}")
        if used.count(name) > 1:
            raise ValueError(f"axis {name!r} shards more than one dimension (or one twice) in {tuple(dim_axes)}")
    kept = [(n, s) for n, s in mesh_axes if s != 1]
    position = {n: i for i, (n, _) in enumerate(kept)}
    dims = [1] * len(dim_axes)
    perm: list[int] = []
    for dim, axes in enumerate(dim_axes):
        for name in axes:
            if name in position:
                dims[dim] *= kept[position[name]][1]
                perm.append(position[name])
    if not perm:
        return HloSharding.replicate()
    unused = [i for i in range(len(kept)) if i not in perm]
    subgroups = []
    if unused:
        dims.append(math.prod(kept[i][1] for i in unused))
        perm.extend(unused)
        subgroups.append(_REPLICATED)
    return HloSharding.iota_tile(dims, [s for _, s in kept], perm, subgroups)


def permuted(hlo: HloSharding, device_ids: Sequence[int]) -> HloSharding:
    """``hlo`` with position ``p`` of its tile assignment replaced by ``device_ids[p]``.

    (The iota form reports a trailing replication dimension as ``replicate_on_last_tile_dim``, not as a
    subgroup type, so it is put back as one.)

    Examples:
        >>> permuted(parse("{devices=[2,1]<=[2]}"), [1, 0])
        {devices=[2,1]1,0}
    """
    hlo = one_value(hlo, "mhlo.permuted")
    if hlo.is_replicated():
        return hlo
    ids = np.asarray(device_ids)[np.asarray(hlo.tile_assignment_devices())]
    subgroups = [_REPLICATED] if hlo.replicate_on_last_tile_dim() else hlo.subgroup_types()
    return HloSharding.subgroup_with_device_ordering(ids.reshape(hlo.tile_assignment_dimensions()), subgroups)


def with_trailing_dims(hlo: HloSharding, ndim: int, extra: int) -> HloSharding:
    """``hlo`` (of a rank-``ndim`` value) for the value with ``extra`` more trailing dimensions that are never cut:
    the physical layout of a typed PRNG key array, whose key data adds dimensions after the array's own.

    Examples:
        >>> key_data = with_trailing_dims(parse("{devices=[4,2]<=[8] last_tile_dim_replicate}"), 1, 1)
        >>> key_data == parse("{devices=[4,1,2]<=[8] last_tile_dim_replicate}")
        True
    """
    hlo = one_value(hlo, "mhlo.with_trailing_dims")
    cut = tiling(hlo, ndim)
    if cut is None:
        return hlo
    parts, copies = cut
    dims = [*parts, *[1] * extra, *([copies] if copies > 1 else [])]
    ids = np.asarray(hlo.tile_assignment_devices()).reshape(dims)
    return HloSharding.subgroup_with_device_ordering(ids, [_REPLICATED] if copies > 1 else [])


def is_replicated(hlo: HloSharding) -> bool:
    """Whether every position holds the whole value (replicated, or a one-device sharding); a tuple sharding
    whether each of its elements does.

    Examples:
        >>> is_replicated(parse("{devices=[1,1]<=[1]}")), is_replicated(parse("{{replicated}, {devices=[2]0,1}}"))
        (True, False)
    """
    return _replicated(checked(hlo))


def _replicated(hlo: HloSharding) -> bool:
    elements = hlo.tuple_elements()
    if elements:
        return all(map(_replicated, elements))
    return hlo.num_devices() == 1 or hlo.is_replicated()


def equivalent(a: HloSharding, b: HloSharding) -> bool:
    """Whether two HLO shardings place the same pieces on the same positions (any two replicated ones do);
    two tuple shardings whether they are element by element, and a tuple is never one value's sharding."""
    return _equivalent(checked(a), checked(b))


def _equivalent(a: HloSharding, b: HloSharding) -> bool:
    ea, eb = a.tuple_elements(), b.tuple_elements()
    if ea or eb:
        return len(ea) == len(eb) and all(map(_equivalent, ea, eb))
    return (_replicated(a) and _replicated(b)) or a == b


def tiling(hlo: HloSharding, ndim: int) -> tuple[list[int], int] | None:
    """(tiles per dimension, copies per tile) of a rank-``ndim`` value, or None when it is replicated.

    Raises ValueError for tuple, manual, unknown and unreduced shardings (they tile nothing; asking XLA for a
    tuple's tiles aborts), for subgroups other than replication, and for a tiling of another rank.
    """
    hlo = one_value(hlo, "mhlo.tiling")
    if hlo.is_manual() or hlo.is_unknown() or hlo.is_unreduced():
        raise ValueError(f"HLO sharding {hlo} describes no tiling (manual, unknown and unreduced shardings have none).")
    if _replicated(hlo):
        return None
    dims = hlo.tile_assignment_dimensions()
    subgroups = hlo.subgroup_types()
    if hlo.replicate_on_last_tile_dim() or subgroups == [_REPLICATED]:
        parts, copies = list(dims[:-1]), dims[-1]
    elif subgroups:
        raise ValueError(f"HLO sharding {hlo} has subgroup types {subgroups}; shardkit supports only replicated ones.")
    else:
        parts, copies = list(dims), 1
    if len(parts) != ndim:
        raise ValueError(f"HLO sharding {hlo} tiles {len(parts)} dimensions, but the array has rank {ndim}.")
    return parts, copies


class HloParseError(ValueError):
    """An HLO sharding string that is malformed; ``text`` is the string, ``reason`` what is wrong (and where)."""

    def __init__(self, text: str, reason: str):
        super().__init__(f"Cannot parse HLO sharding {text!r}: {reason}")
        self.text, self.reason = text, reason


def parse(text: str) -> HloSharding:
    """The HloSharding printed as ``text``; HloParseError (a ValueError) when it is malformed.

    The text is checked first (``hlo_check``: XLA's parser aborts the process on much malformed text), so
    only a well-formed sharding reaches jaxlib.

    Examples:
        >>> parse("{devices=[4,2]<=[2]}")
        Traceback (most recent call last):
        ...
        shardkit.dialects.mhlo.HloParseError: Cannot parse HLO sharding '{devices=[4,2]<=[2]}': ... product is 8 ...
    """
    if not isinstance(text, str):
        raise TypeError(f"An HLO sharding string must be a str, got {type(text).__name__}.")
    try:
        hlo_check.check_text(text)
        return HloSharding.from_string(text)
    except Exception as e:  # the check's ValueError, or jaxlib's own error type for what its parser reports
        raise HloParseError(text, str(e)) from None


def checked(hlo: HloSharding | _jaxlib.OpSharding) -> HloSharding:
    """``hlo`` once it is known to be well formed: an HloSharding (its text is checked, as ``parse`` checks) or
    an ``OpSharding`` proto (checked field by field, then converted), in the tile form (one in XLA's mesh-axes
    form is converted by XLA). ValueError naming what is wrong; a tuple sharding is well formed.

    jaxlib builds HloShardings from text and protos without checking them, and using a malformed one aborts the
    process, so every HloSharding a user hands to shardkit comes through here.
    """
    if isinstance(hlo, HloSharding):
        text = repr(hlo)
        if text.startswith(_jaxlib.MESH_AXES_FORM):
            hlo = _jaxlib.tile_form(hlo)
            text = repr(hlo)
        try:
            hlo_check.check_text(text)
        except ValueError as e:
            raise ValueError(f"HLO sharding {hlo!r} is malformed: {e}") from None
        return hlo
    if isinstance(hlo, _jaxlib.OpSharding):
        try:
            hlo_check.check_proto(hlo)
            return _jaxlib.hlo_from_proto(hlo)
        except ValueError as e:
            raise ValueError(f"OpSharding proto is malformed: {e}") from None
        except Exception as e:  # jaxlib's own error type
            raise ValueError(f"OpSharding proto is malformed: {e}") from None
    raise TypeError(f"Expected an HloSharding or OpSharding, got {type(hlo).__name__}.")


class TupleShardingError(ValueError):
    """A tuple sharding where one value's sharding is expected; ``hlo`` is the sharding, ``what`` what took it."""

    def __init__(self, hlo: HloSharding, what: str):
        n = len(hlo.tuple_elements())
        super().__init__(
            f"{what} takes one value's HLO sharding, but {hlo!r} is a tuple sharding of {n} element"
            f"{'' if n == 1 else 's'} (one per element of a tuple value or per result of an op): pass one of its "
            "elements (HloSharding.tuple_elements())."
        )
        self.hlo, self.what = hlo, what


def one_value(hlo: HloSharding | _jaxlib.OpSharding, what: str) -> HloSharding:
    """``checked(hlo)`` when it is one value's sharding; ``TupleShardingError`` (a ValueError naming ``what``) for a
    tuple sharding, whose devices and tiles XLA aborts the process to be asked for.

    Examples:
        >>> one_value(parse("{{maximal device=0}}"), "hlo_to_sdy")
        Traceback (most recent call last):
        ...
        shardkit.dialects.mhlo.TupleShardingError: hlo_to_sdy takes one value's HLO sharding, but ... tuple sharding ...
    """
    hlo = checked(hlo)
    if hlo.tuple_elements():
        raise TupleShardingError(hlo, what)
    return hlo


def build(hlo: HloSharding) -> ir.StringAttr:
    """The ``mhlo.sharding`` attribute value; needs an active MLIR context."""
    return ir.StringAttr.get(repr(hlo))


def unspecified(attr: ir.Attribute) -> bool:
    """Whether an ``mhlo.sharding`` attribute is the empty string, which XLA reads as no sharding."""
    return isinstance(attr, ir.StringAttr) and not ir.StringAttr(attr).value_bytes.strip()


def read(attr: ir.Attribute) -> HloSharding | None:
    """The HloSharding an ``mhlo.sharding`` string attribute holds, in every form XLA reads: the text form, a
    serialized ``OpSharding`` proto (what older frontends write, ``"\\08\\03\\1A..."``), checked field by field
    as a user's proto is, or the empty string, which XLA reads as no sharding (None). HloParseError when it is
    none of these or not a string.

    Examples:
        >>> with context():
        ...     proto = ir.StringAttr.get(parse("{devices=[4,2]<=[8]}").to_proto().SerializeToString())
        ...     read(proto), read(ir.StringAttr.get(""))
        ({devices=[4,2]<=[8]}, None)
    """
    if not isinstance(attr, ir.StringAttr):
        raise HloParseError(str(attr), "an HLO sharding is a string attribute")
    if unspecified(attr):
        return None
    data = ir.StringAttr(attr).value_bytes
    if data.lstrip().startswith(b"{"):  # the text form; a proto never starts so (XLA tries both)
        return parse(data.decode("utf-8", "replace"))
    try:
        hlo_check.check_wire_format(data)
        return checked(_jaxlib.op_sharding_from_bytes(data))
    except ValueError as e:
        raise HloParseError(
            data.decode("latin-1"), f"neither HLO sharding text nor a valid serialized OpSharding proto ({e})"
        ) from None


def split(attr: ir.Attribute, n: int) -> list[ir.Attribute]:
    """The per-result strings of an op's ``mhlo.sharding``: a tuple sharding's elements, or the one string
    for each of the ``n`` results. A string that does not parse is kept whole, for its reader to report."""
    if n == 1:
        return [attr]
    try:
        hlo = read(attr)
    except ValueError:
        return [attr] * n
    if hlo is None:
        return [attr] * n
    elements = hlo.tuple_elements()
    if len(elements) != n:
        return [attr] * n
    return [ir.StringAttr.get(repr(e), context=attr.context) for e in elements]


def join(attrs: Sequence[ir.Attribute], types: Sequence[ir.Type]) -> ir.Attribute:
    """One op's ``mhlo.sharding`` from its results' strings: the string itself, or a tuple sharding of them.
    ValueError for a result's string that is itself a tuple (XLA aborts on a tuple of tuples) or unreadable."""
    if len(attrs) == 1:
        return attrs[0]
    shapes = [tuple(t.shape) if isinstance(t, ir.RankedTensorType) else () for t in types]
    # an element with no sharding (the empty string) has none to keep in a tuple: XLA replicates it
    elements = [
        one_value(read(a) or HloSharding.replicate(), f"result {i}'s mhlo.sharding") for i, a in enumerate(attrs)
    ]
    return ir.StringAttr.get(repr(_jaxlib.tuple_sharding(elements, shapes)))
