"""The local model's query form: the same int8 weights, multiplied in int8.

The bundled MiniLM stores each projection's weights as int8 with a per-column scale and
turns them back into floats in the graph (``Cast`` then ``Mul`` before each ``MatMul``).
onnxruntime folds those into fp32 constants at load, so every call reads 42 MB of fp32
weights. A lone recall query of a dozen tokens is bound by that read, not by arithmetic:
measured on this project's 2-core host, 6.0 ms a query against 4.1 ms when the same int8
weights are multiplied directly (``DynamicQuantizeMatMul``, which quantises the
activations per call). Batches of stored texts are bound by arithmetic instead and gain
nothing (docs/benchmarks-throughput.md, "The query form"), so stored vectors keep coming
from the graph as shipped: only the query side, whose vectors are never stored, takes this
form, and no stored vector changes.

The weights are the shipped int8 values shifted to uint8 (`UINT8_ZERO`): exactly the same
products. The rewrite touches only the pattern ``MatMul(x, Mul(Cast(W_int8), scale[1, N]))``
(a per-column scale); any other node is left as it is, and a graph without the pattern
comes back unchanged in meaning.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnx
from onnx import helper, numpy_helper

CONTRIB_DOMAIN = "com.microsoft"
"""onnxruntime's own operator set, where ``DynamicQuantizeMatMul`` lives."""

UINT8_ZERO = 128
"""The weights are stored shifted to uint8 around this zero point (the same products). With
int8 weights, CPUs without VNNI (AVX2) multiply uint8 activations by int8 weights in an
instruction that saturates pairs of products at 16 bits; uint8 by uint8 runs a kernel
that widens first and is exact."""


def int8_matmul_graph(model_bytes: bytes) -> bytes:
    """The serialised model with every dequantise-then-``MatMul`` over an int8 weight
    replaced by one ``DynamicQuantizeMatMul`` on the int8 weight itself.

    Pure and deterministic: the same input bytes give the same output bytes.
    """
    model = onnx.load_from_string(model_bytes)
    graph = model.graph
    initializers = {initializer.name: initializer for initializer in graph.initializer}
    consumers: defaultdict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    replaced = 0
    for cast in list(graph.node):
        mul = _dequantising_mul(cast, initializers, consumers)
        if mul is None:
            continue
        matmuls = consumers[mul.output[0]]
        weight = cast.input[0]
        scale = numpy_helper.to_array(initializers[mul.input[1]]).reshape(-1)
        shifted = numpy_helper.to_array(initializers[weight]).astype(np.int16) + UINT8_ZERO
        weight_name = f"{weight}__uint8"
        scale_name, zero_name = f"{weight}__column_scale", f"{weight}__zero_point"
        graph.initializer.extend(
            [
                numpy_helper.from_array(shifted.astype(np.uint8), weight_name),
                numpy_helper.from_array(scale.astype(np.float32), scale_name),
                numpy_helper.from_array(np.full(scale.shape, UINT8_ZERO, np.uint8), zero_name),
            ]
        )
        for matmul in matmuls:
            _replace(graph, matmul, [matmul.input[0], weight_name, scale_name, zero_name])
        graph.node.remove(cast)
        graph.node.remove(mul)
        for unused in (weight, mul.input[1]):
            if len(consumers[unused]) == 1:
                graph.initializer.remove(initializers[unused])
        replaced += 1
    if replaced and not any(opset.domain == CONTRIB_DOMAIN for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(CONTRIB_DOMAIN, 1))
    serialised: bytes = model.SerializeToString()
    return serialised


def _dequantising_mul(
    cast: onnx.NodeProto,
    initializers: dict[str, onnx.TensorProto],
    consumers: defaultdict[str, list[onnx.NodeProto]],
) -> onnx.NodeProto | None:
    """The ``Mul`` of ``Cast(W_int8) * scale[1, N]`` when ``cast`` starts the pattern and
    every use of the product is a ``MatMul``'s right operand, else None."""
    if cast.op_type != "Cast" or cast.input[0] not in initializers:
        return None
    weight = initializers[cast.input[0]]
    if weight.data_type != onnx.TensorProto.INT8 or len(weight.dims) != 2:
        return None
    users = consumers[cast.output[0]]
    if len(users) != 1 or users[0].op_type != "Mul" or users[0].input[0] != cast.output[0]:
        return None
    mul = users[0]
    scale = initializers.get(mul.input[1])
    if scale is None or list(scale.dims) != [1, weight.dims[1]]:
        return None
    matmuls = consumers[mul.output[0]]
    if not matmuls or any(
        user.op_type != "MatMul" or user.input[1] != mul.output[0] for user in matmuls
    ):
        return None
    return mul


def _replace(graph: onnx.GraphProto, matmul: onnx.NodeProto, inputs: list[str]) -> None:
    """Put a ``DynamicQuantizeMatMul`` with ``inputs`` where ``matmul`` stood (same outputs,
    same place in the topological order)."""
    position = list(graph.node).index(matmul)
    quantised = helper.make_node(
        "DynamicQuantizeMatMul",
        inputs,
        list(matmul.output),
        name=f"{matmul.name}__int8",
        domain=CONTRIB_DOMAIN,
    )
    graph.node.remove(matmul)
    graph.node.insert(position, quantised)
