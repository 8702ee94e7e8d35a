"""tune.autotvm.choose: records against the rule, Winograd against direct, the margin, options."""

from __future__ import annotations

import pytest

import topi  # noqa: F401 - registers topi's templates and rules
from codegen.target import create
from topi.x86.conv2d_rule import conv2d_workload
from tune import autotvm
from tune.autotvm.choose import RECORD_MARGIN, Options, choose, rule_variants
from tune.autotvm.config import check_config, default_config, make_config

HOST = create("llvm")
WIDE = conv2d_workload((1, 64, 14, 14), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))  # Winograd by rule
NARROW = conv2d_workload((1, 16, 14, 14), (16, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))  # direct by rule
WINO = "conv2d_winograd.x86"


def as_winograd(key):
    return (WINO, *key[1:])


def records(*rows):
    """``Records`` of ``(workload, knob values, seconds)`` rows, each one measurement."""
    pairs = []
    for workload, values, seconds in rows:
        task = autotvm.task.create(workload[0], workload[1:], target=HOST)
        point = next(c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
                     if c.knob_values() == values)
        pairs.append((autotvm.MeasureInput(task.target, task, point),
                      autotvm.MeasureResult((seconds,), 0, 0.1, 1.0)))
    return autotvm.Records.of(pairs)


def other_values(workload, knob):
    """The rule's values with ``knob`` moved to another legal candidate."""
    rule = default_config(workload, HOST)
    value = next(v for v in rule.candidates(knob) if v != rule[knob].val)
    return make_config(workload, {**rule.values, knob: value}, HOST).values


def test_without_records_the_rule_picks_the_implementation_and_its_config():
    assert choose(WIDE, HOST) == default_config(as_winograd(WIDE), HOST)
    assert choose(NARROW, HOST) == default_config(NARROW, HOST)


def test_winograd_off_by_option_keeps_the_conv_direct():
    assert choose(WIDE, HOST, options={"winograd": False}) == default_config(WIDE, HOST)
    assert choose(WIDE, HOST, options=Options(winograd=False)).template == WIDE[0]


def test_the_faster_record_of_the_two_implementations_wins():
    direct = default_config(WIDE, HOST).values
    wino = default_config(as_winograd(WIDE), HOST).values
    got = choose(WIDE, HOST, records((WIDE, direct, 1e-3), (as_winograd(WIDE), wino, 2e-3)))
    assert got.template == WIDE[0] and got.values == direct
    got = choose(WIDE, HOST, records((WIDE, direct, 2e-3), (as_winograd(WIDE), wino, 1e-3)))
    assert got.template == WINO


def test_records_of_one_implementation_tune_it_but_do_not_switch_the_layer():
    wino = default_config(as_winograd(NARROW), HOST).values
    assert choose(NARROW, HOST, records((as_winograd(NARROW), wino, 1e-9))).template == NARROW[0]
    values = other_values(NARROW, "ow_bn")
    assert choose(NARROW, HOST, records((NARROW, values, 1e-3))).values == values  # tunes the direct conv


def test_a_switched_to_record_must_beat_the_rules_variants_by_the_margin():
    key = as_winograd(WIDE)
    rule, other = default_config(key, HOST).values, other_values(key, "ku")
    within = records((key, rule, 1e-3), (key, other, (1 - RECORD_MARGIN / 2) * 1e-3))
    beyond = records((key, rule, 1e-3), (key, other, (1 - 2 * RECORD_MARGIN) * 1e-3))
    assert choose(WIDE, HOST, within).values == rule
    assert choose(WIDE, HOST, beyond).values == other


def test_the_rule_reads_its_input_in_the_data_block_where_that_is_legal():
    rule = default_config(NARROW, HOST)
    block = next(b for b in rule.candidates("ic_bn") if b != rule["ic_bn"].val and 16 % b == 0)
    assert choose(NARROW, HOST, data_block=block)["ic_bn"].val == block
    assert choose(NARROW, HOST, data_block=3) == rule  # 3 does not divide 16 channels
    assert rule.values in rule_variants(NARROW, HOST)


def test_an_exact_choice_is_taken_as_it_is():
    values = other_values(NARROW, "ow_bn")
    exact = autotvm.ApplyChoices(lambda wl, target: values if wl == NARROW else None)
    assert choose(NARROW, HOST, exact).values == values


def test_bad_options_name_what_is_allowed():
    with pytest.raises(ValueError, match=r"unknown build option\(s\) \['winogard'\]; allowed: \['winograd'\]"):
        choose(WIDE, HOST, options={"winogard": False})
    with pytest.raises(TypeError, match="'winograd' takes True or False"):
        choose(WIDE, HOST, options={"winograd": "no"})


def test_a_config_for_another_workload_is_refused_by_name():
    cfg = default_config(NARROW, HOST)
    with pytest.raises(ValueError, match=r"config for workload .* cannot schedule workload .*choose one"):
        check_config(cfg, WIDE)
