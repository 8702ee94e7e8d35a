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

# Types the compiler cannot represent: bfloat16, float8, float4, 4- and 2-bit integers, strings.
_TYPE = "has element type {}, which the compiler cannot represent"

# name -> the message its import error contains (after "from_onnx: ").
REFUSED: dict = {
    "test_attention_23_fullymasked_qk_matmul_output_mode3_zero": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_24_fullymasked_qk_matmul_output_mode3_zero": "node 'Y' (Attention, opset 24): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_24_qk_matmul_output_mode3_softmax_precision": "node 'Y' (Attention, opset 24): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_3d_causal_bf16": _TYPE.format("BFLOAT16"),
    "test_attention_3d_diff_heads_sizes_softcap": "node 'Y' (Attention, opset 23): softcap=3.0 is not supported (only 0)",
    "test_attention_3d_diff_heads_with_past_and_present": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_3d_gqa": "node 'Y' (Attention, opset 23): Q (2, 4, 72), K (2, 6, 24) and V (2, 6, 24) do not line up (as [B, H, S, D]: (",
    "test_attention_3d_gqa_attn_mask": "node 'Y' (Attention, opset 23): Q (2, 4, 72), K (2, 6, 24) and V (2, 6, 24) do not line up (as [B, H, S, D]: (",
    "test_attention_3d_gqa_causal": "node 'Y' (Attention, opset 23): Q (2, 4, 72), K (2, 6, 24) and V (2, 6, 24) do not line up (as [B, H, S, D]: (",
    "test_attention_3d_gqa_scaled": "node 'Y' (Attention, opset 23): Q (2, 4, 72), K (2, 6, 24) and V (2, 6, 24) do not line up (as [B, H, S, D]: (",
    "test_attention_3d_gqa_softcap": "node 'Y' (Attention, opset 23): softcap=3.0 is not supported (only 0)",
    "test_attention_3d_gqa_with_past_and_present": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_3d_local_window": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_attention_3d_softcap": "node 'Y' (Attention, opset 23): softcap=3.0 is not supported (only 0)",
    "test_attention_3d_with_past_and_present": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_3d_with_past_and_present_qk_matmul": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_3d_with_past_and_present_qk_matmul_bias": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_3d_with_past_and_present_qk_matmul_softcap": "node 'Y' (Attention, opset 23): softcap=2.0 is not supported (only 0)",
    "test_attention_3d_with_past_and_present_qk_matmul_softmax": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_attn_mask_causal_bf16": _TYPE.format("BFLOAT16"),
    "test_attention_4d_causal_bf16": _TYPE.format("BFLOAT16"),
    "test_attention_4d_causal_nonpad_attn_mask_composition": "node 'Y' (Attention, opset 24): input 6 (nonpad_kv_seqlen) is not supported (no KV cache)",
    "test_attention_4d_causal_nonpad_batch_prefill": "node 'Y' (Attention, opset 24): input 6 (nonpad_kv_seqlen) is not supported (no KV cache)",
    "test_attention_4d_causal_nonpad_continued_prefill": "node 'Y' (Attention, opset 24): input 6 (nonpad_kv_seqlen) is not supported (no KV cache)",
    "test_attention_4d_causal_nonpad_negative_offset_structural_empty": "node 'Y' (Attention, opset 24): input 6 (nonpad_kv_seqlen) is not supported (no KV cache)",
    "test_attention_4d_causal_padded_kv_bf16": _TYPE.format("BFLOAT16"),
    "test_attention_4d_causal_with_past_and_present": "node 'Y' (Attention, opset 24): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_diff_heads_mask4d_padded_kv": "node 'Y' (Attention, opset 24): input 6 (nonpad_kv_seqlen) is not supported (no KV cache)",
    "test_attention_4d_diff_heads_sizes_softcap": "node 'Y' (Attention, opset 23): softcap=2.0 is not supported (only 0)",
    "test_attention_4d_diff_heads_with_past_and_present": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_diff_heads_with_past_and_present_mask3d": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_diff_heads_with_past_and_present_mask4d": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_gqa": "node 'Y' (Attention, opset 23): Q (2, 9, 4, 8), K (2, 3, 6, 8) and V (2, 3, 6, 8) do not line up (as [B, H, S,",
    "test_attention_4d_gqa_attn_mask": "node 'Y' (Attention, opset 23): Q (2, 9, 4, 8), K (2, 3, 6, 8) and V (2, 3, 6, 8) do not line up (as [B, H, S,",
    "test_attention_4d_gqa_causal": "node 'Y' (Attention, opset 23): Q (2, 9, 4, 8), K (2, 3, 6, 8) and V (2, 3, 6, 8) do not line up (as [B, H, S,",
    "test_attention_4d_gqa_causal_nonpad_decode": "node 'Y' (Attention, opset 24): input 6 (nonpad_kv_seqlen) is not supported (no KV cache)",
    "test_attention_4d_gqa_causal_nonpad_decode_fp16": "node 'Y' (Attention, opset 24): input 6 (nonpad_kv_seqlen) is not supported (no KV cache)",
    "test_attention_4d_gqa_scaled": "node 'Y' (Attention, opset 23): Q (2, 9, 4, 8), K (2, 3, 6, 8) and V (2, 3, 6, 8) do not line up (as [B, H, S,",
    "test_attention_4d_gqa_softcap": "node 'Y' (Attention, opset 23): softcap=2.0 is not supported (only 0)",
    "test_attention_4d_gqa_with_past_and_present": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_gqa_with_past_and_present_fp16": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_padded_kv_bf16": _TYPE.format("BFLOAT16"),
    "test_attention_4d_softcap": "node 'Y' (Attention, opset 23): softcap=2.0 is not supported (only 0)",
    "test_attention_4d_softcap_neginf_mask": "node 'Y' (Attention, opset 23): softcap=0.5 is not supported (only 0)",
    "test_attention_4d_softcap_neginf_mask_poison": "node 'Y' (Attention, opset 23): softcap=0.5 is not supported (only 0)",
    "test_attention_4d_with_past_and_present": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_past_and_present_qk_matmul": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_past_and_present_qk_matmul_bias": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask_causal": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_past_and_present_qk_matmul_bias_4d_mask": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_past_and_present_qk_matmul_bias_4d_mask_causal": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_qk_matmul": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_qk_matmul_bias": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_4d_with_qk_matmul_softcap": "node 'Y' (Attention, opset 23): softcap=2.0 is not supported (only 0)",
    "test_attention_4d_with_qk_matmul_softmax": "node 'Y' (Attention, opset 23): only the output Y is supported (no present_key/present_value/qk_matmul_output)",
    "test_attention_bidirectional_window": "node 'Y' (Attention, opset 25): attributes ['left_window_size', 'right_window_size'] are not supported (suppor",
    "test_attention_local_window": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_attention_local_window_default": "node 'Y' (Attention, opset 25): attributes ['left_window_size', 'right_window_size'] are not supported (suppor",
    "test_attention_local_window_ext_cache_float16_mask": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_attention_local_window_ext_cache_rank2_mask": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_attention_local_window_ext_cache_rank3_head_mask": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_attention_local_window_ext_cache_rank4_batch_mask": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_attention_local_window_gqa_rank4_mask": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_attention_local_window_rank1_boolean_mask": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_attention_local_window_with_past": "node 'Y' (Attention, opset 25): attributes ['left_window_size'] are not supported (supported: ['is_causal', 'k",
    "test_castlike_BFLOAT16_to_FLOAT_expanded": _TYPE.format("BFLOAT16"),
    "test_castlike_FLOAT16_to_FLOAT4E2M1_expanded": _TYPE.format("FLOAT4E2M1"),
    "test_castlike_FLOAT16_to_FLOAT8E4M3FNUZ_expanded": _TYPE.format("FLOAT8E4M3FNUZ"),
    "test_castlike_FLOAT16_to_FLOAT8E4M3FN_expanded": _TYPE.format("FLOAT8E4M3FN"),
    "test_castlike_FLOAT16_to_FLOAT8E5M2FNUZ_expanded": _TYPE.format("FLOAT8E5M2FNUZ"),
    "test_castlike_FLOAT16_to_FLOAT8E5M2_expanded": _TYPE.format("FLOAT8E5M2"),
    "test_castlike_FLOAT16_to_INT2_expanded": _TYPE.format("INT2"),
    "test_castlike_FLOAT16_to_INT4_expanded": _TYPE.format("INT4"),
    "test_castlike_FLOAT16_to_UINT2_expanded": _TYPE.format("UINT2"),
    "test_castlike_FLOAT16_to_UINT4_expanded": _TYPE.format("UINT4"),
    "test_castlike_FLOAT4E2M1_to_FLOAT16_expanded": _TYPE.format("FLOAT4E2M1"),
    "test_castlike_FLOAT4E2M1_to_FLOAT_expanded": _TYPE.format("FLOAT4E2M1"),
    "test_castlike_FLOAT8E4M3FNUZ_to_FLOAT16_expanded": _TYPE.format("FLOAT8E4M3FNUZ"),
    "test_castlike_FLOAT8E4M3FNUZ_to_FLOAT_expanded": _TYPE.format("FLOAT8E4M3FNUZ"),
    "test_castlike_FLOAT8E4M3FN_to_FLOAT16_expanded": _TYPE.format("FLOAT8E4M3FN"),
    "test_castlike_FLOAT8E4M3FN_to_FLOAT_expanded": _TYPE.format("FLOAT8E4M3FN"),
    "test_castlike_FLOAT8E5M2FNUZ_to_FLOAT16_expanded": _TYPE.format("FLOAT8E5M2FNUZ"),
    "test_castlike_FLOAT8E5M2FNUZ_to_FLOAT_expanded": _TYPE.format("FLOAT8E5M2FNUZ"),
    "test_castlike_FLOAT8E5M2_to_FLOAT16_expanded": _TYPE.format("FLOAT8E5M2"),
    "test_castlike_FLOAT8E5M2_to_FLOAT_expanded": _TYPE.format("FLOAT8E5M2"),
    "test_castlike_FLOAT_to_BFLOAT16_expanded": _TYPE.format("BFLOAT16"),
    "test_castlike_FLOAT_to_FLOAT4E2M1_expanded": _TYPE.format("FLOAT4E2M1"),
    "test_castlike_FLOAT_to_FLOAT8E4M3FNUZ_expanded": _TYPE.format("FLOAT8E4M3FNUZ"),
    "test_castlike_FLOAT_to_FLOAT8E4M3FN_expanded": _TYPE.format("FLOAT8E4M3FN"),
    "test_castlike_FLOAT_to_FLOAT8E5M2FNUZ_expanded": _TYPE.format("FLOAT8E5M2FNUZ"),
    "test_castlike_FLOAT_to_FLOAT8E5M2_expanded": _TYPE.format("FLOAT8E5M2"),
    "test_castlike_FLOAT_to_INT2_expanded": _TYPE.format("INT2"),
    "test_castlike_FLOAT_to_INT4_expanded": _TYPE.format("INT4"),
    "test_castlike_FLOAT_to_UINT2_expanded": _TYPE.format("UINT2"),
    "test_castlike_FLOAT_to_UINT4_expanded": _TYPE.format("UINT4"),
    "test_castlike_INT2_to_FLOAT16_expanded": _TYPE.format("INT2"),
    "test_castlike_INT2_to_FLOAT_expanded": _TYPE.format("INT2"),
    "test_castlike_INT2_to_INT8_expanded": _TYPE.format("INT2"),
    "test_castlike_INT4_to_FLOAT16_expanded": _TYPE.format("INT4"),
    "test_castlike_INT4_to_FLOAT_expanded": _TYPE.format("INT4"),
    "test_castlike_INT4_to_INT8_expanded": _TYPE.format("INT4"),
    "test_castlike_UINT2_to_FLOAT16_expanded": _TYPE.format("UINT2"),
    "test_castlike_UINT2_to_FLOAT_expanded": _TYPE.format("UINT2"),
    "test_castlike_UINT2_to_UINT8_expanded": _TYPE.format("UINT2"),
    "test_castlike_UINT4_to_FLOAT16_expanded": _TYPE.format("UINT4"),
    "test_castlike_UINT4_to_FLOAT_expanded": _TYPE.format("UINT4"),
    "test_castlike_UINT4_to_UINT8_expanded": _TYPE.format("UINT4"),
    "test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ_expanded": _TYPE.format("FLOAT8E4M3FNUZ"),
    "test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FN_expanded": _TYPE.format("FLOAT8E4M3FN"),
    "test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ_expanded": _TYPE.format("FLOAT8E5M2FNUZ"),
    "test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2_expanded": _TYPE.format("FLOAT8E5M2"),
    "test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ_expanded": _TYPE.format("FLOAT8E4M3FNUZ"),
    "test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FN_expanded": _TYPE.format("FLOAT8E4M3FN"),
    "test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ_expanded": _TYPE.format("FLOAT8E5M2FNUZ"),
    "test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2_expanded": _TYPE.format("FLOAT8E5M2"),
    "test_equal_string": _TYPE.format("STRING"),
    "test_equal_string_broadcast": _TYPE.format("STRING"),
    "test_identity_opt": "input 'opt_in' of model 'test_identity_opt' is not a tensor (optional_type)",
    "test_identity_sequence": "input 'x' of model 'test_identity_sequence' is not a tensor (sequence_type)",
    "test_maxpool_with_argmax_2d_precomputed_pads": "node 'y' (MaxPool, opset 22): output 1 ('z') is used, but only the first 1 output(s) of MaxPool are supported",
    "test_maxpool_with_argmax_2d_precomputed_strides": "node 'y' (MaxPool, opset 22): output 1 ('z') is used, but only the first 1 output(s) of MaxPool are supported",
    "test_training_dropout": "node 'y' (Dropout, opset 22): input 2 (training_mode) is True with ratio=0.75: random dropout is not supported",
    "test_training_dropout_default": "node 'y' (Dropout, opset 22): input 2 (training_mode) is True with ratio=0.5: random dropout is not supported ",
    "test_training_dropout_default_mask": "node 'y' (Dropout, opset 22): input 2 (training_mode) is True with ratio=0.5: random dropout is not supported ",
    "test_training_dropout_mask": "node 'y' (Dropout, opset 22): input 2 (training_mode) is True with ratio=0.75: random dropout is not supported",
}

# name -> what is wrong (each still fails; remove the entry when it passes).
KNOWN_WRONG: dict = {}


@pytest.fixture(scope="session")
def results(tmp_path_factory) -> dict:
    """name -> Outcome for every case, run once."""
    old = os.environ.get("TESSERA_CACHE_DIR")
    os.environ["TESSERA_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernel-cache"))
    try:
        return cases.run_isolated(list(CASES.values()), jobs=2, timeout=300)
    finally:
        if old is None:
            os.environ.pop("TESSERA_CACHE_DIR")
        else:
            os.environ["TESSERA_CACHE_DIR"] = old


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
