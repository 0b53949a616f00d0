"""Using a trained model, Qt-free: the deploy net derived from a train_val net (``deploy``), the
preprocessing it carries (``preprocess``), image inputs (``inputs``), classification on pycaffe's
Classifier (``classify``), Caffe's feature extraction (``features``) and evaluation on a data set
(``evaluate``). The command line (engine/cli/) and the window (app/model_use/) both call these."""
