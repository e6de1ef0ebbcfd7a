"""make_models.py OUTDIR: writes the small ONNX models the Python tests and
the CLI shape-change test use (seeded random weights, python3-onnx):

  ocr.onnx    OCR-style: x [1,3,48,W] (W symbolic) -> Conv s2 -> Relu ->
              Conv s2 -> Transpose -> Reshape [1, W/4, 192] -> MatMul ->
              Softmax: y [1, W/4, 10] (sequence over the width)
  multi.onnx  inputs of three dtypes: x float [2,8], idx int64 [2] (rows of an
              embedding table, Gather), mask bool [2,8] (Where):
              y = Where(mask, 2x, emb[idx]) float, n = ReduceSum(Cast(mask))
              int64
  badop.onnx  a node with an op kiln does not know (for the error tests)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def ocr(rng):
    w1 = numpy_helper.from_array(rng.uniform(-0.5, 0.5, (8, 3, 3, 3)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.uniform(-0.1, 0.1, (8,)).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.uniform(-0.3, 0.3, (16, 8, 3, 3)).astype(np.float32), "w2")
    b2 = numpy_helper.from_array(rng.uniform(-0.1, 0.1, (16,)).astype(np.float32), "b2")
    wf = numpy_helper.from_array(rng.uniform(-0.2, 0.2, (192, 10)).astype(np.float32), "wf")
    shp = numpy_helper.from_array(np.array([0, -1, 192], dtype=np.int64), "shp")
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], name="conv2"),
        helper.make_node("Transpose", ["c2"], ["t"], perm=[0, 3, 1, 2], name="to_seq"),
        helper.make_node("Reshape", ["t", "shp"], ["seq"], name="flatten"),
        helper.make_node("MatMul", ["seq", "wf"], ["logits"], name="classify"),
        helper.make_node("Softmax", ["logits"], ["y"], axis=-1, name="softmax"),
    ]
    g = helper.make_graph(nodes, "ocr", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 48, "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "T", 10])], [w1, b1, w2, b2, wf, shp])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="kiln-tests")


def multi(rng):
    emb = numpy_helper.from_array(rng.uniform(-1, 1, (10, 8)).astype(np.float32), "emb")
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    nodes = [
        helper.make_node("Gather", ["emb", "idx"], ["rows"], axis=0, name="gather"),
        helper.make_node("Mul", ["x", "two"], ["x2"], name="double"),
        helper.make_node("Where", ["mask", "x2", "rows"], ["y"], name="where"),
        helper.make_node("Cast", ["mask"], ["mi"], to=TensorProto.INT64, name="cast"),
        helper.make_node("ReduceSum", ["mi"], ["n"], keepdims=0, name="count"),
    ]
    g = helper.make_graph(nodes, "multi", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
        helper.make_tensor_value_info("idx", TensorProto.INT64, [2]),
        helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 8]),
    ], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8]), helper.make_tensor_value_info("n", TensorProto.INT64, [])], [emb, two])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="kiln-tests")


def badop():
    nodes = [helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob", domain="com.example")]
    g = helper.make_graph(nodes, "badop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    onnx.save(ocr(rng), os.path.join(out, "ocr.onnx"))
    onnx.save(multi(rng), os.path.join(out, "multi.onnx"))
    onnx.save(badop(), os.path.join(out, "badop.onnx"))


if __name__ == "__main__":
    main()
