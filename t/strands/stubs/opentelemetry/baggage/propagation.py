from .._noop import Noop


class W3CBaggagePropagator(Noop):
    pass
