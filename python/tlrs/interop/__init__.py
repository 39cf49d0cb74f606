"""Interop with the ecosystem: DLPack both ways (`tlrs.from_dlpack`, `Tensor.__dlpack__`, in the
core), PyTorch-style state dicts (state_dict.py) and ONNX export of the traced forward
(onnx_export.py)."""
