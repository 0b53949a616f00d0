"""Every family of layer mappings, imported so that each registers its types."""

from engine.export import (  # noqa: F401
    onnx_inputs,
    onnx_loss,
    onnx_math,
    onnx_neuron,
    onnx_norm,
    onnx_shape,
    onnx_vision,
)
