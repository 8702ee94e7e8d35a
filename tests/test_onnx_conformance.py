"""onnx's own node test cases, through ``graph.from_onnx``, ``graph.build`` and the executor.

Every case of ``onnx.backend.test.case.node.collect_testcases`` is fed as the
case gives it: shape operands, sequences and optionals as run-time inputs
(:mod:`onnx_node_cases` runs it: import, build, run every input set, compare
with the stored outputs at the case's rtol/atol).  The whole sweep is
``python tests/onnx_node_cases.py`` (every case, in forked children); this
module runs a representative share of it: the first case of every distinct
set of operators, and one case in sixteen of the rest (by a hash of the name).

A case passes (a random generator's case by property: ``random``), or it is
listed in :data:`REFUSED` with the message its import raises (a ValueError
naming the node, attribute and value), or in :data:`KNOWN_WRONG` with what
goes wrong.  A listed case that starts to pass,
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
import zlib

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import onnx_node_cases as cases

ALL_CASES = {c.name: c for c in cases.eligible_cases()}


def _sample(all_cases: dict) -> dict:
    """The first case (by name) of every distinct operator set, and one in sixteen of the rest."""
    first: dict = {}
    for name, case in sorted(all_cases.items()):
        first.setdefault(tuple(sorted({(n.domain, n.op_type) for n in case.model.graph.node})), name)
    picked = set(first.values()) | {n for n in all_cases if zlib.crc32(n.encode()) % 16 == 0}
    return {n: all_cases[n] for n in sorted(picked)}


CASES = _sample(ALL_CASES)

# name -> the message its refusal contains (after "from_onnx: "): strings, images,
# training and ai.onnx.ml operators, float8/int4/int2 storage types, and the operators still
# without a converter; bfloat16 reductions (onnx's reference rounds at every step).  The whole sweep's
# table: ``python tests/onnx_node_cases.py --refusals FILE``.
REFUSED = {
    'test_adagrad': "model 'test_adagrad' imports no opset of the default ONNX domain (opset_import: [('ai.onnx.preview.training', 1)])",
    'test_adam': "model 'test_adam' imports no opset of the default ONNX domain (opset_import: [('ai.onnx.preview.training', 1)])",
    'test_adam_multiple': "model 'test_adam_multiple' imports no opset of the default ONNX domain (opset_import: [('ai.onnx.preview.training', 1)])",
    'test_ai_onnx_ml_array_feature_extractor': "model 'test_ai_onnx_ml_array_feature_extractor' imports no opset of the default ONNX domain (opset_import: [('ai.onnx.ml', 1)])",
    'test_ai_onnx_ml_binarizer': "model 'test_ai_onnx_ml_binarizer' imports no opset of the default ONNX domain (opset_import: [('ai.onnx.ml', 1)])",
    'test_ai_onnx_ml_label_encoder_string_int': "model 'test_ai_onnx_ml_label_encoder_string_int' imports no opset of the default ONNX domain (opset_import: [('ai.onnx.ml', 4)])",
    'test_ai_onnx_ml_tree_ensemble_set_membership': "model 'test_ai_onnx_ml_tree_ensemble_set_membership' imports no opset of the default ONNX domain (opset_import: [('ai.onnx.ml', 5)])",
    'test_image_decoder_decode_bmp_rgb': "unsupported operators (1 nodes): ImageDecoder 'output' (opset 20): strings and images are not tensors the compiler represents",
    'test_momentum': "model 'test_momentum' imports no opset of the default ONNX domain (opset_import: [('ai.onnx.preview.training', 1)])",
    'test_regex_full_match_basic': "unsupported operators (1 nodes): RegexFullMatch 'Y' (opset 20): strings and images are not tensors the compiler represents",
    'test_string_concat': "unsupported operators (1 nodes): StringConcat 'result' (opset 20): strings and images are not tensors the compiler represents",
    'test_string_split_basic': "unsupported operators (1 nodes): StringSplit 'substrings' (opset 20): strings and images are not tensors the compiler represents",
    'test_strnormalizer_export_monday_casesensintive_lower': "unsupported operators (1 nodes): StringNormalizer 'y' (opset 10): strings and images are not tensors the compiler represents",
    'test_tfidfvectorizer_tf_batch_onlybigrams_skip0': "unsupported operators (1 nodes): TfIdfVectorizer 'Y' (opset 9): strings and images are not tensors the compiler represents",
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
    if cases.is_random(CASES[name]):
        assert out.kind == "random", f"{out.kind}: {out.detail}"
        return
    assert out.kind == "pass", f"{out.kind}: {out.detail}"


def test_tables_name_real_cases():
    stale = sorted(set(REFUSED) - set(ALL_CASES)) + sorted(set(KNOWN_WRONG) - set(ALL_CASES))
    assert not stale, f"tables name cases that are not run: {stale}"
    assert not set(REFUSED) & set(KNOWN_WRONG)


def test_pass_rate(results):
    """The share of cases that pass (reported; the tables above pin every other case)."""
    passed = sum(1 for o in results.values() if o.kind == "pass")
    random = sum(1 for o in results.values() if o.kind == "random")
    refused = sum(1 for o in results.values() if o.kind == "refused")
    print(
        f"\n{passed} of {len(results)} node cases pass, {random} random (checked by property), "
        f"{refused} refused at import, {len(results) - passed - random - refused} other"
    )
    assert len(results) == len(CASES)
    assert passed + random + refused + len(set(KNOWN_WRONG) & set(CASES)) >= len(results)


def test_mutated_onnx_files_share(monkeypatch, tmp_path):
    """A small share of ``scripts/fuzz_onnx_files.py``: every mutant ends in a Python exception or
    a run that matches onnx's reference, never a signal, a hang or a wrong answer."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
    import fuzz_onnx_files

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    results = fuzz_onnx_files.fuzz(16, seed=1, jobs=2, timeout=120)
    bad = {k: f"{o.kind}: {o.detail}" for k, o in results.items() if o.kind in ("mismatch", "crash")}
    assert len(results) == 16 and not bad, bad
