"""The window's Model menu: Classify Image… and Evaluate on Data Set…, on engine/model_use."""
