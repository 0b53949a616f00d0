"""Data for the data layers: sources (LMDB, image lists, HDF5, R-CNN window files), Caffe's
DataTransformer, the background prefetcher, and the bundled MNIST. Everything here works on the
host (numpy); a data layer copies each finished batch to its array module once.
"""
