"""topi.image: resizing (:mod:`topi.image.resize`), sampling grids (:mod:`topi.image.grid`) and
sampling at arbitrary points (:mod:`topi.image.sampling`)."""

# Imported eagerly: a lazy lookup would lose to the submodule attribute that
# Python binds on the package when a module shares its function's name.
from topi.image.sampling import col2im, deform_conv2d, grid_sample_onnx, roi_align  # noqa: F401
from topi.image.resize import crop_and_resize, resize1d, resize2d, resize3d  # noqa: F401
from topi.image.grid import affine_grid, grid_sample  # noqa: F401
