from .._noop import Noop


class ThreadingInstrumentor(Noop):
    pass
