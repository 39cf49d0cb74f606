"""Interop with the ecosystem: DLPack both ways (`tlrs.from_dlpack`, `Tensor.__dlpack__`, in the
core), PyTorch-style state dicts (state_dict.py), ONNX export of the traced forward
(onnx_export.py) and TorchLean's parameter files, byte for byte (torchlean_params.py)."""
