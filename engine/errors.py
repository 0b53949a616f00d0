"""The engine's exceptions: each message names the layer, blob, file or field at fault."""


class EngineError(Exception):
    """Base of every error the engine raises on purpose."""


class NetError(EngineError):
    """The net cannot be built or run as described (bad wiring, shapes that do not fit, ...)."""


class LayerSetupError(NetError):
    """A layer refused its parameters or the shapes of its bottoms."""


class BackwardNotImplementedError(NetError, NotImplementedError):
    """A backward pass was asked of a layer that has none (Caffe's NOT_IMPLEMENTED)."""


class LayerOutOfMemoryError(NetError, MemoryError):
    """A layer's forward or backward pass could not allocate what it needs."""


class UnknownTypeError(EngineError, KeyError):
    """A layer, filler or solver type string that nobody registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])
