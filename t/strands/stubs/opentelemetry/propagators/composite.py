from .._noop import Noop


class CompositePropagator(Noop):
    pass
