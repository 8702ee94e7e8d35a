"""topi.x86: tuned CPU schedules.

Each schedule reads every choice it makes from a config (``tune.autotvm.config``, a ``ConfigEntity``) of
named knobs for its workload key (``*_workload``; templates ``conv2d_NCHWc.x86``,
``conv_direct.x86``, ``depthwise_conv2d_{nchw,nhwc}.x86``, ``dense.x86``,
``dense_pack.x86``, ``batch_matmul.x86``, ``batch_matmul_pack.x86``, ``pool.x86``, ``softmax.x86``,
``reduce.x86``, ``injective.x86``); ``default_*_config`` gives the chosen
config (a dispatch context's, else the rule default for
``codegen.target.Target.current()``) and ``tune.autotvm.config.config_space`` the
candidates a tuner may try.  Every module imports the target lazily: topi
loads without LLVM.
"""

from topi.x86.conv2d import conv2d_nchw_x86  # noqa: F401
from topi.x86.conv2d_rule import default_conv2d_config  # noqa: F401
from topi.x86.conv2d_schedule import schedule_conv2d_nchw, schedule_conv2d_nhwc, schedule_conv2d_NCHWc  # noqa: F401
from topi.x86.conv_direct import default_direct_config  # noqa: F401
from topi.x86.depthwise_conv2d import (  # noqa: F401
    schedule_depthwise_conv2d_nchw, schedule_depthwise_conv2d_nhwc, default_depthwise_conv2d_config,
    depthwise_conv2d_nchw, depthwise_conv2d_NCHWc, schedule_depthwise_conv2d_NCHWc,
)
from topi.x86.conv2d_transpose import (  # noqa: F401
    conv2d_transpose_nchw, schedule_conv2d_transpose_nchw, default_conv2d_transpose_config,
)
from topi.x86.conv1d import schedule_conv1d_ncw, schedule_conv1d_nwc, default_conv1d_config  # noqa: F401
from topi.x86.dense import (  # noqa: F401
    schedule_dense, schedule_matmul, default_dense_config, dense_pack, schedule_dense_pack,
    default_dense_pack_config, pack_dense_weight, pack_dense_weight_numpy,
)
from topi.x86.batch_matmul import batch_matmul, schedule_batch_matmul, default_batch_matmul_config  # noqa: F401
from topi.x86.pooling import schedule_pool, schedule_adaptive_pool, default_pool_config  # noqa: F401
from topi.x86.softmax import schedule_softmax, default_softmax_config  # noqa: F401
from topi.x86.injective import (  # noqa: F401
    schedule_injective, schedule_elemwise, schedule_broadcast, schedule_concatenate,
    default_injective_config,
)
from topi.x86.reduction import schedule_reduce, default_reduce_config  # noqa: F401
from topi.x86.conv2d_winograd import (  # noqa: F401
    conv2d_winograd_x86, schedule_conv2d_winograd, default_winograd_config,
)
from topi.x86 import templates  # noqa: F401,E402  (registers the AutoTVM templates: conv2d_NCHWc.x86, dense_pack.x86, ...)
from topi.x86 import strategy  # noqa: F401,E402  (registers the x86 operator strategies under the "cpu" key)
from topi.x86.norms import schedule_batch_norm, schedule_lrn  # noqa: F401,E402
from topi.x86.classic_names import (  # noqa: F401,E402
    conv2d_NCHWc, dense_dynamic, dense_nopack, schedule_dense_dynamic, schedule_dense_nopack, schedule_group_conv1d_ncw,
    schedule_group_conv1d_nwc,
)
from topi.x86.conv3d import (  # noqa: F401,E402
    conv3d_ncdhw, conv3d_ndhwc, conv3d_transpose_ncdhw, schedule_conv3d_ncdhw, schedule_conv3d_ndhwc,
    schedule_conv3d_transpose_ncdhw,
)
from topi.x86.bitserial import (  # noqa: F401,E402
    bitserial_conv2d_nchw, bitserial_conv2d_nhwc, schedule_binarize_pack, schedule_binary_dense,
    schedule_bitserial_conv2d_nchw, schedule_bitserial_conv2d_nhwc,
)
from topi.vision.rcnn import roi_align_nchw  # noqa: F401,E402  (the generic compute: a hybrid script with its own loops)
from topi.x86.sparse import schedule_sparse_conv2d, schedule_sparse_dense  # noqa: F401,E402
