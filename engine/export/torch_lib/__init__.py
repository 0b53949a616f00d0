"""The PyTorch layers an exported module is made of, one class per Caffe layer type.

These files are the source the exporter copies into a generated module (engine.export.torch_module):
each class uses only torch, math and the helpers of ``common`` it names in ``helpers``, so its text
stands alone in the generated file. Importing this package needs torch; the rest of the engine
never imports it.
"""
