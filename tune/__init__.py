"""tune: the auto-tuner.  ``from tune import autotvm`` (classic AutoTVM: templates, tuners, records)."""
