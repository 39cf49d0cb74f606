"""`tlrs.nn`: models written as PyTorch users write them — `Module` subclasses with layers as
attributes and a `forward` — over tlrs's ops and autograd.

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 2)
        def forward(self, x):
            return self.fc2(ops.relu(self.fc1(x)))

Names, constructor arguments, parameter names (`fc1.weight`), `state_dict` keys and default
initialisation distributions follow torch.nn, so `load_state_dict(torch_model.state_dict())`
works. Differences: the default dtype is tlrs's float64 (pass dtype='float32' or call
`.to('float32')`); random initial values come from tlrs's seeded stream (`tlrs.manual_seed`),
not torch's; optimizers are functional (`tlrs.optim`), so an update assigns new tensors to the
parameter attributes (they stay registered; `assign_parameters` does it for a whole model).
`to_module_def(model, loss, input_shapes)` hands a model to the runtime (compiled backend,
checkpoints, ONNX, distributed training).
"""

from __future__ import annotations

from .activation import ELU, GELU, LeakyReLU, LogSigmoid, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh
from .attention import MultiheadAttention
from .bridge import to_module_def
from .containers import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .conv_transpose import ConvTranspose2d
from .dropout import Dropout
from .flatten import Flatten
from .group_norm import GroupNorm
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss
from .module import Module
from .norm import BatchNorm1d, BatchNorm2d, LayerNorm
from .parameter import Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .sparse import Embedding
from .state import IncompatibleKeys
from .transformer import TransformerEncoderLayer
from .utils import assign_parameters, clip_grad_norm, clip_grad_norm_

__all__ = [
    "ELU", "GELU", "AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d", "ConvTranspose2d", "CrossEntropyLoss",
    "Dropout", "Embedding", "Flatten", "GroupNorm", "Identity", "IncompatibleKeys", "LayerNorm", "LeakyReLU",
    "Linear", "LogSigmoid", "LogSoftmax", "MSELoss", "MaxPool2d", "Module", "MultiheadAttention", "ModuleDict", "ModuleList",
    "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Softplus", "Tanh",
    "TransformerEncoderLayer", "assign_parameters", "clip_grad_norm", "clip_grad_norm_", "to_module_def",
]

