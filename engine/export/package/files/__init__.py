"""The plain files of a training package, copied as they are into it (they import each other and
caffe_pb2 as top-level modules, from the package folder)."""
