"""Generic schedules of the vision operators (classic ``topi.generic.schedule_*`` names).

The box-selection and region operators are hybrid scripts that carry their own loops
(``parallel`` over the batch or the regions); what surrounds them (score sorts, gathers,
injective stages) is scheduled as :func:`topi.generic.nn.default_schedule` does.
"""

from __future__ import annotations

from topi.generic.nn import _fallback as _named

schedule_reorg = _named("schedule_reorg", "reorg")
schedule_get_valid_counts = _named("schedule_get_valid_counts", "get_valid_counts")
schedule_nms = _named("schedule_nms", "non_max_suppression and all_class_non_max_suppression")
schedule_multibox_prior = _named("schedule_multibox_prior", "multibox_prior")
schedule_multibox_transform_loc = _named("schedule_multibox_transform_loc", "multibox_transform_loc")
schedule_multibox_detection = _named("schedule_multibox_detection", "multibox_detection")
schedule_roi_align = _named("schedule_roi_align", "roi_align_nchw")
schedule_roi_pool = _named("schedule_roi_pool", "roi_pool_nchw")
schedule_proposal = _named("schedule_proposal", "proposal")

__all__ = ["schedule_get_valid_counts", "schedule_multibox_detection", "schedule_multibox_prior",
           "schedule_multibox_transform_loc", "schedule_nms", "schedule_proposal", "schedule_reorg",
           "schedule_roi_align", "schedule_roi_pool"]
