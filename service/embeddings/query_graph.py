"""The local model's query form: the same int8 weights, multiplied and looked up as int8.

The bundled MiniLM stores its weights as int8 with a scale per column (projections) or per
row (embedding tables) and turns them back into floats in the graph (``Cast`` then ``Mul``).
onnxruntime folds those into fp32 constants at load, so every call reads 42 MB of fp32
projection weights. A lone recall query of a dozen tokens is bound by that read, not by
arithmetic: measured on this project's 2-core host, 6.4 ms a query against 4.4 ms when the
same int8 weights are multiplied directly (``DynamicQuantizeMatMul``, which quantises the
activations per call). Batches of stored texts are bound by arithmetic instead and gain
nothing (docs/benchmarks/quality.md, "Current numbers"), so stored vectors keep coming
from the graph as shipped: only the query side, whose vectors are never stored, takes this
form, and no stored vector changes.

Two rewrites, each exact in its weights:

* ``MatMul(x, Mul(Cast(W_int8), scale[1, N]))`` becomes ``DynamicQuantizeMatMul`` over the
  weights shifted to uint8 (`UINT8_ZERO`: the same products);
* ``Gather(Mul(Cast(T_int8), scale[R, 1]), ids)`` (an embedding table) becomes
  ``Mul(Cast(Gather(T_int8, ids)), Gather(scale, ids))``: the looked-up rows are dequantised,
  bit for bit as before, instead of the whole table being kept as floats (47 MB for the
  word embeddings), so the second session costs little memory.

Any other node is left as it is; a graph without the patterns comes back unchanged in
meaning.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CONTRIB_DOMAIN = "com.microsoft"
"""onnxruntime's own operator set, where ``DynamicQuantizeMatMul`` lives."""

UINT8_ZERO = 128
"""The weights are stored shifted to uint8 around this zero point (the same products). With
int8 weights, CPUs without VNNI (AVX2) multiply uint8 activations by int8 weights in an
instruction that saturates pairs of products at 16 bits; uint8 by uint8 runs a kernel
that widens first and is exact."""

Consumers = defaultdict[str, list[onnx.NodeProto]]


def query_form(model_bytes: bytes) -> bytes:
    """The serialised model with both rewrites of the module docstring applied.

    Pure and deterministic: the same input bytes give the same output bytes.
    """
    model = onnx.load_from_string(model_bytes)
    graph = model.graph
    initializers = {initializer.name: initializer for initializer in graph.initializer}
    consumers: Consumers = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    for cast in list(graph.node):
        mul = _dequantising_mul(cast, initializers, consumers)
        if mul is None:
            continue
        weight, scale = initializers[cast.input[0]], initializers[mul.input[1]]
        value = mul.output[0]
        users = consumers[value]
        if _all_use(users, value, "MatMul", 1) and list(scale.dims) == [1, weight.dims[1]]:
            _int8_matmuls(graph, users, weight, scale)
            graph.initializer.remove(weight)
            graph.initializer.remove(scale)
        elif _all_use(users, value, "Gather", 0) and list(scale.dims) == [weight.dims[0], 1]:
            _gathers_first(graph, users, weight.name, scale.name)
        else:
            continue
        graph.node.remove(cast)
        graph.node.remove(mul)
    if not any(opset.domain == CONTRIB_DOMAIN for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(CONTRIB_DOMAIN, 1))
    serialised: bytes = model.SerializeToString()
    return serialised


def _dequantising_mul(
    cast: onnx.NodeProto, initializers: dict[str, onnx.TensorProto], consumers: Consumers
) -> onnx.NodeProto | None:
    """The ``Mul`` of ``Cast(W_int8) * scale`` when ``cast`` starts that pattern over a 2-D
    int8 initializer used by nothing else, with a constant scale; else None."""
    if cast.op_type != "Cast" or cast.input[0] not in initializers:
        return None
    weight = initializers[cast.input[0]]
    if weight.data_type != TensorProto.INT8 or len(weight.dims) != 2:
        return None
    if len(consumers[weight.name]) != 1:
        return None
    users = consumers[cast.output[0]]
    if len(users) != 1 or users[0].op_type != "Mul" or users[0].input[0] != cast.output[0]:
        return None
    mul = users[0]
    scale_name = mul.input[1]
    if scale_name not in initializers or len(consumers[scale_name]) != 1:
        return None
    return mul


def _all_use(users: Sequence[onnx.NodeProto], value: str, op_type: str, operand: int) -> bool:
    """Whether there are users and each is an ``op_type`` taking ``value`` as its
    ``operand``-th input, and only there (a ``Gather`` only along axis 0, the rows)."""
    if not users:
        return False
    return all(
        user.op_type == op_type
        and [position for position, name in enumerate(user.input) if name == value] == [operand]
        and _axis(user) == 0
        for user in users
    )


def _axis(node: onnx.NodeProto) -> int:
    return next((attribute.i for attribute in node.attribute if attribute.name == "axis"), 0)


def _int8_matmuls(
    graph: onnx.GraphProto,
    matmuls: Sequence[onnx.NodeProto],
    weight: onnx.TensorProto,
    scale: onnx.TensorProto,
) -> None:
    """Each ``MatMul`` becomes a ``DynamicQuantizeMatMul`` over the uint8-shifted weight."""
    shifted = numpy_helper.to_array(weight).astype(np.int16) + UINT8_ZERO
    column_scale = numpy_helper.to_array(scale).reshape(-1).astype(np.float32)
    names = (f"{weight.name}__uint8", f"{weight.name}__column_scale", f"{weight.name}__zero")
    graph.initializer.extend(
        [
            numpy_helper.from_array(shifted.astype(np.uint8), names[0]),
            numpy_helper.from_array(column_scale, names[1]),
            numpy_helper.from_array(np.full(column_scale.shape, UINT8_ZERO, np.uint8), names[2]),
        ]
    )
    for matmul in matmuls:
        quantised = helper.make_node(
            "DynamicQuantizeMatMul",
            [matmul.input[0], *names],
            list(matmul.output),
            name=f"{matmul.name}__int8",
            domain=CONTRIB_DOMAIN,
        )
        _replace(graph, matmul, [quantised])


def _gathers_first(
    graph: onnx.GraphProto, gathers: Sequence[onnx.NodeProto], table: str, scale: str
) -> None:
    """Each row lookup of the dequantised table becomes a lookup of the int8 rows and
    their scales, dequantised after (the same floats)."""
    for gather in gathers:
        ids, output = gather.input[1], gather.output[0]
        name = gather.name or output
        rows, floats, scales = f"{output}__int8", f"{output}__float", f"{output}__scale"
        _replace(
            graph,
            gather,
            [
                helper.make_node("Gather", [table, ids], [rows], name=f"{name}__rows", axis=0),
                helper.make_node(
                    "Cast", [rows], [floats], name=f"{name}__cast", to=TensorProto.FLOAT
                ),
                helper.make_node("Gather", [scale, ids], [scales], name=f"{name}__s", axis=0),
                helper.make_node("Mul", [floats, scales], [output], name=f"{name}__dequantise"),
            ],
        )


def _replace(
    graph: onnx.GraphProto, node: onnx.NodeProto, replacements: Sequence[onnx.NodeProto]
) -> None:
    """Put ``replacements`` where ``node`` stood, in order (the topological order holds:
    they read only what ``node`` read, plus initializers)."""
    position = list(graph.node).index(node)
    graph.node.remove(node)
    for offset, replacement in enumerate(replacements):
        graph.node.insert(position + offset, replacement)
