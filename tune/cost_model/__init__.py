"""Cost models that rank candidates from their features: numpy boosted trees (``gbt``) and the
same interface on xgboost (``xgb``, when installed).  Every tuner with a model shares them."""

from __future__ import annotations

from tune.cost_model.gbt import GBTModel
from tune.cost_model.xgb import XGBoostModel


def make_model(loss: str, backend: str = "auto", seed: int = 0):
    """``GBTModel`` (numpy), or ``XGBoostModel`` when ``backend`` is "xgboost" or "auto" and it is installed."""
    if backend in ("auto", "xgboost"):
        try:
            import xgboost  # noqa: F401

            return XGBoostModel(loss, seed=seed)
        except ImportError:
            if backend == "xgboost":
                raise ImportError(
                    "XGBTuner(model='xgboost') needs xgboost: pip install 'tessera[tune]'"
                ) from None
    if backend not in ("auto", "numpy", "xgboost"):
        raise ValueError(f"cost model backend {backend!r}: use auto, numpy or xgboost")
    return GBTModel(loss, seed=seed)


__all__ = ["GBTModel", "XGBoostModel", "make_model"]
