from ..._noop import Noop


class TraceContextTextMapPropagator(Noop):
    pass
