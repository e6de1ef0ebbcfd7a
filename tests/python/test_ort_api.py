"""kiln's Python package against ONNX Runtime's interface (pytest; run by
ctest as `python_api`). An ORT batch script (ort_script.py) runs unchanged but
for `import kiln as ort` over kiln's demo CNN (resnet18 from $KILN_RESNET18
with the `models` label), a model with float, int64 and bool inputs, and an
OCR-style model whose width changes between calls; its outputs are compared
with `kiln run` output files and kiln's CPU reference. Also: plans per input
shape, resident memory over 1,000 runs, two sessions in two threads, and each
error class with its message.

Environment: KILN_LIBRARY (libkiln.so), KILN_CLI (the kiln binary),
PYTHONPATH with the package's directory."""
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import kiln as ort
from kiln.capi.onnxruntime_pybind11_state import InvalidArgument, InvalidProtobuf, NoSuchFile, NotImplemented

HERE = os.path.dirname(os.path.abspath(__file__))
KILN_CLI = os.environ.get("KILN_CLI", os.path.join(HERE, "..", "..", "build", "kiln"))
TOL = 1e-4


def close(a, b):
    """Within 1e-4, relative for large values."""
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype.kind in "fc":
        err = np.abs(a.astype(np.float64) - b.astype(np.float64))
        assert np.all(err <= TOL * np.maximum(1.0, np.abs(b))), float(err.max())
    else:
        assert np.array_equal(a, b)


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    subprocess.run([sys.executable, os.path.join(HERE, "make_models.py"), str(d)], check=True)
    ort.write_demo_model("cnn", str(d / "cnn.onnx"), 1)
    return d


def feed_for(sess, rng, **sizes):
    """Random inputs for sess; symbolic dimensions from sizes."""
    feed = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else sizes[d] for d in i.shape]
        if i.type == "tensor(float)":
            feed[i.name] = rng.uniform(-1, 1, shape).astype(np.float32)
        elif i.type == "tensor(int64)":
            feed[i.name] = rng.integers(0, 10, shape).astype(np.int64)
        elif i.type == "tensor(bool)":
            feed[i.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            raise AssertionError(i.type)
    return feed


def run_script(model, feeds, tmp_path):
    """ort_script.py with only its import line changed; returns {k: {name: array}}."""
    src = open(os.path.join(HERE, "ort_script.py")).read()
    assert src.count("import onnxruntime as ort\n") == 1
    script = tmp_path / "script.py"
    script.write_text(src.replace("import onnxruntime as ort\n", "import kiln as ort\n"))
    files = []
    for k, feed in enumerate(feeds):
        files.append(str(tmp_path / ("feed%d.npz" % k)))
        np.savez(files[-1], **feed)
    out = tmp_path / "script_out"
    r = subprocess.run([sys.executable, str(script), str(model), str(out)] + files, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    res = {}
    for f in os.listdir(out):
        k, name = f[:-4].split("_", 1)
        res.setdefault(int(k), {})[name] = np.load(out / f)
    return res


def run_cli(model, feed, outdir):
    """`kiln run` with the feed as .npy files; returns {output: array}."""
    os.makedirs(outdir)
    args = [KILN_CLI, "run", str(model), "--output-dir", str(outdir / "out")]
    for name, value in feed.items():
        np.save(outdir / (name + ".npy"), value)
        args += ["--input", "%s=%s" % (name, outdir / (name + ".npy"))]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return {f[:-4]: np.load(outdir / "out" / f) for f in os.listdir(outdir / "out")}


def check_model(model, feeds, tmp_path):
    got = run_script(model, feeds, tmp_path)
    sess = ort.InferenceSession(str(model))
    names = [o.name for o in sess.get_outputs()]
    for k, feed in enumerate(feeds):
        cli = run_cli(model, feed, tmp_path / ("cli%d" % k))
        ref = dict(zip(names, sess.run_reference(None, feed)))
        for name in names:
            close(got[k][name], cli[name])
            close(got[k][name], ref[name])
    return got


def test_script_demo_cnn(models, tmp_path):
    sess = ort.InferenceSession(str(models / "cnn.onnx"))
    rng = np.random.default_rng(1)
    check_model(models / "cnn.onnx", [feed_for(sess, rng), feed_for(sess, rng)], tmp_path)


@pytest.mark.skipif(not os.environ.get("KILN_RESNET18"), reason="KILN_RESNET18 not set (ctest -L models)")
def test_script_resnet18(tmp_path):
    model = os.environ["KILN_RESNET18"]
    sess = ort.InferenceSession(model)
    check_model(model, [feed_for(sess, np.random.default_rng(3), batch_size=1, N=1)], tmp_path)


def test_script_mixed_dtypes(models, tmp_path):
    sess = ort.InferenceSession(str(models / "multi.onnx"))
    assert [i.type for i in sess.get_inputs()] == ["tensor(float)", "tensor(int64)", "tensor(bool)"]
    assert [o.type for o in sess.get_outputs()] == ["tensor(float)", "tensor(int64)"]
    rng = np.random.default_rng(2)
    got = check_model(models / "multi.onnx", [feed_for(sess, rng), feed_for(sess, rng)], tmp_path)
    assert got[0]["n"].dtype == np.int64 and got[0]["n"].shape == ()


def test_script_ocr_widths(models, tmp_path):
    sess = ort.InferenceSession(str(models / "ocr.onnx"))
    assert sess.get_inputs()[0].shape == [1, 3, 48, "W"]
    assert sess.get_outputs()[0].shape == [1, "T", 10]
    rng = np.random.default_rng(4)
    feeds = [feed_for(sess, rng, W=w) for w in (160, 320, 160)]
    got = check_model(models / "ocr.onnx", feeds, tmp_path)
    assert [got[k]["y"].shape for k in range(3)] == [(1, 40, 10), (1, 80, 10), (1, 40, 10)]


def test_plans_per_shape(models):
    sess = ort.InferenceSession(str(models / "ocr.onnx"))
    rng = np.random.default_rng(5)
    plans, outs = [], []
    for w in (160, 320, 160):
        feed = feed_for(sess, rng, W=w)
        outs.append((sess.run(None, feed)[0], sess.run_reference(None, feed)[0]))
        plans.append(sess.get_stats()["plans_built"])
    assert plans == [1, 2, 2]  # the second call at W=160 plans nothing
    for dev, ref in outs:
        close(dev, ref)


def rss_kb():
    with open("/proc/self/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def test_memory_flat(models):
    sess = ort.InferenceSession(str(models / "ocr.onnx"))
    feed = feed_for(sess, np.random.default_rng(6), W=160)
    rss = []
    for k in range(1000):
        sess.run(None, feed)
        if k == 9:
            rss.append(rss_kb())
    rss.append(rss_kb())
    print("RSS after 10 runs %d kB, after 1000 runs %d kB (%+.2f%%)" % (rss[0], rss[1], 100.0 * (rss[1] - rss[0]) / rss[0]))
    assert rss[1] <= rss[0] * 1.05


def test_two_threads(models):
    jobs = []
    for w, seed in ((160, 7), (320, 8)):
        sess = ort.InferenceSession(str(models / "ocr.onnx"))
        feed = feed_for(sess, np.random.default_rng(seed), W=w)
        jobs.append((sess, feed, sess.run_reference(None, feed)[0]))
    errors, counts = [], [0, 0]

    def work(i):
        sess, feed, ref = jobs[i]
        try:
            for _ in range(100):
                close(sess.run(None, feed)[0], ref)
                counts[i] += 1
        except Exception as e:  # reported by the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert counts == [100, 100]


def cli_error(*args):
    r = subprocess.run([KILN_CLI, "run"] + [str(a) for a in args], capture_output=True, text=True)
    assert r.returncode != 0
    return r.stderr.strip().split("kiln: error: ", 1)[1]


def test_error_missing_file(tmp_path):
    with pytest.raises(NoSuchFile) as e:
        ort.InferenceSession(str(tmp_path / "none.onnx"))
    assert str(e.value) == cli_error(tmp_path / "none.onnx")
    assert "cannot open model" in str(e.value)


def test_error_malformed(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a model\x01\x02\x03")
    with pytest.raises(InvalidProtobuf) as e:
        ort.InferenceSession(str(bad))
    assert str(e.value) == cli_error(bad)
    assert "not a valid ONNX model" in str(e.value)


def test_error_unsupported_op(models):
    with pytest.raises(NotImplemented) as e:
        ort.InferenceSession(str(models / "badop.onnx"))
    assert str(e.value) == cli_error(models / "badop.onnx", "--random")
    assert "FrobnicateTensor ('frob')" in str(e.value)


def test_error_input_name_shape_dtype(models):
    sess = ort.InferenceSession(str(models / "ocr.onnx"))
    x = np.zeros((1, 3, 48, 160), np.float32)
    with pytest.raises(InvalidArgument, match=r"the model has no input named 'image' \(inputs: 'x'\)"):
        sess.run(None, {"image": x})
    with pytest.raises(InvalidArgument, match=r"input 'x': expected shape \[1,3,48,W\], got \[1,4,48,160\]"):
        sess.run(None, {"x": np.zeros((1, 4, 48, 160), np.float32)})
    with pytest.raises(InvalidArgument, match=r"input 'x': expected shape \[1,3,48,W\], got \[3,48,160\]"):
        sess.run(None, {"x": np.zeros((3, 48, 160), np.float32)})
    with pytest.raises(InvalidArgument, match=r"input 'x': expected dtype float32, got float64"):
        sess.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(InvalidArgument, match=r"Invalid output name: z"):
        sess.run(["z"], {"x": x})
    with pytest.raises(ValueError, match=r"Required inputs \(\['x'\]\) are missing"):
        sess.run(None, {})
    # the session still works after the errors
    close(sess.run(["y"], {"x": x})[0], sess.run_reference(None, {"x": x})[0])


def test_bytes_and_providers(models):
    data = (models / "multi.onnx").read_bytes()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert sess.get_providers() == [ort.PROVIDER]
    assert ort.PROVIDER in ort.get_available_providers()
    assert ort.get_device() in ("CPU", "GPU")
    feed = feed_for(sess, np.random.default_rng(9))
    for a, b in zip(sess.run(None, feed), sess.run_reference(None, feed)):
        close(a, b)


def test_plan_cache_bounded(models):
    """Nine widths: the cache keeps 8 plans, so the first width is planned
    again after them while the last one is not; outputs stay right."""
    sess = ort.InferenceSession(str(models / "ocr.onnx"))
    rng = np.random.default_rng(10)
    widths = [16 * k for k in range(1, 10)]
    for w in widths:
        sess.run(None, feed_for(sess, rng, W=w))
    assert sess.get_stats()["plans_built"] == 9
    feed = feed_for(sess, rng, W=widths[-1])
    sess.run(None, feed)
    assert sess.get_stats()["plans_built"] == 9  # still cached
    feed = feed_for(sess, rng, W=widths[0])
    close(sess.run(None, feed)[0], sess.run_reference(None, feed)[0])
    assert sess.get_stats()["plans_built"] == 10  # dropped (least recently used), planned again


def test_plan_profile_tune(models, tmp_path):
    """Beyond ORT: session.plan(), session.profile(), kiln.tune() with a
    progress callback into a database a later session reads."""
    sess = ort.InferenceSession(str(models / "ocr.onnx"), db=False)
    feed = feed_for(sess, np.random.default_rng(11), W=64)
    kernels = sess.plan(feed)
    assert kernels and any(k["family"] for k in kernels)
    assert all(k["origin"] in ("tuned", "predicted", "default", "generated", "fixed") for k in kernels)
    times = sess.profile(feed)
    assert times and all(t["span_us"] >= 0 for t in times)
    assert {t["op"] for t in times} & {"Conv", "MatMul"}
    seen = []
    db = tmp_path / "tune.db"
    # (softmax left out: its softmax_wg candidates crash POCL at this shape, kiln tune too)
    res = ort.tune(str(models / "ocr.onnx"), feed, db=str(db), budget=30, max_trials=2, progress=seen.append, families="conv,gemm")
    assert res and seen and db.exists()
    assert all(r["trials"] + r["skipped"] > 0 for r in res if r["tuned"])
    assert {"instance", "ninstances", "family", "trial"} <= set(seen[0])
    tuned = ort.InferenceSession(str(models / "ocr.onnx"), db=str(db))
    close(tuned.run(None, feed)[0], tuned.run_reference(None, feed)[0])
    assert any(k["origin"] == "tuned" for k in tuned.plan())


def test_model_file_replaced(models, tmp_path):
    """A new shape after the model file changed on disk plans on the graph
    loaded at first (never the new file's weights)."""
    path = tmp_path / "ocr.onnx"
    path.write_bytes((models / "ocr.onnx").read_bytes())
    sess = ort.InferenceSession(str(path))
    rng = np.random.default_rng(12)
    f160, f320 = feed_for(sess, rng, W=160), feed_for(sess, rng, W=320)
    y160 = sess.run(None, f160)[0]
    path.write_bytes(b"not the model any more")
    orig = ort.InferenceSession(str(models / "ocr.onnx"))
    close(sess.run(None, f320)[0], orig.run_reference(None, f320)[0])
    close(sess.run(None, f160)[0], y160)


def test_one_session_shared_by_threads(models):
    """ONNX Runtime lets threads share one session: kiln's calls on it take
    turns, each thread gets its own inputs' outputs (widths differ too)."""
    sess = ort.InferenceSession(str(models / "ocr.onnx"))
    jobs = []
    for w, seed in ((160, 13), (96, 14), (160, 15)):
        feed = feed_for(sess, np.random.default_rng(seed), W=w)
        jobs.append((feed, sess.run_reference(None, feed)[0]))
    errors = []

    def work(i):
        feed, ref = jobs[i]
        try:
            for _ in range(30):
                close(sess.run(None, feed)[0], ref)
        except Exception as e:  # reported by the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sess.get_stats()["plans_built"] == 2


def test_struct_layouts_checked():
    """Every mirrored struct matches the library's size (checked at import),
    and a mirror that lags behind include/kiln.h is refused, not used."""
    import ctypes
    from kiln import _lib
    lib = ctypes.CDLL(os.environ["KILN_LIBRARY"])
    _lib.check_structs(lib, "libkiln.so")  # the real mirrors agree

    class Short(ctypes.Structure):  # kiln_value_info without its last field
        _fields_ = _lib.ValueInfo._fields_[:-1]
    saved = dict(_lib._C_NAMES)
    try:
        _lib._C_NAMES[Short] = "kiln_value_info"
        with pytest.raises(ImportError, match="kiln_value_info"):
            _lib.check_structs(lib, "libkiln.so")
    finally:
        _lib._C_NAMES.clear()
        _lib._C_NAMES.update(saved)


def test_max_memory_streams(tmp_path):
    """max_memory below what the plan needs streams weights: same outputs as
    the unconstrained session, streamed bytes reported; a bad value is refused."""
    onnx = pytest.importorskip("onnx")
    # the second conv strided: not a Winograd candidate, whose F(4x4)
    # transformed weights (4x the model's) would leave streaming nothing to
    # save under 4/5 of the peak
    from onnx import helper as h, TensorProto as T, numpy_helper as nh
    r = np.random.default_rng(5)
    inits = [nh.from_array((r.standard_normal(s) * 0.1).astype(np.float32), n)
             for n, s in (("w1", (128, 16, 3, 3)), ("w2", (128, 128, 3, 3)), ("w3", (128, 500)))]
    nodes = [h.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c1"], ["r1"]),
             h.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]), h.make_node("GlobalAveragePool", ["c2"], ["p"]),
             h.make_node("Flatten", ["p"], ["f"]), h.make_node("MatMul", ["f", "w3"], ["y"])]
    g = h.make_graph(nodes, "s", [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 16, 16])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 500])], inits)
    path = str(tmp_path / "s.onnx")
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), path)
    x = np.random.default_rng(1).uniform(-1, 1, (1, 16, 16, 16)).astype(np.float32)
    full = ort.InferenceSession(path, db=False)
    y0 = full.run(None, {"x": x})[0]
    peak = full.get_stats()["peak_device_bytes"]
    assert full.get_stats()["streamed_bytes"] == 0 and peak > 0
    small = ort.InferenceSession(path, db=False, max_memory=peak * 4 // 5)
    for _ in range(2):
        y1 = small.run(None, {"x": x})[0]
        assert np.array_equal(y0, y1)
        assert small.get_stats()["streamed_bytes"] > 0
    with pytest.raises(ValueError, match="max_memory"):
        ort.InferenceSession(path, db=False, max_memory=-1)


def test_env_options_apply(models, tmp_path, monkeypatch):
    """The KILN_* environment applies to sessions as to the kiln command:
    compiled programs go to KILN_CACHE_DIR; a malformed value is an error."""
    cache = tmp_path / "programs"
    monkeypatch.setenv("KILN_CACHE_DIR", str(cache))
    sess = ort.InferenceSession(str(models / "cnn.onnx"), db=False)
    sess.run(None, feed_for(sess, np.random.default_rng(0)))
    assert cache.is_dir() and any(cache.iterdir()), "nothing cached under KILN_CACHE_DIR"
    monkeypatch.setenv("KILN_GEMM_KERNELS", "7")
    with pytest.raises(Exception, match="KILN_GEMM_KERNELS"):
        ort.InferenceSession(str(models / "cnn.onnx"), db=False)
