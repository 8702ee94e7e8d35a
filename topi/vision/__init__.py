"""topi.vision: detection operators (classic TVM's): ``reorg``, box selection (:mod:`topi.vision.nms`),
SSD's priors and detection (:mod:`topi.vision.ssd`), R-CNN's proposals and region pooling
(:mod:`topi.vision.rcnn`)."""

# Imported eagerly: a lazy lookup would lose to the submodule attribute that
# Python binds on the package when a module shares its function's name.
from topi.vision.reorg import reorg  # noqa: F401
from topi.vision.nms import all_class_non_max_suppression, get_valid_counts, non_max_suppression  # noqa: F401
from topi.vision import rcnn, ssd  # noqa: F401,E402
from topi.vision.rcnn import proposal, roi_align_nchw, roi_pool_nchw  # noqa: F401,E402
from topi.vision.ssd import multibox_detection, multibox_prior, multibox_transform_loc  # noqa: F401,E402
