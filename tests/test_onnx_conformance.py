"""onnx's own node test cases, through ``graph.from_onnx``, ``graph.build`` and the executor.

Every case of ``onnx.backend.test.case.node.collect_testcases`` whose
operators all have a converter is one test (:mod:`onnx_node_cases` runs it:
import, build, run every input set, compare with the stored outputs at the
case's rtol/atol).  A data input that a converter needs as a value at import
time (a Reshape target, Pad widths, Resize scales fed as graph inputs) is
frozen to the case's value, as a static-shape compiler needs.

A case passes, or it is listed in :data:`REFUSED` with the message its
import raises (a ValueError naming the node, attribute and value), or in
:data:`KNOWN_WRONG` with what goes wrong.  A listed case that starts to pass,
a new refusal and a new failure all fail the test until the table is
updated, so the counts cannot drift silently.

The cases run once per session, each in a forked child (a signal or a hang
is a failure, not a dead test run), two at a time, compiling into a fresh
``TESSERA_CACHE_DIR``.  ``python tests/onnx_node_cases.py --refusals FILE``
prints the current table.
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import onnx_node_cases as cases

CASES = {c.name: c for c in cases.eligible_cases()}

# name -> the message its import error contains (after "from_onnx: "): strings, optional and
# sequence inputs, and onnx's expanded bfloat16 Attention bodies (a MatMul on bfloat16, which
# onnx's reference computes with a rounding at every step).
REFUSED = {
    'test_attention_3d_causal_bf16_expanded': "node 'Attention_test_attention_3d_causal_bf16_expanded_function_QKAttnWeight' (MatMul, opset 23): input 'Attention_test_attention_3d_causal_bf16_expanded_function_QScaled' is bfloat16, computed in flo",
    'test_attention_4d_attn_mask_causal_bf16_expanded': "node 'Attention_test_attention_4d_attn_mask_causal_bf16_expanded_function_QKAttnWeight' (MatMul, opset 23): input 'Attention_test_attention_4d_attn_mask_causal_bf16_expanded_function_QScaled' is bfloa",
    'test_attention_4d_causal_bf16_expanded': "node 'Attention_test_attention_4d_causal_bf16_expanded_function_QKAttnWeight' (MatMul, opset 23): input 'Attention_test_attention_4d_causal_bf16_expanded_function_QScaled' is bfloat16, computed in flo",
    'test_attention_4d_causal_padded_kv_bf16_expanded': "node 'Attention_test_attention_4d_causal_padded_kv_bf16_expanded_function_QKAttnWeight' (MatMul, opset 24): input 'Attention_test_attention_4d_causal_padded_kv_bf16_expanded_function_QScaled' is bfloa",
    'test_attention_4d_padded_kv_bf16_expanded': "node 'Attention_test_attention_4d_padded_kv_bf16_expanded_function_QKAttnWeight' (MatMul, opset 24): input 'Attention_test_attention_4d_padded_kv_bf16_expanded_function_QScaled' is bfloat16, computed ",
    'test_equal_string': "input 'x' of model 'test_equal_string' has element type STRING, which the compiler cannot represent; supported: float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, boo",
    'test_equal_string_broadcast': "input 'x' of model 'test_equal_string_broadcast' has element type STRING, which the compiler cannot represent; supported: float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, u",
    'test_identity_opt': "input 'opt_in' of model 'test_identity_opt' is not a tensor (optional_type)",
    'test_identity_sequence': "input 'x' of model 'test_identity_sequence' is not a tensor (sequence_type)",
}

# name -> what is wrong (each still fails; remove the entry when it passes).
KNOWN_WRONG: dict = {}


@pytest.fixture(scope="session")
def results(tmp_path_factory) -> dict:
    """name -> Outcome for every case, run once."""
    return cases.run_in_fresh_cache(CASES.values(), tmp_path_factory.mktemp("kernel-cache"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_case(name, results):
    out = results[name]
    if name in REFUSED:
        assert out.kind == "refused" and REFUSED[name] in out.detail, (
            f"{name} is listed as refused ({REFUSED[name]!r}) but gave {out.kind}: {out.detail}"
        )
        assert out.detail.startswith("from_onnx: "), out.detail
        return
    if name in KNOWN_WRONG:
        assert out.kind != "pass", f"{name} passes now: remove it from KNOWN_WRONG"
        pytest.xfail(f"known wrong: {KNOWN_WRONG[name]} ({out.kind}: {out.detail[:200]})")
    assert out.kind == "pass", f"{out.kind}: {out.detail}"


def test_tables_name_real_cases():
    stale = sorted(set(REFUSED) - set(CASES)) + sorted(set(KNOWN_WRONG) - set(CASES))
    assert not stale, f"tables name cases that are not run: {stale}"
    assert not set(REFUSED) & set(KNOWN_WRONG)


def test_pass_rate(results):
    """The share of cases that pass (reported; the tables above pin every other case)."""
    passed = sum(1 for o in results.values() if o.kind == "pass")
    refused = sum(1 for o in results.values() if o.kind == "refused")
    print(
        f"\n{passed} of {len(results)} node cases pass, {refused} refused at import, "
        f"{len(results) - passed - refused} other"
    )
    assert len(results) == len(CASES) and passed + refused + len(KNOWN_WRONG) >= len(results)


def test_mutated_onnx_files_share(monkeypatch, tmp_path):
    """A small share of ``scripts/fuzz_onnx_files.py``: every mutant ends in a Python exception or
    a run that matches onnx's reference, never a signal, a hang or a wrong answer."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
    import fuzz_onnx_files

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    results = fuzz_onnx_files.fuzz(16, seed=1, jobs=2, timeout=120)
    bad = {k: f"{o.kind}: {o.detail}" for k, o in results.items() if o.kind in ("mismatch", "crash")}
    assert len(results) == 16 and not bad, bad
